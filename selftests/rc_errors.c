// SPDX-License-Identifier: GPL-2.0
/*
 * RC errors (seed-map.md §4.2, §5.6): RNR (retry count, timer,
 * infinite retry), remote access errors (MR rights, QP rights, rkey,
 * bounds, stale keys), local protection errors (lkey, PD, bounds, rights,
 * stale keys), length errors, transport retry exhaustion, the QP moving to
 * ERR and flushing everything with IBV_WC_WR_FLUSH_ERR (also what is posted
 * afterwards), recovery through RESET, CQ overrun, and send WQEs beyond
 * the QP's granted caps (a provider that ignores them). The requester's
 * cached route (kernel/hca/gid.c) must not outlive what it depends on: a
 * SEND that went through, then the destination QP destroyed, or its GID
 * removed, and the next SEND gets no answer.
 *
 * Statuses are the ones a ConnectX reports (and rdma_rxe, where the two
 * agree): the requester sees the NAK's class (REM_ACCESS_ERR,
 * REM_INV_REQ_ERR, REM_OP_ERR), the responder's receive completes with the
 * local error (LOC_LEN_ERR, LOC_PROT_ERR). A responder that NAKs an access
 * or invalid request error goes to ERR too (IBA class J); an RNR NAK does
 * not touch the responder.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"
#include "verbs_util.h"
/* The provider's QP (its granted caps), to post past them: see below. */
#include "../user/softhca.h"

FIXTURE(err) {
	struct rc_pair p;
};

FIXTURE_VARIANT(err) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(err, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(err, cross_dev) { .topo = RC_CROSS_DEV };

RC_SHCA1_GUARD()

FIXTURE_SETUP(err)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.buf_size = 256 << 10;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(err)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])


static void expect_state(struct __test_metadata *_metadata, struct rc_end *e,
			 int state, const char *who)
{
	int st = rc_wait_qp_state(e->qp, state, 1000);

	EXPECT_EQ(state, st) TH_LOG("%s QP %#x state %d, want %d", who, e->qp->qp_num,
				    st, state);
}

/* Drain every CQ, then RESET -> INIT -> RTR -> RTS on both ends. */
static void recover(struct __test_metadata *_metadata, struct rc_pair *p)
{
	struct ibv_wc wc[16];

	for (int i = 0; i < 2; i++) {
		while (rc_poll(p->e[i].scq, wc, 16, 20) > 0)
			;
		while (rc_poll(p->e[i].rcq, wc, 16, 20) > 0)
			;
	}
	ASSERT_EQ(0, rc_pair_connect(p)) TH_LOG("%s", rc_err);
}

/* After a recovery: a SEND from A to B and back works, bytes and all. */
static void expect_traffic(struct __test_metadata *_metadata, struct rc_pair *p)
{
	rc_expect_sends(_metadata, p, 65536, 7);
}

/* ---- RNR ---------------------------------------------------------------- */

static void rnr2(struct rc_cfg *c)
{
	c->rnr_retry[0] = 2;
	c->min_rnr_timer[0] = 1;	/* the requester's own timer is not used */
	c->min_rnr_timer[1] = 24;	/* 40.96 ms, in B's RNR NAKs */
}

/* No receive: two RNR retries, each after B's min_rnr_timer, then
 * IBV_WC_RNR_RETRY_EXC_ERR; WRs behind it are flushed; B is untouched.
 */
TEST_F(err, rnr_retry_exceeded)
{
	struct rc_wc_want w;
	uint64_t t0, t;
	struct ibv_wc wc;

	rc_reopen(_metadata, &self->p, rnr2);
	t0 = rc_now_us();
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, 10000)) TH_LOG("%s", rc_err);
	t = rc_now_us() - t0;
	w = rc_want_err(1, IBV_WC_RNR_RETRY_EXC_ERR, A);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%s", rc_err);
	/* 2 waits of 40.96 ms (B's timer): not sooner. */
	EXPECT_LE(80000, t) TH_LOG("RNR error after %llu us: the retries did not wait B's min_rnr_timer",
				   (unsigned long long)t);
	EXPECT_GT(5000000, t);
	rc_expect_err(_metadata, A->scq, 2, IBV_WC_WR_FLUSH_ERR, A);
	expect_state(_metadata, A, IBV_QPS_ERR, "requester");
	expect_state(_metadata, B, IBV_QPS_RTS, "responder after RNR");
	rc_expect_quiet(_metadata, B->rcq, "responder");
	TH_LOG("RNR_RETRY_EXC_ERR after %llu us", (unsigned long long)t);
}

static void rnr0(struct rc_cfg *c)
{
	c->rnr_retry[0] = 0;
	c->min_rnr_timer[1] = 31;	/* 491.52 ms */
}

TEST_F(err, rnr_retry_zero_fails_at_once)
{
	struct rc_wc_want w = {};
	uint64_t t0, t;
	struct ibv_wc wc;

	rc_reopen(_metadata, &self->p, rnr0);
	t0 = rc_now_us();
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 10, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, 10000)) TH_LOG("%s", rc_err);
	t = rc_now_us() - t0;
	w = rc_want_err(1, IBV_WC_RNR_RETRY_EXC_ERR, A);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%s", rc_err);
	EXPECT_GT(400000, t) TH_LOG("rnr_retry 0 waited %llu us", (unsigned long long)t);
	expect_state(_metadata, A, IBV_QPS_ERR, "requester");
	expect_state(_metadata, B, IBV_QPS_RTS, "responder");
}

