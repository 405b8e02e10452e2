// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the requester of an RC QP whose peer is on the wire.
 * It turns the send WQEs from sq_sent on into request packets, segmented
 * at the path MTU, while the PSNs in flight fit the window and the WQEs
 * the flight ring; READs and atomics also within the initiator depth
 * (max_rd_atomic), a fenced WQE only once they are done. Each WQE that
 * left is a flight (wire_rc.h): the completer (wire_comp.c) completes
 * flights in order as responses arrive, and goes back N by moving the
 * cursor (cur, next_psn) back to the first PSN to send again; the flights
 * stay, their WQEs are fetched from the ring again as they are resent, as
 * a ConnectX does, and an ACK for what the first transmission delivered
 * still completes them. The local ACK timer is the QP's wait timer
 * (exec.c): when it fires with flights left and no progress, the oldest
 * unacknowledged packet goes again alone, asking for an ACK (a probe:
 * resending the whole window into a congested receiver only congests it
 * more), retry_cnt times, then the oldest WQE fails with RETRY_EXC_ERR.
 * A UC QP's WQEs go out the same way, as UC packets, and complete once
 * sent (hca_wire_uc_step()).
 *
 * Called with the QP's exec_lock held, in process context.
 */
#include <linux/kernel.h>
#include <linux/sched.h>

#include "wire_rc.h"

/* Retry period of a requester whose local ACK timeout is 0 (infinite). */
#define HCA_WIRE_INFINITE_RETRY_NS	(100 * NSEC_PER_MSEC)

enum hca_wreq_kind {
	HCA_WREQ_NONE,		/* no packet: a local opcode (NOP, MKey ops) */
	HCA_WREQ_SEGMENTED,	/* SEND, WRITE: FIRST, MIDDLE, LAST or ONLY */
	HCA_WREQ_READ,		/* one request, its responses take the PSNs */
	HCA_WREQ_ATOMIC,	/* one request, one atomic ACK */
};

/*
 * The packets of each send opcode: the wire operation of its first packet
 * (of a segmented message, MIDDLE, LAST, LAST_IMM, ONLY and ONLY_IMM
 * follow it in IBTA's numbering, asserted below; SEND_WITH_INV ends in
 * LAST_INV or ONLY_INV instead) and how it is split.
 */
static const struct hca_wire_req_op {
	u8 first;
	u8 kind;
	bool imm;
	bool reth;		/* RETH in the first packet */
	bool inv;		/* IETH in the last: SEND_LAST/ONLY_INV */
} hca_wire_req_ops[SOFTHCA_OPCODE_CNT] = {
	[SOFTHCA_OPCODE_NOP] = { 0, HCA_WREQ_NONE, false, false },
	[SOFTHCA_OPCODE_LOCAL_INV] = { 0, HCA_WREQ_NONE, false, false },
	[SOFTHCA_OPCODE_UMR] = { 0, HCA_WREQ_NONE, false, false },
	[SOFTHCA_OPCODE_SEND] = {
		HCA_WOP_SEND_FIRST, HCA_WREQ_SEGMENTED, false, false },
	[SOFTHCA_OPCODE_SEND_INV] = {
		HCA_WOP_SEND_FIRST, HCA_WREQ_SEGMENTED, false, false, true },
	[SOFTHCA_OPCODE_SEND_IMM] = {
		HCA_WOP_SEND_FIRST, HCA_WREQ_SEGMENTED, true, false },
	[SOFTHCA_OPCODE_RDMA_WRITE] = {
		HCA_WOP_WRITE_FIRST, HCA_WREQ_SEGMENTED, false, true },
	[SOFTHCA_OPCODE_RDMA_WRITE_IMM] = {
		HCA_WOP_WRITE_FIRST, HCA_WREQ_SEGMENTED, true, true },
	[SOFTHCA_OPCODE_RDMA_READ] = {
		HCA_WOP_READ_REQ, HCA_WREQ_READ, false, true },
	[SOFTHCA_OPCODE_ATOMIC_CS] = {
		HCA_WOP_CMP_SWAP, HCA_WREQ_ATOMIC, false, false },
	[SOFTHCA_OPCODE_ATOMIC_FA] = {
		HCA_WOP_FETCH_ADD, HCA_WREQ_ATOMIC, false, false },
};

