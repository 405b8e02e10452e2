// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of the provider's data path (user/send.c, recv.c, poll.c)
 * over queues in ordinary memory: a fake UAR page, doorbell records and
 * doorbell area, and CQEs written by the test (or by a fake engine thread).
 * Checks post_send step by step (WQE bytes, wrid[]/wqe_head[], the SND
 * record, BlueFlame copy vs. 64-bit doorbell and the buffer toggle, bad_wr
 * for each kind of error, the overflow check and its recovery through
 * poll_cq, the wake-up call only when NEED_WAKEUP is set), post_recv (the
 * sentinel, num_sge 0, the RCV record, no wake-up), poll_cq (wr_id from
 * wrid[] by WQE counter and from the RQ tail, unsignaled WRs retired by a
 * later CQE, error CQEs, unknown QPs, set_ci, CQEs no posted WR matches,
 * -EIO for an empty poll once the device is gone), CQ cleaning, the extended
 * post-send API (one doorbell per batch, the first error drops the batch,
 * abort), the CQ arm doorbells and arm_sn, and the SQ/CQ locks under three
 * threads.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../../user/cqe.c"
#include "../../user/send.c"
#include "../../user/recv.c"
#include "../../user/poll.c"
#include "../../user/wr.c"
#include "../../user/arm.c"
#include "../../user/table.c"
#include "tap.h"

/* ---- what softhca.c and engine.c provide in the library ------------- */

int softhca_lock_init(struct softhca_lock *l, bool need_lock)
{
	l->need_lock = need_lock;
	l->held = 0;
	return 0;
}

void softhca_lock_destroy(struct softhca_lock *l)
{
	(void)l;
}

static int wake_calls;

int softhca_wakeup_call(struct softhca_context *ctx)
{
	(void)ctx;
	wake_calls++;
	return 0;
}

/* ---- a fake device --------------------------------------------------- */

#define QPN	0x000123
#define CQN	0x000007
#define QP_SLOT	5	/* group 0 */
#define CQ_SLOT	70	/* group 1 */

struct fake {
	struct softhca_context *ctx;
	struct softhca_db_area *db;
	struct softhca_device_page *dev;
	struct softhca_cq *cq;
	struct softhca_qp *qp;
	struct softhca_qp_dbr qp_dbr;
	struct softhca_cq_dbr cq_dbr;
};

static void *zalloc(size_t align, size_t size)
{
	void *p = aligned_alloc(align, (size + align - 1) / align * align);

	if (!p) {
		perror("aligned_alloc");
		exit(2);
	}
	memset(p, 0, size);
	return p;
}

static void table_put(struct softhca_context *ctx, struct softhca_qp *qp)
{
	if (softhca_table_insert(&ctx->qp_table, qp->qpn, qp)) {
		fprintf(stderr, "table_put: QPN 0x%x\n", qp->qpn);
		exit(2);
	}
}

/*
 * One context, one CQ (send and receive) of cqe_cnt CQEs, one QP with an SQ
 * of sq_bbs WQEBBs holding max_post WRs of up to max_wqebbs, and an RQ of
 * rq_cnt WQEs of 64 bytes (4 data segments).
 */
static struct fake *fake_new(uint32_t cqe_cnt, uint32_t sq_bbs,
			     uint32_t max_post, uint32_t max_wqebbs,
			     uint32_t rq_cnt)
{
	struct fake *f = zalloc(64, sizeof(*f));
	struct softhca_context *ctx;
	struct softhca_qp *qp;
	struct softhca_cq *cq;

	f->ctx = ctx = zalloc(64, sizeof(*ctx));
	ctx->uar = zalloc(4096, 4096);
	ctx->uar_size = 4096;
	f->db = zalloc(4096, sizeof(*f->db));
	ctx->db = f->db;
	f->dev = zalloc(4096, 4096);
	ctx->bf_buf_size = SOFTHCA_UAR_BF_SIZE;
	ctx->bf_offset = SOFTHCA_UAR_BF_OFFSET;
	softhca_lock_init(&ctx->bf_lock, false);

	f->cq = cq = zalloc(64, sizeof(*cq));
	cq->ibv_cq.context = &ctx->vctx.context;
	softhca_lock_init(&cq->lock, true);
	cq->cqn = CQN;
	cq->cqe_cnt = cqe_cnt;
	cq->ring = zalloc(64, cqe_cnt * sizeof(struct softhca_cqe));
	for (uint32_t i = 0; i < cqe_cnt; i++)
		cq->ring[i].op_own = SOFTHCA_CQE_INVALID << 4;
	cq->dbr = &f->cq_dbr;
	/* The CQ on engine thread 1, the QP on thread 0 (below). */
	if (softhca_db_hint_init(ctx, &cq->db, CQ_SLOT, 1))
		exit(2);

	f->qp = qp = zalloc(64, sizeof(*qp));
	qp->vqp.qp.context = &ctx->vctx.context;
	qp->vqp.qp.send_cq = &cq->ibv_cq;
	qp->vqp.qp.recv_cq = &cq->ibv_cq;
	qp->vqp.qp.qp_num = QPN;
	qp->qpn = QPN;
	qp->dbr = &f->qp_dbr;
	if (softhca_db_hint_init(ctx, &qp->db, QP_SLOT, 0))
		exit(2);
	softhca_lock_init(&qp->sq.lock, true);
	softhca_lock_init(&qp->rq.lock, true);
	qp->sq.fmt.ring.size = sq_bbs * SOFTHCA_SEND_WQE_BB;
	qp->sq.fmt.ring.buf = zalloc(64, qp->sq.fmt.ring.size);
	memset(qp->sq.fmt.ring.buf, 0xee, qp->sq.fmt.ring.size);
	qp->sq.fmt.qpn = QPN;
	qp->sq.wqebb_cnt = sq_bbs;
	qp->sq.wrs.cnt = sq_bbs;
	qp->sq.max_post = max_post;
	qp->sq.fmt.max_wqebbs = max_wqebbs;
	qp->sq.fmt.tp = SOFTHCA_TP_RC;
	qp->sq.max_gs = 4;
	qp->sq.fmt.max_inline = 100;
	qp->sq.wrs.wrid = zalloc(8, sq_bbs * sizeof(uint64_t));
	qp->sq.wrs.wqe_head = zalloc(8, sq_bbs * sizeof(uint32_t));
	qp->rq.wqe_cnt = rq_cnt;
	qp->rq.wrs.cnt = rq_cnt;
	qp->rq.wqe_shift = 6;
	qp->rq.max_gs = 4;
	qp->rq.buf = zalloc(64, rq_cnt << 6);
	memset(qp->rq.buf, 0xee, rq_cnt << 6);
	qp->rq.wrs.wrid = zalloc(8, rq_cnt * sizeof(uint64_t));
	/* As after modify_qp to RTS: both queues take WRs. */
	qp->sq.post_ok = true;
	qp->rq.post_ok = true;
	table_put(ctx, qp);
	return f;
}

static void fake_free(struct fake *f)
{
	free(f->qp->sq.fmt.ring.buf);
	free(f->qp->sq.wrs.wrid);
	free(f->qp->sq.wrs.wqe_head);
	free(f->qp->rq.buf);
	free(f->qp->rq.wrs.wrid);
	free(f->qp);
	free(f->cq->ring);
	free(f->cq);
	softhca_table_free(&f->ctx->qp_table);
	free(f->ctx->uar);
	free(f->db);
	free(f->dev);
	free(f->ctx);
	free(f);
}

