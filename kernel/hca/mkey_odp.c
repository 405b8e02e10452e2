// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: on-demand paging. An ODP MKey (CREATE_MKEY with
 * HCA_MKEY_ODP) starts with an empty MTT. When the engine needs a page the
 * MTT does not have, it raises a PAGE_FAULT event naming the QP, the MKey
 * and the range, and the QP waits: a requester stops at its WQE until
 * PAGE_FAULT_RESUME, a responder answers RNR and takes the request when it
 * comes again. The driver faults the pages in and fills the MTT (ODP_MAP,
 * for mlx5's UMR), then resumes. When the application's mapping changes,
 * the driver's MMU notifier clears the entries (ODP_UNMAP), which returns
 * only once no engine access that may use them is in flight: after it the
 * driver lets the pages go. As on a ConnectX, the model never touches a
 * page table; it knows only what the MTT says.
 *
 * The MTT is an xarray indexed by page of the MKey: an implicit ODP MKey
 * spans the whole user address space and holds only what was faulted in.
 */
#include <linux/wait_bit.h>
#include <linux/xarray.h>

#include "engine.h"

/*
 * A fault still unresolved after this is raised again: its event may have
 * been lost (a full EQ, or the driver found no memory for it).
 */
#define HCA_ODP_LOST_NS		NSEC_PER_SEC

/* Where an entry the engine should have found is missing: a page of its own. */
static u8 hca_odp_sink[PAGE_SIZE] __aligned(PAGE_SIZE);

static void hca_odp_count(struct hca *hca, enum hca_hca_counter i, u64 n)
{
	atomic64_add(n, &hca->odp_cnt[i - HCA_HCNT_ODP_FIRST]);
}

void hca_odp_counters(struct hca *hca, u64 *value)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hca->odp_cnt); i++)
		value[i] = atomic64_read(&hca->odp_cnt[i]);
}

/* MTT index of @va (in the MKey's bounds). */
static unsigned long hca_odp_index(const struct hca_mkey *mkey, u64 va)
{
	return (va - mkey->iova + mkey->offset) >> PAGE_SHIFT;
}

/* First byte of MTT entry @k, as an address of the MKey. */
static u64 hca_odp_entry_va(const struct hca_mkey *mkey, unsigned long k)
{
	return ((u64)k << PAGE_SHIFT) + mkey->iova - mkey->offset;
}

/* The first of entries [first, last] absent (or read-only for @write). */
static unsigned long hca_odp_first_absent(struct hca_mkey *mkey,
					  unsigned long first,
					  unsigned long last, bool write)
{
	XA_STATE(xas, &mkey->odp_mtt, first);
	unsigned long want = first;
	void *entry;

	rcu_read_lock();
	xas_for_each(&xas, entry, last) {
		if (xas_retry(&xas, entry))
			continue;
		if (xas.xa_index != want ||
		    (write && !((unsigned long)entry & HCA_ODP_MTT_WRITE)))
			break;
		want++;
	}
	rcu_read_unlock();
	return want;
}

int hca_odp_begin(struct hca_mkey *mkey, u64 va, u64 len, u32 access,
		  struct hca_odp_miss *miss)
{
	bool write = access & (HCA_ACCESS_LOCAL_WRITE |
			       HCA_ACCESS_REMOTE_WRITE |
			       HCA_ACCESS_REMOTE_ATOMIC);
	unsigned long first = hca_odp_index(mkey, va);
	unsigned long last = hca_odp_index(mkey, va + len - 1);
	unsigned long k = first;

	atomic_inc(&mkey->odp_active);
	/*
	 * The count before the entries: pairs with the barrier in ODP_UNMAP
	 * between raising odp_unmapping and reading odp_active, so either it
	 * waits for this access or this access sees it and backs off.
	 */
	smp_mb__after_atomic();
	if (likely(!atomic_read(&mkey->odp_unmapping))) {
		k = hca_odp_first_absent(mkey, first, last, write);
		if (k > last)
			return 0;
	}
	hca_odp_end(mkey);
	miss->key = mkey->key;
	miss->write = write;
	miss->va = max(va, hca_odp_entry_va(mkey, k));
	miss->len = va + len - miss->va;
	return -EAGAIN;
}

void hca_odp_end(struct hca_mkey *mkey)
{
	/* Fully ordered: the accesses before it, then odp_unmapping. */
	if (atomic_dec_and_test(&mkey->odp_active) &&
	    atomic_read(&mkey->odp_unmapping))
		wake_up_var(&mkey->odp_active);
}

