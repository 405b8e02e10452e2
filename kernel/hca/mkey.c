// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: memory keys (CREATE_MKEY, DESTROY_MKEY, QUERY_MKEY,
 * MODIFY_MKEY) and the engine's access to the memory they describe. Fast registration
 * and invalidation of the MKeys that allow it are mkey_fast.c.
 *
 * A key is index << 8 | variant. The index comes from an xarray (1..max_mr,
 * handed out cyclically); the variant byte of an index changes every time
 * the index is reused, so a stale key finds no MKey. Lookups are RCU plus
 * refcount_inc_not_zero(); DESTROY_MKEY erases the index, waits for every
 * lookup in flight to be put and frees the context after a grace period.
 * The lookup is on every transfer's path: one RCU read side around the
 * xarray walk and the reference (xa_load() would nest its own, and in a
 * preemptible kernel each is two calls).
 */
#include <linux/atomic.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "model.h"

#define HCA_MKEY_INDEX_SHIFT	8
#define HCA_MKEY_VARIANT_MASK	0xff

#define HCA_ACCESS_ALL		(HCA_ACCESS_LOCAL_WRITE |		\
				 HCA_ACCESS_REMOTE_WRITE |		\
				 HCA_ACCESS_REMOTE_READ |		\
				 HCA_ACCESS_REMOTE_ATOMIC |		\
				 HCA_ACCESS_LOCAL_READ |		\
				 HCA_ACCESS_MW_BIND)
#define HCA_MKEY_MW			(HCA_MKEY_MW_TYPE1 | HCA_MKEY_MW_TYPE2)

static bool hca_mkey_in_valid(struct hca *hca,
			       const struct hca_cmd_create_mkey_in *in)
{
	u64 last, span;

	if (!hca_pd_valid(hca, in->pdn))
		return false;
	if (in->access & ~HCA_ACCESS_ALL)
		return false;
	/* One MTT entry per kernel page; the caps say 4 KiB pages. */
	if (in->page_shift != PAGE_SHIFT ||
	    !(hca->caps->page_size_cap & BIT_ULL(in->page_shift)))
		return false;
	if (!in->length || in->length > hca->caps->max_mr_size)
		return false;
	if (check_add_overflow(in->iova, in->length - 1, &last))
		return false;
	/* iova and the memory share their offset within a page. */
	if (in->offset != (in->iova & ~PAGE_MASK))
		return false;
	span = in->offset + in->length;
	if (!in->pages || in->npages != DIV_ROUND_UP_ULL(span, PAGE_SIZE))
		return false;
	return true;
}

/* A fast-registration MKey: its PD and an MTT of up to the caps' pages. */
static bool hca_mkey_fast_in_valid(struct hca *hca,
				    const struct hca_cmd_create_mkey_in *in)
{
	return hca_pd_valid(hca, in->pdn) &&
	       in->access == HCA_MKEY_FAST_REG && in->pages && in->npages &&
	       in->npages <= hca->caps->max_fast_reg_pages &&
	       !in->iova && !in->length && !in->offset && !in->page_shift;
}

/* A memory window: its PD and its type, nothing else (mkey_mw.c). */
static bool hca_mkey_mw_in_valid(struct hca *hca,
				  const struct hca_cmd_create_mkey_in *in)
{
	return hca_pd_valid(hca, in->pdn) && !in->pages && !in->npages &&
	       !in->iova && !in->length && !in->offset && !in->page_shift;
}

/*
 * An ODP MKey: rights, a page offset and a range, no MTT yet. Its length
 * may reach the top of the address space (an implicit ODP MKey).
 */
static bool hca_mkey_odp_in_valid(struct hca *hca,
				  const struct hca_cmd_create_mkey_in *in)
{
	u32 access = in->access & ~HCA_MKEY_ODP;
	u64 last;

	return hca_pd_valid(hca, in->pdn) && !(access & ~HCA_ACCESS_ALL) &&
	       !(access & HCA_ACCESS_MW_BIND) &&
	       (hca->caps->flags & HCA_CAP_ODP) && in->page_shift == PAGE_SHIFT &&
	       !in->pages && !in->npages && in->length &&
	       !check_add_overflow(in->iova, in->length - 1, &last) &&
	       in->offset == (in->iova & ~PAGE_MASK);
}

