// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: RC packets from the wire, and the responder. The
 * receive path (wire_net.c) hands every RC packet here, in the engine's
 * process context: responses (ACK, READ responses, atomic ACKs) are queued
 * for the QP's completer (wire_comp.c), which takes them at once unless
 * an executor has the QP; requests are executed here under the QP's
 * resp_lock.
 *
 * The responder takes requests in PSN order only: a PSN ahead of the one
 * expected is answered with one PSN sequence error NAK (go back N), one
 * behind is a duplicate: a SEND or WRITE is acknowledged again, a READ is
 * executed again from its RETH, an atomic's saved result is sent again
 * (HCA_WIRE_ATOMIC_REPLAY of them). A request in order places its data or
 * answers with the READ responses or the atomic ACK; a SEND or WRITE is
 * acknowledged when its packet asks (ACK request bit), so ACKs coalesce as
 * the requester asks. Refusals are a ConnectX's: no receive WQE is an RNR
 * NAK with the QP's min_rnr_timer; a bad rkey or access is a remote access
 * NAK, a malformed request an invalid request NAK, both moving the QP to
 * ERR with the affiliated event (as the local responder, responder.c).
 *
 * UC packets (a UC QP on the wire) take the same path without the
 * answers: no ACK, no NAK, no duplicates; a message that cannot be taken
 * or has a packet missing is dropped and counted (hca_wire_uc_in_order(),
 * hca_wire_uc_refuse()).
 *
 * Everything in a packet is the network's, checked before it is used:
 * the source address must be the QP's peer, lengths must fit the message
 * and the path MTU, rkeys are checked over the whole range.
 */
#include <linux/string.h>

#include "wire_rc.h"

/* ---- answers ------------------------------------------------------------ */

static void hca_wire_hdr_to_peer(struct hca_wire_hdr *h,
				 const struct hca_qp *qp, u8 op, u32 psn)
{
	const struct hca_wire_qp *wq = qp->eng->wire;

	memset(h, 0, sizeof(*h));
	h->opcode = hca_wire_tp(qp) | op;
	h->pkey = HCA_WIRE_PKEY;
	h->dqpn = wq->dest_qpn;
	h->psn = psn;
}

/* The Q counters of each NAK code: sent (responder), received (requester). */
static const struct {
	u8 sent, rcvd;
} hca_wire_nak_counter[] = {
	[HCA_NAK_PSN_SEQ_ERR] = { HCA_QCNT_SEQ_NAKS_SENT,
				  HCA_QCNT_SEQ_NAKS_RCVD },
	[HCA_NAK_INVALID_REQUEST] = { HCA_QCNT_INV_REQ_NAKS_SENT,
				      HCA_QCNT_INV_REQ_NAKS_RCVD },
	[HCA_NAK_REMOTE_ACCESS] = { HCA_QCNT_REM_ACCESS_NAKS_SENT,
				    HCA_QCNT_REM_ACCESS_NAKS_RCVD },
	[HCA_NAK_REMOTE_OP_ERR] = { HCA_QCNT_REM_OP_NAKS_SENT,
				    HCA_QCNT_REM_OP_NAKS_RCVD },
	[HCA_NAK_INVALID_RD_REQUEST] = { HCA_QCNT_INV_REQ_NAKS_SENT,
					 HCA_QCNT_INV_REQ_NAKS_RCVD },
};

void hca_wire_count_nak(u64 *cnt, u8 syndrome, bool sent)
{
	u8 value = syndrome & HCA_AETH_VALUE_MASK;

	/* A reserved code (a hole: sent 0) is not counted. */
	if ((syndrome & HCA_AETH_KIND_MASK) != HCA_AETH_NAK ||
	    value >= ARRAY_SIZE(hca_wire_nak_counter) ||
	    !hca_wire_nak_counter[value].sent)
		return;
	hca_count(cnt, sent ? hca_wire_nak_counter[value].sent :
			      hca_wire_nak_counter[value].rcvd, 1);
}

/* An ACK or NAK for @psn with @msn, to the peer. */
static void hca_wire_ack_out(struct hca_qp *qp, u8 syndrome, u32 psn, u32 msn)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_hdr h;
	struct sk_buff *skb;
	u8 *payload;

	hca_wire_count_nak(qp->eng->resp_cnt, syndrome, true);
	hca_wire_hdr_to_peer(&h, qp, HCA_WOP_ACK, psn);
	h.aeth.syndrome = syndrome;
	h.aeth.msn = msn;
	skb = hca_wire_alloc(qp->hca, &wq->addr, &h, 0, &payload);
	if (skb)
		hca_wire_send(qp->hca, skb);
}

void hca_wire_send_ack(struct hca_qp *qp, u8 syndrome, u32 psn)
{
	if (qp->type->unreliable)
		return;		/* UC answers nothing */
	hca_wire_ack_flush(qp);
	hca_wire_ack_out(qp, syndrome, psn, qp->eng->wire->resp.msn);
}

/*
 * ACK coalescing. While the receive path takes a batch of packets
 * (hca_wire_run_rx()), an ACK that a SEND or WRITE packet asks for is owed,
 * not sent: the batch's end sends one ACK for the newest PSN, which
 * acknowledges every request before it (IBTA 9.7.5.1.1; a ConnectX
 * coalesces too). A burst of small WRITEs then costs one ACK packet, not
 * one per message. At most HCA_WIRE_ACK_COALESCE requests share an ACK,
 * and every other packet of the QP (a NAK, a READ response, an atomic ACK,
 * a request of its requester) sends the owed ACK first: nothing overtakes
 * it. The responder owes under resp_lock, before the message's receive
 * CQE is written, so a reply its application posts on seeing that CQE
 * finds the ACK owed and sends it first (engine.md "CQE order").
 *
 * Whoever sends the owed ACK holds ack_lock until it has left and only
 * then clears it: a sender that finds an ACK owed waits for it, also when
 * another context is sending it at that moment.
 */
