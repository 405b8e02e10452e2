/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: the engine's private declarations, shared by
 * engine.c (threads, their loop, sleep and back-off, the wake-up call),
 * exec.c (which QP runs next: claims, the run list, retry timers, ERR
 * polling; the per-QP execution loop and flush), requester.c (copy,
 * validate and execute one send WQE), responder.c (the receiving QP's
 * side), ud.c (the datagram transport's send and receive stages) and
 * cqe.c (the CQE writer). See Documentation/engine.md.
 *
 * Locks, outermost first:
 *   thr->watch_lock (mutex, per thread)  the thread's watched areas; held
 *                                   by the thread for a whole pass
 *   eng->exec_lock (mutex, per QP)  one executor of a QP's send queue at a
 *                                   time: sq_ci, the retry state, flushes;
 *                                   only ever trylocked by executors
 *   eng->resp_lock (mutex, per QP)  the receive side of a QP: rq_ci, RQ WQE
 *                                   consumption, RQ flush. Taken with some
 *                                   QP's exec_lock held, never the reverse;
 *                                   never two at once
 *   qp->lock, cq->lock (spinlocks)  state changes, the CQ producer
 *   thr->lock (spinlock, irqsave)   a thread's run, ERR and join lists;
 *                                   innermost (retry timers take it)
 * Executors run in process context (engine threads, wake-up callers,
 * firmware commands) and hold a reference on every QP they run.
 */
#ifndef HCA_HCA_ENGINE_H
#define HCA_HCA_ENGINE_H

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>

#include "model.h"

#define HCA_ENG_WQE_MAX	512	/* >= caps max_wqe_size */
#define HCA_ENG_RWQE_MAX	1024	/* largest RQ stride the engine takes */
#define HCA_ENG_SGE_MAX	32	/* >= max_send_sge, max_recv_sge, max_sge_rd */

#define HCA_SPARE_CTX		8	/* power of two */

/* Engine state of one HCA (hca->eng). */
struct hca_engine_dev {
	struct hca *hca;
	/* Contexts for wake-up calls, kept: concurrent callers each need
	 * one, and a kmalloc() per call (zeroed, with init_on_alloc) cost
	 * more than the call's work. A caller starts at its CPU's slot; a
	 * line each, so callers on two CPUs do not share one.
	 */
	struct {
		struct hca_exec_ctx *ctx;
	} ____cacheline_aligned_in_smp spare[HCA_SPARE_CTX];
	/* Wake-up calls to this HCA: per CPU, as engine_wakeups. */
	unsigned long __percpu *wakeups;
	unsigned long backoffs_base;		/* engine_backoffs when it joined */
};

enum hca_engine_state {
	HCA_ENG_POLLING,
	HCA_ENG_IDLE,		/* asleep until a wake-up call or a timer */
	HCA_ENG_BACKOFF,	/* asleep for engine_backoff_us: CPU wanted */
};

/*
 * One engine thread: it serves its range of the slots of every doorbell
 * area (doorbell.c). Work reaches it three ways: hints in the areas it
 * watches, QPs on its run list (work the model knows of: a QP over its
 * budget, an expired retry timer, a trylock that found another executor,
 * an error to flush), and, every 10 ms, the QPs on its ERR list.
 */
struct hca_engine_thread {
	unsigned int index;
	struct task_struct *task;
	struct hca_exec_ctx *ctx;
	int state;			/* enum hca_engine_state, by the thread */
	atomic_t poll_req;		/* "go back to polling" */
	unsigned int backoff_shift;	/* period = engine_backoff_us << it */
	unsigned int idle_shift;	/* window = engine_idle_us << it */
	cpumask_var_t away;		/* scratch mask of hca_engine_move() */
	s64 moved_at;			/* local_clock() of the last move */
	s64 polling_since;		/* when the thread last resumed polling */
	atomic64_t last_wake;		/* ktime ns of the last wake-up call */
	s64 err_next;			/* local_clock() of the next ERR poll */
	unsigned long claims;		/* hints claimed in its passes */

	struct mutex watch_lock;
	struct list_head watched;	/* hca_db_watch.node, watch_lock */

	spinlock_t lock ____cacheline_aligned_in_smp;
	struct list_head join;		/* areas a wake-up call handed over */
	struct list_head run;		/* hca_engine_qp.run_node */
	unsigned int nr_run;
	struct list_head err;		/* hca_engine_qp.err_node */
	struct list_head wire_rx;	/* wire ports with packets (wire_net.c) */
	unsigned int nr_wire_rx;
};

extern struct hca_engine_thread *hca_engine_threads;

static inline struct hca_engine_thread *hca_qp_thread(struct hca_qp *qp)
{
	return &hca_engine_threads[qp->db.thread];
}

enum hca_wait_kind {
	HCA_WAIT_NONE,
	HCA_WAIT_RNR,		/* RNR NAK: retry after the responder's timer */
	HCA_WAIT_TRANSPORT,	/* no answer: retry after the local ACK timeout */
	HCA_WAIT_PAGE_FAULT,	/* a local page: retry at PAGE_FAULT_RESUME */
};

/* What the requester needs of its QP's attributes for every WQE. */
struct hca_path {
	u8 dgid[16];
	u32 dest_qpn;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
	u32 qkey;			/* datagram QPs: its own Q_Key */
	u32 path_mtu;			/* datagram QPs: the largest message */
	u8 max_rd_atomic;		/* wire: READs and atomics in flight */
};

/* ... and the responder of its own. */
struct hca_resp_attrs {
	u32 dest_qpn;
	u32 access_flags;
	u8 min_rnr_timer;
	u8 max_dest_rd_atomic;		/* 0: no READ or atomic taken */
	u32 qkey;			/* datagram QPs: what a datagram must carry */
};

/* Engine state of one QP (qp->eng). */
struct hca_engine_qp {
	struct hca_qp *qp;
	struct mutex exec_lock;		/* the send queue's one executor */
	/* Retry state of the WQE at sq_ci, under exec_lock. */
	u8 wait_kind;		/* enum hca_wait_kind */
	u8 rnr_left;
	u8 retry_left;
	s64 wait_until;		/* ktime in ns; read locklessly by the pollers */
	struct hrtimer wait_timer;	/* puts it on the run list at wait_until */
	struct hrtimer pace_timer;	/* ... when its rate lets it send (wire_rp.c) */
	/*
	 * On-demand paging (mkey_odp.c): HCA_ODP_* bits, atomic; when each
	 * side's pending fault was raised.
	 */
	unsigned long odp_flags;
	s64 odp_req_at;		/* under exec_lock */
	s64 odp_resp_at;
	s64 odp_stall_until;	/* a wire requester's fault, 0: none */
	/* Copies of the QP's attributes at qp->attrs_gen (0: none yet). */
	u32 path_gen;			/* under exec_lock */
	struct hca_path path;
	struct hca_route route;	/* to the responder, under exec_lock */
	struct hca_mkey_cache lkeys;	/* the local SGEs', under exec_lock */
	/* On its thread's lists, under the thread's lock. */
	struct list_head run_node;
	struct list_head err_node;
	bool on_run;
	bool on_err;
	u64 req_cnt[HCA_QCNT_NUM];	/* as requester, under exec_lock */
	/*
	 * The wire (wire_rc.h): set at RTR for a peer off this host, freed
	 * at DESTROY_QP; responses wait in @wire_rsp for the executor.
	 */
	struct hca_wire_qp *wire;
	struct hca_wire_qp *wire_mem;
	struct sk_buff_head wire_rsp;
	u64 cnp_next;			/* no CNP for its marks before (wire_cc.c) */

	/*
	 * The receive side: run by the executor of the peer's send queue,
	 * often on another CPU than this QP's own executor, so not on the
	 * cache lines the latter writes.
	 */
	struct mutex resp_lock ____cacheline_aligned_in_smp;
	u32 resp_gen;			/* under resp_lock */
	struct hca_resp_attrs resp;
	struct hca_mkey_cache keys;	/* RQ lkeys and rkeys, under resp_lock */
	bool comm_est;			/* COMM_EST raised; under resp_lock */
	u64 resp_cnt[HCA_QCNT_NUM];	/* as responder, under resp_lock */
};

/*
 * Count @n into counter @i of one side of a QP (req_cnt or resp_cnt), which
 * only the holder of that side's lock writes: a plain add, no atomic; the
 * store is whole for QUERY_Q_COUNTER, which reads without the lock.
 */
static __always_inline void hca_count(u64 *cnt, enum hca_q_counter i, u64 n)
{
	WRITE_ONCE(cnt[i], cnt[i] + n);
}

/*
 * Does the request bring data back to the requester (READ, atomics: its
 * local SGEs are written), rather than carry it out? The opcode table says.
 */
static __always_inline bool hca_op_fetches(const struct softhca_opcode_info *op)
{
	return op->local_access & SOFTHCA_ACCESS_LOCAL_WRITE;
}

/* One scatter/gather element, key checked once the MKey is held. */
struct hca_sge {
	struct hca_mkey *mkey;	/* NULL until acquired */
	u32 key;
	u32 len;
	u64 va;
	bool odp_begun;		/* hca_odp_begin() done: hca_odp_end() owed */
};

struct hca_sgl {
	unsigned int n;
	u64 len;			/* bytes of every element together */
	const u8 *inl;			/* inline payload (in the WQE copy) */
	struct hca_odp_miss miss;	/* hca_sgl_get()'s -EAGAIN: what */
	struct hca_sge sge[HCA_ENG_SGE_MAX];
};

/* A send WQE after copying and validation: the engine uses only this. */
struct hca_wqe {
	u16 idx;			/* its SQ counter: the CQE's wqe_counter */
	u8 opcode;			/* SOFTHCA_OPCODE_* */
	const struct softhca_opcode_info *op;	/* its row; NULL: invalid */
	u8 fm_ce_se;
	__be32 imm;
	u32 ds;
	u32 wqebbs;			/* WQEBBs it occupies */
	u64 raddr;
	u32 rkey;
	u32 xrc_srqn;			/* XRC: the target's SRQ, else 0 */
	u64 swap_add;
	u64 compare;
	struct hca_sgl local;		/* SEND/WRITE: source; READ/atomic: dest */
};

/* What the responder answered a request. */
enum hca_answer_kind {
	HCA_ANS_ACK,		/* done (READ/atomic data already placed) */
	HCA_ANS_RNR,		/* receiver not ready: no RQ WQE */
	HCA_ANS_NONE,		/* nobody answered: the requester times out */
	HCA_ANS_NAK,		/* error: @syndrome for the requester */
};

struct hca_answer {
	enum hca_answer_kind kind;
	u8 syndrome;		/* SOFTHCA_CQE_SYNDROME_* (NAK) */
	u8 rnr_timer;		/* the responder's min_rnr_timer (RNR) */
};

#define HCA_CTX_ACKS	16

/* Everything one executor needs; one per engine thread or wake-up call. */
struct hca_exec_ctx {
	bool is_thread;		/* the engine thread, else a wake-up caller */
	struct hca_qp *deferred;	/* a QP an error moved to ERR (ref held) */
	/*
	 * A responder's receive CQE held back until the requester's send CQE
	 * is written (hca_resp_done()); its QP's resp_lock stays held.
	 */
	struct hca_qp *resp_held;
	/* RC responders owing a coalesced ACK (wire_resp.c), refs held. */
	struct hca_qp *acks[HCA_CTX_ACKS];
	unsigned int nr_acks;
	bool acks_open;		/* the receive path is taking a batch */
	struct softhca_cqe resp_cqe;
	struct hca_wqe wqe;
	struct hca_sgl remote;		/* the responder's list (RQ WQE, or rkey) */
	u8 wqe_buf[HCA_ENG_WQE_MAX] __aligned(16);
	u8 rwqe_buf[HCA_ENG_RWQE_MAX] __aligned(16);
};

/*
 * A datagram between the send stage and the receive stage (ud.c), as the
 * fabric carries it: what its packet's headers would say, and the payload,
 * still in the sender's memory (its MKeys held) or in the WQE copy.
 */
struct hca_datagram {
	struct hca_qp *src;		/* the sending QP (loopback); NULL: the wire */
	u32 sqpn;			/* its QPN */
	const struct softhca_opcode_info *op;	/* SEND or SEND_IMM */
	u32 dqpn;
	u32 qkey;			/* as sent: bit 31 was the QP's own */
	u8 dgid[16];
	u8 sgid[16];
	u8 smac[6];
	u8 dmac[6];
	u16 vlan_id;
	u8 vlan;			/* the source GID's netdev is a VLAN */
	u8 sl;
	u8 tclass;
	u8 hop_limit;
	u32 flow_label;
	u16 udp_sport;
	u8 solicited;
	__be32 imm;			/* if op carries one */
	const struct hca_sgl *payload;
	u32 len;
};

/*
 * The QP's attributes the requester (hca_path) and the responder
 * (hca_resp_attrs) use, as of their last change: copies refreshed under
 * qp->lock only when qp->attrs_gen moved (its release pairs with the
 * acquire here). hca_path under exec_lock, hca_resp_attrs under resp_lock.
 */
static __always_inline const struct hca_path *hca_path_get(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_path *p = &e->path;
	unsigned long flags;

	/* Pairs with the release of attrs_gen in qp_ctx.c. */
	if (likely(smp_load_acquire(&qp->attrs_gen) == e->path_gen))
		return p;
	spin_lock_irqsave(&qp->lock, flags);
	memcpy(p->dgid, qp->attrs.dgid, sizeof(p->dgid));
	p->dest_qpn = qp->attrs.dest_qpn;
	p->timeout = qp->attrs.timeout;
	p->retry_cnt = qp->attrs.retry_cnt;
	p->rnr_retry = qp->attrs.rnr_retry;
	p->qkey = qp->attrs.qkey;
	p->path_mtu = qp->attrs.path_mtu;
	p->max_rd_atomic = qp->attrs.max_rd_atomic;
	e->path_gen = qp->attrs_gen;
	spin_unlock_irqrestore(&qp->lock, flags);
	return p;
}

static __always_inline const struct hca_resp_attrs *
hca_resp_attrs_get(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_resp_attrs *a = &e->resp;
	unsigned long flags;

	/* Pairs with the release of attrs_gen in qp_ctx.c. */
	if (likely(smp_load_acquire(&qp->attrs_gen) == e->resp_gen))
		return a;
	spin_lock_irqsave(&qp->lock, flags);
	a->dest_qpn = qp->attrs.dest_qpn;
	a->access_flags = qp->attrs.access_flags;
	a->min_rnr_timer = qp->attrs.min_rnr_timer;
	a->max_dest_rd_atomic = qp->attrs.max_dest_rd_atomic;
	a->qkey = qp->attrs.qkey;
	e->resp_gen = qp->attrs_gen;
	spin_unlock_irqrestore(&qp->lock, flags);
	return a;
}

/* engine.c */
void hca_engine_thread_wake(struct hca_engine_thread *thr);
void hca_engine_thread_poke(struct hca_engine_thread *thr);
bool hca_wakeup_caller_here(void);
struct hca_exec_ctx *hca_ctx_get(struct hca_engine_dev *eh);
void hca_ctx_put(struct hca_engine_dev *eh, struct hca_exec_ctx *ctx);

/* exec.c */
bool hca_qp_set_err(struct hca_qp *qp);
bool hca_qp_set_sq_err(struct hca_qp *qp);
void hca_qp_fatal(struct hca_qp *qp);
void hca_engine_defer(struct hca_exec_ctx *ctx, struct hca_qp *qp);
void hca_qp_run_later(struct hca_qp *qp);
void hca_qp_watch_err(struct hca_qp *qp);
bool hca_run_qp(struct hca_exec_ctx *ctx, struct hca_qp *qp);
/* Run the QP an error deferred (ctx->deferred), if any. */
void hca_run_deferred(struct hca_exec_ctx *ctx);
bool hca_run_target(struct hca_exec_ctx *ctx, struct hca_db_target *tgt);
unsigned int hca_run_area(struct hca_exec_ctx *ctx, struct hca_db_area *a,
			  unsigned int t, unsigned int budget);
bool hca_run_list(struct hca_exec_ctx *ctx, struct hca_engine_thread *thr);
bool hca_poll_err_list(struct hca_engine_thread *thr, s64 now);
bool hca_thread_has_work(struct hca_engine_thread *thr);
void hca_engine_qp_forget(struct hca_qp *qp);
void hca_wait_timer_init(struct hca_engine_qp *e);
void hca_wait_start(struct hca_qp *qp, u64 delay_ns);
void hca_pace_start(struct hca_qp *qp, u64 delay_ns);
/* QUERY_HCA_COUNTERS: the engine's counts for @hca. */
void hca_engine_counters(struct hca *hca, u64 *wakeups, u64 *backoffs);

/* requester.c */
enum hca_step {
	HCA_STEP_DONE,		/* the WQE completed (or failed): sq_ci moved */
	HCA_STEP_WAIT,		/* waiting for a retry deadline */
	HCA_STEP_STOP,		/* nothing executable now */
};

enum hca_step hca_sq_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			    u16 posted, s64 now);
void hca_sq_flush(struct hca_qp *qp, u16 posted, unsigned int budget);
/* For the datagram send stage (ud.c): the steps RC and UD share. */
int hca_wqe_parse_payload(struct hca_qp *qp, struct hca_wqe *w,
			  const u8 *buf, u32 seg);
