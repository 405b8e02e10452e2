// SPDX-License-Identifier: GPL-2.0
/*
 * Unreliable connected QPs (IBV_QPT_UC) on the local fabric, between two
 * QPs of one context and between shca0 and shca1. Checked: SEND, SEND
 * with immediate, RDMA WRITE and WRITE with immediate at sizes around the
 * MTU and up to 256 KiB, several SGEs and inline, every WC field and
 * every byte (canaries after the payload); the opcodes UC has no packets
 * for (READ, atomics, SEND_WITH_INV) refused at post with EINVAL and
 * nothing posted; the attributes UC does not have refused by modify_qp
 * (EINVAL); and what "unreliable" means at the responder: a message it
 * cannot take (no receive posted, longer than the receive, a WRITE the
 * rkey does not grant, a WRITE_IMM with no receive) is dropped without a
 * completion there and without an error at the requester, whose WR
 * completes with success; the responder stays in RTS, its receive is left
 * for the next message, and the drop counters (out_of_buffer,
 * rx_len_drops, rx_access_drops) say why. A READ WQE put in a UC send
 * queue by hand fails (LOC_QP_OP_ERR) and reads nothing. The extended
 * post-send API (ibv_wr_*) on a UC QP; UC asking for READ or atomics is
 * refused at create (EOPNOTSUPP). 300 messages of
 * 4 packets each arrive whole and in order, or (SOFTHCA_UC_LOSS=1, a
 * lossy wire) not at all. Last, a UC QP moved to ERR flushes its receives.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "../user/softhca.h"	/* white box: the SQ's transport */
#include "ud.h"

#define SRC	0
#define DST	(512 * 1024)
#define BIG	(256 * 1024)

/*
 * SOFTHCA_UC_LOSS=1: the network loses packets (wire_netem.sh); only
 * messages_arrive_whole_or_not_at_all runs, the others count on every
 * message arriving.
 */
#define UC_LOSSLESS_ONLY()						\
	do {								\
		if (getenv("SOFTHCA_UC_LOSS"))				\
			SKIP(return, "the network loses packets");	\
	} while (0)

FIXTURE(uc) {
	struct rc_pair p;
};

FIXTURE_VARIANT(uc) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(uc, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(uc, cross_dev) { .topo = RC_CROSS_DEV };

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(uc)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.qp_type = IBV_QPT_UC;
	c.qp_access = IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(uc)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/*
 * A plain WRITE's bytes at @p: UC completes at the requester once the
 * message is sent, so on the wire they may land a little later. Polls
 * for up to 3 s.
 */
static void expect_written(struct __test_metadata *_metadata,
			   const uint8_t *p, size_t len, uint32_t seed,
			   const char *what)
{
	long bad = 0;

	for (int i = 0; i < 3000 && (bad = rc_check_fill(p, len, seed)) != -1; i++)
		usleep(1000);
	EXPECT_EQ(-1, bad) TH_LOG("%s: first bad byte %ld", what, bad);
}

/* The responder's end: B's device name, for its port counters. */
static const char *b_dev(struct rc_pair *p)
{
	return p->e[1].dev;
}

/*
 * Counter @name of @dev once it reaches @want (on the wire the requester
 * completes before its packets are taken), or its value after 3 s.
 */
static long long counter_reaches(const char *dev, const char *name,
				 long long want)
{
	long long v = -1;

	for (int i = 0; i < 100 && v != want; i++)
		v = ud_counter(dev, name);	/* 20 ms each */
	return v;
}

static const uint32_t sizes[] = { 0, 1, 63, 64, 1023, 1024, 1025, 4096,
				  65536, BIG };

/* A SEND (or SEND_IMM) of @len into B's DST, canary after it. */
static void send_one(struct __test_metadata *_metadata, struct rc_pair *p,
		     uint32_t len, uint64_t id, bool imm)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	uint32_t imm_v = 0xc0de0000 + (uint32_t)id;
	struct rc_wc_want w;

	rc_fill(a->buf + SRC, len, (uint32_t)id);
	memset(b->buf + DST, 0xee, len + 64);
	ASSERT_EQ(0, rc_post_recv(b->qp, id + 100, b->buf + DST, len + 64,
				  b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				  id, len ? a->buf + SRC : NULL, len, a->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, imm_v));
	w = rc_want_req(id, IBV_WC_SEND, len, a);
	if (imm)
		w = rc_want_imm(w, imm_v);
	rc_expect_wc(_metadata, a->scq, &w);
	w = rc_want_recv(id + 100, IBV_WC_RECV, len, b, a);
	if (imm)
		w = rc_want_imm(w, imm_v);
	rc_expect_wc(_metadata, b->rcq, &w);
	rc_expect_bytes(_metadata, b->buf + DST, len, (uint32_t)id, "received");
	rc_expect_canary(_metadata, b->buf + DST + len, 64, 0xee, "after it");
}

