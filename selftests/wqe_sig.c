// SPDX-License-Identifier: GPL-2.0
/*
 * WQE signatures end to end (Documentation/queue-formats.md "Signatures").
 * With SOFTHCA_WQE_SIGNATURE=1 the provider asks CREATE_QP for
 * SOFTHCA_QP_FLAG_SIGNATURE and signs every send WQE (the XOR of its DS
 * units is 0xff) and every receive WQE (the XOR of the WQE, the QPN and
 * the WQE counter, both big-endian, is 0xff); the HCA checks both.
 *   - every opcode runs with signed WQEs, and each WQE left in the rings
 *     obeys the rule as this test computes it (not the provider's code);
 *   - a send WQE written here with a correct signature executes; the same
 *     WQE with a wrong one completes with IBV_WC_LOC_QP_OP_ERR, never
 *     reaches the peer, and the QP is in ERR (the next WR is flushed);
 *   - a receive WQE whose signature was broken after posting fails the
 *     SEND that lands on it: IBV_WC_LOC_QP_OP_ERR at the receiver,
 *     IBV_WC_REM_OP_ERR at the sender, both QPs in ERR;
 *   - the receive SGE cap granted is what the HCA parses, though the
 *     signed stride has room for more.
 */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "softhca.h"		/* the provider's queue pointers (white box) */
#include "verbs_util.h"

static uint8_t xor_bytes(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t x = 0;

	while (len--)
		x ^= *b++;
	return x;
}

/* The send WQE at SQ counter @counter: does its signature hold? */
static bool send_sig_ok(const struct softhca_qp *q, uint32_t counter)
{
	const struct softhca_sq *sq = &q->sq;
	uint32_t off = (counter & (sq->wqebb_cnt - 1)) * SOFTHCA_SEND_WQE_BB;
	const struct softhca_wqe_ctrl_seg *c = (const void *)(sq->fmt.ring.buf + off);
	uint32_t len = (be32toh(c->qpn_ds) & SOFTHCA_WQE_CTRL_DS_MASK) *
		       SOFTHCA_DS_SIZE;
	uint32_t first = sq->fmt.ring.size - off < len ? sq->fmt.ring.size - off : len;

	return (xor_bytes(sq->fmt.ring.buf + off, first) ^
		xor_bytes(sq->fmt.ring.buf, len - first)) == 0xff;
}

static uint8_t *rwqe_at(const struct softhca_qp *q, uint32_t counter)
{
	return q->rq.buf + ((counter & (q->rq.wqe_cnt - 1)) << q->rq.wqe_shift);
}

/* The receive WQE at RQ counter @counter: does its signature hold? */
static bool recv_sig_ok(const struct softhca_qp *q, uint32_t counter)
{
	__be32 qpn = htobe32(q->qpn);
	__be16 idx = htobe16((uint16_t)counter);

	return (xor_bytes(rwqe_at(q, counter), 1U << q->rq.wqe_shift) ^
		xor_bytes(&qpn, sizeof(qpn)) ^ xor_bytes(&idx, sizeof(idx))) ==
	       0xff;
}

/*
 * What post_send does for one SEND with one SGE, written here so that the
 * signature can be wrong: the WQE at cur_post, the provider's bookkeeping
 * (so poll_cq finds the WR), the doorbell record, then the wake-up call.
 */
static int raw_send(struct rc_end *e, uint64_t wr_id, void *addr,
		    uint32_t len, bool break_sig)
{
	struct softhca_qp *q = to_sqp(e->qp);
	struct softhca_sq *sq = &q->sq;
	uint32_t slot = sq->cur_post & (sq->wqebb_cnt - 1);
	uint8_t *wqe = sq->fmt.ring.buf + slot * SOFTHCA_SEND_WQE_BB;
	struct softhca_wqe_ctrl_seg *c = (void *)wqe;
	struct softhca_wqe_data_seg *d = (void *)(wqe + 16);

	memset(wqe, 0, SOFTHCA_SEND_WQE_BB);
	c->opmod_idx_opcode = htobe32((sq->cur_post & 0xffff) <<
				      SOFTHCA_WQE_CTRL_IDX_SHIFT |
				      SOFTHCA_OPCODE_SEND);
	c->qpn_ds = htobe32(q->qpn << SOFTHCA_WQE_CTRL_QPN_SHIFT | 2);
	c->fm_ce_se = SOFTHCA_WQE_CTRL_CQ_UPDATE;
	d->byte_count = htobe32(len);
	d->lkey = htobe32(e->mr->lkey);
	d->addr = htobe64((uintptr_t)addr);
	c->signature = (uint8_t)~xor_bytes(wqe, 2 * SOFTHCA_DS_SIZE);
	if (break_sig)
		c->signature ^= 0x5a;

	sq->wrs.wrid[slot] = wr_id;
	sq->wrs.wqe_head[slot] = sq->wrs.head;
	sq->cur_post++;
	sq->wrs.head++;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	q->dbr->snd_counter = htobe32(sq->cur_post & SOFTHCA_WQ_DBR_MASK);
	/* The hint that names the QP, as the provider rings it. */
	softhca_db_hint_set(&q->db);
	return engine_wake_method(e->ctx);
}

