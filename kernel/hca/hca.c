// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: instance lifetime and the firmware command interface.
 *
 * The model answers QUERY_CAPS, hands out PD numbers, owns the UAR pages
 * (one zeroed kernel page per UAR, with its doorbell area) and the device
 * page, and dispatches every command through one table (hca_cmds[]:
 * opcode, name, the sizes of its structures, handler) to the handlers here
 * and in mkey.c, cq_ctx.c, qp_ctx.c, fabric.c, eq_ctx.c and counters.c.
 * Nothing here knows about ib_core.
 */
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>
#include <rdma/softhca-queue.h>

#include "engine.h"
#include "model.h"
#include "wire.h"

/*
 * The limits of model revision 1. They describe the data path the model
 * implements (local fabric: requester and responder on this host): RC,
 * UD with multicast, SRQs; no MW.
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
	/* mlx5's limits: a 16-bit count, a 12-bit period. */
	.max_cq_mod_count	= 0xffff,
	.max_cq_mod_period	= 0xfff,
	/* CLOCK_MONOTONIC ns: 1 GHz, never past S64_MAX (as mlx5 reports). */
	.core_clock_khz		= 1000000,
	.timestamp_mask		= S64_MAX,
	.max_mr			= 65536,
	.max_fast_reg_pages	= 512,
	.max_pd			= 65536,
	.max_xrcds		= 65536,
	.max_uar		= 8192,
	.max_comp_eqs		= 64,
	.max_q_counters		= 1024,
	/* AVs live in the WQEs: address handles cost the HCA nothing. */
	.max_ah			= S32_MAX,
	.max_srq		= 8192,
	/* 16-bit WQE indexes and counters, as mlx5's SRQ WQEs have. */
	.max_srq_wqes		= 32768,
	.max_srq_sge		= 16,
	.max_mcast_grp		= 8192,
	.max_mcast_qp_attach	= 240,		/* a ConnectX's */
	.max_total_mcast_qp_attach = 8192 * 240,
	.max_mr_size		= 1ULL << 40,
	.page_size_cap		= SZ_4K,
	.flags			= HCA_CAP_RC | HCA_CAP_RNR_NAK_GEN |
				  HCA_CAP_ATOMIC | HCA_CAP_UD | HCA_CAP_XRC |
				  HCA_CAP_ODP,
};

u64 hca_read_clock(struct hca *hca)
{
	return ktime_get_ns();
}

static void hca_free(struct hca *hca)
{
	hca_wire_fini(hca);
	hca_qcnt_fini(hca);
	if (hca->device_page)
		__free_page(hca->device_page);
	kvfree(hca->mkey_variant);
	kfree(hca->gids);
	kfree(hca);
}

struct hca *hca_create(const char *name)
{
	const struct hca_caps *caps = &hca_caps_rev1;
	struct softhca_device_page *device_page;
	struct hca *hca;
	int err;

	hca = kzalloc(sizeof(*hca), GFP_KERNEL);
	if (!hca)
		return ERR_PTR(-ENOMEM);
	hca->caps = caps;
	strscpy(hca->name, name, sizeof(hca->name));
	xa_init_flags(&hca->pds, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->uars, XA_FLAGS_ALLOC);
	xa_init_flags(&hca->mkeys, XA_FLAGS_ALLOC1);
	mutex_init(&hca->mw_lock);
	xa_init_flags(&hca->cqs, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->qps, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->srqs, XA_FLAGS_ALLOC1);
	xa_init_flags(&hca->xrcds, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&hca->fabric_node);
	spin_lock_init(&hca->gid_lock);
	atomic_set(&hca->num_qps, 0);
	hca_qcnt_init(hca);

