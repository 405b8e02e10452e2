// SPDX-License-Identifier: GPL-2.0
/*
 * Extended CQs (ibv_create_cq_ex) and the device clock:
 * - every ibv_wc_read_* of the extended poll API against exact values for
 *   SEND, SEND_WITH_IMM, RECV, RECV_RDMA_WITH_IMM, RDMA_WRITE, RDMA_READ
 *   on an RC pair, UD receives (src_qp, GRH, SL: the packet type), a
 *   remote access error and the flushed receives of a QP in ERR;
 * - the device timestamp of every completion (also of error CQEs) lies
 *   within the CLOCK_MONOTONIC interval from before the post to after the
 *   poll and never goes back; the wall-clock one within the
 *   CLOCK_REALTIME interval; a CQ asking for one clock has no reader of
 *   the other;
 * - ibv_query_device_ex reports hca_core_clock 1 GHz and a 63-bit
 *   completion_timestamp_mask; ibv_query_rt_values_ex reads the clock
 *   (between two clock_gettime calls), refuses unknown comp_mask bits;
 * - wc_flags the device cannot fill are EOPNOTSUPP, a plain PD as parent
 *   domain, an unknown creation flag or cqe 0 EINVAL, as mlx5; a parent
 *   domain is taken and held;
 * - a cq_ex on a completion channel: the event names it and its
 *   cq_context; a cq_ex with wc_flags 0 polled by ibv_poll_cq (upstream
 *   perftest's CQs) reports the same exact work completions as a CQ.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "ud.h"
#include "util.h"
#include "verbs_util.h"

#define ALL_FLAGS (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
		   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define IMM	0x12345678u

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

/* ibv_cq_ex_to_cq()'s inverse: the CQ was made by ibv_create_cq_ex. */
static struct ibv_cq_ex *to_ex(struct ibv_cq *cq)
{
	return (struct ibv_cq_ex *)cq;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One completion as the extended API reads it (every reader the CQ has). */
struct got {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp, slid;
	unsigned int wc_flags;
	uint8_t sl, dlid_path_bits;
	uint64_t ts, wallclock;
};

static void read_cur(struct ibv_cq_ex *cq, struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->wr_id = cq->wr_id;
	g->status = cq->status;
	g->opcode = ibv_wc_read_opcode(cq);
	g->vendor_err = ibv_wc_read_vendor_err(cq);
	g->wc_flags = ibv_wc_read_wc_flags(cq);
	if (cq->read_byte_len)
		g->byte_len = ibv_wc_read_byte_len(cq);
	if (cq->read_imm_data)
		g->imm = ntohl(ibv_wc_read_imm_data(cq));
	if (cq->read_qp_num)
		g->qp_num = ibv_wc_read_qp_num(cq);
	if (cq->read_src_qp)
		g->src_qp = ibv_wc_read_src_qp(cq);
	if (cq->read_slid)
		g->slid = ibv_wc_read_slid(cq);
	if (cq->read_sl)
		g->sl = ibv_wc_read_sl(cq);
	if (cq->read_dlid_path_bits)
		g->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
	if (cq->read_completion_ts)
		g->ts = ibv_wc_read_completion_ts(cq);
	if (cq->read_completion_wallclock_ns)
		g->wallclock = ibv_wc_read_completion_wallclock_ns(cq);
}

/*
 * Up to @n completions of one batch (start_poll, next_poll..., end_poll)
 * within RC_WC_MS; returns how many, or -errno of start_poll.
 */
static int ex_poll(struct ibv_cq *ibcq, struct got *g, int n)
{
	struct ibv_cq_ex *cq = to_ex(ibcq);
	struct ibv_poll_cq_attr attr = {};
	uint64_t end = rc_now_us() + RC_WC_MS * 1000ull;
	int got = 0, ret;

	while (got < n && rc_now_us() < end) {
		ret = ibv_start_poll(cq, &attr);
		if (ret == ENOENT)
			continue;
		if (ret)
			return -ret;
		do {
			read_cur(cq, &g[got++]);
		} while (got < n && !ibv_next_poll(cq));
		ibv_end_poll(cq);
	}
	return got;
}

/* The fields the verbs define for this completion, and its clocks' window. */
static void expect_got(struct __test_metadata *_metadata, const struct got *g,
		       uint64_t wr_id, enum ibv_wc_status st,
		       enum ibv_wc_opcode op, uint32_t len, uint32_t qpn,
		       uint32_t src_qp, unsigned int flags, uint32_t imm,
		       const uint64_t mono[2], const uint64_t real[2])
{
	EXPECT_EQ(wr_id, g->wr_id);
	EXPECT_EQ(st, g->status) TH_LOG("wr_id %#llx: %s", (unsigned long long)wr_id,
					ibv_wc_status_str(g->status));
	EXPECT_EQ(qpn, g->qp_num);
	EXPECT_EQ(0, g->slid);
	/* A datagram's SL is its RoCE packet type (v2, IPv4), as mlx5's. */
	EXPECT_EQ(flags & IBV_WC_GRH ? 0xa : 0, g->sl);
	EXPECT_EQ(0, g->dlid_path_bits);
	if (st == IBV_WC_SUCCESS) {
		EXPECT_EQ(op, g->opcode);
		EXPECT_EQ(len, g->byte_len);
		EXPECT_EQ(flags, g->wc_flags);
		EXPECT_EQ(imm, g->imm);
		EXPECT_EQ(src_qp, g->src_qp);
		EXPECT_EQ(0, g->vendor_err);
	} else {
		EXPECT_NE(0, g->vendor_err);
	}
	EXPECT_LE(mono[0], g->ts) TH_LOG("ts %llu before the post %llu",
					 (unsigned long long)g->ts,
					 (unsigned long long)mono[0]);
	EXPECT_GE(mono[1], g->ts) TH_LOG("ts %llu after the poll %llu",
					 (unsigned long long)g->ts,
					 (unsigned long long)mono[1]);
	EXPECT_LE(real[0], g->wallclock);
	EXPECT_GE(real[1], g->wallclock);
}

static void window_start(uint64_t mono[2], uint64_t real[2])
{
	mono[0] = clock_ns(CLOCK_MONOTONIC);
	real[0] = clock_ns(CLOCK_REALTIME);
}

static void window_end(uint64_t mono[2], uint64_t real[2])
{
	mono[1] = clock_ns(CLOCK_MONOTONIC);
	real[1] = clock_ns(CLOCK_REALTIME);
}

FIXTURE(cqx) {
	struct rc_pair p;
};

FIXTURE_SETUP(cqx)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	c.cq_kind.ex = true;
	c.cq_kind.wc_flags = ALL_FLAGS;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(cqx)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/* Every RC opcode's completions, both sides, every field. */
TEST_F(cqx, rc_opcodes_every_field)
{
	uint64_t mono[2], real[2], last = 0;
	uint8_t *abuf = A->buf, *bbuf = B->buf;
	uint32_t aq = A->qp->qp_num, bq = B->qp->qp_num;
	struct ibv_poll_cq_attr empty = {};
	struct got g[2];

	/* SEND: A's requester completion, B's RECV. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 0xb1, bbuf, 4096, B->mr->lkey));
	window_start(mono, real);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 0xa1, abuf, 100,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, ex_poll(A->scq, g, 1));
	ASSERT_EQ(1, ex_poll(B->rcq, &g[1], 1));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xa1, IBV_WC_SUCCESS, IBV_WC_SEND, 100,
		   aq, 0, 0, 0, mono, real);
	expect_got(_metadata, &g[1], 0xb1, IBV_WC_SUCCESS, IBV_WC_RECV, 100,
		   bq, aq, 0, 0, mono, real);
	last = g[0].ts;

	/* SEND_WITH_IMM: the immediate on both sides (the HCA echoes it). */
	ASSERT_EQ(0, rc_post_recv(B->qp, 0xb2, bbuf, 4096, B->mr->lkey));
	window_start(mono, real);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND_WITH_IMM, 0xa2, abuf, 33,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, IMM));
	ASSERT_EQ(1, ex_poll(A->scq, g, 1));
	ASSERT_EQ(1, ex_poll(B->rcq, &g[1], 1));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xa2, IBV_WC_SUCCESS, IBV_WC_SEND, 33,
		   aq, 0, IBV_WC_WITH_IMM, IMM, mono, real);
	expect_got(_metadata, &g[1], 0xb2, IBV_WC_SUCCESS, IBV_WC_RECV, 33,
		   bq, aq, IBV_WC_WITH_IMM, IMM, mono, real);
	EXPECT_LE(last, g[0].ts);
	last = g[0].ts;

	/* RDMA_WRITE_WITH_IMM: B's RECV_RDMA_WITH_IMM, the data landed. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 0xb3, NULL, 0, 0));
	rc_fill(abuf, 200, 3);
	window_start(mono, real);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 0xa3, abuf,
				  200, A->mr->lkey, (uintptr_t)bbuf + 8192,
				  B->mr->rkey, IBV_SEND_SIGNALED, IMM + 1));
	ASSERT_EQ(1, ex_poll(A->scq, g, 1));
	ASSERT_EQ(1, ex_poll(B->rcq, &g[1], 1));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xa3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		   200, aq, 0, IBV_WC_WITH_IMM, IMM + 1, mono, real);
	expect_got(_metadata, &g[1], 0xb3, IBV_WC_SUCCESS,
		   IBV_WC_RECV_RDMA_WITH_IMM, 200, bq, aq, IBV_WC_WITH_IMM,
		   IMM + 1, mono, real);
	EXPECT_EQ(-1, rc_check_fill(bbuf + 8192, 200, 3));
	EXPECT_LE(last, g[0].ts);
	last = g[0].ts;

	/* RDMA_WRITE and RDMA_READ: A's completions only. */
	rc_fill(abuf, 300, 4);
	window_start(mono, real);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 0xa4, abuf, 300,
				  A->mr->lkey, (uintptr_t)bbuf + 16384,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_READ, 0xa5, abuf + 4096,
				  300, A->mr->lkey, (uintptr_t)bbuf + 16384,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(2, ex_poll(A->scq, g, 2));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xa4, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		   300, aq, 0, 0, 0, mono, real);
	expect_got(_metadata, &g[1], 0xa5, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		   300, aq, 0, 0, 0, mono, real);
	EXPECT_EQ(-1, rc_check_fill(abuf + 4096, 300, 4));
	EXPECT_LE(last, g[0].ts);
	EXPECT_LE(g[0].ts, g[1].ts);
	EXPECT_EQ(ENOENT, ibv_start_poll(to_ex(B->rcq), &empty));
}