#define HCA_ACK_OWED		BIT_ULL(63)
#define HCA_ACK_COUNT_SHIFT	48
#define HCA_ACK_MSN_SHIFT	24

void hca_wire_ack_flush(struct hca_qp *qp)
{
	struct hca_wire_qp *wq = READ_ONCE(qp->eng->wire);
	enum hca_qp_state state;
	u64 owed;

	if (!wq || !atomic64_read(&wq->resp.ack_owed))
		return;
	spin_lock(&wq->ack_lock);
	owed = atomic64_read(&wq->resp.ack_owed);
	/* A newer one owed while this one left: it acknowledges both. */
	while (owed) {
		state = READ_ONCE(qp->state);
		/* A QP in ERR (or reset since) answers nothing. */
		if ((owed & HCA_ACK_OWED) && state >= HCA_QPS_RTR &&
		    state != HCA_QPS_ERR)
			hca_wire_ack_out(qp, HCA_AETH_ACK | HCA_AETH_NO_CREDITS,
					 owed & HCA_PSN_MASK,
					 (owed >> HCA_ACK_MSN_SHIFT) & HCA_PSN_MASK);
		if (atomic64_try_cmpxchg(&wq->resp.ack_owed, &owed, 0))
			break;
	}
	spin_unlock(&wq->ack_lock);
}

/* Is @qp's owed ACK sent at the end of @ctx's batch? Then @ctx holds it. */
static bool hca_wire_ack_track(struct hca_exec_ctx *ctx, struct hca_qp *qp)
{
	unsigned int i;

	if (!ctx->acks_open)
		return false;
	for (i = 0; i < ctx->nr_acks; i++)
		if (ctx->acks[i] == qp)
			return true;
	if (ctx->nr_acks == HCA_CTX_ACKS)
		return false;
	refcount_inc(&qp->users);
	ctx->acks[ctx->nr_acks++] = qp;
	return true;
}

/* Under resp_lock: the request at @psn asked for an ACK. */
static void hca_wire_ack_owe(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			     u32 psn)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	u64 old, new, n;

	if (!hca_wire_ack_track(ctx, qp)) {
		hca_wire_send_ack(qp, HCA_AETH_ACK | HCA_AETH_NO_CREDITS, psn);
		return;
	}
	old = atomic64_read(&rs->ack_owed);
	do {
		n = old & HCA_ACK_OWED ? (old >> HCA_ACK_COUNT_SHIFT & 0xff) + 1 : 1;
		new = HCA_ACK_OWED | n << HCA_ACK_COUNT_SHIFT |
		      (u64)(rs->msn & HCA_PSN_MASK) << HCA_ACK_MSN_SHIFT | psn;
	} while (!atomic64_try_cmpxchg(&rs->ack_owed, &old, new));
	/* This ACK answers the owed ones too. */
	if (n >= HCA_WIRE_ACK_COALESCE)
		hca_wire_ack_flush(qp);
}

/* The end of a receive batch: the owed ACKs go out. */
void hca_wire_acks_flush(struct hca_exec_ctx *ctx)
{
	struct hca_qp *qp;

	while (ctx->nr_acks) {
		qp = ctx->acks[--ctx->nr_acks];
		hca_wire_ack_flush(qp);
		hca_qp_put(qp);
	}
	ctx->acks_open = false;
}

static void hca_wire_resp_ack(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			      const struct hca_wire_pkt *pkt)
{
	if ((pkt->h.flags & HCA_BTH_ACKREQ) && !qp->type->unreliable)
		hca_wire_ack_owe(ctx, qp, pkt->h.psn);
}

/*
 * UC: the message @pkt belongs to is lost (@cnt says why): the rest of it
 * follows in order and is dropped, until a packet begins a message.
 */
static void hca_wire_uc_drop(struct hca_qp *qp, const struct hca_wire_pkt *pkt,
			     enum hca_q_counter cnt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;

	rs->msg = 0;
	rs->epsn = hca_psn_add(pkt->h.psn, 1);
	hca_count(qp->eng->resp_cnt, cnt, 1);
}

/*
 * UC refuses nothing aloud: a request it cannot take is dropped (IBA
 * 9.9.3, class D). Only a fault of its own receive WQE (REMOTE_OP_ERR: a
 * bad WQE or lkey, its error CQE written) moves it to ERR, as on the local
 * fabric.
 */
static void hca_wire_uc_refuse(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       const struct hca_wire_pkt *pkt, u8 code)
{
	if (code == HCA_NAK_REMOTE_OP_ERR) {
		qp->eng->wire->resp.msg = 0;
		if (hca_qp_set_err(qp))
			hca_engine_defer(ctx, qp);
		return;
	}
	hca_wire_uc_drop(qp, pkt, code == HCA_NAK_REMOTE_ACCESS ?
			 HCA_QCNT_RX_ACCESS_DROPS : HCA_QCNT_RX_LEN_DROPS);
}

/*
 * Refuse the request with NAK @code; the QP goes to ERR and, for an RDMA
 * request (no receive WQE tells the owner), raises @event.
 */
