/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: the engine's private declarations, shared by
 * engine.c (threads, doorbells, wake-up, QP execution loop and flush),
 * requester.c (copy, validate and execute one send WQE), responder.c (the
 * receiving QP's side) and cqe.c (the CQE writer). See
 * Documentation/engine.md.
 *
 * Locks, outermost first:
 *   eng->exec_lock (mutex, per QP)  one executor of a QP's send queue at a
 *                                   time: sq_ci, the retry state, flushes;
 *                                   only ever trylocked by executors
 *   eng->resp_lock (mutex, per QP)  the receive side of a QP: rq_ci, RQ WQE
 *                                   consumption, RQ flush. Taken with some
 *                                   QP's exec_lock held, never the reverse;
 *                                   never two at once
 *   qp->lock, cq->lock (spinlocks)  state changes, the CQ producer
 * Everything runs in process context (the engine kthread, ioctl callers of
 * ENGINE_WAKE, firmware commands), always inside an SRCU read section of
 * hca_engine_srcu, which hca_engine_qp_fini()/hca_fini() wait for.
 */
#ifndef HCA_HCA_ENGINE_H
#define HCA_HCA_ENGINE_H

#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/srcu.h>

#include "model.h"

#define HCA_ENG_WQE_MAX	512	/* >= caps max_wqe_size */
#define HCA_ENG_RWQE_MAX	1024	/* largest RQ stride the engine takes */
#define HCA_ENG_SGE_MAX	32	/* >= max_send_sge, max_recv_sge, max_sge_rd */

extern struct srcu_struct hca_engine_srcu;

#define HCA_SPARE_CTX		8	/* power of two */

/* Engine state of one HCA (hca->eng). */
struct hca_engine_dev {
	struct hca *hca;
	struct softhca_engine_page *page;	/* kernel address of engine_page */
	struct list_head node;			/* on the engine's HCA list (SRCU) */
	spinlock_t qps_lock;			/* writers of @qps and @cqs */
	struct list_head qps;			/* every QP, via qp->eng_node (SRCU) */
	struct list_head cqs;			/* every CQ, via cq->eng_node (SRCU) */
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

enum hca_wait_kind {
	HCA_WAIT_NONE,
	HCA_WAIT_RNR,		/* RNR NAK: retry after the responder's timer */
	HCA_WAIT_TRANSPORT,	/* no answer: retry after the local ACK timeout */
};

/* What the requester needs of its QP's attributes for every WQE. */
struct hca_path {
	u8 dgid[16];
	u32 dest_qpn;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
};

/* ... and the responder of its own. */
struct hca_resp_attrs {
	u32 dest_qpn;
	u32 access_flags;
	u8 min_rnr_timer;
	u8 max_dest_rd_atomic;		/* 0: no READ or atomic taken */
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
	/* Copies of the QP's attributes at qp->attrs_gen (0: none yet). */
	u32 path_gen;			/* under exec_lock */
	struct hca_path path;
	struct hca_route route;	/* to the responder, under exec_lock */
	struct hca_mkey_cache lkeys;	/* the local SGEs', under exec_lock */
	u64 req_cnt[HCA_QCNT_NUM];	/* as requester, under exec_lock */

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

/* READ and atomics bring data back to the requester; the rest carry it out. */
static __always_inline bool hca_opcode_fetches(u8 opcode)
{
	return opcode == SOFTHCA_OPCODE_RDMA_READ ||
	       opcode == SOFTHCA_OPCODE_ATOMIC_CS ||
	       opcode == SOFTHCA_OPCODE_ATOMIC_FA;
}

/* One scatter/gather element, key checked once the MKey is held. */
struct hca_sge {
	struct hca_mkey *mkey;	/* NULL until acquired */
	u32 key;
	u32 len;
	u64 va;
};

struct hca_sgl {
	unsigned int n;
	u64 len;			/* bytes of every element together */
	const u8 *inl;			/* inline payload (in the WQE copy) */
	struct hca_sge sge[HCA_ENG_SGE_MAX];
};

/* A send WQE after copying and validation: the engine uses only this. */
struct hca_wqe {
	u16 idx;			/* its SQ counter: the CQE's wqe_counter */
	u8 opcode;			/* SOFTHCA_OPCODE_* */
	u8 fm_ce_se;
	__be32 imm;
	u32 ds;
	u32 wqebbs;			/* WQEBBs it occupies */
	u64 raddr;
	u32 rkey;
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

/* Everything one executor needs; one per engine thread or wake-up call. */
struct hca_exec_ctx {
	bool is_thread;		/* the engine thread, else a wake-up caller */
	struct hca_qp *deferred;	/* a QP an error moved to ERR (ref held) */
	struct hca_wqe wqe;
	struct hca_sgl remote;		/* the responder's list (RQ WQE, or rkey) */
	u8 wqe_buf[HCA_ENG_WQE_MAX] __aligned(16);
	u8 rwqe_buf[HCA_ENG_RWQE_MAX] __aligned(16);
};

/* engine.c */
bool hca_qp_set_err(struct hca_qp *qp);
void hca_qp_fatal(struct hca_qp *qp);
void hca_engine_defer(struct hca_exec_ctx *ctx, struct hca_qp *qp);
void hca_engine_thread_wake(void);
void hca_engine_timer_changed(void);
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
void hca_wait_clear(struct hca_qp *qp);
void hca_sq_drained_check(struct hca_qp *qp);

static inline void hca_sgl_put(struct hca_sgl *sgl)
{
	unsigned int i;

	for (i = 0; i < sgl->n; i++) {
		if (sgl->sge[i].mkey) {
			hca_mkey_put(sgl->sge[i].mkey);
			sgl->sge[i].mkey = NULL;
		}
	}
}

/*
 * Take the MKeys of the elements covering the first @len bytes of @sgl,
 * each for [va, va + bytes used) with @access in @pdn, looked up through
 * @cache (the QP side's). On failure none is held and the error of
 * hca_mkey_get() is returned.
 */
static inline int hca_sgl_get(struct hca *hca, u32 pdn, u32 access,
			       struct hca_sgl *sgl, u64 len,
			       struct hca_mkey_cache *cache)
{
	unsigned int i;

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
		sge->mkey = mkey;
		len -= n;
	}
	return 0;
}

/* responder.c */
void hca_resp_handle(struct hca_exec_ctx *ctx, struct hca_qp *req,
		      struct hca_qp *resp, struct hca_answer *ans);
void hca_rq_flush(struct hca_qp *qp, unsigned int budget);
u16 hca_rq_posted(struct hca_qp *qp);

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