TEST_F(uc, send_and_send_with_imm)
{
	UC_LOSSLESS_ONLY();
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		send_one(_metadata, &self->p, sizes[i], 2 * i + 1, false);
		send_one(_metadata, &self->p, sizes[i], 2 * i + 2, true);
	}
}

TEST_F(uc, rdma_write_and_write_with_imm)
{
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	/* A plain WRITE leaves B's receive alone; WRITE_IMM takes it. */
	for (unsigned int i = 1; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i], imm_v = 0x5eed0000 + i;

		rc_fill(A->buf + SRC, len, 50 + i);
		memset(B->buf + DST, 0xee, len + 64);
		ASSERT_EQ(0, rc_post_recv(B->qp, 700 + i, NULL, 0, 0));
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, i, A->buf + SRC,
					  len, A->mr->lkey, (uintptr_t)B->buf + DST,
					  B->mr->rkey, IBV_SEND_SIGNALED, 0));
		w = rc_want_req(i, IBV_WC_RDMA_WRITE, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		expect_written(_metadata, B->buf + DST, len, 50 + i, "written");
		rc_expect_quiet(_metadata, B->rcq, "plain WRITE");

		rc_fill(A->buf + SRC, len, 80 + i);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 40 + i,
					  A->buf + SRC, len, A->mr->lkey,
					  (uintptr_t)B->buf + DST, B->mr->rkey,
					  IBV_SEND_SIGNALED, imm_v));
		w = rc_want_imm(rc_want_req(40 + i, IBV_WC_RDMA_WRITE, len, A), imm_v);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_imm(rc_want_recv(700 + i, IBV_WC_RECV_RDMA_WITH_IMM, len,
					     B, A), imm_v);
		rc_expect_wc(_metadata, B->rcq, &w);
		rc_expect_bytes(_metadata, B->buf + DST, len, 80 + i, "written with imm");
		rc_expect_canary(_metadata, B->buf + DST + len, 64, 0xee, "after it");
	}
}

