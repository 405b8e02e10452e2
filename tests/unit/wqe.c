// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of the WQE builder the provider and the kernel share
 * (<rdma/softhca-wqe.h>), the opcode table (<rdma/softhca-opcodes.h>) and
 * the provider's ring arithmetic (user/ring.h): the exact bytes of every
 * segment for known inputs (expected arrays written out by hand,
 * big-endian), whole WQEs of every opcode from a WR descriptor, DS/WQEBB
 * accounting with zero-length SGEs, wrap-around at the end of the SQ ring
 * with guard bytes on both sides, max_inline and the other WRs a QP cannot
 * take (nothing written), the receive sentinel, signatures, the overflow
 * check and the table's rows and WR map; the datagram transport: the
 * address vector of an address handle, the datagram segment, UD WQEs
 * (AV, then data or inline, wrapping) and what a UD QP refuses.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-wqe.h>

#include "../../user/ring.h"
#include "tap.h"

#define FILL	0xee
#define GUARD	64

/* A ring of size bytes inside an allocation with GUARD bytes either side,
 * everything FILL.
 */
static struct softhca_ring ring_new(uint32_t size)
{
	uint8_t *base = aligned_alloc(64, GUARD + size + GUARD);

	if (!base) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(base, FILL, GUARD + size + GUARD);
	return (struct softhca_ring){ .buf = base + GUARD, .size = size };
}

static void ring_free(struct softhca_ring *r)
{
	free(r->buf - GUARD);
}

/* Bytes [from, to) of the ring (to may be r->size + GUARD, from may be
 * -GUARD) still hold FILL.
 */
static int untouched(const struct softhca_ring *r, long from, long to)
{
	for (long i = from; i < to; i++)
		if (r->buf[i] != FILL) {
			printf("# byte %ld touched: 0x%02x\n", i, r->buf[i]);
			return 0;
		}
	return 1;
}

static void ctrl_segment_bytes(void)
{
	static const uint8_t want1[16] = {
		0x00, 0x12, 0x34, 0x0b,		/* opmod 0, idx 0x1234, SEND_IMM */
		0xab, 0xcd, 0xef, 0x03,		/* qpn 0xabcdef, ds 3 */
		0x00, 0x00, 0x00, 0x0a,		/* signature, rsvd, CQ_UPDATE|SE */
		0xde, 0xad, 0xbe, 0xef,		/* imm, network order */
	};
	static const uint8_t want2[16] = {
		0x5a, 0xff, 0xff, 0x12,		/* opmod 0x5a, idx 0xffff, ATOMIC_FA */
		0x12, 0x34, 0x56, 0x3f,		/* qpn, ds: masked to 24 and 6 bits */
		0x00, 0x00, 0x00, 0x80,		/* fence */
		0x00, 0x00, 0x00, 0x00,
	};
	struct softhca_wqe_ctrl_seg c;

	memset(&c, FILL, sizeof(c));
	softhca_set_ctrl_seg(&c, SOFTHCA_OPCODE_SEND_IMM, 0, 0x1234, 0xabcdef, 3,
			     SOFTHCA_WQE_CTRL_CQ_UPDATE | SOFTHCA_WQE_CTRL_SOLICITED,
			     htobe32(0xdeadbeef));
	CHECK_BYTES(&c, want1, 16);

	memset(&c, FILL, sizeof(c));
	softhca_set_ctrl_seg(&c, SOFTHCA_OPCODE_ATOMIC_FA, 0x5a, 0xffff, 0x01123456,
			     0xff, SOFTHCA_FENCE_MODE_SMALL_AND_FENCE, 0);
	CHECK_BYTES(&c, want2, 16);
}

