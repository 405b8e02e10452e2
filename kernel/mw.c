// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs: memory windows (ibv_alloc_mw, ibv_dealloc_mw). A window
 * is an MKey of its PD that CREATE_MKEY makes FREE; user space binds it
 * with BIND_MW WQEs (ibv_bind_mw for type 1, IBV_WR_BIND_MW for type 2)
 * and the HCA model does the rest (kernel/hca/mkey_mw.c). Kernel ULPs
 * have no bind WR, so kernel QPs bind nothing (kverbs.c refuses it).
 */
#include "softhca.h"

int shca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibmw->device);
	struct hca_cmd_create_mkey_in in = {
		.pdn = to_shca_pd(ibmw->pd)->pdn,
		.access = ibmw->type == IB_MW_TYPE_1 ? HCA_MKEY_MW_TYPE1 :
						       HCA_MKEY_MW_TYPE2,
	};
	struct hca_cmd_create_mkey_out out;
	struct shca_mw *mw = to_shca_mw(ibmw);
	int err;

	err = hca_exec(sdev->hca, HCA_CMD_CREATE_MKEY, &in, sizeof(in),
		       &out, sizeof(out));
	if (err)
		return err;
	mw->mkey = out.mkey;
	ibmw->rkey = out.mkey;
	return 0;
}

int shca_dealloc_mw(struct ib_mw *ibmw)
{
	struct shca_dev *sdev = to_shca_dev(ibmw->device);
	/* The key byte is the consumer's by now: the index is what counts. */
	struct hca_cmd_destroy_mkey_in in = { .mkey = to_shca_mw(ibmw)->mkey };

	/* Returns once no access through the window is in flight. */
	WARN_ON(hca_exec(sdev->hca, HCA_CMD_DESTROY_MKEY, &in, sizeof(in),
			 NULL, 0));
	return 0;
}