/* MIDDLE, LAST, LAST_IMM, ONLY, ONLY_IMM follow FIRST, for both. */
static_assert(HCA_WOP_SEND_ONLY_IMM - HCA_WOP_SEND_FIRST == 5 &&
	      HCA_WOP_SEND_LAST_IMM - HCA_WOP_SEND_FIRST == 3);
static_assert(HCA_WOP_WRITE_ONLY_IMM - HCA_WOP_WRITE_FIRST == 5 &&
	      HCA_WOP_WRITE_LAST_IMM - HCA_WOP_WRITE_FIRST == 3);

static inline bool hca_wire_is_rd(u8 opcode)
{
	u8 kind = hca_wire_req_ops[opcode].kind;

	return kind == HCA_WREQ_READ || kind == HCA_WREQ_ATOMIC;
}

/* Packet @k of @n of a segmented message. */
static u8 hca_wire_seg_op(const struct hca_wire_req_op *rop, u32 k, u32 n)
{
	if (n == 1)
		return rop->inv ? HCA_WOP_SEND_ONLY_INV :
				  rop->first + (rop->imm ? 5 : 4);
	if (!k)
		return rop->first;
	if (k < n - 1)
		return rop->first + 1;
	return rop->inv ? HCA_WOP_SEND_LAST_INV :
			  rop->first + (rop->imm ? 3 : 2);
}

static u32 hca_wire_npkts(const struct hca_wire_qp *wq, u8 opcode, u32 len)
{
	if (hca_wire_req_ops[opcode].kind == HCA_WREQ_ATOMIC)
		return 1;
	return max_t(u32, 1, DIV_ROUND_UP(len, wq->mtu));
}

/* The oldest PSN not acknowledged yet (next_psn if nothing is in flight). */
static u32 hca_wire_una(const struct hca_wire_req *r)
{
	const struct hca_wire_flight *f = &r->fl[r->head];

	if (!r->nfl)
		return r->next_psn;
	return hca_psn_add(f->psn, f->acked);
}

/*
 * Send packet f->sent of flight @f, whose WQE @w is parsed with its local
 * MKeys held. A packet that cannot be built or sent counts as lost: the
 * ACK timer sends it again.
 */