struct page *hca_odp_page(struct hca_mkey *mkey, u64 off)
{
	unsigned long entry = (unsigned long)xa_load(&mkey->odp_mtt,
						     off >> PAGE_SHIFT);

	/* hca_odp_begin() found it and ODP_UNMAP waits for this access. */
	if (WARN_ON_ONCE(!entry))
		return vmalloc_to_page(hca_odp_sink);
	return (struct page *)(entry & ~HCA_ODP_MTT_WRITE);
}

/*
 * The fault of hca_sgl_get()'s -EAGAIN, from @qp's requester or responder:
 * -EAGAIN, the event is raised, or one of that side is still pending (at
 * most one per side, until PAGE_FAULT_RESUME or HCA_ODP_LOST_NS; a
 * responder sees the request again at every RNR retry, a requester
 * rechecks every HCA_ODP_REFAULT_NS); or -EFAULT, the driver could not
 * map the pages the last fault asked for.
 */
int hca_odp_fault(struct hca_qp *qp, bool responder,
		  const struct hca_odp_miss *miss)
{
	struct hca_engine_qp *e = qp->eng;
	struct softhca_eqe eqe = { .type = SOFTHCA_EVENT_TYPE_PAGE_FAULT };
	/* Each side's time under its own lock (resp_lock, exec_lock). */
	s64 *at = responder ? &e->odp_resp_at : &e->odp_req_at;
	s64 now = ktime_get_ns();

	if (test_and_clear_bit(responder ? HCA_ODP_RESP_ERR : HCA_ODP_REQ_ERR,
			       &e->odp_flags))
		return -EFAULT;
	if (test_and_set_bit(responder ? HCA_ODP_RESP_PENDING :
			     HCA_ODP_REQ_PENDING, &e->odp_flags) &&
	    now - *at < HCA_ODP_LOST_NS)
		return -EAGAIN;
	*at = now;
	eqe.data.page_fault.mkey = cpu_to_be32(miss->key);
	eqe.data.page_fault.len = cpu_to_be32(miss->len);
	eqe.data.page_fault.va_hi = cpu_to_be32(upper_32_bits(miss->va));
	eqe.data.page_fault.va_lo = cpu_to_be32(lower_32_bits(miss->va));
	eqe.data.page_fault.flags =
		(responder ? SOFTHCA_PAGE_FAULT_RESPONDER : 0) |
		(miss->write ? SOFTHCA_PAGE_FAULT_WRITE : 0);
	eqe.data.page_fault.qpn = cpu_to_be32(qp->qpn & SOFTHCA_24BIT_MASK);
	/* Refused (the async EQ half full): the next miss raises it again. */
	if (hca_eq_post_soft(qp->hca, &eqe)) {
		clear_bit(responder ? HCA_ODP_RESP_PENDING :
			  HCA_ODP_REQ_PENDING, &e->odp_flags);
		return -EAGAIN;
	}
	hca_odp_count(qp->hca, responder ? HCA_HCNT_ODP_FAULTS_RESP :
		      HCA_HCNT_ODP_FAULTS_REQ, 1);
	hca_dbg_qp(qp, "page fault (%s): key 0x%x va 0x%llx len %u%s\n",
		   responder ? "responder" : "requester", miss->key, miss->va,
		   miss->len, miss->write ? " write" : "");
	return -EAGAIN;
}

/* A requester waits for its fault: until resumed, or it raises it again. */
int hca_odp_req_wait(struct hca_qp *qp, const struct hca_odp_miss *miss)
{
	int err;

	/* Before the event: PAGE_FAULT_RESUME may come at once. */
	hca_wait_set(qp, HCA_WAIT_PAGE_FAULT, HCA_ODP_REFAULT_NS);
	err = hca_odp_fault(qp, false, miss);
	if (err != -EAGAIN)
		hca_wait_clear(qp);
	return err;
}

int hca_odp_req_stall(struct hca_qp *qp, const struct hca_odp_miss *miss)
{
	struct hca_engine_qp *e = qp->eng;
	int err;

	/* As hca_odp_req_wait(): ready for the resume before the event. */
	clear_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags);
	WRITE_ONCE(e->odp_stall_until,
		   (ktime_get_ns() + HCA_ODP_REFAULT_NS) | 1);
	err = hca_odp_fault(qp, false, miss);
	if (err != -EAGAIN) {
		WRITE_ONCE(e->odp_stall_until, 0);
		return err;
	}
	/* An armed timer (ACK timeout, RNR) brings it back anyway. */
	if (e->wait_kind == HCA_WAIT_NONE)
		hca_wait_start(qp, HCA_ODP_REFAULT_NS);
	return err;
}

