// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the ib_device, its ops table and the device and
 * port queries. Every limit comes from the HCA model's QUERY_CAPS.
 */
#include <linux/etherdevice.h>
#include <linux/minmax.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/softhca-abi.h>

#include "softhca.h"

static int shca_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *attr,
			     struct ib_udata *udata)
{
	const struct hca_caps *caps = &to_shca_dev(ibdev)->caps;

	/* No driver data is defined for this command. */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = (u64)caps->fw_major << 32 | caps->fw_minor << 16 |
		       caps->fw_subminor;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = caps->max_mr_size;
	attr->page_size_cap = caps->page_size_cap;
	attr->vendor_id = caps->vendor_id;
	attr->vendor_part_id = caps->vendor_part_id;
	attr->hw_ver = caps->hw_ver;
	attr->max_qp = caps->max_qp;
	attr->max_qp_wr = min(caps->max_sq_wqebbs, caps->max_rq_wqes);
	/*
	 * CURR_QP_STATE_MOD: modify_qp honours IB_QP_CUR_STATE.
	 * PORT_ACTIVE_EVENT: port state changes are dispatched as events.
	 */
	attr->device_cap_flags = IB_DEVICE_CURR_QP_STATE_MOD |
				 IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID;
	if (caps->flags & HCA_CAP_RNR_NAK_GEN)
		attr->device_cap_flags |= IB_DEVICE_RC_RNR_NAK_GEN;
	/* UD_AV_PORT_ENFORCE: one port, so an AV is always the QP's. */
	if (caps->flags & HCA_CAP_UD)
		attr->device_cap_flags |= IB_DEVICE_UD_AV_PORT_ENFORCE;
	/*
	 * `rdma link del` may remove the device. LOCAL_DMA_LKEY: kernel QPs
	 * reach kernel memory through the reserved lkey (kverbs.c), so
	 * ib_alloc_pd() needs no get_dma_mr.
	 */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_LOCAL_DMA_LKEY;
	if (caps->flags & HCA_CAP_UD) {
		attr->kernel_cap_flags |= IBK_BLOCK_MULTICAST_LOOPBACK;
		attr->max_ah = caps->max_ah;
		attr->max_mcast_grp = caps->max_mcast_grp;
		attr->max_mcast_qp_attach = caps->max_mcast_qp_attach;
		attr->max_total_mcast_qp_attach =
			caps->max_total_mcast_qp_attach;
	}
	attr->max_srq = caps->max_srq;
	/* XRC domains, SRQs and QPs (xrcd.c, srq.c, qp.c): the local fabric. */
	if (caps->flags & HCA_CAP_XRC)
		attr->device_cap_flags |= IB_DEVICE_XRC;
	/* One WQE of a ring is the free list's tail, never posted. */
	attr->max_srq_wr = caps->max_srq_wqes - 1;
	attr->max_srq_sge = caps->max_srq_sge;
	attr->max_send_sge = caps->max_send_sge;
	attr->max_recv_sge = caps->max_recv_sge;
	attr->max_sge_rd = caps->max_sge_rd;
	/* Fast registration for kernel ULPs (mr.c, kverbs.c, mkey_fast.c). */
	attr->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
	attr->max_fast_reg_page_list_len = caps->max_fast_reg_pages;
	/* Memory windows (mw.c, mkey_mw.c) share the MKey index with MRs. */
	attr->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
				  IB_DEVICE_MEM_WINDOW_TYPE_2B;
	attr->max_mw = caps->max_mr;
	attr->max_cq = caps->max_cq;
	attr->max_cqe = caps->max_cqe;
	attr->cq_caps.max_cq_moderation_count = caps->max_cq_mod_count;
	attr->cq_caps.max_cq_moderation_period = caps->max_cq_mod_period;
	/* CQE timestamps (CREATE_CQ's clocks) count in the device clock. */
	attr->hca_core_clock = caps->core_clock_khz;
	attr->timestamp_mask = caps->timestamp_mask;
	attr->max_mr = caps->max_mr;
	attr->max_pd = caps->max_pd;
	attr->max_qp_rd_atom = caps->max_qp_rd_atom;
	attr->max_qp_init_rd_atom = caps->max_qp_init_rd_atom;
	attr->max_res_rd_atom = caps->max_qp * caps->max_qp_rd_atom;
	attr->atomic_cap = caps->flags & HCA_CAP_ATOMIC ?
			   IB_ATOMIC_HCA : IB_ATOMIC_NONE;
	attr->max_pkeys = caps->pkey_tbl_len;
	attr->local_ca_ack_delay = caps->local_ca_ack_delay;
	/* On-demand paging (odp.c, mkey_odp.c). */
	shca_odp_caps(to_shca_dev(ibdev), attr);
	return 0;
}