/* A remote access error and the flush of B's receives: error CQEs. */
TEST_F(cqx, errors_and_flush)
{
	uint64_t mono[2], real[2];
	uint32_t aq = A->qp->qp_num, bq = B->qp->qp_num;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct got g[3];

	window_start(mono, real);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 0xe1, A->buf, 64,
				  A->mr->lkey, (uintptr_t)B->buf,
				  B->mr->rkey ^ 1, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, ex_poll(A->scq, g, 1));
	/* A is in ERR now: the next WR is flushed. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 0xe2, A->buf, 8,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, ex_poll(A->scq, &g[1], 1));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xe1, IBV_WC_REM_ACCESS_ERR, 0, 0, aq, 0,
		   0, 0, mono, real);
	expect_got(_metadata, &g[1], 0xe2, IBV_WC_WR_FLUSH_ERR, 0, 0, aq, 0,
		   0, 0, mono, real);
	/* The HCA's vendor syndromes for these two (cqe.c). */
	EXPECT_EQ(0x88, g[0].vendor_err);
	EXPECT_EQ(0xf9, g[1].vendor_err);
	EXPECT_LE(g[0].ts, g[1].ts);

	/* B's receives, flushed in ERR (the access error put it there). */
	window_start(mono, real);
	ASSERT_EQ(0, rc_post_recv(B->qp, 0xf1, B->buf, 64, B->mr->lkey));
	ASSERT_EQ(0, rc_post_recv(B->qp, 0xf2, B->buf, 64, B->mr->lkey));
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(2, ex_poll(B->rcq, g, 2));
	window_end(mono, real);
	expect_got(_metadata, &g[0], 0xf1, IBV_WC_WR_FLUSH_ERR, 0, 0, bq, 0, 0,
		   0, mono, real);
	expect_got(_metadata, &g[1], 0xf2, IBV_WC_WR_FLUSH_ERR, 0, 0, bq, 0, 0,
		   0, mono, real);
	EXPECT_EQ(IBV_WC_RECV, g[0].opcode);
	EXPECT_LE(g[0].ts, g[1].ts);
}