static uint8_t *sq_bb(struct fake *f, uint32_t slot)
{
	return f->qp->sq.fmt.ring.buf + slot * SOFTHCA_SEND_WQE_BB;
}

static uint8_t *uar(struct fake *f, uint32_t off)
{
	return (uint8_t *)f->ctx->uar + off;
}

/* The HCA's side: a CQE at producer index pi (owner bit of its lap). */
static void put_cqe(struct fake *f, uint32_t pi, uint8_t opcode, uint32_t qpn,
		    uint8_t wqe_opcode, uint16_t wqe_counter, uint32_t byte_cnt)
{
	struct softhca_cqe *c = &f->cq->ring[pi & (f->cq->cqe_cnt - 1)];

	/* Everything but op_own, which must never look valid early. */
	memset(c, 0, offsetof(struct softhca_cqe, op_own));
	c->sop_drop_qpn = htobe32((uint32_t)wqe_opcode << 24 | qpn);
	c->wqe_counter = htobe16(wqe_counter);
	c->byte_cnt = htobe32(byte_cnt);
	__atomic_store_n(&c->op_own,
			 opcode << 4 | softhca_owner_of(pi, f->cq->cqe_cnt),
			 __ATOMIC_RELEASE);
}

static struct ibv_qp *ibqp(struct fake *f)
{
	return &f->qp->vqp.qp;
}

/* ---- post_send ------------------------------------------------------- */

static void send_one_wqe_and_doorbell(void)
{
	static const uint8_t want[48] = {
		0x00, 0x00, 0x00, 0x0a,		/* idx 0, SEND */
		0x00, 0x01, 0x23, 0x03,		/* qpn 0x123, ds 3 */
		0x00, 0x00, 0x00, 0x08,		/* CQ_UPDATE */
		0x00, 0x00, 0x00, 0x00,		/* no immediate */
		0x00, 0x00, 0x00, 0x10,		/* 16 bytes */
		0x00, 0x00, 0x12, 0x34,		/* lkey */
		0x00, 0x00, 0x00, 0x00, 0xaa, 0xbb, 0xcc, 0x00,
		0x00, 0x00, 0x00, 0x20,		/* zero-length SGE skipped */
		0x00, 0x00, 0x56, 0x78,
		0x00, 0x00, 0x00, 0x00, 0xaa, 0xbb, 0xdd, 0x00,
	};
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct ibv_sge sg[3] = {
		{ .addr = 0xaabbcc00, .length = 16, .lkey = 0x1234 },
		{ .addr = 0x1, .length = 0, .lkey = 0x9999 },
		{ .addr = 0xaabbdd00, .length = 32, .lkey = 0x5678 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 0xfeed, .sg_list = sg, .num_sge = 3,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad = NULL;
	uint8_t dbr[4] = { 0, 0, 0, 1 };

	wake_calls = 0;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), 0);
	CHECK(bad == NULL);
	CHECK_BYTES(sq_bb(f, 0), want, sizeof(want));
	CHECK_EQ(sq_bb(f, 0)[48], 0xee);	/* nothing past the WQE */
	CHECK_EQ(f->qp->sq.wrs.wrid[0], 0xfeed);
	CHECK_EQ(f->qp->sq.wrs.wqe_head[0], 0);
	CHECK_EQ(f->qp->sq.cur_post, 1);
	CHECK_EQ(f->qp->sq.wrs.head, 1);
	CHECK_BYTES(&f->qp_dbr.snd_counter, dbr, 4);
	CHECK_EQ(f->qp_dbr.rcv_counter, 0);
	/* not inline: the 64-bit doorbell, ctrl's first 8 bytes, in BF 0 */
	CHECK_BYTES(uar(f, 0x800), want, 8);
	CHECK_EQ(uar(f, 0x808)[0], 0);
	CHECK_EQ(f->ctx->bf_offset, 0x900);
	CHECK_EQ(wake_calls, 0);

	/* the next one goes to the other buffer, with index 1 */
	wr.send_flags = 0;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), 0);
	CHECK_EQ(uar(f, 0x900)[2], 0x01);
	CHECK_EQ(sq_bb(f, 1)[11], 0x00);	/* unsignaled */
	CHECK_EQ(f->ctx->bf_offset, 0x800);
	dbr[3] = 2;
	CHECK_BYTES(&f->qp_dbr.snd_counter, dbr, 4);
	fake_free(f);
}

static void send_inline_wraps_and_blueflame(void)
{
	struct fake *f = fake_new(8, 4, 2, 2, 4);
	uint8_t payload[60];
	struct ibv_sge sg[2] = {
		{ .addr = (uintptr_t)payload, .length = 20 },
		{ .addr = (uintptr_t)(payload + 20), .length = 40 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = sg, .num_sge = 2,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED | IBV_SEND_FENCE,
		.imm_data = htobe32(0xcafe0001),
		.wr.rdma = { .remote_addr = 0x1122334455667788ull, .rkey = 0xabcd },
	};
	struct ibv_send_wr *bad = NULL;
	uint8_t *b3, *b0;

	for (int i = 0; i < 60; i++)
		payload[i] = 0x40 + i;
	/* start in the last WQEBB: ctrl + raddr + 64 bytes of inline = 6 DS */
	f->qp->sq.cur_post = f->qp->sq.wrs.head = 0xfffb;	/* slot 3, idx 0xfffb */
	f->qp->sq.wrs.tail = 0xfffb;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), 0);
	b3 = sq_bb(f, 3);
	b0 = sq_bb(f, 0);
	CHECK_EQ(be32toh(*(uint32_t *)b3), 0xfffb09);	/* idx, WRITE_IMM */
	CHECK_EQ(b3[7], 6);					/* ds */
	CHECK_EQ(b3[11], 0x80 | 0x02);		/* fence, solicited, unsignaled */
	CHECK_EQ(be32toh(*(uint32_t *)(b3 + 12)), 0xcafe0001);
	CHECK_EQ(be64toh(*(uint64_t *)(b3 + 16)), 0x1122334455667788ull);
	CHECK_EQ(be32toh(*(uint32_t *)(b3 + 24)), 0xabcd);
	CHECK_EQ(be32toh(*(uint32_t *)(b3 + 32)), 0x80000000 | 60);
	CHECK_BYTES(b3 + 36, payload, 28);		/* up to the end */
	CHECK_BYTES(b0, payload + 28, 32);		/* wrapped */
	CHECK_EQ(b0[32], 0xee);
	CHECK_EQ(f->qp->sq.cur_post, 0xfffd);
	CHECK_EQ(f->qp->sq.wrs.wrid[3], 7);
	CHECK_EQ(f->qp->sq.wrs.wqe_head[3], 0xfffb);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 0xfffd);
	/* single inline WR that fits: BlueFlame copies both WQEBBs in order */
	CHECK_BYTES(uar(f, 0x800), b3, 64);
	CHECK_BYTES(uar(f, 0x840), b0, 64);
	fake_free(f);
}