static bool hca_mkey_kind_valid(struct hca *hca,
				const struct hca_cmd_create_mkey_in *in)
{
	if (in->access & HCA_MKEY_ODP)
		return hca_mkey_odp_in_valid(hca, in);
	if (in->access == HCA_MKEY_FAST_REG)
		return hca_mkey_fast_in_valid(hca, in);
	if (in->access == HCA_MKEY_MW_TYPE1 || in->access == HCA_MKEY_MW_TYPE2)
		return hca_mkey_mw_in_valid(hca, in);
	return hca_mkey_in_valid(hca, in);
}

static struct hca_mkey *hca_mkey_new(struct hca *hca,
				     const struct hca_cmd_create_mkey_in *in)
{
	bool fast = in->access == HCA_MKEY_FAST_REG;
	struct hca_mkey *mkey;

	if (!hca_mkey_kind_valid(hca, in))
		return ERR_PTR(-EINVAL);
	mkey = kzalloc(sizeof(*mkey), GFP_KERNEL);
	if (!mkey)
		return ERR_PTR(-ENOMEM);
	mkey->pdn = in->pdn;
	mkey->pages = in->pages;
	atomic_set(&mkey->mw_bound, 0);
	if (in->access & HCA_MKEY_MW) {
		mkey->mw_type = in->access == HCA_MKEY_MW_TYPE1 ? 1 : 2;
		mkey->state = HCA_MKEY_FREE;
		return mkey;
	}
	if (fast) {
		mkey->fast_reg = true;
		mkey->state = HCA_MKEY_FREE;
		mkey->max_pages = in->npages;
		mkey->page_shift = PAGE_SHIFT;
		return mkey;
	}
	if (in->access & HCA_MKEY_ODP) {
		mkey->odp = true;
		xa_init(&mkey->odp_mtt);
	}
	mkey->access = (in->access & ~HCA_MKEY_ODP) | HCA_ACCESS_LOCAL_READ;
	mkey->iova = in->iova;
	mkey->length = in->length;
	mkey->offset = in->offset;
	mkey->page_shift = in->page_shift;
	mkey->npages = in->npages;
	return mkey;
}

int hca_cmd_create_mkey(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_create_mkey_in *in = inbox;
	struct hca_cmd_create_mkey_out *out = outbox;
	struct hca_mkey *mkey;
	u32 index;
	u8 variant;
	void *old;
	int err;

	mkey = hca_mkey_new(hca, in);
	if (IS_ERR(mkey))
		return PTR_ERR(mkey);
	refcount_set(&mkey->users, 1);
	init_completion(&mkey->free);

	/* Reserve an index: lookups do not find it until it is stored. */
	err = xa_alloc_cyclic(&hca->mkeys, &index, NULL,
			      XA_LIMIT(1, hca->caps->max_mr), &hca->mkey_next,
			      GFP_KERNEL);
	if (err < 0) {
		kfree(mkey);
		return err == -EBUSY ? -ENOSPC : err;
	}

	/* The index is ours alone until DESTROY_MKEY erases it. */
	variant = hca->mkey_variant[index] + 1;
	if (!variant)
		variant = 1;	/* never 0: key 0x100 is the invalid lkey */
	hca->mkey_variant[index] = variant;
	mkey->key = index << HCA_MKEY_INDEX_SHIFT | variant;

	old = xa_store(&hca->mkeys, index, mkey, GFP_KERNEL);
	if (xa_is_err(old)) {
		xa_erase(&hca->mkeys, index);
		kfree(mkey);
		return xa_err(old);
	}
	out->mkey = mkey->key;
	return 0;
}

int hca_cmd_destroy_mkey(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_destroy_mkey_in *in = inbox;
	unsigned long index = in->mkey >> HCA_MKEY_INDEX_SHIFT;
	struct hca_mkey *mkey;

	xa_lock(&hca->mkeys);
	mkey = xa_load(&hca->mkeys, index);
	/* A fast-registration MKey's or a window's key byte is the consumer's. */
	if (!mkey || (!mkey->fast_reg && !mkey->mw_type &&
		      mkey->key != in->mkey)) {
		xa_unlock(&hca->mkeys);
		return -EINVAL;
	}
	/* Windows bound to it first (mkey_mw.c adopts under this lock). */
	if (atomic_read(&mkey->mw_bound)) {
		xa_unlock(&hca->mkeys);
		return -EBUSY;
	}
	__xa_erase(&hca->mkeys, index);
	xa_unlock(&hca->mkeys);
	/*
	 * Before kfree_rcu(): cached lookups of it are stale from here. The
	 * erase before the bump, as the reader checks: a cache filled with
	 * the new generation cannot hold this MKey (pairs with the acquire in
	 * hca_mkey_get_cached()).
	 */
	smp_mb__before_atomic();
	atomic64_inc(&hca->mkey_gen);

	/* No new lookup finds it; wait for the engine's accesses to end. */
	if (!refcount_dec_and_test(&mkey->users))
		wait_for_completion(&mkey->free);
	if (mkey->mw_type)
		hca_mw_release(hca, mkey);
	if (mkey->odp)
		xa_destroy(&mkey->odp_mtt);
	kfree_rcu(mkey, rcu);
	return 0;
}