static void raddr_atomic_data_segment_bytes(void)
{
	static const uint8_t raddr[16] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t atomic[16] = {
		0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44,
		0x55, 0x55, 0x66, 0x66, 0x77, 0x77, 0x88, 0x88,
	};
	static const uint8_t data[16] = {
		0x00, 0x00, 0x10, 0x00, 0x00, 0xab, 0xcd, 0xef,
		0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
	};
	static const uint8_t sentinel[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	struct softhca_wqe_raddr_seg r;
	struct softhca_wqe_atomic_seg a;
	struct softhca_wqe_data_seg d;

	memset(&r, FILL, sizeof(r));
	softhca_set_raddr_seg(&r, 0x0102030405060708ull, 0x11223344);
	CHECK_BYTES(&r, raddr, 16);

	memset(&a, FILL, sizeof(a));
	softhca_set_atomic_seg(&a, 0x1111222233334444ull, 0x5555666677778888ull);
	CHECK_BYTES(&a, atomic, 16);

	memset(&d, FILL, sizeof(d));
	softhca_set_data_seg(&d, 0x1000, 0xabcdef, 0xfedcba9876543210ull);
	CHECK_BYTES(&d, data, 16);

	memset(&d, FILL, sizeof(d));
	softhca_set_sentinel_seg(&d);
	CHECK_BYTES(&d, sentinel, 16);
}

static void data_segs_skip_zero_length(void)
{
	static const struct softhca_sge sg[] = {
		{ .addr = 0x1000, .length = 0x10, .lkey = 0x01 },
		{ .addr = 0x2000, .length = 0,    .lkey = 0x02 },
		{ .addr = 0x3000, .length = 0x20, .lkey = 0x03 },
		{ .addr = 0x4000, .length = 0,    .lkey = 0x04 },
		{ .addr = 0x5000, .length = 1,    .lkey = 0x05 },
	};
	static const uint8_t want[48] = {
		0, 0, 0, 0x10, 0, 0, 0, 0x01, 0, 0, 0, 0, 0, 0, 0x10, 0x00,
		0, 0, 0, 0x20, 0, 0, 0, 0x03, 0, 0, 0, 0, 0, 0, 0x30, 0x00,
		0, 0, 0, 0x01, 0, 0, 0, 0x05, 0, 0, 0, 0, 0, 0, 0x50, 0x00,
	};
	struct softhca_ring r = ring_new(256);
	uint32_t ds;

	/* SEND in WQEBB 1: ctrl at 64, data from 80. */
	ds = softhca_set_data_segs(&r, 80, sg, 5);
	CHECK_EQ(ds, 3);
	CHECK_BYTES(r.buf + 80, want, 48);
	CHECK(untouched(&r, -GUARD, 80));
	CHECK(untouched(&r, 128, 256 + GUARD));
	/* ctrl + 3 DS = 64 bytes: one WQEBB; with a raddr seg, two. */
	CHECK_EQ(softhca_ds_to_wqebbs(1 + ds), 1);
	CHECK_EQ(softhca_ds_to_wqebbs(1 + 1 + ds), 2);

	/* All zero-length: no segment at all. */
	CHECK_EQ(softhca_set_data_segs(&r, 80, &sg[1], 1), 0);
	CHECK_EQ(softhca_set_data_segs(&r, 80, sg, 0), 0);
	CHECK(untouched(&r, 128, 256 + GUARD));
	ring_free(&r);
}

static void data_segs_wrap_at_ring_end(void)
{
	struct softhca_sge sg[5];
	struct softhca_ring r = ring_new(256);
	uint32_t ds;

	for (int i = 0; i < 5; i++)
		sg[i] = (struct softhca_sge){ .addr = 0x100u * (i + 1),
					  .length = i == 2 ? 0 : 8, .lkey = i + 1 };
	/* RDMA WRITE in the last WQEBB: ctrl 192, raddr 208, data from 224. */
	ds = softhca_set_data_segs(&r, 224, sg, 5);
	CHECK_EQ(ds, 4);
	CHECK_EQ(be32toh(((struct softhca_wqe_data_seg *)(r.buf + 224))->lkey), 1);
	CHECK_EQ(be32toh(((struct softhca_wqe_data_seg *)(r.buf + 240))->lkey), 2);
	CHECK_EQ(be32toh(((struct softhca_wqe_data_seg *)(r.buf + 0))->lkey), 4);
	CHECK_EQ(be64toh(((struct softhca_wqe_data_seg *)(r.buf + 16))->addr), 0x500);
	CHECK(untouched(&r, 32, 224));
	CHECK(untouched(&r, 256, 256 + GUARD));
	CHECK(untouched(&r, -GUARD, 0));
	/* ctrl + raddr + 4 DS = 6 DS: two WQEBBs, the second is WQEBB 0. */
	CHECK_EQ(softhca_ds_to_wqebbs(2 + ds), 2);
	ring_free(&r);
}

/* The inline segment of @sg at @off, its length computed as the builder does. */
static uint32_t put_inline(const struct softhca_ring *r, uint32_t off,
			   const struct softhca_sge *sg, uint32_t n)
{
	return softhca_set_inline_data(r, off, sg, n,
				       (uint32_t)softhca_inline_len(sg, n));
}

static void inline_no_wrap(void)
{
	static const char hello[] = "hello", world[] = "world!!", x[] = "x";
	struct softhca_sge sg[3] = {
		{ .addr = (uintptr_t)hello, .length = 5 },
		{ .addr = (uintptr_t)x, .length = 0 },
		{ .addr = (uintptr_t)world, .length = 7 },
	};
	static const uint8_t want12[16] = {
		0x80, 0x00, 0x00, 0x0c,
		'h', 'e', 'l', 'l', 'o', 'w', 'o', 'r', 'l', 'd', '!', '!',
	};
	static const uint8_t want13[32] = {
		0x80, 0x00, 0x00, 0x0d,
		'h', 'e', 'l', 'l', 'o', 'x', 'w', 'o', 'r', 'l', 'd', '!', '!',
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	struct softhca_ring r = ring_new(256);

	/* 4 + 12 bytes: exactly one DS, nothing after it touched. */
	CHECK_EQ(put_inline(&r, 16, sg, 3), 1);
	CHECK_BYTES(r.buf + 16, want12, 16);
	CHECK(untouched(&r, -GUARD, 16));
	CHECK(untouched(&r, 32, 256 + GUARD));

	/* 4 + 13 bytes: two DS, the rest of the second zero-padded. */
	sg[1].length = 1;
	CHECK_EQ(put_inline(&r, 16, sg, 3), 2);
	CHECK_BYTES(r.buf + 16, want13, 32);
	CHECK(untouched(&r, 48, 256 + GUARD));
	ring_free(&r);
}

static void inline_wraps_at_ring_end(void)
{
	uint8_t src[100];
	struct softhca_ring r = ring_new(256);
	struct softhca_sge sg[2];

	for (int i = 0; i < 100; i++)
		src[i] = (uint8_t)(i + 1);
	/* Split inside an SGE: 30 + 70 bytes, header at 208 (SEND in the last
	 * WQEBB): 212..255 gets 44 bytes, 0..55 the other 56, 56..63 padding.
	 */
	sg[0] = (struct softhca_sge){ .addr = (uintptr_t)src, .length = 30 };
	sg[1] = (struct softhca_sge){ .addr = (uintptr_t)(src + 30), .length = 70 };
	CHECK_EQ(put_inline(&r, 208, sg, 2), 7);
	CHECK_EQ(be32toh(*(__be32 *)(r.buf + 208)), 0x80000000u | 100);
	CHECK_BYTES(r.buf + 212, src, 44);
	CHECK_BYTES(r.buf + 0, src + 44, 56);
	for (int i = 56; i < 64; i++)
		CHECK_EQ(r.buf[i], 0);
	CHECK(untouched(&r, 64, 208));
	CHECK(untouched(&r, 256, 256 + GUARD));
	CHECK(untouched(&r, -GUARD, 0));
	ring_free(&r);

	/* Split exactly between SGEs: 44 bytes reach the end, 20 start at 0. */
	r = ring_new(256);
	sg[0].length = 44;
	sg[1] = (struct softhca_sge){ .addr = (uintptr_t)(src + 44), .length = 20 };
	CHECK_EQ(put_inline(&r, 208, sg, 2), 5);
	CHECK_BYTES(r.buf + 212, src, 44);
	CHECK_BYTES(r.buf + 0, src + 44, 20);
	for (int i = 20; i < 32; i++)
		CHECK_EQ(r.buf[i], 0);
	CHECK(untouched(&r, 32, 208));
	CHECK(untouched(&r, 256, 256 + GUARD));
	ring_free(&r);

	/* An offset at the very end means the start. */
	r = ring_new(256);
	sg[0].length = 4;
	CHECK_EQ(put_inline(&r, 256, sg, 1), 1);
	CHECK_EQ(be32toh(*(__be32 *)r.buf), 0x80000004u);
	CHECK_BYTES(r.buf + 4, src, 4);
	CHECK(untouched(&r, 16, 256 + GUARD));
	ring_free(&r);
}

/* An SQ of 4 WQEBBs (256 bytes) for QPN 0x42, WQEs up to 2 WQEBBs. */
static struct softhca_sq_fmt sq_new(uint32_t max_inline)
{
	return (struct softhca_sq_fmt){ .ring = ring_new(256), .qpn = 0x42,
					.tp = SOFTHCA_TP_RC,
					.max_wqebbs = 2,
					.max_inline = max_inline };
}

/* A signaled WR descriptor of @opcode over @sg, every operand set. */
static struct softhca_send_wr wr_of(int opcode, const struct softhca_sge *sg,
				    uint32_t n)
{
	return (struct softhca_send_wr){
		.op = softhca_opcode_info((uint32_t)opcode),
		.fm_ce_se = SOFTHCA_WQE_CTRL_CQ_UPDATE,
		.imm = htobe32(0xcafef00d), .remote_addr = 0x1122334455667788ull,
		.rkey = 0xabcd, .swap_add = 0x1111222233334444ull,
		.compare = 0x5555666677778888ull, .sg = sg, .num_sge = n,
	};
}

static void inline_max_and_empty(void)
{
	static uint8_t src[65];
	struct softhca_sge sg[2] = {
		{ .addr = (uintptr_t)src, .length = 60 },
		{ .addr = (uintptr_t)(src + 60), .length = 5 },
	};
	struct softhca_sq_fmt sq = sq_new(64);
	struct softhca_send_wr wr = wr_of(SOFTHCA_OPCODE_SEND, sg, 2);

	wr.send_inline = 1;
	/* One byte beyond max_inline_data: ENOMEM (as mlx5), nothing written. */
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -ENOMEM);
	CHECK(untouched(&sq.ring, -GUARD, 256 + GUARD));

	/* Exactly max_inline: ctrl + 4 + 64 bytes -> 6 DS, 2 WQEBBs. */
	sg[1].length = 4;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 2);
	CHECK_EQ(be32toh(((struct softhca_wqe_ctrl_seg *)sq.ring.buf)->qpn_ds),
		 0x4206);
	CHECK(untouched(&sq.ring, 96, 256 + GUARD));
	ring_free(&sq.ring);

	/* An empty inline payload: ctrl alone, no inline segment. */
	sq = sq_new(64);
	sg[0].length = 0;
	sg[1].length = 0;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 1);
	CHECK_EQ(be32toh(((struct softhca_wqe_ctrl_seg *)sq.ring.buf)->qpn_ds),
		 0x4201);
	CHECK(untouched(&sq.ring, 16, 256 + GUARD));
	CHECK_EQ(softhca_inline_len(sg, 0), 0);
	CHECK_EQ(softhca_inline_ds(0), 0);
	CHECK_EQ(softhca_inline_ds(12), 1);
	CHECK_EQ(softhca_inline_ds(13), 2);
	ring_free(&sq.ring);
}

