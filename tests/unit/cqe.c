// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of the CQE decoder the provider and the kernel share
 * (<rdma/softhca-cqe.h>) and of the provider's CQ helpers (user/cqe.c):
 * the owner-bit rule over several laps of the ring, every syndrome's
 * status, requester, responder and error CQEs built byte by byte decoded
 * field by field, immediate byte order, the WR each CQE retires and the
 * ones it must not (a slot with no posted WR, a retired WR, an empty RQ, a
 * queue on another CQ, an unknown CQE opcode), the CQE opcode table
 * against the opcode table, the ibv_wc conversion, the CQ arm word and UAR
 * doorbell bits, and CQ cleaning (the CQEs of one QP removed from a
 * wrapping run, order and owner bits kept).
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../user/cqe.c"
#include "tap.h"

/* A CQE from raw bytes: start all zero, then set the given offsets. */
struct cqe_buf {
	_Alignas(64) uint8_t b[64];
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static const struct softhca_cqe *as_cqe(const struct cqe_buf *c)
{
	return (const struct softhca_cqe *)c->b;
}

#define POISON_WR_ID	0x1122334455667788ull

static void wc_poison(struct softhca_wc *wc)
{
	memset(wc, 0xa5, sizeof(*wc));
	wc->wr_id = POISON_WR_ID;
}

/*
 * The WR records of one QP: an SQ of 8 WQEBB slots and an RQ of 4, each
 * with @posted WRs (numbered from @first) and none retired. SQ WR i sits
 * at slot 2 * i (two WQEBBs each), wr_id 0x100 + i; RQ WR i has wr_id
 * 0x200 + i.
 */
struct wq_pair {
	__u64 sq_wrid[8], rq_wrid[4];
	uint32_t sq_head[8];
	struct softhca_wq_wrs sq, rq;
};

static void wq_pair_init(struct wq_pair *q, uint32_t first, uint32_t posted)
{
	memset(q, 0, sizeof(*q));
	q->sq = (struct softhca_wq_wrs){ .wrid = q->sq_wrid,
					 .wqe_head = q->sq_head, .cnt = 8,
					 .head = first, .tail = first };
	q->rq = (struct softhca_wq_wrs){ .wrid = q->rq_wrid, .cnt = 4,
					 .head = first, .tail = first };
	for (uint32_t n = 0; n < posted; n++) {
		uint32_t i = first + n;

		softhca_wq_wrs_record(&q->sq, (2 * i) & 7, 0x100 + i, i);
		q->sq.head++;
		softhca_wq_wrs_record(&q->rq, i & 3, 0x200 + i, i);
		q->rq.head++;
	}
}

static void owner_bit_single_cases(void)
{
	struct cqe_buf c;

	memset(&c, 0, sizeof(c));
	/* freshly initialised ring: INVALID, owner 0: never ready */
	c.b[63] = SOFTHCA_CQE_INVALID << 4;
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 0, 4));
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 4, 4));
	c.b[63] = SOFTHCA_CQE_INVALID << 4 | 1;
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 4, 4));
	/* first lap expects owner 0, second 1, third 0 */
	c.b[63] = 0x00;
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 0, 4));
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 4, 4));
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 8, 4));
	c.b[63] = 0x01;
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 0, 4));
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 5, 4));
	CHECK(!softhca_cqe_owned_by_sw(as_cqe(&c), 9, 4));
	/* se and format bits do not matter; other opcodes do not either */
	c.b[63] = SOFTHCA_CQE_RESP_SEND << 4 | SOFTHCA_CQE_SE | 1;
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 6, 4));
	c.b[63] = SOFTHCA_CQE_REQ_ERR << 4;
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 2, 4));
	/* consumer index wrapping past 2^32 */
	c.b[63] = 0x01;
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 0xfffffffcu, 4));
	c.b[63] = 0x00;
	CHECK(softhca_cqe_owned_by_sw(as_cqe(&c), 0xfffffffcu + 4u, 4));
}

