// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: protection domains. The PD number comes from the
 * HCA model; MKeys and QPs will carry it.
 */
#include <rdma/softhca-abi.h>

#include "softhca.h"

int shca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibpd->device);
	struct shca_pd *pd = to_shca_pd(ibpd);
	struct hca_cmd_alloc_pd_out out;
	struct hca_cmd_dealloc_pd_in in;
	struct softhca_alloc_pd_resp resp = {};
	int err;

	err = hca_exec(sdev->hca, HCA_CMD_ALLOC_PD, NULL, 0,
			    &out, sizeof(out));
	if (err)
		return err;
	pd->pdn = out.pdn;

	if (!udata)
		return 0;
	resp.pdn = pd->pdn;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err) {
		in.pdn = pd->pdn;
		WARN_ON(hca_exec(sdev->hca, HCA_CMD_DEALLOC_PD, &in,
				      sizeof(in), NULL, 0));
	}
	return err;
}

int shca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibpd->device);
	struct hca_cmd_dealloc_pd_in in = { .pdn = to_shca_pd(ibpd)->pdn };

	/* Only a driver bug can make this fail; the PD is gone either way. */
	WARN_ON(hca_exec(sdev->hca, HCA_CMD_DEALLOC_PD, &in, sizeof(in),
			      NULL, 0));
	return 0;
}
