// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: on-demand paging MRs (IB_ACCESS_ON_DEMAND). Their
 * pages are not pinned: ib_umem_odp tracks the range with an MMU interval
 * notifier and hmm faults pages in. The HCA's MKey starts with an empty
 * MTT (kernel/hca/mkey_odp.c); a PAGE_FAULT event names what the engine
 * needs, a work item here faults it in (ib_umem_odp_map_dma_and_lock()),
 * fills the MTT (ODP_MAP) and resumes the QP (PAGE_FAULT_RESUME), as mlx5
 * does with its page-fault EQ and UMRs. The notifier clears the entries
 * (ODP_UNMAP, which waits for the engine's accesses) before ib_core lets
 * the pages go, so a page the application unmapped, or that fork() made
 * copy-on-write, is never written by the device.
 *
 * An implicit ODP MR (start 0, length U64_MAX) covers the whole address
 * space: its MKey is as large, and the ranges it faults in are children
 * of the implicit umem, SHCA_ODP_CHUNK bytes each, made on first use and
 * kept until deregistration.
 *
 * ibv_advise_mr() prefetches through the same path, synchronously.
 */
#include <linux/hmm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

#define SHCA_ODP_CHUNK_SHIFT	24	/* 16 MiB per implicit child */
#define SHCA_ODP_CHUNK		BIT_ULL(SHCA_ODP_CHUNK_SHIFT)
/*
 * Children an implicit MR may have: 16 GiB of address space faulted in,
 * 64 MiB of ib_umem_odp page arrays. Past it a fault fails.
 */
#define SHCA_ODP_MAX_CHILDREN	1024

/* An ODP MR's paging state (mr->odp). */
struct shca_odp {
	struct shca_mr *mr;
	struct ib_umem_odp *umem;	/* explicit: the MR's; implicit: root */
	u64 base;			/* user address of MTT entry 0 */
	u64 end;			/* user addresses below it only */
	bool implicit;
	/* Faults and prefetches using the MR, + 1 until deregistration. */
	refcount_t users;
	struct completion unused;
	/* implicit: its faults one at a time, its children */
	struct mutex lock;
	struct xarray children;		/* chunk -> ib_umem_odp */
	unsigned int nchildren;
};

/* A PAGE_FAULT event, handled in process context. */
struct shca_odp_fault {
	struct work_struct work;
	struct shca_dev *sdev;
	u32 qpn;
	u32 mkey;
	u32 len;
	u8 flags;			/* SOFTHCA_PAGE_FAULT_* */
	u64 va;
};

static bool shca_odp_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq);

static const struct mmu_interval_notifier_ops shca_odp_mni_ops = {
	.invalidate = shca_odp_invalidate,
};

int shca_odp_init(struct shca_dev *sdev)
{
	xa_init(&sdev->odp_mrs);
	sdev->odp_wq = alloc_workqueue("softhca_odp", WQ_UNBOUND, 0);
	return sdev->odp_wq ? 0 : -ENOMEM;
}

void shca_odp_fini(struct shca_dev *sdev)
{
	if (sdev->odp_wq)
		destroy_workqueue(sdev->odp_wq);
	WARN_ON(!xa_empty(&sdev->odp_mrs));
	xa_destroy(&sdev->odp_mrs);
}

void shca_odp_caps(struct shca_dev *sdev, struct ib_device_attr *attr)
{
	u32 rc = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		 IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		 IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;

	if (!(sdev->caps.flags & HCA_CAP_ODP))
		return;
	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps = rc;
	/*
	 * UC and UD have no RNR: a message whose receiving pages fault is
	 * lost (the next one finds them), so only their sends are claimed,
	 * as a ConnectX claims none for UC and SEND for UD.
	 */
	attr->odp_caps.per_transport_caps.uc_odp_caps = IB_ODP_SUPPORT_SEND;
	attr->odp_caps.per_transport_caps.ud_odp_caps = IB_ODP_SUPPORT_SEND;
	attr->odp_caps.per_transport_caps.xrc_odp_caps = rc;
}

/* ---- the MTT ------------------------------------------------------------- */

