// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: user memory regions. The pages are pinned with
 * ib_umem; their struct page array is the MKey's translation table, which
 * the HCA model reads through kernel mappings (the device is a virt-DMA
 * device: no IOMMU, no bus addresses). Kernel QPs reach kernel memory
 * through the reserved lkey; there is no DMA MR. Re-registration makes a
 * new MR (new keys) that ib_core swaps in for the old one. Kernel ULPs
 * allocate fast-registration MRs (ib_alloc_mr) and register them with
 * REG_MR WQEs (kverbs.c) from the page list map_mr_sg builds.
 */
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>

#include "softhca.h"

/* Rights an MR may grant; the optional range and HUGETLB are hints. */
#define SHCA_MR_ACCESS		(IB_ACCESS_LOCAL_WRITE |		\
				 IB_ACCESS_REMOTE_WRITE |		\
				 IB_ACCESS_REMOTE_READ |		\
				 IB_ACCESS_REMOTE_ATOMIC |		\
				 IB_ACCESS_MW_BIND)
#define SHCA_MR_ACCESS_IGNORED	(IB_ACCESS_HUGETLB | IB_ACCESS_OPTIONAL)

u32 shca_mr_access(int access)
{
	u32 shca = 0;

	if (access & IB_ACCESS_LOCAL_WRITE)
		shca |= HCA_ACCESS_LOCAL_WRITE;
	if (access & IB_ACCESS_REMOTE_WRITE)
		shca |= HCA_ACCESS_REMOTE_WRITE;
	if (access & IB_ACCESS_REMOTE_READ)
		shca |= HCA_ACCESS_REMOTE_READ;
	if (access & IB_ACCESS_REMOTE_ATOMIC)
		shca |= HCA_ACCESS_REMOTE_ATOMIC;
	if (access & IB_ACCESS_MW_BIND)
		shca |= HCA_ACCESS_MW_BIND;
	return shca;
}

static int shca_mr_check(struct shca_dev *sdev, u64 start, u64 length,
			 u64 virt_addr, int access, struct ib_udata *udata)
{
	u64 last;

	/* No driver data is defined for this command. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	/* No zero-based MRs (ib_core rejects unknown bits). */
	if (access & IB_ZERO_BASED)
		return -EOPNOTSUPP;
	if (access & ~(SHCA_MR_ACCESS | SHCA_MR_ACCESS_IGNORED |
		       IB_ACCESS_ON_DEMAND))
		return -EINVAL;
	/* Remote write and atomic need local write (IB spec 10.6.3.1). */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	/* Implicit ODP: the whole address space, at its own addresses. */
	if ((access & IB_ACCESS_ON_DEMAND) &&
	    shca_odp_is_implicit(start, length))
		return virt_addr ? -EINVAL : 0;
	if (!length || length > sdev->caps.max_mr_size)
		return -EINVAL;
	if (check_add_overflow(virt_addr, length - 1, &last) ||
	    check_add_overflow(start, length - 1, &last))
		return -EINVAL;
	/* 4 KiB translation: iova and address share their page offset. */
	if ((virt_addr ^ start) & ~PAGE_MASK)
		return -EINVAL;
	return 0;
}

/* The umem's pages, one per PAGE_SIZE, in order. */
static struct page **shca_mr_pages(struct ib_umem *umem, unsigned long npages)
{
	struct sg_page_iter piter;
	struct page **pages;
	unsigned long n = 0;

	pages = kvmalloc_array(npages, sizeof(*pages),
			       GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!pages)
		return ERR_PTR(-ENOMEM);
	for_each_sgtable_page(&umem->sgt_append.sgt, &piter, 0) {
		if (WARN_ON_ONCE(n == npages))
			break;
		pages[n++] = sg_page_iter_page(&piter);
	}
	if (WARN_ON_ONCE(n != npages)) {
		kvfree(pages);
		return ERR_PTR(-EFAULT);
	}
	return pages;
}

