// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel survives any bytes in the rings user space can write
 * (design.md §9, brief: "any bytes in a user-writable ring"). Each round
 * opens a connected RC pair, then writes into the SQ, the RQ and their
 * doorbell record, into the CQ doorbell records (consumer index, arm
 * word) and into the context's doorbell area (the hints), while the engine
 * executes:
 *   random   - random bytes everywhere, random producer counters;
 *   shaped   - well-formed control segments (real QPN, every opcode and some
 *              invalid ones, any DS count) whose segments carry the real
 *              keys or random ones, addresses around the edges of the
 *              registered window and lengths from 0 to 4 GiB;
 *   racing   - shaped WQEs rewritten while the engine reads them.
 * After each round, and checked with values:
 *   - memory outside the registered windows (guards on both ends) is
 *     untouched: no key reaches memory it does not cover;
 *   - every object is destroyed without error, `rdma res` counts return to
 *     the baseline;
 * and at the end a fresh pair moves data correctly. The same over a pair
 * of UD QPs, whose WQEs carry random datagram segments (Q_Keys with and
 * without bit 31, real, multicast and random QPNs and GIDs, source GID
 * indexes in and beyond the table, any MAC) while one end is attached to a
 * multicast group the fuzzed GIDs sometimes name.
 * vm-run fails the run on any WARN/BUG/Oops in dmesg.
 * SOFTHCA_FUZZ_ROUNDS (default 60 per variant), SOFTHCA_FUZZ_SEED.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rng.h"
#include "softhca.h"		/* the provider's queue pointers (white box) */
#include "ud.h"
#include "util.h"
#include "verbs_util.h"

#define GUARD		((256 << 10) + 100)	/* untouchable bytes before/after */
#define WIN		(512 << 10)	/* the registered window */
#define PATTERN_SEED	0x5eed

enum fuzz_mode { FUZZ_RANDOM, FUZZ_SHAPED, FUZZ_RACING, FUZZ_MODES };

/* One end's fuzzing targets. */
struct target {
	struct rc_end *e;
	uint32_t next;			/* shaped: the SQ slot to write next */
	struct ibv_mr *win;		/* over buf + GUARD, WIN bytes */
	struct softhca_qp *sqp;
	struct softhca_cq *scq, *rcq;
	/* UD: the datagram segment's plausible values. */
	bool ud;
	int gid_index;			/* this end's source GID */
	union ibv_gid gid;
};

/* The group the UD rounds attach a QP to, and the fuzzed AVs name. */
static union ibv_gid fuzz_mgid = { .raw = { [10] = 0xff, [11] = 0xff,
					     239, 9, 9, 9 } };

/* An address near the edges of @t's window (or anywhere, sometimes). */
static uint64_t pick_addr(const struct target *t)
{
	uint64_t base = (uintptr_t)t->e->buf + GUARD;

	switch (rnd_below(6)) {
	case 0:
		return base - 1 - rnd_below(4096);
	case 1:
		return base + WIN - rnd_below(4096);
	case 2:
		return base + rnd_below(WIN);
	case 3:
		return rnd();
	case 4:
		return base;
	default:
		return base + WIN + rnd_below(4096);
	}
}

static uint32_t pick_len(void)
{
	static const uint32_t odd[] = { 0, 1, 7, 8, 64, 4096, WIN, WIN + 1,
					0x7fffffff, 0x80000000, 0xffffffff };

	if (rnd_below(2))
		return odd[rnd_below(sizeof(odd) / sizeof(odd[0]))];
	return rnd_below(1 << 17);
}

static uint32_t pick_key(const struct target *self, const struct target *peer,
			 bool remote)
{
	switch (rnd_below(4)) {
	case 0:
		return (uint32_t)rnd();
	case 1:
		return (remote ? peer : self)->win->rkey ^ (1u << rnd_below(32));
	default:
		return remote ? peer->win->rkey : self->win->lkey;
	}
}