/* rnr_retry 7 retries forever: a receive posted late is still used. */
TEST_F(err, rnr_retry_forever_then_receive)
{
	struct rc_wc_want w;

	rc_fill(A->buf, 3000, 3);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 3000, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND_WITH_IMM, 2, A->buf, 10,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0x55));
	rc_expect_quiet(_metadata, A->scq, "SEND with no receive, rnr_retry 7");
	usleep(300000);
	rc_expect_quiet(_metadata, A->scq, "SEND with no receive, rnr_retry 7, later");
	expect_state(_metadata, A, IBV_QPS_RTS, "requester retrying");
	ASSERT_EQ(0, rc_post_recv(B->qp, 10, B->buf, 4096, B->mr->lkey));
	w = rc_want_req(1, IBV_WC_SEND, 3000, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_req(10, IBV_WC_RECV, 3000, B);
	w.src_qp = A->qp->qp_num;
	rc_expect_wc(_metadata, B->rcq, &w);
	EXPECT_EQ(-1, rc_check_fill(B->buf, 3000, 3));
	/* The second one waits again, for its own receive. */
	rc_expect_quiet(_metadata, A->scq, "second SEND");
	ASSERT_EQ(0, rc_post_recv(B->qp, 11, B->buf, 4096, B->mr->lkey));
	w = rc_want_req(2, IBV_WC_SEND, 10, A);
	w.wc_flags = IBV_WC_WITH_IMM;
	w.imm_host = 0x55;
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_req(11, IBV_WC_RECV, 10, B);
	w.src_qp = A->qp->qp_num;
	w.wc_flags = IBV_WC_WITH_IMM;
	w.imm_host = 0x55;
	rc_expect_wc(_metadata, B->rcq, &w);
}

/* WRITE_WITH_IMM needs a receive too: RNR until there is one. */
TEST_F(err, rnr_on_write_with_imm)
{
	struct rc_wc_want w;

	rc_fill(A->buf, 512, 4);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 1, A->buf, 512,
				  A->mr->lkey, (uintptr_t)B->buf + 8192, B->mr->rkey,
				  IBV_SEND_SIGNALED, 9));
	rc_expect_quiet(_metadata, A->scq, "WRITE_WITH_IMM without a receive");
	ASSERT_EQ(0, rc_post_recv(B->qp, 10, NULL, 0, 0));
	w = rc_want_req(1, IBV_WC_RDMA_WRITE, 512, A);
	w.wc_flags = IBV_WC_WITH_IMM;
	w.imm_host = 9;
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_req(10, IBV_WC_RECV_RDMA_WITH_IMM, 512, B);
	w.src_qp = A->qp->qp_num;
	w.wc_flags = IBV_WC_WITH_IMM;
	w.imm_host = 9;
	rc_expect_wc(_metadata, B->rcq, &w);
	EXPECT_EQ(-1, rc_check_fill(B->buf + 8192, 512, 4));
}

/* ---- remote access errors ------------------------------------------------- */

/*
 * One remote-access case: A posts @op against (raddr, rkey) plus a SEND
 * behind it; A gets @want for the first and WR_FLUSH_ERR for the second,
 * both QPs end in ERR, then the pair is recovered and works.
 */
static void remote_err(struct __test_metadata *_metadata, struct rc_pair *p,
		       enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		       uint32_t len, enum ibv_wc_status want, const char *what)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_sge sge = { (uintptr_t)a->buf, len, a->mr->lkey };
	struct ibv_send_wr wr2 = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED, .next = &wr2 };
	struct ibv_send_wr *bad = NULL;

	TH_LOG("case: %s", what);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ASSERT_EQ(0, rc_post_recv(b->qp, 3, b->buf + 65536, 4096, b->mr->lkey));
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad)) TH_LOG("%s", what);
	rc_expect_err(_metadata, a->scq, 1, want, a);
	rc_expect_err(_metadata, a->scq, 2, IBV_WC_WR_FLUSH_ERR, a);
	expect_state(_metadata, a, IBV_QPS_ERR, "requester");
	expect_state(_metadata, b, IBV_QPS_ERR, "responder (class J NAK)");
	/*
	 * No receive consumed, so no CQE tells B's owner: the affiliated
	 * event does (IBA 11.6.3.1). rdma_rxe raises none.
	 */
	if (!rc_dev_is_rxe(b->dev)) {
		struct ibv_async_event ev;

		EXPECT_EQ(want == IBV_WC_REM_INV_REQ_ERR ? IBV_EVENT_QP_REQ_ERR :
			  IBV_EVENT_QP_ACCESS_ERR,
			  next_async_event(b->ctx, 5000, &ev)) TH_LOG("%s", what);
		EXPECT_EQ(b->qp, ev.element.qp);
		/* None for A: its error CQE said it. */
		EXPECT_EQ(-1, next_async_event(a->ctx, 0, &ev));
	}
	/*
	 * B in ERR: its receive is flushed. rdma_rxe completes the receive a
	 * failed WRITE_WITH_IMM would have taken with the error instead.
	 */
	if (rc_dev_is_rxe(b->dev)) {
		struct ibv_wc wc;

		ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
		EXPECT_EQ(3, wc.wr_id);
		EXPECT_NE(IBV_WC_SUCCESS, wc.status);
	} else {
		rc_expect_err(_metadata, b->rcq, 3, IBV_WC_WR_FLUSH_ERR, b);
	}
	recover(_metadata, p);
	expect_traffic(_metadata, p);
}

TEST_F(err, remote_access_mr_rights)
{
	struct ibv_mr *mr;
	uint8_t *buf = B->buf + 128 * 1024;

	/* No REMOTE_WRITE: WRITE fails, nothing written. */
	mr = ibv_reg_mr(B->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NE(NULL, mr);
	memset(buf, 0xee, 4096);
	rc_fill(A->buf, 64, 1);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)buf, mr->rkey, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE to an MR without REMOTE_WRITE");
	EXPECT_EQ(0xee, buf[0]);
	EXPECT_EQ(0xee, buf[63]);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE_WITH_IMM, (uintptr_t)buf,
		   mr->rkey, 64, IBV_WC_REM_ACCESS_ERR,
		   "WRITE_WITH_IMM to an MR without REMOTE_WRITE");
	EXPECT_EQ(0xee, buf[0]);
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/* No REMOTE_READ. */
	mr = ibv_reg_mr(B->pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, (uintptr_t)buf, mr->rkey, 64,
		   IBV_WC_REM_ACCESS_ERR, "READ of an MR without REMOTE_READ");
	/* No REMOTE_ATOMIC. */
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)buf,
		   mr->rkey, 8, IBV_WC_REM_ACCESS_ERR, "FETCH_ADD without REMOTE_ATOMIC");
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)buf,
		   mr->rkey, 8, IBV_WC_REM_ACCESS_ERR, "CMP_SWP without REMOTE_ATOMIC");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

