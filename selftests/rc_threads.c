// SPDX-License-Identifier: GPL-2.0
/*
 * Thread safety of the provider's SQ, RQ and CQ locks:
 * several threads post on one SQ while others poll; receives are re-posted
 * by the threads that poll them; several QPs share one CQ. Every work
 * completion is accounted for exactly once, in SQ order per posting thread,
 * and every byte is checked.
 *
 * SOFTHCA_THREADS_MSGS: WRs per posting thread (default 2000).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"

#define NPOST		4
#define DEADLINE_MS	90000

static unsigned int msgs_per_thread(void)
{
	const char *s = getenv("SOFTHCA_THREADS_MSGS");
	long v = s ? strtol(s, NULL, 0) : 0;

	return v > 0 ? (unsigned int)v : 2000;
}

struct shared {
	struct rc_pair *p;
	struct ibv_qp *qp[NPOST];	/* the QP each posting thread uses */
	struct ibv_cq *scq;		/* where their completions land */
	unsigned int n;			/* WRs per posting thread */
	atomic_uint failed;
	char why[256];
	pthread_mutex_t why_lock;
	uint64_t deadline;
	/* send_recv */
	atomic_uint received;
	uint8_t *seen;			/* [NPOST][n] */
};

static void failf(struct shared *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(struct shared *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->why_lock);
	if (!atomic_fetch_add(&s->failed, 1)) {
		va_start(ap, fmt);
		vsnprintf(s->why, sizeof(s->why), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->why_lock);
}

struct poster {
	struct shared *s;
	unsigned int t;
	pthread_t th;
};

/* Slot of WR (t, seq) in B's buffer: 64 bytes each, 1024 per thread. */
static size_t wslot(unsigned int t, unsigned int seq)
{
	return ((size_t)t * 1024 + seq % 1024) * 64;
}

static uint32_t wseed(unsigned int t, unsigned int seq)
{
	return t << 24 | seq;
}

static void *write_poster(void *arg)
{
	struct poster *po = arg;
	struct shared *s = po->s;
	struct rc_end *a = &s->p->e[0], *b = &s->p->e[1];
	uint8_t *src = a->buf + (size_t)po->t * 65536;

	for (unsigned int seq = 0; seq < s->n && !s->failed; seq++) {
		uint32_t len = 8 + seq % 57;
		struct ibv_sge sge = { (uintptr_t)src + (seq % 64) * 64, len, a->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)po->t << 32 | seq,
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		int ret;

		/* The source slot is reused after 64 WRs: only once the WR
		 * that used it before has completed (the poller sets seen[]).
		 */
		while (seq >= 64 && !s->failed &&
		       !atomic_load((_Atomic uint8_t *)&s->seen[po->t * s->n + seq - 64]))
			sched_yield();
		rc_fill((void *)(uintptr_t)sge.addr, len, wseed(po->t, seq));
		wr.wr.rdma.remote_addr = (uintptr_t)b->buf + wslot(po->t, seq);
		wr.wr.rdma.rkey = b->mr->rkey;
		while ((ret = ibv_post_send(s->qp[po->t], &wr, &bad)) == ENOMEM) {
			if (rc_now_us() > s->deadline) {
				failf(s, "thread %u: SQ full until the deadline", po->t);
				return NULL;
			}
			sched_yield();
		}
		if (ret) {
			failf(s, "thread %u WR %u: post_send %d", po->t, seq, ret);
			return NULL;
		}
	}
	return NULL;
}

struct poller {
	struct shared *s;
	pthread_t th;
	unsigned int total;		/* completions to take (all pollers) */
	atomic_uint *taken;
	unsigned int next[NPOST];	/* only with one poller */
	int ordered;
};

static void *write_poller(void *arg)
{
	struct poller *pl = arg;
	struct shared *s = pl->s;
	struct ibv_wc wc[16];

	while (atomic_load(pl->taken) < pl->total && !s->failed) {
		int n = ibv_poll_cq(s->scq, 16, wc);

		if (n < 0) {
			failf(s, "poll_cq %d", n);
			break;
		}
		if (!n) {
			if (rc_now_us() > s->deadline) {
				failf(s, "%u of %u completions by the deadline",
				      atomic_load(pl->taken), pl->total);
				break;
			}
			sched_yield();
			continue;
		}
		for (int i = 0; i < n; i++) {
			unsigned int t = wc[i].wr_id >> 32, seq = (uint32_t)wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RDMA_WRITE ||
			    t >= NPOST || seq >= s->n || wc[i].byte_len != 8 + seq % 57 ||
			    wc[i].qp_num != s->qp[t]->qp_num) {
				failf(s, "bad completion %s", rc_wc_str(&wc[i]));
				continue;
			}
			if (s->seen[t * s->n + seq]) {
				failf(s, "thread %u WR %u completed twice", t, seq);
				continue;
			}
			if (pl->ordered && seq != pl->next[t])
				failf(s, "thread %u: WR %u completed, expected %u first", t,
				      seq, pl->next[t]);
			pl->next[t] = seq + 1;
			atomic_store((_Atomic uint8_t *)&s->seen[t * s->n + seq], 1);
			atomic_fetch_add(pl->taken, 1);
		}
	}
	return NULL;
}

