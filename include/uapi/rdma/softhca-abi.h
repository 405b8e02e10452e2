/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca uverbs ABI: the driver-private data that rides after the core
 * ib_uverbs command and response structures. Shared by kernel/ and user/.
 * Queue and doorbell layouts live in softhca-queue.h.
 *
 * Rules: every struct is a multiple of 8 bytes, 64-bit fields are
 * __aligned_u64, new fields are only appended, and comp_mask says which
 * appended fields the sender filled in.
 */
#ifndef SOFTHCA_ABI_USER_H
#define SOFTHCA_ABI_USER_H

#include <linux/types.h>

/* Reported in /sys/class/infiniband_verbs/uverbsN/abi_version. */
/* 2: the doorbell area (softhca-queue.h) follows the UAR page; the engine
 * page became the device page (only its live word is left).
 */
#define SOFTHCA_UVERBS_ABI_VERSION	2

/* Parent device of every softhca ib_device; libibverbs matches on it. */
#define SOFTHCA_MODALIAS		"platform:softhca"

struct softhca_alloc_ucontext_req {
	__u32 comp_mask;
	__u32 reserved;
};

struct softhca_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 model_rev;	/* revision of the HCA model */
	__u32 page_size;	/* granule of every mmap below */
	__u32 wqebb_size;	/* bytes per send WQE basic block (64) */
	__u32 cqe_size;		/* bytes per CQE (64) */
	__u32 bf_buf_size;	/* bytes in one BlueFlame buffer */
	__u32 max_sq_wqebbs;	/* largest SQ, in WQEBBs */
	__u32 max_rq_wqes;	/* largest RQ, in WQEs */
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 max_cqe;
	/* mmap() offset of this context's UAR page (see softhca-queue.h),
	 * read-write; its doorbell area follows it in the same mapping, at
	 * offset page_size: uar_mmap_size bytes in all.
	 */
	__aligned_u64 uar_mmap_offset;
	__aligned_u64 uar_mmap_size;
	/* mmap() offset of the device page (read only, softhca-queue.h) */
	__aligned_u64 dev_mmap_offset;
};

struct softhca_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

/*
 * CQ: the kernel allocates one mapping holding the CQE ring (cqe_cnt entries
 * of 64 bytes, every one initialised to opcode INVALID, owner 0) followed by
 * the softhca_cq_dbr at dbr_offset.
 */
/*
 * CREATE_CQ flags: the clocks the HCA stamps this CQ's CQEs with
 * (queue-formats.md "CQE timestamps"). Either needs ib_uverbs' flag
 * IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION, which libibverbs sets for
 * either wc_flags bit; that flag alone means SOFTHCA_CQ_FLAG_TS.
 */
#define SOFTHCA_CQ_FLAG_TS		(1U << 0)	/* the device clock */
#define SOFTHCA_CQ_FLAG_TS_WALLCLOCK	(1U << 1)	/* CLOCK_REALTIME */

struct softhca_create_cq_req {
	__u32 comp_mask;
	__u32 flags;		/* SOFTHCA_CQ_FLAG_* */
};

struct softhca_create_cq_resp {
	__u32 comp_mask;
	__u32 cqn;
	__u32 cqe_cnt;		/* ring entries, a power of two */
	__u32 dbr_offset;	/* byte offset of softhca_cq_dbr in the mapping */
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
	__u32 db_slot;		/* the CQ's slot in the doorbell area */
	__u32 db_thread;	/* the engine thread serving it */
};

/*
 * RESIZE_CQ: no request. The kernel allocates a new mapping like
 * CREATE_CQ's, moves the CQEs not yet consumed (from set_ci) to its first
 * entries and rebases the consumer index to 0 (arm word included). The
 * provider holds its CQ lock across the call, then maps the new ring and
 * unmaps the old; the old mapping stays valid until it does.
 */
struct softhca_resize_cq_resp {
	__u32 cqe_cnt;		/* ring entries, a power of two */
	__u32 dbr_offset;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
};

/*
 * RC and UD QPs: the kernel sizes the queues from the requested caps (the provider
 * computes nothing of its own) and allocates one mapping: the RQ at
 * rq_offset (rq_wqe_cnt WQEs of 1 << rq_wqe_shift bytes), the SQ at
 * sq_offset (sq_wqebb_cnt 64-byte WQEBBs), the softhca_qp_dbr at dbr_offset.
 * The core response carries the caps actually granted.
 */
