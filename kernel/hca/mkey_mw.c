// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: memory windows (IBTA Vol 1 10.6.7). A window is an
 * MKey of its PD with no memory of its own: a BIND_MW WQE points it into
 * a range of an MR that allows binding (HCA_ACCESS_MW_BIND), with remote
 * rights only, so a window is never an lkey and the one lookup and the
 * one set of accessors (mkey.c) serve it unchanged: its pages and offset
 * index the MR's MTT. Type 1 windows are rebound (or unbound, length 0)
 * by any bind; type 2 windows are bound once, to the QP that bound them,
 * until LOCAL_INV or a SEND with invalidate of that QP frees them.
 *
 * A bound window holds a reference on its MR and counts in the MR's
 * mw_bound, which DESTROY_MKEY of the MR refuses while non-zero (IBTA
 * 11.2.10.5: an MR with windows bound cannot be deregistered). The count
 * and the MR's presence in the index are tested and changed under the
 * index's lock on both sides, so a bind never adopts an MR being
 * destroyed. Unbinding waits for the accesses through the window to end
 * without a bound: they are responder accesses, which wait for nothing
 * an unbinding holds (a window is never an lkey). hca->mw_lock orders the
 * binds and unbinds of every window.
 */
#include <linux/mm.h>
#include <linux/overflow.h>

#include "model.h"

#define HCA_MW_RIGHTS	(HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ | \
			 HCA_ACCESS_REMOTE_ATOMIC)

/* FREE, then no access through @mw left but ours (the base and the caller's). */
static void hca_mw_quiesce(struct hca_mkey *mw)
{
	WRITE_ONCE(mw->state, HCA_MKEY_FREE);
	/* The state before the count; pairs with hca_mkey_check()'s barrier. */
	smp_mb();
	while (refcount_read(&mw->users) > 2)
		cond_resched();
}

/* Drop @mw's binding (FREE and quiet already). */
static void hca_mw_unbind(struct hca *hca, struct hca_mkey *mw)
{
	struct hca_mkey *mr = mw->parent;

	if (!mr)
		return;
	mw->parent = NULL;
	mw->pages = NULL;
	atomic_dec(&mr->mw_bound);
	hca_mkey_put(mr);
}

/* The MR @b binds to, referenced and checked, or an ERR_PTR. */
static struct hca_mkey *hca_mw_parent_get(struct hca *hca, u32 pdn,
					  const struct hca_mw_bind *b)
{
	struct hca_mkey *mr;

	mr = hca_mkey_get(hca, b->mr_lkey, pdn, HCA_ACCESS_MW_BIND, b->addr,
			  b->length);
	if (IS_ERR(mr))
		return mr;
	/* Windows bind to registered memory only: not to windows, not to
	 * fast-registration MKeys, whose pages change under a bound window.
	 */
	if (mr->key == HCA_RESERVED_LKEY || mr->mw_type || mr->fast_reg ||
	    !mr->pages)
		goto bad;
	/* Remote write and atomic need the MR's local write (10.6.7.2.2). */
	if ((b->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & HCA_ACCESS_LOCAL_WRITE))
		goto bad;
	return mr;
bad:
	hca_mkey_put(mr);
	return ERR_PTR(-EACCES);
}

/* The bind's own fields, before any MKey is looked at. */
static int hca_mw_bind_check(const struct hca_mkey *mw,
			     const struct hca_mw_bind *b)
{
	u64 last;

	if (b->access & ~HCA_MW_RIGHTS)
		return -EINVAL;
	if (!b->length)
		return mw->mw_type == 1 ? 0 : -EINVAL;
	if (check_add_overflow(b->addr, b->length - 1, &last))
		return -ERANGE;
	/* An atomic's 8 bytes never straddle a page: offset + va aligned. */
	if (b->zero_based && (b->access & HCA_ACCESS_REMOTE_ATOMIC) &&
	    !IS_ALIGNED(b->addr, SOFTHCA_ATOMIC_SIZE))
		return -EINVAL;
	/* A type 2 window is bound once until invalidated (10.6.7.2.3). */
	if (mw->mw_type == 2 && READ_ONCE(mw->state) != HCA_MKEY_FREE)
		return -EINVAL;
	return 0;
}

