// SPDX-License-Identifier: GPL-2.0
/* RC data-path helpers for the softhca selftests; see rc.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rc.h"
#include "rdmanl.h"
#include "util.h"
#include "verbs_util.h"

__thread char rc_err[512];

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(rc_err, sizeof(rc_err), fmt, ap);
	va_end(ap);
	n = strlen(rc_err);
	snprintf(rc_err + n, sizeof(rc_err) - n, ": %s (%d)", strerror(err), err);
	return -err;
}

uint64_t rc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void rc_cfg_default(struct rc_cfg *c, enum rc_topo topo)
{
	memset(c, 0, sizeof(*c));
	c->topo = topo;
	c->qp_type = IBV_QPT_RC;
	c->max_send_wr = 64;
	c->max_recv_wr = 64;
	c->max_send_sge = 4;
	c->max_recv_sge = 4;
	c->max_inline_data = 256;
	c->cqe = 256;
	c->buf_size = 1 << 20;
	c->mr_access = RC_ACCESS_ALL;
	c->qp_access = RC_QP_ACCESS_ALL;
	c->mtu = IBV_MTU_1024;
	for (int i = 0; i < 2; i++) {
		c->timeout[i] = 14;
		c->retry_cnt[i] = 7;
		c->rnr_retry[i] = 7;
		c->min_rnr_timer[i] = 12;
		c->max_rd_atomic[i] = 4;
		c->max_dest_rd_atomic[i] = 4;
	}
	c->sq_psn[0] = 0x1234;
	c->sq_psn[1] = 0xabcdef;
}

int rc_find_gid(struct ibv_context *ctx, const char *ip)
{
	struct ibv_port_attr pa;
	union ibv_gid want = {};

	want.raw[10] = 0xff;
	want.raw[11] = 0xff;
	if (inet_pton(AF_INET, ip, &want.raw[12]) != 1)
		return -EINVAL;
	if (ibv_query_port(ctx, 1, &pa))
		return -errno;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (!memcmp(&e.gid, &want, sizeof(want)) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2)
			return i;
	}
	return -ENOENT;
}

/*
 * veth0 and veth1 are in one namespace, so each end's address is local to
 * the other: ib_core's RoCE address resolution (route with oif = the GID's
 * netdev, then ARP on veth0) gets its ARP reply from 198.18.0.2 dropped as
 * coming from a local address, and modify_qp to RTR fails with ETIMEDOUT,
 * unless accept_local is on. scripts/vm-run turns it on at boot; a test bed
 * without it is refused here with that reason, not left to time out.
 */
#define ACCEPT_LOCAL "/proc/sys/net/ipv4/conf/all/accept_local"

static int accept_local_check(void)
{
	char v[8];
	int ret = read_line(ACCEPT_LOCAL, v, sizeof(v));

	if (ret)
		return ret;
	return strcmp(v, "1") ? -EHOSTUNREACH : 0;
}

int rc_shca1_add(void)
{
	struct ibv_context *ctx;
	int ret, added = 0;

	ret = accept_local_check();
	if (ret)
		return fail(-ret, "%s is not 1: shca0 <-> shca1 needs it (scripts/vm-run sets it)",
			    ACCEPT_LOCAL);

	if (rdmanl_dev_index("shca1") < 0) {
		/* SOFTHCA_RC_LINK_TYPE=rxe runs the suites against rdma_rxe
		 * (shca0 made by hand as rxe too): a check of the tests.
		 */
		const char *type = getenv("SOFTHCA_RC_LINK_TYPE");

		if (!type || !*type)
			type = "softhca";
		ret = rdmanl_link_add("shca1", type, "veth1");
		if (ret)
			return fail(-ret, "rdma link add shca1 type %s netdev veth1", type);
		added = 1;
	}
	/* ib_core fills the GID table from a work item: wait for it. */
	ctx = open_dev("shca1");
	if (!ctx) {
		ret = fail(errno, "open shca1");
		goto err;
	}
	for (int i = 0; i < 500; i++) {
		ret = rc_find_gid(ctx, RC_IP1);
		if (ret >= 0)
			break;
		usleep(10000);
	}
	ibv_close_device(ctx);
	if (ret < 0) {
		ret = fail(-ret, "no RoCE v2 GID for " RC_IP1 " on shca1 after 5 s");
		goto err;
	}
	return added;
err:
	if (added)
		rdmanl_link_del("shca1");
	return ret;
}

int rc_shca1_del(void)
{
	int ret = rdmanl_link_del("shca1");

	return ret ? fail(-ret, "rdma link del shca1") : 0;
}