/* Three SGEs gathered into one message; and an inline SEND. */
TEST_F(uc, gather_and_inline)
{
	struct ibv_sge sge[3] = {
		{ (uintptr_t)A->buf + SRC, 1000, A->mr->lkey },
		{ (uintptr_t)A->buf + SRC + 5000, 3000, A->mr->lkey },
		{ (uintptr_t)A->buf + SRC + 20000, 24, A->mr->lkey },
	};
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = 3,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	rc_fill(A->buf + SRC, 20024, 9);
	ASSERT_EQ(0, rc_post_recv(B->qp, 11, B->buf + DST, 8192, B->mr->lkey));
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	w = rc_want_req(1, IBV_WC_SEND, 4024, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(11, IBV_WC_RECV, 4024, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	EXPECT_EQ(0, memcmp(B->buf + DST, A->buf + SRC, 1000));
	EXPECT_EQ(0, memcmp(B->buf + DST + 1000, A->buf + SRC + 5000, 3000));
	EXPECT_EQ(0, memcmp(B->buf + DST + 4000, A->buf + SRC + 20000, 24));

	ASSERT_EQ(0, rc_post_recv(B->qp, 12, B->buf + DST, 8192, B->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf + SRC + 7, 200,
				  A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0));
	w = rc_want_req(2, IBV_WC_SEND, 200, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(12, IBV_WC_RECV, 200, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	EXPECT_EQ(0, memcmp(B->buf + DST, A->buf + SRC + 7, 200));
}

/* READ, atomics and SEND_WITH_INV: EINVAL at post, bad_wr set, nothing sent. */
TEST_F(uc, read_atomic_send_inv_refused_at_post)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV,
	};
	struct ibv_sge sge = { (uintptr_t)A->buf + SRC, 8, A->mr->lkey };
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_send_wr wr = { .wr_id = 90 + i, .sg_list = &sge,
					  .num_sge = 1, .opcode = ops[i],
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad = NULL;

		wr.wr.rdma.remote_addr = (uintptr_t)B->buf + DST;
		wr.wr.rdma.rkey = B->mr->rkey;
		EXPECT_EQ(EINVAL, ibv_post_send(A->qp, &wr, &bad)) TH_LOG("opcode %d", ops[i]);
		EXPECT_EQ(&wr, bad);
	}
	rc_expect_quiet(_metadata, A->scq, "refused WRs");
	/* The SQ is as it was: a SEND after them completes first. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 5, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 7, NULL, 0, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	w = rc_want_req(7, IBV_WC_SEND, 0, A);
	rc_expect_wc(_metadata, A->scq, &w);
}

/* UC has no timeout, retry, RNR or read attributes: modify_qp says EINVAL. */
TEST_F(uc, reliability_attributes_refused)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14 };
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr ia;

	UC_LOSSLESS_ONLY();
	EXPECT_EQ(EINVAL, ibv_modify_qp(A->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT));
	a.max_rd_atomic = 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(A->qp, &a, IBV_QP_MAX_QP_RD_ATOMIC));
	a.min_rnr_timer = 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(A->qp, &a, IBV_QP_MIN_RNR_TIMER));
	ASSERT_EQ(0, ibv_query_qp(A->qp, &q, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_RTS, q.qp_state);
	EXPECT_EQ(IBV_QPT_UC, ia.qp_type);
}

/*
 * Nothing posted at B: the SEND is dropped (out_of_buffer), A's WR
 * succeeds, B stays in RTS; the next SEND, once a receive is posted, is
 * the one that arrives.
 */
TEST_F(uc, send_without_receive_is_dropped)
{
	long long oob = ud_counter(b_dev(&self->p), "out_of_buffer");
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	ASSERT_LE(0, oob);
	rc_fill(A->buf + SRC, 100, 1);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf + SRC, 100,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(1, IBV_WC_SEND, 100, A);
	rc_expect_wc(_metadata, A->scq, &w);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 2, A->buf + SRC,
				  100, A->mr->lkey, (uintptr_t)B->buf + DST,
				  B->mr->rkey, IBV_SEND_SIGNALED, 3));
	w = rc_want_imm(rc_want_req(2, IBV_WC_RDMA_WRITE, 100, A), 3);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(oob + 2, counter_reaches(b_dev(&self->p), "out_of_buffer", oob + 2));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(B->qp));

	ASSERT_EQ(0, rc_post_recv(B->qp, 33, B->buf + DST, 4096, B->mr->lkey));
	rc_expect_quiet(_metadata, B->rcq, "a dropped message never arrives");
	rc_fill(A->buf + SRC, 100, 2);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 4, A->buf + SRC, 100,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(4, IBV_WC_SEND, 100, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(33, IBV_WC_RECV, 100, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 100, 2, "the message after the drop");
}