	hca->gids = kcalloc(caps->gid_tbl_len, sizeof(*hca->gids),
			    GFP_KERNEL);
	/* Indexes 1..max_mr; index 0 is never handed out. */
	hca->mkey_variant = kvzalloc(caps->max_mr + 1, GFP_KERNEL);
	hca->device_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!hca->gids || !hca->mkey_variant || !hca->device_page ||
	    hca_wire_init(hca)) {
		hca_free(hca);
		return ERR_PTR(-ENOMEM);
	}
	/* Never cleared: a gone device's mapping is the zero page (live 0). */
	device_page = page_address(hca->device_page);
	device_page->live = SOFTHCA_DEVICE_LIVE;

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
	/* After the engine: its thread count shapes every area. */
	hca->kernel_db = hca_db_area_create(hca);
	if (!hca->kernel_db) {
		hca_engine_fini(hca);
		hca_eq_fini(hca);
		hca_free(hca);
		return ERR_PTR(-ENOMEM);
	}
	hca_fabric_add(hca);
	return hca;
}

void hca_destroy(struct hca *hca)
{
	struct hca_uar *uar;
	unsigned long index;

	/* No packet reaches this HCA any more, then stop its engine. */
	hca_wire_unbind(hca);
	hca_fabric_del(hca);
	xa_for_each(&hca->uars, index, uar)
		hca_engine_area_fini(uar->db);	/* leaked: WARNed below */
	hca_engine_area_fini(hca->kernel_db);
	hca_db_area_destroy(hca->kernel_db);
	hca_engine_fini(hca);
	/* The driver destroyed its EQs: no EQE is written any more. */
	hca_eq_fini(hca);

	WARN_ONCE(!xa_empty(&hca->qps), "softhca: QPs leaked\n");
	WARN_ONCE(!xa_empty(&hca->srqs), "softhca: SRQs leaked\n");
	WARN_ONCE(!xa_empty(&hca->xrcds), "softhca: XRCDs leaked\n");
	WARN_ONCE(!xa_empty(&hca->cqs), "softhca: CQs leaked\n");
	WARN_ONCE(!xa_empty(&hca->mkeys), "softhca: MKeys leaked\n");
	WARN_ONCE(!xa_empty(&hca->pds), "softhca: PDs leaked\n");
	WARN_ONCE(!xa_empty(&hca->uars), "softhca: UARs leaked\n");
	/* Leaked objects stay allocated: the engine may not have let go. */
	xa_destroy(&hca->uars);
	xa_destroy(&hca->pds);
	xa_destroy(&hca->mkeys);
	xa_destroy(&hca->cqs);
	xa_destroy(&hca->qps);
	xa_destroy(&hca->srqs);
	xa_destroy(&hca->xrcds);
	hca_free(hca);
}

int hca_model_init(void)
{
	return hca_wire_module_init();
}

void hca_model_exit(void)
{
	hca_wire_module_exit();
}

static int hca_cmd_alloc_pd(struct hca *hca, const void *inbox, void *outbox)
{
	struct hca_cmd_alloc_pd_out *out = outbox;
	u32 pdn;
	int err;

	err = xa_alloc(&hca->pds, &pdn, xa_mk_value(0),
		       XA_LIMIT(1, hca->caps->max_pd), GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOSPC : err;
	out->pdn = pdn;
	return 0;
}

static int hca_cmd_dealloc_pd(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_dealloc_pd_in *in = inbox;

	if (!xa_erase(&hca->pds, in->pdn))
		return -EINVAL;
	return 0;
}

static int hca_cmd_alloc_uar(struct hca *hca, const void *inbox, void *outbox)
{
	struct hca_cmd_alloc_uar_out *out = outbox;
	struct hca_uar *uar;
	u32 index;
	int err = -ENOMEM;

	uar = kzalloc(sizeof(*uar), GFP_KERNEL);
	if (!uar)
		return -ENOMEM;
	uar->page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!uar->page)
		goto err_free;
	uar->db = hca_db_area_create(hca);
	if (!uar->db)
		goto err_page;
	err = xa_alloc(&hca->uars, &index, uar,
		       XA_LIMIT(0, hca->caps->max_uar - 1), GFP_KERNEL);
	if (err) {
		err = err == -EBUSY ? -ENOSPC : err;
		goto err_db;
	}
	uar->index = index;
	out->uar_index = index;
	return 0;

err_db:
	hca_db_area_destroy(uar->db);
err_page:
	__free_page(uar->page);
err_free:
	kfree(uar);
	return err;
}

