// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: XRC domains. The number comes from the HCA model
 * (ALLOC_XRCD); XRC SRQs and XRC target QPs carry it. ib_uverbs shares a
 * domain between the processes that open the same file (its inode), so
 * one domain may be allocated by one process and freed by another: it
 * holds nothing of either. ib_core refuses the dealloc while an SRQ or a
 * target QP uses the domain; the model refuses it too.
 */
#include "softhca.h"

int shca_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibxrcd->device);
	struct hca_cmd_alloc_xrcd_out out;
	int err;

	err = hca_exec(sdev->hca, HCA_CMD_ALLOC_XRCD, NULL, 0, &out,
		       sizeof(out));
	if (err)
		return err;
	to_shca_xrcd(ibxrcd)->xrcdn = out.xrcdn;
	return 0;
}

int shca_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibxrcd->device);
	struct hca_cmd_dealloc_xrcd_in in = {
		.xrcdn = to_shca_xrcd(ibxrcd)->xrcdn,
	};

	return hca_exec(sdev->hca, HCA_CMD_DEALLOC_XRCD, &in, sizeof(in),
			NULL, 0);
}