/* Producer and consumer run over 5 laps of a 4-entry ring. */
static void owner_bit_over_ring_laps(void)
{
	enum { N = 4, LAPS = 5 };
	struct softhca_cqe *ring = aligned_alloc(64, N * sizeof(*ring));
	int bad_early = 0, bad_ready = 0, bad_slot = 0;

	if (!ring)
		exit(2);
	memset(ring, 0, N * sizeof(*ring));
	for (int i = 0; i < N; i++)
		ring[i].op_own = SOFTHCA_CQE_INVALID << 4;

	for (uint32_t pi = 0; pi < N * LAPS; pi++) {
		struct softhca_cqe *slot = &ring[pi & (N - 1)];

		/* Not yet produced: the slot still holds the last lap's CQE. */
		if (softhca_cqe_get_sw(ring, pi, N))
			bad_early++;
		slot->wqe_counter = htobe16(pi);
		slot->op_own = SOFTHCA_CQE_REQ << 4 | softhca_owner_of(pi, N);
		if (softhca_cqe_get_sw(ring, pi, N) != slot)
			bad_ready++;
		else if (be16toh(softhca_cqe_get_sw(ring, pi, N)->wqe_counter) != pi)
			bad_slot++;
		/* One ahead of the producer is never ready. */
		if (softhca_cqe_get_sw(ring, pi + 1, N))
			bad_early++;
	}
	CHECK_EQ(bad_early, 0);
	CHECK_EQ(bad_ready, 0);
	CHECK_EQ(bad_slot, 0);
	/* The hand-computed owner of each lap. */
	CHECK_EQ(ring[0].op_own & 1, 0);	/* pi 16: lap 4 -> (16 & 4) = 0 */
	CHECK(softhca_cqe_get_sw(ring, 16, N) == &ring[0]);
	CHECK(!softhca_cqe_get_sw(ring, 20, N));
	CHECK(!softhca_cqe_get_sw(ring, 12, N));
	free(ring);
}

static void every_syndrome_status(void)
{
	static const struct { uint8_t synd; enum ibv_wc_status st; } map[] = {
		{ 0x01, IBV_WC_LOC_LEN_ERR },
		{ 0x02, IBV_WC_LOC_QP_OP_ERR },
		{ 0x04, IBV_WC_LOC_PROT_ERR },
		{ 0x05, IBV_WC_WR_FLUSH_ERR },
		{ 0x06, IBV_WC_MW_BIND_ERR },
		{ 0x10, IBV_WC_BAD_RESP_ERR },
		{ 0x11, IBV_WC_LOC_ACCESS_ERR },
		{ 0x12, IBV_WC_REM_INV_REQ_ERR },
		{ 0x13, IBV_WC_REM_ACCESS_ERR },
		{ 0x14, IBV_WC_REM_OP_ERR },
		{ 0x15, IBV_WC_RETRY_EXC_ERR },
		{ 0x16, IBV_WC_RNR_RETRY_EXC_ERR },
		{ 0x22, IBV_WC_REM_ABORT_ERR },
		/* not mlx5 syndromes */
		{ 0x00, IBV_WC_GENERAL_ERR },
		{ 0x03, IBV_WC_GENERAL_ERR },
		{ 0x07, IBV_WC_GENERAL_ERR },
		{ 0x21, IBV_WC_GENERAL_ERR },
		{ 0xff, IBV_WC_GENERAL_ERR },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (softhca_syndrome_wc_status(map[i].synd) != map[i].st)
			printf("# syndrome 0x%02x -> %u, want %d\n", map[i].synd,
			       softhca_syndrome_wc_status(map[i].synd), map[i].st);
		CHECK_EQ(softhca_syndrome_wc_status(map[i].synd), map[i].st);
	}
}

static void error_cqes_to_wc(void)
{
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	wq_pair_init(&q, 0, 4);
	memset(&c, 0, sizeof(c));
	c.b[54] = 0x99;				/* vendor_err_synd */
	c.b[55] = 0x13;				/* REMOTE_ACCESS_ERR */
	put32(&c.b[56], 0x08001234);		/* RDMA_WRITE, QPN 0x1234 */
	c.b[60] = 0x00;
	c.b[61] = 0x0e;				/* wqe_counter 14: slot 6 */
	c.b[63] = SOFTHCA_CQE_REQ_ERR << 4 | 1;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc.vendor_err, 0x99);
	CHECK_EQ(wc.qpn, 0x1234);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RDMA_WRITE);
	CHECK_EQ(wc.with_imm, 0);
	CHECK_EQ(wc.byte_len, 0);
	CHECK_EQ(wc.wr_id, 0x103);		/* WR 3 at slot 6 */
	CHECK_EQ(q.sq.tail, 4);			/* it and the three before */
	CHECK_EQ(q.rq.tail, 0);
	CHECK_EQ(softhca_cqe_wqe_counter(as_cqe(&c)), 14);
	CHECK_EQ(softhca_cqe_qpn(as_cqe(&c)), 0x1234);
	CHECK_EQ(softhca_cqe_wqe_opcode(as_cqe(&c)), SOFTHCA_OPCODE_RDMA_WRITE);

	/* Flushed receive: the oldest posted. */
	memset(&c, 0, sizeof(c));
	c.b[55] = 0x05;
	put32(&c.b[56], 0x00abcdef);
	c.b[63] = SOFTHCA_CQE_RESP_ERR << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc.vendor_err, 0);
	CHECK_EQ(wc.qpn, 0xabcdef);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV);
	CHECK_EQ(wc.wr_id, 0x200);
	CHECK_EQ(q.rq.tail, 1);

	/* Retry exceeded on a READ; hw_err bytes do not leak into the wc. */
	wq_pair_init(&q, 0, 1);
	memset(&c, 0, sizeof(c));
	c.b[52] = 0x42;
	c.b[53] = 0x01;
	c.b[55] = 0x15;
	put32(&c.b[56], 0x10000001);
	c.b[63] = SOFTHCA_CQE_REQ_ERR << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_RETRY_EXC_ERR);
	CHECK_EQ(wc.vendor_err, 0);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RDMA_READ);
	CHECK_EQ(wc.wr_id, 0x100);

	/* An error CQE of an opcode without a WC: SEND, the syndrome's status. */
	wq_pair_init(&q, 0, 1);
	c.b[56] = 0x00;				/* NOP */
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_RETRY_EXC_ERR);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_SEND);
}