TEST_F(err, remote_access_bad_rkey)
{
	uintptr_t raddr = (uintptr_t)B->buf;
	uint32_t rkey = B->mr->rkey;

	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, raddr, rkey ^ 0x01, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE, rkey with another key byte");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, raddr, rkey + 0x100, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE, rkey of another MKey index");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, raddr, 0, 64,
		   IBV_WC_REM_ACCESS_ERR, "READ, rkey 0");
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_FETCH_AND_ADD, raddr, 0xffffffff,
		   8, IBV_WC_REM_ACCESS_ERR, "FETCH_ADD, rkey ~0");
	/* The requester's own lkey names nothing on B's HCA, or another PD. */
	if (self->p.cfg.topo == RC_CROSS_DEV || A->pd != B->pd)
		remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)A->buf,
			   A->mr->rkey, 64, IBV_WC_REM_ACCESS_ERR,
			   "WRITE with the requester's key");
}

TEST_F(err, remote_access_out_of_bounds)
{
	uintptr_t start = (uintptr_t)B->buf, end = start + B->buf_size;
	uint32_t rkey = B->mr->rkey;

	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, end - 10, rkey, 20,
		   IBV_WC_REM_ACCESS_ERR, "WRITE over the end");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, start - 8, rkey, 16,
		   IBV_WC_REM_ACCESS_ERR, "WRITE before the start");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, end - 4096, rkey, 4097,
		   IBV_WC_REM_ACCESS_ERR, "READ over the end");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, end, rkey, 1,
		   IBV_WC_REM_ACCESS_ERR, "READ just past the end");
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_FETCH_AND_ADD, end, rkey, 8,
		   IBV_WC_REM_ACCESS_ERR, "atomic past the end");
	/* Multi-packet WRITE running off the end in a later packet. */
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, end - 3000, rkey, 5000,
		   IBV_WC_REM_ACCESS_ERR, "5000-byte WRITE, 3000 in bounds");
	/* Exactly the last bytes are fine. */
	rc_fill(A->buf, 16, 5);
	{
		struct rc_wc_want w = rc_want_req(9, IBV_WC_RDMA_WRITE, 16, A);

		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 9, A->buf, 16,
					  A->mr->lkey, end - 16, rkey, IBV_SEND_SIGNALED, 0));
		rc_expect_wc(_metadata, A->scq, &w);
		EXPECT_EQ(-1, rc_check_fill(B->buf + B->buf_size - 16, 16, 5));
	}
}

static void no_qp_access(struct rc_cfg *c)
{
	c->qp_access = 0;
}

/* The responder QP's own rights (qp_access_flags) are checked too. */
TEST_F(err, remote_access_qp_rights)
{
	/* rdma_rxe NAKs a right the QP lacks as an invalid request. */
	RC_SKIP_IF_RXE(B);
	rc_reopen(_metadata, &self->p, no_qp_access);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)B->buf,
		   B->mr->rkey, 64, IBV_WC_REM_ACCESS_ERR, "WRITE, QP without REMOTE_WRITE");
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, (uintptr_t)B->buf,
		   B->mr->rkey, 64, IBV_WC_REM_ACCESS_ERR, "READ, QP without REMOTE_READ");
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)B->buf,
		   B->mr->rkey, 8, IBV_WC_REM_ACCESS_ERR, "atomic, QP without REMOTE_ATOMIC");
	/* SEND needs no remote right. */
	expect_traffic(_metadata, &self->p);
}

/* An atomic on an address that is not 8-byte aligned: NAK invalid request. */
TEST_F(err, atomic_misaligned)
{
	/* rdma_rxe refuses a misaligned atomic at post. */
	RC_SKIP_IF_RXE(A);
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_FETCH_AND_ADD,
		   (uintptr_t)B->buf + 4, B->mr->rkey, 8, IBV_WC_REM_INV_REQ_ERR,
		   "FETCH_ADD at +4");
}

static void no_responder_resources(struct rc_cfg *c)
{
	c->max_dest_rd_atomic[1] = 0;
}

/*
 * B reached RTR with max_dest_rd_atomic 0: it takes no READ or atomic
 * (Invalid Request, as ConnectX and rdma_rxe); WRITE and SEND still work.
 */
TEST_F(err, read_and_atomic_without_responder_resources)
{
	struct rc_wc_want w;

	ASSERT_EQ(0, rc_pair_reopen(&self->p, no_responder_resources))
		TH_LOG("%s", rc_err);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, (uintptr_t)B->buf,
		   B->mr->rkey, 64, IBV_WC_REM_INV_REQ_ERR,
		   "READ, max_dest_rd_atomic 0");
	remote_err(_metadata, &self->p, IBV_WR_ATOMIC_FETCH_AND_ADD,
		   (uintptr_t)B->buf, B->mr->rkey, 8, IBV_WC_REM_INV_REQ_ERR,
		   "FETCH_ADD, max_dest_rd_atomic 0");
	/* A WRITE needs no responder resources. */
	rc_fill(A->buf, 64, 77);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 5, A->buf, 64,
				  A->mr->lkey, (uintptr_t)B->buf + 8192,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(5, IBV_WC_RDMA_WRITE, 64, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(-1, rc_check_fill(B->buf + 8192, 64, 77));
}

/* The rkey of a deregistered MR, and of a re-registration's old key. */
TEST_F(err, remote_access_stale_rkey)
{
	uint8_t *buf = B->buf + 64 * 1024;
	struct ibv_mr *mr = ibv_reg_mr(B->pd, buf, 8192, RC_ACCESS_ALL);
	uint32_t old;

	ASSERT_NE(NULL, mr);
	old = mr->rkey;
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)buf, old, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE with a deregistered MR's rkey");
	mr = ibv_reg_mr(B->pd, buf, 8192, RC_ACCESS_ALL);
	ASSERT_NE(NULL, mr);
	EXPECT_NE(old, mr->rkey);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_READ, (uintptr_t)buf, old, 64,
		   IBV_WC_REM_ACCESS_ERR, "READ with the key before re-registration");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* A WRITE of 64 bytes from A's @lkey at @src into B's @rkey at @dst, which must work. */
