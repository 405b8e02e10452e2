// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the RQ source. Every responder (the local RC one in
 * responder.c, the datagram one in ud.c, the wire one in wire_resp.c)
 * takes its receive WQEs through these functions, which read either the
 * QP's own RQ or its SRQ: is one there (for an SRQ: take it, for this QP),
 * parse it, the index its CQE names, consume it, flush at ERR.
 *
 * Own RQ: the WQE at rq_ci, consumed when its CQE is written; the doorbell
 * record's rcv_counter says how many are posted.
 * SRQ: many QPs take from one list (queue-formats.md "SRQ WQE"). A QP
 * takes the SRQ's head WQE under the SRQ's lock when a message needs one
 * and holds it (srq_held, srq_idx, under its own resp_lock) until the
 * message's CQE: an RNR retry or a datagram that did not fit finds it
 * again. The counter bounds what is taken, so a looping or bad list never
 * makes the HCA spin: a next index beyond the ring puts the SRQ in error
 * (SRQ_CATAS_ERROR) and it gives nothing any more; a malformed WQE fails
 * its message with an error CQE on the QP, as an RQ WQE does.
 *
 * An XRC target has no queue of its own: the responder sets its @srq for
 * the request in hand (hca_rq_xrc_enter(), leave), and the SRQ's CQ takes
 * the CQE. On the wire a message's WQE stays held between its packets:
 * by SRQ number and id, without a reference, so that DESTROY_SRQ never
 * waits for a peer; a flush finds the SRQ again, or nothing to flush.
 *
 * All callers hold the QP's resp_lock.
 */
#include "engine.h"

/* An SRQ WQE is copied whole into the engine's buffer. */
static_assert(HCA_SRQ_STRIDE_MAX <= HCA_ENG_RWQE_MAX);

u16 hca_rq_posted(struct hca_qp *qp)
{
	return be32_to_cpu(READ_ONCE(qp->dbr->rcv_counter)) &
	       SOFTHCA_WQ_DBR_MASK;
}

static u16 hca_srq_posted(struct hca_srq *srq)
{
	return be32_to_cpu(READ_ONCE(srq->dbr->counter)) & SOFTHCA_WQ_DBR_MASK;
}

/*
 * Take the SRQ's head WQE for @qp, under the SRQ's lock (any thread, any
 * responder). The limit event and the error event go after the unlock.
 */
static bool hca_srq_take(struct hca_qp *qp)
{
	struct hca_srq *srq = qp->srq;
	const struct softhca_srq_next_seg *next;
	bool limit = false, bad = false;
	unsigned long flags;
	u16 posted, left, nidx;

	spin_lock_irqsave(&srq->lock, flags);
	posted = hca_srq_posted(srq);
	if (srq->error || posted == srq->taken) {
		spin_unlock_irqrestore(&srq->lock, flags);
		return false;
	}
	/* The doorbell record, then the WQEs it covers. */
	smp_rmb();
	next = srq->buf + ((size_t)srq->head << srq->wqe_shift);
	nidx = be16_to_cpu(READ_ONCE(next->next_wqe_index));
	qp->srq_idx = srq->head;
	qp->srq_held = true;
	/* An XRC target finds it again by these (hca_rq_xrc_enter()). */
	qp->held_srqn = srq->srqn;
	qp->held_srq_id = srq->id;
	srq->taken++;
	if (nidx >= srq->wqe_cnt) {
		/* This WQE is still good; the list beyond it is not. */
		srq->error = true;
		bad = true;
	}
	srq->head = nidx;
	left = posted - srq->taken;
	if (srq->limit && left < srq->limit) {
		srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	if (limit)
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT,
				srq->srqn, SOFTHCA_EVENT_QUEUE_TYPE_SRQ);
	if (bad)
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_SRQ_CATAS_ERROR,
				srq->srqn, SOFTHCA_EVENT_QUEUE_TYPE_SRQ);
	return true;
}

bool hca_rq_is_empty(struct hca_qp *qp)
{
	if (qp->srq)
		return !qp->srq_held && !hca_srq_take(qp);
	if (!qp->rq_wqe_cnt || hca_rq_posted(qp) == qp->rq_ci)
		return true;
	/* The doorbell record, then the WQE it covers. */
	smp_rmb();
	return false;
}

/*
 * Parse the copy in rwqe_buf from segment @first on into @sgl (or only
 * validate it if @sgl is NULL): data segments up to the sentinel or the
 * end of @stride, zero-length ones skipped.
 */
