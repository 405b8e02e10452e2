// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the requester. One step executes the send WQE at the
 * QP's sq_ci: copy it out of the SQ ring once (following the ring wrap),
 * validate only the copy, take the local MKeys, hand the request to the
 * responder QP on the local fabric and complete it (CQE), wait for a retry
 * (RNR NAK, no answer) or fail it (error CQE, QP to ERR); a UC request
 * completes once sent, answered or not. The data
 * moves in the responder (responder.c), for both directions. A datagram
 * QP's WQE goes, after the copy, to the datagram transport (ud.c), which
 * uses the parsing and completion steps here.
 *
 * Called with the QP's exec_lock held (engine.c), in process context, which
 * also covers the QP's requester counters (req_cnt, Documentation/engine.md
 * "Counters").
 */
#include <linux/kernel.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "engine.h"
#include "wire_rc.h"

/* Retry period of a requester whose local ACK timeout is 0 (infinite). */
#define HCA_INFINITE_RETRY_NS	(100 * NSEC_PER_MSEC)

/* IB RNR NAK timer encoding (min_rnr_timer) in units of 10 us. */
static const u32 hca_rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
	12288, 16384, 24576, 32768, 49152,
};

/* The wait an RNR NAK's timer code asks for. */
u64 hca_rnr_timer_ns(u8 code)
{
	return (u64)hca_rnr_timer_10us[code & 31] * 10 * NSEC_PER_USEC;
}

/* Copy @len bytes of the SQ ring from byte offset @off, following the wrap. */
static __always_inline void hca_sq_copy(struct hca_qp *qp, void *dst,
					 u32 off, u32 len)
{
	u32 size = qp->sq_wqebb_cnt << SOFTHCA_SEND_WQE_SHIFT;
	u32 n;

	off &= size - 1;
	n = min(len, size - off);
	hca_copy(dst, qp->sq_buf + off, n);
	if (len > n)
		hca_copy(dst + n, qp->sq_buf, len - n);
}

/*
 * WQEBBs a WQE may occupy when @avail are posted, as far as stepping over
 * it goes (the device's largest WQE). A WQE larger than the QP's own
 * (sq_max_wqebbs, granted at CREATE_QP) is stepped over the same way, and
 * failed.
 */
static u32 hca_max_wqebbs(struct hca_qp *qp, u16 avail)
{
	u32 max = min_t(u32, qp->hca->caps->max_wqe_size, HCA_ENG_WQE_MAX) /
		  SOFTHCA_SEND_WQE_BB;

	return min3(max, (u32)avail, qp->sq_wqebb_cnt);
}

/*
 * Everything after the control (and remote address) segment, against the
 * QP's granted caps: more data segments than its max_send_sge (or the
 * device's max_sge_rd for a READ) is a malformed WQE (-EINVAL: local QP
 * operation error); inline data longer than its max_inline_data is a length
 * error (-EMSGSIZE).
 */
static __always_inline int hca_wqe_parse_data(struct hca_qp *qp,
					       struct hca_wqe *w,
					       const u8 *buf, u32 seg,
					       bool inl_ok, u32 max_sge)
{
	const struct hca_caps *caps = qp->hca->caps;
	const struct softhca_wqe_data_seg *d;
	u32 first, len, i;

	if (seg == w->ds)
		return 0;			/* zero-length message */

	first = be32_to_cpu(*(const __be32 *)(buf + seg * SOFTHCA_DS_SIZE));
	if (first & SOFTHCA_INLINE_SEG) {
		len = first & ~SOFTHCA_INLINE_SEG;
		if (!inl_ok || sizeof(struct softhca_wqe_inline_seg) + len >
		    (w->ds - seg) * SOFTHCA_DS_SIZE)
			return -EINVAL;
		if (len > qp->max_inline_data)
			return -EMSGSIZE;
		w->local.inl = buf + seg * SOFTHCA_DS_SIZE +
			       sizeof(struct softhca_wqe_inline_seg);
		w->local.len = len;
		return 0;
	}

	if (w->ds - seg > min_t(u32, max_sge, HCA_ENG_SGE_MAX))
		return -EINVAL;
	for (i = seg; i < w->ds; i++) {
		struct hca_sge *sge;

		d = (const void *)(buf + i * SOFTHCA_DS_SIZE);
		len = be32_to_cpu(d->byte_count);
		if (len & SOFTHCA_INLINE_SEG)
			return -EINVAL;
		if (!len)
			continue;
		sge = &w->local.sge[w->local.n++];
		sge->mkey = NULL;
		sge->key = be32_to_cpu(d->lkey);
		sge->va = be64_to_cpu(d->addr);
		sge->len = len;
		w->local.len += len;
	}
	/* Longer than the port takes: a length error (IBA, ConnectX). */
	if (w->local.len > caps->max_msg_sz)
		return -EMSGSIZE;
	return 0;
}

