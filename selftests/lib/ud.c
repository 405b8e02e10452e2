// SPDX-License-Identifier: GPL-2.0
/* UD data-path helpers for the softhca selftests; see ud.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ud.h"
#include "util.h"
#include "verbs_util.h"

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

int ud_qp_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0,
				 .port_num = 1, .qkey = qkey };
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_QKEY);
	if (ret)
		return fail(ret, "UD QP %#x RESET->INIT", qp->qp_num);
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return fail(ret, "UD QP %#x INIT->RTR", qp->qp_num);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x1234;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (ret)
		return fail(ret, "UD QP %#x RTR->RTS", qp->qp_num);
	return 0;
}

struct rc_cq_kind ud_cq_kind;

int ud_end_open(struct ud_end *e, const char *dev, struct ibv_context *ctx,
		uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {};
	bool one = !strcmp(dev, "shca1");

	memset(e, 0, sizeof(*e));
	e->dev = dev;
	e->ip = one ? RC_IP1 : RC_IP0;
	e->netdev = one ? "veth1" : "veth0";
	e->qkey = qkey;
	e->ctx = ctx ? ctx : open_dev(dev);
	e->own_ctx = !ctx;
	if (!e->ctx)
		return fail(errno, "open %s", dev);
	e->gid_index = rc_find_gid(e->ctx, e->ip);
	if (e->gid_index < 0)
		return fail(-e->gid_index, "RoCE v2 GID of %s on %s", e->ip, dev);
	if (ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid))
		return fail(errno, "query_gid");
	e->pd = ibv_alloc_pd(e->ctx);
	e->scq = rc_cq_create(e->ctx, 256, NULL, NULL, 0, &ud_cq_kind);
	e->rcq = rc_cq_create(e->ctx, 256, NULL, NULL, 0, &ud_cq_kind);
	if (!e->pd || !e->scq || !e->rcq)
		return fail(errno, "PD and CQs on %s", dev);
	e->buf = mmap(NULL, UD_BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		return fail(errno, "mmap");
	}
	e->mr = ibv_reg_mr(e->pd, e->buf, UD_BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		return fail(errno, "reg_mr on %s", dev);
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 128;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		return fail(errno, "create UD QP on %s", dev);
	e->cap = ia.cap;
	return ud_qp_rts(e->qp, qkey);
}

void ud_end_close(struct ud_end *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, UD_BUF);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->own_ctx && e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

struct ibv_ah *ud_ah(struct ud_end *e, const union ibv_gid *dgid,
		     uint8_t tclass, uint8_t sl)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1, .sl = sl,
		.grh = { .dgid = *dgid, .sgid_index = e->gid_index,
			 .hop_limit = 64, .traffic_class = tclass },
	};
	struct ibv_ah *ah = ibv_create_ah(e->pd, &a);

	if (!ah)
		fail(errno, "create_ah on %s (sgid %d)", e->dev, e->gid_index);
	return ah;
}

int ud_pair_open(struct ud_pair *p, enum rc_topo topo)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->topo = topo;
	if (topo == RC_CROSS_DEV) {
		ret = rc_shca1_add();
		if (ret < 0)
			return ret;
		p->shca1_added = ret;
	}
	ret = ud_end_open(&p->e[0], "shca0", NULL, UD_QKEY);
	if (!ret)
		ret = ud_end_open(&p->e[1], topo == RC_CROSS_DEV ? "shca1" : "shca0",
				  topo == RC_SAME_CTX ? p->e[0].ctx : NULL,
				  UD_QKEY);
	for (int i = 0; !ret && i < 2; i++) {
		p->ah[i] = ud_ah(&p->e[i], &p->e[!i].gid, 0, 0);
		if (!p->ah[i])
			ret = -errno;
	}
	if (ret) {
		char save[sizeof(rc_err)];

		memcpy(save, rc_err, sizeof(save));
		ud_pair_close(p);
		memcpy(rc_err, save, sizeof(save));
	}
	return ret;
}

void ud_pair_close(struct ud_pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->ah[i])
			ibv_destroy_ah(p->ah[i]);
		p->ah[i] = NULL;
	}
	/* End 1 may share end 0's context: it goes first. */
	ud_end_close(&p->e[1]);
	ud_end_close(&p->e[0]);
	if (p->shca1_added)
		rc_shca1_del();
	p->shca1_added = 0;
}