FIXTURE(sig) {
	struct rc_pair p;
};

FIXTURE_VARIANT(sig) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(sig, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(sig, cross_dev) { .topo = RC_CROSS_DEV };

FIXTURE_SETUP(sig)
{
	struct rc_cfg cfg;

	/* Read by the provider when it creates a context. */
	ASSERT_EQ(0, setenv("SOFTHCA_WQE_SIGNATURE", "1", 1));
	rc_cfg_default(&cfg, variant->topo);
	memset(&self->p, 0, sizeof(self->p));
	ASSERT_EQ(0, rc_pair_open(&self->p, &cfg)) TH_LOG("%s", rc_err);
	ASSERT_TRUE(to_sqp(self->p.e[0].qp)->wqe_sig);
	ASSERT_TRUE(to_sqp(self->p.e[1].qp)->wqe_sig);
}

FIXTURE_TEARDOWN(sig)
{
	rc_pair_destroy(&self->p);
	unsetenv("SOFTHCA_WQE_SIGNATURE");
}

/* Post one WR on a, its receive (if any) on b, check both WQEs and WCs. */
static void one_op(struct __test_metadata *_metadata, struct rc_pair *p,
		  enum ibv_wr_opcode op, uint32_t len, unsigned int flags)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct softhca_qp *qa = to_sqp(a->qp), *qb = to_sqp(b->qp);
	bool recv = op == IBV_WR_SEND || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint32_t sq_at = qa->sq.cur_post, rq_at = qb->rq.wrs.head;
	struct rc_wc_want want;
	struct ibv_wc wc;
	int ret;

	rc_fill(a->buf, len, 1000 + op);
	rc_fill(b->buf, len, 2000 + op);
	if (recv) {
		EXPECT_EQ(0, rc_post_recv(b->qp, 7, b->buf + 8192, 8192,
					  b->mr->lkey));
		EXPECT_TRUE(recv_sig_ok(qb, rq_at));
	}
	EXPECT_EQ(0, rc_post_send(a->qp, op, 11, a->buf, len, a->mr->lkey,
				  (uintptr_t)b->buf, b->mr->rkey,
				  flags | IBV_SEND_SIGNALED, 0x1234));
	EXPECT_TRUE(send_sig_ok(qa, sq_at));

	EXPECT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_req(11, op == IBV_WR_SEND ? IBV_WC_SEND :
			   op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
			   IBV_WC_RDMA_WRITE, len, a);
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		want = rc_want_imm(want, 0x1234);
	ret = rc_wc_check(&wc, &want);
	EXPECT_EQ(0, ret) TH_LOG("op %d: %s", op, rc_err);
	if (recv) {
		EXPECT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000));
		if (op == IBV_WR_SEND)
			want = rc_want_recv(7, IBV_WC_RECV, len, b, a);
		else
			want = rc_want_imm(rc_want_recv(7, IBV_WC_RECV_RDMA_WITH_IMM,
							len, b, a), 0x1234);
		ret = rc_wc_check(&wc, &want);
		EXPECT_EQ(0, ret) TH_LOG("op %d recv: %s", op, rc_err);
	}
	/* The bytes moved as the opcode says. */
	if (op == IBV_WR_SEND) {
		EXPECT_EQ(-1, rc_check_fill(b->buf + 8192, len, 1000 + op));
	} else if (op == IBV_WR_RDMA_READ) {
		EXPECT_EQ(-1, rc_check_fill(a->buf, len, 2000 + op));
	} else {
		EXPECT_EQ(-1, rc_check_fill(b->buf, len, 1000 + op));
	}
}

TEST_F(sig, every_opcode_runs_signed)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	struct softhca_qp *qa = to_sqp(a->qp);
	uint64_t *remote = (uint64_t *)(b->buf + 4096);
	uint64_t *local = (uint64_t *)(a->buf + 4096);
	struct ibv_wc wc;
	uint32_t at;

	one_op(_metadata, &self->p, IBV_WR_SEND, 20, IBV_SEND_INLINE);
	one_op(_metadata, &self->p, IBV_WR_SEND, 3000, 0);
	one_op(_metadata, &self->p, IBV_WR_RDMA_WRITE_WITH_IMM, 100, 0);
	one_op(_metadata, &self->p, IBV_WR_RDMA_WRITE, 200, IBV_SEND_INLINE);
	one_op(_metadata, &self->p, IBV_WR_RDMA_READ, 4096, 0);

	/* Atomics: 3-DS WQEs (ctrl, raddr, atomic + pointer). */
	static const struct {
		enum ibv_wr_opcode op;
		uint64_t compare_add, swap, old;
	} atomics[] = {
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 0, 40 },	/* 40 -> 42 */
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 42, 7, 42 },	/* 42 -> 7 */
	};
	*remote = 40;
	for (int i = 0; i < 2; i++) {
		at = qa->sq.cur_post;
		ASSERT_EQ(0, rc_post_atomic(a->qp, atomics[i].op, 21 + i, local,
					    a->mr->lkey, (uintptr_t)remote,
					    b->mr->rkey, atomics[i].compare_add,
					    atomics[i].swap, IBV_SEND_SIGNALED));
		EXPECT_TRUE(send_sig_ok(qa, at));
		ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
		EXPECT_EQ(atomics[i].old, *local);
	}
	EXPECT_EQ(7, *remote);
}

