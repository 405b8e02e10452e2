// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * recv.c - ibv_post_recv (seed-map.md §4.1, §4.3).
 *
 * Under the RQ lock, per WR: room in the RQ (re-checked under the receive
 * CQ's lock when it looks full), num_sge against the WQE's capacity, then
 * the WQE in its fixed-stride slot (softhca_set_recv_wqe(), the builder the
 * kernel shares: data pointers for the non-empty SGEs, the sentinel if they
 * do not fill the stride, the optional signature) and its wr_id in
 * rq.wrs.wrid[]. num_sge == 0 is a valid
 * zero-capacity receive. Then udma_to_device_barrier and the RCV doorbell
 * record. No UAR store and no wake-up: the engine reads the record when a
 * message arrives (and again on every RNR retry).
 */
#include <errno.h>

#include <rdma/softhca-wqe.h>

#include "softhca.h"

static bool rq_overflow(struct softhca_qp *qp, uint32_t nreq)
{
	struct softhca_rq *rq = &qp->rq;
	struct softhca_cq *cq;
	uint32_t tail;

	tail = __atomic_load_n(&rq->wrs.tail, __ATOMIC_RELAXED);
	if (!softhca_wq_overflow(rq->wrs.head, tail, nreq, rq->wqe_cnt))
		return false;
	cq = to_scq(qp->vqp.qp.recv_cq);
	softhca_lock(&cq->lock);
	tail = __atomic_load_n(&rq->wrs.tail, __ATOMIC_RELAXED);
	softhca_unlock(&cq->lock);
	return softhca_wq_overflow(rq->wrs.head, tail, nreq, rq->wqe_cnt);
}

int softhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct softhca_qp *qp = to_sqp(ibqp);
	struct softhca_rq *rq = &qp->rq;
	uint32_t stride = 1U << rq->wqe_shift;
	uint32_t nreq = 0;
	int err = 0;

	/* XRC QPs receive through an SRQ only: no RQ, no receive CQ. */
	if (!ibqp->recv_cq || !__atomic_load_n(&rq->post_ok, __ATOMIC_RELAXED)) {
		*bad_wr = wr;
		return EINVAL;
	}
	softhca_lock(&rq->lock);
	for (; wr; wr = wr->next, nreq++) {
		uint32_t n = rq->wrs.head + nreq;
		uint32_t idx;

		if (rq_overflow(qp, nreq)) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_gs) {
			err = EINVAL;
			break;
		}
		idx = softhca_ring_slot(n, rq->wqe_cnt);
		if (softhca_set_recv_wqe(rq->buf + ((size_t)idx << rq->wqe_shift),
					 stride, qp->wqe_sig,
					 (const struct softhca_sge *)wr->sg_list,
					 (uint32_t)wr->num_sge, qp->qpn,
					 (uint16_t)n) < 0) {
			err = EINVAL;
			break;
		}
		softhca_wq_wrs_record(&rq->wrs, idx, wr->wr_id, n);
	}

	if (nreq) {
		__atomic_store_n(&rq->wrs.head, rq->wrs.head + nreq,
				 __ATOMIC_RELAXED);
		/* The WQEs before the producer counter (step 3.1). */
		udma_to_device_barrier();
		__atomic_store_n(&qp->dbr->rcv_counter,
				 htobe32(softhca_wq_dbr_value(rq->wrs.head)),
				 __ATOMIC_RELAXED);
	}
	softhca_unlock(&rq->lock);

	if (err)
		*bad_wr = wr;
	return err;
}