static void write_ok(struct __test_metadata *_metadata, struct rc_pair *p,
		     uint8_t *src, uint32_t lkey, uintptr_t dst, uint32_t rkey)
{
	struct rc_wc_want w = rc_want_req(7, IBV_WC_RDMA_WRITE, 64, &p->e[0]);

	ASSERT_EQ(0, rc_post_send(p->e[0].qp, IBV_WR_RDMA_WRITE, 7, src, 64, lkey,
				  dst, rkey, IBV_SEND_SIGNALED, 0));
	rc_expect_wc(_metadata, p->e[0].scq, &w);
}

/*
 * Each side of a QP keeps the last MKey it looked up (the HCA's MKey
 * cache): the key just used must not outlive its MR, and every use of it is
 * checked again (rights, bounds) as a first lookup is.
 */
TEST_F(err, cached_rkey)
{
	uint8_t *buf = B->buf + 64 * 1024;
	struct ibv_mr *mr = ibv_reg_mr(B->pd, buf, 8192, RC_ACCESS_ALL);
	struct ibv_mr *ro = ibv_reg_mr(B->pd, buf, 8192, IBV_ACCESS_REMOTE_READ);
	struct rc_wc_want w = rc_want_req(8, IBV_WC_RDMA_READ, 64, A);
	uint32_t old;

	ASSERT_NE(NULL, mr);
	ASSERT_NE(NULL, ro);
	write_ok(_metadata, &self->p, A->buf, A->mr->lkey, (uintptr_t)buf, mr->rkey);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)buf + 8192 - 32,
		   mr->rkey, 64, IBV_WC_REM_ACCESS_ERR,
		   "WRITE over the end with the rkey just used");
	old = mr->rkey;
	write_ok(_metadata, &self->p, A->buf, A->mr->lkey, (uintptr_t)buf, old);
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)buf, old, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE with the rkey just used, deregistered");
	/* Read rights only: a READ works, the WRITE behind it does not. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_READ, 8, A->buf, 64, A->mr->lkey,
				  (uintptr_t)buf, ro->rkey, IBV_SEND_SIGNALED, 0));
	rc_expect_wc(_metadata, A->scq, &w);
	remote_err(_metadata, &self->p, IBV_WR_RDMA_WRITE, (uintptr_t)buf, ro->rkey, 64,
		   IBV_WC_REM_ACCESS_ERR, "WRITE with the read-only rkey just used");
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/* ---- local errors ---------------------------------------------------------- */

/*
 * @wr (wr_id 1) fails on A with @want, the SEND posted behind it is flushed,
 * A is in ERR and B untouched (nothing reached it: still RTS, its receive
 * not consumed); then both recover. With @caps, A's provider is made to
 * take @wr as if it had granted {max_send_sge, max_inline_data,
 * WQEBBs per WQE} = @caps (see wqe_beyond_granted_caps).
 */
static void local_fail(struct __test_metadata *_metadata, struct rc_pair *p,
		       struct ibv_send_wr *wr, const uint32_t *caps,
		       enum ibv_wc_status want, const char *what)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct softhca_sq *sq = &to_sqp(a->qp)->sq;
	uint32_t save[3] = { sq->max_gs, sq->fmt.max_inline, sq->fmt.max_wqebbs };
	struct ibv_sge ok_sge = { (uintptr_t)a->buf, 8, a->mr->lkey };
	struct ibv_send_wr wr2 = { .wr_id = 2, .sg_list = &ok_sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;
	int ret;

	TH_LOG("case: %s", what);
	wr->wr_id = 1;
	wr->next = &wr2;
	ASSERT_EQ(0, rc_post_recv(b->qp, 3, b->buf + 65536, 8192, b->mr->lkey));
	if (caps) {
		sq->max_gs = caps[0];
		sq->fmt.max_inline = caps[1];
		sq->fmt.max_wqebbs = caps[2];
	}
	ret = ibv_post_send(a->qp, wr, &bad);
	sq->max_gs = save[0];
	sq->fmt.max_inline = save[1];
	sq->fmt.max_wqebbs = save[2];
	ASSERT_EQ(0, ret) TH_LOG("%s: not posted", what);
	rc_expect_err(_metadata, a->scq, 1, want, a);
	rc_expect_err(_metadata, a->scq, 2, IBV_WC_WR_FLUSH_ERR, a);
	expect_state(_metadata, a, IBV_QPS_ERR, "requester");
	expect_state(_metadata, b, IBV_QPS_RTS, "responder (nothing reached it)");
	rc_expect_quiet(_metadata, b->rcq, "responder");
	recover(_metadata, p);
	expect_traffic(_metadata, p);
}

/* One local-protection case on A's own SGE. */
static void local_err(struct __test_metadata *_metadata, struct rc_pair *p,
		      enum ibv_wr_opcode op, struct ibv_sge sge, unsigned int flags,
		      enum ibv_wc_status want, const char *what)
{
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = flags };

	wr.wr.rdma.remote_addr = (uintptr_t)p->e[1].buf;
	wr.wr.rdma.rkey = p->e[1].mr->rkey;
	local_fail(_metadata, p, &wr, NULL, want, what);
}

