// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine.c - waking the HCA engine (DESIGN.md §5).
 *
 * After a doorbell, softhca_engine_kick() (softhca.h) issues a full barrier
 * and reads NEED_WAKEUP from the engine page; only if the engine went to
 * sleep does it come here: one uverbs ioctl, the driver method
 * SOFTHCA_METHOD_ENGINE_WAKE on UVERBS_OBJECT_DEVICE, no attributes. The
 * kernel runs this context's pending doorbells in our thread before it
 * returns, so a cold post does not wait for a kernel thread to be scheduled.
 *
 * ib_uverbs accepts the call only if hdr.driver_id equals the device's
 * ops.driver_id: softhca has none, so RDMA_DRIVER_UNKNOWN, the value
 * libibverbs itself puts in its own ioctls for our contexts (we pass it to
 * _verbs_init_and_alloc_context).
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "softhca.h"

int softhca_engine_wake(struct softhca_context *ctx)
{
	struct ib_uverbs_ioctl_hdr hdr;

	memset(&hdr, 0, sizeof(hdr));
	hdr.length = sizeof(hdr);		/* no attributes follow */
	hdr.object_id = UVERBS_OBJECT_DEVICE;
	hdr.method_id = SOFTHCA_METHOD_ENGINE_WAKE;
	hdr.num_attrs = 0;
	hdr.driver_id = RDMA_DRIVER_UNKNOWN;

	/*
	 * A failure is not the caller's: its WRs are posted and their
	 * doorbell records written, which the engine reads whenever it next
	 * runs. Report it only to whoever wants to know.
	 */
	if (ioctl(ctx->vctx.context.cmd_fd, RDMA_VERBS_IOCTL, &hdr))
		return errno;
	return 0;
}