/* Mostly an opcode of the table (<rdma/softhca-opcodes.h>), else any byte. */
static uint8_t pick_opcode(void)
{
	uint32_t op;

	if (!rnd_below(8))
		return (uint8_t)rnd();
	do
		op = rnd_below(SOFTHCA_OPCODE_CNT);
	while (!softhca_opcode_info(op));
	return (uint8_t)op;
}

/* A datagram segment: mostly the real peer and Q_Key, else anything. */
static void shaped_av(const struct target *t, const struct target *peer,
		      struct softhca_wqe_av *av)
{
	static const uint32_t qkeys[] = { UD_QKEY, 0x80000000, 0x80010000,
					  0xffffffff, 0 };
	uint32_t sgid = rnd_below(4) ? (uint32_t)t->gid_index : rnd_below(256);

	rnd_fill(av, sizeof(*av));
	av->qkey = htobe32(rnd_below(2) ? qkeys[rnd_below(5)] : (uint32_t)rnd());
	switch (rnd_below(4)) {
	case 0:
		av->dqp_dct = htobe32((uint32_t)rnd());
		break;
	case 1:
		av->dqp_dct = htobe32(SOFTHCA_AV_EXTENDED | 0xffffff);
		break;
	default:
		av->dqp_dct = htobe32(SOFTHCA_AV_EXTENDED | peer->sqp->qpn);
	}
	av->grh_gid_fl = htobe32(SOFTHCA_AV_GRH | sgid << 20 | (rnd() & 0xfffff));
	switch (rnd_below(4)) {
	case 0:
		break;			/* random */
	case 1:
		memcpy(av->rgid, fuzz_mgid.raw, 16);
		break;
	default:
		memcpy(av->rgid, peer->gid.raw, 16);
	}
}

/* A well-formed control segment and plausible segments at WQEBB @slot. */
static void shaped_wqe(const struct target *t, const struct target *peer,
		       uint32_t slot)
{
	struct softhca_sq *sq = &t->sqp->sq;
	uint8_t wqe[4 * SOFTHCA_SEND_WQE_BB];
	struct softhca_wqe_ctrl_seg *ctrl = (void *)wqe;
	uint32_t ds = 1 + rnd_below(SOFTHCA_WQE_MAX_DS);
	uint32_t size = sizeof(wqe), off, ring_size;
	uint8_t opcode = pick_opcode();

	rnd_fill(wqe, sizeof(wqe));
	ctrl->opmod_idx_opcode = htobe32((rnd_below(4) ? 0 : (uint32_t)rnd() << 24) |
					 ((slot & 0xffff) << 8) | opcode);
	ctrl->qpn_ds = htobe32((rnd_below(8) ? t->sqp->qpn : (uint32_t)rnd()) << 8 |
			       ds);
	ctrl->fm_ce_se = (uint8_t)rnd();
	for (off = 16; off + 16 <= size; off += 16) {
		uint8_t *seg = wqe + off;

		switch (rnd_below(4)) {
		case 0: {
			struct softhca_wqe_raddr_seg *r = (void *)seg;

			r->raddr = htobe64(pick_addr(peer));
			r->rkey = htobe32(pick_key(t, peer, true));
			break;
		}
		case 1: {
			struct softhca_wqe_inline_seg *in = (void *)seg;

			in->byte_count = htobe32(SOFTHCA_INLINE_SEG |
						 rnd_below(1024));
			break;
		}
		default: {
			struct softhca_wqe_data_seg *d = (void *)seg;

			d->byte_count = htobe32(pick_len());
			d->lkey = htobe32(pick_key(t, peer, false));
			d->addr = htobe64(pick_addr(t));
			break;
		}
		}
	}
	/* A datagram QP's WQEs carry a datagram segment, mostly SENDs. */
	if (t->ud) {
		if (rnd_below(2))
			ctrl->opmod_idx_opcode =
				htobe32((be32toh(ctrl->opmod_idx_opcode) & ~0xffu) |
					(rnd_below(2) ? SOFTHCA_OPCODE_SEND :
							SOFTHCA_OPCODE_SEND_IMM));
		shaped_av(t, peer, (struct softhca_wqe_av *)(wqe + 16));
	}
	/* Into the ring at @slot, wrapping like the provider does. */
	ring_size = sq->wqebb_cnt * SOFTHCA_SEND_WQE_BB;
	off = (slot & (sq->wqebb_cnt - 1)) * SOFTHCA_SEND_WQE_BB;
	for (uint32_t i = 0; i < size; i++)
		sq->fmt.ring.buf[(off + i) % ring_size] = wqe[i];
}