/* Longer than B's receive: dropped (rx_len_drops), the receive kept. */
TEST_F(uc, send_longer_than_receive_is_dropped)
{
	long long ld = ud_counter(b_dev(&self->p), "rx_len_drops");
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	ASSERT_EQ(0, rc_post_recv(B->qp, 40, B->buf + DST, 100, B->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf + SRC, 101,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(1, IBV_WC_SEND, 101, A);
	rc_expect_wc(_metadata, A->scq, &w);
	rc_expect_quiet(_metadata, B->rcq, "too long");
	EXPECT_EQ(ld + 1, counter_reaches(b_dev(&self->p), "rx_len_drops", ld + 1));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(B->qp));

	rc_fill(A->buf + SRC, 100, 4);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf + SRC, 100,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(2, IBV_WC_SEND, 100, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(40, IBV_WC_RECV, 100, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 100, 4, "the fitting message");
}

/*
 * WRITEs the rkey does not grant (a wrong key, past the MR's end) or the
 * QP does not allow: dropped (rx_access_drops), nothing written, no
 * error anywhere; a good WRITE lands after them.
 */
TEST_F(uc, write_without_rights_is_dropped)
{
	long long ad = ud_counter(b_dev(&self->p), "rx_access_drops");
	uint64_t end = (uintptr_t)B->buf + B->buf_size;
	struct ibv_qp_attr a = { .qp_access_flags = 0 };
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	memset(B->buf + DST, 0xee, 4096);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1, A->buf + SRC, 64,
				  A->mr->lkey, (uintptr_t)B->buf + DST,
				  B->mr->rkey ^ 0x100, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 2, A->buf + SRC, 64,
				  A->mr->lkey, end - 32, B->mr->rkey,
				  IBV_SEND_SIGNALED, 0));
	for (int i = 1; i <= 2; i++) {
		w = rc_want_req(i, IBV_WC_RDMA_WRITE, 64, A);
		rc_expect_wc(_metadata, A->scq, &w);
	}
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &a, IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 3, A->buf + SRC, 64,
				  A->mr->lkey, (uintptr_t)B->buf + DST,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(3, IBV_WC_RDMA_WRITE, 64, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(ad + 3, counter_reaches(b_dev(&self->p), "rx_access_drops", ad + 3));
	rc_expect_canary(_metadata, B->buf + DST, 4096, 0xee, "nothing written");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(B->qp));

	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &a, IBV_QP_ACCESS_FLAGS));
	rc_fill(A->buf + SRC, 64, 7);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 4, A->buf + SRC, 64,
				  A->mr->lkey, (uintptr_t)B->buf + DST,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(4, IBV_WC_RDMA_WRITE, 64, A);
	rc_expect_wc(_metadata, A->scq, &w);
	expect_written(_metadata, B->buf + DST, 64, 7, "the granted WRITE");
	rc_expect_quiet(_metadata, B->rcq, "WRITEs at the responder");
}

/*
 * Untrusted rings: a READ WQE written into a UC QP's send queue by hand
 * (here by the provider's builder, told the QP is RC) is not executed: the
 * engine parses by the UC column, fails it with LOC_QP_OP_ERR and moves
 * the QP to ERR; nothing is read from B.
 */
TEST_F(uc, read_wqe_written_by_hand_fails)
{
	struct softhca_qp *sqp = to_sqp(A->qp);
	uint32_t tp = sqp->sq.fmt.tp;
	int ret;

	UC_LOSSLESS_ONLY();
	memset(A->buf + SRC, 0x11, 64);
	memset(B->buf + DST, 0x22, 64);
	sqp->sq.fmt.tp = SOFTHCA_TP_RC;
	ret = rc_post_send(A->qp, IBV_WR_RDMA_READ, 9, A->buf + SRC, 64,
			   A->mr->lkey, (uintptr_t)B->buf + DST, B->mr->rkey,
			   IBV_SEND_SIGNALED, 0);
	sqp->sq.fmt.tp = tp;
	ASSERT_EQ(0, ret);
	rc_expect_err(_metadata, A->scq, 9, IBV_WC_LOC_QP_OP_ERR, A);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(A->qp, IBV_QPS_ERR, 1000));
	rc_expect_canary(_metadata, A->buf + SRC, 64, 0x11, "nothing read");
}

/*
 * The extended post-send API on UC (ibv_wr_*): A's QP replaced by one
 * made with ibv_create_qp_ex and UC's send ops, connected to B again; a
 * SEND with an immediate from inline data and a WRITE with an immediate
 * gathered from two SGEs arrive whole. UC asking for READ or atomics is
 * refused (EOPNOTSUPP).
 */