#define SOFTHCA_QP_FLAG_SIGNATURE	(1U << 0)	/* WQE signatures on */

struct softhca_create_qp_req {
	__u32 comp_mask;
	__u32 flags;		/* SOFTHCA_QP_FLAG_* */
};

struct softhca_create_qp_resp {
	__u32 comp_mask;
	__u32 flags;		/* SOFTHCA_QP_FLAG_* granted */
	__u32 sq_wqebb_cnt;	/* power of two */
	__u32 sq_offset;
	__u32 sq_max_post;	/* WRs the SQ holds (max_send_wr granted) */
	__u32 sq_max_wqebbs;	/* WQEBBs of the largest WQE of this QP */
	__u32 rq_wqe_cnt;	/* power of two */
	__u32 rq_wqe_shift;	/* log2 of the RQ stride in bytes */
	__u32 rq_offset;
	__u32 rq_max_gs;	/* data segments per RQ WQE (sentinel included) */
	__u32 dbr_offset;	/* byte offset of softhca_qp_dbr */
	__u32 max_inline_data;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
	__u32 db_slot;		/* the QP's slot in the doorbell area */
	__u32 db_thread;	/* the engine thread serving it */
};

/*
 * CREATE_AH (datagram QPs): no request. The kernel resolved the RoCE
 * destination's MAC (ib_core, for a unicast GID by the route and the
 * neighbour table, for a multicast GID by the IP multicast mapping) and
 * returns it here, as mlx5_ib_create_ah_resp; the provider builds the
 * address vector itself (softhca_set_av(), <rdma/softhca-wqe.h>).
 */
struct softhca_create_srq_req {
	__u32 comp_mask;
	__u32 reserved;
};

/*
 * The SRQ's mapping: the ring at offset 0 (wqe_cnt WQEs of 1 << wqe_shift
 * bytes, its free list linked in ring order), the softhca_srq_dbr at
 * dbr_offset. max_gs data segments per WQE after the next segment.
 */
struct softhca_create_srq_resp {
	__u32 comp_mask;
	__u32 srqn;
	__u32 wqe_cnt;		/* power of two; wqe_cnt - 1 WRs fit */
	__u32 wqe_shift;
	__u32 max_gs;
	__u32 dbr_offset;
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;
};

struct softhca_create_ah_resp {
	__u32 response_length;	/* bytes the kernel filled in */
	__u8 dmac[6];
	__u8 reserved[6];
};

/*
 * Driver-specific uverbs methods (ioctl on the command fd, object
 * UVERBS_OBJECT_DEVICE, driver namespace).
 * ENGINE_WAKE: the provider found SOFTHCA_ENGINE_NEED_WAKEUP set in its
 * doorbell area after a doorbell store. The kernel executes the pending work of this context's
 * queues in the caller's context and hands the stream back to the engine.
 * No attributes.
 * WAKE_FD_OPEN: a file descriptor (O_CLOEXEC) on which fsync() does what
 * ENGINE_WAKE does ("the doorbells written so far are executed when it
 * returns"), without the uverbs method dispatch or an ioctl's security
 * hook: a fraction of the cost. One per context (EEXIST for a second).
 * Once the context is gone (closed, or its device removed) fsync() fails
 * with EIO. It has no ioctl (ENOTTY). An open wake fd pins the module.
 */
#define SOFTHCA_UVERBS_ID_NS		(1U << 12)	/* UVERBS_ID_NS_SHIFT */
enum softhca_uverbs_device_methods {
	SOFTHCA_METHOD_ENGINE_WAKE = SOFTHCA_UVERBS_ID_NS,
	SOFTHCA_METHOD_WAKE_FD_OPEN,
	SOFTHCA_METHOD_QUERY_CLOCK,
};

enum softhca_wake_fd_open_attrs {
	SOFTHCA_ATTR_WAKE_FD_OPEN_FD = SOFTHCA_UVERBS_ID_NS,	/* out: __u32 */
};

/*
 * QUERY_CLOCK: the device clock now (hca_core_clock: 1 GHz, nanoseconds
 * of the kernel's CLOCK_MONOTONIC), the clock of the CQE timestamps.
 * ibv_query_rt_values_ex() reads it.
 */
enum softhca_query_clock_attrs {
	SOFTHCA_ATTR_QUERY_CLOCK_NS = SOFTHCA_UVERBS_ID_NS,	/* out: __u64 */
};

#endif /* SOFTHCA_ABI_USER_H */