static void hca_wire_resp_refuse(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt, u8 code,
				 u8 event)
{
	if (qp->type->unreliable) {
		hca_wire_uc_refuse(ctx, qp, pkt, code);
		return;
	}
	hca_wire_send_ack(qp, HCA_AETH_NAK | code, pkt->h.psn);
	if (hca_qp_set_err(qp)) {
		if (event)
			hca_eq_qp_event(qp->hca, event, qp->qpn,
					SOFTHCA_EVENT_QUEUE_TYPE_QP);
		hca_engine_defer(ctx, qp);
	}
}

static void hca_wire_resp_invalid(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				  const struct hca_wire_pkt *pkt)
{
	hca_wire_resp_refuse(ctx, qp, pkt, HCA_NAK_INVALID_REQUEST,
			     SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR);
}

static void hca_wire_resp_access(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt)
{
	hca_wire_resp_refuse(ctx, qp, pkt, HCA_NAK_REMOTE_ACCESS,
			     SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR);
}

/* The receive WQE fails with @syndrome (error CQE), the peer gets @code. */
static void hca_wire_resp_rwqe_err(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				   const struct hca_wire_pkt *pkt, u8 syndrome,
				   u8 code)
{
	hca_resp_cqe_err(ctx, qp, syndrome);
	qp->eng->wire->resp.msg = 0;
	hca_wire_resp_refuse(ctx, qp, pkt, code, 0);
}

/* ---- memory --------------------------------------------------------------- */

/*
 * @err of taking the memory a packet lands in or is read from (@sgl) was
 * a page an ODP MKey does not have yet: the fault is raised and the packet
 * answered with an RNR NAK at its PSN (@nak: any packet of a SEND or
 * WRITE; the first faults for the whole message, a later one only after
 * an invalidation), the requester sending again from there after its RNR
 * timer; or with nothing (a READ or atomic: the requester's timer sends
 * it again). UC loses the message. False for any other error, or a fault
 * the driver could not resolve: the caller refuses the packet.
 */
static bool hca_wire_resp_faulted(struct hca_qp *qp,
				  const struct hca_wire_pkt *pkt,
				  const struct hca_sgl *sgl, int err, bool nak)
{
	if (likely(err != -EAGAIN) ||
	    hca_odp_fault(qp, true, &sgl->miss) != -EAGAIN)
		return false;
	if (qp->type->unreliable) {
		hca_wire_uc_drop(qp, pkt, HCA_QCNT_RX_ACCESS_DROPS);
	} else if (nak) {
		hca_count(qp->eng->resp_cnt, HCA_QCNT_RNR_NAKS_SENT, 1);
		hca_wire_send_ack(qp, HCA_AETH_RNR_NAK |
				  hca_resp_attrs_get(qp)->min_rnr_timer,
				  pkt->h.psn);
	}
	return true;
}

/* ctx->remote = [va, va + len) of @rkey with @access, acquired. */
static int hca_wire_resp_region(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				u32 rkey, u64 va, u32 len, u32 access)
{
	struct hca_sgl *sgl = &ctx->remote;

	sgl->n = 0;
	sgl->len = 0;
	sgl->inl = NULL;
	if (!len)
		return 0;	/* a zero-length access checks no rkey */
	if (!(hca_resp_attrs_get(qp)->access_flags & access))
		return -EACCES;
	sgl->n = 1;
	sgl->len = len;
	sgl->sge[0].mkey = NULL;
	sgl->sge[0].key = rkey;
	sgl->sge[0].va = va;
	sgl->sge[0].len = len;
	return hca_sgl_get_remote(qp, access, sgl, len);
}

/* @pkt's payload into @dst from byte @off on (ctx->wqe.local is free). */
static void hca_wire_resp_place(struct hca_exec_ctx *ctx, struct hca_sgl *dst,
				u64 off, const struct hca_wire_pkt *pkt)
{
	struct hca_sgl *src = &ctx->wqe.local;

	if (!pkt->paylen)
		return;
	src->n = 0;
	src->inl = pkt->payload;
	src->len = pkt->paylen;
	hca_sgl_copy_at(ctx, dst, off, src, pkt->paylen);
}

/* The receive CQE of a message that consumed the RQ WQE at rq_ci. */
static void hca_wire_resp_cqe(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			      const struct hca_wire_pkt *pkt, u8 cqe_op,
			      u32 byte_cnt)
{
	struct softhca_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.flags_rqpn = cpu_to_be32(qp->eng->wire->dest_qpn);
	if (pkt->op->hdrs & HCA_WH_IMM)
		cqe.imm_inval_pkey = pkt->h.imm;
	else if (pkt->op->hdrs & HCA_WH_IETH)
		cqe.imm_inval_pkey = cpu_to_be32(pkt->h.ieth_rkey);
	cqe.byte_cnt = cpu_to_be32(byte_cnt);
	cqe.sop_drop_qpn = cpu_to_be32(qp->qpn & SOFTHCA_24BIT_MASK);
	cqe.wqe_counter = cpu_to_be16(hca_rq_wqe_counter(qp));
	cqe.op_own = cqe_op << SOFTHCA_CQE_OPCODE_SHIFT;
	if (pkt->h.flags & HCA_BTH_SE)
		cqe.op_own |= SOFTHCA_CQE_SE;
	hca_resp_cqe_put(ctx, qp, &cqe);
}