/*
 * The clocks: a good CQE's device timestamp at 48, an error CQE's at 40
 * (its syndromes are at 52..55), the wall clock at 16 in both; 0 without.
 */
static void cqe_timestamps(void)
{
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	wq_pair_init(&q, 0, 4);
	memset(&c, 0, sizeof(c));
	put32(&c.b[16], 0x01020304);		/* wall clock */
	put32(&c.b[20], 0x05060708);
	put32(&c.b[48], 0x11121314);		/* device clock */
	put32(&c.b[52], 0x15161718);
	put32(&c.b[56], 0x00001234);		/* SEND, QPN 0x1234 */
	c.b[63] = SOFTHCA_CQE_REQ << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.ts, 0x1112131415161718ull);
	CHECK_EQ(wc.ts_real, 0x0102030405060708ull);

	memset(&c, 0, sizeof(c));
	put32(&c.b[16], 0x21222324);
	put32(&c.b[20], 0x25262728);
	put32(&c.b[40], 0x31323334);		/* error CQE: device clock */
	put32(&c.b[44], 0x35363738);
	c.b[54] = 0x88;
	c.b[55] = SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR;
	put32(&c.b[56], 0x00001234);
	c.b[63] = SOFTHCA_CQE_RESP_ERR << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc.ts, 0x3132333435363738ull);
	CHECK_EQ(wc.ts_real, 0x2122232425262728ull);

	memset(&c, 0, sizeof(c));
	put32(&c.b[56], 0x00001234);
	c.b[63] = SOFTHCA_CQE_RESP_SEND << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.ts, 0);
	CHECK_EQ(wc.ts_real, 0);
}

static void requester_cqes_to_wc(void)
{
	static const struct {
		uint8_t wqe_op;
		uint32_t op;
		uint8_t imm;
		uint32_t byte_len;
	} cases[] = {
		{ 0x08, SOFTHCA_WC_RDMA_WRITE, 0, 0x300 },
		{ 0x09, SOFTHCA_WC_RDMA_WRITE, 1, 0x300 },
		{ 0x0a, SOFTHCA_WC_SEND, 0, 0x300 },
		{ 0x0b, SOFTHCA_WC_SEND, 1, 0x300 },
		{ 0x10, SOFTHCA_WC_RDMA_READ, 0, 0x300 },
		{ 0x11, SOFTHCA_WC_COMP_SWAP, 0, 8 },
		{ 0x12, SOFTHCA_WC_FETCH_ADD, 0, 8 },
	};
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		wq_pair_init(&q, 0, 1);
		memset(&c, 0, sizeof(c));
		put32(&c.b[44], 0x300);			/* byte_cnt */
		put32(&c.b[56], (uint32_t)cases[i].wqe_op << 24 | 0x77);
		put32(&c.b[36], 0xa1b2c3d4);		/* echoed for _IMM */
		c.b[63] = SOFTHCA_CQE_REQ << 4;
		wc_poison(&wc);
		CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
		CHECK_EQ(wc.status, SOFTHCA_WC_SUCCESS);
		CHECK_EQ(wc.opcode, cases[i].op);
		CHECK_EQ(wc.with_imm, cases[i].imm);
		CHECK_EQ(be32toh(wc.imm), cases[i].imm ? 0xa1b2c3d4 : 0);
		CHECK_EQ(wc.byte_len, cases[i].byte_len);
		CHECK_EQ(wc.qpn, 0x77);
		CHECK_EQ(wc.vendor_err, 0);
		CHECK_EQ(wc.src_qp, 0);
		CHECK_EQ(wc.wr_id, 0x100);
		CHECK_EQ(q.sq.tail, 1);
	}
	/* NOP and opcodes softhca never runs complete their WR as an error. */
	for (uint32_t op = 0; op < 256; op++) {
		if (op == 0x00 || op == 0x02 || op == 0x0f || op == 0x13 ||
		    op == 0x2f || op == 0x30 || op == 0xff) {
			wq_pair_init(&q, 0, 1);
			memset(&c, 0, sizeof(c));
			put32(&c.b[56], op << 24 | 0x77);
			wc_poison(&wc);
			CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq,
						    &wc), 0);
			CHECK_EQ(wc.status, SOFTHCA_WC_GENERAL_ERR);
			CHECK_EQ(wc.opcode, SOFTHCA_WC_SEND);
			CHECK_EQ(wc.wr_id, 0x100);
		}
	}
}