TEST_F(uc, wr_api)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = A->scq, .recv_cq = A->rcq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = A->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	};
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_sge sg[2] = {
		{ (uintptr_t)A->buf + SRC, 3000, A->mr->lkey },
		{ (uintptr_t)A->buf + SRC + 8192, 1200, A->mr->lkey },
	};
	struct ibv_qp_ex *qpx;
	struct rc_wc_want w;
	struct ibv_qp *qp;

	UC_LOSSLESS_ONLY();
	qp = ibv_create_qp_ex(A->ctx, &ia);
	ASSERT_NE(NULL, qp) TH_LOG("create_qp_ex: %s", strerror(errno));
	ASSERT_EQ(0, ibv_destroy_qp(A->qp));
	A->qp = qp;
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &reset, IBV_QP_STATE));
	ASSERT_EQ(0, rc_end_connect(&self->p, 0)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, rc_end_connect(&self->p, 1)) TH_LOG("%s", rc_err);
	qpx = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(NULL, qpx);

	rc_fill(A->buf + SRC, 64, 21);
	ASSERT_EQ(0, rc_post_recv(B->qp, 1, B->buf + DST, 4096, B->mr->lkey));
	ibv_wr_start(qpx);
	qpx->wr_id = 10;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htonl(0xabc));
	ibv_wr_set_inline_data(qpx, A->buf + SRC, 64);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	w = rc_want_imm(rc_want_req(10, IBV_WC_SEND, 64, A), 0xabc);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_imm(rc_want_recv(1, IBV_WC_RECV, 64, B, A), 0xabc);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 64, 21, "inline SEND");

	rc_fill(A->buf + SRC, 3000, 22);
	rc_fill(A->buf + SRC + 8192, 1200, 23);
	ASSERT_EQ(0, rc_post_recv(B->qp, 2, NULL, 0, 0));
	ibv_wr_start(qpx);
	qpx->wr_id = 11;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(qpx, B->mr->rkey, (uintptr_t)B->buf + DST,
			      htonl(0xdef));
	ibv_wr_set_sge_list(qpx, 2, sg);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	w = rc_want_imm(rc_want_req(11, IBV_WC_RDMA_WRITE, 4200, A), 0xdef);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_imm(rc_want_recv(2, IBV_WC_RECV_RDMA_WITH_IMM, 4200, B, A),
			0xdef);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 3000, 22, "first SGE");
	rc_expect_bytes(_metadata, B->buf + DST + 3000, 1200, 23, "second SGE");

	ia.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(A->ctx, &ia));
	EXPECT_EQ(EOPNOTSUPP, errno);
	ia.send_ops_flags &= ~IBV_QP_EX_WITH_RDMA_READ;
	ia.send_ops_flags |= IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(A->ctx, &ia));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/*
 * The SQ's 16-bit counter comes round: 2,100 batches of 32 WRITEs (67,200
 * WQEs), the engine idle between batches; every batch completes and the
 * last WRITE's bytes land. (A UC QP on the wire once went idle for good
 * when the counter came back to its value at RTS.)
 */
TEST_F(uc, sq_counter_comes_round)
{
	struct rc_wc_want w;
	struct ibv_wc wc;

	UC_LOSSLESS_ONLY();
	for (uint32_t b = 0; b < 2100; b++) {
		for (uint32_t i = 0; i < 32; i++)
			ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, b,
						  A->buf + SRC, 8, A->mr->lkey,
						  (uintptr_t)B->buf + DST,
						  B->mr->rkey,
						  i == 31 ? IBV_SEND_SIGNALED : 0, 0));
		ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, RC_WC_MS))
			TH_LOG("batch %u: %s", b, rc_err);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
		ASSERT_EQ(b, wc.wr_id);
	}
	rc_fill(A->buf + SRC, 64, 31);
	ASSERT_EQ(0, rc_post_recv(B->qp, 3, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 9, A->buf + SRC,
				  64, A->mr->lkey, (uintptr_t)B->buf + DST,
				  B->mr->rkey, IBV_SEND_SIGNALED, 5));
	w = rc_want_imm(rc_want_req(9, IBV_WC_RDMA_WRITE, 64, A), 5);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_imm(rc_want_recv(3, IBV_WC_RECV_RDMA_WITH_IMM, 64, B, A), 5);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 64, 31, "after the counter came round");
}

#define NMSG	300
#define MSZ	4096		/* 4 packets at the 1024-byte path MTU */
#define NOUT	32		/* messages sent and not yet taken, at most */

static void deep_queues(struct rc_cfg *c)
{
	c->max_recv_wr = 512;
	c->cqe = 1024;
	c->buf_size = 2 << 20;	/* B: a slot per message */
}

