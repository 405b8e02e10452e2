/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * softhca.h - the provider's objects and the ops each file implements.
 *
 * Files: softhca.c (registration, device, context), query.c (device and
 * port queries, the clock), pd.c, mr.c, cq.c (create/destroy/resize/modify),
 * arm.c (req_notify_cq, cq_event), poll.c (poll_cq, CQ cleaning), cq_ex.c
 * (the extended poll API), qp.c (create, modify, query,
 * destroy, the QP table), ah.c (address handles, multicast attach), send.c
 * (post_send and the doorbell; send.h its
 * stages), wr.c (the extended post-send API), recv.c (post_recv), engine.c
 * (the wake-up call). mmio.h holds the barriers and doorbell stores,
 * provider-abi.h the libibverbs private interface; cqe.c and ring.h are
 * the pure helpers of the queue formats around the WQE builder, CQE
 * decoder and opcode table the kernel shares (<rdma/softhca-wqe.h>,
 * <rdma/softhca-cqe.h>, <rdma/softhca-opcodes.h>).
 */
#ifndef SOFTHCA_H
#define SOFTHCA_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-abi.h>
#include <rdma/softhca-cqe.h>
#include <rdma/softhca-queue.h>

#include "mmio.h"
#include "provider-abi.h"
#include "ring.h"

#define softhca_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct softhca_device {
	struct verbs_device vdev;
};

/*
 * A spinlock that can be switched off: SOFTHCA_SINGLE_THREADED=1 in the
 * environment promises that the application calls the data path of a
 * context from one thread at a time, and the provider then takes no locks
 * at all (as MLX5_SINGLE_THREADED does for mlx5).
 *
 * Inline test-and-test-and-set rather than pthread_spin_lock(): the data
 * path takes one per post and per poll, and the calls through the PLT
 * were a tenth of a post's cost in the TCG test VM.
 */
struct softhca_lock {
	int held;
	bool need_lock;
};

static inline void softhca_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline void softhca_spin_lock(int *held)
{
	while (__atomic_exchange_n(held, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(held, __ATOMIC_RELAXED))
			softhca_cpu_relax();
}

static inline void softhca_spin_unlock(int *held)
{
	__atomic_store_n(held, 0, __ATOMIC_RELEASE);
}

static inline void softhca_lock(struct softhca_lock *l)
{
	if (l->need_lock)
		softhca_spin_lock(&l->held);
}

static inline void softhca_unlock(struct softhca_lock *l)
{
	if (l->need_lock)
		softhca_spin_unlock(&l->held);
}

int softhca_lock_init(struct softhca_lock *l, bool need_lock);
void softhca_lock_destroy(struct softhca_lock *l);

/*
 * A number table (table.c): a 24-bit number -> object, two levels of 4096
 * entries, for poll_cq: the QPs of a context by QPN, its XRC SRQs by SRQ
 * number. Second levels are allocated under the context's
 * qp_table_mutex and published with a release store; lookups take no
 * lock. They are freed only with the context.
 */
#define SOFTHCA_QP_TABLE_SHIFT	12
#define SOFTHCA_QP_TABLE_SIZE	(1U << SOFTHCA_QP_TABLE_SHIFT)
#define SOFTHCA_QP_TABLE_MASK	(SOFTHCA_QP_TABLE_SIZE - 1)

struct softhca_num_table {
	void **l1[SOFTHCA_QP_TABLE_SIZE];
};

struct softhca_qp;

struct softhca_context {
	struct verbs_context vctx;

	/* This context's UAR page: CQ doorbell and BlueFlame buffers
	 * (softhca-queue.h), followed in the same mapping by its doorbell
	 * area (db), for the context's lifetime. */
	void *uar;
	size_t uar_size;
	struct softhca_db_area *db;

	/* The device page, read-only; its live word says whether the device
	 * is still there (softhca_device_gone()). NULL if the kernel offered
	 * none. */
	const struct softhca_device_page *dev_page;
	const uint32_t *dev_live;

	/* The wake fd (engine.c): SOFTHCA_WAKE_FD_NONE until the first
	 * wake-up call opens it, SOFTHCA_WAKE_FD_NOT_AVAILABLE if the kernel
	 * refused; opened under qp_table_mutex, read without a lock. */
	int wake_fd;

	/* BlueFlame: the next of the two buffers, and its lock, needed only
	 * once two QPs of this context share the UAR (seed-map.md §3.1 step 3.5). */
	struct softhca_lock bf_lock;
	uint32_t bf_offset;

	/* QPN -> QP and SRQ number -> XRC SRQ for poll_cq, changed under
	 * the mutex. */
	pthread_mutex_t qp_table_mutex;
	struct softhca_num_table qp_table;
	struct softhca_num_table xsrq_table;
	uint32_t qp_count;		/* under qp_table_mutex */

	/* Environment, read once at open. */
	bool single_threaded;		/* SOFTHCA_SINGLE_THREADED=1 */
	bool prefer_bf;			/* SOFTHCA_POST_SEND_PREFER_BF=1 */
	bool wqe_sig;			/* SOFTHCA_WQE_SIGNATURE=1 */

	/* From softhca_alloc_ucontext_resp. */
	uint32_t model_rev;
	uint32_t page_size;
	uint32_t wqebb_size;
	uint32_t cqe_size;
	uint32_t bf_buf_size;
	uint32_t max_sq_wqebbs;
	uint32_t max_rq_wqes;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	uint32_t max_cqe;
};

/*
 * A protection domain, or a parent domain (td.c) standing for one
 * (@protection) with a thread domain (@td) and the caller's pd_context;
 * @pdn is the protection domain's either way. @users: parent domains on a
 * PD, QPs on a parent domain.
 */
struct softhca_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
	struct softhca_pd *protection;	/* parent domains only */
	struct softhca_td *td;		/* parent domains only, or NULL */
	void *pd_context;
	unsigned int users;
};

