/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca verbs driver: objects shared by the files of kernel/.
 * The HCA model (kernel/hca/) is reached only through hca/hca.h.
 */
#ifndef SOFTHCA_H
#define SOFTHCA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/softhca-wqe.h>
#include <rdma/uverbs_ioctl.h>

#include "eq.h"
#include "hca/hca.h"

#define SHCA_PORT	1	/* the one port of every device */

/* Lifecycle of a device on the driver's list (main.c). */
enum shca_dev_state {
	SHCA_DEV_REGISTERING,	/* on the list, ib_register_device() running */
	SHCA_DEV_LIVE,		/* registered */
	SHCA_DEV_DEAD,		/* dealloc_driver ran; waiting to be reaped */
};

struct shca_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct hca *hca;
	struct hca_caps caps;		/* QUERY_CAPS, read once at creation */
	struct net_device *ndev;	/* held until dealloc_driver */
	netdevice_tracker ndev_tracker;

	/* Protected by shca_devs_lock (main.c). */
	struct list_head list;
	enum shca_dev_state state;
	bool unplug;			/* the netdev is going away */
	struct dentry *dbg_dir;

	struct shca_eqs *eqs;		/* EQs and vectors (eq.c) */

	/* On-demand paging (odp.c): ODP MRs by MKey index, their faults. */
	struct xarray odp_mrs;
	struct workqueue_struct *odp_wq;
};

struct shca_ucontext {
	struct ib_ucontext ibucontext;
	/* The UAR page and its doorbell area, one mapping: owns the UAR. */
	struct rdma_user_mmap_entry *uar_entry;
	struct rdma_user_mmap_entry *dev_entry;	/* the device page */
	struct hca_uar *uar;			/* the wake-up call's handle */
	u32 uar_index;
	struct mutex wake_lock;			/* wake: created once */
	struct shca_wakefd *wake;		/* wake.c, or NULL */
};

struct shca_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* An XRC domain (xrcd.c): its number in the model. */
struct shca_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;
};

enum shca_mmap_type {
	SHCA_MMAP_UAR,		/* UAR page + doorbell area (owns the UAR) */
	SHCA_MMAP_DEVICE,	/* the device page, read only */
	SHCA_MMAP_QUEUE,	/* CQ or QP memory (owns the vmalloc area) */
};

/* The UAR mapping: its page, then the pages of its doorbell area. */
#define SHCA_UAR_MAP_SIZE	((1 + HCA_DB_AREA_PAGES) * PAGE_SIZE)

struct shca_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	enum shca_mmap_type type;
	u32 uar_index;		/* UAR */
	void *buf;		/* QUEUE: zeroed, page aligned, vfree()d last */
	size_t size;		/* bytes, a multiple of PAGE_SIZE */
};

/* A kernel CQ's consumer side (kverbs.c); NULL for a user CQ. */
struct shca_kcq {
	spinlock_t lock;		/* poll_cq, req_notify_cq, QP list */
	struct softhca_cqe *ring;
	struct softhca_cq_dbr *dbr;
	u32 cqe_cnt;			/* power of two */
	u32 cons_index;			/* free running; set_ci = low 24 bits */
	atomic_t arm_sn;		/* + 1 per completion event delivered */
	struct xarray qps;		/* QPN -> kernel QP completing here */
	struct shca_qp *last_qp;	/* lookup cache, under lock */
};

struct shca_cq {
	struct ib_cq ibcq;
	u32 cqn;
	struct shca_mmap_entry *queue;	/* ring + DBR */
	struct shca_cq_ev ev;		/* EQ side (eq.h) */
	bool ev_gone;			/* pre_destroy_cq unregistered ev */
	u32 db_slot;			/* its doorbell slot (kernel CQs ring it) */
	struct shca_kcq *kcq;		/* kernel CQ (udata NULL), else NULL */
	struct mutex resize_lock;	/* queue, against a second resize */
};

/*
 * A kernel QP's send queue (kverbs.c): the shared WQE builder's view of it
 * (@fmt), the WR record the shared CQE decoder retires from (@wrs, per
 * WQEBB slot, <rdma/softhca-wqe.h>), and the producer counter.
 */
struct shca_ksq {
	spinlock_t lock;		/* post_send */
	struct softhca_sq_fmt fmt;
	u32 max_post;			/* WRs outstanding at most */
	u32 max_gs;			/* SGEs per WQE */
	u32 cur_post;			/* WQEBBs posted (the doorbell) */
	struct softhca_wq_wrs wrs;	/* head: lock; tail: poll_cq, CQ lock */
};

/* A kernel QP's receive queue; @wrs counts WQEs, one slot each. */
struct shca_krq {
	spinlock_t lock;		/* post_recv */
	void *buf;
	u32 stride_shift;		/* log2 of the WQE stride */
	u32 max_gs;			/* SGEs per WQE */
	struct softhca_wq_wrs wrs;	/* head: lock; tail: poll_cq, CQ lock */
};

/* A kernel QP's verbs side (kverbs.c); NULL for a user QP. */
struct shca_kqp {
	struct shca_ksq sq;
	struct shca_krq rq;
	struct softhca_qp_dbr *dbr;
};

