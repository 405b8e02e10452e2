/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * softhca.h - the provider's objects and the ops each file implements.
 *
 * Files: softhca.c (registration, device, context), query.c (device and
 * port queries), pd.c; the data path adds cq.c, qp.c, send.c, recv.c.
 * mmio.h holds the barriers and doorbell stores, provider-abi.h the
 * libibverbs private interface.
 */
#ifndef SOFTHCA_H
#define SOFTHCA_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-abi.h>

#include "mmio.h"
#include "provider-abi.h"

#define softhca_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct softhca_device {
	struct verbs_device vdev;
};

struct softhca_context {
	struct verbs_context vctx;

	/* This context's UAR page: CQ doorbell and BlueFlame buffers
	 * (softhca-queue.h). Mapped write-only for the context's lifetime. */
	void *uar;
	size_t uar_size;

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

struct softhca_pd {
	struct ibv_pd ibv_pd;
	uint32_t pdn;
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

static inline struct softhca_pd *to_spd(struct ibv_pd *ibpd)
{
	return softhca_container_of(ibpd, struct softhca_pd, ibv_pd);
}

/* query.c */
int softhca_query_device_ex(struct ibv_context *ibctx,
			    const struct ibv_query_device_ex_input *input,
			    struct ibv_device_attr_ex *attr, size_t attr_size);
int softhca_query_port(struct ibv_context *ibctx, uint8_t port,
		       struct ibv_port_attr *attr);

/* pd.c */
struct ibv_pd *softhca_alloc_pd(struct ibv_context *ibctx);
int softhca_dealloc_pd(struct ibv_pd *ibpd);

#endif /* SOFTHCA_H */
