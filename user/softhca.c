// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * softhca.c - registration with libibverbs, the device, the user context.
 *
 * libibverbs dlopen()s this library (softhca.driver names it), our
 * constructor registers softhca_dev_ops, and every uverbs device whose parent
 * has modalias "platform:softhca" is ours, whatever its name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softhca.h"

/* GET_CONTEXT command and response, with our udata after the core parts. */
struct softhca_get_context_cmd {
	struct ibv_get_context ibv_cmd;
	struct softhca_alloc_ucontext_req drv;
};

struct softhca_get_context_resp {
	/* struct ib_uverbs_get_context_resp */
	__u32 async_fd;
	__u32 num_comp_vectors;
	struct softhca_alloc_ucontext_resp drv;
};

_Static_assert(offsetof(struct softhca_get_context_cmd, drv) ==
		       sizeof(struct ibv_get_context),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_get_context_resp, drv) ==
		       sizeof(struct ib_uverbs_get_context_resp),
	       "udata must follow the core response");

static void softhca_free_context(struct ibv_context *ibctx);

/* Ops left NULL keep libibverbs' stubs, which fail with EOPNOTSUPP. */
static const struct verbs_context_ops softhca_ctx_ops = {
	.alloc_mw = softhca_alloc_mw,
	.alloc_parent_domain = softhca_alloc_parent_domain,
	.alloc_pd = softhca_alloc_pd,
	.alloc_td = softhca_alloc_td,
	.attach_mcast = softhca_attach_mcast,
	.bind_mw = softhca_bind_mw,
	.close_xrcd = softhca_close_xrcd,
	.cq_event = softhca_cq_event,
	.create_ah = softhca_create_ah,
	.advise_mr = softhca_advise_mr,
	.create_cq = softhca_create_cq,
	.create_cq_ex = softhca_create_cq_ex,
	.create_qp = softhca_create_qp,
	.create_qp_ex = softhca_create_qp_ex,
	.create_srq = softhca_create_srq,
	.create_srq_ex = softhca_create_srq_ex,
	.dealloc_mw = softhca_dealloc_mw,
	.dealloc_pd = softhca_dealloc_pd,
	.dealloc_td = softhca_dealloc_td,
	.dereg_mr = softhca_dereg_mr,
	.destroy_ah = softhca_destroy_ah,
	.destroy_cq = softhca_destroy_cq,
	.destroy_qp = softhca_destroy_qp,
	.destroy_srq = softhca_destroy_srq,
	.detach_mcast = softhca_detach_mcast,
	.free_context = softhca_free_context,
	.get_srq_num = softhca_get_srq_num,
	.modify_cq = softhca_modify_cq,
	.modify_qp = softhca_modify_qp,
	.modify_srq = softhca_modify_srq,
	.open_qp = softhca_open_qp,
	.open_xrcd = softhca_open_xrcd,
	.poll_cq = softhca_poll_cq,
	.post_recv = softhca_post_recv,
	.post_send = softhca_post_send,
	.post_srq_recv = softhca_post_srq_recv,
	.query_device_ex = softhca_query_device_ex,
	.query_port = softhca_query_port,
	.query_qp = softhca_query_qp,
	.query_rt_values = softhca_query_rt_values,
	.query_srq = softhca_query_srq,
	.reg_mr = softhca_reg_mr,
	.req_notify_cq = softhca_req_notify_cq,
	.rereg_mr = softhca_rereg_mr,
	.resize_cq = softhca_resize_cq,
};

int softhca_lock_init(struct softhca_lock *l, bool need_lock)
{
	l->need_lock = need_lock;
	l->held = 0;
	return 0;
}

void softhca_lock_destroy(struct softhca_lock *l)
{
	(void)l;
}

/* A boolean from the environment: set and not "0". */
static bool env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

static void unmap_pages(struct softhca_context *ctx)
{
	if (ctx->uar)
		munmap(ctx->uar, ctx->uar_size);
	if (ctx->dev_page)
		munmap((void *)ctx->dev_page, ctx->page_size);
}