/*
 * Entries of @umem for [uva, uva + len) (at most HCA_ODP_MAP_MAX pages)
 * into the MKey, under umem_mutex: what hmm found (faulting it in when
 * @fault). Writable only as ib_umem_odp maps it writable (a write fault,
 * or a prefetch of a page the CPU may write), so that unmapping the page
 * marks it dirty after the device wrote it.
 */
static int shca_odp_map_range(struct shca_mr *mr, struct ib_umem_odp *umem,
			      u64 uva, u64 len, bool write, bool fault,
			      unsigned long *mtt)
{
	struct shca_dev *sdev = to_shca_dev(mr->ibmr.device);
	u64 access = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	u64 page = ALIGN_DOWN(uva, PAGE_SIZE);
	struct hca_cmd_odp_map_in in = { .mkey = mr->mkey, .mtt = mtt };
	unsigned long first = (page - ib_umem_start(umem)) >> PAGE_SHIFT;
	int npages, i, err;

	npages = ib_umem_odp_map_dma_and_lock(umem, uva, len, access, fault);
	if (npages < 0)
		return npages;
	for (i = 0; i < npages; i++) {
		unsigned long pfn = umem->pfn_list[first + i];

		mtt[i] = 0;
		if (!(pfn & HMM_PFN_VALID))
			continue;
		mtt[i] = (unsigned long)hmm_pfn_to_page(pfn);
		if ((pfn & HMM_PFN_WRITE) && (write || !fault))
			mtt[i] |= HCA_ODP_MTT_WRITE;
	}
	in.first = (page - mr->odp->base) >> PAGE_SHIFT;
	in.n = npages;
	err = npages ? hca_exec(sdev->hca, HCA_CMD_ODP_MAP, &in, sizeof(in),
				NULL, 0) : 0;
	mutex_unlock(&umem->umem_mutex);
	return err;
}

/*
 * The implicit MR's child covering @uva, made if it is not there yet
 * (@made); under odp->lock.
 */
static struct ib_umem_odp *shca_odp_child(struct shca_odp *odp, u64 uva,
					  bool *made)
{
	unsigned long chunk = uva >> SHCA_ODP_CHUNK_SHIFT;
	struct ib_umem_odp *child = xa_load(&odp->children, chunk);

	*made = false;
	if (child)
		return child;
	if (odp->nchildren >= SHCA_ODP_MAX_CHILDREN)
		return ERR_PTR(-ENOSPC);
	child = ib_umem_odp_alloc_child(odp->umem,
					(u64)chunk << SHCA_ODP_CHUNK_SHIFT,
					SHCA_ODP_CHUNK, &shca_odp_mni_ops);
	if (IS_ERR(child))
		return child;
	child->private = odp->mr;
	if (xa_err(xa_store(&odp->children, chunk, child, GFP_KERNEL))) {
		ib_umem_odp_release(child);
		return ERR_PTR(-ENOMEM);
	}
	odp->nchildren++;
	*made = true;
	return child;
}

/*
 * A child made for a fault that failed (an address nothing is mapped
 * at): the MKey forgets what it may have got, the child goes, so that
 * faults at random addresses leave nothing behind. Under odp->lock.
 */
static void shca_odp_child_drop(struct shca_odp *odp, struct ib_umem_odp *child)
{
	struct shca_dev *sdev = to_shca_dev(odp->mr->ibmr.device);
	struct hca_cmd_odp_unmap_in in = {
		.mkey = odp->mr->mkey,
		.first = ib_umem_start(child) >> PAGE_SHIFT,
		.n = SHCA_ODP_CHUNK >> PAGE_SHIFT,
	};

	mutex_lock(&child->umem_mutex);
	hca_exec(sdev->hca, HCA_CMD_ODP_UNMAP, &in, sizeof(in), NULL, 0);
	mutex_unlock(&child->umem_mutex);
	xa_erase(&odp->children, ib_umem_start(child) >> SHCA_ODP_CHUNK_SHIFT);
	odp->nchildren--;
	ib_umem_odp_release(child);
}

/*
 * Make [va, va + len) of the MR's addresses present in its MKey. Returns
 * 0, or the error of the range that could not be mapped.
 */