static void send_every_opcode_segments(void)
{
	struct fake *f = fake_new(8, 16, 8, 2, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 8, .lkey = 0x77 };
	struct ibv_send_wr wr[4];
	struct ibv_send_wr *bad = NULL;
	uint8_t *b;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 4; i++) {
		wr[i].wr_id = 100 + i;
		wr[i].sg_list = &sg;
		wr[i].num_sge = 1;
		wr[i].next = i < 3 ? &wr[i + 1] : NULL;
	}
	wr[0].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr[0].wr.atomic.remote_addr = 0x2000;
	wr[0].wr.atomic.rkey = 0x88;
	wr[0].wr.atomic.compare_add = 5;
	wr[0].wr.atomic.swap = 9;
	wr[1].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[1].wr.atomic.remote_addr = 0x3000;
	wr[1].wr.atomic.rkey = 0x99;
	wr[1].wr.atomic.compare_add = 3;
	wr[2].opcode = IBV_WR_RDMA_READ;
	wr[2].send_flags = IBV_SEND_INLINE;	/* ignored for READ */
	wr[2].wr.rdma.remote_addr = 0x4000;
	wr[2].wr.rdma.rkey = 0xaa;
	wr[3].opcode = IBV_WR_SEND_WITH_IMM;
	wr[3].imm_data = htobe32(0x01020304);
	f->qp->sig_all = true;

	CHECK_EQ(softhca_post_send(ibqp(f), wr, &bad), 0);
	/* CS: ctrl, raddr, atomic (swap, compare), pointer of 8: 4 DS */
	b = sq_bb(f, 0);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_ATOMIC_CS);
	CHECK_EQ(b[7], 4);
	CHECK_EQ(b[11], 0x08);			/* sig_all */
	CHECK_EQ(be64toh(*(uint64_t *)(b + 16)), 0x2000);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 24)), 0x88);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 32)), 9);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 40)), 5);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 48)), 8);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 52)), 0x77);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 56)), 0x1000);
	/* FA: add value, then 0 */
	b = sq_bb(f, 1);
	CHECK_EQ(be32toh(*(uint32_t *)b), 0x000112);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 32)), 3);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 40)), 0);
	/* READ: raddr then a pointer, not inline */
	b = sq_bb(f, 2);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_RDMA_READ);
	CHECK_EQ(b[7], 3);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 16)), 0x4000);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 32)), 8);
	/* SEND_IMM: immediate in ctrl, no raddr */
	b = sq_bb(f, 3);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_SEND_IMM);
	CHECK_EQ(b[7], 2);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 12)), 0x01020304);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 16)), 8);
	CHECK_EQ(f->qp->sq.wrs.head, 4);
	CHECK_EQ(f->qp->sq.wrs.wqe_head[3], 3);
	/* several WRs: a doorbell, not BlueFlame: the last ctrl's 8 bytes */
	CHECK_BYTES(uar(f, 0x800), b, 8);
	CHECK_EQ(uar(f, 0x808)[0], 0);
	fake_free(f);
}

/*
 * A queue whose QP state takes no WR (RESET; INIT or RTR for sends): EINVAL
 * for the first WR, nothing written, no doorbell (IB C10-22, C10-25).
 */
static void post_in_a_state_without_posting(void)
{
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr sw = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = &sg, .num_sge = 1 };
	struct ibv_send_wr *sbad = NULL;
	struct ibv_recv_wr *rbad = NULL;

	f->qp->sq.post_ok = false;
	f->qp->rq.post_ok = false;
	CHECK_EQ(softhca_post_send(ibqp(f), &sw, &sbad), EINVAL);
	CHECK(sbad == &sw);
	CHECK_EQ(softhca_post_recv(ibqp(f), &rw, &rbad), EINVAL);
	CHECK(rbad == &rw);
	CHECK_EQ(f->qp->sq.wrs.head, 0);
	CHECK_EQ(f->qp->rq.wrs.head, 0);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 0);
	CHECK_EQ(be32toh(f->qp_dbr.rcv_counter), 0);
	/* INIT: receives are taken, sends still not. */
	f->qp->rq.post_ok = true;
	CHECK_EQ(softhca_post_recv(ibqp(f), &rw, &rbad), 0);
	CHECK_EQ(softhca_post_send(ibqp(f), &sw, &sbad), EINVAL);
	CHECK_EQ(f->qp->sq.wrs.head, 0);
	fake_free(f);
}

static void send_bad_wr_stops_the_batch(void)
{
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct ibv_sge sg[5] = {
		{ .addr = 0x1000, .length = 8, .lkey = 1 },
		{ .addr = 0x1000, .length = 8, .lkey = 1 },
		{ .addr = 0x1000, .length = 8, .lkey = 1 },
		{ .addr = 0x1000, .length = 8, .lkey = 1 },
		{ .addr = 0x1000, .length = 8, .lkey = 1 },
	};
	uint8_t big[101];
	struct ibv_sge isg = { .addr = (uintptr_t)big, .length = sizeof(big) };
	struct ibv_send_wr w1 = { .wr_id = 1, .sg_list = sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_send_wr w2 = w1, w3 = w1;
	struct ibv_send_wr *bad = NULL;

	memset(big, 0, sizeof(big));
	w1.next = &w2;
	w2.next = &w3;
	w2.wr_id = 2;
	w3.wr_id = 3;

	/* an opcode softhca does not run */
	w2.opcode = IBV_WR_DRIVER1;
	CHECK_EQ(softhca_post_send(ibqp(f), &w1, &bad), EINVAL);
	CHECK(bad == &w2);
	CHECK_EQ(f->qp->sq.wrs.head, 1);		/* w1 is posted */
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 1);

	/* too many SGEs (max_gs 4) */
	w2.opcode = IBV_WR_SEND;
	w2.num_sge = 5;
	bad = NULL;
	CHECK_EQ(softhca_post_send(ibqp(f), &w2, &bad), EINVAL);
	CHECK(bad == &w2);
	CHECK_EQ(f->qp->sq.wrs.head, 1);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 1);

	/* inline over max_inline (100): ENOMEM, as mlx5 */
	w2.num_sge = 1;
	w2.sg_list = &isg;
	w2.send_flags = IBV_SEND_INLINE;
	CHECK_EQ(softhca_post_send(ibqp(f), &w2, &bad), ENOMEM);
	/* a WQE larger than this QP's largest (1 WQEBB): 5 DS */
	w2.sg_list = sg;
	w2.send_flags = 0;
	w2.num_sge = 4;
	CHECK_EQ(softhca_post_send(ibqp(f), &w2, &bad), EINVAL);
	/* an atomic needs exactly one SGE */
	w2.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	w2.num_sge = 2;
	CHECK_EQ(softhca_post_send(ibqp(f), &w2, &bad), EINVAL);
	CHECK_EQ(f->qp->sq.cur_post, 1);
	/* an empty list posts nothing and rings nothing */
	memset(uar(f, 0x800), 0, 0x200);
	CHECK_EQ(softhca_post_send(ibqp(f), NULL, &bad), 0);
	CHECK_EQ(uar(f, 0x900)[3], 0);
	fake_free(f);
}

static void send_overflow_and_recovery(void)
{
	struct fake *f = fake_new(8, 4, 3, 1, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr w[4];
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[4];

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 4; i++) {
		w[i].wr_id = 10 + i;
		w[i].sg_list = &sg;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_SEND;
		w[i].next = i < 3 ? &w[i + 1] : NULL;
	}
	w[2].send_flags = IBV_SEND_SIGNALED;
	/* max_post 3: the fourth does not fit */
	CHECK_EQ(softhca_post_send(ibqp(f), w, &bad), ENOMEM);
	CHECK(bad == &w[3]);
	CHECK_EQ(f->qp->sq.wrs.head, 3);
	CHECK_EQ(softhca_post_send(ibqp(f), &w[3], &bad), ENOMEM);

	/* the signaled third WQE completes: it retires the two before it */
	put_cqe(f, 0, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_SEND, 2, 8);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 12);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].qp_num, QPN);
	CHECK_EQ(f->qp->sq.wrs.tail, 3);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 1);
	/* now three fit again, in the ring's next lap */
	bad = NULL;
	CHECK_EQ(softhca_post_send(ibqp(f), &w[1], &bad), 0);
	CHECK(bad == NULL);
	CHECK_EQ(f->qp->sq.wrs.head, 6);
	CHECK_EQ(f->qp->sq.wrs.wrid[(3 + 2) & 3], 13);
	fake_free(f);
}

