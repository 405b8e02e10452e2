// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pd.c - protection domains. The kernel returns the HCA's PD number (pdn),
 * which the data path will need in MKey and QP contexts. Parent domains
 * are td.c's; ibv_dealloc_pd() of one comes here and goes there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "softhca.h"

struct softhca_alloc_pd_resp_buf {
	/* struct ib_uverbs_alloc_pd_resp */
	__u32 pd_handle;
	struct softhca_alloc_pd_resp drv;
};

_Static_assert(offsetof(struct softhca_alloc_pd_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_alloc_pd_resp),
	       "udata must follow the core response");

struct ibv_pd *softhca_alloc_pd(struct ibv_context *ibctx)
{
	struct softhca_alloc_pd_resp_buf resp;
	struct ibv_alloc_pd cmd;
	struct softhca_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_alloc_pd(ibctx, &pd->ibv_pd, &cmd, sizeof(cmd),
			       (struct ib_uverbs_alloc_pd_resp *)(void *)&resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}

	pd->pdn = resp.drv.pdn;
	return &pd->ibv_pd;
}

int softhca_dealloc_pd(struct ibv_pd *ibpd)
{
	struct softhca_pd *pd = to_spd(ibpd);
	int ret;

	/* ibv_dealloc_pd() of a parent domain (td.c) or of a PD under one. */
	if (pd->protection)
		return softhca_dealloc_parent_domain(pd);
	if (__atomic_load_n(&pd->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (ret)
		return ret;

	free(to_spd(ibpd));
	return 0;
}
