// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq.c - completion queues: create/destroy, also ibv_create_cq_ex (the
 * kernel allocates the CQE ring and its doorbell record in one mapping), resize (the kernel moves
 * the unconsumed CQEs into a new mapping) and moderation. Arming is in
 * arm.c, polling in poll.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cqe.h"
#include "softhca.h"

struct softhca_create_cq_cmd {
	struct ibv_create_cq ibv_cmd;
	struct softhca_create_cq_req drv;
};

struct softhca_create_cq_resp_buf {
	/* struct ib_uverbs_create_cq_resp */
	__u32 cq_handle;
	__u32 cqe;
	struct softhca_create_cq_resp drv;
};

_Static_assert(offsetof(struct softhca_create_cq_cmd, drv) ==
		       sizeof(struct ibv_create_cq),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_create_cq_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_create_cq_resp),
	       "udata must follow the core response");

struct softhca_resize_cq_resp_buf {
	/* struct ib_uverbs_resize_cq_resp */
	__u32 cqe;
	__u32 reserved;
	struct softhca_resize_cq_resp drv;
};

_Static_assert(offsetof(struct softhca_resize_cq_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_resize_cq_resp),
	       "udata must follow the core response");

/* The geometry the kernel returned must describe one sane mapping. */
static bool cq_geometry_ok(const struct softhca_context *ctx,
			   uint32_t cqe_cnt, uint32_t dbr_offset,
			   uint64_t mmap_offset, uint64_t mmap_size)
{
	uint64_t ring = (uint64_t)cqe_cnt * SOFTHCA_CQE_SIZE;

	return softhca_is_pow2(cqe_cnt) &&
	       mmap_size && mmap_size % ctx->page_size == 0 &&
	       mmap_offset % ctx->page_size == 0 &&
	       dbr_offset % sizeof(struct softhca_cq_dbr) == 0 &&
	       dbr_offset >= ring &&
	       dbr_offset + sizeof(struct softhca_cq_dbr) <= mmap_size;
}

static bool cq_resp_ok(const struct softhca_context *ctx,
		       const struct softhca_create_cq_resp *r)
{
	return cq_geometry_ok(ctx, r->cqe_cnt, r->dbr_offset, r->mmap_offset,
			      r->mmap_size);
}

struct softhca_create_cq_ex_cmd {
	struct ibv_create_cq_ex ibv_cmd;
	struct softhca_create_cq_req drv;
};

struct softhca_create_cq_ex_resp_buf {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct softhca_create_cq_resp drv;
};

_Static_assert(offsetof(struct softhca_create_cq_ex_cmd, drv) ==
		       sizeof(struct ibv_create_cq_ex),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_create_cq_ex_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_ex_create_cq_resp),
	       "udata must follow the core response");

/* A new CQ's provider state, its lock initialised. */
static struct softhca_cq *cq_alloc(bool need_lock)
{
	struct softhca_cq *cq = calloc(1, sizeof(*cq));

	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	softhca_lock_init(&cq->lock, need_lock);
	return cq;
}

/*
 * After CREATE_CQ: map what the response describes. On failure the CQ is
 * destroyed again and freed, errno set; NULL.
 */
static struct softhca_cq *cq_map(struct softhca_context *ctx,
				 struct softhca_cq *cq,
				 const struct softhca_create_cq_resp *r)
{
	int ret = EPROTO;

	if (!cq_resp_ok(ctx, r))
		goto err_destroy;
	cq->cqn = r->cqn;
	cq->cqe_cnt = r->cqe_cnt;
	cq->map_size = r->mmap_size;
	cq->map = mmap(NULL, cq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ctx->vctx.context.cmd_fd, (off_t)r->mmap_offset);
	if (cq->map == MAP_FAILED) {
		ret = errno;
		goto err_destroy;
	}
	cq->ring = cq->map;
	cq->dbr = (struct softhca_cq_dbr *)((uint8_t *)cq->map +
					    r->dbr_offset);
	ret = softhca_db_hint_init(ctx, &cq->db, r->db_slot, r->db_thread);
	if (ret) {
		munmap(cq->map, cq->map_size);
		goto err_destroy;
	}
	return cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->ibv_cq);
	softhca_lock_destroy(&cq->lock);
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *softhca_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	struct softhca_context *ctx = to_sctx(ibctx);
	struct softhca_create_cq_resp_buf resp;
	struct softhca_create_cq_cmd cmd;
	struct softhca_cq *cq;
	int ret;

	cq = cq_alloc(!ctx->single_threaded);
	if (!cq)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd),
				(struct ib_uverbs_create_cq_resp *)(void *)&resp,
				sizeof(resp));
	if (ret) {
		softhca_lock_destroy(&cq->lock);
		free(cq);
		errno = ret;
		return NULL;
	}
	cq = cq_map(ctx, cq, &resp.drv);
	return cq ? &cq->ibv_cq : NULL;
}

/*
 * The ibv_wc_flags_ex a CQ of ours can fill truthfully (cq_ex.c): the
 * standard ones (on RoCE slid and dlid_path_bits are 0, as a ConnectX
 * reports them there) and both clocks. No CVLAN read, no flow tags, no tag
 * matching.
 */