/* Every QP and CQ that rang through it was destroyed before. */
static int hca_cmd_free_uar(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_free_uar_in *in = inbox;
	struct hca_uar *uar;

	uar = xa_erase(&hca->uars, in->uar_index);
	if (!uar)
		return -EINVAL;
	hca_engine_area_fini(uar->db);
	hca_db_area_destroy(uar->db);
	__free_page(uar->page);
	kfree_rcu(uar, rcu);
	return 0;
}

static int hca_cmd_query_caps(struct hca *hca, const void *inbox,
			      void *outbox)
{
	memcpy(outbox, hca->caps, sizeof(struct hca_caps));
	return 0;
}

/* One firmware command: its structures' sizes (0: none) and handler. */
struct hca_cmd {
	u16 opcode;			/* HCA_CMD_* */
	const char *name;
	size_t inlen;
	size_t outlen;
	int (*exec)(struct hca *hca, const void *inbox, void *outbox);
};

#define HCA_CMD(op, fn, in_size, out_size)				\
	{ .opcode = HCA_CMD_##op, .name = #op, .inlen = (in_size),	\
	  .outlen = (out_size), .exec = (fn) }

/* Every command the model answers (hca.h), in no particular order. */
static const struct hca_cmd hca_cmds[] = {
	HCA_CMD(QUERY_CAPS, hca_cmd_query_caps, 0, sizeof(struct hca_caps)),
	HCA_CMD(ALLOC_PD, hca_cmd_alloc_pd,
		0, sizeof(struct hca_cmd_alloc_pd_out)),
	HCA_CMD(DEALLOC_PD, hca_cmd_dealloc_pd,
		sizeof(struct hca_cmd_dealloc_pd_in), 0),
	HCA_CMD(ALLOC_UAR, hca_cmd_alloc_uar,
		0, sizeof(struct hca_cmd_alloc_uar_out)),
	HCA_CMD(FREE_UAR, hca_cmd_free_uar,
		sizeof(struct hca_cmd_free_uar_in), 0),
	HCA_CMD(ATTACH_TO_MCG, hca_cmd_attach_to_mcg,
		sizeof(struct hca_cmd_mcg_in), 0),
	HCA_CMD(DETACH_FROM_MCG, hca_cmd_detach_from_mcg,
		sizeof(struct hca_cmd_mcg_in), 0),
	HCA_CMD(CREATE_MKEY, hca_cmd_create_mkey,
		sizeof(struct hca_cmd_create_mkey_in),
		sizeof(struct hca_cmd_create_mkey_out)),
	HCA_CMD(DESTROY_MKEY, hca_cmd_destroy_mkey,
		sizeof(struct hca_cmd_destroy_mkey_in), 0),
	HCA_CMD(MODIFY_MKEY, hca_cmd_modify_mkey,
		sizeof(struct hca_cmd_modify_mkey_in), 0),
	HCA_CMD(ODP_MAP, hca_cmd_odp_map,
		sizeof(struct hca_cmd_odp_map_in), 0),
	HCA_CMD(ODP_UNMAP, hca_cmd_odp_unmap,
		sizeof(struct hca_cmd_odp_unmap_in), 0),
	HCA_CMD(PAGE_FAULT_RESUME, hca_cmd_page_fault_resume,
		sizeof(struct hca_cmd_page_fault_resume_in), 0),
	HCA_CMD(CREATE_CQ, hca_cmd_create_cq,
		sizeof(struct hca_cmd_create_cq_in),
		sizeof(struct hca_cmd_create_cq_out)),
	HCA_CMD(DESTROY_CQ, hca_cmd_destroy_cq,
		sizeof(struct hca_cmd_destroy_cq_in), 0),
	HCA_CMD(CREATE_QP, hca_cmd_create_qp,
		sizeof(struct hca_cmd_create_qp_in),
		sizeof(struct hca_cmd_create_qp_out)),
	HCA_CMD(DESTROY_QP, hca_cmd_destroy_qp,
		sizeof(struct hca_cmd_destroy_qp_in), 0),
	HCA_CMD(MODIFY_QP, hca_cmd_modify_qp,
		sizeof(struct hca_cmd_modify_qp_in), 0),
	HCA_CMD(QUERY_QP, hca_cmd_query_qp,
		sizeof(struct hca_cmd_query_qp_in),
		sizeof(struct hca_cmd_query_qp_out)),
	/* SRQs (srq_ctx.c) */
	HCA_CMD(CREATE_SRQ, hca_cmd_create_srq,
		sizeof(struct hca_cmd_create_srq_in),
		sizeof(struct hca_cmd_create_srq_out)),
	HCA_CMD(DESTROY_SRQ, hca_cmd_destroy_srq,
		sizeof(struct hca_cmd_srq_in), 0),
	HCA_CMD(QUERY_SRQ, hca_cmd_query_srq,
		sizeof(struct hca_cmd_srq_in),
		sizeof(struct hca_cmd_query_srq_out)),
	HCA_CMD(ARM_RQ, hca_cmd_arm_rq, sizeof(struct hca_cmd_srq_in), 0),
	HCA_CMD(ALLOC_XRCD, hca_cmd_alloc_xrcd,
		0, sizeof(struct hca_cmd_alloc_xrcd_out)),
	HCA_CMD(DEALLOC_XRCD, hca_cmd_dealloc_xrcd,
		sizeof(struct hca_cmd_dealloc_xrcd_in), 0),
	HCA_CMD(SET_ROCE_ADDRESS, hca_cmd_set_roce_address,
		sizeof(struct hca_cmd_set_roce_address_in), 0),
	/* EQs and port state (eq_ctx.c) */
	HCA_CMD(CREATE_EQ, hca_cmd_create_eq,
		sizeof(struct hca_cmd_create_eq_in),
		sizeof(struct hca_cmd_create_eq_out)),
	HCA_CMD(DESTROY_EQ, hca_cmd_destroy_eq,
		sizeof(struct hca_cmd_destroy_eq_in), 0),
	HCA_CMD(QUERY_EQ, hca_cmd_query_eq,
		sizeof(struct hca_cmd_query_eq_in),
		sizeof(struct hca_cmd_query_eq_out)),
	HCA_CMD(GEN_EQE, hca_cmd_gen_eqe,
		sizeof(struct hca_cmd_gen_eqe_in), 0),
	HCA_CMD(SET_PORT_STATE, hca_cmd_set_port_state,
		sizeof(struct hca_cmd_set_port_state_in), 0),
	/* The port's netdev (wire_net.c) */
	HCA_CMD(SET_PORT_NETDEV, hca_cmd_set_port_netdev,
		sizeof(struct hca_cmd_set_port_netdev_in), 0),
	HCA_CMD(QUERY_MKEY, hca_cmd_query_mkey,
		sizeof(struct hca_cmd_query_mkey_in),
		sizeof(struct hca_cmd_query_mkey_out)),
	HCA_CMD(QUERY_CQ, hca_cmd_query_cq,
		sizeof(struct hca_cmd_query_cq_in),
		sizeof(struct hca_cmd_query_cq_out)),
	HCA_CMD(MODIFY_CQ, hca_cmd_modify_cq,
		sizeof(struct hca_cmd_modify_cq_in),
		sizeof(struct hca_cmd_modify_cq_out)),
	HCA_CMD(QUERY_HCA_COUNTERS, hca_cmd_query_hca_counters, 0,
		sizeof(struct hca_cmd_query_hca_counters_out)),
	HCA_CMD(ALLOC_Q_COUNTER, hca_cmd_alloc_q_counter, 0,
		sizeof(struct hca_cmd_alloc_q_counter_out)),
	HCA_CMD(DEALLOC_Q_COUNTER, hca_cmd_dealloc_q_counter,
		sizeof(struct hca_cmd_dealloc_q_counter_in), 0),
	HCA_CMD(QUERY_Q_COUNTER, hca_cmd_query_q_counter,
		sizeof(struct hca_cmd_query_q_counter_in),
		sizeof(struct hca_cmd_query_q_counter_out)),
	HCA_CMD(SET_QP_COUNTER, hca_cmd_set_qp_counter,
		sizeof(struct hca_cmd_set_qp_counter_in), 0),
};

