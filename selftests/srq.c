// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues (Documentation/testing.md "srq"): device caps;
 * create / query / modify errors; many RC QPs on one SRQ with every
 * receive checked field by field (wr_id, qp_num of the receiving QP,
 * src_qp of the sender, byte_len, opcode, immediate) and byte by byte,
 * with the free list recycled several times over; the limit event (one
 * shot, re-armed by modify_srq); LAST_WQE_REACHED when an attached QP goes
 * to ERR; RNR NAKs while the SRQ is empty (the send completes once a
 * receive is posted, or fails with RNR_RETRY_EXC_ERR); a UD QP on an SRQ
 * (drop when empty); and untrusted ring contents: a next index beyond the
 * ring (SRQ_ERR, no more receives, no hang), a WQE with too many data
 * segments (an error CQE naming it), random bytes over ring and record.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rng.h"
#include "softhca.h"		/* white box: the SRQ's ring and record */
#include "ud.h"
#include "verbs_util.h"

#define NQP		4
#define SLOT		4096		/* bytes per receive buffer */
#define NSLOT		64
#define BUF		(2 * NSLOT * SLOT)	/* receive slots, then send */
#define SEND_OFF	(NSLOT * SLOT)

struct srq_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *cli[NQP], *srv[NQP];
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
	uint32_t srq_wr;
};

FIXTURE(srq) {
	struct srq_env e;
};

static int qp_connect(struct srq_env *e, struct ibv_qp *qp, uint32_t dest,
		      uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	int mask;

	rc_init_attr(&a, &mask, RC_QP_ACCESS_ALL);
	if (ibv_modify_qp(qp, &a, mask))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;		/* 0.01 ms */
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = e->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

static struct ibv_qp *rc_qp(struct srq_env *e, struct ibv_srq *srq,
			    enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq, .srq = srq,
		.qp_type = type,
		.cap = { .max_send_wr = 64, .max_send_sge = 1,
			 .max_recv_wr = srq ? 0 : 8, .max_recv_sge = 1 },
	};

	return ibv_create_qp(e->pd, &ia);
}

/* NQP client -> server pairs, the servers on one SRQ of @srq_wr WRs. */
static int env_open(struct srq_env *e, uint32_t srq_wr, uint8_t rnr_retry)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = srq_wr,
						  .max_sge = 2 } };
	int ret;

	memset(e, 0, sizeof(*e));
	e->ctx = open_dev("shca0");
	if (!e->ctx)
		return -errno;
	e->gid_index = rc_find_gid(e->ctx, RC_IP0);
	if (e->gid_index < 0 || ibv_query_gid(e->ctx, 1, e->gid_index, &e->gid))
		return -ENOENT;
	e->pd = ibv_alloc_pd(e->ctx);
	e->scq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, 512, NULL, NULL, 0);
	if (!e->pd || !e->scq || !e->rcq)
		return -errno;
	e->srq = ibv_create_srq(e->pd, &sa);
	if (!e->srq)
		return -errno;
	e->srq_wr = sa.attr.max_wr;
	e->buf = mmap(NULL, BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->buf == MAP_FAILED) {
		e->buf = NULL;
		return -errno;
	}
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, RC_ACCESS_ALL);
	if (!e->mr)
		return -errno;
	for (int i = 0; i < NQP; i++) {
		e->cli[i] = rc_qp(e, NULL, IBV_QPT_RC);
		e->srv[i] = rc_qp(e, e->srq, IBV_QPT_RC);
		if (!e->cli[i] || !e->srv[i])
			return -errno;
	}
	for (int i = 0; i < NQP; i++) {
		ret = qp_connect(e, e->cli[i], e->srv[i]->qp_num, rnr_retry);
		if (!ret)
			ret = qp_connect(e, e->srv[i], e->cli[i]->qp_num, 7);
		if (ret)
			return ret;
	}
	return 0;
}

static void env_close(struct srq_env *e)
{
	for (int i = 0; i < NQP; i++) {
		if (e->cli[i])
			ibv_destroy_qp(e->cli[i]);
		if (e->srv[i])
			ibv_destroy_qp(e->srv[i]);
	}
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, BUF);
	if (e->srq)
		ibv_destroy_srq(e->srq);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