int hca_cmd_modify_mkey(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_modify_mkey_in *in = inbox;
	struct hca_mkey *mkey;
	int err = 0;

	if (!hca_pd_valid(hca, in->pdn) || (in->access & ~HCA_ACCESS_ALL))
		return -EINVAL;
	/* Under the lock windows bind (mkey_mw.c) and DESTROY_MKEY erases. */
	xa_lock(&hca->mkeys);
	mkey = xa_load(&hca->mkeys, in->mkey >> HCA_MKEY_INDEX_SHIFT);
	if (!mkey || mkey->key != in->mkey || mkey->fast_reg ||
	    mkey->mw_type || mkey->odp)
		err = -EINVAL;
	else if (atomic_read(&mkey->mw_bound))
		err = -EBUSY;
	if (!err) {
		WRITE_ONCE(mkey->pdn, in->pdn);
		/* Local read is implied, as CREATE_MKEY gives it. */
		WRITE_ONCE(mkey->access, in->access | HCA_ACCESS_LOCAL_READ);
	}
	xa_unlock(&hca->mkeys);
	return err;
}

int hca_cmd_query_mkey(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_query_mkey_in *in = inbox;
	struct hca_cmd_query_mkey_out *out = outbox;
	struct hca_mkey *mkey;
	int err = 0;

	/* Under the xarray's lock DESTROY_MKEY cannot erase (and free) it. */
	xa_lock(&hca->mkeys);
	mkey = xa_load(&hca->mkeys, in->mkey >> HCA_MKEY_INDEX_SHIFT);
	if (mkey && mkey->key == in->mkey) {
		out->pdn = mkey->pdn;
		out->access = mkey->access;
		out->iova = mkey->iova;
		out->length = mkey->length;
		out->npages = mkey->npages;
		out->page_shift = mkey->page_shift;
		out->rsvd = 0;
	} else {
		err = -EINVAL;
	}
	xa_unlock(&hca->mkeys);
	return err;
}

/*
 * The reserved lkey: no pages, no PD, local rights; its reference count
 * starts at 1 and never drops to 0 (it is never destroyed).
 */
static struct hca_mkey hca_rlkey = {
	.key = HCA_RESERVED_LKEY,
	.access = HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_LOCAL_READ,
	.length = U64_MAX,
	.users = REFCOUNT_INIT(1),
};

/* [va, va + len) of a kernel QP's SGE with the reserved lkey. */
static struct hca_mkey *hca_rlkey_get(u32 pdn, u32 access, u64 va,
					    u64 len)
{
	if (!(pdn & HCA_PDN_RLKEY) || (access & ~hca_rlkey.access))
		return ERR_PTR(-ENOENT);
	/* Direct-mapped kernel memory only (what ib_dma_map_*() hands out). */
	if (len && (va + len < va ||
		    !virt_addr_valid((void *)(uintptr_t)va) ||
		    !virt_addr_valid((void *)(uintptr_t)(va + len - 1))))
		return ERR_PTR(-ERANGE);
	refcount_inc(&hca_rlkey.users);
	return &hca_rlkey;
}

struct hca_mkey *hca_mkey_get(struct hca *hca, u32 key, u32 pdn,
				    u32 access, u64 va, u64 len)
{
	XA_STATE(xas, &hca->mkeys, key >> HCA_MKEY_INDEX_SHIFT);
	struct hca_mkey *mkey;
	int err;

	if (key == HCA_RESERVED_LKEY)
		return hca_rlkey_get(pdn, access, va, len);
	rcu_read_lock();
	do {
		mkey = xas_load(&xas);
		/* An index CREATE_MKEY reserved but has not stored yet. */
		if (xa_is_zero(mkey))
			mkey = NULL;
	} while (xas_retry(&xas, mkey));
	if (!mkey || READ_ONCE(mkey->key) != key ||
	    !refcount_inc_not_zero(&mkey->users)) {
		rcu_read_unlock();
		return ERR_PTR(-ENOENT);
	}
	rcu_read_unlock();

	err = hca_mkey_check(mkey, pdn, access, va, len);
	if (err) {
		hca_mkey_put(mkey);
		return ERR_PTR(err);
	}
	return mkey;
}