static void calc_sig_values(void)
{
	static const uint8_t a[] = { 0x01, 0x02, 0x04, 0x08 };
	static const uint8_t b[] = { 0xff };
	static const uint8_t c[] = { 0x12, 0x34, 0x12, 0x34 };

	CHECK_EQ(softhca_calc_sig(a, 4), 0xf0);
	CHECK_EQ(softhca_calc_sig(b, 1), 0x00);
	CHECK_EQ(softhca_calc_sig(c, 4), 0xff);
	CHECK_EQ(softhca_calc_sig(a, 0), 0xff);
}

static void send_wqe_signature_across_wrap(void)
{
	struct softhca_ring r = ring_new(256);
	uint8_t x = 0;

	memset(r.buf, 0, 256);
	/* 7 DS from 192: 64 bytes at 192..255, 48 at 0..47. */
	softhca_set_ctrl_seg((void *)(r.buf + 192), SOFTHCA_OPCODE_SEND, 0, 3, 1, 7,
			     SOFTHCA_WQE_CTRL_CQ_UPDATE, 0);
	r.buf[192 + 8] = 0x77;		/* a stale signature is ignored */
	r.buf[0] = 0x5a;		/* covered (wrapped part) */
	r.buf[48] = 0xa5;		/* just past the WQE: not covered */
	r.buf[191] = 0x3c;		/* just before it: not covered */
	/* ctrl bytes XOR: 03 ^ 0a ^ 01 ^ 07 ^ 08 = 07; ^ 5a = 5d; ~ = a2 */
	CHECK_EQ(softhca_sign_send_wqe(&r, 192), 0xa2);
	CHECK_EQ(r.buf[192 + 8], 0xa2);
	for (int i = 0; i < 7 * 16; i++)
		x ^= r.buf[(192 + i) % 256];
	CHECK_EQ(x, 0xff);		/* how the engine verifies it */
	CHECK(untouched(&r, 256, 256 + GUARD));
	ring_free(&r);
}

static void recv_wqe_sentinel(void)
{
	static const struct softhca_sge sg[] = {
		{ .addr = 0x1000, .length = 0x40, .lkey = 1 },
		{ .addr = 0x9000, .length = 0,    .lkey = 2 },
		{ .addr = 0x2000, .length = 0x80, .lkey = 3 },
	};
	static const uint8_t want[48] = {
		0, 0, 0, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0,
		0, 0, 0, 0x80, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0x20, 0,
		0, 0, 0, 0,    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,    0,
	};
	static const struct softhca_sge two[] = {
		{ .addr = 0x1000, .length = 0x40, .lkey = 1 },
		{ .addr = 0x2000, .length = 0x80, .lkey = 3 },
	};
	struct softhca_ring r = ring_new(256);

	/* stride 64 holds 4: two used, sentinel third, fourth untouched */
	CHECK_EQ(softhca_recv_max_gs(64, false), 4);
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 64, false, sg, 3, 5, 0), 2);
	CHECK_BYTES(r.buf, want, 48);
	CHECK(untouched(&r, 48, 256 + GUARD));

	/* stride 32 holds 2 */
	memset(r.buf, FILL, 256);
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 32, false, sg, 3, 5, 0), -EINVAL);
	CHECK(untouched(&r, -GUARD, 256 + GUARD));
	/* a zero-length and a used SGE: one segment, then the sentinel */
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 32, false, &sg[1], 2, 5, 0), 1);
	CHECK_BYTES(r.buf, want + 16, 16);
	CHECK_BYTES(r.buf + 16, want + 32, 16);
	CHECK(untouched(&r, 32, 256 + GUARD));
	/* both used: no sentinel, nothing past the stride */
	memset(r.buf, FILL, 256);
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 32, false, two, 2, 5, 0), 2);
	CHECK_BYTES(r.buf, want, 32);
	CHECK(untouched(&r, 32, 256 + GUARD));

	/* num_sge 0 (zero-capacity receive): the sentinel alone */
	memset(r.buf, FILL, 256);
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 64, false, sg, 0, 5, 0), 0);
	CHECK_BYTES(r.buf, want + 32, 16);
	CHECK(untouched(&r, 16, 256 + GUARD));
	ring_free(&r);
}

static void recv_wqe_signature(void)
{
	static const struct softhca_sge sg[] = {
		{ .addr = 0x0102030405060708ull, .length = 0x10, .lkey = 0x20 },
	};
	static const uint8_t want[64] = {
		0, 0, 0, 0, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0x10, 0, 0, 0, 0x20, 1, 2, 3, 4, 5, 6, 7, 8,
		0, 0, 0, 0,    0, 0, 1, 0,    0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	struct softhca_ring r = ring_new(256);
	uint8_t x = 0;

	/*
	 * XOR of the stride: 10 ^ 20 ^ (01..08 = 08) ^ 01 (sentinel lkey) = 39;
	 * QPN 0x000123: 01 ^ 23 = 22; idx 0x0004: 04. 39 ^ 22 ^ 04 = 1f, ~ = e0.
	 */
	CHECK_EQ(softhca_recv_max_gs(64, true), 3);
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 64, true, sg, 1, 0x123, 4), 1);
	CHECK_BYTES(r.buf, want, 64);
	CHECK(untouched(&r, 64, 256 + GUARD));
	for (int i = 0; i < 64; i++)
		x ^= r.buf[i];
	CHECK_EQ(x ^ 0x01 ^ 0x23 ^ 0x04, 0xff);
	/* Another index gives another signature. */
	CHECK_EQ(softhca_set_recv_wqe(r.buf, 64, true, sg, 1, 0x123, 5), 1);
	CHECK_EQ(r.buf[4], 0xe1);
	ring_free(&r);
}

static void wq_overflow_edges(void)
{
	CHECK(!softhca_wq_overflow(0, 0, 0, 8));	/* empty */
	CHECK(!softhca_wq_overflow(7, 0, 0, 8));	/* one slot left */
	CHECK(softhca_wq_overflow(8, 0, 0, 8));		/* full */
	CHECK(softhca_wq_overflow(7, 0, 1, 8));		/* full with this batch */
	CHECK(!softhca_wq_overflow(0, 0, 7, 8));
	CHECK(softhca_wq_overflow(0, 0, 8, 8));
	CHECK(!softhca_wq_overflow(12, 5, 0, 8));
	CHECK(softhca_wq_overflow(13, 5, 0, 8));
	/* free-running counters wrapped past 2^32 */
	CHECK(!softhca_wq_overflow(3, 0xfffffffdu, 1, 8));	/* 6 + 1 */
	CHECK(softhca_wq_overflow(3, 0xfffffffdu, 2, 8));	/* 6 + 2 */
	CHECK(softhca_wq_overflow(2, 0xfffffffau, 0, 8));	/* 8 */
	/* past the 16 bits the doorbell record carries */
	CHECK(!softhca_wq_overflow(0x10002, 0xfffe, 3, 8));	/* 4 + 3 */
	CHECK(softhca_wq_overflow(0x10002, 0xfffe, 4, 8));
	CHECK_EQ(softhca_wq_dbr_value(0x10002), 2);
	CHECK_EQ(softhca_wq_dbr_value(0xffff + 1), 0);
	/* more than 16 bits outstanding (a WQ deeper than 64K entries) */
	CHECK(!softhca_wq_overflow(0x12345, 0x2345, 0, 0x20000));
	CHECK(softhca_wq_overflow(0x12345, 0x2345, 0, 0x10000));
	/* a tail ahead of head (corrupt) never looks like room */
	CHECK(softhca_wq_overflow(0, 1, 0, 8));
	CHECK(softhca_wq_overflow(0, 1, 1, 8));
}

