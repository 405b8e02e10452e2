// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * arm.c - CQ notification requests (seed-map.md §5.3) and cq_event (§5.2).
 * Events themselves (EQs, vectors, the completion channel) are the
 * kernel's; the provider only writes the doorbells.
 */
#include "cqe.h"
#include "softhca.h"

/*
 * ibv_req_notify_cq (seed-map.md §5.3): the arm word (arm_sn, solicited or all,
 * consumer index) into the doorbell record, then the same word with the CQN
 * as one 64-bit store to the UAR. The record is what the engine acts on;
 * the UAR store and the wake-up make sure it looks.
 */
int softhca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct softhca_context *ctx = to_sctx(ibcq->context);
	struct softhca_cq *cq = to_scq(ibcq);
	uint32_t ci = __atomic_load_n(&cq->cons_index, __ATOMIC_RELAXED);
	uint32_t sn = __atomic_load_n(&cq->arm_sn, __ATOMIC_RELAXED);
	uint32_t arm = softhca_cq_arm_word(sn, solicited_only, ci);

	__atomic_store_n(&cq->dbr->arm, htobe32(arm), __ATOMIC_RELAXED);
	/* The record before the UAR store (step 3). */
	mmio_wc_start();
	mmio_write64_be((uint8_t *)ctx->uar + SOFTHCA_UAR_CQ_DB_OFFSET,
			htobe64(softhca_cq_doorbell(arm, cq->cqn)));
	/* Step 5: push the write-combined store out. */
	mmio_flush_writes();
	/*
	 * A CQE written from now on is checked against the new word by the
	 * CQE writer. Only CQEs already there need the engine to look now:
	 * the arm store before that look (pairs with the engine's barrier
	 * between a CQE's owner byte and its arm load), then the CQ's
	 * doorbell slot. With none, no hint and no system call.
	 */
	udma_full_barrier();
	if (softhca_cqe_get_sw(cq->ring, ci, cq->cqe_cnt))
		softhca_db_ring(ctx, &cq->db);
	return 0;
}

/* libibverbs got an event for this CQ: the next arm carries arm_sn + 1. */
void softhca_cq_event(struct ibv_cq *ibcq)
{
	__atomic_fetch_add(&to_scq(ibcq)->arm_sn, 1, __ATOMIC_RELAXED);
}