static int hca_rwqe_parse(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			  u32 first, u32 stride, struct hca_sgl *sgl)
{
	u32 max_sge = min_t(u32, qp->hca->caps->max_recv_sge,
			    HCA_ENG_SGE_MAX);
	u32 i, n = 0;

	for (i = first; i < stride / SOFTHCA_DS_SIZE; i++) {
		const struct softhca_wqe_data_seg *d =
			(const void *)(ctx->rwqe_buf + i * SOFTHCA_DS_SIZE);
		u32 key = be32_to_cpu(d->lkey);
		u32 len = be32_to_cpu(d->byte_count);
		struct hca_sge *sge;

		if (key == SOFTHCA_INVALID_LKEY)
			break;
		if (!len)
			continue;
		if (n++ == max_sge || (len & SOFTHCA_INLINE_SEG))
			return -EINVAL;
		if (!sgl)
			continue;
		sge = &sgl->sge[sgl->n++];
		sge->mkey = NULL;
		sge->key = key;
		sge->len = len;
		sge->va = be64_to_cpu(d->addr);
		sgl->len += len;
	}
	return 0;
}

/*
 * Copy the next receive WQE (RQ: at rq_ci; SRQ: the one held, which
 * hca_rq_is_empty() took) out of the ring once and parse the copy.
 * -EINVAL for a malformed WQE, or none held.
 */
int hca_rq_fetch(struct hca_exec_ctx *ctx, struct hca_qp *qp,
		 struct hca_sgl *sgl)
{
	u32 stride, first = 0;

	if (sgl) {
		sgl->n = 0;
		sgl->len = 0;
		sgl->inl = NULL;
	}
	if (qp->srq) {
		struct hca_srq *srq = qp->srq;

		if (!qp->srq_held)
			return -EINVAL;
		stride = 1U << srq->wqe_shift;
		hca_copy(ctx->rwqe_buf,
			 srq->buf + ((size_t)qp->srq_idx << srq->wqe_shift),
			 stride);
		/* The next segment: the list is the SRQ's business. */
		return hca_rwqe_parse(ctx, qp, 1, stride, sgl);
	}
	stride = 1U << qp->rq_wqe_shift;
	hca_copy(ctx->rwqe_buf, qp->rq_buf +
		 ((qp->rq_ci & (qp->rq_wqe_cnt - 1)) << qp->rq_wqe_shift),
		 stride);
	if (qp->flags & HCA_QP_SIGNATURE) {
		if (softhca_recv_wqe_xor(ctx->rwqe_buf, stride, qp->qpn,
					 qp->rq_ci) != 0xff)
			return -EINVAL;
		first = 1;		/* the signature segment */
	}
	return hca_rwqe_parse(ctx, qp, first, stride, sgl);
}

/* The index a receive CQE names: the RQ counter, or the SRQ WQE's index. */
u16 hca_rq_wqe_counter(struct hca_qp *qp)
{
	return qp->srq ? qp->srq_idx : qp->rq_ci;
}

/*
 * Write a receive CQE of @qp: to the SRQ's CQ for an XRC SRQ, else the
 * QP's receive CQ; an SRQ's number goes in it (the provider finds an XRC
 * SRQ's WQE by it: the target QP is nothing to the CQ's owner).
 */
int hca_rq_cqe_write(struct hca_qp *qp, struct softhca_cqe *cqe)
{
	struct hca_cq *cq = qp->recv_cq;

	if (qp->srq) {
		cqe->srqn_uidx = cpu_to_be32(qp->srq->srqn);
		if (qp->srq->cq)
			cq = qp->srq->cq;
	}
	return hca_cqe_write(cq, cqe);
}

/* The PD the receive WQE's lkeys are checked against: the SRQ's, if any. */
u32 hca_rq_pdn(struct hca_qp *qp)
{
	return qp->srq ? qp->srq->pdn : qp->pdn;
}

/* Its CQE is written: the WQE is the consumer's again. */
void hca_rq_consume(struct hca_qp *qp)
{
	if (qp->srq)
		qp->srq_held = false;
	else
		WRITE_ONCE(qp->rq_ci, qp->rq_ci + 1);
}

static void hca_rq_flush_one(struct hca_qp *qp);