static void ring_arithmetic(void)
{
	struct softhca_ring r = { .buf = NULL, .size = 256 };

	CHECK(softhca_is_pow2(1) && softhca_is_pow2(64) && softhca_is_pow2(1u << 31));
	CHECK(!softhca_is_pow2(0) && !softhca_is_pow2(96) && !softhca_is_pow2(0xffffffffu));
	CHECK_EQ(softhca_ring_slot(0xffffffffu, 8), 7);
	CHECK_EQ(softhca_ring_slot(0xffffffffu + 1u, 8), 0);
	CHECK_EQ(softhca_sq_wqe_offset(0x10005, 8), 5 * 64);
	CHECK_EQ(softhca_sq_wqe_offset(8, 8), 0);
	CHECK_EQ(softhca_ring_to_end(&r, 208), 48);
	CHECK_EQ(softhca_ring_to_end(&r, 0), 256);
	CHECK_EQ(softhca_ring_advance(&r, 240, 16), 0);
	CHECK_EQ(softhca_ring_advance(&r, 250, 10), 4);
	CHECK_EQ(softhca_ds_to_wqebbs(0), 0);
	CHECK_EQ(softhca_ds_to_wqebbs(1), 1);
	CHECK_EQ(softhca_ds_to_wqebbs(4), 1);
	CHECK_EQ(softhca_ds_to_wqebbs(5), 2);
	CHECK_EQ(softhca_ds_to_wqebbs(8), 2);
	CHECK_EQ(softhca_ds_to_wqebbs(9), 3);
	CHECK_EQ(softhca_ds_to_wqebbs(63), 16);
	CHECK_EQ(softhca_cq_ci_value(0x1234567), 0x234567);
	CHECK_EQ(softhca_owner_of(3, 4), 0);
	CHECK_EQ(softhca_owner_of(4, 4), 1);
	CHECK_EQ(softhca_owner_of(7, 4), 1);
	CHECK_EQ(softhca_owner_of(8, 4), 0);
	CHECK_EQ(softhca_owner_of(0xfffffffcu, 4), 1);
}

static void opcode_and_flags(void)
{
	CHECK_EQ(softhca_wr_opcode(IBV_WR_RDMA_WRITE), 0x08);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_RDMA_WRITE_WITH_IMM), 0x09);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_SEND), 0x0a);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_SEND_WITH_IMM), 0x0b);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_RDMA_READ), 0x10);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_ATOMIC_CMP_AND_SWP), 0x11);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_ATOMIC_FETCH_AND_ADD), 0x12);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_LOCAL_INV), 0x1b);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_BIND_MW), 0x18);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_DRIVER1), -1);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_SEND_WITH_INV), 0x01);
	CHECK_EQ(softhca_wr_opcode(0x20 /* IB_WR_REG_MR */), 0x25);
	CHECK_EQ(softhca_wr_opcode(0x21), -1);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_TSO), -1);
	CHECK_EQ(softhca_wr_opcode(99), -1);
	CHECK_EQ(softhca_wr_opcode(-1), -1);	/* never NOP's "no WR" */

	CHECK_EQ(softhca_enc_fm_ce_se(0, 0, 0), 0x00);
	CHECK_EQ(softhca_enc_fm_ce_se(1, 0, 0), 0x08);
	CHECK_EQ(softhca_enc_fm_ce_se(0, 1, 0), 0x02);
	CHECK_EQ(softhca_enc_fm_ce_se(0, 0, 1), 0x80);
	CHECK_EQ(softhca_enc_fm_ce_se(1, 1, 1), 0x8a);
}