/* Under the index's lock: is @mr still registered? Then adopt it. */
static bool hca_mw_adopt(struct hca *hca, struct hca_mkey *mr)
{
	bool ok;

	xa_lock(&hca->mkeys);
	ok = xa_load(&hca->mkeys, mr->key >> 8) == mr;
	if (ok)
		atomic_inc(&mr->mw_bound);
	xa_unlock(&hca->mkeys);
	return ok;
}

/* Point @mw at [addr, addr + length) of @mr (its reference moves in). */
static void hca_mw_point(struct hca_mkey *mw, struct hca_mkey *mr, u32 qpn,
			 const struct hca_mw_bind *b)
{
	u64 off = b->addr - mr->iova + mr->offset;	/* into mr's MTT */

	mw->parent = mr;
	mw->pages = mr->pages + (off >> PAGE_SHIFT);
	mw->offset = off & ~PAGE_MASK;
	mw->page_shift = PAGE_SHIFT;
	mw->npages = DIV_ROUND_UP_ULL(mw->offset + b->length, PAGE_SIZE);
	mw->iova = b->zero_based ? 0 : b->addr;
	mw->length = b->length;
	mw->access = b->access;
	mw->mw_qpn = mw->mw_type == 2 ? qpn : 0;
}

int hca_mw_bind(struct hca *hca, u32 pdn, u32 qpn, const struct hca_mw_bind *b)
{
	struct hca_mkey *mw = hca_mkey_get_index(hca, b->mw_key);
	struct hca_mkey *mr = NULL;
	int err = -EINVAL;

	if (!mw)
		return -EINVAL;
	mutex_lock(&hca->mw_lock);
	if (!mw->mw_type || mw->pdn != (pdn & ~HCA_PDN_RLKEY))
		goto out;
	err = hca_mw_bind_check(mw, b);
	if (err)
		goto out;
	if (b->length) {
		mr = hca_mw_parent_get(hca, pdn, b);
		if (IS_ERR(mr)) {
			err = PTR_ERR(mr);
			goto out;
		}
	}
	/* From here the bind happens: the old binding goes first. */
	hca_mw_quiesce(mw);
	hca_mw_unbind(hca, mw);
	WRITE_ONCE(mw->key, (mw->key & ~0xffU) | (b->mw_key & 0xff));
	if (!mr)
		goto out;	/* type 1, length 0: unbound, new key */
	if (!hca_mw_adopt(hca, mr)) {
		hca_mkey_put(mr);
		err = -EINVAL;
		goto out;
	}
	hca_mw_point(mw, mr, qpn, b);
	/* Every field above before VALID; pairs with hca_mkey_check(). */
	smp_store_release(&mw->state, HCA_MKEY_VALID);
out:
	mutex_unlock(&hca->mw_lock);
	hca_mkey_put(mw);
	return err;
}

int hca_mw_invalidate(struct hca *hca, struct hca_mkey *mw, u32 pdn, u32 qpn,
		      u32 key)
{
	int err = -EINVAL;

	mutex_lock(&hca->mw_lock);
	/* Type 1 windows are not invalidated, only rebound (10.6.7.2.4). */
	if (mw->mw_type != 2 || READ_ONCE(mw->key) != key ||
	    mw->pdn != (pdn & ~HCA_PDN_RLKEY))
		goto out;
	/* Invalidating a FREE window does nothing, as for MRs. */
	err = 0;
	if (READ_ONCE(mw->state) == HCA_MKEY_FREE)
		goto out;
	if (mw->mw_qpn != qpn) {
		err = -EINVAL;
		goto out;
	}
	hca_mw_quiesce(mw);
	hca_mw_unbind(hca, mw);
out:
	mutex_unlock(&hca->mw_lock);
	return err;
}

void hca_mw_release(struct hca *hca, struct hca_mkey *mw)
{
	mutex_lock(&hca->mw_lock);
	hca_mw_unbind(hca, mw);
	mutex_unlock(&hca->mw_lock);
}
