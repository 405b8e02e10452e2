// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: fast registration and invalidation of MKeys
 * (IBTA Vol 1 10.6.3.5, 10.6.5). A fast-registration MKey is FREE until a
 * REG_MR WQE of a kernel QP of its PD fills its MTT from a page list,
 * sets its key byte, rights, iova and length and makes it VALID; a
 * LOCAL_INV WQE, or a SEND with invalidate that reaches a QP of its PD,
 * makes it FREE again (the key of a memory window goes to mkey_mw.c).
 * Lookups (mkey.c) check the state after taking their reference, so from
 * the moment it is FREE no new access passes.
 *
 * Accesses that passed before are let finish: an invalidation waits until
 * none is left (memory the ULP may free once it sees the invalidation
 * completed must no longer be written), for a bounded time, because a
 * responder that invalidates holds its QP's resp_lock, which a requester
 * holding the same MKey as its lkey may be waiting for; a timeout is
 * counted (mkey_inval_timeouts). A registration waits without bound (it
 * holds no responder's lock), so the fields never change under an access.
 */
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/overflow.h>

#include "model.h"

/* Invalidation: how long the accesses in flight are waited for. */
#define HCA_INVAL_WAIT_US	10000

/* Accesses in flight on @mkey besides the base reference and ours. */
static bool hca_mkey_busy(struct hca_mkey *mkey)
{
	return refcount_read(&mkey->users) > 2;
}

/* Rights, bounds and page list of a REG_MR for @mkey. */
static int hca_fast_reg_check(struct hca *hca, const struct hca_mkey *mkey,
			      const struct hca_fast_reg *r)
{
	u64 last, span;

	if (r->access & ~(HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE |
			  HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC))
		return -EINVAL;
	/* Remote write and atomic need local write (IBTA 10.6.3.1). */
	if ((r->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_ATOMIC)) &&
	    !(r->access & HCA_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (r->page_shift != PAGE_SHIFT || !r->npages ||
	    r->npages > mkey->max_pages || !r->list)
		return -EINVAL;
	if (!r->length || r->length > hca->caps->max_mr_size ||
	    check_add_overflow(r->iova, r->length - 1, &last))
		return -EINVAL;
	span = offset_in_page(r->iova) + r->length;
	if (span > (u64)r->npages << PAGE_SHIFT)
		return -EINVAL;
	/* The list itself: kernel memory of the QP's owner. */
	if (!virt_addr_valid(r->list) ||
	    !virt_addr_valid((const u8 *)(r->list + r->npages) - 1))
		return -EINVAL;
	return 0;
}

/* The page list into the MTT: page-aligned direct-map addresses only. */
static int hca_fast_reg_pages(struct hca_mkey *mkey,
			      const struct hca_fast_reg *r)
{
	u32 i;

	for (i = 0; i < r->npages; i++) {
		u64 va = be64_to_cpu(READ_ONCE(r->list[i]));
		void *p = (void *)(uintptr_t)va;

		if (!PAGE_ALIGNED(va) || !virt_addr_valid(p))
			return -EINVAL;
		mkey->pages[i] = virt_to_page(p);
	}
	return 0;
}

int hca_mkey_fast_reg(struct hca *hca, u32 pdn, const struct hca_fast_reg *r)
{
	struct hca_mkey *mkey = hca_mkey_get_index(hca, r->key);
	int err = -EINVAL;

	if (!mkey)
		return -EINVAL;
	if (!mkey->fast_reg || mkey->pdn != (pdn & ~HCA_PDN_RLKEY))
		goto out;
	err = -EBUSY;
	if (READ_ONCE(mkey->state) != HCA_MKEY_FREE)
		goto out;
	err = hca_fast_reg_check(hca, mkey, r);
	if (err)
		goto out;
	/* Lookups that took a reference while it was FREE fail and put it. */
	while (hca_mkey_busy(mkey))
		cond_resched();
	err = hca_fast_reg_pages(mkey, r);
	if (err)
		goto out;
	mkey->access = r->access | HCA_ACCESS_LOCAL_READ;
	mkey->iova = r->iova;
	mkey->length = r->length;
	mkey->offset = offset_in_page(r->iova);
	mkey->npages = r->npages;
	/* The consumer's key byte (ib_update_fast_reg_key()). */
	WRITE_ONCE(mkey->key, (mkey->key & ~0xffU) | (r->key & 0xff));
	/* Every field above before VALID; pairs with hca_mkey_check(). */
	smp_store_release(&mkey->state, HCA_MKEY_VALID);
out:
	hca_mkey_put(mkey);
	return err;
}

int hca_mkey_invalidate(struct hca *hca, u32 pdn, u32 qpn, u32 key)
{
	struct hca_mkey *mkey = hca_mkey_get_index(hca, key);
	unsigned int waited = 0;
	int err;

	if (!mkey)
		return -EINVAL;
	if (mkey->mw_type) {
		err = hca_mw_invalidate(hca, mkey, pdn, qpn, key);
		hca_mkey_put(mkey);
		return err;
	}
	if (!mkey->fast_reg || READ_ONCE(mkey->key) != key ||
	    mkey->pdn != (pdn & ~HCA_PDN_RLKEY)) {
		hca_mkey_put(mkey);
		return -EINVAL;
	}
	/* Invalidating a FREE MKey does nothing, as IBTA allows. */
	WRITE_ONCE(mkey->state, HCA_MKEY_FREE);
	/* The state before the count of accesses that may have missed it. */
	smp_mb();
	while (hca_mkey_busy(mkey) && waited < HCA_INVAL_WAIT_US) {
		usleep_range(10, 20);
		waited += 10;
	}
	if (hca_mkey_busy(mkey))
		atomic64_inc(&hca->mkey_inval_timeouts);
	hca_mkey_put(mkey);
	return 0;
}
