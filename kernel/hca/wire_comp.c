// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the completer of an RC QP on the wire. Responses the
 * receive path queued for the QP (wire_resp.c) are taken here, by the QP's
 * executor, in arrival order:
 *
 * - an ACK acknowledges every PSN up to its own: SEND and WRITE flights it
 *   covers complete, in order; one that covers a READ or an atomic whose
 *   response never came is an implied NAK (IBTA 9.7.5.1.4): go back N;
 * - a NAK acknowledges the PSNs before its own, then: a PSN sequence error
 *   goes back N from its PSN, an RNR NAK waits the responder's timer and
 *   then goes back (rnr_retry times), any other fails the WQE with the
 *   status a ConnectX reports (REM_INV_REQ_ERR, REM_ACCESS_ERR,
 *   REM_OP_ERR) and the QP goes to ERR;
 * - READ responses must come in PSN order from the oldest unacknowledged
 *   PSN: each is placed at its offset in the READ's local list, and a gap
 *   (a lost response) goes back N to re-request the rest;
 * - an atomic ACK writes the original value and completes the atomic.
 * A response for a PSN never sent, one already acknowledged, or one not
 * of the shape its request awaits (opcode, length) is a duplicate or a
 * forgery: dropped and counted (wire_rx_stale_rsp_drops). Progress
 * restarts the ACK timer and the retry counters.
 *
 * Called with the QP's exec_lock held, in process context.
 */
#include "wire_rc.h"

static struct hca_wire_flight *hca_wire_head(struct hca_wire_req *r)
{
	return r->nfl ? &r->fl[r->head] : NULL;
}

static bool hca_wire_flight_is_rd(const struct hca_wire_flight *f)
{
	return f->opcode == SOFTHCA_OPCODE_RDMA_READ ||
	       f->opcode == SOFTHCA_OPCODE_ATOMIC_CS ||
	       f->opcode == SOFTHCA_OPCODE_ATOMIC_FA;
}

/* ctx->wqe as completing (or failing) flight @f needs it. */
static struct hca_wqe *hca_wire_flight_wqe(struct hca_exec_ctx *ctx,
					   const struct hca_wire_flight *f)
{
	struct hca_wqe *w = &ctx->wqe;

	w->idx = f->idx;
	w->opcode = f->opcode;
	w->op = softhca_opcode_on(f->opcode, SOFTHCA_TP_RC);
	w->fm_ce_se = f->fm_ce_se;
	w->imm = f->imm;
	w->wqebbs = f->wqebbs;
	w->local.n = 0;
	w->local.inl = NULL;
	w->local.len = f->len;
	return w;
}

/* The oldest flight is done with: off the ring. */
static void hca_wire_flight_pop(struct hca_qp *qp, struct hca_wire_req *r)
{
	struct hca_wire_flight *f = &r->fl[r->head];

	r->nrd -= hca_wire_flight_is_rd(f);
	r->head = (r->head + 1) & (HCA_WIRE_FLIGHTS - 1);
	r->nfl--;
	/* Acknowledged while being sent again: the cursor moves past it. */
	if (r->cur)
		r->cur--;
	else if (!r->nfl)
		r->next_psn = hca_psn_add(f->psn, f->npkts);
	else
		hca_wire_req_sync(r);
}

/* The oldest flight completed: its CQE, fresh retry counters. */
/*
 * Something new was acknowledged or answered: the transport retries start
 * again (retry_cnt counts timeouts without progress: a 1 MiB message at
 * 5 % loss may need more than 7 in all), no probe, no rewind pending.
 */
static void hca_wire_comp_progress(struct hca_qp *qp, bool *progress)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire->req;

	e->retry_left = hca_path_get(qp)->retry_cnt;
	r->rewind_pending = false;
	r->probe = false;
	*progress = true;
}

static void hca_wire_comp_done(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       bool *progress)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire->req;
	struct hca_wire_flight *f = &r->fl[r->head];
	const struct hca_path *p = hca_path_get(qp);

	/* Flights complete in order from sq_ci: anything else is our bug. */
	if (WARN_ON_ONCE(qp->sq_ci != f->idx))
		return;
	/* Its wait (and SQD's "started") ends with the last flight. */
	hca_sq_complete_one(qp, hca_wire_flight_wqe(ctx, f));
	hca_wire_flight_pop(qp, r);
	e->rnr_left = p->rnr_retry;
	hca_wire_comp_progress(qp, progress);
}

