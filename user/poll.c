// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * poll.c - ibv_poll_cq (seed-map.md §5.4) and CQ cleaning.
 *
 * Under the CQ lock: take the CQE at the consumer index if the HCA wrote it
 * on this lap (opcode not INVALID, owner bit of the lap), issue
 * udma_from_device_barrier, find the QP by its QPN and hand the CQE to the
 * decoder the kernel shares (softhca_cqe_decode(), <rdma/softhca-cqe.h>):
 * it fills the work completion and finds the WR. A requester CQE names
 * the WQE by its WQEBB counter (sq.wrs.wrid[], and sq.wrs.wqe_head[]
 * retires every WR up to it, the unsignaled ones too), a responder CQE
 * takes the oldest posted receive (rq.wrs.wrid[] at the RQ tail), or, for
 * a QP on an SRQ, the SRQ WQE its counter names (srq.c). Error
 * CQEs advance the tails the same way. Finally the new consumer index goes
 * to the doorbell record (set_ci, 24 bits, big-endian).
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
 * A receive CQE of an XRC SRQ on this CQ: the WR is the SRQ WQE it names,
 * the QP the target's (which may be another process's handle).
 */
static int parse_xrc_cqe(struct softhca_cq *cq, const struct softhca_cqe *cqe,
			 struct softhca_wc *w)
{
	struct softhca_srq *srq =
		softhca_find_xsrq(cq, be32toh(cqe->srqn_uidx) &
				      SOFTHCA_24BIT_MASK);

	if (!srq || softhca_cqe_kind(cqe)->wq != SOFTHCA_CQE_WQ_RQ)
		return -1;
	return softhca_cqe_decode_srq(cqe, NULL, NULL, &srq->wrs, w) ? -1 : 0;
}

/*
 * Decode one CQE into w. Returns 0, or -1 when no outstanding WR of a live
 * QP on this CQ matches it (the CQE is then dropped: it would otherwise
 * block the CQ for good, or move a queue's tail over WRs still posted).
 * The decoder reads no SQ ring: poll_cq stays off the poster's lines.
 */
static int parse_cqe(struct softhca_cq *cq, const struct softhca_cqe *cqe,
		     struct softhca_wc *w)
{
	struct softhca_qp *qp = cq_find_qp(cq, softhca_cqe_qpn(cqe));
	bool recv = qp && qp_uses_cq(qp, cq, false);
	struct ibv_srq *srq = qp ? qp->vqp.qp.srq : NULL;

	/* No QP of ours: a receive of an XRC target, named by its SRQ. */
	if (!qp)
		return parse_xrc_cqe(cq, cqe, w);
	if (softhca_cqe_decode_srq(cqe,
				   qp_uses_cq(qp, cq, true) ? &qp->sq.wrs : NULL,
				   recv && !srq ? &qp->rq.wrs : NULL,
				   recv && srq ? &to_ssrq(srq)->wrs : NULL,
				   w))
		return -1;
	return 0;
}

/* Release: our reads of the CQEs before the index that frees their slots. */
static void update_cons_index(struct softhca_cq *cq)
{
	__atomic_store_n(&cq->dbr->set_ci,
			 htobe32(softhca_cq_ci_value(cq->cons_index)),
			 __ATOMIC_RELEASE);
}

int softhca_cq_take(struct softhca_cq *cq, uint32_t *ci, struct softhca_wc *w)
{
	const struct softhca_cqe *cqe;

	while ((cqe = softhca_cqe_get_sw(cq->ring, *ci, cq->cqe_cnt))) {
		/* Owner and opcode seen: only now read the rest (step 1.2). */
		udma_from_device_barrier();
		++*ci;
		if (!parse_cqe(cq, cqe, w))
			return 0;
	}
	return -1;
}

void softhca_cq_commit(struct softhca_cq *cq, uint32_t ci)
{
	if (ci == cq->cons_index)
		return;
	__atomic_store_n(&cq->cons_index, ci, __ATOMIC_RELAXED);
	update_cons_index(cq);
}

int softhca_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct softhca_cq *cq = to_scq(ibcq);
	struct softhca_wc w;
	uint32_t ci;
	int n = 0;

	softhca_lock(&cq->lock);
	ci = cq->cons_index;
	while (n < ne && !softhca_cq_take(cq, &ci, &w))
		softhca_wc_to_ibv(&w, &wc[n++]);
	softhca_cq_commit(cq, ci);
	softhca_unlock(&cq->lock);
	/* Nothing new: a CQ of a gone device stays empty, say so. */
	if (!n && softhca_device_gone(to_sctx(ibcq->context)))
		return -EIO;
	return n;
}

/*
 * The receive CQEs of QP @qpn not polled yet give their SRQ WQEs back to
 * the free list before the cleaning drops them (mlx5's __mlx5_cq_clean):
 * else each would stay posted for good, the SRQ a WQE smaller.
 */
static void cq_release_srq_wqes(struct softhca_cq *cq, uint32_t qpn,
				struct softhca_srq *srq)
{
	for (uint32_t n = 0; n < cq->cqe_cnt; n++) {
		const struct softhca_cqe *cqe =
			softhca_cqe_get_sw(cq->ring, cq->cons_index + n,
					   cq->cqe_cnt);
		__u64 wr_id;

		if (!cqe)
			break;
		udma_from_device_barrier();
		if (softhca_cqe_qpn(cqe) == qpn &&
		    softhca_cqe_kind(cqe)->wq == SOFTHCA_CQE_WQ_RQ)
			softhca_wrs_retire_srq(&srq->wrs,
					       softhca_cqe_wqe_counter(cqe),
					       &wr_id);
	}
}

void softhca_cq_clean_locked(struct softhca_cq *cq, uint32_t qpn,
			     struct softhca_srq *srq)
{
	uint32_t removed;

	if (srq)
		cq_release_srq_wqes(cq, qpn, srq);
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