int hca_mkey_check(const struct hca_mkey *mkey, u32 pdn, u32 access,
		    u64 va, u64 len)
{
	/*
	 * The caller's reference before the state: pairs with the barrier
	 * of an invalidation between FREE and its count of references.
	 */
	smp_mb__after_atomic();
	/* Acquire: REG_MR's fields before its VALID (release). */
	if (unlikely(smp_load_acquire(&mkey->state) != HCA_MKEY_VALID))
		return -EACCES;
	/* READ_ONCE: MODIFY_MKEY may change them under a cached lookup. */
	if (READ_ONCE(mkey->pdn) != (pdn & ~HCA_PDN_RLKEY) ||
	    (access & ~READ_ONCE(mkey->access)))
		return -EACCES;
	if (va < mkey->iova || len > mkey->length ||
	    va - mkey->iova > mkey->length - len)
		return -ERANGE;
	return 0;
}

struct hca_mkey *hca_mkey_get_index(struct hca *hca, u32 key)
{
	struct hca_mkey *mkey;

	if (key == HCA_RESERVED_LKEY)
		return NULL;
	rcu_read_lock();
	mkey = xa_load(&hca->mkeys, key >> HCA_MKEY_INDEX_SHIFT);
	if (mkey && !refcount_inc_not_zero(&mkey->users))
		mkey = NULL;
	rcu_read_unlock();
	return mkey;
}

/* @va + @len within @mkey (checked by hca_mkey_get() already). */
static bool hca_mkey_covers(struct hca_mkey *mkey, u64 va, u64 len)
{
	return !WARN_ON_ONCE(va < mkey->iova || len > mkey->length ||
			     va - mkey->iova > mkey->length - len);
}

void hca_mkey_write(struct hca_mkey *mkey, u64 va, const void *buf,
		     size_t len)
{
	if (!hca_mkey_covers(mkey, va, len))
		return;
	while (len) {
		size_t pgoff;
		struct page *page = hca_mkey_page(mkey, va, &pgoff);
		size_t n = min_t(size_t, len, PAGE_SIZE - pgoff);
		void *p = kmap_local_page(page);

		hca_copy(p + pgoff, buf, n);
		kunmap_local(p);
		flush_dcache_page(page);
		buf += n;
		va += n;
		len -= n;
	}
}

/*
 * The 8 bytes at @va through the kernel mapping of their page. @va is
 * 8-byte aligned, and so is the memory (CREATE_MKEY requires iova and the
 * memory to share their page offset), so they never straddle a page.
 */
static atomic64_t *hca_mkey_map_u64(struct hca_mkey *mkey, u64 va,
				     struct page **pagep)
{
	size_t pgoff;

	if (WARN_ON_ONCE(va & (SOFTHCA_ATOMIC_SIZE - 1)) ||
	    !hca_mkey_covers(mkey, va, SOFTHCA_ATOMIC_SIZE))
		return NULL;
	*pagep = hca_mkey_page(mkey, va, &pgoff);
	return kmap_local_page(*pagep) + pgoff;
}

u64 hca_mkey_atomic_cas(struct hca_mkey *mkey, u64 va, u64 cmp, u64 swp)
{
	struct page *page;
	atomic64_t *p;
	u64 old;

	p = hca_mkey_map_u64(mkey, va, &page);
	if (!p)
		return 0;
	/* A locked instruction: coherent with user space's own atomics. */
	old = atomic64_cmpxchg(p, cmp, swp);
	kunmap_local(p);
	flush_dcache_page(page);
	return old;
}

u64 hca_mkey_atomic_fadd(struct hca_mkey *mkey, u64 va, u64 add)
{
	struct page *page;
	atomic64_t *p;
	u64 old;

	p = hca_mkey_map_u64(mkey, va, &page);
	if (!p)
		return 0;
	old = atomic64_fetch_add(add, p);
	kunmap_local(p);
	flush_dcache_page(page);
	return old;
}
