// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: instance lifetime and the firmware command interface.
 *
 * The model answers QUERY_CAPS, hands out PD numbers, owns the UAR pages
 * (one zeroed kernel page per UAR) and the engine page, and dispatches the
 * object commands to mkey.c, cq_ctx.c, qp_ctx.c and fabric.c, the counter
 * commands to counters.c. Nothing here knows about ib_core.
 */
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/xarray.h>
#include <rdma/softhca-queue.h>

#include "engine.h"
#include "model.h"

/*
 * The limits of model revision 1. They describe the RC data path the model
 * implements (local fabric: requester and responder on this host); no SRQ,
 * UD, MW or multicast.
 */
static const struct hca_caps hca_caps_rev1 = {
	.model_rev		= HCA_MODEL_REV,
	.fw_major		= HCA_MODEL_REV,
	.fw_minor		= 0,
	.fw_subminor		= 0,
	.vendor_id		= 0x534843,	/* "SHC": not an IEEE OUI */
	.vendor_part_id		= 1,
	.hw_ver			= HCA_MODEL_REV,
	.num_ports		= 1,

	.max_mtu		= 4096,
	.gid_tbl_len		= 128,
	.pkey_tbl_len		= 1,
	/* 1 GiB as mlx5; 2^31 would be an SGE the inline bit claims. */
	.max_msg_sz		= 1U << 30,
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
	.max_q_counters		= 1024,
	.max_mr_size		= 1ULL << 40,
	.page_size_cap		= SZ_4K,
	.flags			= HCA_CAP_RC | HCA_CAP_RNR_NAK_GEN |
				  HCA_CAP_ATOMIC,
};

static void hca_free(struct hca *hca)
{
	hca_qcnt_fini(hca);
	if (hca->engine_page)
		__free_page(hca->engine_page);
	kvfree(hca->mkey_variant);
	kfree(hca->gids);
	kfree(hca);
}

struct hca *hca_create(void)
{
	const struct hca_caps *caps = &hca_caps_rev1;
	struct hca *hca;
	int err;

	hca = kzalloc(sizeof(*hca), GFP_KERNEL);
	if (!hca)
		return ERR_PTR(-ENOMEM);
	hca->caps = caps;
	xa_init_flags(&hca->pds, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->uars, XA_FLAGS_ALLOC);
	xa_init_flags(&hca->mkeys, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->cqs, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->qps, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&hca->fabric_node);
	spin_lock_init(&hca->gid_lock);
	atomic_set(&hca->num_qps, 0);
	hca_qcnt_init(hca);

	hca->gids = kcalloc(caps->gid_tbl_len, sizeof(*hca->gids),
			    GFP_KERNEL);
	/* Indexes 1..max_mr; index 0 is never handed out. */
	hca->mkey_variant = kvzalloc(caps->max_mr + 1, GFP_KERNEL);
	hca->engine_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!hca->gids || !hca->mkey_variant || !hca->engine_page) {
		hca_free(hca);
		return ERR_PTR(-ENOMEM);
	}

	err = hca_eq_init(hca);
	if (err) {
		hca_free(hca);
		return ERR_PTR(err);
	}
	err = hca_engine_init(hca);
	if (err) {
		hca_eq_fini(hca);
		hca_free(hca);
		return ERR_PTR(err);
	}
	hca_fabric_add(hca);
	return hca;
}

void hca_destroy(struct hca *hca)
{
	struct page *page;
	unsigned long index;

	/* No packet reaches this HCA any more, then stop its engine. */
	hca_fabric_del(hca);
	hca_engine_fini(hca);
	/* The driver destroyed its EQs: no EQE is written any more. */
	hca_eq_fini(hca);

	WARN_ONCE(!xa_empty(&hca->qps), "softhca: QPs leaked\n");
	WARN_ONCE(!xa_empty(&hca->cqs), "softhca: CQs leaked\n");
	WARN_ONCE(!xa_empty(&hca->mkeys), "softhca: MKeys leaked\n");
	WARN_ONCE(!xa_empty(&hca->pds), "softhca: PDs leaked\n");
	WARN_ONCE(!xa_empty(&hca->uars), "softhca: UARs leaked\n");
	xa_for_each(&hca->uars, index, page)
		__free_page(page);
	xa_destroy(&hca->uars);
	xa_destroy(&hca->pds);
	/* Leaked objects stay allocated: the engine may not have let go. */
	xa_destroy(&hca->mkeys);
	xa_destroy(&hca->cqs);
	xa_destroy(&hca->qps);
	hca_free(hca);
}

static int hca_cmd_alloc_pd(struct hca *hca,
			     struct hca_cmd_alloc_pd_out *out)
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

static int hca_cmd_dealloc_pd(struct hca *hca,
			       const struct hca_cmd_dealloc_pd_in *in)
{
	if (!xa_erase(&hca->pds, in->pdn))
		return -EINVAL;
	return 0;
}

static int hca_cmd_alloc_uar(struct hca *hca,
			      struct hca_cmd_alloc_uar_out *out)
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

static int hca_cmd_free_uar(struct hca *hca,
			     const struct hca_cmd_free_uar_in *in)
{
	struct page *page;

	page = xa_erase(&hca->uars, in->uar_index);
	if (!page)
		return -EINVAL;
	__free_page(page);
	return 0;
}

/* Exactly the command's structures, or nothing when it has none. */
#define HCA_CMD_LEN(in_type, out_type) \
	(inlen == (in_type) && outlen == (out_type))