TEST_F(err, local_protection)
{
	struct ibv_pd *pd2;
	struct ibv_mr *other, *ro;
	uint8_t *buf = A->buf + 128 * 1024;

	/* The requester's local error statuses. */
	RC_SKIP_IF_RXE(A);
	pd2 = ibv_alloc_pd(A->ctx);
	ASSERT_NE(NULL, pd2);
	local_err(_metadata, &self->p, IBV_WR_SEND,
		  (struct ibv_sge){ (uintptr_t)A->buf, 64, A->mr->lkey ^ 0x5a00 },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "SEND, bad lkey");
	local_err(_metadata, &self->p, IBV_WR_RDMA_WRITE,
		  (struct ibv_sge){ (uintptr_t)A->buf, 64, A->mr->lkey ^ 0x01 },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "WRITE, lkey with another key byte");
	local_err(_metadata, &self->p, IBV_WR_SEND,
		  (struct ibv_sge){ (uintptr_t)A->buf + A->buf_size - 32, 64, A->mr->lkey },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "SEND, SGE over the MR's end");
	local_err(_metadata, &self->p, IBV_WR_RDMA_READ,
		  (struct ibv_sge){ (uintptr_t)A->buf - 4096, 64, A->mr->lkey },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "READ into an SGE before the MR");

	/* An lkey of another PD. */
	other = ibv_reg_mr(pd2, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, other);
	local_err(_metadata, &self->p, IBV_WR_SEND,
		  (struct ibv_sge){ (uintptr_t)buf, 64, other->lkey },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "SEND, lkey of another PD");
	EXPECT_EQ(0, ibv_dereg_mr(other));

	/* READ and atomics write local memory: they need LOCAL_WRITE. */
	ro = ibv_reg_mr(A->pd, buf, 4096, 0);
	ASSERT_NE(NULL, ro);
	local_err(_metadata, &self->p, IBV_WR_RDMA_READ,
		  (struct ibv_sge){ (uintptr_t)buf, 64, ro->lkey },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR, "READ into an MR without LOCAL_WRITE");
	/* ...but may be the source of a SEND or WRITE. */
	{
		struct rc_wc_want w = rc_want_req(7, IBV_WC_RDMA_WRITE, 64, A);

		rc_fill(buf, 64, 9);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 7, buf, 64, ro->lkey,
					  (uintptr_t)B->buf, B->mr->rkey, IBV_SEND_SIGNALED, 0));
		rc_expect_wc(_metadata, A->scq, &w);
		EXPECT_EQ(-1, rc_check_fill(B->buf, 64, 9));
	}
	EXPECT_EQ(0, ibv_dereg_mr(ro));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