/* A cq_ex on a completion channel: the event, its cq_context, the CQE. */
TEST(channel)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_comp_channel *ch;
	struct rc_pair p = {};
	struct rc_cfg c;
	struct ibv_cq *cq, *ev_cq;
	struct pollfd pfd;
	void *ev_ctx;
	struct got g;

	ASSERT_NE(NULL, ctx);
	ch = ibv_create_comp_channel(ctx);
	ASSERT_NE(NULL, ch);
	rc_cfg_default(&c, RC_SAME_CTX);
	c.ctx = ctx;
	c.rcq_ch[1] = ch;
	c.cq_context = (void *)0x5eed;
	c.cq_kind.ex = true;
	c.cq_kind.wc_flags = ALL_FLAGS;
	ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
	cq = p.e[1].rcq;
	/* libibverbs' verbs_init_cq, run once: the fields it owns. */
	EXPECT_EQ(ch, cq->channel);
	EXPECT_EQ((void *)0x5eed, cq->cq_context);
	EXPECT_EQ(ctx, cq->context);
	ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
	ASSERT_EQ(0, rc_post_recv(p.e[1].qp, 0xc1, p.e[1].buf, 64,
				  p.e[1].mr->lkey));
	ASSERT_EQ(0, rc_post_send(p.e[0].qp, IBV_WR_SEND, 0xc0, p.e[0].buf, 64,
				  p.e[0].mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 5000));
	ASSERT_EQ(0, ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	EXPECT_EQ(cq, ev_cq);
	EXPECT_EQ((void *)0x5eed, ev_ctx);
	ibv_ack_cq_events(ev_cq, 1);
	ASSERT_EQ(1, ex_poll(ev_cq, &g, 1));
	EXPECT_EQ(0xc1, g.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, g.status);
	EXPECT_EQ(IBV_WC_RECV, g.opcode);
	EXPECT_EQ(64, g.byte_len);
	EXPECT_EQ(p.e[0].qp->qp_num, g.src_qp);
	rc_pair_destroy(&p);
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
	ibv_close_device(ctx);
}