/*
 * A valid UD SEND of up to the MTU from @t's window to @peer's QP at WQEBB
 * @slot (two WQEBBs: ctrl + AV, one data pointer).
 */
static void valid_ud_wqe(const struct target *t, const struct target *peer,
			 uint32_t slot)
{
	struct softhca_sq *sq = &t->sqp->sq;
	uint32_t ring_size = sq->wqebb_cnt * SOFTHCA_SEND_WQE_BB;
	uint32_t off = (slot & (sq->wqebb_cnt - 1)) * SOFTHCA_SEND_WQE_BB;
	uint8_t wqe[2 * SOFTHCA_SEND_WQE_BB] = { 0 };
	struct softhca_wqe_ctrl_seg *ctrl = (void *)wqe;
	struct softhca_wqe_av *av = (void *)(wqe + 16);
	struct softhca_wqe_data_seg *d = (void *)(wqe + 64);
	uint32_t len = rnd_below(UD_MTU + 1);

	ctrl->opmod_idx_opcode = htobe32(((slot & 0xffff) << 8) |
					 SOFTHCA_OPCODE_SEND);
	ctrl->qpn_ds = htobe32(t->sqp->qpn << 8 | 5);
	ctrl->fm_ce_se = SOFTHCA_WQE_CTRL_CQ_UPDATE;
	av->qkey = htobe32(UD_QKEY);
	av->dqp_dct = htobe32(SOFTHCA_AV_EXTENDED | peer->sqp->qpn);
	av->grh_gid_fl = htobe32(SOFTHCA_AV_GRH | (uint32_t)t->gid_index << 20);
	av->hop_limit = 64;
	memcpy(av->rgid, rnd_below(4) ? peer->gid.raw : fuzz_mgid.raw, 16);
	d->byte_count = htobe32(len);
	d->lkey = htobe32(t->win->lkey);
	d->addr = htobe64((uintptr_t)t->e->buf + GUARD + rnd_below(WIN - len));
	for (uint32_t i = 0; i < sizeof(wqe); i++)
		sq->fmt.ring.buf[(off + i) % ring_size] = wqe[i];
}

/*
 * Where @len bytes of @t's window go: inside it, or (one time in four)
 * sticking out of either end by 1..64 bytes, which must fail.
 */
static uint64_t window_addr(const struct target *t, uint32_t len)
{
	uint64_t base = (uintptr_t)t->e->buf + GUARD;

	switch (rnd_below(8)) {
	case 0:
		return base - 1 - rnd_below(64);
	case 1:
		return base + WIN - len + 1 + rnd_below(64);
	default:
		return base + rnd_below(WIN - len);
	}
}

/*
 * A valid RDMA WRITE or READ of up to 4 KiB between the two windows at
 * WQEBB @slot (one WQEBB: ctrl, raddr, data), so some rounds execute real
 * work before the garbage that follows.
 */