void hca_sq_complete(struct hca_qp *qp, const struct hca_wqe *w);
/*
 * A WQE the requester runs alone (NOP, LOCAL_INV, REG_MR): its MKey
 * operation, then its completion, or LOCAL_QP_OP_ERR.
 */
void hca_sq_local(struct hca_exec_ctx *ctx, struct hca_qp *qp,
		  const struct hca_wqe *w);
void hca_sq_complete_one(struct hca_qp *qp, const struct hca_wqe *w);
void hca_sq_fail(struct hca_qp *qp, const struct hca_wqe *w, u8 syndrome);
void hca_wait_clear(struct hca_qp *qp);
void hca_wait_set(struct hca_qp *qp, enum hca_wait_kind kind, u64 delay_ns);
u64 hca_rnr_timer_ns(u8 code);
int hca_wqe_fetch_at(struct hca_exec_ctx *ctx, struct hca_qp *qp, u16 at,
		     u16 posted);
int hca_wqe_parse_rc(struct hca_qp *qp, struct hca_wqe *w, const u8 *buf);
bool hca_wqe_signaled(struct hca_qp *qp, const struct hca_wqe *w);
/*
 * The local memory of the WQE at sq_ci (hca_sgl_get()): 0, -EAGAIN (an ODP
 * page faulting in: the WQE waits, hca_odp_req_wait()) or the error the
 * WQE fails with.
 */
