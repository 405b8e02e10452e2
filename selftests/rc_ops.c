// SPDX-License-Identifier: GPL-2.0
/*
 * RC operations between two QPs, every byte and every completion field
 * checked: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ,
 * ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD, SGE lists, inline data (also
 * across the SQ ring's end), posting errors with bad_wr, unsignaled WQEs,
 * sq_sig_all, fence, full queues and zero-length receives (seed-map.md §3, §4).
 *
 * Each test runs three times: both QPs in one context on shca0 (sharing a
 * UAR), in two contexts on shca0, and across shca0 and shca1 (shca1 is
 * created on veth1 for the test and deleted after).
 *
 * Completion fields, as softhca defines them (Documentation/queue-formats.md):
 * the requester's byte_len is the message length (READ: bytes read, atomics:
 * 8); SEND_WITH_IMM and WRITE_WITH_IMM set IBV_WC_WITH_IMM on the requester
 * too (as mlx5); a receive's src_qp is the sender's QPN, imm_data is in
 * network order exactly as posted, and wc_flags has no other bit (no GRH on
 * RC).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"

/* Buffer layout of each end (1 MiB). */
#define SRC		0		/* what an end sends / writes from */
#define DST		(512 << 10)	/* where it receives / is written */
#define BIG		(448 << 10)	/* largest single transfer */

FIXTURE(ops) {
	struct rc_pair p;
};

FIXTURE_VARIANT(ops) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(ops, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(ops, two_ctx) { .topo = RC_TWO_CTX };
FIXTURE_VARIANT_ADD(ops, cross_dev) { .topo = RC_CROSS_DEV };

RC_SHCA1_GUARD()

FIXTURE_SETUP(ops)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(ops)
{
	rc_pair_destroy(&self->p);
}


#define A (&self->p.e[0])
#define B (&self->p.e[1])



/* SEND of one size, B receiving into DST with a canary after the payload. */
static void send_one(struct __test_metadata *_metadata, struct rc_pair *p,
		     uint32_t len, uint64_t id, bool imm)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct rc_wc_want w;
	uint32_t room = len + 64;

	rc_fill(a->buf + SRC, len, id);
	memset(b->buf + DST, 0xee, room);
	ASSERT_EQ(0, rc_post_recv(b->qp, id + 1000, b->buf + DST, room, b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, id,
				  len ? a->buf + SRC : NULL, len, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0x12345678 + (uint32_t)id));
	w = rc_want_req(id, IBV_WC_SEND, len, a);
	if (imm)
		w = rc_want_imm(w, 0x12345678 + (uint32_t)id);
	rc_expect_wc(_metadata, a->scq, &w);
	w = rc_want_recv(id + 1000, IBV_WC_RECV, len, b, a);
	if (imm)
		w = rc_want_imm(w, 0x12345678 + (uint32_t)id);
	rc_expect_wc(_metadata, b->rcq, &w);
	rc_expect_bytes(_metadata, b->buf + DST, len, id, "received payload");
	rc_expect_canary(_metadata, b->buf + DST + len, 64, 0xee, "after the payload");
}

/* Sizes: empty, one byte, around a 16-byte DS and a 64-byte WQEBB, around
 * the 1024-byte path MTU (several packets), pages, and a large message.
 */
static const uint32_t sizes[] = { 0, 1, 15, 16, 17, 63, 64, 65, 1023, 1024, 1025,
				  4096, 10000, 65536, BIG };

TEST_F(ops, send)
{
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		send_one(_metadata, &self->p, sizes[i], i + 1, false);
}

TEST_F(ops, send_with_imm)
{
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		send_one(_metadata, &self->p, sizes[i], i + 1, true);
}

/*
 * A QP in RTR receives: the first request raises Communication Established
 * on its context (IBA 11.6.3.1), once; none in RTS, none to the sender.
 */
TEST_F(ops, comm_est_on_first_receive_in_rtr)
{
	bool events = !rc_dev_is_rxe(B->dev);	/* rxe raises none */
	struct ibv_qp_attr attr;
	struct ibv_async_event ev;
	int mask;

	/* B back to RTR only; A, in RTS, still sends to its QPN. */
	attr.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &attr, IBV_QP_STATE));
	rc_init_attr(&attr, &mask, RC_ACCESS_ALL);
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &attr, mask));
	rc_rtr_attr(&self->p, 1, &attr, &mask);
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &attr, mask));
	ASSERT_EQ(IBV_QPS_RTR, rc_qp_state(B->qp));
	EXPECT_EQ(-1, next_async_event(B->ctx, 0, &ev));

	for (int i = 0; i < 3; i++) {
		if (i == 2) {	/* the third one in RTS */
			rc_rts_attr(&self->p, 1, &attr, &mask);
			ASSERT_EQ(0, ibv_modify_qp(B->qp, &attr, mask));
		}
		send_one(_metadata, &self->p, 100, 40 + i, false);
		if (!events)
			continue;
		if (i == 0) {
			ASSERT_EQ(IBV_EVENT_COMM_EST, next_async_event(B->ctx, 2000, &ev));
			EXPECT_EQ(B->qp, ev.element.qp);
		} else {
			EXPECT_EQ(-1, next_async_event(B->ctx, 0, &ev)) TH_LOG("send %d", i);
		}
		EXPECT_EQ(-1, next_async_event(A->ctx, 0, &ev));
	}
}