/* A thread domain: @users parent domains hold it. */
struct softhca_td {
	struct ibv_td ibv_td;
	unsigned int users;
};

/*
 * An address handle: the AV every datagram WR using it copies into its
 * datagram segment (with the WR's remote QPN and Q_Key), and its PD.
 */
struct softhca_ah {
	struct ibv_ah ibv_ah;
	struct softhca_av av;
};

/* A QP's or CQ's doorbell slot in the context's doorbell area. */
struct softhca_db_hint {
	uint8_t *slot;
	uint8_t *group;
	struct softhca_db_thread *thread;
};

struct softhca_cq {
	union {				/* ibv_create_cq_ex() gives the cq_ex */
		struct ibv_cq ibv_cq;
		struct verbs_cq vcq;
	};
	struct softhca_lock lock;
	uint32_t cqn;
	uint32_t cqe_cnt;		/* power of two */
	struct softhca_cqe *ring;	/* at the start of the mapping */
	struct softhca_cq_dbr *dbr;
	void *map;
	size_t map_size;
	uint32_t cons_index;		/* under lock; read by req_notify */
	uint32_t arm_sn;		/* cq_event increments it */
	struct softhca_qp *last_qp;	/* lookup cache, under lock */
	struct softhca_db_hint db;	/* rung by an arm finding CQEs */
	/* cq_ex.c: the batch between start_poll and end_poll, under lock */
	struct softhca_pd *parent;	/* create_cq_ex's parent domain, or NULL */
	uint32_t ex_ci;			/* consumer index of the batch */
	struct softhca_wc ex_wc;	/* the current completion, decoded */
};

/*
 * Send queue. Counters are free-running: cur_post in WQEBBs, the WR
 * record's head and tail in WRs; wrs.wrid[] and wrs.wqe_head[] are indexed
 * by the WQEBB slot of a WQE's control segment (<rdma/softhca-wqe.h>).
 */
struct softhca_sq {
	struct softhca_lock lock;
	struct softhca_sq_fmt fmt;	/* ring, QPN, granted WQE limits */
	uint32_t wqebb_cnt;		/* power of two */
	uint32_t max_post;		/* WRs the SQ holds */
	uint32_t max_gs;		/* max_send_sge granted */
	/* RTS reached since the last RESET: sends may be posted (IB C10-25, C10-29) */
	bool post_ok;
	uint32_t cur_post;		/* under lock */
	/* head under lock; tail written by poll_cq under the CQ lock */
	struct softhca_wq_wrs wrs;
};

