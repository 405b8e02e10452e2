// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: address handles (create_ah, create_user_ah,
 * destroy_ah, query_ah).
 *
 * An address handle costs the HCA nothing: as on mlx5, its address vector
 * (struct softhca_av, <rdma/softhca-wqe.h>) is copied into the datagram
 * segment of every WQE that uses it. For a user AH ib_core resolved the
 * destination MAC (ib_uverbs' create_ah) and the driver returns it in the
 * response; the provider builds its own AV with the same builder,
 * softhca_set_av(). For a kernel AH the caller's rdma_ah_attr carries the
 * MAC (rdma_cm, ib_init_ah_attr_from_wc() resolve it) and the driver keeps
 * the AV for kverbs.c's post_send. Nothing here allocates or sleeps, so
 * create_ah serves the atomic (not RDMA_CREATE_AH_SLEEPABLE) case too.
 */
#include <rdma/ib_verbs.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

/* A RoCE v2 address of this port: what the HCA can send to. */
static int shca_ah_check(struct shca_dev *sdev, const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    rdma_ah_get_port_num(ah) != SHCA_PORT ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	if (!grh->sgid_attr || grh->sgid_attr->port_num != SHCA_PORT ||
	    grh->sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP ||
	    grh->sgid_index >= sdev->caps.gid_tbl_len)
		return -EINVAL;
	/*
	 * Neither a flow label's bits above its 20 nor an SL above 7 is
	 * refused: ib_core passes them and the hardware drivers drop them,
	 * and the AV keeps the 20 bits and the 3-bit priority
	 * (softhca_set_av()). UCX sets the flow label's (its RoCE source
	 * port choice); an AH made from a datagram's work completion
	 * (ibv_init_ah_from_wc()) has the SL the provider reports, the
	 * packet type (0xa over IPv4), as mlx5's.
	 */
	return 0;
}

int shca_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibah->device);
	const struct rdma_ah_attr *ah = init_attr->ah_attr;
	struct shca_ah *sah = to_shca_ah(ibah);
	const struct ib_global_route *grh;
	int err;

	err = shca_ah_check(sdev, ah);
	if (err) {
		shca_dbg(sdev, "refused: AH type %d, port %u, flags 0x%x, SL %u: %pe\n",
			 ah->type, rdma_ah_get_port_num(ah),
			 rdma_ah_get_ah_flags(ah), rdma_ah_get_sl(ah),
			 ERR_PTR(err));
		return err;
	}
	grh = rdma_ah_read_grh(ah);
	softhca_set_av(&sah->av, to_shca_pd(ibah->pd)->pdn, grh->dgid.raw,
		       grh->sgid_index, grh->flow_label, grh->hop_limit,
		       grh->traffic_class, rdma_ah_get_sl(ah), ah->roce.dmac);
	if (udata) {
		struct softhca_create_ah_resp resp = {};
		size_t len = offsetofend(struct softhca_create_ah_resp, dmac);

		/* A provider that cannot take the MAC cannot send. */
		if (udata->outlen < len)
			return -EINVAL;
		resp.response_length = len;
		memcpy(resp.dmac, ah->roce.dmac, sizeof(resp.dmac));
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			return err;
	}
	return 0;
}

int shca_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

int shca_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	const struct softhca_wqe_av *av = &to_shca_ah(ibah)->av.wqe;
	u32 fl = be32_to_cpu(av->grh_gid_fl);

	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, SHCA_PORT);
	rdma_ah_set_sl(ah_attr, (av->stat_rate_sl >> SOFTHCA_AV_SL_SHIFT) &
			       SOFTHCA_AV_SL_MASK);
	rdma_ah_set_grh(ah_attr, NULL, fl & SOFTHCA_AV_FLOW_LABEL_MASK,
			(fl >> SOFTHCA_AV_SGID_SHIFT) & SOFTHCA_AV_SGID_MASK,
			av->hop_limit, av->tclass);
	memcpy(ah_attr->grh.dgid.raw, av->rgid, sizeof(av->rgid));
	memcpy(ah_attr->roce.dmac, av->rmac, sizeof(ah_attr->roce.dmac));
	return 0;
}