TEST_F(err, local_protection_atomic_without_local_write)
{
	uint8_t *buf = A->buf + 128 * 1024;
	struct ibv_mr *ro = ibv_reg_mr(A->pd, buf, 4096, 0);
	struct ibv_send_wr wr = { .wr_id = 1, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge sge = { (uintptr_t)buf, 8, 0 };
	struct ibv_send_wr *bad = NULL;

	ASSERT_NE(NULL, ro);
	sge.lkey = ro->lkey;
	wr.sg_list = &sge;
	wr.wr.atomic.remote_addr = (uintptr_t)B->buf;
	wr.wr.atomic.rkey = B->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	rc_expect_err(_metadata, A->scq, 1, IBV_WC_LOC_PROT_ERR, A);
	expect_state(_metadata, A, IBV_QPS_ERR, "requester");
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/* Errors complete even unsignaled WRs. */
TEST_F(err, unsignaled_error_completes)
{
	/* The requester's local error statuses. */
	RC_SKIP_IF_RXE(A);
	local_err(_metadata, &self->p, IBV_WR_SEND,
		  (struct ibv_sge){ (uintptr_t)A->buf, 64, 0x12345600 },
		  0, IBV_WC_LOC_PROT_ERR, "unsignaled SEND, bad lkey");
}

TEST_F(err, stale_lkey)
{
	uint8_t *buf = A->buf + 128 * 1024;
	struct ibv_mr *mr;
	uint32_t old;

	/* The requester's local error statuses. */
	RC_SKIP_IF_RXE(A);
	mr = ibv_reg_mr(A->pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	old = mr->lkey;
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	local_err(_metadata, &self->p, IBV_WR_SEND,
		  (struct ibv_sge){ (uintptr_t)buf, 64, old }, IBV_SEND_SIGNALED,
		  IBV_WC_LOC_PROT_ERR, "SEND with a deregistered MR's lkey");
	mr = ibv_reg_mr(A->pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_NE(old, mr->lkey);
	local_err(_metadata, &self->p, IBV_WR_RDMA_WRITE,
		  (struct ibv_sge){ (uintptr_t)buf, 64, old }, IBV_SEND_SIGNALED,
		  IBV_WC_LOC_PROT_ERR, "WRITE with the key before re-registration");
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* The lkey a QP just used: see cached_rkey. */
TEST_F(err, cached_lkey)
{
	uint8_t *buf = A->buf + 128 * 1024;
	struct ibv_mr *mr;
	uint32_t old;

	/* The requester's local error statuses. */
	RC_SKIP_IF_RXE(A);
	mr = ibv_reg_mr(A->pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	write_ok(_metadata, &self->p, buf, mr->lkey, (uintptr_t)B->buf, B->mr->rkey);
	local_err(_metadata, &self->p, IBV_WR_RDMA_WRITE,
		  (struct ibv_sge){ (uintptr_t)buf + 8192 - 32, 64, mr->lkey },
		  IBV_SEND_SIGNALED, IBV_WC_LOC_PROT_ERR,
		  "WRITE from over the end with the lkey just used");
	old = mr->lkey;
	write_ok(_metadata, &self->p, buf, old, (uintptr_t)B->buf, B->mr->rkey);
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	local_err(_metadata, &self->p, IBV_WR_RDMA_WRITE,
		  (struct ibv_sge){ (uintptr_t)buf, 64, old }, IBV_SEND_SIGNALED,
		  IBV_WC_LOC_PROT_ERR, "WRITE with the lkey just used, deregistered");
}

/*
 * Responder-side errors on the receive: the receive completes with the
 * local error, the requester gets the NAK's status, both QPs go to ERR.
 */
static void recv_err(struct __test_metadata *_metadata, struct rc_pair *p,
		     struct ibv_sge rsge, uint32_t len, enum ibv_wc_status recv_st,
		     enum ibv_wc_status send_st, const char *what)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_recv_wr rwr = { .wr_id = 11, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_recv_wr *rbad = NULL;

	TH_LOG("case: %s", what);
	ASSERT_EQ(0, ibv_post_recv(b->qp, &rwr, &rbad));
	ASSERT_EQ(0, rc_post_recv(b->qp, 12, b->buf, 4096, b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 21, a->buf, len, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 22, a->buf, 1, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, a->scq, 21, send_st, a);
	rc_expect_err(_metadata, a->scq, 22, IBV_WC_WR_FLUSH_ERR, a);
	rc_expect_err(_metadata, b->rcq, 11, recv_st, b);
	rc_expect_err(_metadata, b->rcq, 12, IBV_WC_WR_FLUSH_ERR, b);
	expect_state(_metadata, a, IBV_QPS_ERR, "requester");
	expect_state(_metadata, b, IBV_QPS_ERR, "responder");
	recover(_metadata, p);
	expect_traffic(_metadata, p);
}

TEST_F(err, send_longer_than_receive)
{
	/* rdma_rxe answers a length error with a remote operation error. */
	RC_SKIP_IF_RXE(B);
	recv_err(_metadata, &self->p,
		 (struct ibv_sge){ (uintptr_t)B->buf + 8192, 100, B->mr->lkey }, 101,
		 IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR, "101 bytes into 100");
	recv_err(_metadata, &self->p,
		 (struct ibv_sge){ (uintptr_t)B->buf + 8192, 1000, B->mr->lkey }, 5000,
		 IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR,
		 "5000 bytes (5 packets) into 1000");
}

TEST_F(err, receive_protection)
{
	struct ibv_mr *ro;

	/* The receive's status is the responder's own. */
	RC_SKIP_IF_RXE(B);
	ro = ibv_reg_mr(B->pd, B->buf + 128 * 1024, 4096, 0);
	ASSERT_NE(NULL, ro);
	recv_err(_metadata, &self->p,
		 (struct ibv_sge){ (uintptr_t)B->buf + 8192, 100, B->mr->lkey ^ 0x3300 }, 50,
		 IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR, "receive with a bad lkey");
	recv_err(_metadata, &self->p,
		 (struct ibv_sge){ (uintptr_t)B->buf + 128 * 1024, 100, ro->lkey }, 50,
		 IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR,
		 "receive into an MR without LOCAL_WRITE");
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/* ---- ERR, flush, recovery ---------------------------------------------------- */

/* modify to ERR flushes what is outstanding on both queues, in order, and
 * everything posted afterwards too.
 */
TEST_F(err, modify_to_err_flushes_everything)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	/* The requester's own flush. */
	RC_SKIP_IF_RXE(A);

	/* B has no receive: A's SENDs wait on RNR (rnr_retry 7). */
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 100 + i, A->buf, 64,
					  A->mr->lkey, 0, 0, i == 1 ? 0 : IBV_SEND_SIGNALED, 0));
	}
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, rc_post_recv(A->qp, 200 + i, A->buf + 4096 * (i + 1), 4096,
					  A->mr->lkey));
	}
	rc_expect_quiet(_metadata, A->scq, "SENDs waiting on RNR");
	ASSERT_EQ(0, ibv_modify_qp(A->qp, &a, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(A->qp));
	/* Every SQ WR completes, the unsignaled one included. */
	for (int i = 0; i < 3; i++) {
		rc_expect_err(_metadata, A->scq, 100 + i, IBV_WC_WR_FLUSH_ERR, A);
	}
	for (int i = 0; i < 4; i++) {
		rc_expect_err(_metadata, A->rcq, 200 + i, IBV_WC_WR_FLUSH_ERR, A);
	}
	rc_expect_quiet(_metadata, A->scq, "after the flush");
	rc_expect_quiet(_metadata, A->rcq, "after the flush");
	/* Posted in ERR: flushed at once. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 300, A->buf, 64, A->mr->lkey,
				  (uintptr_t)B->buf, B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_recv(A->qp, 301, A->buf, 64, A->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 302, A->buf, 64, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, A->scq, 300, IBV_WC_WR_FLUSH_ERR, A);
	rc_expect_err(_metadata, A->scq, 302, IBV_WC_WR_FLUSH_ERR, A);
	rc_expect_err(_metadata, A->rcq, 301, IBV_WC_WR_FLUSH_ERR, A);
	/* B saw none of it. */
	rc_expect_quiet(_metadata, B->rcq, "peer");
	recover(_metadata, &self->p);
	expect_traffic(_metadata, &self->p);
}

/* After an execution error everything posted later is flushed, on both
 * queues and on both QPs, with the right wr_ids; RESET brings them back.
 */
TEST_F(err, posted_after_error_is_flushed)
{
	/* A length error: rdma_rxe's statuses differ (send_longer_than_receive). */
	RC_SKIP_IF_RXE(A);
	RC_SKIP_IF_RXE(B);
	ASSERT_EQ(0, rc_post_recv(B->qp, 1, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 10, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, A->scq, 2, IBV_WC_REM_INV_REQ_ERR, A);
	rc_expect_err(_metadata, B->rcq, 1, IBV_WC_LOC_LEN_ERR, B);
	expect_state(_metadata, A, IBV_QPS_ERR, "requester");
	expect_state(_metadata, B, IBV_QPS_ERR, "responder");
	for (int i = 0; i < 2; i++) {
		struct rc_end *e = &self->p.e[i];

		for (int k = 0; k < 5; k++) {
			ASSERT_EQ(0, rc_post_send(e->qp, k % 2 ? IBV_WR_RDMA_READ : IBV_WR_SEND,
						  10 * i + k, e->buf, 8, e->mr->lkey,
						  (uintptr_t)e->buf, e->mr->rkey,
						  IBV_SEND_SIGNALED, 0));
			ASSERT_EQ(0, rc_post_recv(e->qp, 100 + 10 * i + k, e->buf, 8,
						  e->mr->lkey));
		}
		for (int k = 0; k < 5; k++) {
			rc_expect_err(_metadata, e->scq, 10 * i + k, IBV_WC_WR_FLUSH_ERR, e);
			rc_expect_err(_metadata, e->rcq, 100 + 10 * i + k, IBV_WC_WR_FLUSH_ERR, e);
		}
	}
	recover(_metadata, &self->p);
	expect_traffic(_metadata, &self->p);
	/* Recovered twice in a row is as good. */
	recover(_metadata, &self->p);
	expect_traffic(_metadata, &self->p);
}

static void retry2(struct rc_cfg *c)
{
	c->timeout[0] = 14;	/* 4.096 us * 2^14 = 67 ms */
	c->retry_cnt[0] = 2;
}

/* Nobody answers (the destination QP is gone): after timeout * (retry_cnt
 * + 1) the requester completes with IBV_WC_RETRY_EXC_ERR.
 */
TEST_F(err, transport_retry_exceeded)
{
	struct rc_wc_want w;
	struct ibv_wc wc;
	uint64_t t0, t;

	rc_reopen(_metadata, &self->p, retry2);
	ASSERT_EQ(0, ibv_destroy_qp(B->qp));
	B->qp = NULL;
	t0 = rc_now_us();
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1, A->buf, 64, A->mr->lkey,
				  (uintptr_t)B->buf, B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 64, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, 20000)) TH_LOG("%s", rc_err);
	t = rc_now_us() - t0;
	w = rc_want_err(1, IBV_WC_RETRY_EXC_ERR, A);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%s", rc_err);
	EXPECT_LE(190000, t) TH_LOG("RETRY_EXC_ERR after %llu us, want >= 3 x 67 ms",
				    (unsigned long long)t);
	/* Not much later either: the retry timer, not a poll, ends it. */
	EXPECT_GE(201327 + 250000, t) TH_LOG("RETRY_EXC_ERR after %llu us, want <= 3 x 67 ms + 250 ms",
					      (unsigned long long)t);
	rc_expect_err(_metadata, A->scq, 2, IBV_WC_WR_FLUSH_ERR, A);
	expect_state(_metadata, A, IBV_QPS_ERR, "requester");
	TH_LOG("RETRY_EXC_ERR after %llu us", (unsigned long long)t);
}

/* One SEND from A to B that arrives: A's route to B is cached now. */
static void send_that_arrives(struct __test_metadata *_metadata,
			      struct rc_pair *p)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct rc_wc_want w;

	ASSERT_EQ(0, rc_post_recv(b->qp, 7, b->buf, 64, b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 1, a->buf, 16, a->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(1, IBV_WC_SEND, 16, a);
	rc_expect_wc(_metadata, a->scq, &w);
	w = rc_want_recv(7, IBV_WC_RECV, 16, b, a);
	rc_expect_wc(_metadata, b->rcq, &w);
}

/* The next SEND from A finds nobody: RETRY_EXC_ERR, A in ERR. */
static void send_that_times_out(struct __test_metadata *_metadata,
				struct rc_pair *p)
{
	struct rc_end *a = &p->e[0];

	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 2, a->buf, 16, a->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, a->scq, 2, IBV_WC_RETRY_EXC_ERR, a);
	expect_state(_metadata, a, IBV_QPS_ERR, "requester");
}

TEST_F(err, route_to_destroyed_qp_times_out)
{
	rc_reopen(_metadata, &self->p, retry2);
	send_that_arrives(_metadata, &self->p);
	ASSERT_EQ(0, ibv_destroy_qp(B->qp));
	B->qp = NULL;
	send_that_times_out(_metadata, &self->p);
}

static int shca1_has_ip1(void *arg)
{
	struct ibv_context *ctx = arg;

	return rc_find_gid(ctx, RC_IP1) >= 0;
}

static int shca1_lacks_ip1(void *arg)
{
	return !shca1_has_ip1(arg);
}

/*
 * A is reconnected (RESET -> RTS) to a second QP B2 of B's context, sharing
 * B's CQs: A's next SEND arrives at B2, not at B (whose receive stays
 * posted). The engine's copies of A's path must follow the modify.
 */
TEST_F(err, reconnected_requester_reaches_new_peer)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = B->scq,
		.recv_cq = B->rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *b1 = B->qp, *b2;
	struct rc_wc_want w;
	struct ibv_wc wc;

	send_that_arrives(_metadata, &self->p);
	b2 = ibv_create_qp(B->pd, &ia);
	ASSERT_NE(NULL, b2);
	B->qp = b2;
	EXPECT_EQ(0, rc_end_connect(&self->p, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_modify_qp(A->qp, &reset, IBV_QP_STATE));
	EXPECT_EQ(0, rc_end_connect(&self->p, 0)) TH_LOG("%s", rc_err);
	B->qp = b1;
	ASSERT_EQ(0, rc_post_recv(b1, 8, B->buf, 64, B->mr->lkey));
	ASSERT_EQ(0, rc_post_recv(b2, 9, B->buf + 64, 64, B->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 3, A->buf, 16, A->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	w = rc_want_req(3, IBV_WC_SEND, 16, A);
	rc_expect_wc(_metadata, A->scq, &w);
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(9, wc.wr_id) TH_LOG("the SEND went to %#x, B2 is %#x",
				     wc.qp_num, b2->qp_num);
	EXPECT_EQ(b2->qp_num, wc.qp_num);
	/* rdma_rxe leaves an RC receive's src_qp 0 (IBA: valid for UD only). */
	if (!rc_dev_is_rxe(B->dev))
		EXPECT_EQ(A->qp->qp_num, wc.src_qp);
	EXPECT_EQ(0, ibv_destroy_qp(b2));
}

/* B on shca1, whose address (and RoCE GID with it) a test takes away. */
FIXTURE(gid) {
	struct rc_pair p;
	bool ip1_removed;	/* put back by the teardown */
};

FIXTURE_SETUP(gid)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_CROSS_DEV);
	retry2(&c);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(gid)
{
	rc_pair_destroy(&self->p);
	if (self->ip1_removed)
		sh("ip addr add %s/24 dev veth1", RC_IP1);
}

/* B's GID goes away while B's QP lives. */
TEST_F(gid, route_after_gid_removed_times_out)
{
	if (rc_cross_dev(0))
		SKIP(return, "SOFTHCA_RC_CROSS: veth1 is not shca1's here");
	send_that_arrives(_metadata, &self->p);
	ASSERT_EQ(0, sh("ip addr del %s/24 dev veth1", RC_IP1));
	self->ip1_removed = true;
	EXPECT_TRUE(wait_until(shca1_lacks_ip1, B->ctx, 5000));
	send_that_times_out(_metadata, &self->p);
	self->ip1_removed = false;
	EXPECT_EQ(0, sh("ip addr add %s/24 dev veth1", RC_IP1));
	EXPECT_TRUE(wait_until(shca1_has_ip1, B->ctx, 5000));
}

/* ---- CQ overrun ---------------------------------------------------------------- */

static void tiny_cq(struct rc_cfg *c)
{
	c->cqe = 1;
	c->max_send_wr = 64;
}

/*
 * A send CQ of cqe 1 (granted N) and N + 3 signaled WRITEs, never polled:
 * the CQ overruns and the QP whose completion did not fit goes to ERR.
 * (IBV_EVENT_CQ_ERR and QP_FATAL: cq_arm.c overrun_is_cq_err_and_qp_fatal.)
 */
TEST_F(err, cq_overrun)
{
	int n;

	/* The requester's own CQ. */
	RC_SKIP_IF_RXE(A);

	rc_reopen(_metadata, &self->p, tiny_cq);
	n = A->scq->cqe;
	ASSERT_LE(1, n);
	ASSERT_GE((int)A->cap.max_send_wr, n + 3) TH_LOG("CQ granted %d entries", n);
	for (int i = 0; i < n + 3; i++) {
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, i, A->buf, 8,
					  A->mr->lkey, (uintptr_t)B->buf + 8 * i, B->mr->rkey,
					  IBV_SEND_SIGNALED, 0)) TH_LOG("WR %d", i);
	}
	expect_state(_metadata, A, IBV_QPS_ERR, "QP of the overrun CQ");
	TH_LOG("cqe 1 granted %d; %d WRs posted", n, n + 3);
	/* The pair is destroyed by the teardown: that must work too. */
}

/* ---- WQEs beyond the QP's granted caps ----------------------------------- */

/* One 64-byte WQEBB per WQE: 2 SGEs and 28 bytes inline granted. */
static void small_wqe(struct rc_cfg *c)
{
	c->max_send_sge = 1;
	c->max_inline_data = 0;
}

/*
 * A provider that ignores the caps the kernel granted (a bug, or an
 * application writing the mmapped SQ itself) must not get more from the
 * engine than the QP was given: a WQE with more data segments than
 * max_send_sge, or larger than the QP's WQE size, completes with
 * IBV_WC_LOC_QP_OP_ERR; inline data beyond max_inline_data with
 * IBV_WC_LOC_LEN_ERR. The QP goes to ERR, the next WR is flushed, the
 * responder never hears of it. Our own provider is made to post them by
 * raising the caps it keeps in its QP (user/softhca.h), so the WQE in the
 * ring is exactly what it would write if the caps were larger.
 */
/* @wr (a SEND of @len bytes) from A arrives at B + 64 KiB. */
static void send_ok(struct __test_metadata *_metadata, struct rc_pair *p,
		    struct ibv_send_wr *wr, uint32_t len)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_send_wr *bad = NULL;
	struct rc_wc_want w = rc_want_recv(10, IBV_WC_RECV, len, b, a);

	wr->wr_id = 9;
	ASSERT_EQ(0, rc_post_recv(b->qp, 10, b->buf + 65536, 8192, b->mr->lkey));
	ASSERT_EQ(0, ibv_post_send(a->qp, wr, &bad));
	rc_expect_wc(_metadata, b->rcq, &w);
	w = rc_want_req(9, IBV_WC_SEND, len, a);
	rc_expect_wc(_metadata, a->scq, &w);
}