int hca_sq_local_get(struct hca_qp *qp, struct hca_wqe *w);
void hca_sgl_read(const struct hca_sgl *src, u64 soff, u8 *dst, u32 len);
void hca_sq_drained_check(struct hca_qp *qp);

static inline void hca_sgl_put(struct hca_sgl *sgl)
{
	unsigned int i;

	for (i = 0; i < sgl->n; i++) {
		struct hca_mkey *mkey = sgl->sge[i].mkey;

		if (mkey) {
			if (unlikely(sgl->sge[i].odp_begun)) {
				hca_odp_end(mkey);
				sgl->sge[i].odp_begun = false;
			}
			hca_mkey_put(mkey);
			sgl->sge[i].mkey = NULL;
		}
	}
}

/*
 * Take the MKeys of the elements covering the first @len bytes of @sgl,
 * each for [va, va + bytes used) with @access in @pdn, looked up through
 * @cache (the QP side's). An ODP MKey must have the pages of bytes @from
 * to @len (what the caller moves now: a packet's share of a message), or
 * -EAGAIN (@sgl->miss; the caller raises the fault: hca_odp_fault()). On
 * failure none is held and the error of hca_mkey_get() is returned.
 */
static inline int hca_sgl_get_from(struct hca *hca, u32 pdn, u32 access,
				   struct hca_sgl *sgl, u64 from, u64 len,
				   struct hca_mkey_cache *cache)
{
	unsigned int i;
	u64 pos = 0;

