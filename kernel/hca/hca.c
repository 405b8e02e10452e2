// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: instance lifetime and the firmware command interface.
 *
 * Today the model answers QUERY_CAPS, hands out PD numbers and owns the UAR
 * pages (one zeroed kernel page per UAR; the engine will poll them for
 * doorbells). Nothing here knows about ib_core.
 */
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/xarray.h>
#include <rdma/softhca-queue.h>

#include "hca.h"

struct shca_hca {
	const struct shca_caps *caps;
	struct xarray pds;		/* PD number (1..max_pd) -> value */
	struct xarray uars;		/* UAR index -> struct page */
};

/*
 * The limits of model revision 1. They describe the RC data path the model
 * implements (local fabric: requester and responder on this host); no SRQ,
 * UD, MW or multicast.
 */
static const struct shca_caps shca_caps_rev1 = {
	.model_rev		= SHCA_MODEL_REV,
	.fw_major		= SHCA_MODEL_REV,
	.fw_minor		= 0,
	.fw_subminor		= 0,
	.vendor_id		= 0x534843,	/* "SHC": not an IEEE OUI */
	.vendor_part_id		= 1,
	.hw_ver			= SHCA_MODEL_REV,
	.num_ports		= 1,

	.max_mtu		= 4096,
	.gid_tbl_len		= 128,
	.pkey_tbl_len		= 1,
	.max_msg_sz		= 0x80000000,
	.local_ca_ack_delay	= 15,

	.wqebb_size		= 64,
	.max_wqe_size		= 512,
	.cqe_size		= 64,
	.eqe_size		= 64,
	.bf_buf_size		= SOFTHCA_UAR_BF_SIZE,

	.max_qp			= 16384,
	.max_sq_wqebbs		= 32768,
	.max_rq_wqes		= 32768,
	.max_send_sge		= 16,
	.max_recv_sge		= 16,
	.max_sge_rd		= 16,
	.max_inline_data	= 256,
	.max_qp_rd_atom		= 16,
	.max_qp_init_rd_atom	= 16,
	.max_cq			= 16384,
	.max_cqe		= (1 << 22) - 1,
	.max_mr			= 65536,
	.max_pd			= 65536,
	.max_uar		= 8192,
	.max_comp_eqs		= 64,
	.max_mr_size		= 1ULL << 40,
	.page_size_cap		= SZ_4K,
	.flags			= SHCA_CAP_RC | SHCA_CAP_RNR_NAK_GEN |
				  SHCA_CAP_ATOMIC,
};

struct shca_hca *shca_hca_create(void)
{
	struct shca_hca *hca;

	hca = kzalloc(sizeof(*hca), GFP_KERNEL);
	if (!hca)
		return ERR_PTR(-ENOMEM);
	hca->caps = &shca_caps_rev1;
	xa_init_flags(&hca->pds, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->uars, XA_FLAGS_ALLOC);
	return hca;
}

void shca_hca_destroy(struct shca_hca *hca)
{
	struct page *page;
	unsigned long index;

	WARN_ONCE(!xa_empty(&hca->pds), "softhca: PDs leaked\n");
	WARN_ONCE(!xa_empty(&hca->uars), "softhca: UARs leaked\n");
	xa_for_each(&hca->uars, index, page)
		__free_page(page);
	xa_destroy(&hca->uars);
	xa_destroy(&hca->pds);
	kfree(hca);
}

static int shca_cmd_alloc_pd(struct shca_hca *hca,
			     struct shca_cmd_alloc_pd_out *out)
{
	u32 pdn;
	int err;

	err = xa_alloc(&hca->pds, &pdn, xa_mk_value(0),
		       XA_LIMIT(1, hca->caps->max_pd), GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOSPC : err;
	out->pdn = pdn;
	return 0;
}

static int shca_cmd_dealloc_pd(struct shca_hca *hca,
			       const struct shca_cmd_dealloc_pd_in *in)
{
	if (!xa_erase(&hca->pds, in->pdn))
		return -EINVAL;
	return 0;
}

static int shca_cmd_alloc_uar(struct shca_hca *hca,
			      struct shca_cmd_alloc_uar_out *out)
{
	struct page *page;
	u32 index;
	int err;

	page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!page)
		return -ENOMEM;
	err = xa_alloc(&hca->uars, &index, page,
		       XA_LIMIT(0, hca->caps->max_uar - 1), GFP_KERNEL);
	if (err) {
		__free_page(page);
		return err == -EBUSY ? -ENOSPC : err;
	}
	out->uar_index = index;
	return 0;
}

static int shca_cmd_free_uar(struct shca_hca *hca,
			     const struct shca_cmd_free_uar_in *in)
{
	struct page *page;

	page = xa_erase(&hca->uars, in->uar_index);
	if (!page)
		return -EINVAL;
	__free_page(page);
	return 0;
}

int shca_hca_exec(struct shca_hca *hca, u16 opcode, const void *in,
		  size_t inlen, void *out, size_t outlen)
{
	switch (opcode) {
	case SHCA_CMD_QUERY_CAPS:
		if (inlen || outlen != sizeof(struct shca_caps))
			return -EINVAL;
		memcpy(out, hca->caps, sizeof(struct shca_caps));
		return 0;
	case SHCA_CMD_ALLOC_PD:
		if (inlen || outlen != sizeof(struct shca_cmd_alloc_pd_out))
			return -EINVAL;
		return shca_cmd_alloc_pd(hca, out);
	case SHCA_CMD_DEALLOC_PD:
		if (inlen != sizeof(struct shca_cmd_dealloc_pd_in) || outlen)
			return -EINVAL;
		return shca_cmd_dealloc_pd(hca, in);
	case SHCA_CMD_ALLOC_UAR:
		if (inlen || outlen != sizeof(struct shca_cmd_alloc_uar_out))
			return -EINVAL;
		return shca_cmd_alloc_uar(hca, out);
	case SHCA_CMD_FREE_UAR:
		if (inlen != sizeof(struct shca_cmd_free_uar_in) || outlen)
			return -EINVAL;
		return shca_cmd_free_uar(hca, in);
	default:
		return -EOPNOTSUPP;
	}
}

unsigned long shca_hca_uar_pfn(struct shca_hca *hca, u32 uar_index)
{
	struct page *page = xa_load(&hca->uars, uar_index);

	return page ? page_to_pfn(page) : 0;
}