static void responder_cqes_to_wc(void)
{
	static const uint8_t imm_bytes[4] = { 0x12, 0x34, 0x56, 0x78 };
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	wq_pair_init(&q, 0, 3);
	memset(&c, 0, sizeof(c));
	/* An RC receive: no GRH, and the bits of a datagram are not read. */
	put32(&c.b[24], 0x0f000099);		/* (L3 bits), source QPN 0x99 */
	c.b[29] = SOFTHCA_CQE_VLAN_PRESENT;
	put16(&c.b[30], 0xa123);
	memcpy(&c.b[36], imm_bytes, 4);		/* immediate as on the wire */
	put32(&c.b[44], 512);			/* byte_cnt */
	put32(&c.b[56], 0x0000002a);		/* QPN 42 */
	c.b[63] = SOFTHCA_CQE_RESP_SEND_IMM << 4 | SOFTHCA_CQE_SE | 1;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_SUCCESS);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV);
	CHECK_EQ(wc.with_imm, 1);
	CHECK_BYTES(&wc.imm, imm_bytes, 4);	/* network order */
	CHECK_EQ(be32toh(wc.imm), 0x12345678);
	CHECK_EQ(wc.byte_len, 512);
	CHECK_EQ(wc.qpn, 42);
	CHECK_EQ(wc.src_qp, 0x99);
	CHECK_EQ(wc.sl, 0);
	CHECK_EQ(wc.grh, 0);
	CHECK_EQ(wc.vlan, 0);
	CHECK_EQ(wc.wr_id, 0x200);
	CHECK_EQ(q.sq.tail, 0);

	c.b[63] = SOFTHCA_CQE_RESP_WR_IMM << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc.with_imm, 1);
	CHECK_BYTES(&wc.imm, imm_bytes, 4);
	CHECK_EQ(wc.wr_id, 0x201);

	c.b[63] = SOFTHCA_CQE_RESP_SEND << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV);
	CHECK_EQ(wc.with_imm, 0);
	CHECK_EQ(wc.imm, 0);
	CHECK_EQ(wc.byte_len, 512);
	CHECK_EQ(wc.wr_id, 0x202);
	CHECK_EQ(q.rq.tail, 3);

	/* SEND_WITH_INV: the invalidated rkey, host order, no immediate. */
	wq_pair_init(&q, 0, 1);
	memset(&c, 0, sizeof(c));
	memcpy(&c.b[36], imm_bytes, 4);		/* the rkey, big-endian */
	put32(&c.b[44], 100);
	put32(&c.b[56], 0x0000002a);
	c.b[63] = SOFTHCA_CQE_RESP_SEND_INV << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.status, SOFTHCA_WC_SUCCESS);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV);
	CHECK_EQ(wc.with_imm, 0);
	CHECK_EQ(wc.with_inv, 1);
	CHECK_EQ(wc.inv_rkey, 0x12345678);
	CHECK_EQ(wc.byte_len, 100);
	CHECK_EQ(wc.wr_id, 0x200);
}

/* A requester CQE of wqe_counter @counter (SEND) decoded against @q. */
static int decode_req(struct wq_pair *q, uint16_t counter,
		      struct softhca_wc *wc)
{
	struct cqe_buf c;