	for (i = 0; i < sgl->n && len; i++) {
		struct hca_sge *sge = &sgl->sge[i];
		u32 n = min_t(u64, len, sge->len);
		struct hca_mkey *mkey;

		mkey = hca_mkey_get_cached(hca, cache, sge->key, pdn, access,
					    sge->va, n);
		if (IS_ERR(mkey)) {
			hca_sgl_put(sgl);
			return PTR_ERR(mkey);
		}
		sge->odp_begun = false;
		if (unlikely(mkey->odp) && pos + n > from) {
			u64 skip = from > pos ? from - pos : 0;

			if (hca_odp_begin(mkey, sge->va + skip, n - skip,
					  access, &sgl->miss)) {
				hca_mkey_put(mkey);
				hca_sgl_put(sgl);
				return -EAGAIN;
			}
			sge->odp_begun = true;
		}
		sge->mkey = mkey;
		len -= n;
		pos += n;
	}
	return 0;
}

static inline int hca_sgl_get(struct hca *hca, u32 pdn, u32 access,
			      struct hca_sgl *sgl, u64 len,
			      struct hca_mkey_cache *cache)
{
	return hca_sgl_get_from(hca, pdn, access, sgl, 0, len, cache);
}

/*
 * The PD a responder checks rkeys against: its own, or for an XRC target
 * the PD of the SRQ the request names (set while it handles it).
 */