static int shca_odp_map(struct shca_mr *mr, u64 va, u64 len, bool write,
			bool fault)
{
	struct shca_odp *odp = mr->odp;
	u64 uva = va - mr->ibmr.iova + odp->base + (mr->ibmr.iova & ~PAGE_MASK);
	u64 end = uva + len;
	unsigned long *mtt;
	int err = 0;

	if (!len || end < uva || uva < odp->base || end > odp->end)
		return -EFAULT;
	mtt = kmalloc_array(HCA_ODP_MAP_MAX, sizeof(*mtt), GFP_KERNEL);
	if (!mtt)
		return -ENOMEM;
	if (odp->implicit)
		mutex_lock(&odp->lock);
	while (uva < end && !err) {
		struct ib_umem_odp *umem = odp->umem;
		u64 stop = ALIGN_DOWN(uva, PAGE_SIZE) +
			   (u64)HCA_ODP_MAP_MAX * PAGE_SIZE;
		bool made = false;

		if (odp->implicit)
			umem = shca_odp_child(odp, uva, &made);
		if (IS_ERR(umem)) {
			err = PTR_ERR(umem);
			break;
		}
		stop = min3(stop, end, (u64)ib_umem_end(umem));
		err = shca_odp_map_range(mr, umem, uva, stop - uva, write,
					 fault, mtt);
		if (err && made)
			shca_odp_child_drop(odp, umem);
		uva = stop;
	}
	if (odp->implicit)
		mutex_unlock(&odp->lock);
	kfree(mtt);
	return err;
}

/*
 * The MMU notifier of an ODP umem (the MR's, or a child of the implicit
 * one): the MKey forgets the range, then ib_core unmaps it. It sleeps, so
 * a caller that may not is told to retry (as every ODP driver does).
 */
static bool shca_odp_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct ib_umem_odp *umem = container_of(mni, struct ib_umem_odp,
						notifier);
	struct shca_mr *mr = umem->private;
	struct hca_cmd_odp_unmap_in in = {};
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&umem->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(umem), range->start);
	end = min_t(u64, ib_umem_end(umem), range->end);
	/* A notifier of an MR being made has no MKey yet: nothing mapped. */
	if (start < end && mr && READ_ONCE(mr->mkey)) {
		in.mkey = READ_ONCE(mr->mkey);
		in.first = (start - mr->odp->base) >> PAGE_SHIFT;
		in.n = DIV_ROUND_UP(end - start, PAGE_SIZE);
		hca_exec(to_shca_dev(mr->ibmr.device)->hca, HCA_CMD_ODP_UNMAP,
			 &in, sizeof(in), NULL, 0);
	}
	if (start < end)
		ib_umem_odp_unmap_dma_pages(umem, start, end);
	mutex_unlock(&umem->umem_mutex);
	return true;
}

/* ---- page faults --------------------------------------------------------- */

/* The ODP MR of @lkey, held (shca_odp_mr_put()), or NULL. */
static struct shca_mr *shca_odp_mr_get(struct shca_dev *sdev, u32 lkey)
{
	struct shca_mr *mr;

	xa_lock(&sdev->odp_mrs);
	mr = xa_load(&sdev->odp_mrs, lkey >> 8);
	if (mr && (mr->mkey != lkey || !refcount_inc_not_zero(&mr->odp->users)))
		mr = NULL;
	xa_unlock(&sdev->odp_mrs);
	return mr;
}

static void shca_odp_mr_put(struct shca_mr *mr)
{
	if (refcount_dec_and_test(&mr->odp->users))
		complete(&mr->odp->unused);
}

static void shca_odp_fault_work(struct work_struct *work)
{
	struct shca_odp_fault *f = container_of(work, struct shca_odp_fault,
						work);
	struct shca_dev *sdev = f->sdev;
	struct hca_cmd_page_fault_resume_in in = { .qpn = f->qpn };
	struct shca_mr *mr;
	int err = -EFAULT;

	mr = shca_odp_mr_get(sdev, f->mkey);
	if (mr) {
		err = shca_odp_map(mr, f->va, f->len,
				   f->flags & SOFTHCA_PAGE_FAULT_WRITE, true);
		shca_odp_mr_put(mr);
	}
	if (err)
		shca_dbg_qpn(&sdev->ibdev, f->qpn,
			     "page fault at 0x%llx (%u bytes, key 0x%x): %pe\n",
			     f->va, f->len, f->mkey, ERR_PTR(err));
	in.responder = !!(f->flags & SOFTHCA_PAGE_FAULT_RESPONDER);
	/* Out of memory for the MTT is no fault of the address: retried. */
	in.error = err && err != -ENOMEM;
	hca_exec(sdev->hca, HCA_CMD_PAGE_FAULT_RESUME, &in, sizeof(in),
		 NULL, 0);
	kfree(f);
}

