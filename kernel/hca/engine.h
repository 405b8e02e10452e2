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
 * shca_engine_srcu, which shca_engine_qp_fini()/hca_fini() wait for.
 */
#ifndef SHCA_HCA_ENGINE_H
#define SHCA_HCA_ENGINE_H

#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/srcu.h>

#include "model.h"

#define SHCA_ENG_WQE_MAX	512	/* >= caps max_wqe_size */
#define SHCA_ENG_RWQE_MAX	1024	/* largest RQ stride the engine takes */
#define SHCA_ENG_SGE_MAX	32	/* >= max_send_sge, max_recv_sge, max_sge_rd */

extern struct srcu_struct shca_engine_srcu;

#define SHCA_SPARE_CTX		8	/* power of two */

/* Engine state of one HCA (hca->eng). */
struct shca_engine_hca {
	struct shca_hca *hca;
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
		struct shca_exec_ctx *ctx;
	} ____cacheline_aligned_in_smp spare[SHCA_SPARE_CTX];
};

enum shca_wait_kind {
	SHCA_WAIT_NONE,
	SHCA_WAIT_RNR,		/* RNR NAK: retry after the responder's timer */
	SHCA_WAIT_TRANSPORT,	/* no answer: retry after the local ACK timeout */
};

/* What the requester needs of its QP's attributes for every WQE. */
struct shca_path {
	u8 dgid[16];
	u32 dest_qpn;
	u8 timeout;
	u8 retry_cnt;
	u8 rnr_retry;
};

/* ... and the responder of its own. */
struct shca_resp_attrs {
	u32 dest_qpn;
	u32 access_flags;
	u8 min_rnr_timer;
	u8 max_dest_rd_atomic;		/* 0: no READ or atomic taken */
};

/* Engine state of one QP (qp->eng). */
struct shca_engine_qp {
	struct shca_hca_qp *qp;
	struct mutex exec_lock;		/* the send queue's one executor */
	/* Retry state of the WQE at sq_ci, under exec_lock. */
	u8 wait_kind;		/* enum shca_wait_kind */
	u8 rnr_left;
	u8 retry_left;
	s64 wait_until;		/* ktime in ns; read locklessly by the pollers */
	/* Copies of the QP's attributes at qp->attrs_gen (0: none yet). */
	u32 path_gen;			/* under exec_lock */
	struct shca_path path;
	struct shca_route route;	/* to the responder, under exec_lock */
	struct shca_mkey_cache lkeys;	/* the local SGEs', under exec_lock */

	/*
	 * The receive side: run by the executor of the peer's send queue,
	 * often on another CPU than this QP's own executor, so not on the
	 * cache lines the latter writes.
	 */
	struct mutex resp_lock ____cacheline_aligned_in_smp;
	u32 resp_gen;			/* under resp_lock */
	struct shca_resp_attrs resp;
	struct shca_mkey_cache keys;	/* RQ lkeys and rkeys, under resp_lock */
	bool comm_est;			/* COMM_EST raised; under resp_lock */
};

/* One scatter/gather element, key checked once the MKey is held. */
struct shca_sge {
	struct shca_hca_mkey *mkey;	/* NULL until acquired */
	u32 key;
	u32 len;
	u64 va;
};

struct shca_sgl {
	unsigned int n;
	u64 len;			/* bytes of every element together */
	const u8 *inl;			/* inline payload (in the WQE copy) */
	struct shca_sge sge[SHCA_ENG_SGE_MAX];
};

/* A send WQE after copying and validation: the engine uses only this. */
struct shca_wqe {
	u16 idx;			/* its SQ counter: the CQE's wqe_counter */
	u8 opcode;			/* SOFTHCA_OPCODE_* */
	u8 fm_ce_se;
	__be32 imm;
	u32 ds;
	u32 nbb;			/* WQEBBs it occupies */
	u64 raddr;
	u32 rkey;
	u64 swap_add;
	u64 compare;
	struct shca_sgl local;		/* SEND/WRITE: source; READ/atomic: dest */
};

/* What the responder answered a request. */
enum shca_answer_kind {
	SHCA_ANS_ACK,		/* done (READ/atomic data already placed) */
	SHCA_ANS_RNR,		/* receiver not ready: no RQ WQE */
	SHCA_ANS_NONE,		/* nobody answered: the requester times out */
	SHCA_ANS_NAK,		/* error: @syndrome for the requester */
};