static inline u32 hca_resp_pdn(struct hca_qp *qp)
{
	return unlikely(qp->type->xrc_tgt) ? qp->srq->pdn : qp->pdn;
}

/*
 * The responder's rkey region (@sgl's one element) for QP @qp: what
 * hca_sgl_get() takes, and a type 2 window answers its own QP only.
 */
static inline int hca_sgl_get_remote(struct hca_qp *qp, u32 access,
				     struct hca_sgl *sgl, u64 len)
{
	int err = hca_sgl_get(qp->hca, hca_resp_pdn(qp), access, sgl, len,
			      &qp->eng->keys);

	if (!err && unlikely(!hca_mkey_qp_ok(sgl->sge[0].mkey, qp->qpn))) {
		hca_sgl_put(sgl);
		return -EACCES;
	}
	return err;
}

/*
 * mkey_odp.c: the fault behind hca_sgl_get()'s -EAGAIN. hca_odp_fault():
 * -EAGAIN (raised, or still pending) or -EFAULT (the driver could not map
 * what the last fault asked for). hca_odp_req_wait(): the same for the
 * requester's WQE at sq_ci, which then waits (HCA_WAIT_PAGE_FAULT) until
 * PAGE_FAULT_RESUME sets HCA_ODP_REQ_RESUMED.
 */
