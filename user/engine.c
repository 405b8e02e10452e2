// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine.c - waking the HCA engine (design.md §5).
 *
 * After a doorbell, softhca_db_ring() (softhca.h) rings the QP's or CQ's
 * hint in the context's doorbell area, issues a full barrier and reads the
 * NEED_WAKEUP flag of the hint's engine thread; only if that thread does not
 * watch the area (it let it go, or it sleeps) does it come here. The kernel
 * runs this context's pending doorbells in our thread before it returns, so
 * a cold post does not wait for a kernel thread to be scheduled.
 *
 * The call is fsync() on the context's wake fd, which the first call opens
 * (the driver method WAKE_FD_OPEN). While both CPUs
 * of a small machine are busy polling the engine thread stays off them and
 * every post makes this call, so it has to be cheap: the uverbs method
 * dispatch of ENGINE_WAKE costs more than the work it carries. Without a
 * wake fd (an older kernel, no fd left, SOFTHCA_NO_WAKE_FD=1) the call is
 * the ENGINE_WAKE method on the command fd.
 *
 * ib_uverbs accepts a method call only if hdr.driver_id equals the
 * device's ops.driver_id: softhca has none, so RDMA_DRIVER_UNKNOWN, the
 * value libibverbs itself puts in its own ioctls for our contexts (we pass
 * it to _verbs_init_and_alloc_context).
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "softhca.h"

void softhca_method_hdr(struct ib_uverbs_ioctl_hdr *hdr, uint16_t method,
			uint16_t num_attrs)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->length = sizeof(*hdr) + num_attrs * sizeof(struct ib_uverbs_attr);
	hdr->object_id = UVERBS_OBJECT_DEVICE;
	hdr->method_id = method;
	hdr->num_attrs = num_attrs;
	hdr->driver_id = RDMA_DRIVER_UNKNOWN;
}

/* The wake fd, opened on first use; a negative value if there is none. */
static int wake_fd_get(struct softhca_context *ctx)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr fd_attr;
	} cmd;
	uint32_t fd = UINT32_MAX;	/* stays so if the kernel wrote none */
	int ret;

	ret = __atomic_load_n(&ctx->wake_fd, __ATOMIC_ACQUIRE);
	if (ret != SOFTHCA_WAKE_FD_NONE)
		return ret;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	ret = ctx->wake_fd;
	if (ret == SOFTHCA_WAKE_FD_NONE) {
		softhca_method_hdr(&cmd.hdr, SOFTHCA_METHOD_WAKE_FD_OPEN, 1);
		memset(&cmd.fd_attr, 0, sizeof(cmd.fd_attr));
		cmd.fd_attr.attr_id = SOFTHCA_ATTR_WAKE_FD_OPEN_FD;
		cmd.fd_attr.len = sizeof(fd);
		cmd.fd_attr.flags = UVERBS_ATTR_F_MANDATORY;
		cmd.fd_attr.data = (uintptr_t)&fd;
		/* Whatever the reason for a failure, the method call works. */
		if (ioctl(ctx->vctx.context.cmd_fd, RDMA_VERBS_IOCTL, &cmd) ||
		    fd > (uint32_t)__INT_MAX__)
			ret = SOFTHCA_WAKE_FD_NOT_AVAILABLE;
		else
			ret = (int)fd;
		__atomic_store_n(&ctx->wake_fd, ret, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

void softhca_wake_fd_close(struct softhca_context *ctx)
{
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	ctx->wake_fd = SOFTHCA_WAKE_FD_NOT_AVAILABLE;
}

int softhca_wakeup_call(struct softhca_context *ctx)
{
	struct ib_uverbs_ioctl_hdr hdr;
	int fd = wake_fd_get(ctx);

	/*
	 * A failure is not the caller's: its WRs are posted and their
	 * doorbell records written, which the engine reads whenever it next
	 * runs. Report it only to whoever wants to know.
	 */
	if (fd >= 0) {
		if (!fsync(fd))
			return 0;
		/* EIO: the context is gone; the method call says so too. */
	}
	softhca_method_hdr(&hdr, SOFTHCA_METHOD_ENGINE_WAKE, 0);
	if (ioctl(ctx->vctx.context.cmd_fd, RDMA_VERBS_IOCTL, &hdr))
		return errno;
	return 0;
}