/* Payload sizes IBTA allows: FIRST and MIDDLE exactly the MTU. */
static bool hca_wire_paylen_ok(const struct hca_wire_qp *wq,
			       const struct hca_wire_pkt *pkt)
{
	if (!(pkt->op->flags & HCA_WF_LAST))
		return pkt->paylen == wq->mtu;
	return pkt->paylen <= wq->mtu;
}

/* The message is done: the next PSN, and one more message for the MSN. */
static void hca_wire_resp_msg_done(struct hca_wire_resp *rs)
{
	rs->msg = 0;
	rs->msn = (rs->msn + 1) & HCA_PSN_MASK;
}

/* ---- requests ------------------------------------------------------------- */

/* No receive WQE for @pkt: an RNR NAK with the QP's timer (true). */
static bool hca_wire_resp_rnr(struct hca_qp *qp, const struct hca_wire_pkt *pkt)
{
	if (!hca_rq_is_empty(qp))
		return false;
	if (qp->type->unreliable) {	/* UC: no RNR, the message is lost */
		hca_wire_uc_drop(qp, pkt, HCA_QCNT_OUT_OF_BUFFER);
		return true;
	}
	hca_count(qp->eng->resp_cnt, HCA_QCNT_RNR_NAKS_SENT, 1);
	hca_count(qp->eng->resp_cnt, HCA_QCNT_OUT_OF_BUFFER, 1);
	hca_wire_send_ack(qp, HCA_AETH_RNR_NAK |
			  hca_resp_attrs_get(qp)->min_rnr_timer, pkt->h.psn);
	return true;
}

static void hca_wire_resp_send(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       const struct hca_wire_pkt *pkt)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_resp *rs = &wq->resp;
	u64 end;
	int err;

	if (!hca_wire_paylen_ok(wq, pkt)) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return;
	}
	if (pkt->op->flags & HCA_WF_FIRST) {
		if (hca_wire_resp_rnr(qp, pkt))
			return;
		rs->msg = HCA_WF_SEND;
		rs->msg_off = 0;
		hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_REQUESTS, 1);
	}
	if (hca_rq_fetch(ctx, qp, &ctx->remote)) {
		hca_wire_resp_rwqe_err(ctx, qp, pkt,
				       SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR,
				       HCA_NAK_REMOTE_OP_ERR);
		return;
	}
	end = (u64)rs->msg_off + pkt->paylen;
	if (end > ctx->remote.len && qp->type->unreliable) {
		/* UC: dropped, the WQE left for the next message. */
		hca_wire_uc_drop(qp, pkt, HCA_QCNT_RX_LEN_DROPS);
		return;
	}
	if (end > ctx->remote.len) {
		hca_wire_resp_rwqe_err(ctx, qp, pkt,
				       SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR,
				       HCA_NAK_INVALID_REQUEST);
		return;
	}
	/*
	 * The first packet takes the whole receive WQE, so that an ODP page
	 * fault is raised (and RNR NAKed) for all of it at the message's
	 * start; a later one checks the pages of its own bytes only.
	 */
	if (pkt->op->flags & HCA_WF_FIRST)
		err = hca_sgl_get(qp->hca, hca_rq_pdn(qp),
				  HCA_ACCESS_LOCAL_WRITE, &ctx->remote,
				  ctx->remote.len, &qp->eng->keys);
	else
		err = hca_sgl_get_from(qp->hca, hca_rq_pdn(qp),
				       HCA_ACCESS_LOCAL_WRITE, &ctx->remote,
				       rs->msg_off, end, &qp->eng->keys);
	if (hca_wire_resp_faulted(qp, pkt, &ctx->remote, err, true)) {
		/* Not begun: the first packet sent again begins it. */
		if (pkt->op->flags & HCA_WF_FIRST)
			rs->msg = 0;
		return;
	}
	if (err) {
		hca_wire_resp_rwqe_err(ctx, qp, pkt,
				       SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR,
				       HCA_NAK_REMOTE_OP_ERR);
		return;
	}
	/* SEND_LAST/ONLY_INV: an rkey of this QP's PD, before the bytes. */
	if ((pkt->op->hdrs & HCA_WH_IETH) &&
	    hca_mkey_invalidate(qp->hca, hca_resp_pdn(qp), qp->qpn,
				pkt->h.ieth_rkey)) {
		hca_sgl_put(&ctx->remote);
		hca_wire_resp_rwqe_err(ctx, qp, pkt,
				       SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR,
				       HCA_NAK_INVALID_REQUEST);
		return;
	}
	hca_wire_resp_place(ctx, &ctx->remote, rs->msg_off, pkt);
	hca_sgl_put(&ctx->remote);
	rs->msg_off = end;
	rs->epsn = hca_psn_add(rs->epsn, 1);
	hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_BYTES, pkt->paylen);
	if (!(pkt->op->flags & HCA_WF_LAST)) {
		hca_wire_resp_ack(ctx, qp, pkt);
		return;
	}
	/* The ACK owed (its MSN counting this message) before the CQE. */
	hca_wire_resp_msg_done(rs);
	hca_wire_resp_ack(ctx, qp, pkt);
	hca_wire_resp_cqe(ctx, qp, pkt, pkt->op->hdrs & HCA_WH_IMM ?
			  SOFTHCA_CQE_RESP_SEND_IMM :
			  pkt->op->hdrs & HCA_WH_IETH ?
			  SOFTHCA_CQE_RESP_SEND_INV :
			  SOFTHCA_CQE_RESP_SEND, end);
}

