// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrcd.c - XRC domains: ibv_open_xrcd / ibv_close_xrcd. The kernel keeps
 * everything (a domain opened through the same file by several processes
 * is one domain); the provider only holds the handle. What a domain
 * joins together, XRC SRQs and target QPs, is srq.c's and qp.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "softhca.h"

struct ibv_xrcd *softhca_open_xrcd(struct ibv_context *ibctx,
				   struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp;
	struct ibv_open_xrcd cmd;
	struct verbs_xrcd *xrcd;
	int ret;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_open_xrcd(ibctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	return &xrcd->xrcd;
}

int softhca_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd =
		softhca_container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int ret = ibv_cmd_close_xrcd(xrcd);

	if (!ret)
		free(xrcd);
	return ret;
}