struct shca_qp_kind;

struct shca_qp {
	struct ib_qp ibqp;
	u32 db_slot;			/* its doorbell slot (kernel QPs ring it) */
	struct shca_kqp *kqp;		/* kernel QP (udata NULL), else NULL */
	const struct shca_qp_kind *kind; /* its type's row (qp.c) */
	u32 create_flags;		/* IB_QP_CREATE_* */
	u32 qpn;
	struct mutex mutex;		/* serialises modify_qp and query_qp */
	struct ib_qp_cap cap;		/* granted at creation */
	bool sig_all;			/* IB_SIGNAL_ALL_WR */
	struct shca_mmap_entry *queue;	/* RQ + SQ + DBR */
	struct shca_qp_ev ev;		/* EQ side (eq.h) */
};

/*
 * A shared receive queue (srq.c). @wrs is the poster's free list for a
 * kernel SRQ (wrid and posted NULL for a user one, whose provider keeps
 * its own); @lock guards it, @lock_flags its irqsave state.
 */
struct shca_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	u32 max_gs;
	u32 dbr_offset;
	struct softhca_srq_wrs wrs;
	struct softhca_srq_dbr *dbr;
	spinlock_t lock;
	unsigned long lock_flags;
	struct shca_mmap_entry *queue;	/* ring + DBR */
	struct shca_qp_ev ev;		/* SRQ events (eq.h) */
};

/*
 * An address handle (ah.c): the AV of a kernel consumer's datagram WRs
 * (the provider builds its own for user AHs, with the MAC we return).
 */
struct shca_ah {
	struct ib_ah ibah;
	struct softhca_av av;
};

struct shca_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;
	struct page **pages;		/* the MTT handed to CREATE_MKEY */
	int access;			/* IB_ACCESS_* it was registered with */
	u32 mkey;			/* CREATE_MKEY's key (the rkey may change) */
	/* ib_alloc_mr (umem NULL): the page list map_mr_sg builds */
	__be64 *list;
	u32 npages, max_pages;
	struct shca_odp *odp;		/* an ODP MR (umem NULL): odp.c */
};

/*
 * ib_core's record of one user mapping (drivers/infiniband/core/
 * core_priv.h; not in the exported headers of 6.1). rdma_umap_priv_init()
 * (exported) links it to the ufile and takes a reference on the mmap
 * entry; ib_core's rdma_umap_ops free it at munmap and zap the VMA on
 * disassociate. The layout must be the running kernel's: these three
 * fields since 5.3.
 */
struct rdma_umap_priv {
	struct vm_area_struct *vma;
	struct list_head list;
	struct rdma_user_mmap_entry *entry;
};

void rdma_umap_priv_init(struct rdma_umap_priv *priv,
			 struct vm_area_struct *vma,
			 struct rdma_user_mmap_entry *entry);

/*
 * Debug messages on dynamic debug (ibdev_dbg): "<dev>: OBJ[n] <function>:
 * ...", the notation of the HCA model's own (hca/debug.h), so one grep
 * follows an object through both. Off, each is a static branch.
 */
#define shca_dbg(sdev, fmt, ...)					\
	ibdev_dbg(&(sdev)->ibdev, "%s: " fmt, __func__, ##__VA_ARGS__)
#define shca_dbg_qpn(ibdev, qpn, fmt, ...)				\
	ibdev_dbg((ibdev), "QP[%u] %s: " fmt, (qpn), __func__,		\
		  ##__VA_ARGS__)
#define shca_dbg_cqn(ibdev, cqn, fmt, ...)				\
	ibdev_dbg((ibdev), "CQ[%u] %s: " fmt, (cqn), __func__,		\
		  ##__VA_ARGS__)
#define shca_dbg_qp(qp, fmt, ...)					\
	shca_dbg_qpn((qp)->ibqp.device, (qp)->qpn, fmt, ##__VA_ARGS__)

static inline struct shca_dev *to_shca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct shca_dev, ibdev);
}

static inline struct shca_ucontext *to_shca_uctx(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct shca_ucontext, ibucontext);
}

static inline struct shca_pd *to_shca_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct shca_pd, ibpd);
}

static inline struct shca_xrcd *to_shca_xrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct shca_xrcd, ibxrcd);
}

static inline struct shca_cq *to_shca_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct shca_cq, ibcq);
}

static inline struct shca_qp *to_shca_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct shca_qp, ibqp);
}

static inline struct shca_srq *to_shca_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct shca_srq, ibsrq);
}

static inline struct shca_ah *to_shca_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct shca_ah, ibah);
}

/* A memory window (mw.c); its MKey is the HCA model's (mkey_mw.c). */
struct shca_mw {
	struct ib_mw ibmw;
	u32 mkey;			/* CREATE_MKEY's key: its index counts */
};

static inline struct shca_mw *to_shca_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct shca_mw, ibmw);
}

static inline struct shca_mr *to_shca_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct shca_mr, ibmr);
}