/* Receive queue: the WR record counts WQEs, slot = head & (wqe_cnt - 1). */
struct softhca_rq {
	struct softhca_lock lock;
	uint8_t *buf;
	uint32_t wqe_cnt;		/* power of two, or 0: no RQ */
	uint32_t wqe_shift;		/* log2 of the stride */
	uint32_t max_gs;		/* data segments per WQE */
	/* INIT reached since the last RESET: receives may be posted (IB C10-22) */
	bool post_ok;
	/* head under lock; tail written by poll_cq under the CQ lock */
	struct softhca_wq_wrs wrs;
};

/*
 * A shared receive queue (srq.c): the mapping (ring + DBR) and the free
 * list the shared header keeps (softhca_srq_wrs, <rdma/softhca-wqe.h>);
 * @lock serialises posters and the CQ pollers that retire WQEs.
 */
struct softhca_srq {
	union {				/* ibv_create_srq_ex() needs verbs_srq */
		struct ibv_srq ibv_srq;
		struct verbs_srq vsrq;
	};
	struct softhca_lock lock;
	uint32_t srqn;
	uint32_t max_gs;
	struct softhca_srq_dbr *dbr;
	void *map;
	size_t map_size;
	struct softhca_srq_wrs wrs;
};

struct softhca_wr_batch;

struct softhca_qp {
	struct verbs_qp vqp;
	uint32_t qpn;
	bool sig_all;			/* sq_sig_all */
	bool wqe_sig;			/* WQE signatures granted */
	/* An XRC target (created or opened): no queues, no mapping. */
	bool xrc_tgt;
	struct softhca_qp_dbr *dbr;
	struct softhca_db_hint db;	/* rung after every SQ doorbell */
	void *map;
	size_t map_size;
	struct softhca_sq sq;
	struct softhca_rq rq;
	/* The extended post-send API (wr.c), if asked for at create. */
	struct softhca_wr_batch *wr;
};

static inline struct softhca_device *to_sdev(struct ibv_device *ibdev)
{
	return softhca_container_of(ibdev, struct softhca_device, vdev.device);
}

static inline struct softhca_context *to_sctx(struct ibv_context *ibctx)
{
	return softhca_container_of(ibctx, struct softhca_context,
				    vctx.context);
}

static inline struct softhca_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return softhca_container_of(ibsrq, struct softhca_srq, ibv_srq);
}

static inline struct softhca_pd *to_spd(struct ibv_pd *ibpd)
{
	return softhca_container_of(ibpd, struct softhca_pd, ibv_pd);
}

static inline struct softhca_td *to_std(struct ibv_td *ibtd)
{
	return softhca_container_of(ibtd, struct softhca_td, ibv_td);
}

/* A QP on a parent domain with a thread domain takes no queue locks. */
static inline bool softhca_pd_single_thread(struct ibv_pd *ibpd)
{
	return to_spd(ibpd)->td != NULL;
}

static inline struct softhca_ah *to_sah(struct ibv_ah *ibah)
{
	return softhca_container_of(ibah, struct softhca_ah, ibv_ah);
}

static inline struct softhca_cq *to_scq(struct ibv_cq *ibcq)
{
	return softhca_container_of(ibcq, struct softhca_cq, ibv_cq);
}

static inline struct softhca_qp *to_sqp(struct ibv_qp *ibqp)
{
	return softhca_container_of(ibqp, struct softhca_qp, vqp.qp);
}

/* The object of number @n, or NULL. No lock: see softhca_num_table. */
static inline void *softhca_table_find(struct softhca_num_table *tbl,
				       uint32_t n)
{
	void **t;

	n &= SOFTHCA_24BIT_MASK;
	t = __atomic_load_n(&tbl->l1[n >> SOFTHCA_QP_TABLE_SHIFT],
			    __ATOMIC_ACQUIRE);
	if (!t)
		return NULL;
	return __atomic_load_n(&t[n & SOFTHCA_QP_TABLE_MASK],
			       __ATOMIC_ACQUIRE);
}

/* table.c, under the context's qp_table_mutex: 0, ENOMEM or EEXIST. */
int softhca_table_insert(struct softhca_num_table *tbl, uint32_t n,
			 void *obj);
void softhca_table_remove(struct softhca_num_table *tbl, uint32_t n,
			  void *obj);
void softhca_table_free(struct softhca_num_table *tbl);

/* The QP with this QPN, or NULL. */
static inline struct softhca_qp *softhca_find_qp(struct softhca_context *ctx,
						 uint32_t qpn)
{
	return softhca_table_find(&ctx->qp_table, qpn);
}