enum {
	HCA_ODP_REQ_PENDING,
	HCA_ODP_REQ_RESUMED,
	HCA_ODP_REQ_ERR,
	HCA_ODP_RESP_PENDING,
	HCA_ODP_RESP_ERR,
};

/* A waiting requester looks at its pages again after this. */
#define HCA_ODP_REFAULT_NS	(20 * NSEC_PER_MSEC)

int hca_odp_fault(struct hca_qp *qp, bool responder,
		  const struct hca_odp_miss *miss);
int hca_odp_req_wait(struct hca_qp *qp, const struct hca_odp_miss *miss);
/*
 * A wire requester, whose wait timer keeps its ACK timeout, stalls instead:
 * it sends nothing (hca_odp_stalled()) until PAGE_FAULT_RESUME or the
 * fault's refault time; hca_odp_unstall() once its pages are there.
 */
int hca_odp_req_stall(struct hca_qp *qp, const struct hca_odp_miss *miss);

static inline bool hca_odp_stalled(const struct hca_engine_qp *e)
{
	s64 until = READ_ONCE(e->odp_stall_until);

	return unlikely(until) &&
	       !test_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags) &&
	       ktime_get_ns() < until;
}

static inline void hca_odp_unstall(struct hca_engine_qp *e)
{
	if (unlikely(e->odp_stall_until))
		WRITE_ONCE(e->odp_stall_until, 0);
}