static void hca_wire_req_packet(struct hca_qp *qp, struct hca_wire_qp *wq,
				struct hca_wire_flight *f,
				const struct hca_wqe *w)
{
	const struct hca_wire_req_op *rop = &hca_wire_req_ops[f->opcode];
	struct hca_wire_req *r = &wq->req;
	u32 k = f->sent, off = k * wq->mtu, paylen = 0, pkts = 1;
	struct hca_wire_hdr h = {
		.pkey = HCA_WIRE_PKEY,
		.dqpn = wq->dest_qpn,
		.psn = hca_psn_add(f->psn, k),
	};
	bool last = true;
	struct sk_buff *skb;
	u8 *payload;

	switch (rop->kind) {
	case HCA_WREQ_SEGMENTED:
		h.opcode = hca_wire_seg_op(rop, k, f->npkts);
		paylen = min(wq->mtu, f->len - off);
		last = k == f->npkts - 1;
		if (!k && rop->reth) {
			h.reth.va = w->raddr;
			h.reth.rkey = w->rkey;
			h.reth.len = f->len;
		}
		if (last && rop->imm)
			h.imm = w->imm;
		if (last && rop->inv)
			h.ieth_rkey = be32_to_cpu(w->imm);
		if (last && (w->fm_ce_se & SOFTHCA_WQE_CTRL_SOLICITED))
			h.flags |= HCA_BTH_SE;
		break;
	case HCA_WREQ_READ:
		/* Again from packet k: the rest of the range. */
		h.opcode = HCA_WOP_READ_REQ;
		h.reth.va = w->raddr + off;
		h.reth.rkey = w->rkey;
		h.reth.len = f->len - min(off, f->len);
		pkts = f->npkts - k;
		break;
	case HCA_WREQ_ATOMIC:
		h.opcode = rop->first;
		h.atomic.va = w->raddr;
		h.atomic.rkey = w->rkey;
		h.atomic.swap_add = w->swap_add;
		h.atomic.compare = w->compare;
		break;
	}
	h.opcode |= hca_wire_tp(qp);
	h.xrc_srqn = w->xrc_srqn;	/* XRC: every request names the SRQ */
	/* UC asks for no ACK. */
	if (!qp->type->unreliable &&
	    (last || r->probe || ++r->noack >= HCA_WIRE_ACKREQ_EVERY)) {
		h.flags |= HCA_BTH_ACKREQ;
		r->noack = 0;
	}

	hca_wire_ack_flush(qp);		/* its responder's owed ACK first */
	skb = hca_wire_alloc(qp->hca, &wq->addr, &h, paylen, &payload);
	if (skb) {
		if (paylen)
			hca_sgl_read(&w->local, off, payload, paylen);
		hca_wire_send(qp->hca, skb);
	}
	hca_wire_rp_sent(wq, paylen);
	f->sent += pkts;
	r->next_psn = hca_psn_add(r->next_psn, pkts);
}

/* A new flight for the WQE @w at sq_sent, or NULL if it must wait. */
static struct hca_wire_flight *hca_wire_flight_new(struct hca_qp *qp,
						   struct hca_wire_qp *wq,
						   const struct hca_wqe *w,
						   const struct hca_path *p)
{
	struct hca_wire_req *r = &wq->req;
	struct hca_wire_flight *f;
	bool rd = hca_wire_is_rd(w->opcode);

	if (rd && r->nrd >= max_t(u8, p->max_rd_atomic, 1))
		return NULL;
	/* A fenced WQE waits for the READs and atomics before it. */
	if ((w->fm_ce_se & SOFTHCA_FENCE_MODE_MASK) ==
	    SOFTHCA_FENCE_MODE_SMALL_AND_FENCE && r->nrd)
		return NULL;
	f = &r->fl[(r->head + r->nfl) & (HCA_WIRE_FLIGHTS - 1)];
	f->idx = w->idx;
	f->wqebbs = w->wqebbs;
	f->opcode = w->opcode;
	f->fm_ce_se = w->fm_ce_se;
	f->imm = w->imm;
	f->psn = r->next_psn;
	f->len = w->local.len;
	f->npkts = hca_wire_npkts(wq, w->opcode, f->len);
	f->sent = 0;
	f->acked = 0;
	r->nfl++;
	r->cur = r->nfl - 1;
	r->nrd += rd;
	WRITE_ONCE(r->sq_sent, w->idx + w->wqebbs);
	hca_count(qp->eng->req_cnt, HCA_QCNT_TX_REQUESTS, 1);
	if (!hca_op_fetches(w->op))
		hca_count(qp->eng->req_cnt, HCA_QCNT_TX_BYTES, f->len);
	return f;
}

/* The flight still being sent (after a rewind, or a full window). */
static struct hca_wire_flight *hca_wire_flight_open(struct hca_wire_req *r)
{
	return r->cur < r->nfl ? hca_wire_fl(r, r->cur) : NULL;
}