static void wakeup_only_when_engine_sleeps(void)
{
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 8, .lkey = 1 };
	struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_send_wr w1 = w2;
	struct ibv_recv_wr r = { .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;

	w1.next = &w2;
	wake_calls = 0;
	CHECK_EQ(softhca_post_send(ibqp(f), &w1, &bad), 0);
	CHECK_EQ(wake_calls, 0);
	/* The hint names the QP's slot, its group and its thread only. */
	CHECK_EQ(f->db->slot[QP_SLOT], 1);
	CHECK_EQ(f->db->group[QP_SLOT >> SOFTHCA_DB_GROUP_SHIFT], 1);
	CHECK_EQ(f->db->thread[0].pending, 1);
	CHECK_EQ(f->db->slot[QP_SLOT + 1] | f->db->slot[QP_SLOT - 1], 0);
	CHECK_EQ(f->db->group[1] | f->db->thread[1].pending, 0);
	/* Another thread not watching: not this QP's business. */
	f->db->thread[1].flags = SOFTHCA_ENGINE_NEED_WAKEUP;
	CHECK_EQ(softhca_post_send(ibqp(f), &w1, &bad), 0);
	CHECK_EQ(wake_calls, 0);
	f->db->thread[0].flags = SOFTHCA_ENGINE_NEED_WAKEUP;
	f->db->slot[QP_SLOT] = 0;
	CHECK_EQ(softhca_post_send(ibqp(f), &w1, &bad), 0);
	CHECK_EQ(wake_calls, 1);		/* one call for the batch */
	CHECK_EQ(f->db->slot[QP_SLOT], 1);	/* rung again */
	CHECK_EQ(softhca_post_recv(ibqp(f), &r, &rbad), 0);
	CHECK_EQ(wake_calls, 1);		/* receives never wake */
	/* a batch that posts nothing does not wake either */
	w2.opcode = IBV_WR_DRIVER1;
	CHECK_EQ(softhca_post_send(ibqp(f), &w2, &bad), EINVAL);
	CHECK_EQ(wake_calls, 1);
	fake_free(f);
}

/* ---- the extended post-send API ------------------------------------- */

static void wr_api_batch_and_rollback(void)
{
	struct fake *f = fake_new(8, 8, 8, 2, 4);
	struct ibv_qp_ex *qpx = &f->qp->vqp.qp_ex;
	struct ibv_data_buf bufs[2] = { { (void *)"abc", 3 }, { (void *)"defgh", 5 } };
	struct ibv_sge sgl[5] = {
		{ .addr = 0x1000, .length = 1, .lkey = 1 },
		{ .addr = 0x2000, .length = 2, .lkey = 2 },
	};
	uint8_t *b;

	CHECK_EQ(softhca_wr_api_init(f->qp), 0);
	CHECK_EQ(f->qp->vqp.comp_mask & VERBS_QP_EX, VERBS_QP_EX);
	wake_calls = 0;
	f->db->thread[0].flags = SOFTHCA_ENGINE_NEED_WAKEUP;

	/* SEND + sge, WRITE_IMM + inline list, a READ, a 0-byte SEND */
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0x77, 0x5000, 10);
	qpx->wr_id = 2;
	qpx->wr_flags = 0;
	ibv_wr_rdma_write_imm(qpx, 0x99, 0x6000, htobe32(0xabcd));
	ibv_wr_set_inline_data_list(qpx, 2, bufs);
	qpx->wr_id = 3;
	ibv_wr_rdma_read(qpx, 0x55, 0x7000);
	ibv_wr_set_sge_list(qpx, 2, sgl);
	qpx->wr_id = 4;
	ibv_wr_send(qpx);			/* no data at all */
	CHECK_EQ(f->qp_dbr.snd_counter, 0);	/* nothing rung yet */
	CHECK_EQ(ibv_wr_complete(qpx), 0);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 4);
	CHECK_EQ(f->qp->sq.wrs.head, 4);
	CHECK_EQ(wake_calls, 1);
	b = sq_bb(f, 0);
	CHECK_EQ(be32toh(*(uint32_t *)b), 0x00000a);
	CHECK_EQ(b[7], 2);
	CHECK_EQ(b[11], 0x08);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 20)), 0x77);
	b = sq_bb(f, 1);
	CHECK_EQ(be32toh(*(uint32_t *)b), 0x000109);
	CHECK_EQ(b[7], 3);			/* ctrl, raddr, 4 + 8 inline */
	CHECK_EQ(be32toh(*(uint32_t *)(b + 12)), 0xabcd);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 32)), 0x80000008);
	CHECK(!memcmp(b + 36, "abcdefgh", 8));
	b = sq_bb(f, 2);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_RDMA_READ);
	CHECK_EQ(b[7], 4);
	b = sq_bb(f, 3);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_SEND);
	CHECK_EQ(b[7], 1);
	CHECK_EQ(f->qp->sq.wrs.wrid[3], 4);
	CHECK_EQ(f->qp->sq.wrs.wqe_head[3], 3);
	/* several WRs: the doorbell, with the last ctrl */
	CHECK_BYTES(uar(f, 0x800), b, 8);

	/* an error drops the whole batch: too many SGEs in the second WR */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 1, 0x1000, 4);
	ibv_wr_send(qpx);
	ibv_wr_set_sge_list(qpx, 5, sgl);
	ibv_wr_send(qpx);			/* ignored after the error */
	ibv_wr_set_sge(qpx, 1, 0x1000, 4);
	CHECK_EQ(ibv_wr_complete(qpx), EINVAL);
	CHECK_EQ(f->qp->sq.cur_post, 4);
	CHECK_EQ(f->qp->sq.wrs.head, 4);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 4);
	CHECK_EQ(wake_calls, 1);

	/* inline on a READ, an atomic without its SGE, inline too long */
	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, 1, 2);
	ibv_wr_set_inline_data(qpx, "x", 1);
	CHECK_EQ(ibv_wr_complete(qpx), EINVAL);
	ibv_wr_start(qpx);
	ibv_wr_atomic_fetch_add(qpx, 1, 0x8000, 1);
	CHECK_EQ(ibv_wr_complete(qpx), EINVAL);
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_inline_data(qpx, sgl, 101);
	CHECK_EQ(ibv_wr_complete(qpx), ENOMEM);
	/* a single inline WR: BlueFlame; then abort leaves nothing */
	ibv_wr_start(qpx);
	qpx->wr_id = 9;
	ibv_wr_send_imm(qpx, htobe32(7));
	ibv_wr_set_inline_data(qpx, "hello", 5);
	CHECK_EQ(ibv_wr_complete(qpx), 0);
	CHECK_BYTES(uar(f, 0x900), sq_bb(f, 4), 64);
	ibv_wr_start(qpx);
	ibv_wr_atomic_cmp_swp(qpx, 1, 0x8000, 1, 2);
	ibv_wr_set_sge(qpx, 3, 0x9000, 8);
	ibv_wr_abort(qpx);
	CHECK_EQ(f->qp->sq.cur_post, 5);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 5);
	/* the lock was released every time */
	CHECK_EQ(__atomic_load_n(&f->qp->sq.lock.held, __ATOMIC_RELAXED), 0);
	softhca_wr_api_free(f->qp);
	fake_free(f);
}