	memset(&c, 0, sizeof(c));
	put32(&c.b[56], SOFTHCA_OPCODE_SEND << 24 | 0x77);
	c.b[60] = counter >> 8;
	c.b[61] = counter & 0xff;
	c.b[63] = SOFTHCA_CQE_REQ << 4;
	wc_poison(wc);
	return softhca_cqe_decode(as_cqe(&c), &q->sq, &q->rq, wc);
}

static void cqe_retires_only_outstanding_wrs(void)
{
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	/* WRs 5..7 posted (slots 2, 4, 6), 0..4 retired: slot 0 is stale. */
	wq_pair_init(&q, 0, 8);
	q.sq.tail = 5;
	CHECK_EQ(decode_req(&q, 0, &wc), -1);	/* WR 4's slot: retired */
	CHECK_EQ(decode_req(&q, 8, &wc), -1);	/* slot 0 again */
	CHECK_EQ(wc.wr_id, POISON_WR_ID);	/* nothing filled */
	CHECK_EQ(q.sq.tail, 5);
	/* A signaled CQE for WR 6 retires the unsignaled WR 5 with it. */
	CHECK_EQ(decode_req(&q, 4, &wc), 0);
	CHECK_EQ(wc.wr_id, 0x106);
	CHECK_EQ(q.sq.tail, 7);
	CHECK_EQ(decode_req(&q, 4, &wc), -1);	/* twice: retired now */
	CHECK_EQ(decode_req(&q, 2, &wc), -1);	/* WR 5: retired with it */
	CHECK_EQ(q.sq.tail, 7);
	CHECK_EQ(decode_req(&q, 6, &wc), 0);	/* WR 7, the last */
	CHECK_EQ(q.sq.tail, 8);
	CHECK_EQ(decode_req(&q, 6, &wc), -1);	/* nothing outstanding */

	/* A slot whose record is ahead of head (never posted) is refused. */
	wq_pair_init(&q, 0, 2);
	q.sq_head[6] = 5;
	CHECK_EQ(decode_req(&q, 6, &wc), -1);
	CHECK_EQ(q.sq.tail, 0);

	/* Free-running counters across 2^32: WRs 0xffffffff and 0 posted. */
	wq_pair_init(&q, 0xffffffffu, 2);
	CHECK_EQ(decode_req(&q, 0, &wc), 0);	/* WR 0 at slot 0 */
	CHECK_EQ(wc.wr_id, 0x100);
	CHECK_EQ(q.sq.tail, 1);

	/* The QP's SQ does not complete on this CQ, or has no slots. */
	wq_pair_init(&q, 0, 1);
	memset(&c, 0, sizeof(c));
	put32(&c.b[56], SOFTHCA_OPCODE_SEND << 24 | 0x77);
	c.b[63] = SOFTHCA_CQE_REQ << 4;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), NULL, &q.rq, &wc), -1);
	c.b[63] = SOFTHCA_CQE_REQ_ERR << 4;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), NULL, &q.rq, &wc), -1);
	q.sq.cnt = 0;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), -1);
	CHECK_EQ(q.sq.tail, 0);
	CHECK_EQ(q.rq.tail, 0);

	/* Responder CQEs need a posted receive and the RQ on this CQ. */
	wq_pair_init(&q, 0, 1);
	c.b[63] = SOFTHCA_CQE_RESP_SEND << 4;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, NULL, &wc), -1);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.wr_id, 0x200);
	c.b[63] = SOFTHCA_CQE_RESP_ERR << 4;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), -1);
	CHECK_EQ(q.rq.tail, 1);
	q.rq.cnt = 0;
	q.rq.head = 2;
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), -1);
	CHECK_EQ(q.sq.tail, 0);
}

static void unknown_cqe_opcodes(void)
{
	static const uint8_t ops[] = { 0x5, 0x6, 0xc, SOFTHCA_CQE_INVALID };
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	for (size_t i = 0; i < sizeof(ops); i++) {
		wq_pair_init(&q, 0, 2);
		memset(&c, 0, sizeof(c));
		c.b[63] = ops[i] << 4;
		CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), -1);
		CHECK_EQ(q.sq.tail, 0);
		CHECK_EQ(q.rq.tail, 0);
	}
}