void hca_wire_req_sync(struct hca_wire_req *r)
{
	struct hca_wire_flight *f;

	while (r->cur < r->nfl) {
		f = hca_wire_fl(r, r->cur);
		f->sent = max(f->sent, f->acked);
		if (f->sent < f->npkts) {
			r->next_psn = hca_psn_add(f->psn, f->sent);
			return;
		}
		r->cur++;
	}
	if (r->nfl) {
		f = hca_wire_fl(r, r->nfl - 1);
		r->next_psn = hca_psn_add(f->psn, f->npkts);
	}
}

static bool hca_wire_window_full(const struct hca_wire_req *r)
{
	return hca_psn_diff(r->next_psn, hca_wire_una(r)) >= HCA_WIRE_WINDOW;
}

/*
 * A WQE that cannot go (malformed, a bad lkey) fails once it is the
 * oldest, so that the WQEs before it complete first.
 */
static bool hca_wire_req_bad(struct hca_qp *qp, struct hca_wire_req *r,
			     const struct hca_wqe *w, u8 syndrome)
{
	if (r->nfl)
		return false;
	hca_sq_fail(qp, w, syndrome);
	WRITE_ONCE(r->sq_sent, qp->sq_ci);
	return true;
}

/*
 * Send what the window allows. Returns true if the QP changed state (a
 * WQE failed) or a local WQE completed: the caller steps again.
 */
