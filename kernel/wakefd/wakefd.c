// SPDX-License-Identifier: GPL-2.0
/*
 * softhca_wakefd.ko: the file operations of softhca's wake fd.
 *
 * The wake fd is the cheap way in for the provider's wake-up call: fsync()
 * on it runs the HCA's pending doorbells in the caller's context
 * (kernel/wake.c). Its file operations live here, in a module of their
 * own, because a file pins the module that owns its operations for as long
 * as it is open. Owned by softhca.ko, every process holding a wake fd kept
 * softhca from unloading; owned by this module, which never goes away
 * while softhca is loaded (softhca uses its symbols), an open wake fd pins
 * only this module, as the uverbs fds pin ib_uverbs and not their driver.
 *
 * The function a file calls is softhca's, so softhca must be able to take
 * it back: shca_wakefd_revoke(), called when the wake fd's context goes
 * away (its close, or disassociate when the device is removed, which
 * module unload does), waits for the calls in flight; later calls fail
 * with EIO without leaving this module. A call costs one refcount
 * increment and decrement on the file's own object and one indirect call.
 */
#include <linux/anon_inodes.h>
#include <linux/completion.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/refcount.h>
#include <linux/slab.h>

#include "wakefd.h"

struct shca_wakefd {
	shca_wakefd_call_t call;
	void *arg;
	/* 1 until revoked, +1 per call in flight. */
	refcount_t active;
	struct completion revoked;
	/* The file's and the creator's. */
	refcount_t ref;
};

static void shca_wakefd_put(struct shca_wakefd *w)
{
	if (refcount_dec_and_test(&w->ref))
		kfree(w);
}

/* fsync(): the creator's call, unless it was revoked. */
static int shca_wakefd_fsync(struct file *file, loff_t start, loff_t end,
			     int datasync)
{
	struct shca_wakefd *w = file->private_data;

	if (!refcount_inc_not_zero(&w->active))
		return -EIO;
	w->call(w->arg);
	if (refcount_dec_and_test(&w->active))
		complete(&w->revoked);
	return 0;
}

static int shca_wakefd_release(struct inode *inode, struct file *file)
{
	shca_wakefd_put(file->private_data);
	return 0;
}

static const struct file_operations shca_wakefd_fops = {
	.owner = THIS_MODULE,
	.fsync = shca_wakefd_fsync,
	.release = shca_wakefd_release,
	.llseek = noop_llseek,
};

/**
 * shca_wakefd_create - a new wake-up file
 * @call: what fsync() on the file calls, until revoked
 * @arg: its argument
 * @wakefd: set to the handle for shca_wakefd_revoke()
 *
 * Returns the file (not yet in any fd table) or an ERR_PTR. The creator
 * must call shca_wakefd_revoke() once, whatever becomes of the file (a
 * file never installed is dropped with fput()).
 */
struct file *shca_wakefd_create(shca_wakefd_call_t call, void *arg,
				struct shca_wakefd **wakefd)
{
	struct shca_wakefd *w;
	struct file *file;

	w = kzalloc(sizeof(*w), GFP_KERNEL_ACCOUNT);
	if (!w)
		return ERR_PTR(-ENOMEM);
	w->call = call;
	w->arg = arg;
	refcount_set(&w->active, 1);
	init_completion(&w->revoked);
	refcount_set(&w->ref, 2);
	file = anon_inode_getfile("[softhca-wake]", &shca_wakefd_fops, w,
				  O_RDWR);
	if (IS_ERR(file)) {
		kfree(w);
		return file;
	}
	*wakefd = w;
	return file;
}
EXPORT_SYMBOL_GPL(shca_wakefd_create);

/**
 * shca_wakefd_revoke - no call of the file's function after this returns
 * @w: the handle shca_wakefd_create() gave
 *
 * Waits for the calls in flight. Later fsync() on the file fails with EIO;
 * the file itself lives on until its last fd is closed.
 */
void shca_wakefd_revoke(struct shca_wakefd *w)
{
	if (!refcount_dec_and_test(&w->active))
		wait_for_completion(&w->revoked);
	shca_wakefd_put(w);
}
EXPORT_SYMBOL_GPL(shca_wakefd_revoke);

MODULE_DESCRIPTION("softhca: the wake fd's file operations (outlive softhca.ko)");
MODULE_LICENSE("GPL");