/* Atomics: raddr, atomic, exactly one 8-byte data pointer from DS @seg. */
static __always_inline int hca_wqe_parse_atomic(struct hca_wqe *w,
						 const u8 *buf, u32 seg)
{
	const struct softhca_wqe_atomic_seg *a;
	const struct softhca_wqe_data_seg *d;

	if (w->ds != seg + 2)
		return -EINVAL;
	a = (const void *)(buf + seg * SOFTHCA_DS_SIZE);
	d = (const void *)(buf + (seg + 1) * SOFTHCA_DS_SIZE);
	w->swap_add = be64_to_cpu(a->swap_add);
	w->compare = be64_to_cpu(a->compare);
	if (be32_to_cpu(d->byte_count) != SOFTHCA_ATOMIC_SIZE)
		return -EINVAL;
	w->local.n = 1;
	w->local.len = SOFTHCA_ATOMIC_SIZE;
	w->local.sge[0].mkey = NULL;
	w->local.sge[0].key = be32_to_cpu(d->lkey);
	w->local.sge[0].va = be64_to_cpu(d->addr);
	w->local.sge[0].len = SOFTHCA_ATOMIC_SIZE;
	return 0;
}

/*
 * The segments of an RC (or XRC: the XRC segment first) WQE copy its
 * opcode carries, as the opcode table says
 * (Documentation/queue-formats.md); an unknown opcode is invalid.
 */
static int hca_wqe_parse(struct hca_qp *qp, struct hca_wqe *w,
			  const u8 *buf)
{
	const struct softhca_opcode_info *op;
	const struct softhca_wqe_raddr_seg *r;
	u32 seg = 1, max_sge;

	op = softhca_opcode_on(w->opcode, qp->type->tp);
	w->op = op;
	w->xrc_srqn = 0;
	if (!op)
		return -EINVAL;
	if (qp->type->tp == SOFTHCA_TP_XRC) {
		const struct softhca_wqe_xrc_seg *x;

		if (w->ds < 2)
			return -EINVAL;
		x = (const void *)(buf + SOFTHCA_DS_SIZE);
		w->xrc_srqn = be32_to_cpu(x->xrc_srqn) & SOFTHCA_24BIT_MASK;
		seg = 2;
	}
	if (op->segs & SOFTHCA_SEG_RADDR) {
		if (w->ds < seg + 1)
			return -EINVAL;
		r = (const void *)(buf + seg * SOFTHCA_DS_SIZE);
		w->raddr = be64_to_cpu(r->raddr);
		w->rkey = be32_to_cpu(r->rkey);
		seg++;
	}
	if (op->segs & SOFTHCA_SEG_ATOMIC)
		return hca_wqe_parse_atomic(w, buf, seg);
	if (!(op->segs & SOFTHCA_SEG_DATA))
		return 0;
	/* A list the response scatters into (READ's): max_sge_rd too. */
	max_sge = qp->max_send_sge;
	if (op->local_access & SOFTHCA_ACCESS_LOCAL_WRITE)
		max_sge = min(max_sge, qp->hca->caps->max_sge_rd);
	return hca_wqe_parse_data(qp, w, buf, seg,
				   op->segs & SOFTHCA_SEG_INLINE, max_sge);
}

/* The payload segments from DS @seg on: a datagram's, after its AV. */
int hca_wqe_parse_payload(struct hca_qp *qp, struct hca_wqe *w,
			  const u8 *buf, u32 seg)
{
	return hca_wqe_parse_data(qp, w, buf, seg,
				   w->op->segs & SOFTHCA_SEG_INLINE,
				   qp->max_send_sge);
}

/*
 * Copy the WQE at sq_ci out of the ring into ctx->wqe_buf, once, and
 * check its control segment (DS count, size, index, QPN, signature) into
 * ctx->wqe. Returns 0 or -EINVAL for an invalid WQE; either way wqe->idx,
 * opcode and wqebbs say what to complete and how far to step. The
 * segments after ctrl are the transport's to parse.
 */
