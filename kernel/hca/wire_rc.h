/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: reliable connection over the wire, the state its three
 * stages share. The requester (wire_req.c) turns send WQEs into request
 * packets inside a PSN window; the completer (wire_comp.c) takes the
 * responses (ACK, NAK, READ responses, atomic ACKs) in PSN order and
 * completes WQEs in order, or goes back N; the responder (wire_resp.c)
 * takes request packets in PSN order, places data, answers, and replays
 * READs and atomics it has already done. Documentation/wire.md has the
 * state machines.
 *
 * A QP uses the wire when, at RTR, its destination GID is not a softhca
 * device of this host (or force_wire is set): hca_wire_qp_rtr() gives it a
 * struct hca_wire_qp, kept until DESTROY_QP, reset with the QP (wire_qp.c).
 */
#ifndef HCA_HCA_WIRE_RC_H
#define HCA_HCA_WIRE_RC_H

#include "wire.h"

#define HCA_WIRE_FLIGHTS	64	/* WQEs in flight (power of two) */
#define HCA_WIRE_WINDOW		128	/* PSNs in flight */
#define HCA_WIRE_ACKREQ_EVERY	32	/* packets between ACK requests */
#define HCA_WIRE_ACK_COALESCE	16	/* ACK requests one owed ACK answers */
#define HCA_WIRE_RSP_QLEN	1024	/* responses queued for the executor */
#define HCA_WIRE_ATOMIC_REPLAY	16	/* atomic results kept for duplicates */
#define HCA_WIRE_RD_HOLD_MAX_NS	(16 * NSEC_PER_MSEC) /* see comp_gap */

static inline s32 hca_psn_diff(u32 a, u32 b)
{
	return (s32)((a - b) << 8) >> 8;
}

static inline u32 hca_psn_add(u32 psn, u32 n)
{
	return (psn + n) & HCA_PSN_MASK;
}

/* The BTH transport bits of @qp's packets, both ways: RC, UC or XRC. */
static inline u8 hca_wire_tp(const struct hca_qp *qp)
{
	switch (qp->type->tp) {
	case SOFTHCA_TP_UC:
		return HCA_WIRE_TP_UC;
	case SOFTHCA_TP_XRC:
		return HCA_WIRE_TP_XRC;
	default:
		return HCA_WIRE_TP_RC;
	}
}

/* One send WQE that left, oldest first: what completing or resending needs. */
struct hca_wire_flight {
	u16 idx;			/* its SQ counter */
	u16 wqebbs;
	u8 opcode;			/* SOFTHCA_OPCODE_* */
	u8 fm_ce_se;
	__be32 imm;
	u32 psn;			/* its first PSN */
	u32 npkts;			/* PSNs it takes (a READ: its responses) */
	u32 sent;			/* of them sent in this try */
	u32 acked;			/* of them acknowledged (or received) */
	u32 len;			/* message bytes */
};

/* The requester and completer, under exec_lock. */
struct hca_wire_req {
	u32 next_psn;			/* the PSN of the next packet to send */
	u16 sq_sent;			/* the WQE after the last flight */
	u16 head;			/* the oldest flight */
	u16 nfl;			/* flights from @head */
	u16 cur;			/* from @head: the first not wholly sent */
	u16 nrd;			/* READs and atomics among them */
	u32 noack;			/* packets since the last ACK request */
	u32 rewound;			/* PSN of the last go-back-N, until progress */
	bool rewind_pending;		/* @rewound is set */
	bool probe;			/* after a timeout: one packet, then wait */
	u64 rd_hold_until;		/* no READ re-ask on a gap before this */
	struct hca_wire_flight fl[HCA_WIRE_FLIGHTS];
};

/* The responder, under resp_lock. */
struct hca_wire_resp {
	u32 epsn;			/* the next PSN expected */
	u32 msn;			/* messages completed (AETH) */
	bool nak_sent;			/* a sequence NAK for @epsn went out */
	u16 msg;			/* HCA_WF_SEND / _WRITE of a message begun */
	u32 msg_off;			/* its bytes so far */
	u64 wr_va;			/* WRITE: RETH of its first packet */
	u32 wr_rkey;
	u32 wr_len;
	u32 xrc_srqn;			/* XRC: the SRQ its first packet named */
	u16 atomic_next;
	atomic64_t ack_owed;		/* a coalesced ACK (wire_resp.c) */
	struct {
		u32 psn;
		bool valid;
		u64 orig;
	} atomic[HCA_WIRE_ATOMIC_REPLAY];
};

/*
 * The reaction point of the requester (wire_rp.c), under exec_lock but
 * for @cnps (the receive path) and @next_ok (read by the pollers).
 */
struct hca_wire_rp {
	atomic_t cnps;			/* CNPs taken, not looked at yet */
	u32 rc;				/* current rate, Mbit/s; 0: unlimited */
	u32 rt;				/* target rate, Mbit/s */
	u32 alpha;			/* congestion estimate, of 1024 */
	u32 t, bc;			/* increase events since the cut */
	u32 cnp_periods;		/* CNPs not yet counted into alpha */
	bool held;			/* the rate held the requester */
	s64 alpha_at;			/* the alpha period's start */
	s64 inc_at;			/* the increase period's start */
	s64 cut_at;			/* the last cut */
	u32 inc_bytes;			/* sent since the last byte event */
	s64 next_ok;			/* the next packet may leave then */
	s64 win_at;			/* the rate window's start, local_clock() */
	u64 win_bytes;
	u32 win_mbps;			/* the last whole window's rate */
};