/* ibv_wr_local_inv, ibv_wr_send_inv, ibv_wr_bind_mw: their WQE bytes. */
static void wr_api_mkey_ops(void)
{
	struct fake *f = fake_new(8, 8, 8, 2, 4);
	struct ibv_qp_ex *qpx = &f->qp->vqp.qp_ex;
	struct ibv_mr mr = { .lkey = 0x4242 };
	struct ibv_mw_bind_info bi = {
		.mr = &mr, .addr = 0x10000, .length = 0x3000,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED,
	};
	uint8_t *b;

	CHECK_EQ(softhca_wr_api_init(f->qp), 0);
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qpx, 0x1234);
	qpx->wr_id = 2;
	ibv_wr_bind_mw(qpx, NULL, 0x5601, &bi);
	qpx->wr_id = 3;
	ibv_wr_send_inv(qpx, 0x9911);
	ibv_wr_set_sge(qpx, 0x77, 0x5000, 10);
	CHECK_EQ(ibv_wr_complete(qpx), 0);
	CHECK_EQ(f->qp->sq.wrs.head, 3);
	b = sq_bb(f, 0);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_LOCAL_INV);
	CHECK_EQ(b[7], 1);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 12)), 0x1234);
	b = sq_bb(f, 1);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_BIND_MW);
	CHECK_EQ(b[7], SOFTHCA_BIND_DS);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 16)), 0x5601);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 20)), 0x4242);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 24)), 0x10000);
	CHECK_EQ(be64toh(*(uint64_t *)(b + 32)), 0x3000);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 40)), SOFTHCA_ACCESS_REMOTE_READ);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 44)), SOFTHCA_BIND_ZERO_BASED);
	CHECK_EQ(f->qp->sq.wrs.wrid[1], 2);
	b = sq_bb(f, 2);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_SEND_INV);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 12)), 0x9911);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 20)), 0x77);
	/* rights a window cannot have drop the batch (local write it takes) */
	bi.mw_access_flags = IBV_ACCESS_MW_BIND;
	ibv_wr_start(qpx);
	ibv_wr_bind_mw(qpx, NULL, 0x5602, &bi);
	CHECK_EQ(ibv_wr_complete(qpx), EINVAL);
	CHECK_EQ(f->qp->sq.cur_post, 3);
	softhca_wr_api_free(f->qp);
	fake_free(f);
}

static void wr_api_sq_full(void)
{
	struct fake *f = fake_new(8, 4, 2, 1, 4);
	struct ibv_qp_ex *qpx = &f->qp->vqp.qp_ex;

	CHECK_EQ(softhca_wr_api_init(f->qp), 0);
	ibv_wr_start(qpx);
	for (int i = 0; i < 3; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 0x1000, 4);
	}
	CHECK_EQ(ibv_wr_complete(qpx), ENOMEM);
	CHECK_EQ(f->qp->sq.cur_post, 0);
	ibv_wr_start(qpx);
	for (int i = 0; i < 2; i++) {
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, 1, 0x1000, 4);
	}
	CHECK_EQ(ibv_wr_complete(qpx), 0);
	CHECK_EQ(f->qp->sq.wrs.head, 2);
	softhca_wr_api_free(f->qp);
	fake_free(f);
}

/* ---- post_recv ------------------------------------------------------- */

/* The QP made a UD QP of PD 7, and an AH of PD @pdn for it. */
static struct softhca_ah ud_ah(struct fake *f, uint32_t pdn)
{
	static const uint8_t dgid[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };
	static const uint8_t dmac[6] = { 2, 0, 0, 0, 0, 9 };
	struct softhca_ah ah;

	f->qp->sq.fmt.tp = SOFTHCA_TP_UD;
	f->qp->sq.fmt.pdn = 7;
	memset(&ah, 0, sizeof(ah));
	softhca_set_av(&ah.av, pdn, dgid, 1, 0, 64, 0, 0, dmac);
	return ah;
}

/* ibv_post_send on a UD QP: the datagram segment from wr.ud, and its refusals. */
static void ud_post_send(void)
{
	struct fake *f = fake_new(8, 8, 8, 2, 4);
	struct softhca_ah ah = ud_ah(f, 7), other = ud_ah(f, 8);
	struct ibv_sge sg = { .addr = 0x5000, .length = 100, .lkey = 0x77 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;
	uint8_t *b;

	wr.wr.ud.ah = &ah.ibv_ah;
	wr.wr.ud.remote_qpn = 0x321;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), 0);
	b = sq_bb(f, 0);
	CHECK_EQ(be32toh(*(uint32_t *)b), SOFTHCA_OPCODE_SEND);
	CHECK_EQ(b[7], 5);			/* ctrl, AV, one pointer */
	CHECK_EQ(be32toh(*(uint32_t *)(b + 16)), 0x11111111);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 24)), SOFTHCA_AV_EXTENDED | 0x321);
	CHECK_BYTES(b + 16 + 12, (uint8_t *)&ah.av.wqe + 12, 36);
	CHECK_EQ(be32toh(*(uint32_t *)sq_bb(f, 1)), 100);
	CHECK_EQ(f->qp->sq.cur_post, 2);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 2);

	/* RDMA on UD, no AH, an AH of another PD: EINVAL, nothing posted. */
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), EINVAL);
	CHECK(bad == &wr);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = NULL;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), EINVAL);
	wr.wr.ud.ah = &other.ibv_ah;
	CHECK_EQ(softhca_post_send(ibqp(f), &wr, &bad), EINVAL);
	CHECK_EQ(f->qp->sq.cur_post, 2);
	CHECK_EQ(f->qp->sq.wrs.head, 1);
	CHECK_EQ(be32toh(f->qp_dbr.snd_counter), 2);
	fake_free(f);
}

/* The extended API on UD: ibv_wr_set_ud_addr before or after the data. */
static void ud_wr_set_ud_addr(void)
{
	struct fake *f = fake_new(8, 8, 8, 2, 4);
	struct ibv_qp_ex *qpx = &f->qp->vqp.qp_ex;
	struct softhca_ah ah = ud_ah(f, 7);
	char inl[8] = "inline!";
	uint8_t *b;

	CHECK_EQ(softhca_wr_api_init(f->qp), 0);
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, &ah.ibv_ah, 0x11, 0x1234);
	ibv_wr_set_sge(qpx, 0x77, 0x5000, 10);
	qpx->wr_id = 2;
	ibv_wr_send_imm(qpx, htobe32(0xbeef));
	ibv_wr_set_inline_data(qpx, inl, 7);
	memcpy(inl, "CHANGED", 7);		/* copied at the setter */
	ibv_wr_set_ud_addr(qpx, &ah.ibv_ah, 0x22, 0x5678);
	CHECK_EQ(ibv_wr_complete(qpx), 0);
	CHECK_EQ(f->qp->sq.wrs.head, 2);
	b = sq_bb(f, 0);
	CHECK_EQ(b[7], 5);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 16)), 0x1234);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 24)) & 0xffffff, 0x11);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 64)), 10);
	b = sq_bb(f, 2);
	CHECK_EQ(b[3], SOFTHCA_OPCODE_SEND_IMM);
	CHECK_EQ(b[7], 5);			/* ctrl, AV, 4 + 7 inline */
	CHECK_EQ(be32toh(*(uint32_t *)(b + 12)), 0xbeef);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 16)), 0x5678);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 24)) & 0xffffff, 0x22);
	CHECK_EQ(be32toh(*(uint32_t *)(b + 64)), SOFTHCA_INLINE_SEG | 7);
	CHECK(!memcmp(b + 68, "inline!", 7));

	/* Without its address a UD WR fails the batch. */
	ibv_wr_start(qpx);
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, 0x77, 0x5000, 10);
	CHECK_EQ(ibv_wr_complete(qpx), EINVAL);
	CHECK_EQ(f->qp->sq.wrs.head, 2);
	softhca_wr_api_free(f->qp);
	fake_free(f);
}