static __always_inline int hca_wqe_fetch_idx(struct hca_exec_ctx *ctx,
					      struct hca_qp *qp, u16 at,
					      u16 posted)
{
	struct softhca_wqe_ctrl_seg *ctrl = (void *)ctx->wqe_buf;
	u16 avail = posted - at;
	struct hca_wqe *w = &ctx->wqe;
	u32 off = (u32)at << SOFTHCA_SEND_WQE_SHIFT;
	u32 max_wqebbs = hca_max_wqebbs(qp, avail);
	u32 v, qpn_ds, wqebbs;

	/* The control segment never wraps: it starts a WQEBB. */
	hca_sq_copy(qp, ctx->wqe_buf, off, SOFTHCA_SEND_WQE_BB);
	v = be32_to_cpu(ctrl->opmod_idx_opcode);
	qpn_ds = be32_to_cpu(ctrl->qpn_ds);

	w->idx = at;
	w->opcode = v & SOFTHCA_WQE_CTRL_OPCODE_MASK;
	w->op = NULL;
	w->fm_ce_se = ctrl->fm_ce_se;
	w->imm = ctrl->imm;
	w->ds = qpn_ds & SOFTHCA_WQE_CTRL_DS_MASK;
	w->local.n = 0;
	w->local.len = 0;
	w->local.inl = NULL;
	wqebbs = softhca_ds_to_wqebbs(w->ds);
	w->wqebbs = clamp_t(u32, wqebbs, 1, max_wqebbs ?: 1);

	if (!w->ds || wqebbs > max_wqebbs || wqebbs > qp->sq_max_wqebbs)
		return -EINVAL;
	if (wqebbs > 1)
		hca_sq_copy(qp, ctx->wqe_buf + SOFTHCA_SEND_WQE_BB,
			     off + SOFTHCA_SEND_WQE_BB,
			     (wqebbs - 1) * SOFTHCA_SEND_WQE_BB);

	if (((v & SOFTHCA_WQE_CTRL_IDX_MASK) >> SOFTHCA_WQE_CTRL_IDX_SHIFT) !=
	    at ||
	    qpn_ds >> SOFTHCA_WQE_CTRL_QPN_SHIFT != qp->qpn)
		return -EINVAL;
	if ((qp->flags & HCA_QP_SIGNATURE) &&
	    softhca_xor(ctx->wqe_buf, w->ds * SOFTHCA_DS_SIZE) != 0xff)
		return -EINVAL;
	return 0;
}

static int hca_wqe_fetch(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			  u16 posted)
{
	return hca_wqe_fetch_idx(ctx, qp, qp->sq_ci, posted);
}

/* The wire's requester fetches WQEs ahead of sq_ci (and again to resend). */
int hca_wqe_fetch_at(struct hca_exec_ctx *ctx, struct hca_qp *qp, u16 at,
		     u16 posted)
{
	return hca_wqe_fetch_idx(ctx, qp, at, posted);
}

int hca_wqe_parse_rc(struct hca_qp *qp, struct hca_wqe *w, const u8 *buf)
{
	return hca_wqe_parse(qp, w, buf);
}

/* ---- one step of the send queue ---------------------------------------- */

/*
 * The WQE at sq_ci waits for a timer: it has started (went out once), so
 * an SQD drain completes it first (qp->sq_draining, read by QUERY_QP).
 */
void hca_wait_set(struct hca_qp *qp, enum hca_wait_kind kind, u64 delay_ns)
{
	struct hca_engine_qp *e = qp->eng;

	e->wait_kind = kind;
	if (kind == HCA_WAIT_PAGE_FAULT)
		clear_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags);
	/* Never 0: 0 means "not waiting" to the lockless readers. */
	WRITE_ONCE(e->wait_until, (ktime_get_ns() + delay_ns) | 1);
	WRITE_ONCE(qp->sq_draining, true);
	/* Its expiry puts the QP on its thread's run list (exec.c). */
	hca_wait_start(qp, delay_ns);
}

void hca_wait_clear(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	if (e->wait_kind != HCA_WAIT_NONE) {
		/* One still running adds a run of the QP: harmless. */
		hrtimer_try_to_cancel(&e->wait_timer);
		e->wait_kind = HCA_WAIT_NONE;
		WRITE_ONCE(e->wait_until, 0);
	}
	WRITE_ONCE(qp->sq_draining, false);
}