TEST_F(sig, bad_send_signature_is_a_local_qp_op_error)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	struct rc_wc_want want;
	struct ibv_wc wc;

	/* The hand-made WQE with its signature right: it runs. */
	ASSERT_EQ(0, rc_post_recv(b->qp, 1, b->buf, 4096, b->mr->lkey));
	rc_fill(a->buf, 64, 5);
	ASSERT_EQ(0, raw_send(a, 31, a->buf, 64, false));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_req(31, IBV_WC_SEND, 64, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000));
	want = rc_want_recv(1, IBV_WC_RECV, 64, b, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	EXPECT_EQ(-1, rc_check_fill(b->buf, 64, 5));

	/* One bit pattern off in the signature: refused before it starts. */
	ASSERT_EQ(0, rc_post_recv(b->qp, 2, b->buf, 4096, b->mr->lkey));
	ASSERT_EQ(0, raw_send(a, 32, a->buf, 64, true));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_err(32, IBV_WC_LOC_QP_OP_ERR, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(a->qp, IBV_QPS_ERR, 2000));
	EXPECT_EQ(0, rc_poll_none(b->rcq, 200)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(b->qp));

	/* The QP is in ERR: the next WR is flushed. */
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 33, a->buf, 8,
				  a->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_err(33, IBV_WC_WR_FLUSH_ERR, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
}

TEST_F(sig, bad_recv_signature_fails_both_ends)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	struct softhca_qp *qb = to_sqp(b->qp);
	uint32_t at = qb->rq.wrs.head;
	struct rc_wc_want want;
	struct ibv_wc wc;

	ASSERT_EQ(0, rc_post_recv(b->qp, 41, b->buf, 4096, b->mr->lkey));
	ASSERT_TRUE(recv_sig_ok(qb, at));
	/* Nothing reads it before a SEND arrives. */
	rwqe_at(qb, at)[offsetof(struct softhca_rwqe_sig, signature)] ^= 0x81;
	ASSERT_FALSE(recv_sig_ok(qb, at));

	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 42, a->buf, 100,
				  a->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000));
	want = rc_want_err(41, IBV_WC_LOC_QP_OP_ERR, b);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_err(42, IBV_WC_REM_OP_ERR, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(a->qp, IBV_QPS_ERR, 2000));
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(b->qp, IBV_QPS_ERR, 2000));
}

static uint32_t dev_max_sge;

static void ask_device_max_recv_sge(struct rc_cfg *c)
{
	c->max_recv_sge = dev_max_sge;
}

/*
 * With the signature segment the RQ stride rounds up to room for more
 * segments than the HCA parses (16 + 1 -> 32 units): the cap granted, and
 * what post_recv accepts, is what the HCA parses. A WR one SGE over is
 * refused at once (EINVAL, bad_wr) instead of failing the QP later.
 */
TEST_F(sig, recv_sge_cap_is_what_the_hca_parses)
{
	struct ibv_device_attr da;
	struct ibv_recv_wr wr = { .wr_id = 51 }, *bad = NULL;
	struct ibv_sge sg[64];
	struct rc_end *a, *b;
	struct rc_wc_want want;
	struct ibv_wc wc;
	uint32_t n;

	ASSERT_EQ(0, ibv_query_device(self->p.e[1].ctx, &da));
	ASSERT_LT(da.max_sge, 64);
	dev_max_sge = (uint32_t)da.max_sge;
	ASSERT_EQ(0, rc_pair_reopen(&self->p, ask_device_max_recv_sge))
		TH_LOG("%s", rc_err);
	a = &self->p.e[0];
	b = &self->p.e[1];
	n = b->cap.max_recv_sge;
	EXPECT_EQ(dev_max_sge, n);

	for (uint32_t i = 0; i <= n; i++)
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)b->buf + 64 * i,
					  .length = 64, .lkey = b->mr->lkey };
	wr.sg_list = sg;
	wr.num_sge = (int)n + 1;
	EXPECT_EQ(EINVAL, ibv_post_recv(b->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);

	/* Exactly the cap: a SEND fills every segment. */
	wr.num_sge = (int)n;
	ASSERT_EQ(0, ibv_post_recv(b->qp, &wr, &bad));
	rc_fill(a->buf, 64 * n, 9);
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 52, a->buf, 64 * n,
				  a->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000));
	want = rc_want_recv(51, IBV_WC_RECV, 64 * n, b, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
	EXPECT_EQ(-1, rc_check_fill(b->buf, 64 * n, 9));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000));
	want = rc_want_req(52, IBV_WC_SEND, 64 * n, a);
	EXPECT_EQ(0, rc_wc_check(&wc, &want)) TH_LOG("%s", rc_err);
}

TEST_HARNESS_MAIN