void hca_wire_comp_fail(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			u8 syndrome)
{
	struct hca_wire_req *r = &qp->eng->wire->req;
	struct hca_wire_flight *f = hca_wire_head(r);

	if (!f || WARN_ON_ONCE(qp->sq_ci != f->idx))
		return;
	hca_sq_fail(qp, hca_wire_flight_wqe(ctx, f), syndrome);
	hca_wire_flight_pop(qp, r);
}

/* Go back N to @psn, once until something progresses; true: went back. */
static bool hca_wire_comp_rewind(struct hca_qp *qp, u32 psn)
{
	struct hca_wire_req *r = &qp->eng->wire->req;

	if (r->rewind_pending && r->rewound == psn)
		return false;
	hca_wire_req_rewind(qp, psn);
	return true;
}

/* A READ or atomic response that never came, seen by what came after. */
static void hca_wire_comp_implied_nak(struct hca_qp *qp, u32 psn)
{
	if (hca_wire_comp_rewind(qp, psn))
		hca_count(qp->eng->req_cnt, HCA_QCNT_IMPLIED_NAK_SEQ_ERR, 1);
}

/*
 * Every PSN up to @psn is acknowledged: complete the SEND and WRITE
 * flights it covers, in order, up to the first READ or atomic.
 */
static void hca_wire_comp_ack_upto(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				   u32 psn, bool *progress)
{
	struct hca_wire_req *r = &qp->eng->wire->req;
	struct hca_wire_flight *f;

	while ((f = hca_wire_head(r))) {
		s32 d = hca_psn_diff(psn, f->psn);
		u32 acked;

		if (d < 0)
			return;
		if (hca_wire_flight_is_rd(f)) {
			/* Acknowledged past it: its response was lost. */
			if (d >= (s32)f->npkts)
				hca_wire_comp_implied_nak(qp,
					hca_psn_add(f->psn, f->acked));
			return;
		}
		acked = min_t(u32, d + 1, f->npkts);
		if (acked > f->acked) {
			f->acked = acked;
			hca_wire_comp_progress(qp, progress);
			hca_wire_req_sync(r);
		}
		if (f->acked < f->npkts)
			return;
		hca_wire_comp_done(ctx, qp, progress);
	}
}

/* The last PSN the flights cover: a response past it answers nothing. */
static bool hca_wire_psn_sent(struct hca_wire_req *r, u32 psn)
{
	const struct hca_wire_flight *last;

	if (!r->nfl)
		return false;
	last = hca_wire_fl(r, r->nfl - 1);
	return hca_psn_diff(psn, hca_psn_add(last->psn, last->npkts)) < 0 &&
	       hca_psn_diff(psn, r->fl[r->head].psn) >= 0;
}

static const u8 hca_wire_nak_syndrome[] = {
	[HCA_NAK_INVALID_REQUEST] = SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
	[HCA_NAK_REMOTE_ACCESS] = SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR,
	[HCA_NAK_REMOTE_OP_ERR] = SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR,
	[HCA_NAK_INVALID_RD_REQUEST] = SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR,
};