static int end_create(struct rc_pair *p, int i)
{
	const struct rc_cfg *c = &p->cfg;
	struct rc_end *e = &p->e[i];
	struct ibv_qp_init_attr ia = {};
	const char *ip;

	e->dev = (c->topo == RC_CROSS_DEV && i == 1) ? "shca1" : "shca0";
	ip = (c->topo == RC_CROSS_DEV && i == 1) ? RC_IP1 : RC_IP0;
	if (rc_cross_dev(0)) {
		/* SOFTHCA_RC_CROSS: each on its own veth, whichever it is. */
		e->dev = rc_cross_dev(c->topo == RC_CROSS_DEV ? i :
				      rc_dev_is_rxe(rc_cross_dev(0)));
		ip = NULL;
	}
	if (i == 1 && c->topo == RC_SAME_CTX) {
		e->ctx = p->e[0].ctx;
		e->own_ctx = false;
	} else if (i == 0 && c->ctx) {
		e->ctx = c->ctx;
		e->own_ctx = false;
	} else {
		e->ctx = open_dev(e->dev);
		if (!e->ctx)
			return fail(errno, "open %s", e->dev);
		e->own_ctx = true;
	}
	e->gid_index = ip ? rc_find_gid(e->ctx, ip) : rc_find_gid(e->ctx, RC_IP0);
	if (!ip && e->gid_index < 0) {
		ip = RC_IP1;
		e->gid_index = rc_find_gid(e->ctx, ip);
	}
	if (e->gid_index < 0)
		return fail(-e->gid_index, "RoCE v2 GID of %s on %s", ip, e->dev);
	if (ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid))
		return fail(errno, "query_gid %s %d", e->dev, e->gid_index);
	e->pd = ibv_alloc_pd(e->ctx);
	if (!e->pd)
		return fail(errno, "alloc_pd on %s", e->dev);
	if (c->channels) {
		e->ch = ibv_create_comp_channel(e->ctx);
		if (!e->ch)
			return fail(errno, "create_comp_channel on %s", e->dev);
	}
	e->scq = rc_cq_create(e->ctx, c->cqe, c->cq_context,
			      c->scq_ch[i] ? c->scq_ch[i] : e->ch, c->comp_vector,
			      &c->cq_kind);
	if (!e->scq)
		return fail(errno, "create send CQ (cqe %d vector %d) on %s",
			    c->cqe, c->comp_vector, e->dev);
	e->rcq = rc_cq_create(e->ctx, c->cqe, c->cq_context,
			      c->rcq_ch[i] ? c->rcq_ch[i] : e->ch, c->comp_vector,
			      &c->cq_kind);
	if (!e->rcq)
		return fail(errno, "create recv CQ (cqe %d vector %d) on %s",
			    c->cqe, c->comp_vector, e->dev);
	e->buf_size = c->buf_size;
	e->buf = mmap(NULL, e->buf_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		return fail(errno, "mmap %zu", e->buf_size);
	}
	memset(e->buf, 0, e->buf_size);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->buf_size, c->mr_access);
	if (!e->mr)
		return fail(errno, "reg_mr %zu bytes access %#x on %s", e->buf_size,
			    c->mr_access, e->dev);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.qp_type = rc_cfg_uc(c) ? IBV_QPT_UC : IBV_QPT_RC;
	ia.sq_sig_all = c->sq_sig_all;
	ia.cap.max_send_wr = c->max_send_wr;
	ia.cap.max_recv_wr = c->max_recv_wr;
	ia.cap.max_send_sge = c->max_send_sge;
	ia.cap.max_recv_sge = c->max_recv_sge;
	ia.cap.max_inline_data = c->max_inline_data;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		return fail(errno, "create %s QP (wr %u/%u sge %u/%u inline %u) on %s",
			    rc_cfg_uc(c) ? "UC" : "RC", c->max_send_wr, c->max_recv_wr, c->max_send_sge,
			    c->max_recv_sge, c->max_inline_data, e->dev);
	e->cap = ia.cap;
	return 0;
}

int rc_pair_create(struct rc_pair *p, const struct rc_cfg *cfg)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->cfg = *cfg;
	if (cfg->topo == RC_CROSS_DEV && !rc_cross_dev(0)) {
		ret = rc_shca1_add();
		if (ret < 0)
			return ret;
		p->shca1_added = ret;
	}
	for (int i = 0; i < 2; i++) {
		ret = end_create(p, i);
		if (ret) {
			char save[sizeof(rc_err)];

			memcpy(save, rc_err, sizeof(save));
			rc_pair_destroy(p);
			memcpy(rc_err, save, sizeof(save));
			return ret;
		}
	}
	return 0;
}