/*
 * A PAGE_FAULT EQE (eq.c, hard-IRQ context). If it cannot be queued the
 * HCA raises it again (HCA_ODP_REFAULT_NS).
 */
void shca_odp_fault_event(struct shca_dev *sdev, const struct softhca_eqe *eqe)
{
	struct shca_odp_fault *f = kzalloc(sizeof(*f), GFP_ATOMIC);

	if (!f)
		return;
	INIT_WORK(&f->work, shca_odp_fault_work);
	f->sdev = sdev;
	f->qpn = be32_to_cpu(eqe->data.page_fault.qpn) & 0xffffff;
	f->mkey = be32_to_cpu(eqe->data.page_fault.mkey);
	f->len = be32_to_cpu(eqe->data.page_fault.len);
	f->va = (u64)be32_to_cpu(eqe->data.page_fault.va_hi) << 32 |
		be32_to_cpu(eqe->data.page_fault.va_lo);
	f->flags = eqe->data.page_fault.flags;
	queue_work(sdev->odp_wq, &f->work);
}

/* ---- MRs ----------------------------------------------------------------- */

static struct shca_odp *shca_odp_new(struct shca_mr *mr)
{
	struct shca_odp *odp = kzalloc(sizeof(*odp), GFP_KERNEL);

	if (!odp)
		return NULL;
	odp->mr = mr;
	refcount_set(&odp->users, 1);
	init_completion(&odp->unused);
	mutex_init(&odp->lock);
	xa_init(&odp->children);
	return odp;
}

/* The umem(s): explicit, the range; implicit, the root. */
static int shca_odp_umem(struct shca_mr *mr, u64 start, u64 length,
			 int access)
{
	struct ib_device *ibdev = mr->ibmr.device;
	struct shca_odp *odp = mr->odp;

	if (odp->implicit) {
		odp->umem = ib_umem_odp_alloc_implicit(ibdev, access);
		odp->end = TASK_SIZE;
	} else {
		odp->umem = ib_umem_odp_get(ibdev, start, length, access,
					    &shca_odp_mni_ops);
	}
	if (IS_ERR(odp->umem))
		return PTR_ERR(odp->umem);
	if (!odp->implicit) {
		odp->umem->private = mr;
		odp->base = ib_umem_start(odp->umem);
		odp->end = ib_umem_end(odp->umem);
	}
	return 0;
}

static void shca_odp_release(struct shca_odp *odp)
{
	struct ib_umem_odp *child;
	unsigned long chunk;

	xa_for_each(&odp->children, chunk, child)
		ib_umem_odp_release(child);
	xa_destroy(&odp->children);
	if (!IS_ERR_OR_NULL(odp->umem))
		ib_umem_odp_release(odp->umem);
	mutex_destroy(&odp->lock);
	kfree(odp);
}

static int shca_odp_mkey(struct shca_dev *sdev, struct shca_mr *mr, u32 pdn,
			 u64 iova, u64 length, int access)
{
	struct hca_cmd_create_mkey_in in = {
		.pdn = pdn, .page_shift = PAGE_SHIFT,
		/* Windows bind to pinned MRs only: no MW_BIND. */
		.access = shca_mr_access(access & ~IB_ACCESS_MW_BIND) |
			  HCA_MKEY_ODP,
	};
	struct hca_cmd_create_mkey_out out;
	int err;

	if (mr->odp->implicit) {
		in.length = mr->odp->end;
	} else {
		in.iova = iova;
		in.length = length;
		in.offset = iova & ~PAGE_MASK;
	}
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_MKEY, &in, sizeof(in), &out,
		       sizeof(out));
	if (err)
		return err;
	WRITE_ONCE(mr->mkey, out.mkey);
	return 0;
}