#define SOFTHCA_CQ_EX_WC_FLAGS						\
	(IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |	\
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

/* ibv_create_cq_ex's checks, mlx5's errnos. */
static int cq_ex_attr_check(struct ibv_context *ibctx,
			    const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->cqe <= 0)
		return EINVAL;
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		return EINVAL;
	/* A parent domain of this context (td.c), not a plain PD. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ibctx ||
	     !to_spd(attr->parent_domain)->protection))
		return EINVAL;
	/*
	 * Overrun always puts the CQ in error: IGNORE_OVERRUN, which mlx5
	 * has, is a flag we know and lack (EOPNOTSUPP, as rdma-core's tests
	 * want it); an unknown flag is EINVAL, as on mlx5.
	 */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
				       IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
		return EINVAL;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
		return EOPNOTSUPP;
	if (attr->wc_flags & ~(uint64_t)SOFTHCA_CQ_EX_WC_FLAGS)
		return EOPNOTSUPP;
	return 0;
}

/* Our CREATE_CQ flags: the clocks the HCA stamps this CQ's CQEs with. */
static uint32_t cq_ex_ts_flags(uint64_t wc_flags)
{
	return (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP ?
		SOFTHCA_CQ_FLAG_TS : 0) |
	       (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK ?
		SOFTHCA_CQ_FLAG_TS_WALLCLOCK : 0);
}

/*
 * ibv_create_cq_ex. The same CQ as create_cq's (the ex command carries
 * ib_uverbs' timestamp flag, our request the clocks), with the extended
 * poll API on top. libibverbs runs verbs_init_cq() on return.
 */
struct ibv_cq_ex *softhca_create_cq_ex(struct ibv_context *ibctx,
				      struct ibv_cq_init_attr_ex *attr)
{
	struct softhca_context *ctx = to_sctx(ibctx);
	struct softhca_create_cq_ex_resp_buf resp;
	struct softhca_create_cq_ex_cmd cmd;
	struct softhca_pd *parent = NULL;
	struct softhca_cq *cq;
	bool single;
	int ret;

	ret = cq_ex_attr_check(ibctx, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	/* One thread: the context's, the flag's, or a thread domain's. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		parent = to_spd(attr->parent_domain);
	single = ctx->single_threaded ||
		 (parent && softhca_pd_single_thread(&parent->ibv_pd)) ||
		 ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		  (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED));
	cq = cq_alloc(!single);
	if (!cq)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.drv.flags = cq_ex_ts_flags(attr->wc_flags);
	ret = ibv_cmd_create_cq_ex(ibctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret) {
		softhca_lock_destroy(&cq->lock);
		free(cq);
		errno = ret;
		return NULL;
	}
	cq = cq_map(ctx, cq, &resp.drv);
	if (!cq)
		return NULL;
	softhca_cq_ex_set_ops(cq, attr->wc_flags);
	/* The parent domain stays while the CQ does (its dealloc: EBUSY). */
	cq->parent = parent;
	if (parent)
		__atomic_fetch_add(&parent->users, 1, __ATOMIC_ACQ_REL);
	return &cq->vcq.cq_ex;
}

int softhca_destroy_cq(struct ibv_cq *ibcq)
{
	struct softhca_cq *cq = to_scq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->map, cq->map_size);
	if (cq->parent)
		__atomic_fetch_sub(&cq->parent->users, 1, __ATOMIC_ACQ_REL);
	softhca_lock_destroy(&cq->lock);
	free(cq);
	return 0;
}

/*
 * ibv_resize_cq. Under the CQ lock, so no poll moves the consumer index
 * while the kernel moves the CQEs from it: set_ci is stored first (our
 * reads of the CQEs before it), then the kernel copies the CQEs from
 * set_ci on into the new ring's first entries and rebases the index to 0.
 * Once the call returned the old ring is dead; if the new one cannot be
 * mapped (out of memory) the CQ reports nothing more.
 */
int softhca_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct softhca_context *ctx = to_sctx(ibcq->context);
	struct softhca_cq *cq = to_scq(ibcq);
	struct softhca_resize_cq_resp_buf resp;
	struct ibv_resize_cq cmd;
	const struct softhca_resize_cq_resp *r = &resp.drv;
	void *map;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	softhca_lock(&cq->lock);
	__atomic_store_n(&cq->dbr->set_ci,
			 htobe32(softhca_cq_ci_value(cq->cons_index)),
			 __ATOMIC_RELEASE);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd),
				(struct ib_uverbs_resize_cq_resp *)(void *)&resp,
				sizeof(resp));
	if (ret)
		goto out;
	if (!cq_geometry_ok(ctx, r->cqe_cnt, r->dbr_offset, r->mmap_offset,
			    r->mmap_size)) {
		ret = EPROTO;
		goto out;
	}
	map = mmap(NULL, r->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibcq->context->cmd_fd, (off_t)r->mmap_offset);
	if (map == MAP_FAILED) {
		ret = errno;
		goto out;
	}
	munmap(cq->map, cq->map_size);
	cq->map = map;
	cq->map_size = r->mmap_size;
	cq->ring = map;
	cq->dbr = (struct softhca_cq_dbr *)((uint8_t *)map + r->dbr_offset);
	cq->cqe_cnt = r->cqe_cnt;
	__atomic_store_n(&cq->cons_index, 0, __ATOMIC_RELAXED);
out:
	softhca_unlock(&cq->lock);
	return ret;
}

/* ibv_modify_cq: moderation (count, period in microseconds). */
int softhca_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_modify_cq(ibcq, attr, &cmd, sizeof(cmd));
}