TEST_F(ops, send_both_directions)
{
	/* B sends to A as well: the responder side of each end works. */
	for (int i = 0; i < 2; i++) {
		struct rc_end *s = &self->p.e[i], *r = &self->p.e[!i];
		struct rc_wc_want w;

		rc_fill(s->buf + SRC, 3000, 77 + i);
		ASSERT_EQ(0, rc_post_recv(r->qp, 500 + i, r->buf + DST, 4096, r->mr->lkey));
		ASSERT_EQ(0, rc_post_send(s->qp, IBV_WR_SEND, 600 + i, s->buf + SRC, 3000,
					  s->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
		w = rc_want_req(600 + i, IBV_WC_SEND, 3000, s);
		rc_expect_wc(_metadata, s->scq, &w);
		w = rc_want_recv(500 + i, IBV_WC_RECV, 3000, r, s);
		rc_expect_wc(_metadata, r->rcq, &w);
		rc_expect_bytes(_metadata, r->buf + DST, 3000, 77 + i, "payload");
	}
}

TEST_F(ops, rdma_write)
{
	static const uint32_t wsizes[] = { 1, 64, 1025, 4096, 100000, BIG };
	struct rc_wc_want w;

	/* A receive posted on B must not be consumed by plain WRITEs. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 4242, B->buf + SRC, 64, B->mr->lkey));
	for (unsigned int i = 0; i < sizeof(wsizes) / sizeof(wsizes[0]); i++) {
		uint32_t len = wsizes[i];

		rc_fill(A->buf + SRC, len, 10 + i);
		memset(B->buf + DST, 0xee, len + 64);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, i, A->buf + SRC, len,
					  A->mr->lkey, (uintptr_t)B->buf + DST, B->mr->rkey,
					  IBV_SEND_SIGNALED, 0));
		w = rc_want_req(i, IBV_WC_RDMA_WRITE, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		rc_expect_bytes(_metadata, B->buf + DST, len, 10 + i, "written");
		rc_expect_canary(_metadata, B->buf + DST + len, 64, 0xee, "after the write");
	}
	rc_expect_quiet(_metadata, B->rcq, "plain WRITE on the responder");
	/* The receive is still the first one: a SEND now completes it. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 99, NULL, 0, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	w = rc_want_req(99, IBV_WC_SEND, 0, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(4242, IBV_WC_RECV, 0, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
}

TEST_F(ops, rdma_write_with_imm)
{
	static const uint32_t wsizes[] = { 0, 1, 4096, 5000, BIG };
	struct rc_wc_want w;

	for (unsigned int i = 0; i < sizeof(wsizes) / sizeof(wsizes[0]); i++) {
		uint32_t len = wsizes[i];

		rc_fill(A->buf + SRC, len, 20 + i);
		memset(B->buf + DST, 0xee, len + 64);
		/* The receive's buffer is not where the data goes. */
		memset(B->buf + SRC, 0xdd, 256);
		ASSERT_EQ(0, rc_post_recv(B->qp, 700 + i, B->buf + SRC, 256, B->mr->lkey));
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, i,
					  len ? A->buf + SRC : NULL, len, A->mr->lkey,
					  (uintptr_t)B->buf + DST, B->mr->rkey,
					  IBV_SEND_SIGNALED, 0xc0ffee00 + i));
		w = rc_want_imm(rc_want_req(i, IBV_WC_RDMA_WRITE, len, A), 0xc0ffee00 + i);
		rc_expect_wc(_metadata, A->scq, &w);
		/* byte_len of the receive: the WRITE's length, as ConnectX. */
		w = rc_want_imm(rc_want_recv(700 + i, IBV_WC_RECV_RDMA_WITH_IMM, len, B, A),
			     0xc0ffee00 + i);
		rc_expect_wc(_metadata, B->rcq, &w);
		rc_expect_bytes(_metadata, B->buf + DST, len, 20 + i, "written");
		rc_expect_canary(_metadata, B->buf + DST + len, 64, 0xee, "after the write");
		rc_expect_canary(_metadata, B->buf + SRC, 256, 0xdd, "receive buffer");
	}
}

TEST_F(ops, rdma_read)
{
	static const uint32_t rsizes[] = { 1, 16, 1024, 1025, 4096, 200000, BIG };
	struct rc_wc_want w;

	for (unsigned int i = 0; i < sizeof(rsizes) / sizeof(rsizes[0]); i++) {
		uint32_t len = rsizes[i];

		rc_fill(B->buf + SRC, len, 30 + i);
		memset(A->buf + DST, 0xee, len + 64);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_READ, i, A->buf + DST, len,
					  A->mr->lkey, (uintptr_t)B->buf + SRC, B->mr->rkey,
					  IBV_SEND_SIGNALED, 0));
		w = rc_want_req(i, IBV_WC_RDMA_READ, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		rc_expect_bytes(_metadata, A->buf + DST, len, 30 + i, "read");
		rc_expect_canary(_metadata, A->buf + DST + len, 64, 0xee, "after the read");
	}
	rc_expect_quiet(_metadata, B->rcq, "READ on the responder");
	rc_expect_quiet(_metadata, B->scq, "READ on the responder's send CQ");
}