/*
 * A message longer than the port's max_msg_sz (1 GiB): a local length
 * error before any key is looked at, so the SGEs need no such MR.
 */
TEST_F(err, message_longer_than_max_msg_sz)
{
	struct ibv_port_attr pa;
	struct ibv_sge sg[2];
	struct ibv_send_wr wr;
	uint32_t half;

	/* The requester's own max_msg_sz. */
	RC_SKIP_IF_RXE(A);
	ASSERT_EQ(0, ibv_query_port(A->ctx, 1, &pa));
	ASSERT_EQ(1U << 30, pa.max_msg_sz);
	half = pa.max_msg_sz / 2 + 1;
	for (int i = 0; i < 2; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)A->buf, half, A->mr->lkey };
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 2, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	local_fail(_metadata, &self->p, &wr, NULL, IBV_WC_LOC_LEN_ERR,
		   "SEND of max_msg_sz + 2 bytes");
}

TEST_F(err, wqe_beyond_granted_caps)
{
	struct ibv_sge sg[3];
	struct ibv_send_wr wr;
	uint8_t *src = A->buf + 4096;

	/* The requester's own caps. */
	RC_SKIP_IF_RXE(A);
	rc_reopen(_metadata, &self->p, small_wqe);
	/* kernel/qp.c: 64-byte WQEs: (64 - ctrl - raddr) / 16 SGEs, 64 - 36 inline */
	ASSERT_EQ(2, A->cap.max_send_sge);
	ASSERT_EQ(28, A->cap.max_inline_data);
	ASSERT_EQ(1, to_sqp(A->qp)->sq.fmt.max_wqebbs);
	for (int i = 0; i < 3; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)src + 64 * i, 8, A->mr->lkey };
	rc_fill(src, 256, 5);

	/* 3 SGEs: ctrl + 3 data segments = one WQEBB, but max_send_sge is 2. */
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 3, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	local_fail(_metadata, &self->p, &wr, (uint32_t[]){ 3, 28, 1 }, IBV_WC_LOC_QP_OP_ERR,
		   "SEND with 3 SGEs, 2 granted");
	/* The same as an RDMA WRITE: 5 segments, two WQEBBs, one granted. */
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 3, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)B->buf;
	wr.wr.rdma.rkey = B->mr->rkey;
	local_fail(_metadata, &self->p, &wr, (uint32_t[]){ 3, 28, 2 }, IBV_WC_LOC_QP_OP_ERR,
		   "WRITE with 3 SGEs in two WQEBBs, 2 SGEs and one WQEBB granted");
	/* 40 bytes inline: ctrl + 4 + 40 bytes = one WQEBB, but 28 granted. */
	sg[0].length = 40;
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
	local_fail(_metadata, &self->p, &wr, (uint32_t[]){ 2, 40, 1 }, IBV_WC_LOC_LEN_ERR,
		   "SEND with 40 bytes inline, 28 granted");
	/* At the caps themselves, all is well: 28 bytes inline, 2 SGEs. */
	sg[0].length = 28;
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED };
	send_ok(_metadata, &self->p, &wr, 28);
	EXPECT_EQ(-1, rc_check_fill(B->buf + 65536, 28, 5));
	sg[0].length = 8;
	wr = (struct ibv_send_wr){ .sg_list = sg, .num_sge = 2, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	send_ok(_metadata, &self->p, &wr, 16);
	EXPECT_EQ(0, memcmp(B->buf + 65536, src, 8));
	EXPECT_EQ(0, memcmp(B->buf + 65536 + 8, src + 64, 8));
}

TEST_HARNESS_MAIN