static void recv_sentinel_and_doorbell(void)
{
	static const uint8_t want0[48] = {
		0x00, 0x00, 0x01, 0x00,	0x00, 0x00, 0x00, 0x11,	/* 256, lkey */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00,	0x00, 0x00, 0x01, 0x00,	/* sentinel */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,	/* untouched */
		0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
	};
	static const uint8_t want1[16] = {
		0x00, 0x00, 0x00, 0x00,	0x00, 0x00, 0x01, 0x00,	/* sentinel only */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	struct fake *f = fake_new(8, 8, 8, 1, 2);
	struct ibv_sge sg[5] = {
		{ .addr = 0x10000, .length = 256, .lkey = 0x11 },
		{ .addr = 0x20000, .length = 0, .lkey = 0x22 },
	};
	struct ibv_recv_wr r1 = { .wr_id = 41 };	/* num_sge 0 */
	struct ibv_recv_wr r0 = { .wr_id = 40, .sg_list = sg, .num_sge = 2,
				  .next = &r1 };
	struct ibv_recv_wr r2 = { .wr_id = 42, .sg_list = sg, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	uint8_t dbr[4] = { 0, 0, 0, 2 };

	CHECK_EQ(softhca_post_recv(ibqp(f), &r0, &bad), 0);
	CHECK_BYTES(f->qp->rq.buf, want0, sizeof(want0));
	CHECK_BYTES(f->qp->rq.buf + 64, want1, sizeof(want1));
	CHECK_EQ(f->qp->rq.wrs.wrid[0], 40);
	CHECK_EQ(f->qp->rq.wrs.wrid[1], 41);
	CHECK_BYTES(&f->qp_dbr.rcv_counter, dbr, 4);
	CHECK_EQ(f->qp_dbr.snd_counter, 0);
	/* full (2 WQEs) */
	CHECK_EQ(softhca_post_recv(ibqp(f), &r2, &bad), ENOMEM);
	CHECK(bad == &r2);
	/* too many SGEs for the stride (max_gs 4) */
	f->qp->rq.wrs.head = f->qp->rq.wrs.tail = 2;
	r2.num_sge = 5;
	CHECK_EQ(softhca_post_recv(ibqp(f), &r2, &bad), EINVAL);
	CHECK_EQ(be32toh(f->qp_dbr.rcv_counter), 2);
	/* exactly max_gs: no room for the sentinel, none written */
	r2.num_sge = 4;
	for (int i = 0; i < 4; i++)
		sg[i] = (struct ibv_sge){ .addr = i, .length = 1, .lkey = 0x30 + i };
	CHECK_EQ(softhca_post_recv(ibqp(f), &r2, &bad), 0);
	CHECK_EQ(be32toh(*(uint32_t *)(f->qp->rq.buf + 52)), 0x33);
	CHECK_EQ(be32toh(f->qp_dbr.rcv_counter), 3);
	fake_free(f);
}

/* ---- poll_cq --------------------------------------------------------- */

static void poll_responder_error_and_unknown(void)
{
	struct fake *f = fake_new(4, 8, 8, 1, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_recv_wr r1 = { .wr_id = 71, .sg_list = &sg, .num_sge = 1 };
	struct ibv_recv_wr r0 = { .wr_id = 70, .sg_list = &sg, .num_sge = 1,
				  .next = &r1 };
	struct ibv_send_wr s = { .wr_id = 80, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ };
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct softhca_cqe *c;
	struct ibv_wc wc[8];

	CHECK_EQ(softhca_post_recv(ibqp(f), &r0, &rbad), 0);
	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);

	/* nothing yet: 0, and set_ci untouched */
	f->cq_dbr.set_ci = htobe32(0xdead);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 0);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 0xdead);

	/* a SEND_IMM received */
	put_cqe(f, 0, SOFTHCA_CQE_RESP_SEND_IMM, QPN, 0, 0, 33);
	c = &f->cq->ring[0];
	c->imm_inval_pkey = htobe32(0x99887766);
	/* as a datagram's: GRH area, RoCE v2 over IPv4, VLAN priority 3 */
	c->flags_rqpn = htobe32(0x1a000456);
	c->l4_l3_hdr_type = SOFTHCA_CQE_VLAN_PRESENT;
	c->vlan_info = htobe16(3 << 13 | 7);
	/* a CQE of a QP that is gone: dropped */
	put_cqe(f, 1, SOFTHCA_CQE_RESP_SEND, 0x999, 0, 0, 1);
	/* the READ failed remotely */
	put_cqe(f, 2, SOFTHCA_CQE_REQ_ERR, QPN, SOFTHCA_OPCODE_RDMA_READ, 0, 0);
	f->cq->ring[2].syndrome = SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	f->cq->ring[2].vendor_err_synd = 0x88;
	/* the second receive flushed */
	put_cqe(f, 3, SOFTHCA_CQE_RESP_ERR, QPN, 0, 0, 0);
	f->cq->ring[3].syndrome = SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR;

	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 1, wc), 1);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 1);
	CHECK_EQ(wc[0].wr_id, 70);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc[0].imm_data), 0x99887766);
	CHECK_EQ(wc[0].byte_len, 33);
	CHECK_EQ(wc[0].src_qp, 0x456);
	/* The packet type, as mlx5's provider reports it: not the priority. */
	CHECK_EQ(wc[0].sl, 0xa);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM | IBV_WC_GRH);
	CHECK_EQ(wc[0].qp_num, QPN);
	CHECK_EQ(f->qp->rq.wrs.tail, 1);

	/* the unknown QP's CQE is consumed, and not returned */
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 2);
	CHECK_EQ(wc[0].wr_id, 80);
	CHECK_EQ(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc[0].vendor_err, 0x88);
	CHECK_EQ(f->qp->sq.wrs.tail, 1);
	CHECK_EQ(wc[1].wr_id, 71);
	CHECK_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(f->qp->rq.wrs.tail, 2);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 4);

	/* second lap: owner 1 expected; a stale owner-0 CQE is not taken */
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 0);
	s.wr_id = 81;
	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);
	put_cqe(f, 4, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_RDMA_READ, 1, 64);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 81);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc[0].byte_len, 64);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 5);
	fake_free(f);
}

/*
 * The device gone (disassociated): the engine page reads as the zero page.
 * A waiting CQE is still returned; an empty poll is -EIO, not 0 forever.
 * A kernel that sets no live word never looks gone.
 */
static void poll_empty_on_a_gone_device(void)
{
	struct fake *f = fake_new(4, 8, 8, 1, 4);
	struct ibv_sge sg = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_send_wr s = { .wr_id = 90, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_SEND };
	struct ibv_send_wr *sbad;
	struct ibv_wc wc[4];

	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), 0);
	f->dev->live = SOFTHCA_DEVICE_LIVE;
	f->ctx->dev_live = &f->dev->live;
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), 0);

	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);
	put_cqe(f, 0, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_SEND, 0, 64);
	f->dev->live = 0;
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), 1);
	CHECK_EQ(wc[0].wr_id, 90);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), -EIO);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), -EIO);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 1);

	f->ctx->dev_live = NULL;
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 4, wc), 0);
	fake_free(f);
}