bool shca_netdev_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/* Largest IB MTU whose RoCE v2 packet fits in the netdev's MTU. */
enum ib_mtu shca_port_active_mtu(struct shca_dev *sdev)
{
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(sdev->ndev->mtu));

	return clamp(mtu, IB_MTU_256, ib_mtu_int_to_enum(sdev->caps.max_mtu));
}

static int shca_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *attr)
{
	struct shca_dev *sdev = to_shca_dev(ibdev);
	const struct hca_caps *caps = &sdev->caps;

	/* ib_core range-checked @port and zeroed @attr. */
	attr->gid_tbl_len = caps->gid_tbl_len;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	/* Reported to user space as IB_UVERBS_PCF_IP_BASED_GIDS. */
	attr->ip_gids = true;
	attr->max_msg_sz = caps->max_msg_sz;
	attr->pkey_tbl_len = caps->pkey_tbl_len;
	attr->max_vl_num = 1;
	attr->max_mtu = ib_mtu_int_to_enum(caps->max_mtu);

	attr->active_mtu = shca_port_active_mtu(sdev);

	if (shca_netdev_active(sdev->ndev)) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	}

	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static enum rdma_link_layer shca_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/*
 * The port's netdev, held for the caller. ib_core would find it without
 * this op (ib_device_set_netdev), but SMC-R looks for the RoCE device of
 * a netdev through this op only, as mlx5_ib offers it.
 */
static struct net_device *shca_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct net_device *ndev = to_shca_dev(ibdev)->ndev;

	/* Held by the device until dealloc_driver: never freed under us. */
	if (ndev)
		dev_hold(ndev);
	return ndev;
}

static int shca_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *immutable)
{
	const struct hca_caps *caps = &to_shca_dev(ibdev)->caps;

	immutable->pkey_tbl_len = caps->pkey_tbl_len;
	immutable->gid_tbl_len = caps->gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static int shca_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	if (index >= to_shca_dev(ibdev)->caps.pkey_tbl_len)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void shca_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	const struct hca_caps *caps = &to_shca_dev(ibdev)->caps;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", caps->fw_major,
		 caps->fw_minor, caps->fw_subminor);
}

/*
 * Called by ib_register_device() once the device has its name, before any
 * client (uverbs) sees it: the EQs and their vectors, named after it.
 * ib_core calls it again when the device moves to another network
 * namespace (rdma_dev_change_netns(), every client removed and added
 * again): the EQs stay, as the device and its name do.
 */
static int shca_enable_driver(struct ib_device *ibdev)
{
	struct shca_dev *sdev = to_shca_dev(ibdev);

	if (sdev->eqs)
		return 0;
	return shca_eqs_create(sdev);
}

/*
 * Last op ib_core calls: from ib_dealloc_device(), i.e. at the end of
 * unregistration or on a failed registration. Every ucontext and PD is gone.
 */