FIXTURE_SETUP(srq)
{
	ASSERT_EQ(0, env_open(&self->e, 15, 7)) TH_LOG("%s", strerror(errno));
}

FIXTURE_TEARDOWN(srq)
{
	env_close(&self->e);
}

/* Receive slot @slot (wr_id = slot) of SLOT bytes on the SRQ. */
static int post_slot(struct srq_env *e, struct ibv_srq *srq, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + slot * SLOT,
			       .length = SLOT, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* @len bytes of seed @seed from client @c (wr_id 0x1000 + @seed). */
static int send_msg(struct srq_env *e, int c, uint32_t len, uint32_t seed,
		    bool imm)
{
	uint8_t *src = e->buf + SEND_OFF + (seed % NSLOT) * SLOT;

	rc_fill(src, len, seed);
	return rc_post_send(e->cli[c], imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			    0x1000 + seed, src, len, e->mr->lkey, 0, 0,
			    IBV_SEND_SIGNALED, seed);
}

/* One receive: every field of the WC, then the bytes of its slot. */
static void expect_recv(struct __test_metadata *_metadata, struct srq_env *e,
			int c, uint32_t len, uint32_t seed, bool imm,
			uint32_t *slot)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(e->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(imm ? IBV_WC_RECV : IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(e->srv[c]->qp_num, wc.qp_num);
	EXPECT_EQ(e->cli[c]->qp_num, wc.src_qp);
	EXPECT_EQ(imm ? IBV_WC_WITH_IMM : 0u, wc.wc_flags);
	if (imm)
		EXPECT_EQ(htonl(seed), wc.imm_data);
	ASSERT_LT(wc.wr_id, (uint64_t)NSLOT);
	EXPECT_EQ(-1, rc_check_fill(e->buf + wc.wr_id * SLOT, len, seed))
		TH_LOG("slot %llu", (unsigned long long)wc.wr_id);
	*slot = (uint32_t)wc.wr_id;
}

static void expect_send_ok(struct __test_metadata *_metadata,
			   struct srq_env *e, uint32_t seed)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(e->scq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(0x1000 + seed, wc.wr_id);
}

TEST(caps)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_device_attr a;

	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_device(ctx, &a));
	EXPECT_EQ(8192, a.max_srq);
	EXPECT_EQ(32767, a.max_srq_wr);
	EXPECT_EQ(16, a.max_srq_sge);
	ibv_close_device(ctx);
}