static const struct hca_cmd *hca_cmd_find(u16 opcode)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hca_cmds); i++)
		if (hca_cmds[i].opcode == opcode)
			return &hca_cmds[i];
	return NULL;
}

/* A command's name, for debug output: the table's, or UNKNOWN. */
const char *hca_cmd_name(u16 opcode)
{
	const struct hca_cmd *cmd = hca_cmd_find(opcode);

	return cmd ? cmd->name : HCA_NAME_UNKNOWN;
}

/* What each errno of a refused command means (hca.h, hca_exec()). */
static const char *hca_cmd_refusal(int err)
{
	switch (err) {
	case -EOPNOTSUPP:	return "unknown opcode";
	case -EINVAL:		return "bad length, argument or resource number";
	case -ENOSPC:		return "resource exhausted";
	case -ENOMEM:		return "out of memory";
	case -EAGAIN:		return "QP state changed, query again";
	default:		return "refused";
	}
}

int hca_exec(struct hca *hca, u16 opcode, const void *in,
	     size_t inlen, void *out, size_t outlen)
{
	const struct hca_cmd *cmd = hca_cmd_find(opcode);
	int err;

	if (!cmd)
		err = -EOPNOTSUPP;
	/* Exactly the command's structures, or nothing when it has none. */
	else if (inlen != cmd->inlen || outlen != cmd->outlen)
		err = -EINVAL;
	else
		err = cmd->exec(hca, in, out);
	if (unlikely(err))
		hca_dbg(hca, "%s (0x%x) refused: %pe (%s; in %zu, out %zu bytes)\n",
			hca_cmd_name(opcode), opcode, ERR_PTR(err),
			hca_cmd_refusal(err), inlen, outlen);
	return err;
}

