// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: user contexts, their UAR page and doorbell area,
 * mmap and the queue memory of CQs and QPs.
 *
 * Every user mapping is an rdma_user_mmap_entry whose VMAs ib_core tracks
 * (rdma_umap_priv_init(), directly or through rdma_user_mmap_io()), so it
 * zaps them when the device goes away (disassociate). Every mapping is
 * VM_PFNMAP, because zap_vma_ptes() ignores anything else. What an entry
 * stands for is released in mmap_free, once the entry is removed and its
 * last VMA is gone (or zapped).
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

/* softhca_alloc_ucontext_req.comp_mask bits this driver understands. */
#define SHCA_UCTX_REQ_MASK	0

/*
 * Copy a driver request of @size bytes from @udata: a shorter request
 * leaves the rest of @req as the caller initialised it (zeros), a longer
 * one must be zeros beyond @size (-EINVAL). The caller checks the fields.
 */
int shca_udata_req(struct ib_udata *udata, void *req, size_t size)
{
	int err;

	if (!udata->inlen)
		return 0;
	err = ib_copy_from_udata(req, udata, min(size, udata->inlen));
	if (err)
		return err;
	if (udata->inlen > size &&
	    !ib_is_udata_cleared(udata, size, udata->inlen - size))
		return -EINVAL;
	return 0;
}

/* The UAR whose doorbell area a new QP or CQ rings (kernel: the HCA's). */
u32 shca_udata_uar(struct ib_udata *udata)
{
	struct shca_ucontext *uctx;

	if (!udata)
		return HCA_UAR_KERNEL;
	uctx = rdma_udata_to_drv_context(udata, struct shca_ucontext,
					 ibucontext);
	return uctx->uar_index;
}

static int shca_parse_ucontext_req(struct ib_udata *udata)
{
	struct softhca_alloc_ucontext_req req = {};
	int err;

	err = shca_udata_req(udata, &req, sizeof(req));
	if (err)
		return err;
	if ((req.comp_mask & ~SHCA_UCTX_REQ_MASK) || req.reserved)
		return -EINVAL;
	return 0;
}

/*
 * Zeroed queue memory of @size bytes (page aligned) and an mmap entry of
 * the calling context that owns it. Free with shca_queue_free(): the
 * memory outlives the entry's removal until the last VMA is gone.
 */
struct shca_mmap_entry *shca_queue_alloc(struct ib_udata *udata, size_t size)
{
	struct shca_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct shca_ucontext,
					  ibucontext);
	struct shca_mmap_entry *entry;
	int err;

	if (WARN_ON(!size || !PAGE_ALIGNED(size)))
		return ERR_PTR(-EINVAL);
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return ERR_PTR(-ENOMEM);
	/* Charged to the caller's memcg; a failure is an errno, not a splat. */
	entry->buf = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
				     __GFP_NOWARN);
	if (!entry->buf) {
		kfree(entry);
		return ERR_PTR(-ENOMEM);
	}
	entry->type = SHCA_MMAP_QUEUE;
	entry->size = size;
	/* A kernel object's queue is never mapped: no entry, no ucontext. */
	if (!udata)
		return entry;
	err = rdma_user_mmap_entry_insert(&uctx->ibucontext, &entry->rdma_entry,
					  size);
	if (err) {
		vfree(entry->buf);
		kfree(entry);
		return ERR_PTR(err);
	}
	return entry;
}

void shca_queue_free(struct shca_mmap_entry *queue)
{
	if (!queue->rdma_entry.ucontext) {
		/* A kernel object's: no mapping can exist. */
		vfree(queue->buf);
		kfree(queue);
		return;
	}
	rdma_user_mmap_entry_remove(&queue->rdma_entry);
}

/* The device page as an mmap entry of @ibuctx (read only). */
static struct rdma_user_mmap_entry *shca_dev_entry(struct ib_ucontext *ibuctx)
{
	struct shca_mmap_entry *entry;
	int err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry)
		return ERR_PTR(-ENOMEM);
	entry->type = SHCA_MMAP_DEVICE;
	entry->size = PAGE_SIZE;
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry,
					  PAGE_SIZE);
	if (err) {
		kfree(entry);
		return ERR_PTR(err);
	}
	return &entry->rdma_entry;
}

static void shca_free_uar(struct shca_dev *sdev, u32 uar_index)
{
	struct hca_cmd_free_uar_in in = { .uar_index = uar_index };

	WARN_ON(hca_exec(sdev->hca, HCA_CMD_FREE_UAR, &in, sizeof(in),
			      NULL, 0));
}