FIXTURE(thr) {
	struct rc_pair p;
	struct shared s;
	struct ibv_qp *extra[2][NPOST];
};

FIXTURE_VARIANT(thr) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(thr, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(thr, cross_dev) { .topo = RC_CROSS_DEV };

RC_SHCA1_GUARD()

FIXTURE_SETUP(thr)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.max_send_wr = 256;
	c.max_recv_wr = 128;
	c.cqe = 4096;
	c.rnr_retry[0] = c.rnr_retry[1] = 7;
	c.min_rnr_timer[0] = c.min_rnr_timer[1] = 1;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->s.p = &self->p;
	self->s.n = msgs_per_thread();
	pthread_mutex_init(&self->s.why_lock, NULL);
	self->s.seen = calloc(NPOST, self->s.n);
	ASSERT_NE(NULL, self->s.seen);
	self->s.deadline = rc_now_us() + DEADLINE_MS * 1000ull;
}

FIXTURE_TEARDOWN(thr)
{
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < NPOST; k++) {
			if (self->extra[i][k])
				ibv_destroy_qp(self->extra[i][k]);
		}
	}
	rc_pair_destroy(&self->p);
	free(self->s.seen);
}

static void check_writes(struct __test_metadata *_metadata, struct shared *s)
{
	/* Slot k of thread t holds the last WR written there. */
	for (unsigned int t = 0; t < NPOST; t++) {
		for (unsigned int k = 0; k < 1024 && k < s->n; k++) {
			unsigned int seq = k + (s->n - 1 - k) / 1024 * 1024;
			long bad = rc_check_fill(s->p->e[1].buf + wslot(t, seq), 8 + seq % 57,
						 wseed(t, seq));

			ASSERT_EQ(-1, bad) TH_LOG("thread %u WR %u: byte %ld", t, seq, bad);
		}
	}
}

/* NPOST threads post WRITEs on one QP, one thread polls its send CQ. */
TEST_F_TIMEOUT(thr, one_sq_many_posters, 120)
{
	struct poster po[NPOST];
	struct poller pl = { .s = &self->s, .total = NPOST * self->s.n, .ordered = 1 };
	atomic_uint taken = 0;

	pl.taken = &taken;
	self->s.scq = self->p.e[0].scq;
	for (int t = 0; t < NPOST; t++)
		self->s.qp[t] = self->p.e[0].qp;
	ASSERT_EQ(0, pthread_create(&pl.th, NULL, write_poller, &pl));
	for (int t = 0; t < NPOST; t++) {
		po[t] = (struct poster){ .s = &self->s, .t = t };
		ASSERT_EQ(0, pthread_create(&po[t].th, NULL, write_poster, &po[t]));
	}
	for (int t = 0; t < NPOST; t++)
		pthread_join(po[t].th, NULL);
	pthread_join(pl.th, NULL);
	ASSERT_EQ(0, self->s.failed) TH_LOG("%s", self->s.why);
	EXPECT_EQ(NPOST * self->s.n, atomic_load(&taken));
	EXPECT_EQ(0, rc_poll_none(self->p.e[0].scq, 50)) TH_LOG("%s", rc_err);
	check_writes(_metadata, &self->s);
}

