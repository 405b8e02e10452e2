// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mw.c - memory windows. The kernel creates the window's MKey (FREE); a
 * bind is a BIND_MW WQE on the QP's send queue, built here for
 * ibv_bind_mw (type 1, which gives the window its next key as mlx5 does)
 * and by post_send for IBV_WR_BIND_MW (type 2, whose key the application
 * chooses). The HCA checks the window, the MR and the rights and answers
 * a refused bind with an IBV_WC_MW_BIND_ERR completion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "send.h"

struct ibv_mw *softhca_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int softhca_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (ret)
		return ret;
	free(mw);
	return 0;
}

int softhca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		    struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = {
		.wr_id = bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = bind->send_flags,
	};
	struct ibv_send_wr *bad;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bind->bind_info;
	ret = softhca_post_send(ibqp, &wr, &bad);
	if (ret)
		return ret;
	/* The key the window has once the bind completes (IBTA 10.6.7.2.1). */
	mw->rkey = rkey;
	return 0;
}