int hca_exec(struct hca *hca, u16 opcode, const void *in,
		  size_t inlen, void *out, size_t outlen)
{
	switch (opcode) {
	case HCA_CMD_QUERY_CAPS:
		if (inlen || outlen != sizeof(struct hca_caps))
			return -EINVAL;
		memcpy(out, hca->caps, sizeof(struct hca_caps));
		return 0;
	case HCA_CMD_ALLOC_PD:
		if (inlen || outlen != sizeof(struct hca_cmd_alloc_pd_out))
			return -EINVAL;
		return hca_cmd_alloc_pd(hca, out);
	case HCA_CMD_DEALLOC_PD:
		if (inlen != sizeof(struct hca_cmd_dealloc_pd_in) || outlen)
			return -EINVAL;
		return hca_cmd_dealloc_pd(hca, in);
	case HCA_CMD_ALLOC_UAR:
		if (inlen || outlen != sizeof(struct hca_cmd_alloc_uar_out))
			return -EINVAL;
		return hca_cmd_alloc_uar(hca, out);
	case HCA_CMD_FREE_UAR:
		if (inlen != sizeof(struct hca_cmd_free_uar_in) || outlen)
			return -EINVAL;
		return hca_cmd_free_uar(hca, in);
	case HCA_CMD_CREATE_MKEY:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_create_mkey_in),
				  sizeof(struct hca_cmd_create_mkey_out)))
			return -EINVAL;
		return hca_cmd_create_mkey(hca, in, out);
	case HCA_CMD_DESTROY_MKEY:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_destroy_mkey_in), 0))
			return -EINVAL;
		return hca_cmd_destroy_mkey(hca, in);
	case HCA_CMD_CREATE_CQ:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_create_cq_in),
				  sizeof(struct hca_cmd_create_cq_out)))
			return -EINVAL;
		return hca_cmd_create_cq(hca, in, out);
	case HCA_CMD_DESTROY_CQ:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_destroy_cq_in), 0))
			return -EINVAL;
		return hca_cmd_destroy_cq(hca, in);
	case HCA_CMD_CREATE_QP:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_create_qp_in),
				  sizeof(struct hca_cmd_create_qp_out)))
			return -EINVAL;
		return hca_cmd_create_qp(hca, in, out);
	case HCA_CMD_DESTROY_QP:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_destroy_qp_in), 0))
			return -EINVAL;
		return hca_cmd_destroy_qp(hca, in);
	case HCA_CMD_MODIFY_QP:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_modify_qp_in), 0))
			return -EINVAL;
		return hca_cmd_modify_qp(hca, in);
	case HCA_CMD_QUERY_QP:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_query_qp_in),
				  sizeof(struct hca_cmd_query_qp_out)))
			return -EINVAL;
		return hca_cmd_query_qp(hca, in, out);
	case HCA_CMD_SET_ROCE_ADDRESS:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_set_roce_address_in),
				  0))
			return -EINVAL;
		return hca_cmd_set_roce_address(hca, in);
	case HCA_CMD_QUERY_MKEY:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_query_mkey_in),
				  sizeof(struct hca_cmd_query_mkey_out)))
			return -EINVAL;
		return hca_cmd_query_mkey(hca, in, out);
	case HCA_CMD_QUERY_CQ:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_query_cq_in),
				  sizeof(struct hca_cmd_query_cq_out)))
			return -EINVAL;
		return hca_cmd_query_cq(hca, in, out);
	case HCA_CMD_QUERY_HCA_COUNTERS:
		if (!HCA_CMD_LEN(0,
				  sizeof(struct hca_cmd_query_hca_counters_out)))
			return -EINVAL;
		return hca_cmd_query_hca_counters(hca, out);
	case HCA_CMD_ALLOC_Q_COUNTER:
		if (!HCA_CMD_LEN(0, sizeof(struct hca_cmd_alloc_q_counter_out)))
			return -EINVAL;
		return hca_cmd_alloc_q_counter(hca, out);
	case HCA_CMD_DEALLOC_Q_COUNTER:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_dealloc_q_counter_in), 0))
			return -EINVAL;
		return hca_cmd_dealloc_q_counter(hca, in);
	case HCA_CMD_QUERY_Q_COUNTER:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_query_q_counter_in),
				  sizeof(struct hca_cmd_query_q_counter_out)))
			return -EINVAL;
		return hca_cmd_query_q_counter(hca, in, out);
	case HCA_CMD_SET_QP_COUNTER:
		if (!HCA_CMD_LEN(sizeof(struct hca_cmd_set_qp_counter_in), 0))
			return -EINVAL;
		return hca_cmd_set_qp_counter(hca, in);
	default:
		/* EQs and port state (eq_ctx.c), or -EOPNOTSUPP. */
		return hca_eq_exec(hca, opcode, in, inlen, out, outlen);
	}
}

unsigned long hca_uar_pfn(struct hca *hca, u32 uar_index)
{
	struct page *page = xa_load(&hca->uars, uar_index);

	return page ? page_to_pfn(page) : 0;
}

unsigned long hca_engine_pfn(struct hca *hca)
{
	return page_to_pfn(hca->engine_page);
}

/* A PD number that ALLOC_PD handed out and DEALLOC_PD did not take back. */
bool hca_pd_valid(struct hca *hca, u32 pdn)
{
	return pdn && xa_load(&hca->pds, pdn);
}

void hca_doorbell_notify(struct hca *hca)
{
	struct softhca_engine_page *page = page_address(hca->engine_page);

	/*
	 * The caller's doorbell record before the flag; pairs with the
	 * engine's barrier between setting NEED_WAKEUP and its last look at
	 * every doorbell (as the provider does, user/engine.c).
	 */
	smp_mb();
	if (READ_ONCE(page->flags) & SOFTHCA_ENGINE_NEED_WAKEUP)
		hca_engine_thread_wake();
}
