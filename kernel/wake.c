// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the wake-up call, ENGINE_WAKE and the wake fd.
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
 *   of our own. While the engine thread is kept off the CPUs (two busy
 *   pollers on two CPUs) every post makes this call, and the uverbs
 *   dispatch (method lookup, attribute bundle, SRCU) cost more than the
 *   work itself; an ioctl on our own file still paid the LSM ioctl hook
 *   (0.4 us under TCG), fsync() has none.
 *
 * A wake fd lives as long as its file, not its context: the context's
 * teardown (close, or disassociate when the device goes away) detaches it,
 * waiting for calls in flight, and later calls fail with EIO. The file's
 * operations are this module's, so an open wake fd pins the module.
 *
 * Registered through ib_device.driver_def (shca_uapi_defs): uverbs merges
 * the methods into the DEVICE object's tree of this device.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME softhca_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softhca.h"

struct shca_wake_file {
	struct hca_uar *uar;		/* the context's: its doorbell area */
	/* 1 while the context lives, +1 per call in flight. */
	refcount_t active;
	struct completion detached;
	/* The file and the context. */
	refcount_t ref;
};

static void shca_wake_file_put(struct shca_wake_file *w)
{
	if (refcount_dec_and_test(&w->ref))
		kfree(w);
}

/* fsync(): run the HCA's pending doorbells now, in the caller's context. */
static int shca_wake_file_fsync(struct file *file, loff_t start, loff_t end,
				int datasync)
{
	struct shca_wake_file *w = file->private_data;

	if (!refcount_inc_not_zero(&w->active))
		return -EIO;
	hca_wakeup_call(w->uar);
	if (refcount_dec_and_test(&w->active))
		complete(&w->detached);
	return 0;
}

static int shca_wake_file_release(struct inode *inode, struct file *file)
{
	shca_wake_file_put(file->private_data);
	return 0;
}

static const struct file_operations shca_wake_fops = {
	.owner = THIS_MODULE,
	.fsync = shca_wake_file_fsync,
	.release = shca_wake_file_release,
	.llseek = noop_llseek,
};

/* The context is going away: no call runs on its HCA after this returns. */
void shca_wake_file_detach(struct shca_ucontext *uctx)
{
	struct shca_wake_file *w = uctx->wake;

	if (!w)
		return;
	uctx->wake = NULL;
	if (!refcount_dec_and_test(&w->active))
		wait_for_completion(&w->detached);
	shca_wake_file_put(w);
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
	struct shca_wake_file *w;
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
	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w) {
		err = -ENOMEM;
		goto out_unlock;
	}
	w->uar = uctx->uar;
	refcount_set(&w->active, 1);
	init_completion(&w->detached);
	refcount_set(&w->ref, 2);	/* the file's and the context's */

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		err = fd;
		kfree(w);
		goto out_unlock;
	}
	file = anon_inode_getfile("[softhca-wake]", &shca_wake_fops, w,
				  O_RDWR);
	if (IS_ERR(file)) {
		err = PTR_ERR(file);
		put_unused_fd(fd);
		kfree(w);
		goto out_unlock;
	}
	out = fd;
	err = uverbs_copy_to(attrs, SOFTHCA_ATTR_WAKE_FD_OPEN_FD, &out,
			     sizeof(out));
	if (err) {
		/* Never installed: the release drops the file's reference. */
		put_unused_fd(fd);
		refcount_set(&w->ref, 1);
		fput(file);
		goto out_unlock;
	}
	uctx->wake = w;
	fd_install(fd, file);
out_unlock:
	mutex_unlock(&uctx->wake_lock);
	return err;
}

DECLARE_UVERBS_NAMED_METHOD(SOFTHCA_METHOD_ENGINE_WAKE);

DECLARE_UVERBS_NAMED_METHOD(
	SOFTHCA_METHOD_WAKE_FD_OPEN,
	UVERBS_ATTR_PTR_OUT(SOFTHCA_ATTR_WAKE_FD_OPEN_FD,
			    UVERBS_ATTR_TYPE(u32),
			    UA_MANDATORY));

ADD_UVERBS_METHODS(shca_device_methods,
		   UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(SOFTHCA_METHOD_ENGINE_WAKE),
		   &UVERBS_METHOD(SOFTHCA_METHOD_WAKE_FD_OPEN));

const struct uapi_definition shca_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &shca_device_methods),
	{},
};