static void valid_wqe(const struct target *t, const struct target *peer,
		      uint32_t slot)
{
	struct softhca_sq *sq = &t->sqp->sq;
	uint8_t *wqe = sq->fmt.ring.buf +
		       (slot & (sq->wqebb_cnt - 1)) * SOFTHCA_SEND_WQE_BB;
	struct softhca_wqe_ctrl_seg *ctrl = (void *)wqe;
	struct softhca_wqe_raddr_seg *r = (void *)(wqe + 16);
	struct softhca_wqe_data_seg *d = (void *)(wqe + 32);
	uint32_t len = 1 + rnd_below(4096);
	uint8_t opcode = rnd_below(2) ? SOFTHCA_OPCODE_RDMA_WRITE :
					SOFTHCA_OPCODE_RDMA_READ;

	memset(wqe, 0, SOFTHCA_SEND_WQE_BB);
	ctrl->opmod_idx_opcode = htobe32(((slot & 0xffff) << 8) | opcode);
	ctrl->qpn_ds = htobe32(t->sqp->qpn << 8 | 3);
	ctrl->fm_ce_se = SOFTHCA_WQE_CTRL_CQ_UPDATE;
	r->raddr = htobe64(window_addr(peer, len));
	r->rkey = htobe32(peer->win->rkey);
	d->byte_count = htobe32(len);
	d->lkey = htobe32(t->win->lkey);
	d->addr = htobe64(window_addr(t, len));
}

/* Receive WQEs with keys/addresses around the window, or random. */
static void shaped_rwqe(const struct target *t, uint32_t idx)
{
	struct softhca_rq *rq = &t->sqp->rq;
	uint32_t stride = 1u << rq->wqe_shift;
	uint8_t *w = rq->buf + (idx & (rq->wqe_cnt - 1)) * stride;

	rnd_fill(w, stride);
	for (uint32_t off = 0; off + 16 <= stride; off += 16) {
		struct softhca_wqe_data_seg *d = (void *)(w + off);

		if (!rnd_below(5))
			break;
		d->byte_count = htobe32(pick_len());
		d->lkey = htobe32(pick_key(t, t, false));
		d->addr = htobe64(pick_addr(t));
	}
}

/* A receive WQE over the whole window (a datagram QP's land in it). */
static void valid_rwqe(const struct target *t, uint32_t idx)
{
	struct softhca_rq *rq = &t->sqp->rq;
	uint32_t stride = 1u << rq->wqe_shift;
	struct softhca_wqe_data_seg *d =
		(void *)(rq->buf + (idx & (rq->wqe_cnt - 1)) * stride);

	memset(d, 0, stride);
	d->byte_count = htobe32(UD_GRH + UD_MTU);
	d->lkey = htobe32(t->win->lkey);
	d->addr = htobe64((uintptr_t)t->e->buf + GUARD + WIN / 2);
	if (stride > sizeof(*d))
		softhca_set_sentinel_seg(d + 1);
}

static void fuzz_cq(struct softhca_cq *cq)
{
	if (rnd_below(2))
		cq->dbr->set_ci = (uint32_t)rnd();
	if (rnd_below(2))
		cq->dbr->arm = (uint32_t)rnd();
	if (!rnd_below(4))
		rnd_fill(cq->ring, cq->cqe_cnt * sizeof(*cq->ring));
	/* The engine looks at an arm word when the CQ's slot rings. */
	softhca_db_hint_set(&cq->db);
}

/* Random bytes over a random stretch of the context's doorbell area. */
static void fuzz_db_area(struct softhca_context *ctx)
{
	uint32_t off = rnd_below(SOFTHCA_DB_AREA_SIZE);
	uint32_t len = rnd_below(SOFTHCA_DB_AREA_SIZE - off) + 1;

	rnd_fill((uint8_t *)ctx->db + off, len);
}

/* One burst of writes into @t's queues, then the doorbells. */
static void fuzz_once(struct target *t, struct target *peer,
		      enum fuzz_mode mode)
{
	struct softhca_context *ctx = to_sctx(t->e->ctx);
	struct softhca_sq *sq = &t->sqp->sq;
	struct softhca_rq *rq = &t->sqp->rq;
	uint32_t n = 1 + rnd_below(sq->wqebb_cnt);
	uint32_t valid = rnd_below(4), start = t->next;