/*
 * Take the next receive completion of B within @ms: it must be receive
 * *got, a whole message (its index, then bytes seeded by it) later than
 * *last. 1 if one was taken, 0 if none came.
 */
static int take_msg(struct __test_metadata *_metadata, struct rc_pair *p,
		    uint32_t *got, long long *last, int ms)
{
	const uint8_t *m = p->e[1].buf + (size_t)*got * MSZ;
	struct ibv_wc wc;
	uint32_t idx;

	if (rc_poll(p->e[1].rcq, &wc, 1, ms) != 1)
		return 0;
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(*got, wc.wr_id);
	EXPECT_EQ(MSZ, wc.byte_len);
	memcpy(&idx, m, sizeof(idx));
	EXPECT_LT(*last, (long long)idx) TH_LOG("message %u after %lld", idx, *last);
	EXPECT_LT(idx, NMSG);
	EXPECT_EQ(-1, rc_check_fill(m + 4, MSZ - 4, 1000 + idx))
		TH_LOG("message %u (receive %u) not whole", idx, *got);
	*last = idx;
	(*got)++;
	return 1;
}

/*
 * What UC promises on a network that loses packets: every message the
 * responder completes is whole and in order (a message with a packet
 * missing is dropped, never completed short or spliced with the next),
 * and every send succeeds. Each message carries its index and bytes
 * seeded by it. UC has no flow control: without loss the sender waits
 * for its messages to be taken (at most NOUT ahead), and all NMSG
 * arrive; with SOFTHCA_UC_LOSS=1 (wire_netem.sh: 5 % of packets lost) a
 * lost message is never taken, so it pauses after every NOUT instead,
 * and some do not arrive, most do.
 */
TEST_F(uc, messages_arrive_whole_or_not_at_all)
{
	bool lossy = getenv("SOFTHCA_UC_LOSS");
	uint32_t got = 0;
	long long last = -1;
	struct ibv_wc wc;

	rc_reopen(_metadata, &self->p, deep_queues);
	for (uint32_t k = 0; k < NMSG; k++)
		ASSERT_EQ(0, rc_post_recv(B->qp, k, B->buf + (size_t)k * MSZ, MSZ,
					  B->mr->lkey));
	for (uint32_t sent = 0; sent < NMSG; sent++) {
		uint8_t *m = A->buf + (size_t)(sent % NOUT) * MSZ;

		if (lossy && sent && !(sent % NOUT))
			usleep(20000);
		while (!lossy && got + NOUT <= sent)
			ASSERT_EQ(1, take_msg(_metadata, &self->p, &got, &last,
					      RC_WC_MS)) TH_LOG("%s", rc_err);
		memcpy(m, &sent, sizeof(sent));
		rc_fill(m + 4, MSZ - 4, 1000 + sent);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, sent, m, MSZ,
					  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
		ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
		ASSERT_EQ(sent, wc.wr_id);
	}
	/* The rest; with loss, the quiet after the last one ends it. */
	while (got < NMSG &&
	       take_msg(_metadata, &self->p, &got, &last, lossy ? 1000 : RC_WC_MS))
		;
	TH_LOG("%u of %u messages arrived whole", got, NMSG);
	if (lossy) {
		/* One device sends to itself through lo: no netem there. */
		if (variant->topo == RC_CROSS_DEV)
			EXPECT_LT(got, NMSG);
		EXPECT_GT(got, NMSG / 2);
	} else {
		EXPECT_EQ(NMSG, got);
	}
}

/* A UC QP in ERR flushes its receives; its peer goes on sending. */
TEST_F(uc, error_flushes_receives)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct rc_wc_want w;

	UC_LOSSLESS_ONLY();
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, rc_post_recv(B->qp, 60 + i, B->buf + DST, 64,
					  B->mr->lkey));
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &a, IBV_QP_STATE));
	for (int i = 0; i < 3; i++)
		rc_expect_err(_metadata, B->rcq, 60 + i, IBV_WC_WR_FLUSH_ERR, B);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, NULL, 0, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	w = rc_want_req(1, IBV_WC_SEND, 0, A);
	rc_expect_wc(_metadata, A->scq, &w);
	rc_expect_quiet(_metadata, B->rcq, "a QP in ERR receives nothing");
}

TEST_HARNESS_MAIN