struct ib_mr *shca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 virt_addr, int access,
			       struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibpd->device);
	struct hca_cmd_create_mkey_in in = {};
	struct hca_cmd_create_mkey_out out;
	struct shca_mr *mr;
	int err;

	err = shca_mr_check(sdev, start, length, virt_addr, access, udata);
	if (err)
		return ERR_PTR(err);
	if (access & IB_ACCESS_ON_DEMAND)
		return shca_odp_reg_user_mr(ibpd, start, length, virt_addr,
					    access);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}

	in.npages = ib_umem_num_pages(mr->umem);
	mr->pages = shca_mr_pages(mr->umem, in.npages);
	if (IS_ERR(mr->pages)) {
		err = PTR_ERR(mr->pages);
		goto err_umem;
	}

	in.pdn = to_shca_pd(ibpd)->pdn;
	in.access = shca_mr_access(access);
	in.iova = virt_addr;
	in.length = length;
	in.offset = ib_umem_offset(mr->umem);
	in.page_shift = PAGE_SHIFT;
	in.pages = mr->pages;
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_MKEY, &in, sizeof(in),
			    &out, sizeof(out));
	if (err)
		goto err_pages;

	/* One key for both, as mlx5: the model checks rights per access. */
	mr->mkey = out.mkey;
	mr->ibmr.lkey = out.mkey;
	mr->ibmr.rkey = out.mkey;
	/* ib_core sets these after reg_user_mr, but not for rereg's MR. */
	mr->ibmr.iova = virt_addr;
	mr->ibmr.length = length;
	mr->access = access;
	return &mr->ibmr;

err_pages:
	kvfree(mr->pages);
err_umem:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/*
 * ibv_rereg_mr of the rights or the PD only, of an MR whose pages are
 * pinned as the new rights need (writable if they write): MODIFY_MKEY,
 * the keys kept, as mlx5 does it (rdma-core's tests use the old rkey
 * after the change). ib_core then moves the MR to the new PD. -EAGAIN:
 * the MR cannot be changed in place.
 */
static int shca_rereg_in_place(struct shca_mr *mr, int flags, int access,
			       struct ib_pd *pd)
{
	struct shca_dev *sdev = to_shca_dev(mr->ibmr.device);
	struct hca_cmd_modify_mkey_in in = { .mkey = mr->mkey };
	int err;

	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if ((flags & IB_MR_REREG_TRANS) || mr->odp || !mr->umem ||
	    (access & IB_ACCESS_ON_DEMAND) ||
	    (ib_access_writable(access) && !mr->umem->writable))
		return -EAGAIN;
	err = shca_mr_check(sdev, mr->umem->address, mr->umem->length,
			    mr->ibmr.iova, access, NULL);
	if (err)
		return err;
	in.pdn = to_shca_pd(flags & IB_MR_REREG_PD ? pd : mr->ibmr.pd)->pdn;
	in.access = shca_mr_access(access);
	err = hca_exec(sdev->hca, HCA_CMD_MODIFY_MKEY, &in, sizeof(in), NULL, 0);
	if (!err)
		mr->access = access;
	return err;
}

/*
 * ibv_rereg_mr: in place when it can be (above), else a new MR (new keys)
 * on what the flags change and what the old one had for the rest;
 * ib_core puts it in the old one's handle and then deregisters the old
 * one, whose keys die with it. If the new one cannot be made the old one
 * is left as it was. A PD ib_core found equal to the old one has its flag
 * cleared: nothing left to change is no-op.
 */
struct ib_mr *shca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 virt_addr, int access,
				 struct ib_pd *pd, struct ib_udata *udata)
{
	struct shca_mr *old = to_shca_mr(ibmr);
	int err;