	if (mode == FUZZ_RANDOM) {
		rnd_fill(sq->fmt.ring.buf, sq->wqebb_cnt * SOFTHCA_SEND_WQE_BB);
		if (rq->wqe_cnt)
			rnd_fill(rq->buf, rq->wqe_cnt << rq->wqe_shift);
		t->sqp->dbr->snd_counter = (uint32_t)rnd();
		t->sqp->dbr->rcv_counter = (uint32_t)rnd();
	} else {
		/* From where the engine is (if nothing failed yet). */
		if (!rnd_below(4))
			start = rnd_below(0x10000);
		n += valid;
		for (uint32_t i = 0; i < n; i++) {
			if (i < valid && t->ud)
				valid_ud_wqe(t, peer, start + 2 * i);
			else if (i < valid)
				valid_wqe(t, peer, start + i);
			else
				shaped_wqe(t, peer, start + i + (t->ud ? valid : 0));
		}
		t->next = start + n + (t->ud ? valid : 0);
		for (uint32_t i = 0; rq->wqe_cnt && i < rq->wqe_cnt; i++) {
			if (t->ud && i < 2 * valid)
				valid_rwqe(t, i);
			else
				shaped_rwqe(t, i);
		}
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		t->sqp->dbr->rcv_counter = htobe32(rnd_below(0x10000));
		t->sqp->dbr->snd_counter =
			htobe32((start + (rnd_below(4) ? t->next - start :
				   rnd_below(0x10000))) &
				0xffff);
	}
	/* The hint after the records, as the provider does it. */
	softhca_db_hint_set(&t->sqp->db);
	if (!rnd_below(3))
		fuzz_cq(t->scq);
	if (!rnd_below(3))
		fuzz_cq(t->rcq);
	if (mode == FUZZ_RANDOM && !rnd_below(2))
		fuzz_db_area(ctx);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	engine_wake_method(t->e->ctx);
}

static int target_init(struct target *t, struct rc_end *e)
{
	*t = (struct target){ .e = e };
	/* Only the window is registered: the guards have no key at all. */
	ibv_dereg_mr(e->mr);
	e->mr = NULL;
	t->win = ibv_reg_mr(e->pd, e->buf + GUARD, WIN, RC_ACCESS_ALL);
	if (!t->win)
		return -errno;
	rc_fill(e->buf, GUARD, PATTERN_SEED);
	/* Copies between different offsets of this change the window. */
	rc_fill(e->buf + GUARD, WIN, PATTERN_SEED + 2);
	rc_fill(e->buf + GUARD + WIN, e->buf_size - GUARD - WIN,
		PATTERN_SEED + 1);
	t->sqp = to_sqp(e->qp);
	t->scq = to_scq(e->scq);
	t->rcq = to_scq(e->rcq);
	return 0;
}

static long guards_broken(const struct target *t)
{
	long off = rc_check_fill(t->e->buf, GUARD, PATTERN_SEED);

	if (off >= 0)
		return off;
	off = rc_check_fill(t->e->buf + GUARD + WIN,
			    t->e->buf_size - GUARD - WIN, PATTERN_SEED + 1);
	return off >= 0 ? GUARD + WIN + off : -1;
}

static const char *const res_names[] = { "qp", "cq", "mr", "pd" };
#define NRES (sizeof(res_names) / sizeof(res_names[0]))

static void res_snapshot(long *v)
{
	for (size_t i = 0; i < NRES; i++)
		v[i] = res_count("shca0", res_names[i]);
}

FIXTURE(fuzz) {
	long res0[NRES];
};