unsigned long hca_uar_pfn(struct hca *hca, u32 uar_index)
{
	struct hca_uar *uar = xa_load(&hca->uars, uar_index);

	return uar ? page_to_pfn(uar->page) : 0;
}

unsigned long hca_device_pfn(struct hca *hca)
{
	return page_to_pfn(hca->device_page);
}

unsigned long hca_uar_db_pfn(struct hca *hca, u32 uar_index,
			     unsigned long pgoff)
{
	struct hca_uar *uar = xa_load(&hca->uars, uar_index);

	if (!uar || pgoff >= HCA_DB_AREA_PAGES)
		return 0;
	return vmalloc_to_pfn((void *)uar->db->hint + (pgoff << PAGE_SHIFT));
}

struct hca_uar *hca_uar_find(struct hca *hca, u32 uar_index)
{
	return xa_load(&hca->uars, uar_index);
}

/* The doorbell area of CREATE_QP / CREATE_CQ's @uar_index, or NULL. */
struct hca_db_area *hca_uar_db(struct hca *hca, u32 uar_index)
{
	struct hca_uar *uar;

	if (uar_index == HCA_UAR_KERNEL)
		return hca->kernel_db;
	uar = xa_load(&hca->uars, uar_index);
	return uar ? uar->db : NULL;
}

/* A PD number that ALLOC_PD handed out and DEALLOC_PD did not take back. */
bool hca_pd_valid(struct hca *hca, u32 pdn)
{
	return pdn && xa_load(&hca->pds, pdn);
}