static struct verbs_context *softhca_alloc_context(struct ibv_device *ibdev,
						   int cmd_fd,
						   void *private_data)
{
	struct softhca_get_context_cmd cmd;
	struct softhca_get_context_resp resp;
	struct softhca_context *ctx;
	long sys_page = sysconf(_SC_PAGESIZE);
	int ret;

	(void)private_data;

	/* On failure this closes cmd_fd, as alloc_context must. */
	ctx = _verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(*ctx),
		(struct verbs_context *)(uintptr_t)offsetof(
			struct softhca_context, vctx),
		RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = softhca_cmd_get_context(
		&ctx->vctx, &cmd.ibv_cmd, sizeof(cmd),
		(struct ib_uverbs_get_context_resp *)(void *)&resp,
		sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_uninit;
	}

	ctx->model_rev = resp.drv.model_rev;
	ctx->page_size = resp.drv.page_size;
	ctx->wqebb_size = resp.drv.wqebb_size;
	ctx->cqe_size = resp.drv.cqe_size;
	ctx->bf_buf_size = resp.drv.bf_buf_size;
	ctx->max_sq_wqebbs = resp.drv.max_sq_wqebbs;
	ctx->max_rq_wqes = resp.drv.max_rq_wqes;
	ctx->max_send_sge = resp.drv.max_send_sge;
	ctx->max_recv_sge = resp.drv.max_recv_sge;
	ctx->max_inline_data = resp.drv.max_inline_data;
	ctx->max_cqe = resp.drv.max_cqe;

	/* The mmap granule must be a power-of-two multiple of our page, and
	 * the doorbell area must fit behind the UAR page. */
	if (sys_page <= 0 || ctx->page_size < (unsigned long)sys_page ||
	    (ctx->page_size & (ctx->page_size - 1)) ||
	    resp.drv.uar_mmap_offset % ctx->page_size ||
	    resp.drv.uar_mmap_size % ctx->page_size ||
	    resp.drv.uar_mmap_size < ctx->page_size + SOFTHCA_DB_AREA_SIZE) {
		errno = EPROTO;
		goto err_uninit;
	}

	ctx->uar_size = resp.drv.uar_mmap_size;
	ctx->uar = mmap(NULL, ctx->uar_size, PROT_READ | PROT_WRITE,
			MAP_SHARED, cmd_fd, (off_t)resp.drv.uar_mmap_offset);
	if (ctx->uar == MAP_FAILED) {
		ctx->uar = NULL;
		goto err_uninit;
	}
	ctx->db = (struct softhca_db_area *)((uint8_t *)ctx->uar +
					     ctx->page_size);

	/* The device page, if this kernel has one (a shorter response leaves
	 * the offset 0): it tells the data path the device is gone. */
	if (resp.drv.dev_mmap_offset) {
		void *p;

		if (resp.drv.dev_mmap_offset % ctx->page_size) {
			errno = EPROTO;
			goto err_unmap;
		}
		p = mmap(NULL, ctx->page_size, PROT_READ, MAP_SHARED, cmd_fd,
			 (off_t)resp.drv.dev_mmap_offset);
		if (p == MAP_FAILED)
			goto err_unmap;
		ctx->dev_page = p;
		if (ctx->dev_page->live == SOFTHCA_DEVICE_LIVE)
			ctx->dev_live = &ctx->dev_page->live;
	}

	ctx->wake_fd = env_flag("SOFTHCA_NO_WAKE_FD") ?
		SOFTHCA_WAKE_FD_NOT_AVAILABLE : SOFTHCA_WAKE_FD_NONE;
	ctx->single_threaded = env_flag("SOFTHCA_SINGLE_THREADED");
	ctx->prefer_bf = env_flag("SOFTHCA_POST_SEND_PREFER_BF");
	ctx->wqe_sig = env_flag("SOFTHCA_WQE_SIGNATURE");
	ctx->bf_offset = SOFTHCA_UAR_BF_OFFSET;
	/* Not needed while one QP owns the UAR: its SQ lock covers it. */
	if (softhca_lock_init(&ctx->bf_lock, false))
		goto err_unmap;
	if (pthread_mutex_init(&ctx->qp_table_mutex, NULL)) {
		softhca_lock_destroy(&ctx->bf_lock);
		goto err_unmap;
	}

	verbs_set_ops(&ctx->vctx, &softhca_ctx_ops);
	return &ctx->vctx;

err_unmap:
	ret = errno;
	unmap_pages(ctx);
	errno = ret;
err_uninit:
	ret = errno;
	verbs_uninit_context(&ctx->vctx);	/* closes cmd_fd */
	free(ctx);
	errno = ret;
	return NULL;
}

/* ibv_close_device(). Objects still open are the kernel's to clean up when
 * cmd_fd closes (their provider memory is not freed: libibverbs does not
 * tell us about them); the mappings go first so no store can follow. */
static void softhca_free_context(struct ibv_context *ibctx)
{
	struct softhca_context *ctx = to_sctx(ibctx);

	unmap_pages(ctx);
	softhca_wake_fd_close(ctx);
	softhca_qp_table_free(ctx);
	pthread_mutex_destroy(&ctx->qp_table_mutex);
	softhca_lock_destroy(&ctx->bf_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static struct verbs_device *
softhca_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct softhca_device *dev;

	(void)sysfs_dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	return &dev->vdev;
}

static void softhca_uninit_device(struct verbs_device *vdev)
{
	free(to_sdev(&vdev->device));
}

static const struct verbs_match_ent softhca_match_table[] = {
	{ .u.modalias = SOFTHCA_MODALIAS, .kind = VERBS_MATCH_MODALIAS },
	{ .kind = VERBS_MATCH_SENTINEL },
};

static const struct verbs_device_ops softhca_dev_ops = {
	.name = "softhca",
	.match_min_abi_version = SOFTHCA_UVERBS_ABI_VERSION,
	.match_max_abi_version = SOFTHCA_UVERBS_ABI_VERSION,
	.match_table = softhca_match_table,
	.alloc_device = softhca_alloc_device,
	.uninit_device = softhca_uninit_device,
	.alloc_context = softhca_alloc_context,
};

static void __attribute__((constructor)) softhca_register(void)
{
	softhca_register_driver(&softhca_dev_ops);
}