/* The CQE opcode table says what the opcode table's responder CQEs are. */
static void cqe_kinds_match_the_opcode_table(void)
{
	unsigned int recv = 0;

	for (uint32_t op = 0; op < SOFTHCA_OPCODE_CNT; op++) {
		const struct softhca_opcode_info *o = softhca_opcode_info(op);
		const struct softhca_cqe_kind *k;

		if (!o || !(o->flags & SOFTHCA_OPF_RECV))
			continue;
		recv++;
		k = &softhca_cqe_kinds[o->resp_cqe];
		if (k->wq != SOFTHCA_CQE_WQ_RQ || k->error ||
		    k->with_imm != !!(o->flags & SOFTHCA_OPF_IMM))
			printf("# %s: responder CQE 0x%x\n", o->name, o->resp_cqe);
		CHECK_EQ(k->wq, SOFTHCA_CQE_WQ_RQ);
		CHECK_EQ(k->error, 0);
		CHECK_EQ(k->with_imm, !!(o->flags & SOFTHCA_OPF_IMM));
		CHECK_EQ(k->with_inv, o->mkop == SOFTHCA_MKOP_RINV);
		/* A write's immediate is its own kind of receive. */
		CHECK_EQ(k->wc_opcode,
			 o->remote_access ? SOFTHCA_WC_RECV_RDMA_WITH_IMM :
					    SOFTHCA_WC_RECV);
	}
	CHECK_EQ(recv, 4);	/* SEND, SEND_IMM, SEND_INV, WRITE_IMM */
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_REQ].wq, SOFTHCA_CQE_WQ_SQ);
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_REQ_ERR].wq, SOFTHCA_CQE_WQ_SQ);
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_REQ_ERR].error, 1);
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_RESP_ERR].wq, SOFTHCA_CQE_WQ_RQ);
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_RESP_ERR].error, 1);
	CHECK_EQ(softhca_cqe_kinds[SOFTHCA_CQE_INVALID].wq, SOFTHCA_CQE_WQ_NONE);
}

/* A datagram's receive: GRH area, L3 type, source MAC, VLAN and its SL. */
static void datagram_cqe_fields(void)
{
	static const uint8_t smac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
	struct cqe_buf c;
	struct softhca_wc wc;
	struct wq_pair q;

	wq_pair_init(&q, 0, 3);
	memset(&c, 0, sizeof(c));
	memcpy(&c.b[4], smac, 6);
	put32(&c.b[24], 0x1a000456);		/* GRH, RoCE v2 IPv4, QPN */
	put32(&c.b[44], 40 + 100);		/* byte_cnt: the GRH area too */
	put32(&c.b[56], 0x0000002a);
	c.b[63] = SOFTHCA_CQE_RESP_SEND << 4;
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.opcode, SOFTHCA_WC_RECV);
	CHECK_EQ(wc.byte_len, 140);
	CHECK_EQ(wc.src_qp, 0x456);
	CHECK_EQ(wc.grh, 1);
	CHECK_EQ(wc.l3, SOFTHCA_CQE_L3_IPV4);
	CHECK_BYTES(wc.smac, smac, 6);
	CHECK_EQ(wc.vlan, 0);
	CHECK_EQ(wc.pkt_type, SOFTHCA_CQE_PKT_UDP | SOFTHCA_CQE_L3_IPV4);
	CHECK_EQ(wc.sl, 0);			/* no VLAN: no priority */
	CHECK_EQ(wc.with_imm, 0);

	/* Over IPv6, on a VLAN: its ID and priority (the SL). */
	put32(&c.b[24], 0x11000457);
	c.b[29] = SOFTHCA_CQE_VLAN_PRESENT;
	put16(&c.b[30], 5 << 13 | 0x123);
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.grh, 1);
	CHECK_EQ(wc.l3, SOFTHCA_CQE_L3_IPV6);
	CHECK_EQ(wc.src_qp, 0x457);
	CHECK_EQ(wc.vlan, 1);
	CHECK_EQ(wc.vlan_id, 0x123);
	CHECK_EQ(wc.sl, 5);
	CHECK_EQ(wc.pkt_type, SOFTHCA_CQE_L3_IPV6);	/* bit 27 clear here */

	/* GRH field 2 or 3 is not "in the buffer": no datagram fields. */
	put32(&c.b[24], 0x22000458);
	wc_poison(&wc);
	CHECK_EQ(softhca_cqe_decode(as_cqe(&c), &q.sq, &q.rq, &wc), 0);
	CHECK_EQ(wc.grh, 0);
	CHECK_EQ(wc.sl, 0);
	CHECK_EQ(wc.pkt_type, 0);
	CHECK_EQ(wc.src_qp, 0x458);
}