bool hca_rq_xrc_enter(struct hca_qp *qp, u32 srqn, bool next)
{
	struct hca_srq *srq = hca_srq_get(qp->hca, srqn);

	if (srq && srq->xrcdn == qp->xrcdn &&
	    (!next || !qp->srq_held || srq->id == qp->held_srq_id)) {
		qp->srq = srq;
		return true;
	}
	if (srq)
		hca_srq_put(srq);
	return false;
}

void hca_rq_xrc_leave(struct hca_qp *qp)
{
	struct hca_srq *srq = qp->srq;

	if (!srq)
		return;
	qp->srq = NULL;
	hca_srq_put(srq);
}

/*
 * An XRC target's held WQE completes with WR_FLUSH_ERR on its SRQ's CQ,
 * if that SRQ is still there; it is let go either way.
 */
static void hca_rq_xrc_flush_held(struct hca_qp *qp)
{
	struct hca_srq *srq;

	if (!qp->srq_held)
		return;
	srq = hca_srq_get(qp->hca, qp->held_srqn);
	if (srq && srq->id == qp->held_srq_id) {
		qp->srq = srq;
		hca_rq_flush_one(qp);
		qp->srq = NULL;
	}
	if (srq)
		hca_srq_put(srq);
	qp->srq_held = false;
}

/*
 * RESET: the queue starts over. An SRQ WQE held (a message in progress)
 * is completed with WR_FLUSH_ERR rather than lost: the provider's CQ
 * cleaning, which follows every reset and destroy, gives it back to the
 * SRQ's free list.
 */
void hca_rq_reset(struct hca_qp *qp)
{
	if (qp->type->xrc_tgt) {
		hca_rq_xrc_flush_held(qp);
		return;
	}
	if (qp->srq && qp->srq_held)
		hca_rq_flush_one(qp);
	qp->rq_ci = 0;
	qp->srq_held = false;
	qp->srq_last_wqe = false;
}

/* In ERR: is there a WQE to flush, or (SRQ) LAST_WQE_REACHED to raise? */
bool hca_rq_flush_pending(struct hca_qp *qp)
{
	if (qp->type->xrc_tgt)
		return READ_ONCE(qp->srq_held);
	if (qp->srq)
		return READ_ONCE(qp->srq_held) || !READ_ONCE(qp->srq_last_wqe);
	return qp->rq_wqe_cnt && hca_rq_posted(qp) != READ_ONCE(qp->rq_ci);
}

static void hca_rq_flush_one(struct hca_qp *qp)
{
	struct softhca_cqe cqe;

	hca_cqe_init_err(&cqe, qp->eng->resp_cnt, SOFTHCA_CQE_RESP_ERR,
			 qp->qpn, 0, hca_rq_wqe_counter(qp),
			 SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR);
	hca_rq_cqe_write(qp, &cqe);
	hca_rq_consume(qp);
}

/*
 * The QP is in ERR: complete every posted RQ WQE from rq_ci with
 * WR_FLUSH_ERR, one CQE each, at most @budget of them. An SRQ's WQEs stay
 * for its other QPs: only the one this QP held is flushed, and then
 * LAST_WQE_REACHED says no more CQE of this QP's receives will come
 * (IBA 11.6.3.1), once per ERR. Returns whether some are left.
 */
bool hca_rq_flush(struct hca_qp *qp, unsigned int budget)
{
	bool more = false, last = false;
	u16 posted;

	if (!qp->rq_wqe_cnt && !qp->srq && !qp->type->xrc_tgt)
		return false;
	mutex_lock(&qp->eng->resp_lock);
	/* Not if a RESET (which forgets the queues) came in between. */
	if (READ_ONCE(qp->state) != HCA_QPS_ERR)
		goto out;
	/* No LAST_WQE_REACHED: the target is nothing to its SRQs' owners. */
	if (qp->type->xrc_tgt) {
		hca_rq_xrc_flush_held(qp);
		goto out;
	}
	if (qp->srq) {
		if (qp->srq_held)
			hca_rq_flush_one(qp);
		if (!qp->srq_last_wqe) {
			WRITE_ONCE(qp->srq_last_wqe, true);
			last = true;
		}
		goto out;
	}
	posted = hca_rq_posted(qp);
	while (qp->rq_ci != posted && budget--)
		hca_rq_flush_one(qp);
	more = qp->rq_ci != posted;
out:
	mutex_unlock(&qp->eng->resp_lock);
	if (last)
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED,
				qp->qpn, SOFTHCA_EVENT_QUEUE_TYPE_QP);
	return more;
}