/* Is (@start, @length) the whole address space: an implicit ODP MR? */
bool shca_odp_is_implicit(u64 start, u64 length)
{
	return !start && length == U64_MAX;
}

struct ib_mr *shca_odp_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 virt_addr, int access)
{
	struct shca_dev *sdev = to_shca_dev(ibpd->device);
	struct shca_mr *mr;
	int err;

	if (!(sdev->caps.flags & HCA_CAP_ODP))
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->ibmr.device = ibpd->device;
	mr->odp = shca_odp_new(mr);
	if (!mr->odp) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->odp->implicit = shca_odp_is_implicit(start, length);
	err = shca_odp_umem(mr, start, length, access);
	if (!err)
		err = shca_odp_mkey(sdev, mr, to_shca_pd(ibpd)->pdn, virt_addr,
				    length, access);
	if (!err)
		err = xa_err(xa_store(&sdev->odp_mrs, mr->mkey >> 8, mr,
				      GFP_KERNEL));
	if (err)
		goto err;
	mr->ibmr.lkey = mr->mkey;
	mr->ibmr.rkey = mr->mkey;
	mr->ibmr.iova = virt_addr;
	mr->ibmr.length = length;
	mr->access = access;
	return &mr->ibmr;

err:
	if (mr->mkey) {
		struct hca_cmd_destroy_mkey_in in = { .mkey = mr->mkey };

		WARN_ON(hca_exec(sdev->hca, HCA_CMD_DESTROY_MKEY, &in,
				 sizeof(in), NULL, 0));
	}
	shca_odp_release(mr->odp);
	kfree(mr);
	return ERR_PTR(err);
}

/* The user range of an ODP MR, for ibv_rereg_mr without a new one. */
void shca_odp_range(struct shca_mr *mr, u64 *start, u64 *length)
{
	if (mr->odp->implicit) {
		*start = 0;
		*length = U64_MAX;
	} else {
		*start = mr->odp->umem->umem.address;
		*length = mr->odp->umem->umem.length;
	}
}

/* Before DESTROY_MKEY: no fault or prefetch finds the MR any more. */
void shca_odp_forget(struct shca_mr *mr)
{
	struct shca_dev *sdev = to_shca_dev(mr->ibmr.device);

	xa_erase(&sdev->odp_mrs, mr->mkey >> 8);
	/* The faults and prefetches that found it are done with it. */
	shca_odp_mr_put(mr);
	wait_for_completion(&mr->odp->unused);
}

/* After DESTROY_MKEY: the engine is done with the pages. */
void shca_odp_free(struct shca_mr *mr)
{
	shca_odp_release(mr->odp);
	mr->odp = NULL;
}

/* ---- ibv_advise_mr ------------------------------------------------------- */

/*
 * Prefetch: the ranges made present as a fault would (PREFETCH_NO_FAULT:
 * what the process has mapped already). Done before returning, so FLUSH
 * costs nothing more; only with FLUSH does a range that cannot be mapped
 * fail the call (-EFAULT).
 */
int shca_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		   u32 flags, struct ib_sge *sg_list, u32 num_sge,
		   struct uverbs_attr_bundle *attrs)
{
	struct shca_dev *sdev = to_shca_dev(pd->device);
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	bool write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	int err = 0;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	for (i = 0; i < num_sge && !err; i++) {
		struct shca_mr *mr = shca_odp_mr_get(sdev, sg_list[i].lkey);
		u64 addr = sg_list[i].addr, len = sg_list[i].length;

		bool bad;

		if (!mr)
			return -EINVAL;
		bad = mr->ibmr.pd != pd || !len || addr < mr->ibmr.iova ||
		      addr - mr->ibmr.iova > mr->ibmr.length - len ||
		      (write && !(mr->access & IB_ACCESS_LOCAL_WRITE));
		err = bad ? -EINVAL : shca_odp_map(mr, addr, len, write, fault);
		shca_odp_mr_put(mr);
		if (bad)
			break;
		if (err && !(flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH))
			err = 0;
		else if (err && err != -ENOMEM)
			err = -EFAULT;
	}
	return err;
}
