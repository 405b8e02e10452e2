// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the port's RoCE addresses. ib_core's GID cache
 * calls add_gid/del_gid for every entry of the port; RoCE v2 entries are
 * programmed into the HCA (SET_ROCE_ADDRESS) so that the local fabric
 * knows which device owns a destination GID, and a datagram's receiver
 * learns the source's MAC and VLAN. Other types are not kept
 * (the port claims ROCE_UDP_ENCAP only, so none should come).
 */
#include <linux/if_vlan.h>
#include <rdma/ib_cache.h>

#include "softhca.h"

static int shca_set_roce_address(const struct ib_gid_attr *attr, bool valid)
{
	struct shca_dev *sdev = to_shca_dev(attr->device);
	struct hca_cmd_set_roce_address_in in = { .index = attr->index };
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return 0;
	if (valid) {
		u16 vlan_id;

		memcpy(in.entry.gid, attr->gid.raw, sizeof(in.entry.gid));
		err = rdma_read_gid_l2_fields(attr, &vlan_id, in.entry.mac);
		if (err)
			return err;
		/* 0xffff: the netdev is no VLAN. */
		if (vlan_id < VLAN_N_VID) {
			in.entry.vlan_id = vlan_id;
			in.entry.vlan_valid = 1;
		}
		in.entry.roce_version = 2;
		in.entry.valid = 1;
	}
	return hca_exec(sdev->hca, HCA_CMD_SET_ROCE_ADDRESS, &in,
			     sizeof(in), NULL, 0);
}

int shca_add_gid(const struct ib_gid_attr *attr, void **context)
{
	return shca_set_roce_address(attr, true);
}

int shca_del_gid(const struct ib_gid_attr *attr, void **context)
{
	return shca_set_roce_address(attr, false);
}