/* WRITE's first packet: the RETH, checked over the whole range. */
static bool hca_wire_resp_write_begin(struct hca_exec_ctx *ctx,
				      struct hca_qp *qp,
				      const struct hca_wire_pkt *pkt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	int err;

	if (pkt->h.reth.len > qp->hca->caps->max_msg_sz) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return false;
	}
	err = hca_wire_resp_region(ctx, qp, pkt->h.reth.rkey, pkt->h.reth.va,
				   pkt->h.reth.len, HCA_ACCESS_REMOTE_WRITE);
	if (hca_wire_resp_faulted(qp, pkt, &ctx->remote, err, true))
		return false;
	if (err) {
		hca_wire_resp_access(ctx, qp, pkt);
		return false;
	}
	hca_sgl_put(&ctx->remote);
	rs->msg = HCA_WF_WRITE;
	rs->msg_off = 0;
	rs->wr_va = pkt->h.reth.va;
	rs->wr_rkey = pkt->h.reth.rkey;
	rs->wr_len = pkt->h.reth.len;
	hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_REQUESTS, 1);
	return true;
}

static void hca_wire_resp_write(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				const struct hca_wire_pkt *pkt)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_resp *rs = &wq->resp;
	bool last = pkt->op->flags & HCA_WF_LAST;
	bool imm = pkt->op->hdrs & HCA_WH_IMM;
	u64 end;
	int err;

	if (!hca_wire_paylen_ok(wq, pkt)) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return;
	}
	/*
	 * With an immediate: a receive WQE, checked before anything of the
	 * packet is taken, so the packet sent again finds the same state.
	 */
	if (last && imm && hca_wire_resp_rnr(qp, pkt))
		return;
	if ((pkt->op->flags & HCA_WF_FIRST) &&
	    !hca_wire_resp_write_begin(ctx, qp, pkt))
		return;
	end = (u64)rs->msg_off + pkt->paylen;
	if (end > rs->wr_len || (last && end != rs->wr_len)) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return;
	}
	if (last && imm && hca_rq_fetch(ctx, qp, NULL)) {
		hca_wire_resp_rwqe_err(ctx, qp, pkt,
				       SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR,
				       HCA_NAK_REMOTE_OP_ERR);
		return;
	}
	if (pkt->paylen) {
		err = hca_wire_resp_region(ctx, qp, rs->wr_rkey,
					   rs->wr_va + rs->msg_off,
					   pkt->paylen, HCA_ACCESS_REMOTE_WRITE);
		if (hca_wire_resp_faulted(qp, pkt, &ctx->remote, err, true)) {
			/* Invalidated since it began: sent again, it begins. */
			if (pkt->op->flags & HCA_WF_FIRST)
				rs->msg = 0;
			return;
		}
		if (err) {
			hca_wire_resp_access(ctx, qp, pkt);
			return;
		}
		hca_wire_resp_place(ctx, &ctx->remote, 0, pkt);
		hca_sgl_put(&ctx->remote);
	}
	rs->msg_off = end;
	rs->epsn = hca_psn_add(rs->epsn, 1);
	hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_BYTES, pkt->paylen);
	if (last)
		hca_wire_resp_msg_done(rs);
	/* The ACK owed before the CQE, as for a SEND. */
	hca_wire_resp_ack(ctx, qp, pkt);
	if (last && imm)
		hca_wire_resp_cqe(ctx, qp, pkt, SOFTHCA_CQE_RESP_WR_IMM, end);
}

/*
 * The READ responses for [va, va + len) from PSN @psn on: FIRST, MIDDLE,
 * LAST or ONLY, AETH on the first and the last. Also a duplicate READ's.
 */
static void hca_wire_resp_read_out(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				   u32 psn, u32 len)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	u32 n = max_t(u32, 1, DIV_ROUND_UP(len, wq->mtu)), k;

	hca_wire_ack_flush(qp);		/* an owed ACK first */
	for (k = 0; k < n; k++) {
		u32 off = k * wq->mtu, paylen = min(wq->mtu, len - off);
		struct hca_wire_hdr h;
		struct sk_buff *skb;
		u8 op, *payload;

		if (n == 1)
			op = HCA_WOP_READ_RESP_ONLY;
		else if (!k)
			op = HCA_WOP_READ_RESP_FIRST;
		else if (k < n - 1)
			op = HCA_WOP_READ_RESP_MIDDLE;
		else
			op = HCA_WOP_READ_RESP_LAST;
		hca_wire_hdr_to_peer(&h, qp, op, hca_psn_add(psn, k));
		h.aeth.syndrome = HCA_AETH_ACK | HCA_AETH_NO_CREDITS;
		h.aeth.msn = wq->resp.msn;
		skb = hca_wire_alloc(qp->hca, &wq->addr, &h, paylen, &payload);
		if (!skb)
			continue;	/* lost: the requester asks again */
		if (paylen)
			hca_sgl_read(&ctx->remote, off, payload, paylen);
		hca_wire_send(qp->hca, skb);
		hca_count(qp->eng->resp_cnt, HCA_QCNT_TX_BYTES, paylen);
		if (!(k & 15))
			cond_resched();
	}
}