int hca_sq_local_get(struct hca_qp *qp, struct hca_wqe *w)
{
	int err = hca_sgl_get(qp->hca, qp->pdn, w->op->local_access,
			      &w->local, w->local.len, &qp->eng->lkeys);

	if (unlikely(err == -EAGAIN))
		err = hca_odp_req_wait(qp, &w->local.miss);
	return err;
}

bool hca_wqe_signaled(struct hca_qp *qp, const struct hca_wqe *w)
{
	return (w->fm_ce_se & SOFTHCA_WQE_CTRL_CQ_UPDATE) ||
	       (qp->flags & HCA_QP_SQ_SIG_ALL);
}

/*
 * In SQD with SQ_DRAINED requested, and nothing started left: raise it,
 * once. Called by whoever may have made the last change, the modify to
 * SQD (with exec_lock, so no WQE is half done) or the engine completing
 * the WQE that was in flight; qp->lock decides who.
 */
void hca_sq_drained_check(struct hca_qp *qp)
{
	unsigned long flags;
	bool raise = false;

	/*
	 * Lockless first: the completion path runs this for every WQE. A
	 * stale false is harmless, the modify's own check follows.
	 */
	if (!READ_ONCE(qp->sqd_event))
		return;
	spin_lock_irqsave(&qp->lock, flags);
	if (qp->sqd_event && qp->state == HCA_QPS_SQD &&
	    !READ_ONCE(qp->sq_draining)) {
		WRITE_ONCE(qp->sqd_event, false);
		raise = true;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (raise)
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_SQ_DRAINED,
				 qp->qpn, SOFTHCA_EVENT_QUEUE_TYPE_SQ);
}

/* The WQE at sq_ci completed: its CQE (if signaled), and step over it. */
void hca_sq_complete_one(struct hca_qp *qp, const struct hca_wqe *w)
{
	struct softhca_cqe cqe;

	if (hca_wqe_signaled(qp, w)) {
		hca_cqe_init_req(&cqe, qp, w, w->local.len);
		if (hca_cqe_write(qp->send_cq, &cqe))
			hca_qp_fatal(qp);
	}
	WRITE_ONCE(qp->sq_ci, qp->sq_ci + w->wqebbs);
}

/* Complete the current WQE successfully and step over it. */
void hca_sq_complete(struct hca_qp *qp, const struct hca_wqe *w)
{
	hca_wait_clear(qp);
	hca_sq_complete_one(qp, w);
	/* After its CQE: the event says the SQ is idle. */
	hca_sq_drained_check(qp);
}

/*
 * Fail the current WQE with @syndrome, step over it, QP to ERR (or SQE: a
 * datagram QP's receive queue goes on).
 */
void hca_sq_fail(struct hca_qp *qp, const struct hca_wqe *w, u8 syndrome)
{
	struct softhca_cqe cqe;

	pr_debug("softhca: QP %u: %s WQE %u failed, syndrome 0x%x\n", qp->qpn,
		 softhca_opcode_name(w->opcode), w->idx, syndrome);
	hca_wait_clear(qp);
	hca_cqe_init_err(&cqe, qp->eng->req_cnt, SOFTHCA_CQE_REQ_ERR, qp->qpn,
			  w->opcode, w->idx, syndrome);
	/* A CQ that cannot take the CQE makes the error a fatal one. */
	if (hca_cqe_write(qp->send_cq, &cqe))
		hca_qp_fatal(qp);
	WRITE_ONCE(qp->sq_ci, qp->sq_ci + w->wqebbs);
	hca_qp_set_sq_err(qp);
}

/*
 * REG_MR: the UMR segment and the page list pointer after ctrl, from a
 * kernel QP only (a user QP's ring is the user's: it must not point the
 * model at kernel memory). The list is read by mkey_fast.c.
 */
static int hca_sq_fast_reg(struct hca_qp *qp, const struct hca_wqe *w,
			   const u8 *buf)
{
	const struct softhca_wqe_umr_seg *u = (const void *)(buf +
							     SOFTHCA_DS_SIZE);
	const struct softhca_wqe_data_seg *d = (const void *)(u + 1);
	struct hca_fast_reg r;

	if (!(qp->flags & HCA_QP_PRIVILEGED) || w->ds != SOFTHCA_UMR_DS)
		return -EINVAL;
	r.key = be32_to_cpu(u->mkey);
	r.access = be32_to_cpu(u->access);
	r.iova = be64_to_cpu(u->iova);
	r.length = be64_to_cpu(u->length);
	r.page_shift = be32_to_cpu(u->page_shift);
	r.npages = be32_to_cpu(u->npages);
	if (be32_to_cpu(d->lkey) != HCA_RESERVED_LKEY ||
	    be32_to_cpu(d->byte_count) != (u64)r.npages * sizeof(__be64))
		return -EINVAL;
	r.list = (const __be64 *)(uintptr_t)be64_to_cpu(d->addr);
	return hca_mkey_fast_reg(qp->hca, qp->pdn, &r);
}