static void shca_dealloc_driver(struct ib_device *ibdev)
{
	struct shca_dev *sdev = to_shca_dev(ibdev);

	shca_dev_dead(sdev);
	/* Debugfs is gone; no CQ or QP is left: the EQs and vectors go. */
	shca_eqs_destroy(sdev);
	/* No PAGE_FAULT event comes any more: the last faults finish. */
	shca_odp_fini(sdev);
	if (sdev->hca)
		hca_destroy(sdev->hca);
	if (sdev->ndev)
		netdev_put(sdev->ndev, &sdev->ndev_tracker);
}

static const struct ib_device_ops shca_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SOFTHCA_UVERBS_ABI_VERSION,

	.add_gid = shca_add_gid,
	.advise_mr = shca_advise_mr,
	.alloc_hw_port_stats = shca_alloc_hw_port_stats,
	.alloc_mr = shca_alloc_mr,
	.alloc_mw = shca_alloc_mw,
	.alloc_pd = shca_alloc_pd,
	.alloc_xrcd = shca_alloc_xrcd,
	.alloc_ucontext = shca_alloc_ucontext,
	.attach_mcast = shca_attach_mcast,
	.counter_alloc_stats = shca_counter_alloc_stats,
	.counter_bind_qp = shca_counter_bind_qp,
	.counter_dealloc = shca_counter_dealloc,
	.counter_unbind_qp = shca_counter_unbind_qp,
	.counter_update_stats = shca_counter_update_stats,
	.create_ah = shca_create_ah,
	.create_cq = shca_create_cq,
	.create_qp = shca_create_qp,
	.create_srq = shca_create_srq,
	.create_user_ah = shca_create_ah,
	.dealloc_driver = shca_dealloc_driver,
	.dealloc_mw = shca_dealloc_mw,
	.dealloc_pd = shca_dealloc_pd,
	.dealloc_xrcd = shca_dealloc_xrcd,
	.dealloc_ucontext = shca_dealloc_ucontext,
	.del_gid = shca_del_gid,
	.dereg_mr = shca_dereg_mr,
	.destroy_ah = shca_destroy_ah,
	.destroy_cq = shca_destroy_cq,
	.pre_destroy_cq = shca_pre_destroy_cq,
	.destroy_qp = shca_destroy_qp,
	.destroy_srq = shca_destroy_srq,
	.detach_mcast = shca_detach_mcast,
	.disassociate_ucontext = shca_disassociate_ucontext,
	.enable_driver = shca_enable_driver,
	.fill_res_cq_entry = shca_fill_res_cq_entry,
	.fill_res_mr_entry = shca_fill_res_mr_entry,
	.fill_res_qp_entry = shca_fill_res_qp_entry,
	.get_dev_fw_str = shca_get_dev_fw_str,
	.get_dma_mr = shca_get_dma_mr,
	.get_hw_stats = shca_get_hw_stats,
	.get_link_layer = shca_get_link_layer,
	.get_netdev = shca_get_netdev,
	.get_port_immutable = shca_get_port_immutable,
	.map_mr_sg = shca_map_mr_sg,
	.mmap = shca_mmap,
	.mmap_free = shca_mmap_free,
	.modify_cq = shca_modify_cq,
	.modify_qp = shca_modify_qp,
	.modify_srq = shca_modify_srq,
	.poll_cq = shca_poll_cq,
	.post_recv = shca_post_recv,
	.post_send = shca_post_send,
	.post_srq_recv = shca_post_srq_recv,
	.query_ah = shca_query_ah,
	.query_device = shca_query_device,
	.query_pkey = shca_query_pkey,
	.query_port = shca_query_port,
	.query_qp = shca_query_qp,
	.query_srq = shca_query_srq,
	.reg_user_mr = shca_reg_user_mr,
	.rereg_user_mr = shca_rereg_user_mr,
	.req_notify_cq = shca_req_notify_cq,
	.resize_cq = shca_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, shca_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, shca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, shca_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, shca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, shca_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, shca_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, shca_xrcd, ibxrcd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, shca_ucontext, ibucontext),
};