/* A READ, new or duplicate: checked, then answered from memory. */
static void hca_wire_resp_read(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			       const struct hca_wire_pkt *pkt, bool dup)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	u32 len = pkt->h.reth.len;
	int err;

	if (!hca_resp_attrs_get(qp)->max_dest_rd_atomic ||
	    len > qp->hca->caps->max_msg_sz) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return;
	}
	err = hca_wire_resp_region(ctx, qp, pkt->h.reth.rkey, pkt->h.reth.va,
				   len, HCA_ACCESS_REMOTE_READ);
	if (hca_wire_resp_faulted(qp, pkt, &ctx->remote, err, false))
		return;
	if (err) {
		hca_wire_resp_access(ctx, qp, pkt);
		return;
	}
	if (!dup) {
		hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_REQUESTS, 1);
		rs->epsn = hca_psn_add(rs->epsn, max_t(u32, 1,
				DIV_ROUND_UP(len, qp->eng->wire->mtu)));
		hca_wire_resp_msg_done(rs);
	}
	hca_wire_resp_read_out(ctx, qp, pkt->h.psn, len);
	hca_sgl_put(&ctx->remote);
}

static void hca_wire_resp_atomic_ack(struct hca_qp *qp, u32 psn, u64 orig)
{
	struct hca_wire_qp *wq = qp->eng->wire;
	struct hca_wire_hdr h;
	struct sk_buff *skb;
	u8 *payload;

	hca_wire_ack_flush(qp);		/* an owed ACK first */
	hca_wire_hdr_to_peer(&h, qp, HCA_WOP_ATOMIC_ACK, psn);
	h.aeth.syndrome = HCA_AETH_ACK | HCA_AETH_NO_CREDITS;
	h.aeth.msn = wq->resp.msn;
	h.atomic_orig = orig;
	skb = hca_wire_alloc(qp->hca, &wq->addr, &h, 0, &payload);
	if (skb)
		hca_wire_send(qp->hca, skb);
}

static void hca_wire_resp_atomic(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	bool cas = (pkt->h.opcode & ~HCA_WIRE_TP_MASK) == HCA_WOP_CMP_SWAP;
	struct hca_mkey *mkey;
	u64 orig;
	int err;

	if (!hca_resp_attrs_get(qp)->max_dest_rd_atomic ||
	    (pkt->h.atomic.va & (SOFTHCA_ATOMIC_SIZE - 1))) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return;
	}
	err = hca_wire_resp_region(ctx, qp, pkt->h.atomic.rkey,
				   pkt->h.atomic.va, SOFTHCA_ATOMIC_SIZE,
				   HCA_ACCESS_REMOTE_ATOMIC);
	if (hca_wire_resp_faulted(qp, pkt, &ctx->remote, err, false))
		return;
	if (err) {
		hca_wire_resp_access(ctx, qp, pkt);
		return;
	}
	mkey = ctx->remote.sge[0].mkey;
	if (cas)
		orig = hca_mkey_atomic_cas(mkey, pkt->h.atomic.va,
					   pkt->h.atomic.compare,
					   pkt->h.atomic.swap_add);
	else
		orig = hca_mkey_atomic_fadd(mkey, pkt->h.atomic.va,
					    pkt->h.atomic.swap_add);
	hca_sgl_put(&ctx->remote);
	/* Kept for a duplicate: an atomic is never executed twice. */
	rs->atomic[rs->atomic_next].psn = pkt->h.psn;
	rs->atomic[rs->atomic_next].orig = orig;
	rs->atomic[rs->atomic_next].valid = true;
	rs->atomic_next = (rs->atomic_next + 1) % HCA_WIRE_ATOMIC_REPLAY;
	hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_REQUESTS, 1);
	rs->epsn = hca_psn_add(rs->epsn, 1);
	hca_wire_resp_msg_done(rs);
	hca_wire_resp_atomic_ack(qp, pkt->h.psn, orig);
}

/* A request the responder has already executed (PSN behind epsn). */
static void hca_wire_resp_duplicate(struct hca_exec_ctx *ctx,
				    struct hca_qp *qp,
				    const struct hca_wire_pkt *pkt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	unsigned int i;

	if (pkt->op->flags & HCA_WF_READ) {
		hca_wire_resp_read(ctx, qp, pkt, true);
		return;
	}
	if (pkt->op->flags & HCA_WF_ATOMIC) {
		for (i = 0; i < HCA_WIRE_ATOMIC_REPLAY; i++) {
			if (rs->atomic[i].valid &&
			    rs->atomic[i].psn == pkt->h.psn) {
				hca_wire_resp_atomic_ack(qp, pkt->h.psn,
							 rs->atomic[i].orig);
				return;
			}
		}
		return;		/* too old to answer: the requester times out */
	}
	/* Everything before epsn arrived: say so again. */
	if (pkt->h.flags & HCA_BTH_ACKREQ)
		hca_wire_send_ack(qp, HCA_AETH_ACK | HCA_AETH_NO_CREDITS,
				  hca_psn_add(rs->epsn, HCA_PSN_MASK));
}

/* A packet's message kind: WRITE (with immediate too), SEND, or 0. */
static u16 hca_wire_msg_kind(const struct hca_wire_opcode *op)
{
	if (op->flags & HCA_WF_WRITE)
		return HCA_WF_WRITE;
	return op->flags & HCA_WF_SEND;
}

/* Does the packet continue (or start) a message as the last one left it? */
static bool hca_wire_resp_in_sequence(const struct hca_wire_resp *rs,
				      const struct hca_wire_opcode *op)
{
	if (!rs->msg)
		return op->flags & HCA_WF_FIRST;
	return !(op->flags & HCA_WF_FIRST) &&
	       hca_wire_msg_kind(op) == rs->msg;
}

