// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the responder. A request arrives from a requester QP
 * on this host (the local fabric): the responder QP checks its state, the
 * remote access rights and rkeys against its own PD, takes a receive WQE
 * (from its RQ or SRQ: rq_src.c) for SEND, SEND_IMM and WRITE_IMM, places or fetches the data and writes the
 * responder CQE. It answers ACK, RNR NAK, NAK (an error for the requester)
 * or nothing (the requester times out). A UC QP answers nothing that its
 * requester would act on: a message it cannot take (no receive WQE, too
 * long, an rkey that does not grant the WRITE) is dropped and counted.
 *
 * Runs under the responder QP's resp_lock, called by the requester's
 * executor (which holds the requester's exec_lock). The data moves here,
 * for both directions (hca_sgl_copy()). resp_lock also covers the QP's
 * responder counters (resp_cnt).
 */
#include <linux/highmem.h>
#include <linux/string.h>

#include "engine.h"

/*
 * Move @len bytes from the start of @src (inline payload or MKeys) to
 * @dst (MKeys) from its byte @doff on (0 but for a datagram, whose GRH
 * area comes first): one copy, page to page. Both were sized and acquired
 * for at least @len bytes (@dst: @doff + @len).
 */
static __always_inline void hca_sgl_copy(struct hca_exec_ctx *ctx,
					  struct hca_sgl *dst, u64 doff,
					  const struct hca_sgl *src, u64 len)
{
	unsigned int si = 0, di = 0, chunks = 0;
	u64 soff = 0;

	/* Elements have a length (zero-length ones are skipped at parse). */
	while (doff && di < dst->n && doff >= dst->sge[di].len)
		doff -= dst->sge[di++].len;
	while (len) {
		const struct hca_sge *s = &src->sge[si];
		struct hca_sge *d = &dst->sge[di];
		struct page *dpage, *spage;
		size_t dpg, spg, n;
		void *dp, *sp;

		if (WARN_ON_ONCE(di >= dst->n || !d->mkey ||
				 (!src->inl && (si >= src->n || !s->mkey))))
			return;
		dpage = hca_mkey_page(d->mkey, d->va + doff, &dpg);
		n = min3(len, d->len - doff, (u64)(PAGE_SIZE - dpg));
		dp = kmap_local_page(dpage);
		if (src->inl) {
			hca_copy(dp + dpg, src->inl + soff, n);
		} else {
			spage = hca_mkey_page(s->mkey, s->va + soff, &spg);
			n = min3((u64)n, s->len - soff, (u64)(PAGE_SIZE - spg));
			sp = kmap_local_page(spage);
			hca_copy(dp + dpg, sp + spg, n);
			kunmap_local(sp);
		}
		kunmap_local(dp);
		flush_dcache_page(dpage);

		len -= n;
		soff += n;
		doff += n;
		if (!src->inl && soff == s->len) {
			si++;
			soff = 0;
		}
		if (doff == d->len) {
			di++;
			doff = 0;
		}
		if (!(++chunks & 15))
			cond_resched();
	}
}

/*
 * Read @len bytes of @src (inline payload or acquired MKeys) from its byte
 * @soff on into @dst: a packet's payload on the wire (wire_req.c,
 * wire_resp.c). The caller acquired @src for at least @soff + @len bytes.
 */
void hca_sgl_read(const struct hca_sgl *src, u64 soff, u8 *dst, u32 len)
{
	unsigned int si = 0;

	if (src->inl) {
		hca_copy(dst, src->inl + soff, len);
		return;
	}
	while (si < src->n && soff >= src->sge[si].len)
		soff -= src->sge[si++].len;
	while (len) {
		const struct hca_sge *s = &src->sge[si];
		struct page *page;
		size_t pg, n;
		void *p;

		if (WARN_ON_ONCE(si >= src->n || !s->mkey))
			return;
		page = hca_mkey_page(s->mkey, s->va + soff, &pg);
		n = min3((u64)len, s->len - soff, (u64)(PAGE_SIZE - pg));
		p = kmap_local_page(page);
		hca_copy(dst, p + pg, n);
		kunmap_local(p);
		dst += n;
		len -= n;
		soff += n;
		if (soff == s->len) {
			si++;
			soff = 0;
		}
	}
}

void hca_sgl_copy_at(struct hca_exec_ctx *ctx, struct hca_sgl *dst, u64 doff,
		     const struct hca_sgl *src, u64 len)
{
	hca_sgl_copy(ctx, dst, doff, src, len);
}

/*
 * Answer @syndrome to the requester and move the responder QP to ERR.
 * Returns whether this call moved it there.
 */
static bool hca_resp_nak(struct hca_exec_ctx *ctx, struct hca_qp *resp,
			  struct hca_answer *ans, u8 syndrome)
{
	bool moved;

	ans->kind = HCA_ANS_NAK;
	ans->syndrome = syndrome;
	moved = hca_qp_set_err(resp);
	hca_engine_defer(ctx, resp);
	return moved;
}

/*
 * An RDMA request (WRITE, READ, atomic) refused: no receive is consumed,
 * so no CQE tells the responder's owner; the affiliated async event does
 * (IBA 11.6.3.1: Local Access Violation / Invalid Request WQ Error; mlx5
 * events 0x11 / 0x10).
 */
static void hca_resp_nak_rdma(struct hca_exec_ctx *ctx,
			       struct hca_qp *resp,
			       struct hca_answer *ans, u8 syndrome)
{
	u8 type = syndrome == SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR ?
		  SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR :
		  SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR;

	/* UC: the WRITE is dropped, the QP goes on (IBA class D). */
	if (resp->type->unreliable) {
		hca_count(resp->eng->resp_cnt, HCA_QCNT_RX_ACCESS_DROPS, 1);
		return;
	}
	if (hca_resp_nak(ctx, resp, ans, syndrome))
		hca_eq_qp_event(resp->hca, type, resp->qpn,
				 SOFTHCA_EVENT_QUEUE_TYPE_QP);
}

/*
 * An XRC target takes the request into the SRQ its XRCETH names, which
 * must be of the target's domain, else a Remote Access Error NAK and the
 * target to ERR with an access error event (as rxe's XRC patches and
 * qedr's XRC domain error): held, as the QP's @srq, until the request is
 * handled.
 */
static bool hca_resp_xrc_srq(struct hca_exec_ctx *ctx, struct hca_qp *resp,
			     struct hca_answer *ans)
{
	if (unlikely(!hca_rq_xrc_enter(resp, ctx->wqe.xrc_srqn, true))) {
		hca_count(resp->eng->resp_cnt, HCA_QCNT_RX_XRC_SRQ_ERRORS, 1);
		hca_resp_nak_rdma(ctx, resp, ans,
				  SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return false;
	}
	return true;
}

/* The request is handled: an XRC target lets its SRQ go, then the lock. */
static void hca_resp_unlock(struct hca_qp *resp)
{
	if (unlikely(resp->type->xrc_tgt))
		hca_rq_xrc_leave(resp);
	mutex_unlock(&resp->eng->resp_lock);
}

/*
 * @err of taking the responder's memory was a page it does not have yet
 * (an ODP MKey): the fault is raised and the request answered RNR, to come
 * again once the driver mapped the pages (UC, which has no RNR, loses the
 * message). False for any other error, or a fault the driver could not
 * resolve: the caller answers it as an access error.
 */
static bool hca_resp_faulted(struct hca_qp *resp, const struct hca_sgl *sgl,
			     int err, struct hca_answer *ans)
{
	if (likely(err != -EAGAIN) ||
	    hca_odp_fault(resp, true, &sgl->miss) != -EAGAIN)
		return false;
	ans->kind = HCA_ANS_RNR;
	return true;
}

/* Write a CQE of the responder's receive queue and consume the RQ WQE. */
static inline void hca_resp_cqe_write(struct hca_exec_ctx *ctx,
				       struct hca_qp *resp,
				       struct softhca_cqe *cqe)
{
	if (hca_rq_cqe_write(resp, cqe)) {
		hca_qp_fatal(resp);
		hca_engine_defer(ctx, resp);
	}
	hca_rq_consume(resp);
}

void hca_resp_cqe_put(struct hca_exec_ctx *ctx, struct hca_qp *resp,
		      struct softhca_cqe *cqe)
{
	hca_resp_cqe_write(ctx, resp, cqe);
}

/* The responder CQE of the request's opcode for the RQ WQE at rq_ci. */
static inline void hca_resp_cqe(struct hca_exec_ctx *ctx,
				 struct hca_qp *req,
				 struct hca_qp *resp, u32 byte_cnt)
{
	const struct hca_wqe *w = &ctx->wqe;
	struct softhca_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.flags_rqpn = cpu_to_be32(req->qpn & SOFTHCA_24BIT_MASK);
	/* The immediate, or the rkey a SEND_WITH_INV invalidated. */
	if (softhca_opcode_has_imm(w->op))
		cqe.imm_inval_pkey = w->imm;
	cqe.byte_cnt = cpu_to_be32(byte_cnt);
	cqe.sop_drop_qpn = cpu_to_be32(resp->qpn & SOFTHCA_24BIT_MASK);
	cqe.wqe_counter = cpu_to_be16(hca_rq_wqe_counter(resp));
	cqe.op_own = w->op->resp_cqe << SOFTHCA_CQE_OPCODE_SHIFT;
	if (w->fm_ce_se & SOFTHCA_WQE_CTRL_SOLICITED)
		cqe.op_own |= SOFTHCA_CQE_SE;
	/* Written by hca_resp_done(), after the requester's CQE. */
	ctx->resp_cqe = cqe;
	ctx->resp_held = resp;
}

/*
 * The requester's completion is written: now the receive CQE held back by
 * hca_resp_cqe(), and resp_lock goes. On a wire the ACK reaches the
 * requester before anything the responder's application sends back, so
 * its send CQE comes first; written the other way round, a reply could
 * complete at the requester before its own send did (perftest's event
 * mode, which polls its send CQ once per event, then found its one-WQE SQ
 * full).
 */
void hca_resp_done(struct hca_exec_ctx *ctx)
{
	struct hca_qp *resp = ctx->resp_held;

	if (!resp)
		return;
	ctx->resp_held = NULL;
	hca_resp_cqe_write(ctx, resp, &ctx->resp_cqe);
	hca_resp_unlock(resp);
}

/* The RQ WQE at rq_ci fails with @syndrome: error CQE, consumed. */
void hca_resp_cqe_err(struct hca_exec_ctx *ctx, struct hca_qp *resp,
		      u8 syndrome)
{
	struct softhca_cqe cqe;

	hca_cqe_init_err(&cqe, resp->eng->resp_cnt, SOFTHCA_CQE_RESP_ERR,
			  resp->qpn, 0, hca_rq_wqe_counter(resp), syndrome);
	hca_resp_cqe_write(ctx, resp, &cqe);
}

/* A malformed RQ WQE: local QP operation error here, remote op error there. */
static void hca_resp_bad_rwqe(struct hca_exec_ctx *ctx,
			       struct hca_qp *resp,
			       struct hca_answer *ans)
{
	hca_resp_cqe_err(ctx, resp, SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	hca_resp_nak(ctx, resp, ans, SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR);
}

static void hca_resp_send(struct hca_exec_ctx *ctx, struct hca_qp *req,
			   struct hca_qp *resp, struct hca_answer *ans)
{
	struct hca_wqe *w = &ctx->wqe;
	u64 len = w->local.len;
	int err;

	if (hca_rq_is_empty(resp)) {
		ans->kind = HCA_ANS_RNR;
		return;
	}
	if (hca_rq_fetch(ctx, resp, &ctx->remote)) {
		hca_resp_bad_rwqe(ctx, resp, ans);
		return;
	}
	if (len > ctx->remote.len) {
		/* UC: dropped, the WQE left for the next message. */
		if (resp->type->unreliable) {
			hca_count(resp->eng->resp_cnt, HCA_QCNT_RX_LEN_DROPS, 1);
			return;
		}
		hca_resp_cqe_err(ctx, resp, SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR);
		hca_resp_nak(ctx, resp, ans,
			      SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	}
	err = hca_sgl_get(resp->hca, hca_rq_pdn(resp), HCA_ACCESS_LOCAL_WRITE,
			  &ctx->remote, len, &resp->eng->keys);
	if (hca_resp_faulted(resp, &ctx->remote, err, ans))
		return;
	if (err) {
		hca_resp_cqe_err(ctx, resp, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		hca_resp_nak(ctx, resp, ans, SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR);
		return;
	}
	/*
	 * SEND_WITH_INV: once the message can be taken, the key goes, before
	 * any byte lands and before the CQE that names it.
	 */
	if (unlikely(w->op->mkop == SOFTHCA_MKOP_RINV) &&
	    hca_mkey_invalidate(resp->hca, hca_resp_pdn(resp), resp->qpn,
				be32_to_cpu(w->imm))) {
		hca_sgl_put(&ctx->remote);
		hca_resp_cqe_err(ctx, resp, SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		hca_resp_nak(ctx, resp, ans,
			      SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	}
	hca_sgl_copy(ctx, &ctx->remote, 0, &w->local, len);
	hca_sgl_put(&ctx->remote);
	hca_resp_cqe(ctx, req, resp, len);
	ans->kind = HCA_ANS_ACK;
}

/* ctx->remote = the one region [raddr, raddr + len) of rkey, acquired. */
static int hca_resp_rkey(struct hca_exec_ctx *ctx, struct hca_qp *resp,
			  u32 access, u64 len)
{
	struct hca_sgl *sgl = &ctx->remote;

	sgl->n = 0;
	sgl->len = 0;
	sgl->inl = NULL;
	/* A zero-length RDMA access checks no rkey (IBA 9.4.4, 9.4.5). */
	if (!len)
		return 0;
	sgl->n = 1;
	sgl->len = len;
	sgl->sge[0].mkey = NULL;
	sgl->sge[0].key = ctx->wqe.rkey;
	sgl->sge[0].va = ctx->wqe.raddr;
	sgl->sge[0].len = len;
	return hca_sgl_get_remote(resp, access, sgl, len);
}

/*
 * May the responder QP (access flags @qp_access) take the request, and
 * does its rkey grant the opcode's remote access over @len bytes? On
 * success ctx->remote holds the acquired region.
 */
static __always_inline int hca_resp_remote(struct hca_exec_ctx *ctx,
					     struct hca_qp *resp,
					     u32 qp_access, u64 len)
{
	u32 access = ctx->wqe.op->remote_access;

	if (!(qp_access & access))
		return -EACCES;
	return hca_resp_rkey(ctx, resp, access, len);
}

static void hca_resp_write(struct hca_exec_ctx *ctx, struct hca_qp *req,
			    struct hca_qp *resp, u32 qp_access,
			    struct hca_answer *ans)
{
	struct hca_wqe *w = &ctx->wqe;
	bool recv = w->op->flags & SOFTHCA_OPF_RECV;
	u64 len = w->local.len;
	int err;

	err = hca_resp_remote(ctx, resp, qp_access, len);
	if (hca_resp_faulted(resp, &ctx->remote, err, ans))
		return;
	if (err) {
		hca_resp_nak_rdma(ctx, resp, ans,
				   SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	}
	if (recv) {
		/* Checked before any byte is placed: an RNR retry redoes all. */
		if (hca_rq_is_empty(resp)) {
			hca_sgl_put(&ctx->remote);
			ans->kind = HCA_ANS_RNR;
			return;
		}
		/* The WQE only supplies the completion; its list is unused. */
		if (hca_rq_fetch(ctx, resp, NULL)) {
			hca_sgl_put(&ctx->remote);
			hca_resp_bad_rwqe(ctx, resp, ans);
			return;
		}
	}
	hca_sgl_copy(ctx, &ctx->remote, 0, &w->local, len);
	hca_sgl_put(&ctx->remote);
	if (recv)
		hca_resp_cqe(ctx, req, resp, len);
	ans->kind = HCA_ANS_ACK;
}

static void hca_resp_read(struct hca_exec_ctx *ctx,
			   struct hca_qp *resp, u32 qp_access,
			   struct hca_answer *ans)
{
	struct hca_wqe *w = &ctx->wqe;
	u64 len = w->local.len;
	int err;

	err = hca_resp_remote(ctx, resp, qp_access, len);
	if (hca_resp_faulted(resp, &ctx->remote, err, ans))
		return;
	if (err) {
		hca_resp_nak_rdma(ctx, resp, ans,
				   SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	}
	hca_sgl_copy(ctx, &w->local, 0, &ctx->remote, len);
	hca_sgl_put(&ctx->remote);
	ans->kind = HCA_ANS_ACK;
}

static void hca_resp_atomic(struct hca_exec_ctx *ctx,
			     struct hca_qp *resp, u32 qp_access,
			     struct hca_answer *ans)
{
	struct hca_wqe *w = &ctx->wqe;
	struct hca_mkey *mkey;
	u64 orig;
	int err;

	if (!(qp_access & w->op->remote_access)) {
		hca_resp_nak_rdma(ctx, resp, ans,
				   SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	}
	if (w->raddr & (SOFTHCA_ATOMIC_SIZE - 1)) {
		hca_resp_nak_rdma(ctx, resp, ans,
				   SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	}
	err = hca_resp_rkey(ctx, resp, w->op->remote_access,
			    SOFTHCA_ATOMIC_SIZE);
	if (hca_resp_faulted(resp, &ctx->remote, err, ans))
		return;
	if (err) {
		hca_resp_nak_rdma(ctx, resp, ans,
				   SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	}
	mkey = ctx->remote.sge[0].mkey;
	if (w->op->flags & SOFTHCA_OPF_COMPARE)
		orig = hca_mkey_atomic_cas(mkey, w->raddr, w->compare,
					    w->swap_add);
	else
		orig = hca_mkey_atomic_fadd(mkey, w->raddr, w->swap_add);
	hca_sgl_put(&ctx->remote);
	/* The original value, in host order, into the requester's buffer. */
	hca_mkey_write(w->local.sge[0].mkey, w->local.sge[0].va, &orig,
			sizeof(orig));
	ans->kind = HCA_ANS_ACK;
}

void hca_resp_handle(struct hca_exec_ctx *ctx, struct hca_qp *req,
		      struct hca_qp *resp, struct hca_answer *ans)
{
	u64 *cnt = resp->eng->resp_cnt;
	const struct hca_resp_attrs *a;
	enum hca_qp_state state;

	ans->kind = HCA_ANS_NONE;
	/*
	 * Uncontended on the fast path: one call instead of two (the
	 * executor's loop keeps a preemption point per WQE). Lockdep sees
	 * this lock's order under exec_lock only when it is contended.
	 */
	if (!mutex_trylock(&resp->eng->resp_lock))
		mutex_lock(&resp->eng->resp_lock);

	a = hca_resp_attrs_get(resp);
	state = READ_ONCE(resp->state);
	/*
	 * A QP that cannot receive, is connected elsewhere (another QPN, or
	 * a peer on the wire) or is of another type (an RC request at a UC
	 * QP: opcodes it has no packets for) drops it.
	 */
	if (!hca_qp_state_receives(state) || a->dest_qpn != req->qpn ||
	    resp->type != req->type->peer)
		goto out;
	/* Its peer is on the wire: a local QP of that number is not it. */
	if (unlikely(READ_ONCE(resp->eng->wire)))
		goto out;
	hca_count(cnt, HCA_QCNT_RX_REQUESTS, 1);
	/*
	 * The first request a QP in RTR receives: Communication Established
	 * (IBA 11.6.3.1; mlx5 event 0x02), once until the QP is reset.
	 */
	if (unlikely(state == HCA_QPS_RTR) && !resp->eng->comm_est) {
		resp->eng->comm_est = true;
		hca_eq_qp_event(resp->hca, SOFTHCA_EVENT_TYPE_COMM_EST, resp->qpn,
				 SOFTHCA_EVENT_QUEUE_TYPE_QP);
	}

	if (unlikely(resp->type->xrc_tgt) && !hca_resp_xrc_srq(ctx, resp, ans))
		goto out;

	/* What the request does is the remote access its opcode needs. */
	switch (ctx->wqe.op->remote_access) {
	case SOFTHCA_ACCESS_NONE:
		hca_resp_send(ctx, req, resp, ans);
		break;
	case SOFTHCA_ACCESS_REMOTE_WRITE:
		hca_resp_write(ctx, req, resp, a->access_flags, ans);
		break;
	case SOFTHCA_ACCESS_REMOTE_READ:
	case SOFTHCA_ACCESS_REMOTE_ATOMIC:
		/* No responder resources: Invalid Request (as ConnectX, rxe). */
		if (!a->max_dest_rd_atomic)
			hca_resp_nak_rdma(ctx, resp, ans,
					   SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		else if (ctx->wqe.op->remote_access ==
			 SOFTHCA_ACCESS_REMOTE_READ)
			hca_resp_read(ctx, resp, a->access_flags, ans);
		else
			hca_resp_atomic(ctx, resp, a->access_flags, ans);
		break;
	}
	if (ans->kind == HCA_ANS_RNR && resp->type->unreliable) {
		/* UC: no RNR NAK, the message is lost (mlx5 out_of_buffer). */
		ans->kind = HCA_ANS_NONE;
		hca_count(cnt, HCA_QCNT_OUT_OF_BUFFER, 1);
	} else if (ans->kind == HCA_ANS_RNR) {
		ans->rnr_timer = a->min_rnr_timer;
		hca_count(cnt, HCA_QCNT_RNR_NAKS_SENT, 1);
	} else if (ans->kind == HCA_ANS_ACK) {
		/* The data placed here, or sent back in the response. */
		hca_count(cnt, hca_op_fetches(ctx->wqe.op) ?
			  HCA_QCNT_TX_BYTES : HCA_QCNT_RX_BYTES,
			  ctx->wqe.local.len);
	}
out:
	/* A success CQE held back keeps the lock until hca_resp_done(). */
	if (!ctx->resp_held)
		hca_resp_unlock(resp);
}