static void hca_wire_comp_rnr(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			      u32 psn, u8 timer)
{
	struct hca_engine_qp *e = qp->eng;

	hca_count(e->req_cnt, HCA_QCNT_RNR_NAKS_RCVD, 1);
	if (hca_path_get(qp)->rnr_retry != 7) {
		if (!e->rnr_left) {
			hca_wire_comp_fail(ctx, qp,
				SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
			return;
		}
		e->rnr_left--;
	}
	hca_wire_req_rewind(qp, psn);
	hca_wait_set(qp, HCA_WAIT_RNR, hca_rnr_timer_ns(timer));
}

/* An ACK or NAK (opcode ACKNOWLEDGE) for @psn. */
static void hca_wire_comp_aeth(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       const struct hca_wire_rsp_cb *cb, bool *progress)
{
	u8 kind = cb->syndrome & HCA_AETH_KIND_MASK;
	u8 value = cb->syndrome & HCA_AETH_VALUE_MASK;
	u32 before = hca_psn_add(cb->psn, HCA_PSN_MASK);

	if (kind == HCA_AETH_ACK) {
		hca_wire_comp_ack_upto(ctx, qp, cb->psn, progress);
		return;
	}
	hca_wire_comp_ack_upto(ctx, qp, before, progress);
	hca_wire_count_nak(qp->eng->req_cnt, cb->syndrome, false);
	if (kind == HCA_AETH_RNR_NAK) {
		hca_wire_comp_rnr(ctx, qp, cb->psn, value);
	} else if (kind != HCA_AETH_NAK) {
		return;		/* a reserved kind: ignored */
	} else if (value == HCA_NAK_PSN_SEQ_ERR) {
		hca_wire_comp_rewind(qp, cb->psn);
	} else if (value < ARRAY_SIZE(hca_wire_nak_syndrome) &&
		   hca_wire_nak_syndrome[value]) {
		hca_wire_comp_fail(ctx, qp, hca_wire_nak_syndrome[value]);
	}
}

/*
 * The READ or atomic at the head, its WQE fetched again, its list held
 * up to byte @end, the pages of bytes @from.. there; NULL if it cannot be,
 * ERR_PTR(-EAGAIN) while a page fault is resolved (the response is
 * dropped, and the requester stalls: its timer asks again once the pages
 * are there, costing no retry while it waits).
 */
static struct hca_wqe *hca_wire_comp_local(struct hca_exec_ctx *ctx,
					   struct hca_qp *qp, u16 posted,
					   const struct hca_wire_flight *f,
					   u64 from, u64 end)
{
	struct hca_wqe *w = &ctx->wqe;
	int err;

	if (hca_wqe_fetch_at(ctx, qp, f->idx, posted) ||
	    hca_wqe_parse_rc(qp, w, ctx->wqe_buf) || w->opcode != f->opcode ||
	    w->local.len != f->len)
		return NULL;
	err = hca_sgl_get_from(qp->hca, qp->pdn, w->op->local_access,
			       &w->local, from, end, &qp->eng->lkeys);
	if (err == -EAGAIN &&
	    hca_odp_req_stall(qp, &w->local.miss) == -EAGAIN)
		return ERR_PTR(-EAGAIN);
	return err ? NULL : w;
}

/* Is READ response @opcode the right one for packet @k of @n? */
static bool hca_wire_read_rsp_fits(u8 opcode, u32 k, u32 n)
{
	bool last = k == n - 1;

	switch (opcode & ~HCA_WIRE_TP_MASK) {
	case HCA_WOP_READ_RESP_FIRST:
	case HCA_WOP_READ_RESP_MIDDLE:
		return !last;
	case HCA_WOP_READ_RESP_LAST:
	case HCA_WOP_READ_RESP_ONLY:
		return last;
	}
	return false;
}

/* A response that is not what the request at its PSN awaits: dropped. */
static void hca_wire_comp_stale(struct hca_qp *qp)
{
	hca_wire_count(qp->hca, HCA_HCNT_WIRE_RX_STALE_RSP, 1);
}

static void hca_wire_comp_read(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       const struct hca_wire_rsp_cb *cb,
			       const u8 *payload, u16 posted, bool *progress)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_flight *f = hca_wire_head(&wq->req);
	struct hca_sgl *src = &ctx->remote;
	u32 k, off, want;
	struct hca_wqe *w;

	if (!f || f->opcode != SOFTHCA_OPCODE_RDMA_READ) {
		hca_wire_comp_stale(qp);
		return;
	}
	k = f->acked;
	off = k * wq->mtu;
	want = min(wq->mtu, f->len - min(off, f->len));
	if (cb->paylen != want || !hca_wire_read_rsp_fits(cb->opcode, k,
							  f->npkts)) {
		hca_wire_comp_stale(qp);
		return;
	}
	w = hca_wire_comp_local(ctx, qp, posted, f, off, (u64)off + want);
	if (IS_ERR(w))
		return;
	if (!w) {
		hca_wire_comp_fail(ctx, qp, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	src->n = 0;
	src->inl = payload;
	src->len = want;
	hca_sgl_copy_at(ctx, &w->local, off, src, want);
	hca_sgl_put(&w->local);
	hca_count(qp->eng->req_cnt, HCA_QCNT_RX_BYTES, want);
	f->acked++;
	hca_wire_comp_progress(qp, progress);
	if (f->acked < f->npkts)
		return;
	wq->req.rd_hold_until = 0;	/* the next READ may ask at once */
	hca_wire_comp_done(ctx, qp, progress);
}

static void hca_wire_comp_atomic(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_rsp_cb *cb, u16 posted,
				 bool *progress)
{
	struct hca_wire_flight *f = hca_wire_head(&qp->eng->wire->req);
	struct hca_wqe *w;

	if (!f || !hca_wire_flight_is_rd(f) ||
	    f->opcode == SOFTHCA_OPCODE_RDMA_READ) {
		hca_wire_comp_stale(qp);
		return;
	}
	w = hca_wire_comp_local(ctx, qp, posted, f, 0, f->len);
	if (IS_ERR(w))
		return;
	if (!w) {
		hca_wire_comp_fail(ctx, qp, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	/* The original value, in host order, as the local path leaves it. */
	hca_mkey_write(w->local.sge[0].mkey, w->local.sge[0].va, &cb->orig,
		       sizeof(cb->orig));
	hca_sgl_put(&w->local);
	f->acked = 1;
	hca_wire_comp_done(ctx, qp, progress);
}

/*
 * A response past @una: the one at @una was lost or overtaken. A READ is
 * asked again from @una, but then not again for an eighth of the ACK
 * timeout: each ask brings the whole rest of the READ, and reordering
 * that opened a gap per packet would otherwise ask for it per packet,
 * a storm that loses the very response awaited (netem reorder, 448 KiB).
 * A gap inside the hold waits for the answer to the last ask, or the
 * timeout.
 */
static void hca_wire_comp_gap(struct hca_qp *qp, u32 una)
{
	struct hca_wire_req *r = &qp->eng->wire->req;
	u64 now;

	if (hca_wire_head(r)->opcode != SOFTHCA_OPCODE_RDMA_READ) {
		hca_wire_comp_implied_nak(qp, una);
		return;
	}
	now = ktime_get_ns();
	if (now < r->rd_hold_until)
		return;
	r->rd_hold_until = now + min_t(u64, HCA_WIRE_RD_HOLD_MAX_NS,
			hca_wire_timeout_ns(hca_path_get(qp)) / 8);
	hca_wire_comp_implied_nak(qp, una);
}

static void hca_wire_comp_packet(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_rsp_cb *cb,
				 const u8 *payload, u16 posted, bool *progress)
{
	struct hca_wire_req *r = &qp->eng->wire->req;
	const struct hca_wire_opcode *op = hca_wire_opcode(cb->opcode);
	u32 una;
	s32 d;

	if (!op || !hca_wire_psn_sent(r, cb->psn)) {
		hca_wire_comp_stale(qp);
		return;
	}
	if (cb->opcode == (hca_wire_tp(qp) | HCA_WOP_ACK)) {
		hca_wire_comp_aeth(ctx, qp, cb, progress);
		return;
	}
	/* READ responses and atomic ACKs: exactly the next PSN awaited. */
	hca_wire_comp_ack_upto(ctx, qp, hca_psn_add(cb->psn, HCA_PSN_MASK),
			       progress);
	if (!r->nfl)
		return;
	una = hca_psn_add(r->fl[r->head].psn, r->fl[r->head].acked);
	d = hca_psn_diff(cb->psn, una);
	if (d > 0)
		hca_wire_comp_gap(qp, una);
	else if (d < 0)
		hca_wire_comp_stale(qp);	/* answered already */
	if (d)
		return;
	if (op->flags & HCA_WF_ATOMIC)
		hca_wire_comp_atomic(ctx, qp, cb, posted, progress);
	else if (op->flags & HCA_WF_READ)
		hca_wire_comp_read(ctx, qp, cb, payload, posted, progress);
}

void hca_wire_comp_drain(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			 u16 posted)
{
	struct hca_engine_qp *e = qp->eng;
	bool progress = false;
	struct sk_buff *skb;

	while ((skb = skb_dequeue(&e->wire_rsp))) {
		const struct hca_wire_rsp_cb *cb = (const void *)skb->cb;
		enum hca_qp_state state = READ_ONCE(qp->state);

		if (state == HCA_QPS_RTS || state == HCA_QPS_SQD)
			hca_wire_comp_packet(ctx, qp, cb, skb->data + cb->payoff,
					     posted, &progress);
		else
			hca_wire_count(qp->hca, HCA_HCNT_WIRE_RX_QP_STATE, 1);
		consume_skb(skb);
	}
	if (progress && READ_ONCE(qp->state) != HCA_QPS_ERR)
		hca_wire_req_timer(qp);
}