struct hca_wire_qp {
	struct hca_wire_addr addr;	/* to the peer; written at RTR */
	struct dst_cache route;		/* to the peer, per CPU; reset at RTR */
	u32 dest_qpn;
	u32 mtu;
	struct hca_wire_req req;
	struct hca_wire_resp resp;
	spinlock_t ack_lock;		/* held while an owed ACK leaves */
	struct hca_wire_rp rp;
};

/* Is the packet from the QP's peer, to the address the QP sends from? */
static inline bool hca_wire_from_peer(const struct hca_wire_qp *wq,
				      const struct hca_wire_pkt *pkt)
{
	return !memcmp(pkt->a.sgid, wq->addr.dgid, sizeof(pkt->a.sgid)) &&
	       !memcmp(pkt->a.dgid, wq->addr.sgid, sizeof(pkt->a.dgid));
}

/* wire_rp.c: the reaction point (DCQCN) of the requester. */
bool hca_wire_rp_cnp(struct hca_wire_qp *wq);
bool hca_wire_rp_hold(struct hca_qp *qp, struct hca_wire_qp *wq);
void hca_wire_rp_sent(struct hca_wire_qp *wq, u32 paylen);
void hca_wire_rp_timer(struct hca_qp *qp);

/* Does the rate hold the requester now? Lockless. */
static inline bool hca_wire_rp_held(const struct hca_wire_rp *rp)
{
	s64 next = READ_ONCE(rp->next_ok);

	return next && ktime_get_ns() < next;
}

/*
 * exec.c: would running a wire QP (with WQEs outstanding) make progress?
 * Responses to take, WQEs or packets not sent yet (unless an RNR wait
 * holds them), or its timer due. Lockless.
 */
static inline bool hca_wire_has_work(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_req *r = &e->wire_mem->req;
	s64 until = READ_ONCE(e->wait_until);

	if (!skb_queue_empty_lockless(&e->wire_rsp))
		return true;
	if (until && ktime_get_ns() >= until)
		return true;
	/* New WQEs, or a flight the window stopped half-way (cur < nfl). */
	return READ_ONCE(e->wait_kind) != HCA_WAIT_RNR &&
	       !hca_odp_stalled(e) && !hca_wire_rp_held(&e->wire_mem->rp) &&
	       READ_ONCE(qp->state) == HCA_QPS_RTS &&
	       (hca_sq_posted(qp) != READ_ONCE(r->sq_sent) ||
		READ_ONCE(r->cur) != READ_ONCE(r->nfl));
}


/* engine.c: at RTR, at RESET, at DESTROY_QP (both locks held for reset). */
int hca_wire_qp_rtr(struct hca_qp *qp);
void hca_wire_qp_rts(struct hca_qp *qp);
void hca_wire_qp_reset(struct hca_qp *qp);
void hca_wire_qp_fini(struct hca_qp *qp);

/* requester.c hands a wire QP's send queue here (exec_lock held). */
enum hca_step hca_wire_req_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
				u16 posted, s64 now);
/* The QP went to ERR: forget the flights (hca_sq_flush() completes them). */
void hca_wire_req_flush(struct hca_qp *qp);

/* wire_comp.c: the queued responses, in the executor (exec_lock held). */
void hca_wire_comp_drain(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			 u16 posted);
/* Fail the oldest flight with @syndrome: the QP goes to ERR. */
void hca_wire_comp_fail(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			u8 syndrome);
/* Where a queued response's fields are (skb->cb): see wire_resp.c. */
struct hca_wire_rsp_cb {
	u32 psn;
	u32 payoff;			/* payload: from skb->data */
	u32 paylen;
	u8 opcode;
	u8 syndrome;			/* AETH, if the opcode has one */
	u64 orig;			/* AtomicAckETH */
};
/* wire_req.c, for the completer: resend from @psn (go back N). */
void hca_wire_req_rewind(struct hca_qp *qp, u32 psn);
/* After acknowledgements: skip what the peer has, next_psn from @cur. */
void hca_wire_req_sync(struct hca_wire_req *r);

static inline struct hca_wire_flight *hca_wire_fl(struct hca_wire_req *r,
						  u16 i)
{
	return &r->fl[(r->head + i) & (HCA_WIRE_FLIGHTS - 1)];
}
/* Restart (or stop) the local ACK timer after progress. */
u64 hca_wire_timeout_ns(const struct hca_path *p);
void hca_wire_req_timer(struct hca_qp *qp);

/* wire_resp.c: answers (ACK, NAK) to the peer. */
void hca_wire_send_ack(struct hca_qp *qp, u8 syndrome, u32 psn);
void hca_wire_ack_flush(struct hca_qp *qp);
/* Count NAK @syndrome (AETH) into @cnt: sent by a responder or received. */
void hca_wire_count_nak(u64 *cnt, u8 syndrome, bool sent);

#endif