struct shca_answer {
	enum shca_answer_kind kind;
	u8 syndrome;		/* SOFTHCA_CQE_SYNDROME_* (NAK) */
	u8 rnr_timer;		/* the responder's min_rnr_timer (RNR) */
};

/* Everything one executor needs; one per engine thread or wake-up call. */
struct shca_exec_ctx {
	bool engine;			/* the engine thread, else a wake-up caller */
	struct shca_hca_qp *deferred;	/* a QP an error moved to ERR (ref held) */
	struct shca_wqe wqe;
	struct shca_sgl remote;		/* the responder's list (RQ WQE, or rkey) */
	u8 wqe_buf[SHCA_ENG_WQE_MAX] __aligned(16);
	u8 rwqe_buf[SHCA_ENG_RWQE_MAX] __aligned(16);
};

/* engine.c */
bool shca_qp_set_err(struct shca_hca_qp *qp);
void shca_qp_fatal(struct shca_hca_qp *qp);
void shca_engine_defer(struct shca_exec_ctx *ctx, struct shca_hca_qp *qp);
void shca_engine_kick(void);
void shca_engine_timer_changed(void);

/* requester.c */
enum shca_step {
	SHCA_STEP_DONE,		/* the WQE completed (or failed): sq_ci moved */
	SHCA_STEP_WAIT,		/* waiting for a retry deadline */
	SHCA_STEP_STOP,		/* nothing executable now */
};

enum shca_step shca_sq_step(struct shca_exec_ctx *ctx, struct shca_hca_qp *qp,
			    u16 posted, s64 now);
void shca_sq_flush(struct shca_hca_qp *qp, u16 posted, unsigned int budget);
void shca_wait_clear(struct shca_hca_qp *qp);
void shca_sq_drained_check(struct shca_hca_qp *qp);

static inline void shca_sgl_put(struct shca_sgl *sgl)
{
	unsigned int i;

	for (i = 0; i < sgl->n; i++) {
		if (sgl->sge[i].mkey) {
			shca_mkey_put(sgl->sge[i].mkey);
			sgl->sge[i].mkey = NULL;
		}
	}
}

/*
 * Take the MKeys of the elements covering the first @len bytes of @sgl,
 * each for [va, va + bytes used) with @access in @pdn, looked up through
 * @cache (the QP side's). On failure none is held and the error of
 * shca_mkey_get() is returned.
 */
static inline int shca_sgl_get(struct shca_hca *hca, u32 pdn, u32 access,
			       struct shca_sgl *sgl, u64 len,
			       struct shca_mkey_cache *cache)
{
	unsigned int i;

	for (i = 0; i < sgl->n && len; i++) {
		struct shca_sge *sge = &sgl->sge[i];
		u32 n = min_t(u64, len, sge->len);
		struct shca_hca_mkey *mkey;

		mkey = shca_mkey_get_cached(hca, cache, sge->key, pdn, access,
					    sge->va, n);
		if (IS_ERR(mkey)) {
			shca_sgl_put(sgl);
			return PTR_ERR(mkey);
		}
		sge->mkey = mkey;
		len -= n;
	}
	return 0;
}

/* responder.c */
void shca_resp_handle(struct shca_exec_ctx *ctx, struct shca_hca_qp *req,
		      struct shca_hca_qp *resp, struct shca_answer *ans);
void shca_rq_flush(struct shca_hca_qp *qp, unsigned int budget);
u16 shca_rq_posted(struct shca_hca_qp *qp);

/* cqe.c */
void shca_cqe_init_req(struct softhca_cqe *cqe, struct shca_hca_qp *qp,
		       const struct shca_wqe *wqe, u32 byte_cnt);
void shca_cqe_init_err(struct softhca_cqe *cqe, u8 cqe_opcode, u32 qpn,
		       u8 wqe_opcode, u16 wqe_counter, u8 syndrome);

/* Is @qp able to receive (RTR, RTS, SQD, SQE)? */
static inline bool shca_qp_state_receives(enum shca_qp_state s)
{
	return s >= SHCA_QPS_RTR && s <= SHCA_QPS_SQE;
}

static inline u16 shca_sq_posted(struct shca_hca_qp *qp)
{
	return be32_to_cpu(READ_ONCE(qp->dbr->snd_counter)) &
	       SOFTHCA_WQ_DBR_MASK;
}

#endif /* SHCA_HCA_ENGINE_H */