TEST_F(ops, atomic_cmp_and_swp)
{
	uint64_t *remote = (uint64_t *)(B->buf + DST);
	uint64_t *old = (uint64_t *)(A->buf + DST);
	struct rc_wc_want w;

	/* Success: compare equal, the swap value is stored. */
	*remote = 0x1122334455667788ull;
	*old = 0;
	ASSERT_EQ(0, rc_post_atomic(A->qp, IBV_WR_ATOMIC_CMP_AND_SWP, 1, old,
				    A->mr->lkey, (uintptr_t)remote, B->mr->rkey,
				    0x1122334455667788ull, 0xdeadbeefcafef00dull,
				    IBV_SEND_SIGNALED));
	w = rc_want_req(1, IBV_WC_COMP_SWAP, 8, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(0x1122334455667788ull, *old);
	EXPECT_EQ(0xdeadbeefcafef00dull, *remote);

	/* Failure: compare differs, memory unchanged, old value returned. */
	*old = 0;
	ASSERT_EQ(0, rc_post_atomic(A->qp, IBV_WR_ATOMIC_CMP_AND_SWP, 2, old,
				    A->mr->lkey, (uintptr_t)remote, B->mr->rkey,
				    0x1122334455667788ull, 0x5555555555555555ull,
				    IBV_SEND_SIGNALED));
	w = rc_want_req(2, IBV_WC_COMP_SWAP, 8, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(0xdeadbeefcafef00dull, *old);
	EXPECT_EQ(0xdeadbeefcafef00dull, *remote);

	/* Only the 8 addressed bytes change; any 8-aligned address works. */
	memset(B->buf + DST + 64, 0xee, 24);
	*(uint64_t *)(B->buf + DST + 72) = 7;
	ASSERT_EQ(0, rc_post_atomic(A->qp, IBV_WR_ATOMIC_CMP_AND_SWP, 3, old,
				    A->mr->lkey, (uintptr_t)B->buf + DST + 72,
				    B->mr->rkey, 7, 8, IBV_SEND_SIGNALED));
	w = rc_want_req(3, IBV_WC_COMP_SWAP, 8, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(7, *old);
	EXPECT_EQ(8, *(uint64_t *)(B->buf + DST + 72));
	rc_expect_canary(_metadata, B->buf + DST + 64, 8, 0xee, "before the atomic");
	rc_expect_canary(_metadata, B->buf + DST + 80, 8, 0xee, "after the atomic");
	rc_expect_quiet(_metadata, B->rcq, "atomics on the responder");
}

TEST_F(ops, atomic_fetch_and_add)
{
	uint64_t *remote = (uint64_t *)(B->buf + DST);
	uint64_t *old = (uint64_t *)(A->buf + DST);
	struct rc_wc_want w;

	*remote = 1000;
	for (int i = 0; i < 10; i++) {
		*old = 0;
		ASSERT_EQ(0, rc_post_atomic(A->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, i, old,
					    A->mr->lkey, (uintptr_t)remote, B->mr->rkey,
					    (uint64_t)i, 0, IBV_SEND_SIGNALED));
		w = rc_want_req(i, IBV_WC_FETCH_ADD, 8, A);
		rc_expect_wc(_metadata, A->scq, &w);
		EXPECT_EQ(1000 + i * (i - 1) / 2, *old);
	}
	EXPECT_EQ(1045, *remote);
	/* 64-bit wrap-around. */
	*remote = ~0ull;
	ASSERT_EQ(0, rc_post_atomic(A->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 99, old,
				    A->mr->lkey, (uintptr_t)remote, B->mr->rkey, 2, 0,
				    IBV_SEND_SIGNALED));
	w = rc_want_req(99, IBV_WC_FETCH_ADD, 8, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(~0ull, *old);
	EXPECT_EQ(1, *remote);
}

TEST_F(ops, sge_lists)
{
	struct ibv_sge sg[3], rsg[3];
	struct ibv_send_wr wr = {}, *bad = NULL;
	struct ibv_recv_wr rwr = {}, *rbad = NULL;
	struct rc_wc_want w;
	uint8_t *a = A->buf, *b = B->buf;

	/* SEND gathering [100][0][200] into a receive scattering [128][0][512]. */
	rc_fill(a + 1000, 100, 1);
	rc_fill(a + 5000, 200, 2);
	memset(b + DST, 0xee, 8192);
	sg[0] = (struct ibv_sge){ (uintptr_t)a + 1000, 100, A->mr->lkey };
	sg[1] = (struct ibv_sge){ (uintptr_t)a + 3000, 0, A->mr->lkey };
	sg[2] = (struct ibv_sge){ (uintptr_t)a + 5000, 200, A->mr->lkey };
	rsg[0] = (struct ibv_sge){ (uintptr_t)b + DST, 128, B->mr->lkey };
	rsg[1] = (struct ibv_sge){ (uintptr_t)b + DST + 2000, 0, B->mr->lkey };
	rsg[2] = (struct ibv_sge){ (uintptr_t)b + DST + 4096, 512, B->mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 11, .sg_list = rsg, .num_sge = 3 };
	ASSERT_EQ(0, ibv_post_recv(B->qp, &rwr, &rbad));
	wr = (struct ibv_send_wr){ .wr_id = 12, .sg_list = sg, .num_sge = 3,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	w = rc_want_req(12, IBV_WC_SEND, 300, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(11, IBV_WC_RECV, 300, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	EXPECT_EQ(0, memcmp(b + DST, a + 1000, 100));
	EXPECT_EQ(0, memcmp(b + DST + 100, a + 5000, 28));
	EXPECT_EQ(0, memcmp(b + DST + 4096, a + 5000 + 28, 172));
	rc_expect_canary(_metadata, b + DST + 128, 2000 - 128, 0xee, "past SGE 0");
	rc_expect_canary(_metadata, b + DST + 2000, 64, 0xee, "zero-length SGE");
	rc_expect_canary(_metadata, b + DST + 4096 + 172, 64, 0xee, "past the payload");

	/* WRITE gathering the same three SGEs. */
	memset(b + DST, 0xee, 400);
	wr.wr_id = 13;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b + DST;
	wr.wr.rdma.rkey = B->mr->rkey;
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	w = rc_want_req(13, IBV_WC_RDMA_WRITE, 300, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(0, memcmp(b + DST, a + 1000, 100));
	EXPECT_EQ(0, memcmp(b + DST + 100, a + 5000, 200));
	rc_expect_canary(_metadata, b + DST + 300, 64, 0xee, "past the write");

	/* READ scattering 300 remote bytes into [100][0][200]. */
	rc_fill(b + SRC, 300, 3);
	memset(a + 1000, 0xee, 164);
	memset(a + 5000, 0xee, 264);
	wr.wr_id = 14;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)b + SRC;
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	w = rc_want_req(14, IBV_WC_RDMA_READ, 300, A);
	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(0, memcmp(a + 1000, b + SRC, 100));
	EXPECT_EQ(0, memcmp(a + 5000, b + SRC + 100, 200));
	rc_expect_canary(_metadata, a + 1100, 64, 0xee, "past read SGE 0");
	rc_expect_canary(_metadata, a + 5200, 64, 0xee, "past read SGE 2");
}

TEST_F(ops, max_sge)
{
	uint32_t n = A->cap.max_send_sge, rn = B->cap.max_recv_sge;
	struct ibv_sge sg[64], rsg[64];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct rc_wc_want w;
	uint32_t rsz = (33 * n + rn - 1) / rn;	/* receive SGE size */

	ASSERT_GE(64, n);
	ASSERT_GE(64, rn);
	ASSERT_GE(1024, rsz);
	/* n SGEs of 33 bytes each into rn receive SGEs of rsz bytes. */
	for (uint32_t i = 0; i < n; i++) {
		rc_fill(A->buf + 4096 * i, 33, 100 + i);
		sg[i] = (struct ibv_sge){ (uintptr_t)A->buf + 4096 * i, 33, A->mr->lkey };
	}
	for (uint32_t i = 0; i < rn; i++)
		rsg[i] = (struct ibv_sge){ (uintptr_t)B->buf + DST + 1024 * i, rsz,
					   B->mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = rsg, .num_sge = rn };
	ASSERT_EQ(0, ibv_post_recv(B->qp, &rwr, &rbad));
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = sg, .num_sge = n,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr, &bad));
	w = rc_want_req(2, IBV_WC_SEND, 33 * n, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(1, IBV_WC_RECV, 33 * n, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	for (uint32_t k = 0; k < 33 * n; k++) {
		uint8_t want = A->buf[4096 * (k / 33) + k % 33];
		uint8_t got = B->buf[DST + 1024 * (k / rsz) + k % rsz];

		ASSERT_EQ(want, got) TH_LOG("byte %u of the message", k);
	}
}

/* Inline: the source is an unregistered stack buffer, overwritten as soon
 * as ibv_post_send returns.
 */
TEST_F(ops, inline_send_and_write)
{
	uint32_t max = A->cap.max_inline_data;
	uint32_t isizes[] = { 1, 4, 12, 13, 16, 44, 45, 60, 61, 64, 100, 128, 0 };
	uint8_t src[1024];
	struct rc_wc_want w;

	ASSERT_LE(256, max) TH_LOG("requested 256 bytes inline, granted %u", max);
	ASSERT_GE(sizeof(src), max);
	isizes[sizeof(isizes) / sizeof(isizes[0]) - 1] = max;
	for (unsigned int i = 0; i < sizeof(isizes) / sizeof(isizes[0]); i++) {
		uint32_t len = isizes[i];

		/* SEND */
		rc_fill(src, len, 40 + i);
		memset(B->buf + DST, 0xee, len + 64);
		ASSERT_EQ(0, rc_post_recv(B->qp, i, B->buf + DST, len + 64, B->mr->lkey));
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 100 + i, src, len, 0xbadbad,
					  0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0))
			TH_LOG("inline SEND of %u", len);
		memset(src, 0, sizeof(src));
		w = rc_want_req(100 + i, IBV_WC_SEND, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_recv(i, IBV_WC_RECV, len, B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
		rc_expect_bytes(_metadata, B->buf + DST, len, 40 + i, "inline SEND");
		rc_expect_canary(_metadata, B->buf + DST + len, 64, 0xee, "after inline SEND");

		/* WRITE */
		rc_fill(src, len, 60 + i);
		memset(B->buf + DST, 0xee, len + 64);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 200 + i, src, len,
					  0xbadbad, (uintptr_t)B->buf + DST, B->mr->rkey,
					  IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0))
			TH_LOG("inline WRITE of %u", len);
		memset(src, 0, sizeof(src));
		w = rc_want_req(200 + i, IBV_WC_RDMA_WRITE, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		rc_expect_bytes(_metadata, B->buf + DST, len, 60 + i, "inline WRITE");
		rc_expect_canary(_metadata, B->buf + DST + len, 64, 0xee, "after inline WRITE");
	}
}

static void small_sq(struct rc_cfg *c)
{
	c->max_send_wr = 4;
	c->max_recv_wr = 16;
}

/* Inline WQEs of 1..5 WQEBBs on a small SQ: the ring position moves by
 * varying steps and the inline payload is split at the ring's end many
 * times, in single posts (BlueFlame) and in chains (doorbell).
 */
TEST_F(ops, inline_ring_wrap)
{
	uint32_t max, pos = 0;
	uint8_t src[4][1024];

	rc_reopen(_metadata, &self->p, small_sq);
	max = A->cap.max_inline_data;
	ASSERT_GE(sizeof(src[0]), max);
	for (uint32_t round = 0; round < 120; round++) {
		uint32_t batch = round % 2 ? 1 : (round / 2) % 4 + 1;
		struct ibv_send_wr wr[4], *bad = NULL;
		struct ibv_sge sg[4];
		uint32_t len[4];

		if (batch > A->cap.max_send_wr)
			batch = A->cap.max_send_wr;
		for (uint32_t k = 0; k < batch; k++) {
			uint32_t id = round * 4 + k;

			len[k] = (id * 37 + 1) % (max + 1);
			rc_fill(src[k], len[k], id);
			sg[k] = (struct ibv_sge){ (uintptr_t)src[k], len[k], 0 };
			wr[k] = (struct ibv_send_wr){ .wr_id = id, .sg_list = sg + k,
				.num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
				.next = k + 1 < batch ? &wr[k + 1] : NULL };
			ASSERT_EQ(0, rc_post_recv(B->qp, id, B->buf + DST + 1024 * k,
						  1024, B->mr->lkey));
		}
		ASSERT_EQ(0, ibv_post_send(A->qp, wr, &bad)) TH_LOG("round %u", round);
		memset(src, 0, sizeof(src));
		for (uint32_t k = 0; k < batch; k++) {
			uint32_t id = round * 4 + k;
			struct rc_wc_want w = rc_want_req(id, IBV_WC_SEND, len[k], A);

			rc_expect_wc(_metadata, A->scq, &w);
			w = rc_want_recv(id, IBV_WC_RECV, len[k], B, A);
			rc_expect_wc(_metadata, B->rcq, &w);
			ASSERT_EQ(-1, rc_check_fill(B->buf + DST + 1024 * k, len[k], id))
				TH_LOG("round %u WR %u: %u bytes inline, WQE at WQEBB %u",
				       round, k, len[k], pos);
			/* ctrl + inline header and payload, in 16-byte DS */
			pos += ((1 + (len[k] ? (4 + len[k] + 15) / 16 : 0)) * 16 + 63) / 64;
		}
	}
}

TEST_F(ops, inline_too_long_stops_the_chain)
{
	uint32_t max = A->cap.max_inline_data;
	static uint8_t src[4][2048];
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sg[4];
	uint32_t len[4] = { 8, 16, max + 1, 8 };
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(A);

	ASSERT_GT(sizeof(src[0]), max + 1);
	for (int k = 0; k < 4; k++) {
		rc_fill(src[k], len[k], k);
		sg[k] = (struct ibv_sge){ (uintptr_t)src[k], len[k], 0 };
		wr[k] = (struct ibv_send_wr){ .wr_id = k, .sg_list = sg + k, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			.next = k < 3 ? &wr[k + 1] : NULL };
		ASSERT_EQ(0, rc_post_recv(B->qp, 10 + k, B->buf + DST + 4096 * k, 4096,
					  B->mr->lkey));
	}
	/* mlx5 (set_data_inl_seg) refuses an inline payload beyond the QP's
	 * max_inline_data with ENOMEM, bad_wr at that WR; the WRs before it
	 * are posted and execute.
	 */
	EXPECT_EQ(ENOMEM, ibv_post_send(A->qp, wr, &bad));
	EXPECT_EQ(&wr[2], bad);
	for (int k = 0; k < 2; k++) {
		w = rc_want_req(k, IBV_WC_SEND, len[k], A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_recv(10 + k, IBV_WC_RECV, len[k], B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
		rc_expect_bytes(_metadata, B->buf + DST + 4096 * k, len[k], k, "posted WR");
	}
	rc_expect_quiet(_metadata, A->scq, "after bad_wr");
	rc_expect_quiet(_metadata, B->rcq, "after bad_wr");
	/* The QP is fine: a max_inline_data SEND goes through. */
	sg[2].length = max;
	wr[2].next = NULL;
	ASSERT_EQ(0, ibv_post_send(A->qp, &wr[2], &bad));
	w = rc_want_req(2, IBV_WC_SEND, max, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(12, IBV_WC_RECV, max, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
}

/* Posting errors: each stops the chain at the bad WR with bad_wr set. */
TEST_F(ops, post_send_errors_set_bad_wr)
{
	struct ibv_sge sg[64];
	struct ibv_send_wr wr[2], *bad;
	static const struct {
		enum ibv_wr_opcode op;
		int num_sge;	/* -1: max_send_sge + 1 */
		int err;
	} cases[] = {
		{ IBV_WR_SEND, -1, EINVAL },		/* too many SGEs */
		{ IBV_WR_RDMA_WRITE, -1, EINVAL },
		{ IBV_WR_DRIVER1, 1, EINVAL },		/* no such WR here */
		{ IBV_WR_TSO, 1, EINVAL },		/* not on RC */
		{ (enum ibv_wr_opcode)77, 1, EINVAL },	/* no such opcode */
	};
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(A);

	ASSERT_GT(64, A->cap.max_send_sge);
	for (int i = 0; i < 64; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)A->buf + 64 * i, 8, A->mr->lkey };
	for (unsigned int c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		wr[0] = (struct ibv_send_wr){ .wr_id = 2 * c, .sg_list = sg, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.next = &wr[1] };
		wr[0].wr.rdma.remote_addr = (uintptr_t)B->buf + DST;
		wr[0].wr.rdma.rkey = B->mr->rkey;
		wr[1] = wr[0];
		wr[1].wr_id = 2 * c + 1;
		wr[1].next = NULL;
		wr[1].opcode = cases[c].op;
		wr[1].num_sge = cases[c].num_sge < 0 ? (int)A->cap.max_send_sge + 1 :
						       cases[c].num_sge;
		bad = NULL;
		EXPECT_EQ(cases[c].err, ibv_post_send(A->qp, wr, &bad))
			TH_LOG("case %u: opcode %d num_sge %d", c, cases[c].op, wr[1].num_sge);
		EXPECT_EQ(&wr[1], bad) TH_LOG("case %u", c);
		w = rc_want_req(2 * c, IBV_WC_RDMA_WRITE, 8, A);
		rc_expect_wc(_metadata, A->scq, &w);
		rc_expect_quiet(_metadata, A->scq, "after bad_wr");
	}
	/* The QP still works. */
	send_one(_metadata, &self->p, 100, 1, false);
}

TEST_F(ops, post_recv_too_many_sge)
{
	struct ibv_sge sg[64];
	struct ibv_recv_wr wr[2], *bad = NULL;
	struct rc_wc_want w;
	uint32_t n = B->cap.max_recv_sge;

	ASSERT_GT(64, n);
	for (int i = 0; i < 64; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)B->buf + DST + 64 * i, 64, B->mr->lkey };
	wr[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = sg, .num_sge = 1, .next = &wr[1] };
	wr[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = sg, .num_sge = n + 1 };
	EXPECT_EQ(EINVAL, ibv_post_recv(B->qp, wr, &bad));
	EXPECT_EQ(&wr[1], bad);
	/* wr[0] was posted: a SEND lands in it, and in nothing else. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 3, A->buf, 10, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	w = rc_want_req(3, IBV_WC_SEND, 10, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(1, IBV_WC_RECV, 10, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	/* Exactly max_recv_sge SGEs is fine. */
	wr[1].num_sge = n;
	wr[1].next = NULL;
	EXPECT_EQ(0, ibv_post_recv(B->qp, &wr[1], &bad));
}

TEST_F(ops, unsignaled_then_signaled)
{
	struct rc_wc_want w;
	uint32_t depth = A->cap.max_send_wr;

	/* Five unsignaled WRITEs and a signaled one: one completion, six
	 * writes done.
	 */
	for (int i = 0; i < 6; i++) {
		rc_fill(A->buf + SRC + 4096 * i, 4096, 50 + i);
		memset(B->buf + DST + 4096 * i, 0, 4096);
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, i,
					  A->buf + SRC + 4096 * i, 4096, A->mr->lkey,
					  (uintptr_t)B->buf + DST + 4096 * i, B->mr->rkey,
					  i == 5 ? IBV_SEND_SIGNALED : 0, 0));
	}
	w = rc_want_req(5, IBV_WC_RDMA_WRITE, 4096, A);
	rc_expect_wc(_metadata, A->scq, &w);
	rc_expect_quiet(_metadata, A->scq, "unsignaled WRs");
	for (int i = 0; i < 6; i++)
		rc_expect_bytes(_metadata, B->buf + DST + 4096 * i, 4096, 50 + i, "write");

	/* Ten times the SQ depth with one WR in eight signaled: each
	 * signaled completion frees the SQ slots of the WRs before it, so
	 * the SQ never reports full.
	 */
	for (uint32_t i = 0; i < 10 * depth; i++) {
		bool sig = i % 8 == 7;

		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1000 + i, A->buf, 64,
					  A->mr->lkey, (uintptr_t)B->buf + DST, B->mr->rkey,
					  sig ? IBV_SEND_SIGNALED : 0, 0))
			TH_LOG("WR %u of %u (SQ depth %u)", i, 10 * depth, depth);
		if (sig) {
			w = rc_want_req(1000 + i, IBV_WC_RDMA_WRITE, 64, A);
			rc_expect_wc(_metadata, A->scq, &w);
		}
	}
	rc_expect_quiet(_metadata, A->scq, "unsignaled WRs");
}

/* Unsignaled SENDs still consume receives and complete them. */
TEST_F(ops, unsignaled_send_completes_at_the_receiver)
{
	struct rc_wc_want w;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, rc_post_recv(B->qp, 10 + i, B->buf + DST + 1024 * i, 1024,
					  B->mr->lkey));
	}
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, i, A->buf, 100 + i,
					  A->mr->lkey, 0, 0, i == 2 ? IBV_SEND_SIGNALED : 0, 0));
	}
	for (int i = 0; i < 3; i++) {
		w = rc_want_recv(10 + i, IBV_WC_RECV, 100 + i, B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
	}
	w = rc_want_req(2, IBV_WC_SEND, 102, A);
	rc_expect_wc(_metadata, A->scq, &w);
	rc_expect_quiet(_metadata, A->scq, "unsignaled SENDs");
}

