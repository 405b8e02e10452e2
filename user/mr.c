// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mr.c - memory regions. The kernel pins the pages (or, for an ODP MR,
 * faults them in when the device needs them) and creates the MKey; the
 * provider only keeps libibverbs' verbs_mr (lkey, rkey, handle).
 * Re-registration gives the MR new keys (the kernel makes a new MKey).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "softhca.h"

struct ibv_mr *softhca_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			      uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr) {
		errno = ENOMEM;
		return NULL;
	}

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

int softhca_dereg_mr(struct verbs_mr *vmr)
{
	int ret;

	ret = ibv_cmd_dereg_mr(vmr);
	if (ret)
		return ret;
	free(vmr);
	return 0;
}

/* ibv_rereg_mr checked the flags; libibverbs updates pd, addr, length. */
int softhca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		     void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	return ibv_cmd_rereg_mr(vmr, (uint32_t)flags, addr, length,
				(uintptr_t)addr, access, pd, &cmd, sizeof(cmd),
				&resp, sizeof(resp));
}

/*
 * ibv_advise_mr: a prefetch of ODP MRs' ranges, done by the kernel's fault
 * path (kernel/odp.c); every check is the kernel's.
 */
int softhca_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sge);
}