/* wc_flags 0, polled by ibv_poll_cq (upstream perftest's CQs). */
TEST(poll_cq_on_cq_ex)
{
	struct rc_pair p = {};
	struct rc_cfg c;
	struct rc_end *a, *b;
	struct ibv_cq_ex *ex;

	rc_cfg_default(&c, RC_SAME_CTX);
	c.cq_kind.ex = true;
	c.cq_kind.wc_flags = 0;
	ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
	a = &p.e[0];
	b = &p.e[1];
	/* Only the readers it asked for: none of the optional ones. */
	ex = to_ex(a->scq);
	EXPECT_EQ(NULL, ex->read_byte_len);
	EXPECT_EQ(NULL, ex->read_completion_ts);
	EXPECT_EQ(NULL, ex->read_completion_wallclock_ns);
	EXPECT_NE(NULL, ex->read_opcode);
	ASSERT_EQ(0, rc_post_recv(b->qp, 2, b->buf, 4096, b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND_WITH_IMM, 1, a->buf, 77,
				  a->mr->lkey, 0, 0, IBV_SEND_SIGNALED, IMM));
	struct rc_wc_want w = rc_want_imm(rc_want_req(1, IBV_WC_SEND, 77, a), IMM);
	struct rc_wc_want r = rc_want_imm(rc_want_recv(2, IBV_WC_RECV, 77, b, a), IMM);

	rc_expect_wc(_metadata, a->scq, &w);
	rc_expect_wc(_metadata, b->rcq, &r);
	rc_pair_destroy(&p);
}