/* The XRC SRQ of number @srqn whose CQ is @cq, or NULL (poll.c). */
static inline struct softhca_srq *softhca_find_xsrq(struct softhca_cq *cq,
						    uint32_t srqn)
{
	struct softhca_srq *srq =
		softhca_table_find(&to_sctx(cq->ibv_cq.context)->xsrq_table,
				   srqn);

	return srq && srq->vsrq.cq == &cq->ibv_cq ? srq : NULL;
}

/* engine.c: the wake-up call. Returns 0 or an errno value. */
#define SOFTHCA_WAKE_FD_NONE		(-1)
#define SOFTHCA_WAKE_FD_NOT_AVAILABLE	(-2)
void softhca_wake_fd_close(struct softhca_context *ctx);
int softhca_wakeup_call(struct softhca_context *ctx);
/* The header of a driver method call on UVERBS_OBJECT_DEVICE. */
struct ib_uverbs_ioctl_hdr;
void softhca_method_hdr(struct ib_uverbs_ioctl_hdr *hdr, uint16_t method,
			uint16_t num_attrs);

/* The hint of doorbell slot @slot served by engine thread @thread, or
 * EPROTO if the kernel named one outside the area. */
static inline int softhca_db_hint_init(struct softhca_context *ctx,
				       struct softhca_db_hint *h,
				       uint32_t slot, uint32_t thread)
{
	if (slot >= SOFTHCA_DB_SLOTS || thread >= SOFTHCA_DB_MAX_THREADS)
		return EPROTO;
	h->slot = &ctx->db->slot[slot];
	h->group = &ctx->db->group[slot >> SOFTHCA_DB_GROUP_SHIFT];
	h->thread = &ctx->db->thread[thread];
	return 0;
}

/*
 * After a doorbell record store (design.md §5, §10): the hint that names the
 * slot (slot, group, thread, each a release store after the record), a full
 * barrier between it and the NEED_WAKEUP load, then one wake-up call only
 * if the slot's engine thread does not watch this area. The engine does
 * the mirror image before it lets the area go.
 */
static inline void softhca_db_hint_set(const struct softhca_db_hint *h)
{
	__atomic_store_n(h->slot, 1, __ATOMIC_RELEASE);
	__atomic_store_n(h->group, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&h->thread->pending, 1, __ATOMIC_RELEASE);
}

static inline void softhca_db_ring(struct softhca_context *ctx,
				   const struct softhca_db_hint *h)
{
	softhca_db_hint_set(h);
	/* The hint before the flag load (design.md §5: both barriers). */
	udma_full_barrier();
	if (__atomic_load_n(&h->thread->flags, __ATOMIC_RELAXED) &
	    SOFTHCA_ENGINE_NEED_WAKEUP)
		softhca_wakeup_call(ctx);
}

/*
 * Is the device gone (disassociated: removed, or its module unloaded)?
 * Then the kernel has replaced our mapping of the device page with the
 * zero page, where the live word reads 0. No system call.
 */
static inline bool softhca_device_gone(const struct softhca_context *ctx)
{
	return ctx->dev_live &&
	       __atomic_load_n(ctx->dev_live, __ATOMIC_RELAXED) !=
	       SOFTHCA_DEVICE_LIVE;
}

/* query.c */
int softhca_query_device_ex(struct ibv_context *ibctx,
			    const struct ibv_query_device_ex_input *input,
			    struct ibv_device_attr_ex *attr, size_t attr_size);
int softhca_query_port(struct ibv_context *ibctx, uint8_t port,
		       struct ibv_port_attr *attr);
int softhca_query_rt_values(struct ibv_context *ibctx,
			    struct ibv_values_ex *values);

/* pd.c */
struct ibv_pd *softhca_alloc_pd(struct ibv_context *ibctx);
int softhca_dealloc_pd(struct ibv_pd *ibpd);

/* td.c */
struct ibv_td *softhca_alloc_td(struct ibv_context *ibctx,
				struct ibv_td_init_attr *attr);
int softhca_dealloc_td(struct ibv_td *ibtd);
struct ibv_pd *
softhca_alloc_parent_domain(struct ibv_context *ibctx,
			    struct ibv_parent_domain_init_attr *attr);
int softhca_dealloc_parent_domain(struct softhca_pd *pd);