void rc_init_attr(struct ibv_qp_attr *a, int *mask, int access)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qp_access_flags = access;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

void rc_rtr_attr(const struct rc_pair *p, int i, struct ibv_qp_attr *a, int *mask)
{
	const struct rc_cfg *c = &p->cfg;
	const struct rc_end *e = &p->e[i], *peer = &p->e[!i];

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = c->mtu;
	a->dest_qp_num = peer->qp->qp_num;
	a->rq_psn = c->sq_psn[!i];
	a->max_dest_rd_atomic = c->max_dest_rd_atomic[i];
	a->min_rnr_timer = c->min_rnr_timer[i];
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = peer->gid;
	a->ah_attr.grh.sgid_index = e->gid_index;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.port_num = 1;
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		IBV_QP_RQ_PSN;
	/* UC has no responder resources and no RNR NAK. */
	if (!rc_cfg_uc(c))
		*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

void rc_rts_attr(const struct rc_pair *p, int i, struct ibv_qp_attr *a, int *mask)
{
	const struct rc_cfg *c = &p->cfg;

	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = c->sq_psn[i];
	a->timeout = c->timeout[i];
	a->retry_cnt = c->retry_cnt[i];
	a->rnr_retry = c->rnr_retry[i];
	a->max_rd_atomic = c->max_rd_atomic[i];
	*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	/* UC has no acknowledgements to wait for, retry or read with. */
	if (!rc_cfg_uc(c))
		*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC;
}

int rc_end_connect(struct rc_pair *p, int i)
{
	struct ibv_qp *qp = p->e[i].qp;
	struct ibv_qp_attr a;
	int mask, ret;

	rc_init_attr(&a, &mask, p->cfg.qp_access);
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret)
		return fail(ret, "end %d QP %#x RESET->INIT", i, qp->qp_num);
	rc_rtr_attr(p, i, &a, &mask);
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret)
		return fail(ret, "end %d QP %#x INIT->RTR", i, qp->qp_num);
	rc_rts_attr(p, i, &a, &mask);
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret)
		return fail(ret, "end %d QP %#x RTR->RTS", i, qp->qp_num);
	return 0;
}

int rc_pair_connect(struct rc_pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
		int ret = ibv_modify_qp(p->e[i].qp, &a, IBV_QP_STATE);

		if (ret)
			return fail(ret, "end %d ->RESET", i);
	}
	for (int i = 0; i < 2; i++) {
		int ret = rc_end_connect(p, i);

		if (ret)
			return ret;
	}
	return 0;
}

int rc_pair_open(struct rc_pair *p, const struct rc_cfg *cfg)
{
	int ret = rc_pair_create(p, cfg);

	if (ret)
		return ret;
	ret = rc_pair_connect(p);
	if (ret) {
		char save[sizeof(rc_err)];

		memcpy(save, rc_err, sizeof(save));
		rc_pair_destroy(p);
		memcpy(rc_err, save, sizeof(save));
	}
	return ret;
}

static void end_destroy(struct rc_end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, e->buf_size);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	e->ch = NULL;
	e->qp = NULL;
	e->mr = NULL;
	e->buf = NULL;
	e->scq = e->rcq = NULL;
	e->pd = NULL;
}

void rc_pair_destroy(struct rc_pair *p)
{
	end_destroy(&p->e[0]);
	end_destroy(&p->e[1]);
	for (int i = 1; i >= 0; i--) {
		if (p->e[i].ctx && p->e[i].own_ctx)
			ibv_close_device(p->e[i].ctx);
		p->e[i].ctx = NULL;
	}
	if (p->shca1_added)
		rc_shca1_del();
	p->shca1_added = 0;
}

int rc_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int ret = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);

	return ret ? -ret : (int)a.qp_state;
}

int rc_wait_qp_state(struct ibv_qp *qp, int state, int ms)
{
	uint64_t end = rc_now_us() + (uint64_t)ms * 1000;
	int st;

	for (;;) {
		st = rc_qp_state(qp);
		if (st == state || rc_now_us() > end)
			return st;
		usleep(1000);
	}
}

int rc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	uint64_t end = rc_now_us() + (uint64_t)ms * 1000;
	unsigned int empty = 0;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			return fail(EIO, "ibv_poll_cq returned %d", r);
		if (r > 0) {
			got += r;
			empty = 0;
			continue;
		}
		/* Spin a while, then let others (the engine) have the CPU. */
		if (++empty > 2000)
			sched_yield();
		if ((empty & 255) == 0 && rc_now_us() > end)
			break;
	}
	if (got < n)
		snprintf(rc_err, sizeof(rc_err),
			 "%d of %d completions after %d ms", got, n, ms);
	return got;
}