/*
 * The netdev is the port's PHY: tell the HCA its state. The HCA raises a
 * PORT_CHANGE event on the async EQ when the state changed, which the EQ
 * handler dispatches as IB_EVENT_PORT_ACTIVE / PORT_ERR.
 */
static void shca_port_set(struct shca_dev *sdev, u32 flags)
{
	struct hca_cmd_set_port_state_in in = {
		.port = SHCA_PORT,
		.state = shca_netdev_active(sdev->ndev) ?
			 SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE :
			 SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN,
		.flags = flags,
	};

	WARN_ON(hca_exec(sdev->hca, HCA_CMD_SET_PORT_STATE, &in,
			      sizeof(in), NULL, 0));
}

/* Report a port state change, if any. Caller holds RTNL. */
void shca_port_update(struct shca_dev *sdev)
{
	ASSERT_RTNL();
	shca_port_set(sdev, 0);
}

/*
 * The state at registration, without an event, and the netdev as the
 * port's PHY: the wire to what is not a softhca device of this host.
 * Caller holds RTNL.
 */
void shca_port_init(struct shca_dev *sdev)
{
	struct hca_cmd_set_port_netdev_in in = {
		.port = SHCA_PORT,
		.ndev = sdev->ndev,
	};

	ASSERT_RTNL();
	shca_port_set(sdev, HCA_PORT_STATE_QUIET);
	/* Without it the device works on the local fabric alone. */
	if (hca_exec(sdev->hca, HCA_CMD_SET_PORT_NETDEV, &in, sizeof(in),
		     NULL, 0))
		ibdev_info(&sdev->ibdev, "no RoCEv2 wire: local fabric only\n");
}

/*
 * Allocate an ib_device bound to @ndev, with its HCA instance (named @name
 * in the model's debug messages), ready for ib_register_device(@name). On
 * error everything is undone.
 */
struct shca_dev *shca_dev_alloc(const char *name, struct net_device *ndev,
				struct device *parent)
{
	struct shca_dev *sdev;
	struct ib_device *ibdev;
	u8 mac[ETH_ALEN] __aligned(2);
	int err;

	sdev = ib_alloc_device(shca_dev, ibdev);
	if (!sdev)
		return ERR_PTR(-ENOMEM);
	ibdev = &sdev->ibdev;
	INIT_LIST_HEAD(&sdev->list);
	/* From here on shca_dealloc_driver() undoes whatever was done. */
	ib_set_device_ops(ibdev, &shca_dev_ops);
	/* Driver uverbs methods (wake.c): ENGINE_WAKE. */
	ibdev->driver_def = shca_uapi_defs;

	err = shca_odp_init(sdev);
	if (err)
		goto err;
	sdev->hca = hca_create(name);
	if (IS_ERR(sdev->hca)) {
		err = PTR_ERR(sdev->hca);
		sdev->hca = NULL;
		goto err;
	}
	err = hca_exec(sdev->hca, HCA_CMD_QUERY_CAPS, NULL, 0,
			    &sdev->caps, sizeof(sdev->caps));
	if (err)
		goto err;
	if (sdev->caps.num_ports != 1 || !sdev->caps.max_comp_eqs) {
		err = -EINVAL;
		goto err;
	}

	sdev->ndev = ndev;
	netdev_hold(ndev, &sdev->ndev_tracker, GFP_KERNEL);

	rtnl_lock();
	ether_addr_copy(mac, ndev->dev_addr);
	rtnl_unlock();
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, mac);
	strscpy(ibdev->node_desc, "softhca", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->local_dma_lkey = HCA_RESERVED_LKEY;
	ibdev->num_comp_vectors = clamp(min(num_online_cpus(),
					    shca_max_comp_vectors),
					1U, sdev->caps.max_comp_eqs);
	ibdev->dev.parent = parent;

	err = ib_device_set_netdev(ibdev, ndev, SHCA_PORT);
	if (err)
		goto err;
	return sdev;

err:
	ib_dealloc_device(ibdev);
	return ERR_PTR(err);
}