FIXTURE_VARIANT(fuzz) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(fuzz, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(fuzz, cross_dev) { .topo = RC_CROSS_DEV };

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(fuzz)
{
	TH_LOG("seed %#llx (SOFTHCA_FUZZ_SEED to replay)",
	       (unsigned long long)rnd_seed());
	res_snapshot(self->res0);
}

FIXTURE_TEARDOWN(fuzz)
{
}

TEST_F_TIMEOUT(fuzz, rings_and_doorbells, 1200)
{
	const char *env = getenv("SOFTHCA_FUZZ_ROUNDS");
	int rounds = env ? atoi(env) : 60;
	int err_qps = 0, landed = 0;
	long res[NRES];

	for (int r = 0; r < rounds; r++) {
		enum fuzz_mode mode = (enum fuzz_mode)(r % FUZZ_MODES);
		struct target t[2];
		struct rc_pair p;
		struct rc_cfg c;

		rc_cfg_default(&c, variant->topo);
		c.rnr_retry[0] = c.rnr_retry[1] = 1;	/* no endless RNR */
		c.timeout[0] = c.timeout[1] = 8;	/* ~1 ms retries */
		c.retry_cnt[0] = c.retry_cnt[1] = 1;
		c.min_rnr_timer[0] = c.min_rnr_timer[1] = 1;
		c.cqe = 16;				/* overruns happen */
		ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, target_init(&t[i], &p.e[i]))
				TH_LOG("reg window: %s", strerror(errno));
		}

		for (int k = 0; k < (mode == FUZZ_RACING ? 40 : 3); k++) {
			int i = rnd_below(2);

			fuzz_once(&t[i], &t[!i], mode);
			if (mode != FUZZ_RACING)
				usleep(2000);
		}
		usleep(5000);
		/* Whatever the engine did, the guards are intact... */
		for (int i = 0; i < 2; i++) {
			long bad = guards_broken(&t[i]);

			EXPECT_EQ(-1, bad)
				TH_LOG("round %d mode %d: end %d guard byte %ld changed",
				       r, mode, i, bad);
		}
		/* What it did: QPs the garbage put in ERR, writes that landed. */
		for (int i = 0; i < 2; i++) {
			err_qps += rc_qp_state(p.e[i].qp) == IBV_QPS_ERR;
			landed += rc_check_fill(p.e[i].buf + GUARD, WIN,
						PATTERN_SEED + 2) >= 0;
		}
		/* ...and every object goes away cleanly. */
		for (int i = 0; i < 2; i++) {
			EXPECT_EQ(0, ibv_destroy_qp(p.e[i].qp));
			p.e[i].qp = NULL;
			EXPECT_EQ(0, ibv_dereg_mr(t[i].win));
		}
		rc_pair_destroy(&p);
		res_snapshot(res);
		for (size_t i = 0; i < NRES; i++) {
			ASSERT_EQ(self->res0[i], res[i])
				TH_LOG("round %d: %s count %ld, baseline %ld", r,
				       res_names[i], res[i], self->res0[i]);
		}
	}
	/*
	 * The fuzzing reached the engine: it errored QPs and also executed
	 * WQEs that were valid enough to write into a window.
	 */
	TH_LOG("%d rounds: %d of %d QPs ended in ERR, %d windows written",
	       rounds, err_qps, 2 * rounds, landed);
	EXPECT_GE(err_qps, rounds / 2);
	EXPECT_GE(landed, 1);
}

/* A UD end as the fuzzer's target: the RC helpers work on an rc_end. */
static int ud_target_init(struct target *t, struct rc_end *re,
			  struct ud_end *e)
{
	int ret;

	*re = (struct rc_end){ .dev = e->dev, .ctx = e->ctx, .pd = e->pd,
			       .scq = e->scq, .rcq = e->rcq, .qp = e->qp,
			       .mr = e->mr, .buf = e->buf, .buf_size = UD_BUF };
	ret = target_init(t, re);
	e->mr = NULL;			/* target_init() deregistered it */
	t->ud = true;
	t->gid_index = e->gid_index;
	t->gid = e->gid;
	return ret;
}