int rc_poll_none(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc[8];
	int n = rc_poll(cq, wc, 8, ms);

	rc_err[0] = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(rc_err);

		snprintf(rc_err + l, sizeof(rc_err) - l, "unexpected: %s; ",
			 rc_wc_str(&wc[i]));
	}
	return n;
}

int rc_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;

	if (!addr && !len)
		wr.num_sge = 0;
	return ibv_post_recv(qp, &wr, &bad);
}

int rc_post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		 uint32_t rkey, unsigned int flags, uint32_t imm_host)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = flags, .imm_data = htonl(imm_host),
	};
	struct ibv_send_wr *bad = NULL;

	if (!addr && !len)
		wr.num_sge = 0;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int rc_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		   uint64_t *local, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey, uint64_t compare_add, uint64_t swap,
		   unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = flags,
	};
	struct ibv_send_wr *bad = NULL;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

static const char *opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

const char *rc_wc_str(const struct ibv_wc *wc)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ & 3];

	snprintf(b, sizeof(bufs[0]),
		 "wr_id=%#llx status=%d(%s) vendor_err=%#x opcode=%d(%s) byte_len=%u qp_num=%#x src_qp=%#x wc_flags=%#x imm_data=%#x",
		 (unsigned long long)wc->wr_id, wc->status,
		 ibv_wc_status_str(wc->status), wc->vendor_err, wc->opcode,
		 opcode_str(wc->opcode), wc->byte_len, wc->qp_num, wc->src_qp,
		 wc->wc_flags, ntohl(wc->imm_data));
	return b;
}

/*
 * Checking the tests against rdma_rxe (SOFTHCA_RC_LINK_TYPE=rxe): rxe sets
 * IBV_WC_GRH on RoCE receives and leaves src_qp 0 on RC; softhca's CQE has
 * no GRH bit and carries the source QPN, as mlx5.
 */
static int rxe_mode(void)
{
	static int rxe = -1;

	if (rxe < 0) {
		const char *t = getenv("SOFTHCA_RC_LINK_TYPE");
		const char *cross = getenv("SOFTHCA_RC_CROSS");

		rxe = (t && !strcmp(t, "rxe")) || (cross && strstr(cross, "rxe"));
	}
	return rxe;
}

bool rc_dev_is_rxe(const char *dev)
{
	const char *t = getenv("SOFTHCA_RC_LINK_TYPE");

	return (t && !strcmp(t, "rxe")) || !strncmp(dev, "rxe", 3);
}

bool rc_on_wire(enum rc_topo topo)
{
	char v[8] = "";

	if (!rc_cross_dev(0))
		return false;
	if (topo == RC_CROSS_DEV)
		return true;
	return !read_line("/sys/module/softhca/parameters/force_wire", v, sizeof(v)) &&
	       (!strcmp(v, "Y") || !strcmp(v, "1"));
}

const char *rc_cross_dev(int i)
{
	static char dev[2][32];
	static int parsed;

	if (!parsed) {
		const char *cross = getenv("SOFTHCA_RC_CROSS");

		parsed = 1;
		if (cross && sscanf(cross, "%31s %31s", dev[0], dev[1]) != 2)
			dev[0][0] = 0;
	}
	return dev[0][0] ? dev[i] : NULL;
}

bool rc_wc_flags_are(const struct ibv_wc *wc, unsigned int flags)
{
	return (wc->wc_flags & ~(rxe_mode() ? IBV_WC_GRH : 0)) == flags;
}

bool rc_src_qp_is(const struct ibv_wc *wc, uint32_t qpn)
{
	return rxe_mode() || wc->src_qp == qpn;
}