/* Is the requester's wait over (its deadline passed, or its fault resumed)? */
static inline bool hca_wait_over(const struct hca_engine_qp *e, s64 now)
{
	return now >= READ_ONCE(e->wait_until) ||
	       (e->wait_kind == HCA_WAIT_PAGE_FAULT &&
		test_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags));
}

/* responder.c */
void hca_resp_done(struct hca_exec_ctx *ctx);
void hca_resp_handle(struct hca_exec_ctx *ctx, struct hca_qp *req,
		      struct hca_qp *resp, struct hca_answer *ans);
/*
 * rq_src.c, the RQ source of every responder, under the QP's resp_lock
 * (hca_rq_flush() takes it): is no receive WQE there (an SRQ's is taken
 * for the QP now); the WQE into @sgl (-EINVAL: malformed); the index its
 * CQE names; the PD of its lkeys; consumed (its CQE written); reset;
 * anything to flush in ERR, the flush.
 */
bool hca_rq_flush(struct hca_qp *qp, unsigned int budget);
u16 hca_rq_posted(struct hca_qp *qp);
bool hca_rq_is_empty(struct hca_qp *qp);
int hca_rq_fetch(struct hca_exec_ctx *ctx, struct hca_qp *qp,
		 struct hca_sgl *sgl);
u16 hca_rq_wqe_counter(struct hca_qp *qp);
u32 hca_rq_pdn(struct hca_qp *qp);
int hca_rq_cqe_write(struct hca_qp *qp, struct softhca_cqe *cqe);
void hca_rq_consume(struct hca_qp *qp);
void hca_rq_reset(struct hca_qp *qp);
bool hca_rq_flush_pending(struct hca_qp *qp);
/*
 * For the datagram receive stage (ud.c): @len bytes of @src into the
 * acquired @dst from its byte @doff on; a responder CQE written and the
 * receive WQE consumed; the receive WQE failed with @syndrome.
 */
void hca_sgl_copy_at(struct hca_exec_ctx *ctx, struct hca_sgl *dst, u64 doff,
		     const struct hca_sgl *src, u64 len);
void hca_resp_cqe_put(struct hca_exec_ctx *ctx, struct hca_qp *resp,
		      struct softhca_cqe *cqe);
void hca_resp_cqe_err(struct hca_exec_ctx *ctx, struct hca_qp *resp,
		      u8 syndrome);

/* ud.c: the datagram transport */
enum hca_step hca_ud_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			  int err);
void hca_ud_receive(struct hca_exec_ctx *ctx, const struct hca_datagram *dg,
		    struct hca_qp *qp);

/* fabric.c: a datagram across the local fabric, to each QP it reaches */
void hca_fabric_send_datagram(struct hca_exec_ctx *ctx,
			      const struct hca_datagram *dg,
			      struct hca_route *rt);

/* cqe.c */
void hca_cqe_init_req(struct softhca_cqe *cqe, struct hca_qp *qp,
		       const struct hca_wqe *wqe, u32 byte_cnt);
void hca_cqe_init_err(struct softhca_cqe *cqe, u64 *cnt, u8 cqe_opcode,
		       u32 qpn, u8 wqe_opcode, u16 wqe_counter, u8 syndrome);

/* Is @qp able to receive (RTR, RTS, SQD, SQE)? */
static inline bool hca_qp_state_receives(enum hca_qp_state s)
{
	return s >= HCA_QPS_RTR && s <= HCA_QPS_SQE;
}

static inline u16 hca_sq_posted(struct hca_qp *qp)
{
	return be32_to_cpu(READ_ONCE(qp->dbr->snd_counter)) &
	       SOFTHCA_WQ_DBR_MASK;
}

#endif /* HCA_HCA_ENGINE_H */