/* The rows of the table, spelled out: what each opcode carries and needs. */
static void opcode_table_rows(void)
{
	static const struct {
		uint8_t opcode;
		const char *name;
		int wr;
		uint8_t segs, flags, local, remote, resp_cqe;
		int wc;
		uint8_t mkop;
	} rows[] = {
#define R SOFTHCA_SEG_RADDR
#define A SOFTHCA_SEG_ATOMIC
#define D SOFTHCA_SEG_DATA
#define I SOFTHCA_SEG_INLINE
		{ 0x00, "NOP", -1, 0, 0, 0, 0, SOFTHCA_CQE_INVALID, -1, 0 },
		{ 0x01, "SEND_INV", IBV_WR_SEND_WITH_INV, D | I,
		  SOFTHCA_OPF_RECV, SOFTHCA_ACCESS_LOCAL_READ, 0,
		  SOFTHCA_CQE_RESP_SEND_INV, IBV_WC_SEND, SOFTHCA_MKOP_RINV },
		{ 0x1b, "LOCAL_INV", IBV_WR_LOCAL_INV, 0, 0, 0, 0,
		  SOFTHCA_CQE_INVALID, IBV_WC_LOCAL_INV, SOFTHCA_MKOP_LINV },
		{ 0x18, "BIND_MW", IBV_WR_BIND_MW, 0, 0, 0, 0,
		  SOFTHCA_CQE_INVALID, IBV_WC_BIND_MW, SOFTHCA_MKOP_BIND },
		{ 0x25, "UMR", 0x20 /* IB_WR_REG_MR */, 0, 0, 0, 0,
		  SOFTHCA_CQE_INVALID, 8 /* IB_WC_REG_MR */, SOFTHCA_MKOP_REG },
		{ 0x08, "RDMA_WRITE", IBV_WR_RDMA_WRITE, R | D | I, 0,
		  SOFTHCA_ACCESS_LOCAL_READ, SOFTHCA_ACCESS_REMOTE_WRITE,
		  SOFTHCA_CQE_INVALID, IBV_WC_RDMA_WRITE, 0 },
		{ 0x09, "RDMA_WRITE_IMM", IBV_WR_RDMA_WRITE_WITH_IMM, R | D | I,
		  SOFTHCA_OPF_IMM | SOFTHCA_OPF_RECV, SOFTHCA_ACCESS_LOCAL_READ,
		  SOFTHCA_ACCESS_REMOTE_WRITE, SOFTHCA_CQE_RESP_WR_IMM,
		  IBV_WC_RDMA_WRITE, 0 },
		{ 0x0a, "SEND", IBV_WR_SEND, D | I, SOFTHCA_OPF_RECV,
		  SOFTHCA_ACCESS_LOCAL_READ, 0, SOFTHCA_CQE_RESP_SEND,
		  IBV_WC_SEND, 0 },
		{ 0x0b, "SEND_IMM", IBV_WR_SEND_WITH_IMM, D | I,
		  SOFTHCA_OPF_IMM | SOFTHCA_OPF_RECV, SOFTHCA_ACCESS_LOCAL_READ,
		  0, SOFTHCA_CQE_RESP_SEND_IMM, IBV_WC_SEND, 0 },
		{ 0x10, "RDMA_READ", IBV_WR_RDMA_READ, R | D, 0,
		  SOFTHCA_ACCESS_LOCAL_WRITE, SOFTHCA_ACCESS_REMOTE_READ,
		  SOFTHCA_CQE_INVALID, IBV_WC_RDMA_READ, 0 },
		{ 0x11, "ATOMIC_CS", IBV_WR_ATOMIC_CMP_AND_SWP, R | A | D,
		  SOFTHCA_OPF_COMPARE, SOFTHCA_ACCESS_LOCAL_WRITE,
		  SOFTHCA_ACCESS_REMOTE_ATOMIC, SOFTHCA_CQE_INVALID,
		  IBV_WC_COMP_SWAP, 0 },
		{ 0x12, "ATOMIC_FA", IBV_WR_ATOMIC_FETCH_AND_ADD, R | A | D, 0,
		  SOFTHCA_ACCESS_LOCAL_WRITE, SOFTHCA_ACCESS_REMOTE_ATOMIC,
		  SOFTHCA_CQE_INVALID, IBV_WC_FETCH_ADD, 0 },
#undef R
#undef A
#undef D
#undef I
	};
	unsigned int known = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct softhca_opcode_info *op =
			softhca_opcode_info(rows[i].opcode);

		CHECK(op != NULL);
		if (!op)
			continue;
		printf("# 0x%02x %s\n", op->opcode, op->name);
		CHECK(!strcmp(op->name, rows[i].name));
		CHECK(!strcmp(softhca_opcode_name(rows[i].opcode), rows[i].name));
		CHECK_EQ(op->opcode, rows[i].opcode);
		CHECK_EQ(op->wr, rows[i].wr);
		CHECK_EQ(op->segs, rows[i].segs);
		CHECK_EQ(op->flags, rows[i].flags);
		CHECK_EQ(op->local_access, rows[i].local);
		CHECK_EQ(op->remote_access, rows[i].remote);
		CHECK_EQ(op->resp_cqe, rows[i].resp_cqe);
		CHECK_EQ(op->wc_opcode, rows[i].wc);
		CHECK_EQ(op->mkop, rows[i].mkop);
		CHECK_EQ(softhca_opcode_is_local(op),
			 rows[i].opcode == 0 || rows[i].opcode == 0x18 ||
			 rows[i].opcode == 0x1b || rows[i].opcode == 0x25);
		CHECK_EQ(softhca_opcode_has_imm(op),
			 !!(rows[i].flags & SOFTHCA_OPF_IMM) ||
			 rows[i].mkop == SOFTHCA_MKOP_LINV ||
			 rows[i].mkop == SOFTHCA_MKOP_RINV);
		/*
		 * Datagram QPs post SENDs only; UC no READ, atomic,
		 * SEND_WITH_INV or UMR; every opcode runs on RC and on an
		 * XRC initiator.
		 */
		CHECK_EQ(op->tp, SOFTHCA_TP_RC | SOFTHCA_TP_XRC |
			 (rows[i].wr == IBV_WR_SEND ||
			  rows[i].wr == IBV_WR_SEND_WITH_IMM ? SOFTHCA_TP_UD : 0) |
			 (rows[i].opcode == 0x01 || rows[i].opcode == 0x10 ||
			  rows[i].opcode == 0x11 || rows[i].opcode == 0x12 ||
			  rows[i].opcode == 0x25 ? 0 : SOFTHCA_TP_UC));
		CHECK(softhca_opcode_on(rows[i].opcode, SOFTHCA_TP_RC) == op);
		CHECK(softhca_opcode_on(rows[i].opcode, SOFTHCA_TP_XRC) == op);
		CHECK((softhca_opcode_on(rows[i].opcode, SOFTHCA_TP_UD) == op) ==
		      !!(op->tp & SOFTHCA_TP_UD));
		if (rows[i].wr >= 0)
			CHECK_EQ(softhca_wr_opcode(rows[i].wr), rows[i].opcode);
	}
	/* No other opcode, in the table or beyond it. */
	for (uint32_t o = 0; o < 0x200; o++)
		known += softhca_opcode_info(o) != NULL;
	CHECK_EQ(known, sizeof(rows) / sizeof(rows[0]));
	CHECK(!softhca_opcode_info(0x02));
	CHECK(!softhca_opcode_info(SOFTHCA_OPCODE_CNT));
	CHECK(!softhca_opcode_on(0x02, SOFTHCA_TP_RC | SOFTHCA_TP_UD));
	CHECK(!softhca_opcode_on(SOFTHCA_OPCODE_CNT, SOFTHCA_TP_RC));
	CHECK(!strcmp(softhca_opcode_name(0x02), "unknown"));
}

/* A whole RDMA_WRITE_WITH_IMM WQE as post_send builds it. */
static void full_write_imm_wqe(void)
{
	static const struct softhca_sge sg[] = {
		{ .addr = 0x7f0000001000ull, .length = 0x100, .lkey = 0x1234 },
		{ .addr = 0x7f0000002000ull, .length = 0,     .lkey = 0x1234 },
		{ .addr = 0x7f0000003000ull, .length = 0x200, .lkey = 0x5678 },
	};
	static const uint8_t want[64] = {
		/* ctrl: idx 5, RDMA_WRITE_IMM; qpn 0x42, ds 4; signaled; imm */
		0x00, 0x00, 0x05, 0x09, 0x00, 0x00, 0x42, 0x04,
		0x00, 0x00, 0x00, 0x08, 0xca, 0xfe, 0xf0, 0x0d,
		/* raddr 0x1122334455667788, rkey 0xabcd */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x00,
		/* data 0x100 @ 0x7f0000001000 */
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
		/* data 0x200 @ 0x7f0000003000 */
		0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x56, 0x78,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x30, 0x00,
	};
	struct softhca_sq_fmt sq = sq_new(64);
	struct softhca_send_wr wr =
		wr_of(softhca_wr_opcode(IBV_WR_RDMA_WRITE_WITH_IMM), sg, 3);
	uint32_t cur_post = 5;

	CHECK_EQ(softhca_sq_wqe_offset(cur_post, 4), 64);
	cur_post += softhca_build_send_wqe(&sq, cur_post, &wr);
	CHECK_EQ(cur_post, 6);
	CHECK_BYTES(sq.ring.buf + 64, want, 64);
	CHECK(untouched(&sq.ring, -GUARD, 64));
	CHECK(untouched(&sq.ring, 128, 256 + GUARD));
	ring_free(&sq.ring);
}

