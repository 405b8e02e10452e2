// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srq.c - shared receive queues: create (the kernel sizes the ring, links
 * its free list and returns the geometry; the provider maps it and keeps
 * the free list's software side: head, tail, wrid[], posted[]), modify
 * (the limit), query, destroy, and ibv_post_srq_recv.
 *
 * The free list is the shared header's (softhca_srq_post(),
 * softhca_wrs_retire_srq(), queue-formats.md "SRQ WQE"): a post takes the
 * head, a receive completion (poll.c, through the shared decoder) appends
 * its WQE after the tail, both under the SRQ's lock. Posting writes the
 * WQE, then (udma_to_device_barrier) the counter into the doorbell
 * record; no doorbell store: the engine reads the record when a message
 * needs a WQE, and again on every RNR retry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/softhca-wqe.h>

#include "softhca.h"

struct softhca_create_srq_cmd {
	struct ibv_create_srq ibv_cmd;
	struct softhca_create_srq_req drv;
};

struct softhca_create_srq_resp_buf {
	_Alignas(8) __u8 core[sizeof(struct ib_uverbs_create_srq_resp)];
	struct softhca_create_srq_resp drv;
};

struct softhca_create_xsrq_cmd {
	struct ibv_create_xsrq ibv_cmd;
	struct softhca_create_srq_req drv;
};

_Static_assert(offsetof(struct softhca_create_xsrq_cmd, drv) ==
		       sizeof(struct ibv_create_xsrq),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_create_srq_cmd, drv) ==
		       sizeof(struct ibv_create_srq),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_create_srq_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_create_srq_resp),
	       "udata must follow the core response");

/* 16-bit WQE indexes and counter: at most 0x8000 WQEs, as an RQ. */
#define SOFTHCA_SRQ_MAX_CNT	0x8000

static void srq_lock(struct softhca_srq_wrs *wrs, int on)
{
	struct softhca_srq *srq =
		softhca_container_of(wrs, struct softhca_srq, wrs);

	if (on)
		softhca_lock(&srq->lock);
	else
		softhca_unlock(&srq->lock);
}

/* The geometry the kernel returned fits its mapping. */
static bool srq_resp_ok(const struct softhca_context *ctx,
			const struct softhca_create_srq_resp *r)
{
	uint64_t ring;

	if (!r->mmap_size || r->mmap_size % ctx->page_size ||
	    r->mmap_offset % ctx->page_size)
		return false;
	if (r->wqe_cnt < 2 || !softhca_is_pow2(r->wqe_cnt) ||
	    r->wqe_cnt > SOFTHCA_SRQ_MAX_CNT ||
	    r->wqe_shift <= SOFTHCA_DS_SHIFT || r->wqe_shift > 16)
		return false;
	ring = (uint64_t)r->wqe_cnt << r->wqe_shift;
	if (r->max_gs > softhca_srq_max_gs(1U << r->wqe_shift))
		return false;
	return r->dbr_offset >= ring &&
	       r->dbr_offset % sizeof(struct softhca_srq_dbr) == 0 &&
	       r->dbr_offset + sizeof(struct softhca_srq_dbr) <= r->mmap_size;
}

static void srq_free_sw(struct softhca_srq *srq)
{
	free(srq->wrs.wrid);
	free(srq->wrs.posted);
	softhca_lock_destroy(&srq->lock);
	free(srq);
}

static int srq_map(struct softhca_context *ctx, struct softhca_srq *srq,
		   const struct softhca_create_srq_resp *r)
{
	uint8_t *map;

	srq->map_size = r->mmap_size;
	map = mmap(NULL, srq->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->vctx.context.cmd_fd, (off_t)r->mmap_offset);
	if (map == MAP_FAILED)
		return errno;
	srq->map = map;
	srq->dbr = (struct softhca_srq_dbr *)(map + r->dbr_offset);
	srq->srqn = r->srqn;
	srq->max_gs = r->max_gs;
	srq->wrs.buf = map;
	srq->wrs.cnt = r->wqe_cnt;
	srq->wrs.wqe_shift = r->wqe_shift;
	srq->wrs.lock = srq_lock;
	srq->wrs.wrid = calloc(r->wqe_cnt, sizeof(*srq->wrs.wrid));
	srq->wrs.posted = calloc(r->wqe_cnt, 1);
	if (!srq->wrs.wrid || !srq->wrs.posted)
		return ENOMEM;
	/* The kernel linked the ring so already; our side starts there. */
	softhca_srq_init(&srq->wrs);
	return 0;
}

static struct softhca_srq *srq_new(struct softhca_context *ctx)
{
	struct softhca_srq *srq = calloc(1, sizeof(*srq));
	int ret;

	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = softhca_lock_init(&srq->lock, !ctx->single_threaded);
	if (ret) {
		free(srq);
		errno = ret;
		return NULL;
	}
	return srq;
}

