// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: user contexts, their UAR page and mmap.
 *
 * Every user mapping is an rdma_user_mmap_entry mapped with
 * rdma_user_mmap_io(), so ib_core tracks the VMAs and zaps them when the
 * device goes away (disassociate). What an entry stands for is released in
 * mmap_free, once the entry is removed and its last VMA is gone.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

/* softhca_alloc_ucontext_req.comp_mask bits this driver understands. */
#define SHCA_UCTX_REQ_MASK	0

static int shca_parse_ucontext_req(struct ib_udata *udata)
{
	struct softhca_alloc_ucontext_req req = {};
	int err;

	if (!udata->inlen)
		return 0;
	err = ib_copy_from_udata(&req, udata, min(sizeof(req), udata->inlen));
	if (err)
		return err;
	if ((req.comp_mask & ~SHCA_UCTX_REQ_MASK) || req.reserved)
		return -EINVAL;
	if (udata->inlen > sizeof(req) &&
	    !ib_is_udata_cleared(udata, sizeof(req),
				 udata->inlen - sizeof(req)))
		return -EINVAL;
	return 0;
}

static void shca_free_uar(struct shca_dev *sdev, u32 uar_index)
{
	struct shca_cmd_free_uar_in in = { .uar_index = uar_index };

	WARN_ON(shca_hca_exec(sdev->hca, SHCA_CMD_FREE_UAR, &in, sizeof(in),
			      NULL, 0));
}

int shca_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibuctx->device);
	struct shca_ucontext *uctx = to_shca_uctx(ibuctx);
	const struct shca_caps *caps = &sdev->caps;
	struct softhca_alloc_ucontext_resp resp = {};
	struct shca_cmd_alloc_uar_out uar;
	struct shca_mmap_entry *entry;
	int err;

	err = shca_parse_ucontext_req(udata);
	if (err)
		return err;

	err = shca_hca_exec(sdev->hca, SHCA_CMD_ALLOC_UAR, NULL, 0,
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
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry,
					  PAGE_SIZE);
	if (err) {
		kfree(entry);
		shca_free_uar(sdev, uar.uar_index);
		return err;
	}
	/* From here on the entry owns the UAR: shca_mmap_free() frees it. */
	uctx->uar_entry = &entry->rdma_entry;

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

	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err) {
		rdma_user_mmap_entry_remove(uctx->uar_entry);
		return err;
	}
	return 0;
}

void shca_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	rdma_user_mmap_entry_remove(to_shca_uctx(ibuctx)->uar_entry);
}

/*
 * The device is going away under a live context: ib_core has zapped every
 * VMA mapped through rdma_user_mmap_io() and will destroy the context's
 * objects. Nothing of ours still points into user space.
 */
void shca_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

int shca_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct shca_dev *sdev = to_shca_dev(ibuctx->device);
	struct rdma_user_mmap_entry *rdma_entry;
	struct shca_mmap_entry *entry;
	unsigned long pfn;
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
		pfn = shca_hca_uar_pfn(sdev->hca, entry->uar_index);
		if (WARN_ON(!pfn)) {
			err = -EINVAL;
			break;
		}
		/* Plain kernel memory: cached, never executable. */
		vma->vm_flags &= ~VM_MAYEXEC;
		err = rdma_user_mmap_io(ibuctx, vma, pfn, PAGE_SIZE,
					vma->vm_page_prot, rdma_entry);
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
	}
	kfree(entry);
}