int shca_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibuctx->device);
	struct shca_ucontext *uctx = to_shca_uctx(ibuctx);
	const struct hca_caps *caps = &sdev->caps;
	struct softhca_alloc_ucontext_resp resp = {};
	struct hca_cmd_alloc_uar_out uar;
	struct shca_mmap_entry *entry;
	int err;

	err = shca_parse_ucontext_req(udata);
	if (err)
		return err;
	mutex_init(&uctx->wake_lock);

	err = hca_exec(sdev->hca, HCA_CMD_ALLOC_UAR, NULL, 0,
			    &uar, sizeof(uar));
	if (err)
		return err;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		shca_free_uar(sdev, uar.uar_index);
		return -ENOMEM;
	}
	entry->type = SHCA_MMAP_UAR;
	entry->uar_index = uar.uar_index;
	entry->size = SHCA_UAR_MAP_SIZE;
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry,
					  entry->size);
	if (err) {
		kfree(entry);
		shca_free_uar(sdev, uar.uar_index);
		return err;
	}
	/* From here on the entry owns the UAR: shca_mmap_free() frees it. */
	uctx->uar_entry = &entry->rdma_entry;
	uctx->uar_index = uar.uar_index;
	uctx->uar = hca_uar_find(sdev->hca, uar.uar_index);

	uctx->dev_entry = shca_dev_entry(ibuctx);
	if (IS_ERR(uctx->dev_entry)) {
		rdma_user_mmap_entry_remove(uctx->uar_entry);
		return PTR_ERR(uctx->dev_entry);
	}

	resp.model_rev = caps->model_rev;
	resp.page_size = PAGE_SIZE;
	resp.wqebb_size = caps->wqebb_size;
	resp.cqe_size = caps->cqe_size;
	resp.bf_buf_size = caps->bf_buf_size;
	resp.max_sq_wqebbs = caps->max_sq_wqebbs;
	resp.max_rq_wqes = caps->max_rq_wqes;
	resp.max_send_sge = caps->max_send_sge;
	resp.max_recv_sge = caps->max_recv_sge;
	resp.max_inline_data = caps->max_inline_data;
	resp.max_cqe = caps->max_cqe;
	resp.uar_mmap_offset = rdma_user_mmap_get_offset(uctx->uar_entry);
	resp.uar_mmap_size = SHCA_UAR_MAP_SIZE;
	resp.dev_mmap_offset = rdma_user_mmap_get_offset(uctx->dev_entry);

	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err) {
		rdma_user_mmap_entry_remove(uctx->dev_entry);
		rdma_user_mmap_entry_remove(uctx->uar_entry);
		return err;
	}
	return 0;
}

void shca_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct shca_ucontext *uctx = to_shca_uctx(ibuctx);

	shca_wake_file_detach(uctx);
	rdma_user_mmap_entry_remove(uctx->dev_entry);
	rdma_user_mmap_entry_remove(uctx->uar_entry);
}

/*
 * The device is going away under a live context: ib_core has zapped every
 * VMA mapped through rdma_user_mmap_io() and will destroy the context's
 * objects. Nothing of ours still points into user space.
 */
void shca_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

/*
 * Page @pgoff of what @entry maps: queue memory (vmalloc pages), or the
 * UAR page followed by its doorbell area. 0 if there is none.
 */
static unsigned long shca_mmap_pfn(struct shca_dev *sdev,
				   struct shca_mmap_entry *entry,
				   unsigned long pgoff)
{
	if (entry->type == SHCA_MMAP_QUEUE)
		return vmalloc_to_pfn(entry->buf + (pgoff << PAGE_SHIFT));
	if (!pgoff)
		return hca_uar_pfn(sdev->hca, entry->uar_index);
	return hca_uar_db_pfn(sdev->hca, entry->uar_index, pgoff - 1);
}

/*
 * One remap_pfn_range() per page, so the VMA is VM_PFNMAP and disassociate
 * can zap it. The pages hold no reference for the mapping; the entry (kept
 * by the VMA through the umap record) does.
 */
static int shca_mmap_pages(struct shca_dev *sdev, struct vm_area_struct *vma,
			   struct shca_mmap_entry *entry)
{
	struct rdma_umap_priv *priv;
	unsigned long off, pfn;
	int err;

	priv = kzalloc(sizeof(*priv), GFP_KERNEL);
	if (!priv)
		return -ENOMEM;
	for (off = 0; off < entry->size; off += PAGE_SIZE) {
		pfn = shca_mmap_pfn(sdev, entry, off >> PAGE_SHIFT);
		err = WARN_ON(!pfn) ? -EINVAL :
		      remap_pfn_range(vma, vma->vm_start + off, pfn, PAGE_SIZE,
				      vma->vm_page_prot);
		if (err) {
			/* The failed mmap() unmaps what was mapped. */
			kfree(priv);
			return -EAGAIN;
		}
	}
	rdma_umap_priv_init(priv, vma, &entry->rdma_entry);
	return 0;
}

int shca_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct shca_dev *sdev = to_shca_dev(ibuctx->device);
	struct rdma_user_mmap_entry *rdma_entry;
	struct shca_mmap_entry *entry;
	int err;

	if (vma->vm_flags & VM_EXEC)
		return -EINVAL;

	/* Checks VM_SHARED, the offset and that the length is the entry's. */
	rdma_entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = to_shca_mmap_entry(rdma_entry);

	switch (entry->type) {
	case SHCA_MMAP_UAR:
	case SHCA_MMAP_QUEUE:
		/* Plain kernel memory: cached, never executable. */
		vma->vm_flags &= ~VM_MAYEXEC;
		err = shca_mmap_pages(sdev, vma, entry);
		break;
	case SHCA_MMAP_DEVICE:
		/* Written by the HCA only: never writable, now or later. */
		if (vma->vm_flags & VM_WRITE) {
			err = -EPERM;
			break;
		}
		vma->vm_flags &= ~(VM_MAYWRITE | VM_MAYEXEC);
		err = rdma_user_mmap_io(ibuctx, vma, hca_device_pfn(sdev->hca),
					PAGE_SIZE, vma->vm_page_prot,
					rdma_entry);
		break;
	default:
		err = -EINVAL;
		break;
	}

	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

void shca_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct shca_mmap_entry *entry = to_shca_mmap_entry(rdma_entry);
	struct shca_dev *sdev = to_shca_dev(rdma_entry->ucontext->device);

	switch (entry->type) {
	case SHCA_MMAP_UAR:
		shca_free_uar(sdev, entry->uar_index);
		break;
	case SHCA_MMAP_DEVICE:
		break;
	case SHCA_MMAP_QUEUE:
		/* The object is destroyed and no VMA maps the memory. */
		vfree(entry->buf);
		break;
	}
	kfree(entry);
}
