// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the driver's device methods: the wake-up call
 * (ENGINE_WAKE and the wake fd) and QUERY_CLOCK, the device clock.
 *
 * The provider calls only when it finds SOFTHCA_ENGINE_NEED_WAKEUP set in
 * its doorbell area after ringing a doorbell (design.md §5). The HCA model
 * then executes the pending work in this caller's context before the call
 * returns, so a post after an idle period does not wait for the engine
 * thread to be scheduled.
 *
 * Two ways in, the same work (hca_wakeup_call()):
 * - ENGINE_WAKE, a driver method on UVERBS_OBJECT_DEVICE without
 *   attributes: ioctl(RDMA_VERBS_IOCTL) on the context's command fd;
 * - the wake fd (WAKE_FD_OPEN, at most one per context): fsync() on a file
 *   made for it. While the engine thread is kept off the CPUs (two busy
 *   pollers on two CPUs) every post makes this call, and the uverbs
 *   dispatch (method lookup, attribute bundle, SRCU) cost more than the
 *   work itself; an ioctl on our own file still paid the LSM ioctl hook
 *   (0.4 us under TCG), fsync() has none.
 *
 * A wake fd lives as long as its file, not its context: the context's
 * teardown (close, or disassociate when the device goes away) revokes it,
 * waiting for calls in flight, and later calls fail with EIO. The file's
 * operations are softhca_wakefd.ko's (kernel/wakefd/), not this module's,
 * so an open wake fd does not keep softhca from unloading.
 *
 * Registered through ib_device.driver_def (shca_uapi_defs): uverbs merges
 * the methods into the DEVICE object's tree of this device.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <rdma/ib_verbs.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME softhca_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softhca.h"
#include "wakefd/wakefd.h"

/*
 * What fsync() on a context's wake fd calls (through softhca_wakefd): the
 * wake-up call on the context's UAR, i.e. its doorbell area.
 */
static void shca_wake_call(void *uar)
{
	hca_wakeup_call(uar);
}

/* The context is going away: no call runs on its UAR after this returns. */
void shca_wake_file_detach(struct shca_ucontext *uctx)
{
	struct shca_wakefd *w = uctx->wake;

	if (!w)
		return;
	uctx->wake = NULL;
	shca_wakefd_revoke(w);
}

static int
UVERBS_HANDLER(SOFTHCA_METHOD_ENGINE_WAKE)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);

	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	hca_wakeup_call(to_shca_uctx(uctx)->uar);
	return 0;
}

/*
 * The context cannot be torn down (shca_dealloc_ucontext()) while this
 * runs: a close happens only at the last release of the command fd, not
 * during an ioctl on it, and disassociate first waits for running methods
 * (uverbs' disassociate SRCU). wake_lock orders concurrent calls of the
 * same context.
 */
static int
UVERBS_HANDLER(SOFTHCA_METHOD_WAKE_FD_OPEN)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *ibuctx = ib_uverbs_get_ucontext(attrs);
	struct shca_ucontext *uctx;
	struct shca_wakefd *w;
	struct file *file;
	int fd, err;
	u32 out;

	if (IS_ERR(ibuctx))
		return PTR_ERR(ibuctx);
	uctx = to_shca_uctx(ibuctx);

	mutex_lock(&uctx->wake_lock);
	if (uctx->wake) {
		err = -EEXIST;
		goto out_unlock;
	}
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		err = fd;
		goto out_unlock;
	}
	file = shca_wakefd_create(shca_wake_call, uctx->uar, &w);
	if (IS_ERR(file)) {
		err = PTR_ERR(file);
		put_unused_fd(fd);
		goto out_unlock;
	}
	out = fd;
	err = uverbs_copy_to(attrs, SOFTHCA_ATTR_WAKE_FD_OPEN_FD, &out,
			     sizeof(out));
	if (err) {
		/* Never installed: nobody can have called it. */
		put_unused_fd(fd);
		fput(file);
		shca_wakefd_revoke(w);
		goto out_unlock;
	}
	uctx->wake = w;
	fd_install(fd, file);
out_unlock:
	mutex_unlock(&uctx->wake_lock);
	return err;
}

/*
 * ibv_query_rt_values_ex(): the device clock now, read from the HCA like
 * mlx5's internal timer. A method, not a mapped page: the clock is the
 * kernel's CLOCK_MONOTONIC, which a process in a time namespace would see
 * offset, and only the kernel reads it unshifted.
 */
static int
UVERBS_HANDLER(SOFTHCA_METHOD_QUERY_CLOCK)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);
	u64 ns;

	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	ns = hca_read_clock(to_shca_dev(uctx->device)->hca);
	return uverbs_copy_to(attrs, SOFTHCA_ATTR_QUERY_CLOCK_NS, &ns,
			      sizeof(ns));
}

DECLARE_UVERBS_NAMED_METHOD(SOFTHCA_METHOD_ENGINE_WAKE);

DECLARE_UVERBS_NAMED_METHOD(
	SOFTHCA_METHOD_QUERY_CLOCK,
	UVERBS_ATTR_PTR_OUT(SOFTHCA_ATTR_QUERY_CLOCK_NS,
			    UVERBS_ATTR_TYPE(u64),
			    UA_MANDATORY));

DECLARE_UVERBS_NAMED_METHOD(
	SOFTHCA_METHOD_WAKE_FD_OPEN,
	UVERBS_ATTR_PTR_OUT(SOFTHCA_ATTR_WAKE_FD_OPEN_FD,
			    UVERBS_ATTR_TYPE(u32),
			    UA_MANDATORY));

ADD_UVERBS_METHODS(shca_device_methods,
		   UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(SOFTHCA_METHOD_ENGINE_WAKE),
		   &UVERBS_METHOD(SOFTHCA_METHOD_WAKE_FD_OPEN),
		   &UVERBS_METHOD(SOFTHCA_METHOD_QUERY_CLOCK));

const struct uapi_definition shca_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &shca_device_methods),
	{},
};