/* A BIND_MW WQE: ctrl and the bind segment (mkey_mw.c checks the rest). */
static int hca_sq_bind(struct hca_qp *qp, const struct hca_wqe *w,
		       const u8 *buf)
{
	const struct softhca_wqe_bind_seg *s = (const void *)(buf +
							      SOFTHCA_DS_SIZE);
	struct hca_mw_bind b;
	u32 flags;

	if (w->ds != SOFTHCA_BIND_DS)
		return -EINVAL;
	flags = be32_to_cpu(s->flags);
	if (flags & ~SOFTHCA_BIND_ZERO_BASED)
		return -EINVAL;
	b.mw_key = be32_to_cpu(s->mw_key);
	b.mr_lkey = be32_to_cpu(s->mr_lkey);
	b.addr = be64_to_cpu(s->addr);
	b.length = be64_to_cpu(s->length);
	b.access = be32_to_cpu(s->access);
	b.zero_based = flags & SOFTHCA_BIND_ZERO_BASED;
	return hca_mw_bind(qp->hca, qp->pdn, qp->qpn, &b);
}

void hca_sq_local(struct hca_exec_ctx *ctx, struct hca_qp *qp,
		  const struct hca_wqe *w)
{
	u8 syndrome = SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR;
	int err = 0;

	/* A wire without packets for an opcode fails it, never drops it. */
	if (unlikely(!softhca_opcode_is_local(w->op)))
		err = -EOPNOTSUPP;
	else if (w->op->mkop == SOFTHCA_MKOP_REG)
		err = hca_sq_fast_reg(qp, w, ctx->wqe_buf);
	else if (w->op->mkop == SOFTHCA_MKOP_LINV)
		err = hca_mkey_invalidate(qp->hca, qp->pdn, qp->qpn,
					  be32_to_cpu(w->imm));
	else if (w->op->mkop == SOFTHCA_MKOP_BIND) {
		err = hca_sq_bind(qp, w, ctx->wqe_buf);
		syndrome = SOFTHCA_CQE_SYNDROME_MW_BIND_ERR;
	}

	if (err)
		hca_sq_fail(qp, w, syndrome);
	else
		hca_sq_complete(qp, w);
}