static void wc_to_ibv_fields(void)
{
	struct softhca_wc w = {
		.wr_id = 0xfeedull, .status = SOFTHCA_WC_REM_OP_ERR,
		.opcode = SOFTHCA_WC_RECV_RDMA_WITH_IMM, .byte_len = 77,
		.imm = htobe32(0xabcd), .qpn = 0x123456, .src_qp = 0x654321,
		.vendor_err = 0x89, .sl = 3, .with_imm = 1,
	};
	struct ibv_wc wc;

	memset(&wc, 0xa5, sizeof(wc));
	softhca_wc_to_ibv(&w, &wc);
	CHECK_EQ(wc.wr_id, 0xfeed);
	CHECK_EQ(wc.status, IBV_WC_REM_OP_ERR);
	CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(wc.byte_len, 77);
	CHECK_EQ(be32toh(wc.imm_data), 0xabcd);
	CHECK_EQ(wc.qp_num, 0x123456);
	CHECK_EQ(wc.src_qp, 0x654321);
	CHECK_EQ(wc.vendor_err, 0x89);
	CHECK_EQ(wc.sl, 3);
	CHECK_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(wc.pkey_index, 0);
	CHECK_EQ(wc.slid, 0);
	CHECK_EQ(wc.dlid_path_bits, 0);
	w.with_imm = 0;
	softhca_wc_to_ibv(&w, &wc);
	CHECK_EQ(wc.wc_flags, 0);
	/* A datagram: the GRH area heads the buffer; SL is the packet type. */
	w.grh = 1;
	w.pkt_type = SOFTHCA_CQE_PKT_UDP | SOFTHCA_CQE_L3_IPV6;
	softhca_wc_to_ibv(&w, &wc);
	CHECK_EQ(wc.wc_flags, IBV_WC_GRH);
	CHECK_EQ(wc.sl, 0x9);
	w.with_imm = 1;
	softhca_wc_to_ibv(&w, &wc);
	CHECK_EQ(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
}

static void arm_word_and_doorbell(void)
{
	static const uint8_t uar_bytes[8] = {
		0x11, 0x12, 0x34, 0x56, 0x00, 0x00, 0x0a, 0xbc,
	};
	uint64_t db;

	CHECK_EQ(softhca_cq_arm_word(0, false, 0), 0x00000000);
	CHECK_EQ(softhca_cq_arm_word(1, true, 0x123456), 0x11123456);
	CHECK_EQ(softhca_cq_arm_word(3, true, 0), 0x31000000);
	CHECK_EQ(softhca_cq_arm_word(6, false, 0x1ffffff), 0x20ffffff); /* sn & 3, ci & 0xffffff */
	CHECK_EQ(softhca_cq_arm_word(0xffffffff, false, 0xffffffff), 0x30ffffff);

	db = softhca_cq_doorbell(softhca_cq_arm_word(1, true, 0x123456), 0xabc);
	CHECK_EQ(db, 0x1112345600000abcull);
	db = htobe64(db);
	/* as stored at SOFTHCA_UAR_CQ_DB_OFFSET: arm word, then CQN, both BE */
	CHECK_BYTES(&db, uar_bytes, 8);
	CHECK_EQ(softhca_cq_doorbell(0, 0xff000abc), 0xabc);	/* 24-bit CQN */

	/* the same arm word in the CQ doorbell record */
	{
		struct softhca_cq_dbr dbr = { 0, 0 };

		dbr.arm = htobe32(softhca_cq_arm_word(1, true, 0x123456));
		dbr.set_ci = htobe32(softhca_cq_ci_value(0x1000005));
		CHECK_BYTES((uint8_t *)&dbr + 4, uar_bytes, 4);
		CHECK_EQ(((uint8_t *)&dbr)[3], 0x05);
		CHECK_EQ(((uint8_t *)&dbr)[0], 0x00);
	}
}

/*
 * CQ cleaning: a ring of cnt CQEs where indexes [first, first + n) were
 * written by the HCA (owner bit of their lap, opcode REQ) for qpns[i], with
 * tag i + 1 in byte_cnt; every other slot INVALID with a stale owner bit.
 */
static struct softhca_cqe *clean_ring(uint32_t cnt, uint32_t first,
				      const uint32_t *qpns, uint32_t n)
{
	struct softhca_cqe *ring = aligned_alloc(64, cnt * sizeof(*ring));

	if (!ring)
		exit(2);
	for (uint32_t s = 0; s < cnt; s++) {
		memset(&ring[s], 0, sizeof(ring[s]));
		/* last lap's owner for the first lap's index: stale */
		ring[s].op_own = SOFTHCA_CQE_INVALID << 4 |
				 (softhca_owner_of(first, cnt) ^ 1);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct softhca_cqe *c = &ring[softhca_ring_slot(first + i, cnt)];

		c->sop_drop_qpn = htobe32(SOFTHCA_OPCODE_SEND << 24 | qpns[i]);
		c->byte_cnt = htobe32(i + 1);
		c->op_own = SOFTHCA_CQE_REQ << 4 | softhca_owner_of(first + i, cnt);
	}
	return ring;
}

/* The tags the consumer sees from ci on, until the first CQE not ready. */
static uint32_t clean_read(const struct softhca_cqe *ring, uint32_t cnt,
			   uint32_t ci, uint32_t *tags)
{
	uint32_t n = 0;
	const struct softhca_cqe *c;

	while (n < cnt && (c = softhca_cqe_get_sw(ring, ci + n, cnt)))
		tags[n++] = be32toh(c->byte_cnt);
	return n;
}

static void cq_compact_removes_one_qp(void)
{
	/* 8 CQEs at 5..10 in a ring of 8: the run wraps */
	static const uint32_t qpns[] = { 0xa, 0xb, 0xa, 0xc, 0xa, 0xb };
	static const uint32_t want[] = { 2, 4, 6 };
	struct softhca_cqe *ring = clean_ring(8, 5, qpns, 6);
	uint32_t tags[8];

	CHECK_EQ(softhca_cq_compact(ring, 8, 5, 0xa), 3);
	/* consumer at 5 + 3: B, C, B in their order, then nothing */
	CHECK_EQ(clean_read(ring, 8, 8, tags), 3);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(tags[i], want[i]);
	/* owner bits are the ones of the slots' laps: 8..10 lap 1 */
	for (uint32_t i = 8; i < 11; i++) {
		CHECK_EQ(ring[i & 7].op_own & 1, 1);
		CHECK_EQ(softhca_cqe_qpn(&ring[i & 7]) == 0xa, 0);
	}
	/* the slot after the run still belongs to the HCA */
	CHECK(!softhca_cqe_get_sw(ring, 11, 8));
	free(ring);
}

static void cq_compact_no_match_and_all_match(void)
{
	static const uint32_t qpns[] = { 1, 2, 3, 4 };
	static const uint32_t same[] = { 7, 7, 0x1000007, 7 };
	struct softhca_cqe *ring = clean_ring(4, 2, qpns, 4);
	struct softhca_cqe *copy = aligned_alloc(64, 4 * sizeof(*copy));
	uint32_t tags[4];

	if (!copy)
		exit(2);
	memcpy(copy, ring, 4 * sizeof(*copy));
	/* nothing to remove: not a byte changes; full ring: scan stops */
	CHECK_EQ(softhca_cq_compact(ring, 4, 2, 9), 0);
	CHECK(!memcmp(copy, ring, 4 * sizeof(*copy)));
	CHECK_EQ(clean_read(ring, 4, 2, tags), 4);
	free(ring);

	/* every ready CQE is the QP's (QPN compared on 24 bits): all go;
	 * same[2] is 0x1000007, whose CQE carries 7 as well */
	ring = clean_ring(4, 0, same, 4);
	CHECK_EQ(softhca_cq_compact(ring, 4, 0, 7), 4);
	CHECK_EQ(clean_read(ring, 4, 4, tags), 0);
	free(ring);

	/* an empty run */
	ring = clean_ring(4, 3, qpns, 0);
	CHECK_EQ(softhca_cq_compact(ring, 4, 3, 1), 0);
	free(ring);
	free(copy);
}

static const struct tap_test tests[] = {
	{ "owner_bit_single_cases", owner_bit_single_cases },
	{ "owner_bit_over_ring_laps", owner_bit_over_ring_laps },
	{ "every_syndrome_status", every_syndrome_status },
	{ "error_cqes_to_wc", error_cqes_to_wc },
	{ "cqe_timestamps", cqe_timestamps },
	{ "requester_cqes_to_wc", requester_cqes_to_wc },
	{ "responder_cqes_to_wc", responder_cqes_to_wc },
	{ "cqe_retires_only_outstanding_wrs", cqe_retires_only_outstanding_wrs },
	{ "unknown_cqe_opcodes", unknown_cqe_opcodes },
	{ "cqe_kinds_match_the_opcode_table", cqe_kinds_match_the_opcode_table },
	{ "datagram_cqe_fields", datagram_cqe_fields },
	{ "wc_to_ibv_fields", wc_to_ibv_fields },
	{ "arm_word_and_doorbell", arm_word_and_doorbell },
	{ "cq_compact_removes_one_qp", cq_compact_removes_one_qp },
	{ "cq_compact_no_match_and_all_match", cq_compact_no_match_and_all_match },
};

TAP_MAIN(tests)