/* One clock each: the other's reader is NULL, the one there is right. */
TEST(one_clock_each)
{
	static const uint64_t kinds[2] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};

	for (int k = 0; k < 2; k++) {
		uint64_t mono[2], real[2];
		struct rc_pair p = {};
		struct ibv_cq_ex *ex;
		struct rc_cfg c;
		struct got g;

		rc_cfg_default(&c, RC_SAME_CTX);
		c.cq_kind.ex = true;
		c.cq_kind.wc_flags = kinds[k];
		ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
		ex = to_ex(p.e[0].scq);
		EXPECT_EQ(k == 0, ex->read_completion_ts != NULL);
		EXPECT_EQ(k == 1, ex->read_completion_wallclock_ns != NULL);
		window_start(mono, real);
		ASSERT_EQ(0, rc_post_send(p.e[0].qp, IBV_WR_RDMA_WRITE, 7,
					  p.e[0].buf, 16, p.e[0].mr->lkey,
					  (uintptr_t)p.e[1].buf,
					  p.e[1].mr->rkey, IBV_SEND_SIGNALED, 0));
		ASSERT_EQ(1, ex_poll(p.e[0].scq, &g, 1));
		window_end(mono, real);
		EXPECT_EQ(7, g.wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, g.status);
		EXPECT_EQ(IBV_WC_RDMA_WRITE, g.opcode);
		if (k == 0) {
			EXPECT_LE(mono[0], g.ts);
			EXPECT_GE(mono[1], g.ts);
		} else {
			EXPECT_LE(real[0], g.wallclock);
			EXPECT_GE(real[1], g.wallclock);
		}
		rc_pair_destroy(&p);
	}
}

/* A UD receive: src_qp, GRH, SL, immediate, length with the GRH area. */
TEST(ud_src_qp)
{
	uint64_t mono[2], real[2];
	struct ud_pair p;
	struct ud_end *a, *b;
	struct got g;

	ud_cq_kind.ex = true;
	ud_cq_kind.wc_flags = ALL_FLAGS;
	ASSERT_EQ(0, ud_pair_open(&p, RC_SAME_CTX)) TH_LOG("%s", rc_err);
	a = &p.e[0];
	b = &p.e[1];
	ASSERT_EQ(0, ud_recv(b, 0xd1, UD_RECV_OFF, 4096));
	window_start(mono, real);
	ASSERT_EQ(0, ud_send(a, p.ah[0], b->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND_WITH_IMM, 0xd0, 0, 64, 0, IMM));
	ASSERT_EQ(1, ex_poll(b->rcq, &g, 1));
	window_end(mono, real);
	expect_got(_metadata, &g, 0xd1, IBV_WC_SUCCESS, IBV_WC_RECV,
		   64 + UD_GRH, b->qp->qp_num, a->qp->qp_num,
		   IBV_WC_GRH | IBV_WC_WITH_IMM, IMM, mono, real);
	ASSERT_EQ(1, ex_poll(a->scq, &g, 1));
	EXPECT_EQ(0xd0, g.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, g.status);
	EXPECT_EQ(IBV_WC_SEND, g.opcode);
	EXPECT_EQ(a->qp->qp_num, g.qp_num);
	ud_pair_close(&p);
	ud_cq_kind.ex = false;
}

/* hca_core_clock, the mask, and the clock itself. */
TEST(device_clock)
{
	struct ibv_device_attr_ex attr = {};
	struct ibv_values_ex v = {};
	struct ibv_context *ctx = open_dev("shca0");
	uint64_t t0, t1, raw;

	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_device_ex(ctx, NULL, &attr));
	EXPECT_EQ(1000000, attr.hca_core_clock);		/* kHz: 1 GHz */
	EXPECT_EQ(0x7fffffffffffffffull, attr.completion_timestamp_mask);

	for (int i = 0; i < 3; i++) {
		v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
		t0 = clock_ns(CLOCK_MONOTONIC);
		ASSERT_EQ(0, ibv_query_rt_values_ex(ctx, &v));
		t1 = clock_ns(CLOCK_MONOTONIC);
		EXPECT_EQ(IBV_VALUES_MASK_RAW_CLOCK, v.comp_mask);
		EXPECT_EQ(0, v.raw_clock.tv_sec);
		raw = (uint64_t)v.raw_clock.tv_nsec;
		EXPECT_LE(t0, raw);
		EXPECT_GE(t1, raw);
	}
	v.comp_mask = IBV_VALUES_MASK_RESERVED;
	EXPECT_EQ(EINVAL, ibv_query_rt_values_ex(ctx, &v));
	v.comp_mask = 0;
	EXPECT_EQ(0, ibv_query_rt_values_ex(ctx, &v));
	EXPECT_EQ(0, v.comp_mask);
	ibv_close_device(ctx);
}