static bool hca_wire_req_send(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			      u16 posted, const struct hca_path *p)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_req *r = &wq->req;
	struct hca_wqe *w = &ctx->wqe;
	struct hca_wire_flight *f;
	int err;

	if (hca_odp_stalled(qp->eng))
		return false;
	while (!hca_wire_window_full(r) && !hca_wire_rp_hold(qp, wq)) {
		f = hca_wire_flight_open(r);
		/* SQD: what was started is sent again, nothing new starts. */
		if (!f && (r->sq_sent == posted || r->nfl == HCA_WIRE_FLIGHTS ||
			   READ_ONCE(qp->state) != HCA_QPS_RTS))
			break;
		err = hca_wqe_fetch_at(ctx, qp, f ? f->idx : r->sq_sent,
				       posted);
		if (!err)
			err = hca_wqe_parse_rc(qp, w, ctx->wqe_buf);
		if (err)
			return hca_wire_req_bad(qp, r, w, err == -EMSGSIZE ?
				SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR :
				SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		/* Rewritten in the ring since it first went: refused. */
		if (f && (w->opcode != f->opcode || w->local.len != f->len)) {
			hca_wire_comp_fail(ctx, qp,
					   SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
			return true;
		}
		if (!f && hca_wire_req_ops[w->opcode].kind == HCA_WREQ_NONE) {
			if (r->nfl)
				break;
			hca_sq_local(ctx, qp, w);
			WRITE_ONCE(r->sq_sent, qp->sq_ci);
			return true;
		}
		/* ODP: the pages of what is left to send (a READ: all). */
		err = hca_sgl_get_from(qp->hca, qp->pdn, w->op->local_access,
				       &w->local, f && !hca_op_fetches(w->op) ?
				       (u64)f->sent * wq->mtu : 0,
				       w->local.len, &qp->eng->lkeys);
		if (unlikely(err == -EAGAIN))
			err = hca_odp_req_stall(qp, &w->local.miss);
		if (err == -EAGAIN)
			break;
		if (err)
			return hca_wire_req_bad(qp, r, w,
				SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		hca_odp_unstall(qp->eng);
		if (!f)
			f = hca_wire_flight_new(qp, wq, w, p);
		if (!f) {
			hca_sgl_put(&w->local);
			break;
		}
		while (f->sent < f->npkts && !hca_wire_window_full(r) &&
		       !hca_wire_rp_hold(qp, wq)) {
			hca_wire_req_packet(qp, wq, f, w);
			if (r->probe)
				break;
		}
		hca_sgl_put(&w->local);
		if (f->sent < f->npkts || r->probe)
			break;
		r->cur++;
	}
	return false;
}

u64 hca_wire_timeout_ns(const struct hca_path *p)
{
	return p->timeout ? 4096ULL << min_t(u8, p->timeout, 31) :
			    HCA_WIRE_INFINITE_RETRY_NS;
}

void hca_wire_req_timer(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	if (e->wait_kind == HCA_WAIT_RNR)
		return;
	if (e->wire->req.nfl) {
		hca_wait_set(qp, HCA_WAIT_TRANSPORT,
			     hca_wire_timeout_ns(hca_path_get(qp)));
	} else {
		hca_wait_clear(qp);
		/* Stalled on its pages: it looks again without a doorbell. */
		if (hca_odp_stalled(e))
			hca_wait_start(qp, HCA_ODP_REFAULT_NS);
		/* Nothing started is left: SQD's SQ_DRAINED, if owed. */
		hca_sq_drained_check(qp);
	}
}

/* Send again from @psn: the flight holding it is sent from there on. */
void hca_wire_req_rewind(struct hca_qp *qp, u32 psn)
{
	struct hca_wire_req *r = &qp->eng->wire->req;
	u16 i;

	for (i = 0; i < r->nfl; i++) {
		struct hca_wire_flight *f = hca_wire_fl(r, i);
		s32 k = hca_psn_diff(psn, f->psn);
		u16 j;

		if (k < 0 || k >= f->npkts)
			continue;
		/* The later flights go again after it, whole. */
		for (j = i + 1; j < r->nfl; j++)
			hca_wire_fl(r, j)->sent = 0;
		f->sent = min_t(u32, k, f->sent);
		r->cur = i;
		r->next_psn = psn;
		r->noack = 0;
		r->rewound = psn;
		r->rewind_pending = true;
		hca_count(qp->eng->req_cnt, HCA_QCNT_TX_RETRIES, 1);
		return;
	}
}

/* The wait timer fired: RNR wait over; or resend with flights left. */
static bool hca_wire_req_expired(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_path *p)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire->req;

	if (e->wait_kind == HCA_WAIT_RNR || !r->nfl) {
		/* An RNR NAK's rewind was done when it came. */
		e->wait_kind = HCA_WAIT_NONE;
		WRITE_ONCE(e->wait_until, 0);
		return false;
	}
	/* Its own pages are faulting in: waiting for them costs no retry. */
	if (hca_odp_stalled(e)) {
		hca_wait_set(qp, HCA_WAIT_TRANSPORT, hca_wire_timeout_ns(p));
		return false;
	}
	hca_count(e->req_cnt, HCA_QCNT_LOCAL_ACK_TIMEOUTS, 1);
	if (p->timeout) {
		if (!e->retry_left) {
			hca_wire_comp_fail(ctx, qp,
				SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
			return true;
		}
		e->retry_left--;
	}
	hca_wire_req_rewind(qp, hca_wire_una(r));
	r->probe = true;
	WRITE_ONCE(e->wait_until, 0);
	e->wait_kind = HCA_WAIT_NONE;
	return false;
}

/*
 * UC: every packet of the WQE at sq_ci goes out at once, PSNs from
 * next_psn on, no ACK asked for and none awaited: the WQE completes once
 * they are sent. A packet lost on the way loses its message at the
 * responder, never the QP (a flight of its own, not kept).
 */
static enum hca_step hca_wire_uc_step(struct hca_exec_ctx *ctx,
				      struct hca_qp *qp, u16 posted)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_qp *wq = e->wire;
	struct hca_wqe *w = &ctx->wqe;
	struct hca_wire_flight f = { 0 };
	int err;

	if (READ_ONCE(qp->state) != HCA_QPS_RTS &&
	    READ_ONCE(qp->state) != HCA_QPS_SQD)
		return HCA_STEP_DONE;
	if (hca_odp_stalled(e))
		return HCA_STEP_STOP;
	err = hca_wqe_fetch_at(ctx, qp, qp->sq_ci, posted);
	if (!err)
		err = hca_wqe_parse_rc(qp, w, ctx->wqe_buf);
	if (!err && hca_wire_req_ops[w->opcode].kind == HCA_WREQ_SEGMENTED) {
		err = hca_sgl_get(qp->hca, qp->pdn, w->op->local_access,
				  &w->local, w->local.len, &e->lkeys);
		if (unlikely(err == -EAGAIN))
			err = hca_odp_req_stall(qp, &w->local.miss);
		if (err == -EAGAIN)
			return HCA_STEP_STOP;
		hca_odp_unstall(e);
		if (err) {
			hca_sq_fail(qp, w, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
			goto sent;
		}
	}
	if (err) {
		hca_sq_fail(qp, w, err == -EMSGSIZE ?
			    SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR :
			    SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	} else if (hca_wire_req_ops[w->opcode].kind != HCA_WREQ_SEGMENTED) {
		hca_sq_local(ctx, qp, w);
	} else {
		f.opcode = w->opcode;
		f.psn = wq->req.next_psn;
		f.len = w->local.len;
		f.npkts = hca_wire_npkts(wq, w->opcode, f.len);
		/* A 1 GiB message is millions of packets: let others run. */
		while (f.sent < f.npkts) {
			hca_wire_req_packet(qp, wq, &f, w);
			if (!(f.sent & 15))
				cond_resched();
		}
		hca_sgl_put(&w->local);
		hca_count(e->req_cnt, HCA_QCNT_TX_REQUESTS, 1);
		hca_count(e->req_cnt, HCA_QCNT_TX_BYTES, f.len);
		hca_sq_complete(qp, w);
	}
sent:
	/*
	 * Everything up to sq_ci is sent: hca_wire_has_work() compares the
	 * producer counter with sq_sent, which would else stay at its RTS
	 * value and hide the post that brings the counter round to it.
	 */
	WRITE_ONCE(wq->req.sq_sent, qp->sq_ci);
	return HCA_STEP_DONE;
}

enum hca_step hca_wire_req_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				u16 posted, s64 now)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire->req;
	const struct hca_path *p = hca_path_get(qp);
	enum hca_qp_state state;

	if (qp->type->unreliable)
		return hca_wire_uc_step(ctx, qp, posted);

	if (!r->nfl && r->sq_sent == qp->sq_ci) {
		/* Idle: a new start gets fresh retry counters. */
		e->rnr_left = p->rnr_retry;
		e->retry_left = p->retry_cnt;
	}
	hca_wire_comp_drain(ctx, qp, posted);
	state = READ_ONCE(qp->state);
	if (state != HCA_QPS_RTS && state != HCA_QPS_SQD)
		return HCA_STEP_DONE;
	if (e->wait_kind != HCA_WAIT_NONE &&
	    ktime_get_ns() >= READ_ONCE(e->wait_until) &&
	    hca_wire_req_expired(ctx, qp, p))
		return HCA_STEP_DONE;
	if (e->wait_kind == HCA_WAIT_RNR)
		return HCA_STEP_WAIT;
	if (hca_wire_req_send(ctx, qp, posted, p))
		return HCA_STEP_DONE;
	if (!r->nfl && qp->sq_ci == posted)
		return HCA_STEP_DONE;
	if (r->nfl && e->wait_kind == HCA_WAIT_NONE)
		hca_wire_req_timer(qp);
	hca_wire_rp_timer(qp);		/* the rate may hold it */
	return r->nfl ? HCA_STEP_WAIT : HCA_STEP_STOP;
}

void hca_wire_req_flush(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire->req;

	skb_queue_purge(&e->wire_rsp);
	r->nfl = 0;
	r->cur = 0;
	r->nrd = 0;
	r->rewind_pending = false;
	r->probe = false;
	WRITE_ONCE(r->sq_sent, qp->sq_ci);
}