static void clean_drops_one_qp(void)
{
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct softhca_qp other = *f->qp;
	struct ibv_wc wc[8];

	other.qpn = 0x456;
	table_put(f->ctx, &other);
	other.sq.wrs.wrid = zalloc(8, 8 * sizeof(uint64_t));
	other.sq.wrs.wqe_head = zalloc(8, 8 * sizeof(uint32_t));
	/* Each QP has two WRs posted; the CQEs name the second (slot 1). */
	other.sq.wrs.wrid[1] = 0x456;
	other.sq.wrs.wqe_head[1] = 1;
	other.sq.wrs.head = 2;
	f->qp->sq.wrs.wrid[1] = 0x123;
	f->qp->sq.wrs.wqe_head[1] = 1;
	f->qp->sq.wrs.head = 2;

	put_cqe(f, 0, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_SEND, 1, 0);
	put_cqe(f, 1, SOFTHCA_CQE_REQ, 0x456, SOFTHCA_OPCODE_SEND, 1, 0);
	put_cqe(f, 2, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_SEND, 1, 0);
	softhca_cq_clean_locked(f->cq, QPN, NULL);
	CHECK_EQ(f->cq->cons_index, 2);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 2);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x456);
	CHECK_EQ(wc[0].qp_num, 0x456);
	free(other.sq.wrs.wrid);
	free(other.sq.wrs.wqe_head);
	fake_free(f);
}

/*
 * CQEs no outstanding WR matches are dropped without touching any queue: a
 * WR already retired (a duplicate), a slot not posted on this lap, a
 * receive with the RQ empty, a QP of this context whose queues use another
 * CQ (never cached either: destroying it would not clear this CQ's cache).
 */
static void poll_drops_cqes_no_wr_matches(void)
{
	struct fake *f = fake_new(16, 8, 8, 1, 4);
	struct softhca_cq *cq2 = zalloc(64, sizeof(*cq2));
	struct softhca_qp other = *f->qp;
	struct ibv_sge sg = { .addr = 0x1000, .length = 64, .lkey = 1 };
	struct ibv_send_wr s = { .wr_id = 90, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ };
	struct ibv_send_wr *sbad;
	struct ibv_wc wc[8];

	other.qpn = 0x456;
	other.vqp.qp.send_cq = &cq2->ibv_cq;
	other.vqp.qp.recv_cq = &cq2->ibv_cq;
	other.sq.wrs.wrid = zalloc(8, 8 * sizeof(uint64_t));
	other.sq.wrs.wqe_head = zalloc(8, 8 * sizeof(uint32_t));
	other.sq.wrs.head = 1;		/* one WR posted, at slot 0 */
	table_put(f->ctx, &other);

	/* WRs 0 and 1 (slots 0, 1) posted and completed; WR 2 at slot 2. */
	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);
	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);
	put_cqe(f, 0, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_RDMA_READ, 1, 64);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 1);
	CHECK_EQ(f->qp->sq.wrs.tail, 2);
	s.wr_id = 92;
	CHECK_EQ(softhca_post_send(ibqp(f), &s, &sbad), 0);

	put_cqe(f, 1, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_RDMA_READ, 1, 64);
	put_cqe(f, 2, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_RDMA_READ, 5, 0);
	put_cqe(f, 3, SOFTHCA_CQE_REQ, 0x456, SOFTHCA_OPCODE_RDMA_READ, 0, 0);
	put_cqe(f, 4, SOFTHCA_CQE_RESP_SEND, QPN, 0, 0, 8);
	put_cqe(f, 5, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_RDMA_READ, 2, 64);

	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 92);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 6);
	CHECK_EQ(f->qp->sq.wrs.tail, 3);
	CHECK_EQ(f->qp->rq.wrs.tail, 0);
	CHECK_EQ(other.sq.wrs.tail, 0);
	CHECK(f->cq->last_qp == f->qp);

	put_cqe(f, 6, SOFTHCA_CQE_REQ, 0x456, SOFTHCA_OPCODE_RDMA_READ, 0, 0);
	CHECK_EQ(softhca_poll_cq(&f->cq->ibv_cq, 8, wc), 0);
	CHECK_EQ(be32toh(f->cq_dbr.set_ci), 7);
	CHECK_EQ(other.sq.wrs.tail, 0);
	CHECK(f->cq->last_qp == f->qp);

	softhca_table_remove(&f->ctx->qp_table, 0x456, &other);
	free(other.sq.wrs.wrid);
	free(other.sq.wrs.wqe_head);
	free(cq2);
	fake_free(f);
}

/* ---- req_notify_cq, cq_event ------------------------------------------ */

static void arm_doorbells(void)
{
	static const uint8_t want_uar[8] = {
		0x21, 0x00, 0x00, 0x03,	/* sn 2, REQ_NOT_SOL, ci 3 */
		0x00, 0x00, 0x00, 0x07,	/* CQN */
	};
	struct fake *f = fake_new(8, 8, 8, 1, 4);
	struct ibv_cq *cq = &f->cq->ibv_cq;

	wake_calls = 0;
	f->cq->cons_index = 0x1000003;		/* 24 bits go out */
	CHECK_EQ(softhca_req_notify_cq(cq, 0), 0);
	CHECK_EQ(be32toh(f->cq_dbr.arm), 0x00000003);
	CHECK_EQ(be64toh(*(uint64_t *)uar(f, SOFTHCA_UAR_CQ_DB_OFFSET)),
		 0x0000000300000007ull);
	CHECK_EQ(f->cq_dbr.set_ci, 0);		/* arming consumes nothing */
	CHECK_EQ(wake_calls, 0);
	/*
	 * Two events later, solicited only, the engine asleep: an empty CQ
	 * needs nobody to look now (the next CQE is checked against the arm
	 * when it is written), so no call...
	 */
	softhca_cq_event(cq);
	softhca_cq_event(cq);
	f->db->thread[1].flags = SOFTHCA_ENGINE_NEED_WAKEUP;
	CHECK_EQ(softhca_req_notify_cq(cq, 1), 0);
	CHECK_EQ(be32toh(f->cq_dbr.arm), 0x21000003);
	CHECK_BYTES(uar(f, SOFTHCA_UAR_CQ_DB_OFFSET), want_uar, 8);
	CHECK_EQ(wake_calls, 0);
	CHECK_EQ(f->db->slot[CQ_SLOT] | f->db->thread[1].pending, 0);
	/* ...but a CQE already waiting at ci needs the engine: one call. */
	put_cqe(f, 0x1000003, SOFTHCA_CQE_REQ, QPN, SOFTHCA_OPCODE_SEND, 1, 0);
	CHECK_EQ(softhca_req_notify_cq(cq, 1), 0);
	CHECK_EQ(wake_calls, 1);
	CHECK_EQ(f->db->slot[CQ_SLOT], 1);
	CHECK_EQ(f->db->group[CQ_SLOT >> SOFTHCA_DB_GROUP_SHIFT], 1);
	CHECK_EQ(f->db->thread[1].pending, 1);
	/* Polling engine: never a call. */
	f->db->thread[1].flags = 0;
	CHECK_EQ(softhca_req_notify_cq(cq, 1), 0);
	CHECK_EQ(wake_calls, 1);
	/* arm_sn wraps on 2 bits */
	softhca_cq_event(cq);
	softhca_cq_event(cq);
	CHECK_EQ(softhca_req_notify_cq(cq, 0), 0);
	CHECK_EQ(be32toh(f->cq_dbr.arm), 0x00000003);
	fake_free(f);
}