/* The WQE builder, one opcode at a time, against bytes written by hand. */
static void build_every_opcode(void)
{
	static const struct softhca_sge sg[] = {
		{ .addr = 0x7f0000001000ull, .length = 0x100, .lkey = 0x1234 },
		{ .addr = 0x7f0000002000ull, .length = 0,     .lkey = 0x1234 },
	};
	static const uint8_t raddr[16] = {
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t data[16] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	static const uint8_t atomic_cs[32] = {
		0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44,
		0x55, 0x55, 0x66, 0x66, 0x77, 0x77, 0x88, 0x88,
		/* the one data pointer: 8 bytes, whatever the SGE's length */
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	static const struct {
		uint8_t opcode;
		uint8_t ds;		/* ctrl included */
		bool raddr, atomic, imm, fa;
	} cases[] = {
		{ SOFTHCA_OPCODE_SEND, 2, false, false, false, false },
		{ SOFTHCA_OPCODE_SEND_IMM, 2, false, false, true, false },
		{ SOFTHCA_OPCODE_RDMA_WRITE, 3, true, false, false, false },
		{ SOFTHCA_OPCODE_RDMA_WRITE_IMM, 3, true, false, true, false },
		{ SOFTHCA_OPCODE_RDMA_READ, 3, true, false, false, false },
		{ SOFTHCA_OPCODE_ATOMIC_CS, 4, true, true, false, false },
		{ SOFTHCA_OPCODE_ATOMIC_FA, 4, true, true, false, true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct softhca_sq_fmt sq = sq_new(64);
		struct softhca_send_wr wr =
			wr_of(cases[i].opcode, sg, cases[i].atomic ? 1 : 2);
		const uint8_t *w = sq.ring.buf + 64;	/* cur_post 5: WQEBB 1 */
		uint8_t want_ctrl[16] = {
			0x00, 0x00, 0x05, cases[i].opcode,
			0x00, 0x00, 0x42, cases[i].ds,
			0x00, 0x00, 0x00, 0x08,
		};

		/* The immediate goes out only for the _IMM opcodes. */
		if (cases[i].imm)
			memcpy(want_ctrl + 12, "\xca\xfe\xf0\x0d", 4);
		/* READ and atomics ignore a request for inline. */
		wr.send_inline = cases[i].atomic ||
				 cases[i].opcode == SOFTHCA_OPCODE_RDMA_READ;
		printf("# %s\n", wr.op->name);
		CHECK_EQ(softhca_build_send_wqe(&sq, 5, &wr), 1);
		CHECK_BYTES(w, want_ctrl, 16);
		if (cases[i].raddr)
			CHECK_BYTES(w + 16, raddr, 16);
		if (cases[i].atomic) {
			CHECK_BYTES(w + 32, atomic_cs, 8);
			/* FA's compare is 0, whatever the descriptor held. */
			if (cases[i].fa)
				CHECK_EQ(be64toh(*(__be64 *)(w + 40)), 0);
			else
				CHECK_BYTES(w + 40, atomic_cs + 8, 8);
			CHECK_BYTES(w + 48, atomic_cs + 16, 16);
		} else {
			CHECK_BYTES(w + 16 * (cases[i].ds - 1), data, 16);
		}
		CHECK(untouched(&sq.ring, -GUARD, 64));
		CHECK(untouched(&sq.ring, 64 + 16 * cases[i].ds, 256 + GUARD));
		ring_free(&sq.ring);
	}
}

/* WRs the QP cannot take fail with nothing written. */
static void build_refuses_what_the_qp_cannot_take(void)
{
	struct softhca_sge sg[8], many[64];
	struct softhca_sq_fmt sq = sq_new(64);
	struct softhca_send_wr wr;

	for (int i = 0; i < 8; i++)
		sg[i] = (struct softhca_sge){ .addr = 0x1000u * i, .length = 8,
					      .lkey = 1 };
	/* Atomics take exactly one SGE. */
	wr = wr_of(SOFTHCA_OPCODE_ATOMIC_CS, sg, 2);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	wr.num_sge = 0;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	/* ctrl + raddr + 7 pointers = 9 DS: 3 WQEBBs, the QP has 2. */
	wr = wr_of(SOFTHCA_OPCODE_RDMA_WRITE, sg, 7);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	CHECK(untouched(&sq.ring, -GUARD, 256 + GUARD));
	/* One fewer fits; a zero-length SGE costs nothing. */
	wr.num_sge = 6;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 2);
	sg[7].length = 0;
	wr.sg = &sg[1];
	wr.num_sge = 7;
	CHECK_EQ(softhca_build_send_wqe(&sq, 2, &wr), 2);
	ring_free(&sq.ring);

	/* More DS than the 6-bit field, even where the QP would allow it. */
	sq = sq_new(64);
	for (int i = 0; i < 64; i++)
		many[i] = sg[0];
	sq.max_wqebbs = 32;
	wr = wr_of(SOFTHCA_OPCODE_SEND, many, 62);	/* 63 DS: fits */
	CHECK_EQ(softhca_send_wqe_ds(&sq, &wr, &(uint32_t){ 0 }), 63);
	wr.num_sge = 63;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	CHECK(untouched(&sq.ring, -GUARD, 256 + GUARD));
	ring_free(&sq.ring);

	/* UC: what UC has no packets for is refused; a WRITE is built. */
	sq = sq_new(64);
	sq.tp = SOFTHCA_TP_UC;
	wr = wr_of(SOFTHCA_OPCODE_RDMA_READ, sg, 1);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	wr = wr_of(SOFTHCA_OPCODE_ATOMIC_FA, sg, 1);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	wr = wr_of(SOFTHCA_OPCODE_SEND_INV, sg, 1);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	CHECK(untouched(&sq.ring, -GUARD, 256 + GUARD));
	wr = wr_of(SOFTHCA_OPCODE_RDMA_WRITE_IMM, sg, 1);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 1);
	ring_free(&sq.ring);
}

/* A signing QP's WQE carries its signature, following the ring wrap. */
static void build_signs_across_wrap(void)
{
	static const uint8_t payload[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	struct softhca_sge sg = { .addr = (uintptr_t)payload, .length = 40 };
	struct softhca_sq_fmt sq = sq_new(64);
	struct softhca_send_wr wr = wr_of(SOFTHCA_OPCODE_RDMA_WRITE, &sg, 1);
	uint8_t x = 0;

	sq.sign = 1;
	wr.send_inline = 1;
	/* ctrl + raddr + 4 + 40 inline = 5 DS from WQEBB 3: 16 bytes wrap. */
	CHECK_EQ(softhca_build_send_wqe(&sq, 3, &wr), 2);
	for (int i = 0; i < 5 * 16; i++)
		x ^= sq.ring.buf[(192 + i) % 256];
	CHECK_EQ(x, 0xff);
	CHECK_BYTES(sq.ring.buf + 0, payload + 28, 12);
	CHECK(untouched(&sq.ring, 16, 192));
	/* Without signatures the byte stays 0. */
	sq.sign = 0;
	CHECK_EQ(softhca_build_send_wqe(&sq, 3, &wr), 2);
	CHECK_EQ(sq.ring.buf[192 + 8], 0);
	ring_free(&sq.ring);
}

static void wrs_record(void)
{
	__u64 wrid[4] = { 0 };
	uint32_t head[4] = { 0 };
	struct softhca_wq_wrs sq = { .wrid = wrid, .wqe_head = head, .cnt = 4 };
	struct softhca_wq_wrs rq = { .wrid = wrid, .cnt = 4 };

	softhca_wq_wrs_record(&sq, 2, 0xabc, 7);
	CHECK_EQ(wrid[2], 0xabc);
	CHECK_EQ(head[2], 7);
	softhca_wq_wrs_record(&rq, 3, 0xdef, 9);	/* no wqe_head[] */
	CHECK_EQ(wrid[3], 0xdef);
	CHECK_EQ(head[3], 0);
}

/* ---- the datagram transport ------------------------------------------------ */

static const uint8_t ud_dgid[16] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2,
};
static const uint8_t ud_dmac[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };

/* The 48 bytes of softhca_wqe_av, by hand, for ud_av(). */
static const uint8_t ud_av_bytes[48] = {
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,	/* qkey, rsvd */
	0x00, 0x00, 0x00, 0x00,				/* dqp_dct */
	0x0a,						/* SL 5 << 1 */
	0x00, 0xe3, 0x41,				/* fl_mlid, sport(0x12345) */
	0x00, 0x00, 0x00, 0x00,				/* rsvd */
	0x02, 0x11, 0x22, 0x33, 0x44, 0x55,		/* rmac */
	0x60, 0x40,					/* tclass, hop_limit */
	0x40, 0x31, 0x23, 0x45,				/* GRH, sgid 3, fl 0x12345 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2,
};

static struct softhca_av ud_av(uint32_t pdn)
{
	struct softhca_av av;

	memset(&av, FILL, sizeof(av));
	softhca_set_av(&av, pdn, ud_dgid, 3, 0x12345, 0x40, 0x60, 5, ud_dmac);
	return av;
}

static struct softhca_sq_fmt ud_sq_new(void)
{
	struct softhca_sq_fmt sq = sq_new(64);

	sq.tp = SOFTHCA_TP_UD;
	sq.pdn = 7;
	return sq;
}

static void av_and_datagram_segment_bytes(void)
{
	static const uint8_t head[12] = {
		0x11, 0x11, 0x11, 0x11, 0x00, 0x00, 0x00, 0x00,	/* qkey */
		0x80, 0xab, 0xcd, 0xef,			/* EXTENDED | QPN */
	};
	struct softhca_av av = ud_av(7);
	struct softhca_wqe_av seg;

	CHECK_BYTES(&av.wqe, ud_av_bytes, 48);
	CHECK_EQ(av.pdn, 7);
	CHECK_EQ(av.reserved, 0);
	memset(&seg, FILL, sizeof(seg));
	/* The QPN is masked to 24 bits; the Q_Key goes as given. */
	softhca_set_datagram_seg(&seg, &av, 0x7fabcdef, 0x11111111);
	CHECK_BYTES(&seg, head, 12);
	CHECK_BYTES((uint8_t *)&seg + 12, ud_av_bytes + 12, 36);
	/* RoCE v2 UDP source ports (ib_core's rdma_flow_label_to_udp_sport). */
	CHECK_EQ(softhca_enc_udp_sport(0), 0xc000);
	CHECK_EQ(softhca_enc_udp_sport(0x12345), 0xe341);
	CHECK_EQ(softhca_enc_udp_sport(0xfffff), 0xffc0);
}