	if (!(flags & (IB_MR_REREG_TRANS | IB_MR_REREG_PD |
		       IB_MR_REREG_ACCESS)))
		return NULL;
	err = shca_rereg_in_place(old, flags, access, pd);
	if (err != -EAGAIN)
		return err ? ERR_PTR(err) : NULL;
	if (!(flags & IB_MR_REREG_TRANS) && old->odp) {
		shca_odp_range(old, &start, &length);
		virt_addr = ibmr->iova;
	} else if (!(flags & IB_MR_REREG_TRANS)) {
		start = old->umem->address;
		length = old->umem->length;
		virt_addr = ibmr->iova;
	}
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->access;
	return shca_reg_user_mr(pd, start, length, virt_addr, access, udata);
}

int shca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibmr->device);
	struct shca_mr *mr = to_shca_mr(ibmr);
	/* A fast-registration MKey's key byte is the consumer's: the index. */
	struct hca_cmd_destroy_mkey_in in = { .mkey = mr->mkey };
	int err;

	if (mr->odp)
		shca_odp_forget(mr);
	/*
	 * Returns once no engine access to the pages is in flight; refuses
	 * an MR that memory windows are bound to (IBTA 11.2.10.5).
	 */
	err = hca_exec(sdev->hca, HCA_CMD_DESTROY_MKEY, &in, sizeof(in),
		       NULL, 0);
	if (err == -EBUSY)
		return err;
	WARN_ON(err);
	if (mr->odp)
		shca_odp_free(mr);
	if (mr->umem)
		ib_umem_release(mr->umem);
	kvfree(mr->list);
	kvfree(mr->pages);
	kfree(mr);
	return 0;
}

/*
 * ib_alloc_mr(IB_MR_TYPE_MEM_REG): an MKey for REG_MR WQEs of kernel QPs
 * (fast registration), FREE until one registers it. The MTT array and the
 * page list map_mr_sg fills are the MR's for its lifetime.
 */
struct ib_mr *shca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			    u32 max_num_sg)
{
	struct shca_dev *sdev = to_shca_dev(ibpd->device);
	struct hca_cmd_create_mkey_in in = {
		.pdn = to_shca_pd(ibpd)->pdn, .access = HCA_MKEY_FAST_REG,
		.npages = max_num_sg,
	};
	struct hca_cmd_create_mkey_out out;
	struct shca_mr *mr;
	int err = -ENOMEM;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > sdev->caps.max_fast_reg_pages)
		return ERR_PTR(-EINVAL);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages = kvcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	mr->list = kvcalloc(max_num_sg, sizeof(*mr->list), GFP_KERNEL);
	if (!mr->pages || !mr->list)
		goto err_free;
	in.pages = mr->pages;
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_MKEY, &in, sizeof(in),
		       &out, sizeof(out));
	if (err)
		goto err_free;
	mr->mkey = out.mkey;
	mr->ibmr.lkey = out.mkey;
	mr->ibmr.rkey = out.mkey;
	return &mr->ibmr;

err_free:
	kvfree(mr->list);
	kvfree(mr->pages);
	kfree(mr);
	return ERR_PTR(err);
}

/* ib_sg_to_pages()'s callback: one page-aligned address into the list. */
static int shca_mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct shca_mr *mr = to_shca_mr(ibmr);

	if (mr->npages == mr->max_pages)
		return -ENOMEM;
	mr->list[mr->npages++] = cpu_to_be64(addr);
	return 0;
}

/*
 * ib_map_mr_sg(): the virt-DMA addresses of @sg as a page list of the
 * MKey's page size (4 KiB only, page_size_cap). Returns how many elements
 * were mapped, fewer than @sg_nents when the list is full.
 */
int shca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct shca_mr *mr = to_shca_mr(ibmr);

	if (ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, shca_mr_set_page);
}

/*
 * ib_core counts a device without this op as no kernel verbs provider
 * and binds none of its kernel clients (ib_mad, ib_cm, rdma_cm). With
 * IBK_LOCAL_DMA_LKEY, ib_alloc_pd() calls it only for
 * IB_PD_UNSAFE_GLOBAL_RKEY: remote access to all of memory, which this
 * device never grants.
 */
struct ib_mr *shca_get_dma_mr(struct ib_pd *ibpd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}