TEST_F(srq, create_query_modify_errors)
{
	struct srq_env *e = &self->e;
	struct ibv_srq_init_attr sa = {};
	struct ibv_srq_attr qa, ma = {};
	struct ibv_sge sg[17] = {};
	struct ibv_recv_wr wr17 = { .sg_list = sg, .num_sge = 17 }, *bad;
	struct ibv_srq *s;

	/* 15 asked: 16 WQEs, one of them the free list's tail. */
	EXPECT_EQ(15u, e->srq_wr);
	ASSERT_EQ(0, ibv_query_srq(e->srq, &qa));
	EXPECT_EQ(15u, qa.max_wr);
	EXPECT_EQ(3u, qa.max_sge);	/* a 64-byte stride: 3 data segments */
	EXPECT_EQ(0u, qa.srq_limit);

	sa.attr.max_wr = 0;
	sa.attr.max_sge = 1;
	EXPECT_EQ(NULL, ibv_create_srq(e->pd, &sa));
	sa.attr.max_wr = 32768;
	EXPECT_EQ(NULL, ibv_create_srq(e->pd, &sa));
	EXPECT_EQ(EINVAL, errno);
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 17;
	EXPECT_EQ(NULL, ibv_create_srq(e->pd, &sa));
	EXPECT_EQ(EINVAL, errno);
	sa.attr.max_sge = 1;
	sa.attr.srq_limit = 9;
	EXPECT_EQ(NULL, ibv_create_srq(e->pd, &sa));
	EXPECT_EQ(EINVAL, errno);
	/* The largest one, and its limit armed at creation. */
	sa.attr.max_wr = 32767;
	sa.attr.max_sge = 16;
	sa.attr.srq_limit = 100;
	s = ibv_create_srq(e->pd, &sa);
	ASSERT_NE(NULL, s) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(32767u, sa.attr.max_wr);
	EXPECT_EQ(16u, sa.attr.max_sge);
	ASSERT_EQ(0, ibv_query_srq(s, &qa));
	EXPECT_EQ(100u, qa.srq_limit);
	/* One SGE too many for a WR. */
	EXPECT_EQ(EINVAL, ibv_post_srq_recv(s, &wr17, &bad));
	EXPECT_EQ(&wr17, bad);
	EXPECT_EQ(0, ibv_destroy_srq(s));

	ma.srq_limit = 16;
	EXPECT_EQ(EINVAL, ibv_modify_srq(e->srq, &ma, IBV_SRQ_LIMIT));
	ma.max_wr = 64;
	EXPECT_EQ(EINVAL, ibv_modify_srq(e->srq, &ma, IBV_SRQ_MAX_WR));
	ma.srq_limit = 5;
	EXPECT_EQ(0, ibv_modify_srq(e->srq, &ma, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(e->srq, &qa));
	EXPECT_EQ(5u, qa.srq_limit);
	/* QPs are attached: not destroyed. */
	EXPECT_EQ(EBUSY, ibv_destroy_srq(e->srq));
}

/* The SRQ holds its max_wr and not one more. */
TEST_F(srq, full)
{
	struct srq_env *e = &self->e;

	for (uint32_t i = 0; i < e->srq_wr; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	EXPECT_EQ(ENOMEM, post_slot(e, e->srq, e->srq_wr));
}

/*
 * NQP senders into one SRQ of 15, 8 rounds of 8 messages (64 in all, the
 * free list recycled 4 times): each receive names the QP it came in on
 * and the sender, its slot holds the sender's bytes.
 */
TEST_F(srq, many_qps_one_srq)
{
	struct srq_env *e = &self->e;
	uint32_t seed = 1, slot;

	for (uint32_t i = 0; i < 8; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	for (int round = 0; round < 8; round++) {
		uint32_t first = seed;

		for (int k = 0; k < 8; k++, seed++)
			ASSERT_EQ(0, send_msg(e, k % NQP, 100 + seed * 13, seed,
					      true));
		for (uint32_t s = first; s < seed; s++) {
			struct ibv_wc wc;

			/* Per QP in order; QPs of one CQ may interleave. */
			ASSERT_EQ(1, rc_poll(e->scq, &wc, 1, RC_WC_MS));
			EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		}
		for (uint32_t s = first; s < seed; s++) {
			struct ibv_wc wc;
			uint32_t ms;
			int c;

			/* Completions of different QPs may interleave. */
			ASSERT_EQ(1, rc_poll(e->rcq, &wc, 1, RC_WC_MS));
			ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
				TH_LOG("%s", rc_wc_str(&wc));
			for (c = 0; c < NQP; c++)
				if (e->srv[c]->qp_num == wc.qp_num)
					break;
			ASSERT_LT(c, NQP);
			EXPECT_EQ(e->cli[c]->qp_num, wc.src_qp);
			ASSERT_EQ(IBV_WC_WITH_IMM, wc.wc_flags);
			EXPECT_EQ(IBV_WC_RECV, wc.opcode);
			ms = ntohl(wc.imm_data);
			ASSERT_LE(first, ms);
			ASSERT_GT(seed, ms);
			EXPECT_EQ(100 + ms * 13, wc.byte_len);
			EXPECT_EQ(-1, rc_check_fill(e->buf + wc.wr_id * SLOT,
						    wc.byte_len, ms));
			slot = (uint32_t)wc.wr_id;
			ASSERT_EQ(0, post_slot(e, e->srq, slot));
		}
		rc_expect_quiet(_metadata, e->rcq, "no extra receive");
	}
}

TEST_F(srq, limit_event_one_shot)
{
	struct srq_env *e = &self->e;
	struct ibv_srq_attr ma = { .srq_limit = 4 }, qa;
	struct ibv_async_event ev;
	uint32_t slot;

	for (uint32_t i = 0; i < 8; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	ASSERT_EQ(0, ibv_modify_srq(e->srq, &ma, IBV_SRQ_LIMIT));
	/* 8 -> 4 left: not below 4. */
	for (uint32_t s = 1; s <= 4; s++) {
		ASSERT_EQ(0, send_msg(e, 0, 64, s, false));
		expect_send_ok(_metadata, e, s);
		expect_recv(_metadata, e, 0, 64, s, false, &slot);
	}
	EXPECT_EQ(-1, next_async_event(e->ctx, 100, &ev));
	/* 4 -> 3 left: the event, and the limit is disarmed. */
	ASSERT_EQ(0, send_msg(e, 1, 64, 5, false));
	expect_send_ok(_metadata, e, 5);
	expect_recv(_metadata, e, 1, 64, 5, false, &slot);
	ASSERT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED,
		  next_async_event(e->ctx, 2000, &ev));
	EXPECT_EQ(e->srq, ev.element.srq);
	ASSERT_EQ(0, ibv_query_srq(e->srq, &qa));
	EXPECT_EQ(0u, qa.srq_limit);
	/* 3 -> 2 left: disarmed, no event. */
	ASSERT_EQ(0, send_msg(e, 1, 64, 6, false));
	expect_send_ok(_metadata, e, 6);
	expect_recv(_metadata, e, 1, 64, 6, false, &slot);
	EXPECT_EQ(-1, next_async_event(e->ctx, 100, &ev));
	/* Re-armed at 2 with 2 left: the next take (1 left) fires it. */
	ma.srq_limit = 2;
	ASSERT_EQ(0, ibv_modify_srq(e->srq, &ma, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, send_msg(e, 2, 64, 7, false));
	expect_send_ok(_metadata, e, 7);
	expect_recv(_metadata, e, 2, 64, 7, false, &slot);
	EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED,
		  next_async_event(e->ctx, 2000, &ev));
}

TEST_F(srq, last_wqe_reached)
{
	struct srq_env *e = &self->e;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_async_event ev;
	uint32_t slot;

	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	ASSERT_EQ(0, ibv_modify_qp(e->srv[1], &a, IBV_QP_STATE));
	ASSERT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED,
		  next_async_event(e->ctx, 2000, &ev));
	EXPECT_EQ(e->srv[1], ev.element.qp);
	EXPECT_EQ(-1, next_async_event(e->ctx, 100, &ev));
	/* The SRQ's WQEs stay for the others: none was flushed. */
	rc_expect_quiet(_metadata, e->rcq, "no flush of SRQ WQEs");
	ASSERT_EQ(0, send_msg(e, 2, 300, 7, false));
	expect_send_ok(_metadata, e, 7);
	expect_recv(_metadata, e, 2, 300, 7, false, &slot);
}

/* Nothing posted: RNR NAKs until a receive comes, then the message lands. */
TEST_F(srq, rnr_until_posted)
{
	struct srq_env *e = &self->e;
	uint32_t slot;

	ASSERT_EQ(0, send_msg(e, 3, 2000, 9, true));
	rc_expect_quiet(_metadata, e->scq, "RNR: no send completion yet");
	ASSERT_EQ(0, post_slot(e, e->srq, 11));
	expect_send_ok(_metadata, e, 9);
	expect_recv(_metadata, e, 3, 2000, 9, true, &slot);
	EXPECT_EQ(11u, slot);
}

/* With rnr_retry 0 the empty SRQ fails the send at once. */
TEST(rnr_retry_exceeded)
{
	struct srq_env e;
	struct ibv_wc wc;

	ASSERT_EQ(0, env_open(&e, 7, 0));
	ASSERT_EQ(0, send_msg(&e, 0, 10, 1, false));
	ASSERT_EQ(1, rc_poll(e.scq, &wc, 1, RC_WC_MS));
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(0x1001u, wc.wr_id);
	EXPECT_EQ(0, rc_poll_none(e.rcq, RC_QUIET_MS));
	env_close(&e);
}

/* A UD QP on an SRQ: the datagram, its GRH area, src_qp; dropped if empty. */
TEST_F(srq, ud_on_srq)
{
	struct srq_env *e = &self->e;
	struct ibv_qp *rq = rc_qp(e, e->srq, IBV_QPT_UD);
	struct ibv_qp *sq = rc_qp(e, NULL, IBV_QPT_UD);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = e->gid, .hop_limit = 64,
					   .sgid_index = (uint8_t)e->gid_index } };
	struct ibv_ah *ah;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, rq);
	ASSERT_NE(NULL, sq);
	ASSERT_EQ(0, ud_qp_rts(rq, UD_QKEY));
	ASSERT_EQ(0, ud_qp_rts(sq, UD_QKEY));
	ah = ibv_create_ah(e->pd, &aa);
	ASSERT_NE(NULL, ah);
	rc_fill(e->buf + SEND_OFF, 500, 77);
	sge.addr = (uintptr_t)e->buf + SEND_OFF;
	sge.length = 500;
	sge.lkey = e->mr->lkey;
	wr.wr_id = 0x77;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rq->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	/* Empty SRQ: the sender succeeds, nothing is received. */
	ASSERT_EQ(0, ibv_post_send(sq, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->scq, &wc, 1, RC_WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	rc_expect_quiet(_metadata, e->rcq, "UD dropped on an empty SRQ");
	ASSERT_EQ(0, post_slot(e, e->srq, 5));
	ASSERT_EQ(0, ibv_post_send(sq, &wr, &bad));
	ASSERT_EQ(1, rc_poll(e->scq, &wc, 1, RC_WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, rc_poll(e->rcq, &wc, 1, RC_WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(5u, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(500u + UD_GRH, wc.byte_len);
	EXPECT_EQ(rq->qp_num, wc.qp_num);
	EXPECT_EQ(sq->qp_num, wc.src_qp);
	EXPECT_EQ(IBV_WC_GRH, wc.wc_flags);
	EXPECT_EQ(-1, rc_check_fill(e->buf + 5 * SLOT + UD_GRH, 500, 77));
	ibv_destroy_ah(ah);
	ibv_destroy_qp(sq);
	ibv_destroy_qp(rq);
}

/*
 * A receive CQE left unpolled when its QP is destroyed gives its SRQ WQE
 * back to the free list (the provider's CQ cleaning): the full SRQ takes
 * exactly one more WR afterwards.
 */
TEST_F(srq, destroy_returns_unpolled_wqe)
{
	struct srq_env *e = &self->e;

	for (uint32_t i = 0; i < e->srq_wr; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	ASSERT_EQ(0, send_msg(e, 0, 32, 1, false));
	expect_send_ok(_metadata, e, 1);
	EXPECT_EQ(ENOMEM, post_slot(e, e->srq, 20));
	ASSERT_EQ(0, ibv_destroy_qp(e->srv[0]));
	e->srv[0] = NULL;
	EXPECT_EQ(0, post_slot(e, e->srq, 20));
	EXPECT_EQ(ENOMEM, post_slot(e, e->srq, 21));
	rc_expect_quiet(_metadata, e->rcq, "the destroyed QP's CQE is gone");
}

/*
 * The WQE the HCA takes second names a next index beyond the ring: the
 * second message still lands (its WQE is good), then SRQ_ERR, and the SRQ
 * gives nothing more (RNR NAKs, no hang, no CQE).
 */
TEST_F(srq, fuzz_bad_next_index)
{
	struct srq_env *e = &self->e;
	struct softhca_srq *s = to_ssrq(e->srq);
	struct ibv_async_event ev;
	uint32_t slot;

	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(0, post_slot(e, e->srq, i));
	/* Ring order: WQE 1 is the HCA's second; its next goes to 0x7fff. */
	softhca_srq_wqe(&s->wrs, 1)->next_wqe_index = htobe16(0x7fff);
	ASSERT_EQ(0, send_msg(e, 0, 40, 1, false));
	expect_send_ok(_metadata, e, 1);
	expect_recv(_metadata, e, 0, 40, 1, false, &slot);
	EXPECT_EQ(0u, slot);
	ASSERT_EQ(0, send_msg(e, 0, 40, 2, false));
	expect_send_ok(_metadata, e, 2);
	expect_recv(_metadata, e, 0, 40, 2, false, &slot);
	EXPECT_EQ(1u, slot);
	ASSERT_EQ(IBV_EVENT_SRQ_ERR, next_async_event(e->ctx, 2000, &ev));
	EXPECT_EQ(e->srq, ev.element.srq);
	ASSERT_EQ(0, send_msg(e, 1, 40, 3, false));
	rc_expect_quiet(_metadata, e->scq, "RNR on an SRQ in error");
	rc_expect_quiet(_metadata, e->rcq, "nothing taken");
}

/* A WQE of 31 data segments (max_recv_sge 16): an error CQE naming it. */
TEST(fuzz_too_many_sges)
{
	struct srq_env e;
	struct softhca_srq *s;
	struct softhca_wqe_data_seg *d;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 7, .max_sge = 16 } };
	struct ibv_wc wc;

	ASSERT_EQ(0, env_open(&e, 7, 7));
	/* Replace the env's SRQ user: servers are attached, so a new pair. */
	ibv_destroy_qp(e.srv[0]);
	e.srv[0] = NULL;
	{
		struct ibv_srq *big = ibv_create_srq(e.pd, &sa);
		struct ibv_qp_init_attr ia = {
			.send_cq = e.scq, .recv_cq = e.rcq, .srq = big,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		};
		struct ibv_qp *qp;

		ASSERT_NE(NULL, big);
		qp = ibv_create_qp(e.pd, &ia);
		ASSERT_NE(NULL, qp);
		ibv_destroy_qp(e.cli[0]);
		e.cli[0] = rc_qp(&e, NULL, IBV_QPT_RC);
		ASSERT_NE(NULL, e.cli[0]);
		ASSERT_EQ(0, qp_connect(&e, e.cli[0], qp->qp_num, 7));
		ASSERT_EQ(0, qp_connect(&e, qp, e.cli[0]->qp_num, 7));
		ASSERT_EQ(0, post_slot(&e, big, 3));
		s = to_ssrq(big);
		d = (void *)((uint8_t *)softhca_srq_wqe(&s->wrs, 0) + 16);
		for (int i = 0; i < 31; i++) {
			d[i].byte_count = htobe32(8);
			d[i].lkey = htobe32(e.mr->lkey);
			d[i].addr = htobe64((uintptr_t)e.buf + 8 * i);
		}
		ASSERT_EQ(0, send_msg(&e, 0, 8, 1, false));
		ASSERT_EQ(1, rc_poll(e.rcq, &wc, 1, RC_WC_MS));
		EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status)
			TH_LOG("%s", rc_wc_str(&wc));
		EXPECT_EQ(3u, wc.wr_id);
		EXPECT_EQ(qp->qp_num, wc.qp_num);
		ASSERT_EQ(1, rc_poll(e.scq, &wc, 1, RC_WC_MS));
		EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status)
			TH_LOG("%s", rc_wc_str(&wc));
		ibv_destroy_qp(qp);
		EXPECT_EQ(0, ibv_destroy_srq(big));
	}
	env_close(&e);
}

/* Random bytes over the ring and the record while messages arrive. */
TEST_F(srq, fuzz_random_ring)
{
	struct srq_env *e = &self->e;
	struct softhca_srq *s = to_ssrq(e->srq);
	size_t ring = (size_t)s->wrs.cnt << s->wrs.wqe_shift;
	struct ibv_wc wc[16];

	rnd_seed();
	for (int round = 0; round < 20; round++) {
		rnd_fill(s->wrs.buf, ring);
		s->dbr->counter = htobe32((uint32_t)rnd());
		for (int c = 0; c < NQP; c++)
			ASSERT_EQ(0, send_msg(e, c, 64, round * NQP + c, false));
		usleep(2000);
		/* Whatever comes, comes; the kernel must stay up. */
		while (ibv_poll_cq(e->rcq, 16, wc) > 0)
			;
		while (ibv_poll_cq(e->scq, 16, wc) > 0)
			;
	}
	for (int c = 0; c < NQP; c++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ASSERT_EQ(0, ibv_modify_qp(e->cli[c], &a, IBV_QP_STATE));
		ASSERT_EQ(0, ibv_modify_qp(e->srv[c], &a, IBV_QP_STATE));
	}
}

TEST_HARNESS_MAIN