/* The rounds over UD QPs: random datagram segments, multicast too. */
TEST_F_TIMEOUT(fuzz, ud_rings_and_doorbells, 1200)
{
	const char *env = getenv("SOFTHCA_FUZZ_ROUNDS");
	int rounds = env ? atoi(env) : 60;
	int err_qps = 0, landed = 0;
	long res[NRES];

	for (int r = 0; r < rounds; r++) {
		enum fuzz_mode mode = (enum fuzz_mode)(r % FUZZ_MODES);
		struct rc_end re[2];
		struct target t[2];
		struct ud_pair p;

		ASSERT_EQ(0, ud_pair_open(&p, variant->topo)) TH_LOG("%s", rc_err);
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, ud_target_init(&t[i], &re[i], &p.e[i]))
				TH_LOG("reg window: %s", strerror(errno));
		}
		if (r & 1)
			ASSERT_EQ(0, ibv_attach_mcast(p.e[1].qp, &fuzz_mgid, 0));
		for (int k = 0; k < (mode == FUZZ_RACING ? 40 : 3); k++) {
			int i = rnd_below(2);

			fuzz_once(&t[i], &t[!i], mode);
			if (mode != FUZZ_RACING)
				usleep(2000);
		}
		usleep(5000);
		for (int i = 0; i < 2; i++) {
			long bad = guards_broken(&t[i]);
			int st = rc_qp_state(p.e[i].qp);

			EXPECT_EQ(-1, bad)
				TH_LOG("UD round %d mode %d: end %d guard byte %ld changed",
				       r, mode, i, bad);
			err_qps += st == IBV_QPS_ERR || st == IBV_QPS_SQE;
			landed += rc_check_fill(p.e[i].buf + GUARD, WIN,
						PATTERN_SEED + 2) >= 0;
		}
		/* ib_uverbs destroys no attached QP. */
		if (r & 1)
			EXPECT_EQ(0, ibv_detach_mcast(p.e[1].qp, &fuzz_mgid, 0));
		for (int i = 0; i < 2; i++) {
			EXPECT_EQ(0, ibv_destroy_qp(p.e[i].qp));
			p.e[i].qp = NULL;
			EXPECT_EQ(0, ibv_dereg_mr(t[i].win));
		}
		ud_pair_close(&p);
		res_snapshot(res);
		for (size_t i = 0; i < NRES; i++) {
			ASSERT_EQ(self->res0[i], res[i])
				TH_LOG("UD round %d: %s count %ld, baseline %ld", r,
				       res_names[i], res[i], self->res0[i]);
		}
	}
	TH_LOG("%d UD rounds: %d of %d QPs ended in SQE or ERR, %d windows written",
	       rounds, err_qps, 2 * rounds, landed);
	EXPECT_GE(err_qps, rounds / 2);
	EXPECT_GE(landed, 1);
}

/* After all of it the device still moves data, byte for byte. */
TEST_F(fuzz, device_still_works)
{
	struct rc_pair p;
	struct rc_cfg c;
	struct ibv_wc wc;

	rc_cfg_default(&c, variant->topo);
	ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
	rc_fill(p.e[0].buf, 65536, 99);
	ASSERT_EQ(0, rc_post_send(p.e[0].qp, IBV_WR_RDMA_WRITE, 1,
				  p.e[0].buf, 65536, p.e[0].mr->lkey,
				  (uintptr_t)p.e[1].buf, p.e[1].mr->rkey,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(p.e[0].scq, &wc, 1, 5000)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(-1, rc_check_fill(p.e[1].buf, 65536, 99));
	rc_pair_destroy(&p);
}

/* ...and datagrams. */
TEST_F(fuzz, device_still_sends_datagrams)
{
	struct ud_pair p;
	struct ibv_wc wc;

	ASSERT_EQ(0, ud_pair_open(&p, variant->topo)) TH_LOG("%s", rc_err);
	rc_fill(p.e[0].buf, UD_MTU, 98);
	ASSERT_EQ(0, ud_recv(&p.e[1], 1, UD_RECV_OFF, UD_GRH + UD_MTU));
	ASSERT_EQ(0, ud_send(&p.e[0], p.ah[0], p.e[1].qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 2, 0, UD_MTU, 0, 0));
	ASSERT_EQ(1, rc_poll(p.e[1].rcq, &wc, 1, 5000)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(UD_GRH + UD_MTU, wc.byte_len);
	EXPECT_EQ(-1, rc_check_fill(p.e[1].buf + UD_RECV_OFF + UD_GRH, UD_MTU, 98));
	ud_pair_close(&p);
}

TEST_HARNESS_MAIN
