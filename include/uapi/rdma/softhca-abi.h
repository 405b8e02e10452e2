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
#define SOFTHCA_UVERBS_ABI_VERSION	1

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
	/* mmap() offset of this context's UAR page (see softhca-queue.h) */
	__aligned_u64 uar_mmap_offset;
};

struct softhca_alloc_pd_resp {
	__u32 pdn;
	__u32 reserved;
};

#endif /* SOFTHCA_ABI_USER_H */