/* ---- threads --------------------------------------------------------- */

#define T_POSTS	100000
#define T_LIMIT_S	60	/* a lost completion must fail, not hang */

struct tstate {
	struct fake *f;
	volatile int stop;		/* set when done or late */
	uint64_t seen[2];		/* sum of wr_ids per poster */
	uint32_t ncomp;
	int errors;
};

/*
 * A fake engine: follows the SND record, and for each WQE from its own
 * counter writes a REQ CQE naming it, never more than the CQ holds beyond
 * set_ci.
 */
static void *t_engine(void *arg)
{
	struct tstate *t = arg;
	struct fake *f = t->f;
	uint32_t ci = 0, pi = 0;

	while (!t->stop) {
		uint16_t db = be32toh(__atomic_load_n(&f->qp_dbr.snd_counter,
						      __ATOMIC_ACQUIRE));

		if ((uint16_t)ci == db)
			sched_yield();
		while ((uint16_t)ci != db) {
			uint8_t *ctrl = sq_bb(f, ci & (f->qp->sq.wqebb_cnt - 1));
			uint32_t ds = ctrl[7] & 0x3f;

			while (pi - be32toh(__atomic_load_n(&f->cq_dbr.set_ci,
							    __ATOMIC_ACQUIRE)) >=
			       f->cq->cqe_cnt && !t->stop)
				sched_yield();
			if ((be32toh(*(uint32_t *)ctrl) >> 8 & 0xffff) !=
			    (ci & 0xffff))
				t->errors++;
			put_cqe(f, pi++, SOFTHCA_CQE_REQ, QPN, ctrl[3],
				(uint16_t)ci, 0);
			ci += softhca_ds_to_wqebbs(ds);
		}
	}
	return NULL;
}

static struct tstate *tst;
static struct timespec t_start;

static bool t_late(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec - t_start.tv_sec < T_LIMIT_S)
		return false;
	tst->stop = 1;
	return true;
}

/* Posts T_POSTS signaled SENDs in chains of up to 3, resuming at bad_wr. */
static void *t_poster(void *arg)
{
	uint64_t who = (uintptr_t)arg;
	uint8_t payload[8] = { 0 };
	struct ibv_sge sg[3][2];
	struct ibv_send_wr w[3], *bad;

	memset(w, 0, sizeof(w));
	for (uint64_t i = 1; i <= T_POSTS && !tst->stop;) {
		int k = T_POSTS - i + 1 < 3 ? (int)(T_POSTS - i + 1) : 3;
		int ret;

		for (int j = 0; j < k; j++) {
			uint64_t n = i + j;

			sg[j][0] = (struct ibv_sge){ .addr = 0x1000, .length = 8, .lkey = 1 };
			sg[j][1] = (struct ibv_sge){ .addr = 0x2000, .length = 8, .lkey = 1 };
			w[j].wr_id = who << 32 | n;
			w[j].sg_list = sg[j];
			w[j].num_sge = 1 + (n & 1);	/* 2 or 3 DS: 1 WQEBB */
			w[j].opcode = IBV_WR_SEND;
			w[j].send_flags = IBV_SEND_SIGNALED;
			w[j].next = j + 1 < k ? &w[j + 1] : NULL;
			if (n % 7 == 0) {
				/* inline, 4 + 8 bytes: 1 DS */
				w[j].send_flags |= IBV_SEND_INLINE;
				w[j].num_sge = 1;
				sg[j][0].addr = (uintptr_t)payload;
			}
		}
		bad = NULL;
		ret = softhca_post_send(&tst->f->qp->vqp.qp, w, &bad);
		if (!ret) {
			i += k;
		} else if (ret == ENOMEM && bad >= w && bad < w + k) {
			/* full: the WRs before bad are in; the poller makes room */
			i += bad - w;
			if (t_late())
				__atomic_fetch_add(&tst->errors, 1, __ATOMIC_RELAXED);
			sched_yield();
		} else {
			__atomic_fetch_add(&tst->errors, 1, __ATOMIC_RELAXED);
			i += k;
		}
	}
	return NULL;
}

static void *t_poller(void *arg)
{
	struct tstate *t = arg;
	struct ibv_wc wc[16];

	while (t->ncomp < 2 * T_POSTS && !t_late()) {
		int n = softhca_poll_cq(&t->f->cq->ibv_cq, 16, wc);

		if (!n)
			sched_yield();	/* 2 CPUs, 4 threads: let the others run */

		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS ||
			    (wc[i].wr_id >> 32) > 1)
				t->errors++;
			else
				t->seen[wc[i].wr_id >> 32] += wc[i].wr_id & 0xffffffff;
		}
		t->ncomp += n;
	}
	return NULL;
}

static void threads_post_and_poll(void)
{
	struct tstate t = { .f = fake_new(16, 32, 24, 1, 4) };
	pthread_t eng, pol, p0, p1;
	uint64_t want = (uint64_t)T_POSTS * (T_POSTS + 1) / 2;

	t.f->qp->sq.fmt.max_inline = 64;
	tst = &t;
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	pthread_create(&eng, NULL, t_engine, &t);
	pthread_create(&pol, NULL, t_poller, &t);
	pthread_create(&p0, NULL, t_poster, (void *)0);
	pthread_create(&p1, NULL, t_poster, (void *)1);
	pthread_join(p0, NULL);
	pthread_join(p1, NULL);
	pthread_join(pol, NULL);
	t.stop = 1;
	pthread_join(eng, NULL);

	CHECK_EQ(t.errors, 0);
	CHECK_EQ(t.ncomp, 2 * T_POSTS);
	CHECK_EQ(t.seen[0], want);
	CHECK_EQ(t.seen[1], want);
	CHECK_EQ(t.f->qp->sq.wrs.head, 2 * T_POSTS);
	CHECK_EQ(t.f->qp->sq.wrs.tail, 2 * T_POSTS);
	fake_free(t.f);
}

static const struct tap_test tests[] = {
	{ "send_one_wqe_and_doorbell", send_one_wqe_and_doorbell },
	{ "send_inline_wraps_and_blueflame", send_inline_wraps_and_blueflame },
	{ "send_every_opcode_segments", send_every_opcode_segments },
	{ "post_in_a_state_without_posting", post_in_a_state_without_posting },
	{ "send_bad_wr_stops_the_batch", send_bad_wr_stops_the_batch },
	{ "send_overflow_and_recovery", send_overflow_and_recovery },
	{ "wakeup_only_when_engine_sleeps", wakeup_only_when_engine_sleeps },
	{ "wr_api_batch_and_rollback", wr_api_batch_and_rollback },
	{ "wr_api_mkey_ops", wr_api_mkey_ops },
	{ "wr_api_sq_full", wr_api_sq_full },
	{ "ud_post_send", ud_post_send },
	{ "ud_wr_set_ud_addr", ud_wr_set_ud_addr },
	{ "recv_sentinel_and_doorbell", recv_sentinel_and_doorbell },
	{ "poll_responder_error_and_unknown", poll_responder_error_and_unknown },
	{ "poll_empty_on_a_gone_device", poll_empty_on_a_gone_device },
	{ "clean_drops_one_qp", clean_drops_one_qp },
	{ "poll_drops_cqes_no_wr_matches", poll_drops_cqes_no_wr_matches },
	{ "arm_doorbells", arm_doorbells },
	{ "threads_post_and_poll", threads_post_and_poll },
};

TAP_MAIN(tests)