/* A UD SEND: ctrl + AV fill WQEBB 3, the data pointer wraps to 0. */
static void build_ud_send_wraps(void)
{
	static const struct softhca_sge sg = {
		.addr = 0x7f0000001000ull, .length = 0x100, .lkey = 0x1234,
	};
	static const uint8_t ctrl[16] = {
		0x00, 0x00, 0x03, 0x0b, 0x00, 0x00, 0x42, 0x05,
		0x00, 0x00, 0x00, 0x08, 0xca, 0xfe, 0xf0, 0x0d,
	};
	static const uint8_t data[16] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	struct softhca_sq_fmt sq = ud_sq_new();
	struct softhca_send_wr wr = wr_of(SOFTHCA_OPCODE_SEND_IMM, &sg, 1);
	struct softhca_av av = ud_av(7);
	const struct softhca_wqe_av *seg;

	wr.av = &av;
	wr.remote_qpn = 0x123;
	wr.remote_qkey = 0x80000000;		/* the QP's own: the HCA's */
	CHECK_EQ(softhca_build_send_wqe(&sq, 3, &wr), 2);
	CHECK_BYTES(sq.ring.buf + 192, ctrl, 16);
	seg = (const void *)(sq.ring.buf + 208);
	CHECK_EQ(be32toh(seg->qkey), 0x80000000);
	CHECK_EQ(be32toh(seg->dqp_dct), SOFTHCA_AV_EXTENDED | 0x123);
	CHECK_BYTES(sq.ring.buf + 208 + 12, ud_av_bytes + 12, 36);
	CHECK_BYTES(sq.ring.buf + 0, data, 16);
	CHECK(untouched(&sq.ring, -GUARD, 0));
	CHECK(untouched(&sq.ring, 16, 192));
	CHECK(untouched(&sq.ring, 256, 256 + GUARD));
	ring_free(&sq.ring);
}

/* Inline on UD: after the AV; a 0-byte SEND is ctrl + AV alone. */
static void build_ud_inline_and_empty(void)
{
	static const uint8_t payload[20] = "twenty bytes inline";
	struct softhca_sge sg = { .addr = (uintptr_t)payload, .length = 20 };
	struct softhca_sq_fmt sq = ud_sq_new();
	struct softhca_send_wr wr = wr_of(SOFTHCA_OPCODE_SEND, &sg, 1);
	struct softhca_av av = ud_av(7);

	wr.av = &av;
	wr.send_inline = 1;
	/* ctrl + AV + 4 + 20 bytes: 6 DS, 2 WQEBBs. */
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 2);
	CHECK_EQ(be32toh(*(__be32 *)(sq.ring.buf + 4)) & 0x3f, 6);
	CHECK_EQ(be32toh(*(__be32 *)(sq.ring.buf + 64)),
		 SOFTHCA_INLINE_SEG | 20);
	CHECK_BYTES(sq.ring.buf + 68, payload, 20);
	CHECK(untouched(&sq.ring, 96, 256 + GUARD));
	ring_free(&sq.ring);

	sq = ud_sq_new();
	wr.num_sge = 0;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 1);
	CHECK_EQ(be32toh(*(__be32 *)(sq.ring.buf + 4)) & 0x3f, 4);
	CHECK(untouched(&sq.ring, 64, 256 + GUARD));
	ring_free(&sq.ring);
}

/* What a UD QP refuses, with nothing written; an RC QP ignores an AV. */
static void build_ud_refuses(void)
{
	struct softhca_sge sg = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct softhca_sq_fmt sq = ud_sq_new();
	struct softhca_send_wr wr;
	struct softhca_av av = ud_av(7), other = ud_av(8);

	wr = wr_of(SOFTHCA_OPCODE_RDMA_WRITE, &sg, 1);
	wr.av = &av;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	wr = wr_of(SOFTHCA_OPCODE_ATOMIC_FA, &sg, 1);
	wr.av = &av;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	wr = wr_of(SOFTHCA_OPCODE_SEND, &sg, 1);
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);	/* no AH */
	wr.av = &other;						/* its PD */
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	/* ctrl + AV + 5 pointers = 9 DS: 3 WQEBBs, the QP has 2. */
	wr.av = &av;
	wr.num_sge = 5;
	wr.sg = (const struct softhca_sge[5]){ sg, sg, sg, sg, sg };
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), -EINVAL);
	CHECK(untouched(&sq.ring, -GUARD, 256 + GUARD));
	ring_free(&sq.ring);

	sq = sq_new(64);
	sq.tp = SOFTHCA_TP_RC;
	wr = wr_of(SOFTHCA_OPCODE_SEND, &sg, 1);
	wr.av = &other;
	CHECK_EQ(softhca_build_send_wqe(&sq, 0, &wr), 1);
	CHECK_EQ(be32toh(*(__be32 *)(sq.ring.buf + 4)) & 0x3f, 2);
	ring_free(&sq.ring);
}

static int srq_locks;

static void srq_lock_count(struct softhca_srq_wrs *srq, int on)
{
	(void)srq;
	srq_locks += on ? 1 : -1;
}

/*
 * The SRQ free list (softhca-wqe.h): a ring of 4 holds 3 WRs, posts walk
 * the list, a completion appends its WQE after the tail, a CQE naming a
 * WQE not posted (or beyond the ring) retires nothing, the data segments
 * follow the next segment with a sentinel.
 */