/* NPOST QPs share A's send CQ, one posting thread each, two pollers. */
TEST_F_TIMEOUT(thr, shared_cq_two_pollers, 120)
{
	struct poster po[NPOST];
	struct poller pl[2];
	atomic_uint taken = 0;
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];

	for (int t = 0; t < NPOST; t++) {
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
			.cap = { 64, 1, 1, 1, 0 } };
		struct rc_pair q = self->p;

		ia.send_cq = a->scq;
		ia.recv_cq = a->rcq;
		self->extra[0][t] = ibv_create_qp(a->pd, &ia);
		ASSERT_NE(NULL, self->extra[0][t]);
		ia.send_cq = b->scq;
		ia.recv_cq = b->rcq;
		self->extra[1][t] = ibv_create_qp(b->pd, &ia);
		ASSERT_NE(NULL, self->extra[1][t]);
		q.e[0].qp = self->extra[0][t];
		q.e[1].qp = self->extra[1][t];
		q.shca1_added = 0;
		ASSERT_EQ(0, rc_end_connect(&q, 0)) TH_LOG("%s", rc_err);
		ASSERT_EQ(0, rc_end_connect(&q, 1)) TH_LOG("%s", rc_err);
		self->s.qp[t] = self->extra[0][t];
	}
	self->s.scq = a->scq;
	for (int i = 0; i < 2; i++) {
		pl[i] = (struct poller){ .s = &self->s, .total = NPOST * self->s.n,
					 .taken = &taken };
		ASSERT_EQ(0, pthread_create(&pl[i].th, NULL, write_poller, &pl[i]));
	}
	for (int t = 0; t < NPOST; t++) {
		po[t] = (struct poster){ .s = &self->s, .t = t };
		ASSERT_EQ(0, pthread_create(&po[t].th, NULL, write_poster, &po[t]));
	}
	for (int t = 0; t < NPOST; t++)
		pthread_join(po[t].th, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(pl[i].th, NULL);
	ASSERT_EQ(0, self->s.failed) TH_LOG("%s", self->s.why);
	EXPECT_EQ(NPOST * self->s.n, atomic_load(&taken));
	EXPECT_EQ(0, rc_poll_none(a->scq, 50)) TH_LOG("%s", rc_err);
	check_writes(_metadata, &self->s);
}

/* ---- SENDs from NPOST threads, received by two threads that re-post ---- */

#define RSLOT		2048
#define HDR		12	/* thread, seq, length */

struct rx {
	struct shared *s;
	pthread_t th;
	unsigned int total;
};

static uint32_t slen(unsigned int t, unsigned int seq)
{
	return HDR + (t * 7919 + seq * 104729) % (RSLOT - HDR + 1);
}

static void *send_poster(void *arg)
{
	struct poster *po = arg;
	struct shared *s = po->s;
	struct rc_end *a = &s->p->e[0];
	uint8_t *src = a->buf + (size_t)po->t * 65536;
	unsigned int inflight_max = 16;

	for (unsigned int seq = 0; seq < s->n && !s->failed; seq++) {
		uint8_t *m = src + (seq % inflight_max) * 4096;
		uint32_t len = slen(po->t, seq), h[3] = { po->t, seq, len };
		struct ibv_sge sge = { (uintptr_t)m, len, a->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)po->t << 32 | seq,
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		int ret;

		/* Reuse a source buffer only once its SEND completed. */
		while (seq >= inflight_max && !s->failed &&
		       !atomic_load((_Atomic uint8_t *)&s->seen[po->t * s->n + seq - inflight_max]))
			sched_yield();
		memcpy(m, h, HDR);
		rc_fill(m + HDR, len - HDR, wseed(po->t, seq));
		while ((ret = ibv_post_send(s->qp[po->t], &wr, &bad)) == ENOMEM) {
			if (rc_now_us() > s->deadline) {
				failf(s, "thread %u: SQ full until the deadline", po->t);
				return NULL;
			}
			sched_yield();
		}
		if (ret) {
			failf(s, "thread %u WR %u: post_send %d", po->t, seq, ret);
			return NULL;
		}
	}
	return NULL;
}

static void *send_poller(void *arg)
{
	struct poller *pl = arg;
	struct shared *s = pl->s;
	struct ibv_wc wc[16];

	while (atomic_load(pl->taken) < pl->total && !s->failed) {
		int n = ibv_poll_cq(s->scq, 16, wc);

		if (n <= 0) {
			if (n < 0 || rc_now_us() > s->deadline) {
				failf(s, "send CQ: poll %d, %u of %u completions", n,
				      atomic_load(pl->taken), pl->total);
				break;
			}
			sched_yield();
			continue;
		}
		for (int i = 0; i < n; i++) {
			unsigned int t = wc[i].wr_id >> 32, seq = (uint32_t)wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_SEND ||
			    t >= NPOST || seq >= s->n || wc[i].byte_len != slen(t, seq)) {
				failf(s, "bad send completion %s", rc_wc_str(&wc[i]));
				continue;
			}
			if (seq != pl->next[t])
				failf(s, "thread %u: SEND %u completed, expected %u", t, seq,
				      pl->next[t]);
			pl->next[t] = seq + 1;
			atomic_store((_Atomic uint8_t *)&s->seen[t * s->n + seq], 1);
			atomic_fetch_add(pl->taken, 1);
		}
	}
	return NULL;
}

static uint8_t *rx_seen;