/* The kernel created @srq (@ret its answer): check, map, or undo. */
static struct ibv_srq *srq_finish(struct softhca_context *ctx,
				  struct softhca_srq *srq, int ret,
				  const struct softhca_create_srq_resp *r)
{
	if (ret) {
		srq_free_sw(srq);
		errno = ret;
		return NULL;
	}
	if (!srq_resp_ok(ctx, r)) {
		ret = EPROTO;
		goto err_destroy;
	}
	ret = srq_map(ctx, srq, r);
	if (ret)
		goto err_destroy;
	return &srq->ibv_srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->ibv_srq);
	if (srq->map)
		munmap(srq->map, srq->map_size);
	srq_free_sw(srq);
	errno = ret;
	return NULL;
}

struct ibv_srq *softhca_create_srq(struct ibv_pd *ibpd,
				   struct ibv_srq_init_attr *attr)
{
	struct softhca_context *ctx = to_sctx(ibpd->context);
	struct softhca_create_srq_resp_buf resp;
	struct softhca_create_srq_cmd cmd;
	struct softhca_srq *srq = srq_new(ctx);
	int ret;

	if (!srq)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq(ibpd, &srq->ibv_srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd),
				 (struct ib_uverbs_create_srq_resp *)(void *)&resp,
				 sizeof(resp));
	return srq_finish(ctx, srq, ret, &resp.drv);
}

/* An XRC SRQ joins the context's table: its CQEs name it (poll.c). */
static int xsrq_table_insert(struct softhca_context *ctx,
			     struct softhca_srq *srq)
{
	int ret;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	ret = softhca_table_insert(&ctx->xsrq_table, srq->srqn, srq);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

/*
 * ibv_create_srq_ex: a basic SRQ as ibv_create_srq makes it, or an XRC
 * SRQ (its domain and CQ; the same ring and free list).
 */
struct ibv_srq *softhca_create_srq_ex(struct ibv_context *ibctx,
				      struct ibv_srq_init_attr_ex *attr)
{
	struct softhca_context *ctx = to_sctx(ibctx);
	struct softhca_create_srq_resp_buf resp;
	struct softhca_create_xsrq_cmd cmd;
	struct ibv_srq *ibsrq;
	struct softhca_srq *srq;
	int ret;

	if (attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC &&
	    attr->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	srq = srq_new(ctx);
	if (!srq)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd),
				    (struct ib_uverbs_create_srq_resp *)(void *)&resp,
				    sizeof(resp));
	ibsrq = srq_finish(ctx, srq, ret, &resp.drv);
	if (!ibsrq || srq->vsrq.srq_type != IBV_SRQT_XRC)
		return ibsrq;
	ret = xsrq_table_insert(ctx, srq);
	if (ret) {
		softhca_destroy_srq(ibsrq);
		errno = ret;
		return NULL;
	}
	return ibsrq;
}

int softhca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_ssrq(ibsrq)->srqn;
	return 0;
}

int softhca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		       int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd, sizeof(cmd));
}

int softhca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

/*
 * An XRC SRQ leaves the table under its CQ's lock: no poll_cq is between
 * a lookup and its use. Its CQEs not polled yet are dropped by the next
 * poll (no SRQ of that number on this CQ any more).
 */
static void xsrq_table_remove(struct softhca_srq *srq)
{
	struct softhca_context *ctx = to_sctx(srq->ibv_srq.context);
	struct softhca_cq *cq = to_scq(srq->vsrq.cq);

	pthread_mutex_lock(&ctx->qp_table_mutex);
	softhca_lock(&cq->lock);
	softhca_table_remove(&ctx->xsrq_table, srq->srqn, srq);
	softhca_unlock(&cq->lock);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

int softhca_destroy_srq(struct ibv_srq *ibsrq)
{
	struct softhca_srq *srq = to_ssrq(ibsrq);
	bool xrc = srq->vsrq.srq_type == IBV_SRQT_XRC;
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	if (xrc)
		xsrq_table_remove(srq);
	munmap(srq->map, srq->map_size);
	srq_free_sw(srq);
	return 0;
}

int softhca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr)
{
	struct softhca_srq *srq = to_ssrq(ibsrq);
	uint32_t nreq = 0;
	int err = 0;

	softhca_lock(&srq->lock);
	for (; wr; wr = wr->next, nreq++) {
		err = wr->num_sge < 0 ||
		      (uint32_t)wr->num_sge > srq->max_gs ? -EINVAL :
		      softhca_srq_post(&srq->wrs,
				       (const struct softhca_sge *)wr->sg_list,
				       (uint32_t)wr->num_sge, wr->wr_id);
		if (err) {
			err = -err;
			break;
		}
	}
	if (nreq) {
		/* The WQEs before the counter that covers them. */
		udma_to_device_barrier();
		__atomic_store_n(&srq->dbr->counter,
				 htobe32(srq->wrs.counter & SOFTHCA_WQ_DBR_MASK),
				 __ATOMIC_RELAXED);
	}
	softhca_unlock(&srq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}
