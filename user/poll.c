// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * poll.c - ibv_poll_cq (seed-map.md §5.4) and CQ cleaning.
 *
 * Under the CQ lock: take the CQE at the consumer index if the HCA wrote it
 * on this lap (opcode not INVALID, owner bit of the lap), issue
 * udma_from_device_barrier, turn it into an ibv_wc (cqe.c), find the QP by
 * its QPN and its WR: a requester CQE names the WQE by its WQEBB counter
 * (sq.wrid[], and sq.wqe_head[] retires every WR up to it, the unsignaled
 * ones too), a responder CQE takes the oldest posted receive (rq.wrid[] at
 * the RQ tail). Error CQEs advance the tails the same way. Finally the new
 * consumer index goes to the doorbell record (set_ci, 24 bits, big-endian).
 * A poll that finds nothing on a device that is gone (disassociated) fails
 * with -EIO, so an application spinning on an empty CQ notices.
 */
#include <errno.h>

#include "cqe.h"
#include "softhca.h"

/* Is @qp's send (or receive) queue completed on @cq? */
static bool qp_uses_cq(const struct softhca_qp *qp,
		       const struct softhca_cq *cq, bool send)
{
	return (send ? qp->vqp.qp.send_cq : qp->vqp.qp.recv_cq) == &cq->ibv_cq;
}

/*
 * The QP a CQE names. Only a QP that uses this CQ is cached: destroy_qp
 * cleans its own CQs, which clears the cache, and no other.
 */
static struct softhca_qp *cq_find_qp(struct softhca_cq *cq, uint32_t qpn)
{
	struct softhca_qp *qp = cq->last_qp;

	if (qp && qp->qpn == qpn)
		return qp;
	qp = softhca_find_qp(to_sctx(cq->ibv_cq.context), qpn);
	if (qp && !qp_uses_cq(qp, cq, true) && !qp_uses_cq(qp, cq, false))
		return NULL;
	cq->last_qp = qp;
	return qp;
}

/*
 * Fill wc from one CQE. Returns 0, or -1 when no outstanding WR of a live
 * QP on this CQ matches it (the CQE is then dropped: it would otherwise
 * block the CQ for good, or move a queue's tail over WRs still posted).
 */
static int parse_cqe(struct softhca_cq *cq, const struct softhca_cqe *cqe,
		     struct ibv_wc *wc)
{
	struct softhca_qp *qp = cq_find_qp(cq, softhca_cqe_qpn(cqe));
	int bad;

	if (!qp)
		return -1;

	switch (softhca_cqe_opcode(cqe)) {
	case SOFTHCA_CQE_REQ:
	case SOFTHCA_CQE_REQ_ERR: {
		struct softhca_sq *sq = &qp->sq;
		uint32_t idx, tail, seq;

		if (!sq->wqebb_cnt || !qp_uses_cq(qp, cq, true))
			return -1;
		idx = softhca_ring_slot(softhca_cqe_wqe_counter(cqe),
					sq->wqebb_cnt);
		/*
		 * The WR recorded at idx must be posted and not retired, so
		 * the tail never moves back nor past the head. (Checking that
		 * a WQE really starts at idx would read the SQ ring here: +0.4
		 * us on ib_read_lat under TCG, measured.)
		 */
		tail = sq->tail;
		seq = sq->wqe_head[idx];
		if (seq - tail >=
		    __atomic_load_n(&sq->head, __ATOMIC_RELAXED) - tail)
			return -1;
		bad = softhca_cqe_to_wc(cqe, wc);
		wc->wr_id = sq->wrid[idx];
		/* Our reads of the slots before the tail that frees them. */
		__atomic_store_n(&sq->tail, seq + 1, __ATOMIC_RELEASE);
		break;
	}
	case SOFTHCA_CQE_RESP_WR_IMM:
	case SOFTHCA_CQE_RESP_SEND:
	case SOFTHCA_CQE_RESP_SEND_IMM:
	case SOFTHCA_CQE_RESP_ERR: {
		struct softhca_rq *rq = &qp->rq;

		if (!rq->wqe_cnt || !qp_uses_cq(qp, cq, false) ||
		    rq->tail == __atomic_load_n(&rq->head, __ATOMIC_RELAXED))
			return -1;
		bad = softhca_cqe_to_wc(cqe, wc);
		wc->wr_id = rq->wrid[softhca_ring_slot(rq->tail, rq->wqe_cnt)];
		__atomic_store_n(&rq->tail, rq->tail + 1, __ATOMIC_RELEASE);
		break;
	}
	default:
		return -1;
	}

	/* A CQE this provider cannot read still completes its WR. */
	if (bad) {
		wc->status = IBV_WC_GENERAL_ERR;
		wc->vendor_err = 0;
	}
	return 0;
}

/* Release: our reads of the CQEs before the index that frees their slots. */
static void update_cons_index(struct softhca_cq *cq)
{
	__atomic_store_n(&cq->dbr->set_ci,
			 htobe32(softhca_cq_ci_value(cq->cons_index)),
			 __ATOMIC_RELEASE);
}

int softhca_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct softhca_cq *cq = to_scq(ibcq);
	uint32_t ci, start;
	int n = 0;

	softhca_lock(&cq->lock);
	start = ci = cq->cons_index;
	while (n < ne) {
		const struct softhca_cqe *cqe;

		cqe = softhca_cqe_get_sw(cq->ring, ci, cq->cqe_cnt);
		if (!cqe)
			break;
		/* Owner and opcode seen: only now read the rest (step 1.2). */
		udma_from_device_barrier();
		ci++;
		if (!parse_cqe(cq, cqe, &wc[n]))
			n++;
	}
	if (ci != start) {
		__atomic_store_n(&cq->cons_index, ci, __ATOMIC_RELAXED);
		update_cons_index(cq);
	}
	softhca_unlock(&cq->lock);
	/* Nothing new: a CQ of a gone device stays empty, say so. */
	if (!n && softhca_device_gone(to_sctx(ibcq->context)))
		return -EIO;
	return n;
}

void softhca_cq_clean_locked(struct softhca_cq *cq, uint32_t qpn)
{
	uint32_t removed;

	cq->last_qp = NULL;
	removed = softhca_cq_compact(cq->ring, cq->cqe_cnt, cq->cons_index, qpn);
	if (!removed)
		return;
	__atomic_store_n(&cq->cons_index, cq->cons_index + removed,
			 __ATOMIC_RELAXED);
	/* The moved CQEs before the index that frees their old slots. */
	udma_to_device_barrier();
	update_cons_index(cq);
}