static inline struct shca_mmap_entry *
to_shca_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct shca_mmap_entry, rdma_entry);
}

/* main.c */
extern unsigned int shca_max_comp_vectors;
void shca_dev_dead(struct shca_dev *sdev);

/* device.c */
struct shca_dev *shca_dev_alloc(const char *name, struct net_device *ndev,
				struct device *parent);
bool shca_netdev_active(struct net_device *ndev);
enum ib_mtu shca_port_active_mtu(struct shca_dev *sdev);
void shca_port_update(struct shca_dev *sdev);
void shca_port_init(struct shca_dev *sdev);

/* ucontext.c */
int shca_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata);
void shca_dealloc_ucontext(struct ib_ucontext *ibuctx);
void shca_disassociate_ucontext(struct ib_ucontext *ibuctx);
int shca_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void shca_mmap_free(struct rdma_user_mmap_entry *entry);
int shca_udata_req(struct ib_udata *udata, void *req, size_t size);
u32 shca_udata_uar(struct ib_udata *udata);
struct shca_mmap_entry *shca_queue_alloc(struct ib_udata *udata, size_t size);
void shca_queue_free(struct shca_mmap_entry *queue);

/* wake.c */
extern const struct uapi_definition shca_uapi_defs[];
void shca_wake_file_detach(struct shca_ucontext *uctx);

/* pd.c */
int shca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int shca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int shca_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int shca_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* gid.c */
int shca_add_gid(const struct ib_gid_attr *attr, void **context);
int shca_del_gid(const struct ib_gid_attr *attr, void **context);

/* mr.c */
struct ib_mr *shca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access,
			       struct ib_udata *udata);
struct ib_mr *shca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *pd, struct ib_udata *udata);
/* IB_ACCESS_* rights as HCA_ACCESS_* (the hints dropped). */
u32 shca_mr_access(int access);

/* odp.c: on-demand paging MRs */
struct softhca_eqe;
int shca_odp_init(struct shca_dev *sdev);
void shca_odp_fini(struct shca_dev *sdev);
void shca_odp_caps(struct shca_dev *sdev, struct ib_device_attr *attr);
bool shca_odp_is_implicit(u64 start, u64 length);
void shca_odp_range(struct shca_mr *mr, u64 *start, u64 *length);
struct ib_mr *shca_odp_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 virt_addr, int access);
void shca_odp_forget(struct shca_mr *mr);
void shca_odp_free(struct shca_mr *mr);
void shca_odp_fault_event(struct shca_dev *sdev, const struct softhca_eqe *eqe);
int shca_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		   u32 flags, struct ib_sge *sg_list, u32 num_sge,
		   struct uverbs_attr_bundle *attrs);
struct ib_mr *shca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg);
int shca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
int shca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *shca_get_dma_mr(struct ib_pd *ibpd, int access);

/* mw.c */
int shca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int shca_dealloc_mw(struct ib_mw *ibmw);

/* cq.c */
int shca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
int shca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int shca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int shca_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
int shca_pre_destroy_cq(struct ib_cq *ibcq);

/* qp.c */
int shca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		   struct ib_udata *udata);
int shca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata);
int shca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init_attr);
int shca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* srq.c */
int shca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata);
int shca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int shca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int shca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int shca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
int shca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int shca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);

/* ah.c */
int shca_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata);
int shca_destroy_ah(struct ib_ah *ibah, u32 flags);
int shca_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr);

/* kverbs.c: the kernel verbs of kernel CQs and QPs */
int shca_kcq_create(struct shca_dev *sdev, struct shca_cq *cq, u32 cnt);
void shca_kcq_destroy(struct shca_cq *cq);
int shca_kqp_create(struct shca_qp *qp, void *rq_buf, u32 rq_wqe_cnt,
		    u32 rq_wqe_shift, u32 rq_max_gs, void *sq_buf,
		    u32 sq_wqebb_cnt, u32 sq_max_post, u32 sq_max_wqebbs,
		    u32 max_send_sge, u32 max_inline,
		    struct softhca_qp_dbr *dbr, u32 tp, u32 pdn);
void shca_kqp_destroy(struct shca_qp *qp);
void shca_kqp_reset(struct shca_qp *qp);
int shca_poll_cq(struct ib_cq *ibcq, int ne, struct ib_wc *wc);
int shca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int shca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int shca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);

/* counters.c: `rdma statistic` */
struct rdma_hw_stats *shca_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port);
int shca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index);
struct rdma_hw_stats *shca_counter_alloc_stats(struct rdma_counter *counter);
int shca_counter_update_stats(struct rdma_counter *counter);
int shca_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int shca_counter_unbind_qp(struct ib_qp *ibqp);
int shca_counter_dealloc(struct rdma_counter *counter);

/* restrack.c: `rdma res show ... -d` */
int shca_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int shca_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int shca_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);

/* debugfs.c */
void shca_debugfs_init(void);
void shca_debugfs_exit(void);
void shca_debugfs_add_dev(struct shca_dev *sdev);
void shca_debugfs_del_dev(struct shca_dev *sdev);

#endif /* SOFTHCA_H */