/* mr.c */
struct ibv_mr *softhca_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			      uint64_t hca_va, int access);
int softhca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		     void *addr, size_t length, int access);
int softhca_dereg_mr(struct verbs_mr *vmr);
int softhca_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);

/* mw.c */
struct ibv_mw *softhca_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);
int softhca_dealloc_mw(struct ibv_mw *mw);
int softhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *bind);

/* cq.c */
struct ibv_cq *softhca_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector);
struct ibv_cq_ex *softhca_create_cq_ex(struct ibv_context *ibctx,
				      struct ibv_cq_init_attr_ex *attr);
int softhca_destroy_cq(struct ibv_cq *ibcq);
int softhca_resize_cq(struct ibv_cq *ibcq, int cqe);
int softhca_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr);

/* arm.c */
int softhca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void softhca_cq_event(struct ibv_cq *ibcq);

/* poll.c */
int softhca_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
/*
 * Under the CQ lock: decode the next CQE from consumer index *ci into *w
 * (the shared decoder), moving *ci past it and past any CQE dropped on the
 * way. 0, or -1 when the ring holds no more. softhca_cq_commit() then
 * publishes the index (cons_index, set_ci).
 */
int softhca_cq_take(struct softhca_cq *cq, uint32_t *ci, struct softhca_wc *w);
void softhca_cq_commit(struct softhca_cq *cq, uint32_t ci);

/* cq_ex.c: the extended poll API of a CQ from create_cq_ex */
void softhca_cq_ex_set_ops(struct softhca_cq *cq, uint64_t wc_flags);
/* Drop every CQE of qpn not yet polled; forget cached QP pointers. Call
 * with the CQ lock held. */
void softhca_cq_clean_locked(struct softhca_cq *cq, uint32_t qpn,
			     struct softhca_srq *srq);

/* qp.c */
struct ibv_qp *softhca_create_qp(struct ibv_pd *ibpd,
				 struct ibv_qp_init_attr *attr);
struct ibv_qp *softhca_create_qp_ex(struct ibv_context *ibctx,
				    struct ibv_qp_init_attr_ex *attr);
int softhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask);
int softhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr);
int softhca_destroy_qp(struct ibv_qp *ibqp);
struct ibv_qp *softhca_open_qp(struct ibv_context *ibctx,
			       struct ibv_qp_open_attr *attr);
void softhca_qp_table_free(struct softhca_context *ctx);

/* ah.c */
struct ibv_ah *softhca_create_ah(struct ibv_pd *ibpd,
				 struct ibv_ah_attr *attr);
int softhca_destroy_ah(struct ibv_ah *ibah);
int softhca_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			 uint16_t lid);
int softhca_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			 uint16_t lid);

/* wr.c: IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, of RC, UD and UC QPs. */
#define SOFTHCA_SEND_OPS_FLAGS						\
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |	\
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |	\
	 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW)
#define SOFTHCA_UD_SEND_OPS_FLAGS					\
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
/* XRC initiators: RC's but binds and local invalidation (as mlx5). */
#define SOFTHCA_XRC_SEND_OPS_FLAGS					\
	(SOFTHCA_SEND_OPS_FLAGS &					\
	 ~(IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW))
/* UC: no READ, no atomics, no SEND_WITH_INV (the opcode table's uc column). */
#define SOFTHCA_UC_SEND_OPS_FLAGS					\
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |	\
	 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |		\
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
int softhca_wr_api_init(struct softhca_qp *qp);
void softhca_wr_api_free(struct softhca_qp *qp);

/* send.c */
int softhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);

/* recv.c */
/* srq.c */
struct ibv_srq *softhca_create_srq(struct ibv_pd *ibpd,
				   struct ibv_srq_init_attr *attr);
struct ibv_srq *softhca_create_srq_ex(struct ibv_context *ibctx,
				      struct ibv_srq_init_attr_ex *attr);
int softhca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);

/* xrcd.c */
struct ibv_xrcd *softhca_open_xrcd(struct ibv_context *ibctx,
				   struct ibv_xrcd_init_attr *attr);
int softhca_close_xrcd(struct ibv_xrcd *ibxrcd);
int softhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		       int mask);
int softhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int softhca_destroy_srq(struct ibv_srq *ibsrq);
int softhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

int softhca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

#endif /* SOFTHCA_H */