enum hca_step hca_sq_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			    u16 posted, s64 now)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wqe *w = &ctx->wqe;
	struct hca_qp *resp;
	const struct hca_path *p;
	struct hca_answer ans;
	bool fetches;
	int err;

	/* A peer off this host: the wire's requester (wire_req.c). */
	if (unlikely(e->wire))
		return hca_wire_req_step(ctx, qp, posted, now);
	if (e->wait_kind != HCA_WAIT_NONE && !hca_wait_over(e, now))
		return HCA_STEP_WAIT;

	err = hca_wqe_fetch(ctx, qp, posted);
	/* The one test of the transport on the RC (and UC) path. */
	if (unlikely(qp->type->tp == SOFTHCA_TP_UD))
		return hca_ud_step(ctx, qp, err);
	if (!err)
		err = hca_wqe_parse(qp, w, ctx->wqe_buf);
	if (err) {
		hca_sq_fail(qp, w, err == -EMSGSIZE ?
			     SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR :
			     SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		return HCA_STEP_DONE;
	}

	p = hca_path_get(qp);
	if (e->wait_kind == HCA_WAIT_NONE) {
		/* A new WQE: fresh retry counters. */
		e->rnr_left = p->rnr_retry;
		e->retry_left = p->retry_cnt;
	} else if (e->wait_kind == HCA_WAIT_TRANSPORT) {
		/* The ACK timer expired once more (timeout 0: for ever). */
		hca_count(e->req_cnt, HCA_QCNT_LOCAL_ACK_TIMEOUTS, 1);
		if (p->timeout) {
			if (!e->retry_left) {
				hca_sq_fail(qp, w,
					     SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
				return HCA_STEP_DONE;
			}
			e->retry_left--;
		}
	}

	if (softhca_opcode_is_local(w->op)) {
		hca_sq_local(ctx, qp, w);
		return HCA_STEP_DONE;
	}

	/* Local checks first: nothing leaves the HCA with a bad lkey. */
	fetches = hca_op_fetches(w->op);
	err = hca_sq_local_get(qp, w);
	if (err == -EAGAIN)
		return HCA_STEP_WAIT;
	if (err) {
		hca_sq_fail(qp, w, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		return HCA_STEP_DONE;
	}

	/* The request goes out: its first try, or a retry. */
	hca_count(e->req_cnt, HCA_QCNT_TX_REQUESTS, 1);
	hca_count(e->req_cnt, HCA_QCNT_TX_BYTES, fetches ? 0 : w->local.len);
	if (e->wait_kind != HCA_WAIT_NONE &&
	    e->wait_kind != HCA_WAIT_PAGE_FAULT)
		hca_count(e->req_cnt, HCA_QCNT_TX_RETRIES, 1);
	ans.kind = HCA_ANS_NONE;
	resp = hca_fabric_route(&e->route, p->dgid, p->dest_qpn);
	if (resp)
		hca_resp_handle(ctx, qp, resp, &ans);
	hca_sgl_put(&w->local);
	/* UC: sent is done; whatever became of the message, nobody says. */
	if (unlikely(qp->type->unreliable))
		ans.kind = HCA_ANS_ACK;

	if (ans.kind == HCA_ANS_ACK) {
		/* The response of a READ or an atomic brought the data. */
		hca_count(e->req_cnt, HCA_QCNT_RX_BYTES, fetches ? w->local.len : 0);
		hca_sq_complete(qp, w);
	}
	/* The responder's CQE after ours (hca_resp_done()), then its ref. */
	if (resp) {
		hca_resp_done(ctx);
		hca_qp_put(resp);
	}

	switch (ans.kind) {
	case HCA_ANS_ACK:
		return HCA_STEP_DONE;
	case HCA_ANS_NAK:
		hca_sq_fail(qp, w, ans.syndrome);
		return HCA_STEP_DONE;
	case HCA_ANS_RNR:
		hca_count(e->req_cnt, HCA_QCNT_RNR_NAKS_RCVD, 1);
		if (p->rnr_retry != 7) {
			if (!e->rnr_left) {
				hca_sq_fail(qp, w,
					     SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
				return HCA_STEP_DONE;
			}
			e->rnr_left--;
		}
		hca_wait_set(qp, HCA_WAIT_RNR, hca_rnr_timer_ns(ans.rnr_timer));
		return HCA_STEP_WAIT;
	case HCA_ANS_NONE:
	default:
		hca_wait_set(qp, HCA_WAIT_TRANSPORT, p->timeout ?
			      4096ULL << min_t(u8, p->timeout, 31) :
			      HCA_INFINITE_RETRY_NS);
		return HCA_STEP_WAIT;
	}
}

/*
 * The QP is in ERR: complete every posted WQE from sq_ci with WR_FLUSH_ERR,
 * one CQE each, at most @budget of them. Under exec_lock.
 */
void hca_sq_flush(struct hca_qp *qp, u16 posted, unsigned int budget)
{
	struct softhca_wqe_ctrl_seg ctrl;
	struct softhca_cqe cqe;

	hca_wait_clear(qp);
	if (qp->eng->wire)
		hca_wire_req_flush(qp);
	while (qp->sq_ci != posted && budget--) {
		u16 avail = posted - qp->sq_ci;
		u32 wqebbs;

		hca_sq_copy(qp, &ctrl, (u32)qp->sq_ci << SOFTHCA_SEND_WQE_SHIFT,
			     sizeof(ctrl));
		wqebbs = softhca_ds_to_wqebbs(be32_to_cpu(ctrl.qpn_ds) &
					      SOFTHCA_WQE_CTRL_DS_MASK);
		wqebbs = clamp_t(u32, wqebbs, 1, hca_max_wqebbs(qp, avail) ?: 1);
		hca_cqe_init_err(&cqe, qp->eng->req_cnt, SOFTHCA_CQE_REQ_ERR,
				  qp->qpn, be32_to_cpu(ctrl.opmod_idx_opcode) &
				  SOFTHCA_WQE_CTRL_OPCODE_MASK,
				  qp->sq_ci, SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR);
		hca_cqe_write(qp->send_cq, &cqe);
		WRITE_ONCE(qp->sq_ci, qp->sq_ci + wqebbs);
	}
}