/* The ODP MKey @key, referenced, or NULL. */
static struct hca_mkey *hca_odp_mkey_get(struct hca *hca, u32 key)
{
	struct hca_mkey *mkey = hca_mkey_get_index(hca, key);

	if (mkey && (mkey->key != key || !mkey->odp)) {
		hca_mkey_put(mkey);
		return NULL;
	}
	return mkey;
}

/* Are entries [first, first + n) inside @mkey? */
static bool hca_odp_range_ok(const struct hca_mkey *mkey, u64 first, u64 n)
{
	u64 entries = (mkey->offset + mkey->length - 1) / PAGE_SIZE + 1;

	return n && first < entries && n <= entries - first;
}

int hca_cmd_odp_map(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_odp_map_in *in = inbox;
	struct hca_mkey *mkey;
	u64 mapped = 0;
	int err = 0;
	u32 i;

	if (!in->mtt || in->n > HCA_ODP_MAP_MAX)
		return -EINVAL;
	mkey = hca_odp_mkey_get(hca, in->mkey);
	if (!mkey)
		return -EINVAL;
	if (!hca_odp_range_ok(mkey, in->first, in->n)) {
		hca_mkey_put(mkey);
		return -EINVAL;
	}
	for (i = 0; i < in->n && !err; i++) {
		unsigned long entry = in->mtt[i];

		if (!entry)
			continue;
		/*
		 * No reclaim: the driver holds the lock its MMU notifier
		 * takes, and reclaim may call that notifier.
		 */
		err = xa_err(xa_store(&mkey->odp_mtt, in->first + i,
				      (void *)entry,
				      GFP_NOWAIT | __GFP_NOWARN));
		mapped += !err;
	}
	hca_odp_count(hca, HCA_HCNT_ODP_PAGES_MAPPED, mapped);
	hca_mkey_put(mkey);
	return err;
}

int hca_cmd_odp_unmap(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_odp_unmap_in *in = inbox;
	struct hca_mkey *mkey;
	u64 cleared = 0, entries;
	void *entry;

	mkey = hca_odp_mkey_get(hca, in->mkey);
	if (!mkey)
		return -EINVAL;
	entries = (mkey->offset + mkey->length - 1) / PAGE_SIZE + 1;
	if (in->first < entries && in->n) {
		XA_STATE(xas, &mkey->odp_mtt, in->first);
		u64 last = in->first + min(in->n, entries - in->first) - 1;

		/* New accesses back off; wait for those in flight. */
		atomic_inc(&mkey->odp_unmapping);
		/* Raised before the count is read: pairs with hca_odp_begin(). */
		smp_mb__after_atomic();
		wait_var_event(&mkey->odp_active,
			       !atomic_read(&mkey->odp_active));
		xas_lock(&xas);
		xas_for_each(&xas, entry, last) {
			xas_store(&xas, NULL);
			cleared++;
		}
		xas_unlock(&xas);
		atomic_dec(&mkey->odp_unmapping);
	}
	hca_odp_count(hca, HCA_HCNT_ODP_PAGES_INVALIDATED, cleared);
	hca_mkey_put(mkey);
	return 0;
}

int hca_cmd_page_fault_resume(struct hca *hca, const void *inbox,
			      void *outbox)
{
	const struct hca_cmd_page_fault_resume_in *in = inbox;
	struct hca_engine_qp *e;
	struct hca_qp *qp;
	int pending;

	if (in->rsvd || in->responder > 1 || in->error > 1)
		return -EINVAL;
	qp = hca_qp_get(hca, in->qpn);
	if (!qp)
		return -EINVAL;
	e = qp->eng;
	pending = in->responder ? HCA_ODP_RESP_PENDING : HCA_ODP_REQ_PENDING;
	/* A fault raised before a reset, or answered twice: nothing to do. */
	if (!test_bit(pending, &e->odp_flags)) {
		hca_qp_put(qp);
		return 0;
	}
	hca_dbg_qp(qp, "page fault resumed (%s)%s\n",
		   in->responder ? "responder" : "requester",
		   in->error ? ": pages not mapped" : "");
	if (in->error)
		set_bit(in->responder ? HCA_ODP_RESP_ERR : HCA_ODP_REQ_ERR,
			&e->odp_flags);
	/* The error bit before the miss that reads it. */
	smp_mb__before_atomic();
	clear_bit(pending, &e->odp_flags);
	if (!in->responder) {
		set_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags);
		hca_qp_run_later(qp);
	}
	hca_qp_put(qp);
	return 0;
}