static void sig_all(struct rc_cfg *c)
{
	c->sq_sig_all = 1;
}

TEST_F(ops, sq_sig_all)
{
	struct rc_wc_want w;

	rc_reopen(_metadata, &self->p, sig_all);
	ASSERT_EQ(0, rc_post_recv(B->qp, 9, B->buf + DST, 1024, B->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1, A->buf, 10, A->mr->lkey,
				  (uintptr_t)B->buf + DST, B->mr->rkey, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_READ, 2, A->buf + 4096, 10,
				  A->mr->lkey, (uintptr_t)B->buf + DST, B->mr->rkey, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 3, A->buf, 20, A->mr->lkey, 0, 0,
				  0, 0));
	w = rc_want_req(1, IBV_WC_RDMA_WRITE, 10, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_req(2, IBV_WC_RDMA_READ, 10, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_req(3, IBV_WC_SEND, 20, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(9, IBV_WC_RECV, 20, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
}

/* READ then a fenced SEND of the buffer the READ fills: the SEND carries
 * what the READ brought, never the stale contents.
 */
TEST_F(ops, fence_orders_send_after_read)
{
	struct rc_wc_want w;

	for (int i = 0; i < 20; i++) {
		uint32_t len = 8192 + 512 * i;
		struct ibv_sge rs = { (uintptr_t)A->buf + DST, len, A->mr->lkey };
		struct ibv_sge ss = { (uintptr_t)A->buf + DST, len, A->mr->lkey };
		struct ibv_send_wr send = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE };
		struct ibv_send_wr read = { .wr_id = 1, .sg_list = &rs, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			.next = &send };
		struct ibv_send_wr *bad = NULL;

		read.wr.rdma.remote_addr = (uintptr_t)B->buf + SRC;
		read.wr.rdma.rkey = B->mr->rkey;
		rc_fill(B->buf + SRC, len, 900 + i);
		memset(A->buf + DST, 0x5a, len);
		ASSERT_EQ(0, rc_post_recv(B->qp, 3, B->buf + DST, len, B->mr->lkey));
		ASSERT_EQ(0, ibv_post_send(A->qp, &read, &bad));
		w = rc_want_req(1, IBV_WC_RDMA_READ, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_req(2, IBV_WC_SEND, len, A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_recv(3, IBV_WC_RECV, len, B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
		ASSERT_EQ(-1, rc_check_fill(B->buf + DST, len, 900 + i))
			TH_LOG("round %d: the fenced SEND did not carry the READ's data", i);
	}
}

TEST_F(ops, sq_full_is_enomem_with_bad_wr)
{
	uint32_t n = A->cap.max_send_wr;
	struct ibv_send_wr *wr, *bad = NULL;
	struct ibv_sge sge = { (uintptr_t)A->buf, 16, A->mr->lkey };
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(A);

	wr = calloc(n + 2, sizeof(*wr));
	ASSERT_NE(NULL, wr);
	for (uint32_t i = 0; i < n + 2; i++) {
		wr[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n + 2 ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = (uintptr_t)B->buf + DST + 16 * i;
		wr[i].wr.rdma.rkey = B->mr->rkey;
	}
	rc_fill(A->buf, 16, 5);
	/* max_send_wr WRs fit; the next one is refused (mlx5: ENOMEM). */
	EXPECT_EQ(ENOMEM, ibv_post_send(A->qp, wr, &bad));
	EXPECT_EQ(&wr[n], bad) TH_LOG("granted max_send_wr %u, bad_wr is WR %ld", n,
				      bad ? (long)(bad - wr) : -1L);
	for (uint32_t i = 0; i < n; i++) {
		w = rc_want_req(i, IBV_WC_RDMA_WRITE, 16, A);
		rc_expect_wc(_metadata, A->scq, &w);
		rc_expect_bytes(_metadata, B->buf + DST + 16 * i, 16, 5, "write");
	}
	rc_expect_quiet(_metadata, A->scq, "WRs after bad_wr");
	/* Polled: room again for the rest. */
	EXPECT_EQ(0, ibv_post_send(A->qp, &wr[n], &bad));
	for (uint32_t i = n; i < n + 2; i++) {
		w = rc_want_req(i, IBV_WC_RDMA_WRITE, 16, A);
		rc_expect_wc(_metadata, A->scq, &w);
	}
	free(wr);
}

TEST_F(ops, rq_full_is_enomem_with_bad_wr)
{
	uint32_t n = B->cap.max_recv_wr;
	struct ibv_recv_wr *wr, *bad = NULL;
	struct ibv_sge sge = { (uintptr_t)B->buf + DST, 64, B->mr->lkey };
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(B);

	wr = calloc(n + 1, sizeof(*wr));
	ASSERT_NE(NULL, wr);
	for (uint32_t i = 0; i <= n; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = &sge,
			.num_sge = 1, .next = i < n ? &wr[i + 1] : NULL };
	EXPECT_EQ(ENOMEM, ibv_post_recv(B->qp, wr, &bad));
	EXPECT_EQ(&wr[n], bad) TH_LOG("granted max_recv_wr %u, bad_wr is WR %ld", n,
				      bad ? (long)(bad - wr) : -1L);
	/* The n posted receives complete in order. */
	for (uint32_t i = 0; i < n; i++) {
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, i, A->buf, i % 64,
					  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
		w = rc_want_req(i, IBV_WC_SEND, i % 64, A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_recv(100 + i, IBV_WC_RECV, i % 64, B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
	}
	free(wr);
}

/* seed-map.md §4.3: a num_sge == 0 receive takes a WRITE_WITH_IMM of any length
 * and a zero-byte SEND (with or without immediate).
 */
TEST_F(ops, zero_length_recv_takes_write_with_imm)
{
	struct rc_wc_want w;

	rc_fill(A->buf + SRC, 4096, 8);
	ASSERT_EQ(0, rc_post_recv(B->qp, 31, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE_WITH_IMM, 32, A->buf + SRC,
				  4096, A->mr->lkey, (uintptr_t)B->buf + DST, B->mr->rkey,
				  IBV_SEND_SIGNALED, 0xa1b2c3d4));
	w = rc_want_imm(rc_want_req(32, IBV_WC_RDMA_WRITE, 4096, A), 0xa1b2c3d4);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_imm(rc_want_recv(31, IBV_WC_RECV_RDMA_WITH_IMM, 4096, B, A), 0xa1b2c3d4);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 4096, 8, "written");
}

TEST_F(ops, zero_length_recv_takes_zero_byte_send)
{
	struct rc_wc_want w;

	ASSERT_EQ(0, rc_post_recv(B->qp, 41, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_recv(B->qp, 42, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 43, NULL, 0, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND_WITH_IMM, 44, NULL, 0, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0x01020304));
	w = rc_want_req(43, IBV_WC_SEND, 0, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_imm(rc_want_req(44, IBV_WC_SEND, 0, A), 0x01020304);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(41, IBV_WC_RECV, 0, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	w = rc_want_imm(rc_want_recv(42, IBV_WC_RECV, 0, B, A), 0x01020304);
	rc_expect_wc(_metadata, B->rcq, &w);
	/* A zero-length SGE counts as no SGE on both sides. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 45, B->buf + DST, 0, B->mr->lkey));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 46, A->buf, 0, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	w = rc_want_req(46, IBV_WC_SEND, 0, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(45, IBV_WC_RECV, 0, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
}

/* seed-map.md §4.3: a non-empty SEND on a zero-capacity receive is a length error:
 * the receiver completes it with IBV_WC_LOC_LEN_ERR, the sender gets
 * IBV_WC_REM_INV_REQ_ERR (NAK invalid request), both QPs end in ERR, and
 * every WR still queued on either side is flushed in order.
 */
TEST_F(ops, one_byte_send_on_zero_length_recv)
{
	struct rc_wc_want w;
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge sge = { (uintptr_t)A->buf, 1, A->mr->lkey };

	RC_SKIP_IF_RXE(B);

	ASSERT_EQ(0, rc_post_recv(B->qp, 51, NULL, 0, 0));
	ASSERT_EQ(0, rc_post_recv(B->qp, 52, B->buf + DST, 4096, B->mr->lkey));
	ASSERT_EQ(0, rc_post_recv(B->qp, 53, B->buf + DST, 4096, B->mr->lkey));
	for (int i = 0; i < 3; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = 61 + i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.next = i < 2 ? &wr[i + 1] : NULL };
	ASSERT_EQ(0, ibv_post_send(A->qp, wr, &bad));

	w = (struct rc_wc_want){ .wr_id = 61, .status = IBV_WC_REM_INV_REQ_ERR,
				 .qp_num = A->qp->qp_num };
	rc_expect_wc(_metadata, A->scq, &w);
	w.status = IBV_WC_WR_FLUSH_ERR;
	w.wr_id = 62;
	rc_expect_wc(_metadata, A->scq, &w);
	w.wr_id = 63;
	rc_expect_wc(_metadata, A->scq, &w);

	w = (struct rc_wc_want){ .wr_id = 51, .status = IBV_WC_LOC_LEN_ERR,
				 .qp_num = B->qp->qp_num };
	rc_expect_wc(_metadata, B->rcq, &w);
	w.status = IBV_WC_WR_FLUSH_ERR;
	w.wr_id = 52;
	rc_expect_wc(_metadata, B->rcq, &w);
	w.wr_id = 53;
	rc_expect_wc(_metadata, B->rcq, &w);

	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(A->qp));
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(B->qp));
	rc_expect_quiet(_metadata, A->scq, "after the flush");
	rc_expect_quiet(_metadata, B->rcq, "after the flush");
	rc_expect_quiet(_metadata, A->rcq, "sender's receive CQ");
	rc_expect_quiet(_metadata, B->scq, "receiver's send CQ");
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = { .qp_state = st };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int sq_draining(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0xa5, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state == IBV_QPS_SQD ? a.sq_draining : -2;
}

/* SQD starts no new WQE (Documentation/engine.md): a SEND posted in SQD
 * waits for RTS.
 */
TEST_F(ops, sqd_holds_new_wrs)
{
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(A);

	ASSERT_EQ(0, to_state(A->qp, IBV_QPS_SQD));
	EXPECT_EQ(0, sq_draining(A->qp));
	ASSERT_EQ(0, rc_post_recv(B->qp, 1, B->buf + DST, 4096, B->mr->lkey));
	rc_fill(A->buf, 100, 4);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_quiet(_metadata, A->scq, "SEND posted in SQD");
	rc_expect_quiet(_metadata, B->rcq, "SEND posted in SQD, receiver");
	ASSERT_EQ(0, to_state(A->qp, IBV_QPS_RTS));
	w = rc_want_req(2, IBV_WC_SEND, 100, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(1, IBV_WC_RECV, 100, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf + DST, 100, 4, "payload");
}

/* A WQE that started (waiting on RNR) is finished in SQD, with
 * sq_draining 1 meanwhile; the one behind it waits for RTS.
 */
TEST_F(ops, sqd_drains_the_started_wr)
{
	struct rc_wc_want w;

	RC_SKIP_IF_RXE(A);

	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 10, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 20, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_quiet(_metadata, A->scq, "SEND without a receive (RNR)");
	ASSERT_EQ(0, to_state(A->qp, IBV_QPS_SQD));
	EXPECT_EQ(1, sq_draining(A->qp)) TH_LOG("the first SEND waits on RNR");
	ASSERT_EQ(0, rc_post_recv(B->qp, 11, B->buf + DST, 4096, B->mr->lkey));
	ASSERT_EQ(0, rc_post_recv(B->qp, 12, B->buf + DST, 4096, B->mr->lkey));
	w = rc_want_req(1, IBV_WC_SEND, 10, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(11, IBV_WC_RECV, 10, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	if (rc_on_wire(variant->topo)) {
		/*
		 * On the wire both SENDs left before the RNR NAK: both had
		 * started, so SQD finishes both (as a ConnectX does).
		 */
		w = rc_want_req(2, IBV_WC_SEND, 20, A);
		rc_expect_wc(_metadata, A->scq, &w);
		w = rc_want_recv(12, IBV_WC_RECV, 20, B, A);
		rc_expect_wc(_metadata, B->rcq, &w);
		EXPECT_EQ(0, sq_draining(A->qp)) TH_LOG("drained");
		return;
	}
	rc_expect_quiet(_metadata, A->scq, "the second SEND, in SQD");
	EXPECT_EQ(0, sq_draining(A->qp)) TH_LOG("drained");
	ASSERT_EQ(0, to_state(A->qp, IBV_QPS_RTS));
	w = rc_want_req(2, IBV_WC_SEND, 20, A);
	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(12, IBV_WC_RECV, 20, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
}

TEST_HARNESS_MAIN