/*
 * RC: the packet at epsn that continues the message is taken; one behind
 * is a duplicate, one ahead a gap (one sequence NAK), one at epsn that
 * does not fit the message an invalid request.
 */
static bool hca_wire_rc_in_order(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_resp *rs = &e->wire->resp;
	s32 d = hca_psn_diff(pkt->h.psn, rs->epsn);

	if (d < 0) {
		hca_count(e->resp_cnt, HCA_QCNT_DUPLICATE_REQUEST, 1);
		hca_wire_resp_duplicate(ctx, qp, pkt);
		return false;
	}
	if (d > 0) {
		hca_count(e->resp_cnt, HCA_QCNT_OUT_OF_SEQUENCE, 1);
		/* One NAK per gap: the requester goes back to epsn. */
		if (!rs->nak_sent)
			hca_wire_send_ack(qp, HCA_AETH_NAK |
					  HCA_NAK_PSN_SEQ_ERR, rs->epsn);
		rs->nak_sent = true;
		return false;
	}
	rs->nak_sent = false;
	if (!hca_wire_resp_in_sequence(rs, pkt->op)) {
		hca_wire_resp_invalid(ctx, qp, pkt);
		return false;
	}
	return true;
}

/*
 * UC (IBA 9.8.3): nothing is sent again, so nothing is a duplicate and no
 * NAK asks. A packet that is not the next of the message in progress ends
 * that message (lost: counted as out of sequence or behind); one that
 * begins a message starts over from its own PSN, any other is dropped
 * with the rest of its message.
 */
static bool hca_wire_uc_in_order(struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	s32 d = hca_psn_diff(pkt->h.psn, rs->epsn);

	if (!d && hca_wire_resp_in_sequence(rs, pkt->op))
		return true;
	if (d)
		hca_count(qp->eng->resp_cnt, d > 0 ? HCA_QCNT_OUT_OF_SEQUENCE :
			  HCA_QCNT_DUPLICATE_REQUEST, 1);
	rs->msg = 0;
	if (pkt->op->flags & HCA_WF_FIRST) {
		rs->epsn = pkt->h.psn;
		return true;
	}
	rs->epsn = hca_psn_add(pkt->h.psn, 1);
	return false;
}

/* A request packet in the order its transport keeps, executed. */
static void hca_wire_resp_request(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				  const struct hca_wire_pkt *pkt)
{
	if (qp->type->unreliable ? !hca_wire_uc_in_order(qp, pkt) :
				   !hca_wire_rc_in_order(ctx, qp, pkt))
		return;
	if (pkt->op->flags & HCA_WF_WRITE)
		hca_wire_resp_write(ctx, qp, pkt);
	else if (pkt->op->flags & HCA_WF_SEND)
		hca_wire_resp_send(ctx, qp, pkt);
	else if (pkt->op->flags & HCA_WF_READ)
		hca_wire_resp_read(ctx, qp, pkt, false);
	else if (pkt->op->flags & HCA_WF_ATOMIC)
		hca_wire_resp_atomic(ctx, qp, pkt);
}

/*
 * An XRC target: a request packet is taken into the SRQ its XRCETH names.
 * Only the next packet in sequence needs one (and a duplicate READ, whose
 * rkey is checked against that SRQ's PD again): a duplicate SEND, WRITE
 * or atomic is answered, an early packet NAKed for its sequence, whatever
 * SRQ they name. The SRQ must be of the target's domain, and every packet
 * of a message must name the one its first packet named (a SEND's held
 * WQE is of it): else a Remote Access Error NAK, the target to ERR (as on
 * the local fabric, responder.c).
 */
static void hca_wire_xrc_packet(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				const struct hca_wire_pkt *pkt)
{
	struct hca_wire_resp *rs = &qp->eng->wire->resp;
	s32 d = hca_psn_diff(pkt->h.psn, rs->epsn);
	bool srq = !d || (d < 0 && (pkt->op->flags & HCA_WF_READ));

	if (!srq) {
		hca_wire_resp_request(ctx, qp, pkt);
		return;
	}
	if ((!d && rs->msg && pkt->h.xrc_srqn != rs->xrc_srqn) ||
	    !hca_rq_xrc_enter(qp, pkt->h.xrc_srqn, !d)) {
		hca_count(qp->eng->resp_cnt, HCA_QCNT_RX_XRC_SRQ_ERRORS, 1);
		rs->msg = 0;
		hca_wire_resp_access(ctx, qp, pkt);
		return;
	}
	if (!d && (pkt->op->flags & HCA_WF_FIRST))
		rs->xrc_srqn = pkt->h.xrc_srqn;
	hca_wire_resp_request(ctx, qp, pkt);
	hca_rq_xrc_leave(qp);
}

static void hca_wire_resp_packet(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				 const struct hca_wire_pkt *pkt)
{
	struct hca_engine_qp *e = qp->eng;
	enum hca_qp_state state = READ_ONCE(qp->state);

	if (!hca_qp_state_receives(state)) {
		hca_wire_count(qp->hca, HCA_HCNT_WIRE_RX_QP_STATE, 1);
		return;
	}
	if (unlikely(state == HCA_QPS_RTR) && !e->comm_est) {
		e->comm_est = true;
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_COMM_EST, qp->qpn,
				SOFTHCA_EVENT_QUEUE_TYPE_QP);
	}
	if (unlikely(qp->type->xrc_tgt)) {
		hca_wire_xrc_packet(ctx, qp, pkt);
		return;
	}
	hca_wire_resp_request(ctx, qp, pkt);
}

