// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of user/wqe.c and user/ring.h: the exact bytes of every
 * segment for known inputs (expected arrays written out by hand, big-endian),
 * DS/WQEBB accounting with zero-length SGEs, wrap-around at the end of the
 * SQ ring with guard bytes on both sides, max_inline, the receive sentinel,
 * signatures, and the overflow check.
 */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../user/wqe.c"
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
	static const struct ibv_sge sg[] = {
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
	struct ibv_sge sg[5];
	struct softhca_ring r = ring_new(256);
	uint32_t ds;

	for (int i = 0; i < 5; i++)
		sg[i] = (struct ibv_sge){ .addr = 0x100u * (i + 1),
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

static void inline_no_wrap(void)
{
	static const char hello[] = "hello", world[] = "world!!", x[] = "x";
	struct ibv_sge sg[3] = {
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
	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 3, 64), 1);
	CHECK_BYTES(r.buf + 16, want12, 16);
	CHECK(untouched(&r, -GUARD, 16));
	CHECK(untouched(&r, 32, 256 + GUARD));

	/* 4 + 13 bytes: two DS, the rest of the second zero-padded. */
	sg[1].length = 1;
	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 3, 64), 2);
	CHECK_BYTES(r.buf + 16, want13, 32);
	CHECK(untouched(&r, 48, 256 + GUARD));
	ring_free(&r);
}

static void inline_wraps_at_ring_end(void)
{
	uint8_t src[100];
	struct softhca_ring r = ring_new(256);
	struct ibv_sge sg[2];

	for (int i = 0; i < 100; i++)
		src[i] = (uint8_t)(i + 1);
	/* Split inside an SGE: 30 + 70 bytes, header at 208 (SEND in the last
	 * WQEBB): 212..255 gets 44 bytes, 0..55 the other 56, 56..63 padding.
	 */
	sg[0] = (struct ibv_sge){ .addr = (uintptr_t)src, .length = 30 };
	sg[1] = (struct ibv_sge){ .addr = (uintptr_t)(src + 30), .length = 70 };
	CHECK_EQ(softhca_set_inline_data(&r, 208, sg, 2, 256), 7);
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
	sg[1] = (struct ibv_sge){ .addr = (uintptr_t)(src + 44), .length = 20 };
	CHECK_EQ(softhca_set_inline_data(&r, 208, sg, 2, 256), 5);
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
	CHECK_EQ(softhca_set_inline_data(&r, 256, sg, 1, 256), 1);
	CHECK_EQ(be32toh(*(__be32 *)r.buf), 0x80000004u);
	CHECK_BYTES(r.buf + 4, src, 4);
	CHECK(untouched(&r, 16, 256 + GUARD));
	ring_free(&r);
}

static void inline_max_and_empty(void)
{
	static uint8_t src[65];
	struct ibv_sge sg[2] = {
		{ .addr = (uintptr_t)src, .length = 60 },
		{ .addr = (uintptr_t)(src + 60), .length = 5 },
	};
	struct softhca_ring r = ring_new(256);

	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 2, 64), -ENOMEM);
	CHECK(untouched(&r, -GUARD, 256 + GUARD));

	sg[1].length = 4;		/* exactly max_inline: 4 + 64 -> 5 DS */
	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 2, 64), 5);
	CHECK(untouched(&r, 96, 256 + GUARD));
	ring_free(&r);

	r = ring_new(256);
	sg[0].length = 0;
	sg[1].length = 0;
	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 2, 64), 0);
	CHECK_EQ(softhca_set_inline_data(&r, 16, sg, 0, 0), 0);
	CHECK(untouched(&r, -GUARD, 256 + GUARD));
	ring_free(&r);
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
	static const struct ibv_sge sg[] = {
		{ .addr = 0x1000, .length = 0x40, .lkey = 1 },
		{ .addr = 0x9000, .length = 0,    .lkey = 2 },
		{ .addr = 0x2000, .length = 0x80, .lkey = 3 },
	};
	static const uint8_t want[48] = {
		0, 0, 0, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0,
		0, 0, 0, 0x80, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0x20, 0,
		0, 0, 0, 0,    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,    0,
	};
	static const struct ibv_sge two[] = {
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
	static const struct ibv_sge sg[] = {
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
	CHECK_EQ(softhca_wr_opcode(IBV_WR_LOCAL_INV), -1);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_BIND_MW), -1);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_SEND_WITH_INV), -1);
	CHECK_EQ(softhca_wr_opcode(IBV_WR_TSO), -1);
	CHECK_EQ(softhca_wr_opcode((enum ibv_wr_opcode)99), -1);

	CHECK_EQ(softhca_fm_ce_se(0, false), 0x00);
	CHECK_EQ(softhca_fm_ce_se(IBV_SEND_SIGNALED, false), 0x08);
	CHECK_EQ(softhca_fm_ce_se(0, true), 0x08);
	CHECK_EQ(softhca_fm_ce_se(IBV_SEND_SOLICITED, false), 0x02);
	CHECK_EQ(softhca_fm_ce_se(IBV_SEND_FENCE, false), 0x80);
	CHECK_EQ(softhca_fm_ce_se(IBV_SEND_INLINE, false), 0x00);
	CHECK_EQ(softhca_fm_ce_se(IBV_SEND_FENCE | IBV_SEND_SIGNALED |
				  IBV_SEND_SOLICITED | IBV_SEND_INLINE, false), 0x8a);
}

/* A whole RDMA_WRITE_WITH_IMM WQE as post_send will build it. */
static void full_write_imm_wqe(void)
{
	static const struct ibv_sge sg[] = {
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
	struct softhca_ring r = ring_new(256);
	uint32_t cur_post = 5, off = softhca_sq_wqe_offset(cur_post, 4), ds;

	CHECK_EQ(off, 64);
	softhca_set_raddr_seg((void *)(r.buf + off + 16), 0x1122334455667788ull, 0xabcd);
	ds = 2 + softhca_set_data_segs(&r, off + 32, sg, 3);
	softhca_set_ctrl_seg((void *)(r.buf + off), softhca_wr_opcode(IBV_WR_RDMA_WRITE_WITH_IMM),
			     0, cur_post, 0x42, ds, softhca_fm_ce_se(IBV_SEND_SIGNALED, false),
			     htobe32(0xcafef00d));
	CHECK_EQ(ds, 4);
	CHECK_BYTES(r.buf + 64, want, 64);
	CHECK_EQ(cur_post + softhca_ds_to_wqebbs(ds), 6);
	CHECK(untouched(&r, -GUARD, 64));
	CHECK(untouched(&r, 128, 256 + GUARD));
	ring_free(&r);
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
	{ "full_write_imm_wqe", full_write_imm_wqe },
};

TAP_MAIN(tests)
