// SPDX-License-Identifier: GPL-2.0
/*
 * qpset: many RC QPs in one context, connected in pairs (qpset.h). Used by
 * the scale suites (selftests/db_scale.c) and the bench tools (tools/).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qpset.h"

__thread char qpset_err[256];

#define ERR(...) snprintf(qpset_err, sizeof(qpset_err), __VA_ARGS__)

struct ibv_context *qpset_open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

int qpset_find_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

int qpset_qp_to_rts(struct ibv_qp *qp, uint32_t dest, int sgid,
		    const union ibv_gid *dgid)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)sgid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask) ? -1 : 0;
}

static int qpset_make(struct qpset *s)
{
	const struct qpset_cfg *c = &s->cfg;

	s->cq = calloc((size_t)c->ncq, sizeof(*s->cq));
	s->qp = calloc((size_t)c->nqp, sizeof(*s->qp));
	s->buf = calloc(1, c->buf_size);
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->cq || !s->qp || !s->buf || !s->pd) {
		ERR("out of memory, or alloc_pd: %s", strerror(errno));
		return -1;
	}
	s->mr = ibv_reg_mr(s->pd, s->buf, c->buf_size,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr) {
		ERR("reg_mr: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < c->ncq; i++) {
		/* Every QP of the CQ: a send and a receive outstanding each. */
		int per = (c->nqp + c->ncq - 1) / c->ncq;

		s->cq[i] = ibv_create_cq(s->ctx, 2 * per * (int)c->depth + 1,
					 NULL, NULL, 0);
		if (!s->cq[i]) {
			ERR("create_cq %d: %s", i, strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < c->nqp; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = qpset_cq(s, i), .recv_cq = qpset_cq(s, i),
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = c->depth,
				 .max_recv_wr = c->depth,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		s->qp[i] = ibv_create_qp(s->pd, &ia);
		if (!s->qp[i]) {
			ERR("create_qp %d: %s", i, strerror(errno));
			return -1;
		}
	}
	for (int i = 0; i < c->nqp; i++) {
		if (qpset_qp_to_rts(s->qp[i], s->qp[i ^ 1]->qp_num,
				    s->gid_index, &s->gid)) {
			ERR("QP %d to RTS: %s", i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int qpset_open(struct qpset *s, const struct qpset_cfg *c)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	if (!s->cfg.dev)
		s->cfg.dev = "shca0";
	if (s->cfg.nqp % 2 || s->cfg.ncq < 1 || !s->cfg.depth ||
	    !s->cfg.buf_size) {
		ERR("bad configuration");
		return -1;
	}
	s->ctx = c->ctx;
	if (!s->ctx) {
		s->ctx = qpset_open_dev(s->cfg.dev);
		s->own_ctx = true;
	}
	if (!s->ctx) {
		ERR("cannot open %s", s->cfg.dev);
		return -1;
	}
	s->gid_index = qpset_find_gid(s->ctx, &s->gid);
	if (s->gid_index < 0) {
		ERR("%s: no RoCE v2 IPv4 GID", s->cfg.dev);
		qpset_close(s);
		return -1;
	}
	if (qpset_make(s)) {
		qpset_close(s);
		return -1;
	}
	return 0;
}

void qpset_close(struct qpset *s)
{
	for (int i = 0; s->qp && i < s->cfg.nqp; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	for (int i = 0; s->cq && i < s->cfg.ncq; i++)
		if (s->cq[i])
			ibv_destroy_cq(s->cq[i]);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->own_ctx && s->ctx)
		ibv_close_device(s->ctx);
	free(s->qp);
	free(s->cq);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

static uint64_t qpset_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Poll @cq once: 1 and the completion's wr_id, 0, or -1 on an error. */
static int qpset_poll_one(struct ibv_cq *cq, uint64_t *wr_id)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	if (n < 0) {
		ERR("poll_cq %d", n);
		return -1;
	}
	if (n && wc.status != IBV_WC_SUCCESS) {
		ERR("wr_id %#llx status %s", (unsigned long long)wc.wr_id,
		    ibv_wc_status_str(wc.status));
		return -1;
	}
	if (n)
		*wr_id = wc.wr_id;
	return n;
}

int qpset_round_trip(struct qpset *s, int from, uint32_t len, int ms)
{
	struct ibv_qp *a = s->qp[from], *b = s->qp[from ^ 1];
	struct ibv_cq *cqs[2] = { qpset_cq(s, from), qpset_cq(s, from ^ 1) };
	uint64_t id = (uint64_t)from << 1, deadline, got;
	bool sent = false, received = false;
	struct ibv_sge rsge = {
		.addr = (uintptr_t)s->buf + s->cfg.buf_size / 2,
		.length = len, .lkey = s->mr->lkey,
	};
	struct ibv_sge ssge = {
		.addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = id | 1, .sg_list = &rsge,
				   .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = id, .sg_list = &ssge,
				   .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;

	if (ibv_post_recv(b, &rwr, &rbad) || ibv_post_send(a, &swr, &sbad)) {
		ERR("QP %d: post: %s", from, strerror(errno));
		return -1;
	}
	deadline = qpset_now_ms() + (uint64_t)ms;
	while (!sent || !received) {
		for (int i = 0; i < 2; i++) {
			int n = qpset_poll_one(cqs[i], &got);

			if (n < 0)
				return -1;
			if (!n)
				continue;
			if (got == id)
				sent = true;
			else if (got == (id | 1))
				received = true;
			else {
				ERR("QP %d: stray wr_id %#llx", from,
				    (unsigned long long)got);
				return -1;
			}
		}
		if ((!sent || !received) && qpset_now_ms() > deadline) {
			ERR("QP %d (%#x -> %#x): %s not completed in %d ms",
			    from, a->qp_num, b->qp_num,
			    !received ? "receive" : "send", ms);
			return -1;
		}
	}
	return 0;
}
