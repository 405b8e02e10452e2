// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ah.c - the datagram control path: address handles and multicast attach.
 *
 * An address handle is, as on mlx5, an address vector the provider builds
 * and keeps (struct softhca_av): every datagram WR that names the handle
 * copies it into its WQE's datagram segment, so the HCA keeps nothing per
 * handle. The kernel's part is to resolve the RoCE destination's MAC:
 * CREATE_AH returns it (struct softhca_create_ah_resp), and the AV is
 * built from the attributes and that MAC by the builder the kernel uses
 * for its own AHs, softhca_set_av() (<rdma/softhca-wqe.h>). The kernel
 * checks the attributes (port, GRH, GID index); a handle it refused does
 * not exist here either.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/softhca-wqe.h>

#include "softhca.h"

struct softhca_create_ah_resp_buf {
	struct ib_uverbs_create_ah_resp core;
	struct softhca_create_ah_resp drv;
};

_Static_assert(offsetof(struct softhca_create_ah_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_create_ah_resp),
	       "udata must follow the core response");

struct ibv_ah *softhca_create_ah(struct ibv_pd *ibpd,
				 struct ibv_ah_attr *attr)
{
	struct softhca_create_ah_resp_buf resp;
	struct softhca_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_ah(ibpd, &ah->ibv_ah, attr, &resp.core,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	/* No MAC, no datagram can leave: a kernel we do not know. */
	if (resp.drv.response_length <
	    offsetof(struct softhca_create_ah_resp, dmac) +
	    sizeof(resp.drv.dmac)) {
		ibv_cmd_destroy_ah(&ah->ibv_ah);
		free(ah);
		errno = EPROTO;
		return NULL;
	}
	softhca_set_av(&ah->av, to_spd(ibpd)->pdn, attr->grh.dgid.raw,
		       attr->grh.sgid_index, attr->grh.flow_label,
		       attr->grh.hop_limit, attr->grh.traffic_class, attr->sl,
		       resp.drv.dmac);
	return &ah->ibv_ah;
}

int softhca_destroy_ah(struct ibv_ah *ibah)
{
	int ret = ibv_cmd_destroy_ah(ibah);

	if (ret)
		return ret;
	free(to_sah(ibah));
	return 0;
}

/* Multicast: the kernel attaches the QP (ATTACH_TO_MCG), nothing is kept here. */
int softhca_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			 uint16_t lid)
{
	return ibv_cmd_attach_mcast(ibqp, gid, lid);
}

int softhca_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			 uint16_t lid)
{
	return ibv_cmd_detach_mcast(ibqp, gid, lid);
}