int ud_send(struct ud_end *e, struct ibv_ah *ah, uint32_t dqpn, uint32_t qkey,
	    enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
	    unsigned int flags, uint32_t imm_host)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + off, .length = len,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = flags | IBV_SEND_SIGNALED,
		.imm_data = htonl(imm_host),
	};
	struct ibv_send_wr *bad = NULL;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(e->qp, &wr, &bad);
}

int ud_recv(struct ud_end *e, uint64_t wr_id, uint32_t off, uint32_t len)
{
	return rc_post_recv(e->qp, wr_id, e->buf + off, len, e->mr->lkey);
}

long long ud_counter(const char *dev, const char *name)
{
	char path[256], v[64];

	/* Past ib_core's 10 ms cache of the port's counters. */
	usleep(20000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	if (read_line(path, v, sizeof(v)))
		return -1;
	return strtoll(v, NULL, 0);
}

/* A check that failed: its reason in rc_err; returns 1. */
static int mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int mismatch(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rc_err, sizeof(rc_err), fmt, ap);
	va_end(ap);
	return 1;
}

/* The IPv4 header checksum: the one's complement sum of its 16-bit words. */
static uint16_t ip_sum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

int ud_grh_check(const uint8_t *grh, const union ibv_gid *src,
		 const union ibv_gid *dst, uint32_t len, bool imm,
		 uint8_t tclass, uint8_t ttl)
{
	const uint8_t *ip = grh + 20;
	/* IPv4 + UDP + BTH + DETH (+ ImmDt) + payload padded to 4 + ICRC */
	uint32_t tot = 20 + 8 + 12 + 8 + (imm ? 4 : 0) + ((len + 3) & ~3u) + 4;

	for (int i = 0; i < 20; i++)
		if (grh[i])
			return mismatch("GRH byte %d is %#x, not 0", i, grh[i]);
	if (ip[0] != 0x45)
		return mismatch("version/IHL %#x, want 0x45", ip[0]);
	if (ip[1] != tclass)
		return mismatch("TOS %#x, want %#x", ip[1], tclass);
	if ((uint32_t)(ip[2] << 8 | ip[3]) != tot)
		return mismatch("total length %u, want %u", ip[2] << 8 | ip[3],
			    tot);
	if ((ip[6] & 0x40) != 0x40)
		return mismatch("DF not set (flags %#x)", ip[6]);
	if (ip[8] != ttl || ip[9] != 17)
		return mismatch("TTL %u protocol %u, want %u and 17 (UDP)",
			    ip[8], ip[9], ttl);
	if (ip_sum(ip) != 0xffff)
		return mismatch("header checksum %#x does not sum up",
			    ip[10] << 8 | ip[11]);
	if (memcmp(ip + 12, &src->raw[12], 4) || memcmp(ip + 16, &dst->raw[12], 4))
		return mismatch("addresses %u.%u.%u.%u -> %u.%u.%u.%u",
			    ip[12], ip[13], ip[14], ip[15], ip[16], ip[17],
			    ip[18], ip[19]);
	return 0;
}

struct rc_wc_want ud_want_recv(uint64_t wr_id, uint32_t len,
			       const struct ud_end *e,
			       const struct ud_end *from)
{
	return (struct rc_wc_want){
		.wr_id = wr_id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.byte_len = UD_GRH + len, .qp_num = e->qp->qp_num,
		.src_qp = from->qp->qp_num, .wc_flags = IBV_WC_GRH,
	};
}