int rc_wc_check(const struct ibv_wc *wc, const struct rc_wc_want *w)
{
	int rxe = rxe_mode();
	char *p = rc_err;
	size_t left = sizeof(rc_err);
	int bad = 0;

#define MISMATCH(fmt, ...) do { \
		int k = snprintf(p, left, fmt "; ", ##__VA_ARGS__); \
		if (k > 0 && (size_t)k < left) { p += k; left -= k; } \
		bad = 1; \
	} while (0)

	rc_err[0] = 0;
	if (wc->wr_id != w->wr_id)
		MISMATCH("wr_id %#llx, want %#llx", (unsigned long long)wc->wr_id,
			 (unsigned long long)w->wr_id);
	if (wc->status != w->status)
		MISMATCH("status %s, want %s", ibv_wc_status_str(wc->status),
			 ibv_wc_status_str(w->status));
	if (wc->qp_num != w->qp_num)
		MISMATCH("qp_num %#x, want %#x", wc->qp_num, w->qp_num);
	/* Vendor syndromes: only "non-zero on error" is promised
	 * (Documentation/engine.md); rxe reports none.
	 */
	if (w->status != IBV_WC_SUCCESS && wc->status != IBV_WC_SUCCESS &&
	    !rxe && !wc->vendor_err)
		MISMATCH("vendor_err 0 on an error completion");
	if (w->status == IBV_WC_SUCCESS && wc->status == IBV_WC_SUCCESS) {
		if (wc->opcode != w->opcode)
			MISMATCH("opcode %s, want %s", opcode_str(wc->opcode),
				 opcode_str(w->opcode));
		if (wc->byte_len != w->byte_len)
			MISMATCH("byte_len %u, want %u", wc->byte_len, w->byte_len);
		if ((wc->wc_flags & ~(rxe ? IBV_WC_GRH : 0)) != w->wc_flags)
			MISMATCH("wc_flags %#x, want %#x", wc->wc_flags, w->wc_flags);
		/* imm_data and src_qp mean something on receives only. */
		if ((w->opcode & IBV_WC_RECV) && (w->wc_flags & IBV_WC_WITH_IMM) &&
		    wc->imm_data != htonl(w->imm_host))
			MISMATCH("imm_data %#x (network order), want %#x",
				 ntohl(wc->imm_data), w->imm_host);
		if ((w->opcode & IBV_WC_RECV) && !rxe && wc->src_qp != w->src_qp)
			MISMATCH("src_qp %#x, want %#x", wc->src_qp, w->src_qp);
	}
#undef MISMATCH
	if (bad) {
		size_t l = strlen(rc_err);

		snprintf(rc_err + l, sizeof(rc_err) - l, "[%s]", rc_wc_str(wc));
	}
	return bad;
}

/* xorshift32 stream seeded from seed: no short period in a buffer. */
static inline uint32_t xs32(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

void rc_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;
	uint32_t s = seed * 2654435761u + 0x9e3779b9u;

	if (!s)
		s = 1;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(xs32(&s) >> 11);
}

long rc_check_fill(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *b = buf;
	uint32_t s = seed * 2654435761u + 0x9e3779b9u;

	if (!s)
		s = 1;
	for (size_t i = 0; i < len; i++)
		if (b[i] != (uint8_t)(xs32(&s) >> 11))
			return (long)i;
	return -1;
}

struct rc_wc_want rc_want_req(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			      const struct rc_end *e)
{
	return (struct rc_wc_want){ .wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = op, .byte_len = len, .qp_num = e->qp->qp_num };
}

struct rc_wc_want rc_want_recv(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			       const struct rc_end *e, const struct rc_end *from)
{
	struct rc_wc_want w = rc_want_req(wr_id, op, len, e);

	w.src_qp = from->qp->qp_num;
	return w;
}

struct rc_wc_want rc_want_err(uint64_t wr_id, enum ibv_wc_status st,
			      const struct rc_end *e)
{
	return (struct rc_wc_want){ .wr_id = wr_id, .status = st,
				    .qp_num = e->qp->qp_num };
}

struct rc_wc_want rc_want_imm(struct rc_wc_want w, uint32_t imm)
{
	w.wc_flags |= IBV_WC_WITH_IMM;
	w.imm_host = imm;
	return w;
}

int rc_pair_reopen(struct rc_pair *p, void (*tweak)(struct rc_cfg *c))
{
	struct rc_cfg c = p->cfg;

	rc_pair_destroy(p);
	tweak(&c);
	return rc_pair_open(p, &c);
}

static pid_t guard_pid;
static int guard_shca1_existed;

static void guard_exit(void)
{
	if (getpid() != guard_pid)
		return;
	if (!guard_shca1_existed && rdmanl_dev_index("shca1") >= 0)
		rdmanl_link_del("shca1");
}

void rc_shca1_guard(void)
{
	guard_pid = getpid();
	guard_shca1_existed = rdmanl_dev_index("shca1") >= 0;
	atexit(guard_exit);
}

struct ibv_cq *rc_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			    struct ibv_comp_channel *ch, int vector,
			    const struct rc_cq_kind *kind)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe, .cq_context = cq_context, .channel = ch,
		.comp_vector = vector,
	};
	struct ibv_cq_ex *cq;

	if (!kind || !kind->ex)
		return ibv_create_cq(ctx, cqe, cq_context, ch, vector);
	a.wc_flags = kind->wc_flags;
	cq = ibv_create_cq_ex(ctx, &a);
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}