static void srq_free_list(void)
{
	_Alignas(16) uint8_t ring[4 * 64];
	__u64 wrid[4], id = 0;
	uint8_t posted[4];
	struct softhca_srq_wrs q = { .wrid = wrid, .posted = posted,
				     .buf = ring, .cnt = 4, .wqe_shift = 6,
				     .lock = srq_lock_count };
	struct softhca_sge sg = { .addr = 0x1000, .length = 64, .lkey = 7 };
	struct softhca_wqe_data_seg *d;

	memset(ring, 0xee, sizeof(ring));
	softhca_srq_init(&q);
	CHECK_EQ(q.head, 0);
	CHECK_EQ(q.tail, 3);
	for (uint32_t i = 0; i < 4; i++)
		CHECK_EQ(softhca_srq_next(&q, i), (i + 1) & 3);
	CHECK_EQ(softhca_srq_max_gs(64), 3);
	CHECK_EQ(softhca_srq_post(&q, &sg, 4, 1), -EINVAL);
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 10), 0);
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 11), 0);
	CHECK_EQ(softhca_srq_post(&q, &sg, 0, 12), 0);
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 13), -ENOMEM);
	CHECK_EQ(q.counter, 3);
	CHECK_EQ(q.head, 3);
	d = (struct softhca_wqe_data_seg *)(ring + 16);
	CHECK_EQ(be32toh(d[0].lkey), 7);
	CHECK_EQ(be64toh(d[0].addr), 0x1000);
	CHECK_EQ(be32toh(d[1].lkey), SOFTHCA_INVALID_LKEY);
	CHECK_EQ(be32toh(((struct softhca_wqe_data_seg *)(ring + 128 + 16))->lkey),
		 SOFTHCA_INVALID_LKEY);
	/* WQE 1 completes first: appended after the tail (3). */
	CHECK_EQ(softhca_wrs_retire_srq(&q, 1, &id), 0);
	CHECK_EQ(id, 11);
	CHECK_EQ(q.tail, 1);
	CHECK_EQ(softhca_srq_next(&q, 3), 1);
	CHECK_EQ(softhca_wrs_retire_srq(&q, 1, &id), -1);
	CHECK_EQ(softhca_wrs_retire_srq(&q, 4, &id), -1);
	CHECK_EQ(srq_locks, 0);
	/* Head 3 is free again to post; then 1; then full. */
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 14), 0);
	CHECK_EQ(q.head, 1);
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 15), -ENOMEM);
	CHECK_EQ(softhca_wrs_retire_srq(&q, 3, &id), 0);
	CHECK_EQ(id, 14);
	CHECK_EQ(softhca_srq_post(&q, &sg, 1, 16), 0);
	CHECK_EQ(wrid[1], 16);
}

/*
 * XRC initiators: ctrl, the XRC segment (the target SRQ, 24 bits), then
 * what RC carries. A SEND at WQEBB 1 is ctrl + XRC + data (DS 3); an
 * atomic at the ring's last WQEBB puts its data pointer past the XRC,
 * raddr and atomic segments, at the ring's start (DS 5, two WQEBBs).
 */
static void build_xrc_send_and_atomic_wrap(void)
{
	static const struct softhca_sge sg = {
		.addr = 0x7f0000001000ull, .length = 0x100, .lkey = 0x1234,
	};
	static const uint8_t xrc[16] = { 0x00, 0xab, 0xcd, 0xef };
	static const uint8_t send_ctrl[16] = {
		0x00, 0x00, 0x05, 0x0a, 0x00, 0x00, 0x42, 0x03,
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t fa_ctrl[16] = {
		0x00, 0x00, 0x03, 0x12, 0x00, 0x00, 0x42, 0x05,
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00,
	};
	static const uint8_t data[16] = {
		0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	static const uint8_t data8[16] = {
		0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x12, 0x34,
		0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,
	};
	static const uint8_t raddr[16] = {
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x00, 0x00, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x00,
	};
	struct softhca_sq_fmt sq = sq_new(64);
	struct softhca_send_wr wr = wr_of(SOFTHCA_OPCODE_SEND, &sg, 1);

	sq.tp = SOFTHCA_TP_XRC;
	wr.remote_srqn = 0xffabcdef;		/* 24 bits go out */
	CHECK_EQ(softhca_build_send_wqe(&sq, 5, &wr), 1);
	CHECK_BYTES(sq.ring.buf + 64, send_ctrl, 16);
	CHECK_BYTES(sq.ring.buf + 80, xrc, 16);
	CHECK_BYTES(sq.ring.buf + 96, data, 16);
	CHECK(untouched(&sq.ring, -GUARD, 64));
	CHECK(untouched(&sq.ring, 112, 256 + GUARD));
	ring_free(&sq.ring);

	sq = sq_new(64);
	sq.tp = SOFTHCA_TP_XRC;
	wr = wr_of(SOFTHCA_OPCODE_ATOMIC_FA, &sg, 1);
	wr.remote_srqn = 0xabcdef;
	CHECK_EQ(softhca_build_send_wqe(&sq, 3, &wr), 2);
	CHECK_BYTES(sq.ring.buf + 192, fa_ctrl, 16);
	CHECK_BYTES(sq.ring.buf + 208, xrc, 16);
	CHECK_BYTES(sq.ring.buf + 224, raddr, 16);
	CHECK_EQ(be64toh(*(__be64 *)(sq.ring.buf + 240)), 0x1111222233334444ull);
	CHECK_EQ(be64toh(*(__be64 *)(sq.ring.buf + 248)), 0);
	CHECK_BYTES(sq.ring.buf + 0, data8, 16);
	CHECK(untouched(&sq.ring, -GUARD, 0));
	CHECK(untouched(&sq.ring, 16, 192));
	CHECK(untouched(&sq.ring, 256, 256 + GUARD));
	ring_free(&sq.ring);

	/* The same atomic on RC: DS 4, one WQEBB, nothing at the start. */
	sq = sq_new(64);
	CHECK_EQ(softhca_build_send_wqe(&sq, 3, &wr), 1);
	CHECK_BYTES(sq.ring.buf + 240, data8, 16);
	CHECK(untouched(&sq.ring, -GUARD, 192));
	ring_free(&sq.ring);
}

static const struct tap_test tests[] = {
	{ "ctrl_segment_bytes", ctrl_segment_bytes },
	{ "raddr_atomic_data_segment_bytes", raddr_atomic_data_segment_bytes },
	{ "data_segs_skip_zero_length", data_segs_skip_zero_length },
	{ "data_segs_wrap_at_ring_end", data_segs_wrap_at_ring_end },
	{ "inline_no_wrap", inline_no_wrap },
	{ "inline_wraps_at_ring_end", inline_wraps_at_ring_end },
	{ "inline_max_and_empty", inline_max_and_empty },
	{ "calc_sig_values", calc_sig_values },
	{ "send_wqe_signature_across_wrap", send_wqe_signature_across_wrap },
	{ "recv_wqe_sentinel", recv_wqe_sentinel },
	{ "recv_wqe_signature", recv_wqe_signature },
	{ "wq_overflow_edges", wq_overflow_edges },
	{ "ring_arithmetic", ring_arithmetic },
	{ "opcode_and_flags", opcode_and_flags },
	{ "opcode_table_rows", opcode_table_rows },
	{ "full_write_imm_wqe", full_write_imm_wqe },
	{ "build_every_opcode", build_every_opcode },
	{ "build_refuses_what_the_qp_cannot_take", build_refuses_what_the_qp_cannot_take },
	{ "build_signs_across_wrap", build_signs_across_wrap },
	{ "wrs_record", wrs_record },
	{ "av_and_datagram_segment_bytes", av_and_datagram_segment_bytes },
	{ "build_ud_send_wraps", build_ud_send_wraps },
	{ "build_ud_inline_and_empty", build_ud_inline_and_empty },
	{ "build_ud_refuses", build_ud_refuses },
	{ "srq_free_list", srq_free_list },
	{ "build_xrc_send_and_atomic_wrap", build_xrc_send_and_atomic_wrap },
};

TAP_MAIN(tests)