/* What the device cannot fill or does not have, refused as mlx5 does. */
TEST(bad_attrs)
{
	static const struct { uint64_t wc_flags; uint32_t mask, flags; int cqe, err; } bad[] = {
		{ IBV_WC_EX_WITH_CVLAN, 0, 0, 16, EOPNOTSUPP },
		{ IBV_WC_EX_WITH_FLOW_TAG, 0, 0, 16, EOPNOTSUPP },
		{ IBV_WC_EX_WITH_TM_INFO, 0, 0, 16, EOPNOTSUPP },
		{ ALL_FLAGS | IBV_WC_EX_WITH_CVLAN, 0, 0, 16, EOPNOTSUPP },
		{ 1ull << 40, 0, 0, 16, EOPNOTSUPP },		/* libibverbs */
		{ 0, IBV_CQ_INIT_ATTR_MASK_PD, 0, 16, EINVAL },
		{ 0, IBV_CQ_INIT_ATTR_MASK_FLAGS,
		  IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, 16, EOPNOTSUPP },
		{ 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, 1u << 7, 16, EINVAL },
		{ 0, 0, 0, 0, EINVAL },
	};
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;

	ASSERT_NE(NULL, ctx);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.cqe = bad[i].cqe;
		a.wc_flags = bad[i].wc_flags;
		a.comp_mask = bad[i].mask;
		a.flags = bad[i].flags;
		errno = 0;
		cq = ibv_create_cq_ex(ctx, &a);
		EXPECT_EQ(NULL, cq) TH_LOG("row %zu", i);
		EXPECT_EQ(bad[i].err, errno) TH_LOG("row %zu: %s", i, strerror(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	/* SINGLE_THREADED is fine: no lock. */
	memset(&a, 0, sizeof(a));
	a.cqe = 4;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	a.wc_flags = ALL_FLAGS;
	cq = ibv_create_cq_ex(ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("%s", strerror(errno));
	EXPECT_LE(4, ibv_cq_ex_to_cq(cq)->cqe);
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	ibv_close_device(ctx);
}

/*
 * On a parent domain (upstream perftest's TD mode): accepted, holds the
 * parent (its dealloc is EBUSY until the CQ goes); a plain PD is EINVAL.
 */
TEST(parent_domain)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_td_init_attr ta = {};
	struct ibv_parent_domain_init_attr pa = {};
	struct ibv_cq_init_attr_ex a = {
		.cqe = 16, .wc_flags = ALL_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_poll_cq_attr empty = {};
	struct ibv_pd *pd, *parent;
	struct ibv_cq_ex *cq;
	struct ibv_td *td;

	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	td = ibv_alloc_td(ctx, &ta);
	ASSERT_NE(NULL, td);
	pa.pd = pd;
	pa.td = td;
	parent = ibv_alloc_parent_domain(ctx, &pa);
	ASSERT_NE(NULL, parent);

	a.parent_domain = pd;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq_ex(ctx, &a));
	EXPECT_EQ(EINVAL, errno);
	a.parent_domain = parent;
	cq = ibv_create_cq_ex(ctx, &a);
	ASSERT_NE(NULL, cq) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(ENOENT, ibv_start_poll(cq, &empty));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(parent));
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	EXPECT_EQ(0, ibv_dealloc_pd(parent));
	EXPECT_EQ(0, ibv_dealloc_td(td));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	ibv_close_device(ctx);
}

TEST_HARNESS_MAIN
