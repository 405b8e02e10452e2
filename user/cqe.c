// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cqe.c - CQE ownership, CQ cleaning, CQ arm word. See cqe.h and
 * Documentation/queue-formats.md; the CQE decoder is <rdma/softhca-cqe.h>.
 */
#include <errno.h>
#include <string.h>

#include "cqe.h"
#include "mmio.h"

/* The shared decoder uses the IBA numbers, which are libibverbs' too. */
_Static_assert((int)SOFTHCA_WC_LOC_LEN_ERR == (int)IBV_WC_LOC_LEN_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_QP_OP_ERR == (int)IBV_WC_LOC_QP_OP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_PROT_ERR == (int)IBV_WC_LOC_PROT_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_WR_FLUSH_ERR == (int)IBV_WC_WR_FLUSH_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_MW_BIND_ERR == (int)IBV_WC_MW_BIND_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_BAD_RESP_ERR == (int)IBV_WC_BAD_RESP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_ACCESS_ERR == (int)IBV_WC_LOC_ACCESS_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_INV_REQ_ERR == (int)IBV_WC_REM_INV_REQ_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_ACCESS_ERR == (int)IBV_WC_REM_ACCESS_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_OP_ERR == (int)IBV_WC_REM_OP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_RETRY_EXC_ERR == (int)IBV_WC_RETRY_EXC_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_RNR_RETRY_EXC_ERR == (int)IBV_WC_RNR_RETRY_EXC_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_ABORT_ERR == (int)IBV_WC_REM_ABORT_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_GENERAL_ERR == (int)IBV_WC_GENERAL_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_SEND == (int)IBV_WC_SEND, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RDMA_WRITE == (int)IBV_WC_RDMA_WRITE, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RDMA_READ == (int)IBV_WC_RDMA_READ, "wc opcode");
_Static_assert((int)SOFTHCA_WC_COMP_SWAP == (int)IBV_WC_COMP_SWAP, "wc opcode");
_Static_assert((int)SOFTHCA_WC_FETCH_ADD == (int)IBV_WC_FETCH_ADD, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RECV == (int)IBV_WC_RECV, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RECV_RDMA_WITH_IMM ==
	       (int)IBV_WC_RECV_RDMA_WITH_IMM, "wc opcode");

bool softhca_cqe_owned_by_sw(const struct softhca_cqe *cqe, uint32_t ci,
			     uint32_t cqe_cnt)
{
	/* One load: the HCA may be rewriting this CQE right now. */
	uint8_t op_own = *(const volatile uint8_t *)&cqe->op_own;

	return softhca_cqe_is_sw(op_own, ci, cqe_cnt);
}

const struct softhca_cqe *softhca_cqe_get_sw(const void *ring, uint32_t ci,
					     uint32_t cqe_cnt)
{
	const struct softhca_cqe *cqe =
		(const struct softhca_cqe *)ring + softhca_ring_slot(ci, cqe_cnt);

	return softhca_cqe_owned_by_sw(cqe, ci, cqe_cnt) ? cqe : NULL;
}

uint32_t softhca_cq_compact(struct softhca_cqe *ring, uint32_t cqe_cnt,
			    uint32_t ci, uint32_t qpn)
{
	uint32_t end = ci;

	while (end - ci < cqe_cnt && softhca_cqe_get_sw(ring, end, cqe_cnt))
		end++;
	/* Ownership of [ci, end) seen: only now read the contents. */
	udma_from_device_barrier();
	return softhca_cq_compact_run(ring, cqe_cnt, ci, end,
				      htobe32(qpn & SOFTHCA_24BIT_MASK),
				      htobe32(SOFTHCA_24BIT_MASK));
}

uint32_t softhca_cq_arm_word(uint32_t arm_sn, bool solicited_only, uint32_t ci)
{
	return softhca_enc_cq_arm(arm_sn, solicited_only, ci);
}

uint64_t softhca_cq_doorbell(uint32_t arm_word, uint32_t cqn)
{
	return softhca_enc_cq_doorbell(arm_word, cqn);
}