/* ---- the receive path's entry --------------------------------------------- */

/*
 * A response for the executor; false: dropped and counted (nothing waits
 * for it: a late duplicate or a forgery; or the queue is full).
 */
static bool hca_wire_rsp_queue(struct hca_qp *qp, struct hca_wire_pkt *pkt)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_rsp_cb *cb = (void *)pkt->skb->cb;
	u32 payoff = pkt->payload - pkt->skb->data;

	BUILD_BUG_ON(sizeof(*cb) > sizeof(pkt->skb->cb));
	if (READ_ONCE(qp->sq_ci) == hca_sq_posted(qp)) {
		hca_wire_count(qp->hca, HCA_HCNT_WIRE_RX_UNSOLICITED, 1);
		return false;
	}
	if (skb_queue_len(&e->wire_rsp) >= HCA_WIRE_RSP_QLEN) {
		hca_wire_count(qp->hca, HCA_HCNT_WIRE_RX_QUEUE_FULL, 1);
		return false;
	}
	cb->psn = pkt->h.psn;
	cb->payoff = payoff;
	cb->paylen = pkt->paylen;
	cb->opcode = pkt->h.opcode;
	cb->syndrome = pkt->h.aeth.syndrome;
	cb->orig = pkt->h.atomic_orig;
	skb_queue_tail(&e->wire_rsp, pkt->skb);
	return true;
}

/*
 * Take the queued responses now if no executor has the QP: the requests
 * behind them on the wire are executed at once, and a reply's receive CQE
 * must not come before the send CQE its ACK completes (engine.md "CQE
 * order"). An executor that has it, or a window they opened, gets the QP
 * run. With @wait (a request arrived behind them) the QP is waited for:
 * its executor holds exec_lock only for a step, and takes no lock that
 * the receive path holds here.
 */
static void hca_wire_rsp_now(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			     bool wait)
{
	struct hca_engine_qp *e = qp->eng;
	enum hca_qp_state state;

	if (wait)
		mutex_lock(&e->exec_lock);
	else if (!mutex_trylock(&e->exec_lock))
		goto later;
	state = READ_ONCE(qp->state);
	if (e->wire && (state == HCA_QPS_RTS || state == HCA_QPS_SQD))
		hca_wire_comp_drain(ctx, qp, hca_sq_posted(qp));
	mutex_unlock(&e->exec_lock);
	if (READ_ONCE(qp->sq_ci) == hca_sq_posted(qp))
		return;
	/*
	 * A NAK may have moved it to ERR: its WQEs behind are flushed in its
	 * turn (no ERR poll finds a QP without an RQ).
	 */
	state = READ_ONCE(qp->state);
	if ((state == HCA_QPS_RTS || state == HCA_QPS_SQD) &&
	    !hca_wire_has_work(qp))
		return;
later:
	hca_qp_run_later(qp);
}

/* XRC is one way: requests reach a target, responses an initiator. */
static bool hca_wire_wrong_way(const struct hca_qp *qp,
			       const struct hca_wire_pkt *pkt)
{
	bool req = pkt->op->flags & HCA_WF_REQUEST;

	return req ? qp->type->send_only : qp->type->xrc_tgt;
}

void hca_wire_rc_recv(struct hca_exec_ctx *ctx, struct hca *hca,
		      struct hca_wire_pkt *pkt)
{
	bool marked = hca_wire_cc_marked(hca, pkt), queued = false;
	struct hca_wire_qp *wq;
	struct hca_engine_qp *e;
	struct hca_qp *qp;

	qp = hca_qp_get(hca, pkt->h.dqpn);
	if (!qp) {
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
		goto drop;
	}
	e = qp->eng;
	/* e->wire, once set, is freed only with the QP (wire_qp.c). */
	wq = READ_ONCE(e->wire);
	if (!wq || (pkt->h.opcode & HCA_WIRE_TP_MASK) != hca_wire_tp(qp) ||
	    hca_wire_wrong_way(qp, pkt)) {
		/* Not a QP of the packet's transport on the wire: none. */
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
		goto put;
	}
	if (marked && hca_wire_from_peer(wq, pkt))
		hca_wire_cc_notify(qp, pkt);
	if (!(pkt->op->flags & HCA_WF_REQUEST)) {
		/* Queued first: an executor may be taking the queue. */
		if (!hca_wire_from_peer(wq, pkt))
			hca_wire_count(hca, HCA_HCNT_WIRE_RX_NOT_PEER, 1);
		else
			queued = hca_wire_rsp_queue(qp, pkt);
		if (queued)
			hca_wire_rsp_now(ctx, qp, false);
		goto put;
	}
	/* Responses that came first complete first (held by an executor). */
	if (!skb_queue_empty_lockless(&e->wire_rsp))
		hca_wire_rsp_now(ctx, qp, true);
	mutex_lock(&e->resp_lock);
	/* Under the lock: a RESET or another RTR may have come since. */
	if (!e->wire)
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
	else if (!hca_wire_from_peer(e->wire, pkt))
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_NOT_PEER, 1);
	else
		hca_wire_resp_packet(ctx, qp, pkt);
	mutex_unlock(&e->resp_lock);
put:
	if (ctx->deferred) {
		/* An error moved it to ERR: its queues flush in its turn. */
		hca_qp_run_later(ctx->deferred);
		hca_qp_put(ctx->deferred);
		ctx->deferred = NULL;
	}
	hca_qp_put(qp);
drop:
	if (!queued)
		consume_skb(pkt->skb);
}
