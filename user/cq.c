// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq.c - completion queues: create/destroy (the kernel allocates the CQE
 * ring and its doorbell record in one mapping), resize (the kernel moves
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

struct ibv_cq *softhca_create_cq(struct ibv_context *ibctx, int cqe,
				 struct ibv_comp_channel *channel,
				 int comp_vector)
{
	struct softhca_context *ctx = to_sctx(ibctx);
	struct softhca_create_cq_resp_buf resp;
	struct softhca_create_cq_cmd cmd;
	struct softhca_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = softhca_lock_init(&cq->lock, !ctx->single_threaded);
	if (ret)
		goto err_free;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector, &cq->ibv_cq,
				&cmd.ibv_cmd, sizeof(cmd),
				(struct ib_uverbs_create_cq_resp *)(void *)&resp,
				sizeof(resp));
	if (ret)
		goto err_lock;

	if (!cq_resp_ok(ctx, &resp.drv)) {
		ret = EPROTO;
		goto err_destroy;
	}
	cq->cqn = resp.drv.cqn;
	cq->cqe_cnt = resp.drv.cqe_cnt;
	cq->map_size = resp.drv.mmap_size;
	cq->map = mmap(NULL, cq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ibctx->cmd_fd, (off_t)resp.drv.mmap_offset);
	if (cq->map == MAP_FAILED) {
		ret = errno;
		goto err_destroy;
	}
	cq->ring = cq->map;
	cq->dbr = (struct softhca_cq_dbr *)((uint8_t *)cq->map +
					    resp.drv.dbr_offset);
	ret = softhca_db_hint_init(ctx, &cq->db, resp.drv.db_slot,
				   resp.drv.db_thread);
	if (ret) {
		munmap(cq->map, cq->map_size);
		goto err_destroy;
	}
	return &cq->ibv_cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->ibv_cq);
err_lock:
	softhca_lock_destroy(&cq->lock);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

int softhca_destroy_cq(struct ibv_cq *ibcq)
{
	struct softhca_cq *cq = to_scq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	munmap(cq->map, cq->map_size);
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