static void *receiver(void *arg)
{
	struct rx *rx = arg;
	struct shared *s = rx->s;
	struct rc_end *a = &s->p->e[0], *b = &s->p->e[1];
	struct ibv_wc wc[8];

	while (atomic_load(&s->received) < rx->total && !s->failed) {
		int n = ibv_poll_cq(b->rcq, 8, wc);

		if (n <= 0) {
			if (n < 0 || rc_now_us() > s->deadline) {
				failf(s, "recv CQ: poll %d, %u of %u received", n,
				      atomic_load(&s->received), rx->total);
				break;
			}
			sched_yield();
			continue;
		}
		for (int i = 0; i < n; i++) {
			uint64_t slot = wc[i].wr_id;
			uint8_t *m = b->buf + slot * RSLOT;
			uint32_t h[3];

			if (wc[i].status != IBV_WC_SUCCESS || wc[i].opcode != IBV_WC_RECV ||
			    wc[i].qp_num != b->qp->qp_num || !rc_src_qp_is(&wc[i], a->qp->qp_num) ||
			    !rc_wc_flags_are(&wc[i], 0) || slot >= b->cap.max_recv_wr) {
				failf(s, "bad receive completion %s", rc_wc_str(&wc[i]));
				continue;
			}
			memcpy(h, m, HDR);
			if (h[0] >= NPOST || h[1] >= s->n || h[2] != slen(h[0], h[1]) ||
			    wc[i].byte_len != h[2]) {
				failf(s, "slot %llu: header %u/%u/%u, byte_len %u",
				      (unsigned long long)slot, h[0], h[1], h[2], wc[i].byte_len);
				continue;
			}
			if (rc_check_fill(m + HDR, h[2] - HDR, wseed(h[0], h[1])) != -1)
				failf(s, "thread %u SEND %u: payload corrupted", h[0], h[1]);
			if (atomic_fetch_add((_Atomic uint8_t *)&rx_seen[h[0] * s->n + h[1]], 1))
				failf(s, "thread %u SEND %u received twice", h[0], h[1]);
			atomic_fetch_add(&s->received, 1);
			if (rc_post_recv(b->qp, slot, m, RSLOT, b->mr->lkey))
				failf(s, "re-post of slot %llu failed", (unsigned long long)slot);
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(thr, send_recv_threads, 120)
{
	struct rc_end *b = &self->p.e[1];
	struct poster po[NPOST];
	struct poller pl = { .s = &self->s, .total = NPOST * self->s.n };
	struct rx rx[2];
	atomic_uint taken = 0;
	unsigned int slots = b->cap.max_recv_wr;

	ASSERT_GE(b->buf_size, (size_t)slots * RSLOT);
	rx_seen = calloc(NPOST, self->s.n);
	ASSERT_NE(NULL, rx_seen);
	pl.taken = &taken;
	self->s.scq = self->p.e[0].scq;
	for (int t = 0; t < NPOST; t++)
		self->s.qp[t] = self->p.e[0].qp;
	for (unsigned int i = 0; i < slots; i++) {
		ASSERT_EQ(0, rc_post_recv(b->qp, i, b->buf + (size_t)i * RSLOT, RSLOT,
					  b->mr->lkey));
	}
	for (int i = 0; i < 2; i++) {
		rx[i] = (struct rx){ .s = &self->s, .total = NPOST * self->s.n };
		ASSERT_EQ(0, pthread_create(&rx[i].th, NULL, receiver, &rx[i]));
	}
	ASSERT_EQ(0, pthread_create(&pl.th, NULL, send_poller, &pl));
	for (int t = 0; t < NPOST; t++) {
		po[t] = (struct poster){ .s = &self->s, .t = t };
		ASSERT_EQ(0, pthread_create(&po[t].th, NULL, send_poster, &po[t]));
	}
	for (int t = 0; t < NPOST; t++)
		pthread_join(po[t].th, NULL);
	pthread_join(pl.th, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(rx[i].th, NULL);
	ASSERT_EQ(0, self->s.failed) TH_LOG("%s", self->s.why);
	EXPECT_EQ(NPOST * self->s.n, atomic_load(&taken));
	EXPECT_EQ(NPOST * self->s.n, atomic_load(&self->s.received));
	for (unsigned int k = 0; k < NPOST * self->s.n; k++) {
		ASSERT_EQ(1, rx_seen[k]) TH_LOG("thread %u SEND %u", k / self->s.n, k % self->s.n);
	}
	free(rx_seen);
}

/*
 * One end of the ping-pong: end 0 serves first. On each message taken the
 * send CQE of this end's last SEND must already be there (one poll, no
 * wait); then the next SEND, with the send queue of one WQE.
 */
struct pp_end {
	struct shared *s;
	int i;
	pthread_t th;
	unsigned int late;		/* send CQEs found after the reply's */
	unsigned int first_late;
};

#define PP_MSGS		5000		/* round trips of the ping-pong */

static int pp_send(struct pp_end *pe, unsigned int seq)
{
	struct rc_end *e = &pe->s->p->e[pe->i];

	*(uint32_t *)e->buf = seq;
	return rc_post_send(e->qp, IBV_WR_SEND, seq, e->buf, 4, e->mr->lkey, 0, 0,
			    IBV_SEND_SIGNALED, 0);
}

/* The receive CQE of message @seq: busy polled, as perftest does. */
static bool pp_take(struct pp_end *pe, unsigned int seq)
{
	struct shared *s = pe->s;
	struct rc_end *e = &s->p->e[pe->i];
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(e->rcq, 1, &wc))) {
		if (s->failed)
			return false;
		if (rc_now_us() > s->deadline) {
			failf(s, "end %d: message %u not taken by the deadline", pe->i, seq);
			return false;
		}
	}
	if (n < 0 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.byte_len != 4 || *(uint32_t *)(e->buf + 64) != seq) {
		failf(s, "end %d message %u: %s", pe->i, seq, rc_wc_str(&wc));
		return false;
	}
	return !rc_post_recv(e->qp, seq + 1, e->buf + 64, 64, e->mr->lkey);
}

/* After the reply to SEND @seq: its send CQE, there already or late. */
static bool pp_sent(struct pp_end *pe, unsigned int seq)
{
	struct rc_end *e = &pe->s->p->e[pe->i];
	struct ibv_wc wc;
	int n = ibv_poll_cq(e->scq, 1, &wc);

	if (!n) {
		if (!pe->late++)
			pe->first_late = seq;
		if (rc_poll(e->scq, &wc, 1, 5000) != 1)
			return false;
	} else if (n < 0) {
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != seq) {
		failf(pe->s, "end %d SEND %u: %s", pe->i, seq, rc_wc_str(&wc));
		return false;
	}
	return true;
}

static void *pp_thread(void *arg)
{
	struct pp_end *pe = arg;
	struct shared *s = pe->s;
	unsigned int seq = 0;

	if (pe->i == 0 && pp_send(pe, 0))
		goto fail;
	for (seq = 0; seq < PP_MSGS && !s->failed; seq++) {
		/* End 1 answers message seq; end 0 takes its answer. */
		if (!pp_take(pe, seq))
			goto fail;
		if ((pe->i == 0 || seq) && !pp_sent(pe, pe->i ? seq - 1 : seq))
			goto fail;
		if (pe->i == 1 ? pp_send(pe, seq) : seq + 1 < PP_MSGS && pp_send(pe, seq + 1))
			goto fail;
	}
	if (pe->i == 1 && !s->failed && !pp_sent(pe, PP_MSGS - 1))
		goto fail;
	return NULL;
fail:
	if (!s->failed)
		failf(s, "end %d stopped at message %u", pe->i, seq);
	return NULL;
}

/*
 * The order is the peer's doing as much as this end's: its ACK must leave
 * before its application can see the message. rdma_rxe writes the CQE
 * first and acknowledges after, so with rxe at either end the late ones
 * are only counted.
 */
TEST_F_TIMEOUT(thr, pingpong_send_cqe_first, 120)
{
	bool rxe = rc_dev_is_rxe(self->p.e[0].dev) || rc_dev_is_rxe(self->p.e[1].dev);
	struct pp_end pe[2];

	for (int i = 0; i < 2; i++) {
		struct rc_end *e = &self->p.e[i];

		ASSERT_EQ(0, rc_post_recv(e->qp, 0, e->buf + 64, 64, e->mr->lkey));
		pe[i] = (struct pp_end){ .s = &self->s, .i = i };
	}
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&pe[i].th, NULL, pp_thread, &pe[i]));
	for (int i = 0; i < 2; i++)
		pthread_join(pe[i].th, NULL);
	ASSERT_EQ(0, self->s.failed) TH_LOG("%s", self->s.why);
	for (int i = 0; i < 2; i++) {
		TH_LOG("end %d (%s): %u of %u send CQEs after the reply's", i,
		       self->p.e[i].dev, pe[i].late, PP_MSGS);
		if (!rxe)
			EXPECT_EQ(0, pe[i].late) TH_LOG("end %d: first at SEND %u", i,
							 pe[i].first_late);
	}
}

TEST_HARNESS_MAIN
