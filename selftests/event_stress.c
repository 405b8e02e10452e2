// SPDX-License-Identifier: GPL-2.0
/*
 * Event-loop stress: N threads, each serving M CQs of its
 * own, in the loop every event-driven application runs:
 *
 *	wait on the channel (poll, then ibv_get_cq_event)
 *	ack, re-arm (ibv_req_notify_cq), drain (ibv_poll_cq until empty)
 *
 * until SOFTHCA_EVSTRESS_EVENTS events (default 20,000 for make check;
 * the size is 100,000, 10-25 s per layout under TCG) were
 * received, then traffic stops and every lane drains.
 *
 * Traffic: a lane is an RC pair on shca0 in one context; end 0 SENDs
 * MSG_LEN-byte messages to end 1, at most WINDOW in flight; end 0's send CQ
 * and end 1's receive CQ are the two CQs of the lane on channels. Whoever
 * drains a send completion posts the next send; whoever drains a receive
 * re-posts the receive. Each thread owns LANES lanes (M = 2 * LANES CQs).
 *
 * Channels (fixture variants): one per CQ ("private"), one per thread for
 * its M CQs ("per_thread"), one for every CQ of every thread, all threads
 * waiting on it ("shared": any thread may get any CQ's event; a CQ is
 * drained under its own lock so its completions are handled in order).
 *
 * Checked: no lost wake-up: no channel goes EV_TIMEOUT_MS without an event
 * while a completion of one of its CQs is outstanding (posted and not yet
 * polled: after the re-arm and drain, every later CQE must raise an
 * event); every WC is accounted for: per QP, the wr_ids of its send and of
 * its receive completions are 0, 1, 2 ... in order, each successful with
 * the right opcode, length and QPNs, each message's payload carries its
 * sequence number, and at the end sends posted == send completions ==
 * receive completions.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"

#define NTHREADS	4
#define LANES		2		/* per thread: M = 4 CQs */
#define NLANES		(NTHREADS * LANES)
#define WINDOW		8		/* sends in flight per lane */
#define MSG_LEN		32
#define SLOTS		64		/* buffer slots = RQ depth */
#define EV_TIMEOUT_MS	10000		/* no event with WCs outstanding */
#define TICK_MS		100

enum sharing { PRIVATE, PER_THREAD, SHARED };

struct lane;

struct evcq {
	struct ibv_cq *cq;
	struct lane *lane;
	bool is_send;
	int chn;			/* index of its channel */
	pthread_mutex_t lock;		/* drain: one poller at a time */
	uint64_t next;			/* wr_id of the next completion */
	uint64_t wcs;			/* completions polled (atomic) */
	uint64_t events;		/* events received (atomic) */
};

struct lane {
	struct rc_pair p;
	struct evcq scq, rcq;		/* end 0's send CQ, end 1's recv CQ */
	pthread_mutex_t post_lock;
	uint64_t posted;		/* sends posted (atomic) */
	uint64_t recv_posted;		/* under rcq.lock after the start */
};

struct chan {
	struct ibv_comp_channel *ch;
	uint64_t last_event_us;		/* atomic */
	struct evcq *cqs[2 * NLANES];
	int ncqs;
};

struct stress {
	enum sharing sharing;
	uint64_t target;
	struct ibv_context *ctx;
	struct chan chans[2 * NLANES];
	int nchans;
	struct lane lanes[NLANES];
	int stop;			/* atomic: no new sends */
	int abort;			/* atomic: a failure, everyone out */
	uint64_t events;		/* atomic */
	pthread_mutex_t err_lock;
	char err[1024];
};

struct worker {
	struct stress *s;
	int id;
	pthread_t t;
};

static uint64_t ld(uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static void failf(struct stress *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void failf(struct stress *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->err_lock);
	if (!s->err[0]) {
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof(s->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&s->err_lock);
	__atomic_store_n(&s->abort, 1, __ATOMIC_RELEASE);
}

static int post_send(struct stress *s, struct lane *l)
{
	struct rc_end *a = &l->p.e[0];
	uint64_t seq;
	int ret;

	pthread_mutex_lock(&l->post_lock);
	seq = l->posted;
	memcpy(a->buf + (seq % SLOTS) * MSG_LEN, &seq, sizeof(seq));
	ret = rc_post_send(a->qp, IBV_WR_SEND, seq, a->buf + (seq % SLOTS) * MSG_LEN,
			   MSG_LEN, a->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0);
	if (!ret)
		st(&l->posted, seq + 1);
	pthread_mutex_unlock(&l->post_lock);
	if (ret)
		failf(s, "lane %ld: post_send %llu: %s", (long)(l - s->lanes),
		      (unsigned long long)seq, strerror(ret));
	return ret;
}

static int post_recv(struct stress *s, struct lane *l)
{
	struct rc_end *b = &l->p.e[1];
	uint64_t seq = l->recv_posted;
	int ret;

	ret = rc_post_recv(b->qp, seq, b->buf + (seq % SLOTS) * MSG_LEN, MSG_LEN,
			   b->mr->lkey);
	if (ret)
		failf(s, "lane %ld: post_recv %llu: %s", (long)(l - s->lanes),
		      (unsigned long long)seq, strerror(ret));
	else
		l->recv_posted++;
	return ret;
}

/* One completion of @c (under c->lock). */
static int handle_wc(struct stress *s, struct evcq *c, const struct ibv_wc *wc)
{
	struct lane *l = c->lane;
	struct rc_end *a = &l->p.e[0], *b = &l->p.e[1];
	long li = l - s->lanes;
	struct rc_wc_want w = {
		.wr_id = c->next, .status = IBV_WC_SUCCESS,
		.opcode = c->is_send ? IBV_WC_SEND : IBV_WC_RECV,
		.byte_len = MSG_LEN,
		.qp_num = c->is_send ? a->qp->qp_num : b->qp->qp_num,
		.src_qp = c->is_send ? 0 : a->qp->qp_num,
	};
	uint64_t got;

	if (rc_wc_check(wc, &w)) {
		failf(s, "lane %ld %s completion %llu: %s", li,
		      c->is_send ? "send" : "recv",
		      (unsigned long long)c->next, rc_err);
		return -1;
	}
	c->next++;
	st(&c->wcs, c->next);
	if (c->is_send) {
		if (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			return post_send(s, l);
		return 0;
	}
	memcpy(&got, b->buf + (wc->wr_id % SLOTS) * MSG_LEN, sizeof(got));
	if (got != wc->wr_id) {
		failf(s, "lane %ld: receive %llu carries sequence %llu", li,
		      (unsigned long long)wc->wr_id, (unsigned long long)got);
		return -1;
	}
	return post_recv(s, l);
}

/* Re-arm, then poll until empty (under c->lock). */
static int rearm_and_drain(struct stress *s, struct evcq *c)
{
	struct ibv_wc wc[16];
	int n;

	if (ibv_req_notify_cq(c->cq, 0)) {
		failf(s, "req_notify_cq: %s", strerror(errno));
		return -1;
	}
	do {
		n = ibv_poll_cq(c->cq, 16, wc);
		if (n < 0) {
			failf(s, "poll_cq: %d", n);
			return -1;
		}
		for (int i = 0; i < n; i++)
			if (handle_wc(s, c, &wc[i]))
				return -1;
	} while (n > 0);
	return 0;
}

/* Completions expected on @c and not polled yet. */
static uint64_t outstanding(struct evcq *c)
{
	return ld(&c->lane->posted) - ld(&c->wcs);
}

static bool lane_done(struct lane *l)
{
	uint64_t p = ld(&l->posted);

	return ld(&l->scq.wcs) == p && ld(&l->rcq.wcs) == p;
}

/* The lanes this worker waits for: its own, or all with one channel. */
static bool work_done(struct stress *s, int id)
{
	int first = s->sharing == SHARED ? 0 : id * LANES;
	int last = s->sharing == SHARED ? NLANES : first + LANES;

	if (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		return false;
	for (int i = first; i < last; i++)
		if (!lane_done(&s->lanes[i]))
			return false;
	return true;
}

/* Channels worker @id waits on: [*first, *first + *n). */
static void my_chans(struct stress *s, int id, int *first, int *n)
{
	switch (s->sharing) {
	case PRIVATE:
		*first = id * 2 * LANES;
		*n = 2 * LANES;
		break;
	case PER_THREAD:
		*first = id;
		*n = 1;
		break;
	default:
		*first = 0;
		*n = 1;
	}
}

static struct evcq *find_cq(struct stress *s, struct ibv_cq *cq, void *ctx)
{
	struct lane *l = ctx;

	if (l < s->lanes || l >= s->lanes + NLANES)
		return NULL;
	if (cq == l->scq.cq)
		return &l->scq;
	if (cq == l->rcq.cq)
		return &l->rcq;
	return NULL;
}

/* A channel was quiet too long: lost wake-up if anything is outstanding. */
static void check_quiet(struct stress *s, struct chan *ch)
{
	uint64_t now = rc_now_us(), last = ld(&ch->last_event_us);

	if (now - last < (uint64_t)EV_TIMEOUT_MS * 1000)
		return;
	for (int i = 0; i < ch->ncqs; i++) {
		struct evcq *c = ch->cqs[i];
		uint64_t o = outstanding(c);

		if (o)
			failf(s, "lost wake-up: channel %ld quiet for %llu ms while lane %ld's %s CQ has %llu completions outstanding (%llu polled, %llu events)",
			      (long)(ch - s->chans),
			      (unsigned long long)(now - last) / 1000,
			      (long)(c->lane - s->lanes),
			      c->is_send ? "send" : "recv", (unsigned long long)o,
			      (unsigned long long)ld(&c->wcs),
			      (unsigned long long)ld(&c->events));
	}
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	struct pollfd pfd[2 * LANES];
	int first, n;

	my_chans(s, w->id, &first, &n);
	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = s->chans[first + i].ch->fd,
					  .events = POLLIN };
	while (!__atomic_load_n(&s->abort, __ATOMIC_ACQUIRE) &&
	       !work_done(s, w->id)) {
		int r = poll(pfd, n, TICK_MS);

		if (r < 0 && errno != EINTR) {
			failf(s, "poll: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			struct chan *ch = &s->chans[first + i];
			struct ibv_cq *cq;
			struct evcq *c;
			void *ctx;

			if (r <= 0 || !(pfd[i].revents & POLLIN)) {
				check_quiet(s, ch);
				continue;
			}
			/* Non-blocking: on a shared channel another thread
			 * may have read this event.
			 */
			if (ibv_get_cq_event(ch->ch, &cq, &ctx)) {
				if (errno != EAGAIN)
					failf(s, "get_cq_event: %s", strerror(errno));
				continue;
			}
			st(&ch->last_event_us, rc_now_us());
			c = find_cq(s, cq, ctx);
			if (!c || c->chn != first + i) {
				failf(s, "event for CQ %p (context %p) on channel %d: not one of its CQs",
				      (void *)cq, ctx, first + i);
				break;
			}
			ibv_ack_cq_events(cq, 1);
			__atomic_fetch_add(&c->events, 1, __ATOMIC_RELAXED);
			if (__atomic_add_fetch(&s->events, 1, __ATOMIC_RELAXED) >=
			    s->target)
				__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
			pthread_mutex_lock(&c->lock);
			rearm_and_drain(s, c);
			pthread_mutex_unlock(&c->lock);
		}
	}
	return NULL;
}

static uint64_t target_events(void)
{
	const char *e = getenv("SOFTHCA_EVSTRESS_EVENTS");
	long long v = e && *e ? atoll(e) : 20000;

	return v > 0 ? (uint64_t)v : 20000;
}

FIXTURE(stress)
{
	struct stress *s;
};

FIXTURE_VARIANT(stress)
{
	enum sharing sharing;
};

FIXTURE_VARIANT_ADD(stress, private) { .sharing = PRIVATE };
FIXTURE_VARIANT_ADD(stress, per_thread) { .sharing = PER_THREAD };
FIXTURE_VARIANT_ADD(stress, shared) { .sharing = SHARED };

FIXTURE_SETUP(stress)
{
	struct stress *s = calloc(1, sizeof(*s));

	ASSERT_NE(NULL, s);
	self->s = s;
	s->sharing = variant->sharing;
	s->target = target_events();
	pthread_mutex_init(&s->err_lock, NULL);
	s->ctx = open_dev("shca0");
	ASSERT_NE(NULL, s->ctx);
	s->nchans = s->sharing == PRIVATE ? 2 * NLANES :
		    s->sharing == PER_THREAD ? NTHREADS : 1;
	for (int i = 0; i < s->nchans; i++) {
		int fl;

		s->chans[i].ch = ibv_create_comp_channel(s->ctx);
		ASSERT_NE(NULL, s->chans[i].ch);
		fl = fcntl(s->chans[i].ch->fd, F_GETFL);
		ASSERT_EQ(0, fcntl(s->chans[i].ch->fd, F_SETFL, fl | O_NONBLOCK));
	}
	for (int i = 0; i < NLANES; i++) {
		struct lane *l = &s->lanes[i];
		int t = i / LANES, chs, chr;
		struct rc_cfg c;

		switch (s->sharing) {
		case PRIVATE:
			chs = 2 * i;
			chr = 2 * i + 1;
			break;
		case PER_THREAD:
			chs = chr = t;
			break;
		default:
			chs = chr = 0;
		}
		rc_cfg_default(&c, RC_SAME_CTX);
		c.ctx = s->ctx;
		c.buf_size = 64 << 10;
		c.max_send_wr = SLOTS;
		c.max_recv_wr = SLOTS;
		c.scq_ch[0] = s->chans[chs].ch;
		c.rcq_ch[1] = s->chans[chr].ch;
		/* Lanes spread over the vectors. */
		c.comp_vector = i % s->ctx->num_comp_vectors;
		c.cq_context = l;
		ASSERT_EQ(0, rc_pair_open(&l->p, &c)) TH_LOG("lane %d: %s", i, rc_err);
		pthread_mutex_init(&l->post_lock, NULL);
		l->scq = (struct evcq){ .cq = l->p.e[0].scq, .lane = l,
					.is_send = true, .chn = chs };
		l->rcq = (struct evcq){ .cq = l->p.e[1].rcq, .lane = l,
					.is_send = false, .chn = chr };
		pthread_mutex_init(&l->scq.lock, NULL);
		pthread_mutex_init(&l->rcq.lock, NULL);
		s->chans[chs].cqs[s->chans[chs].ncqs++] = &l->scq;
		s->chans[chr].cqs[s->chans[chr].ncqs++] = &l->rcq;
	}
}

FIXTURE_TEARDOWN(stress)
{
	struct stress *s = self->s;

	if (!s)
		return;
	for (int i = 0; i < NLANES; i++)
		rc_pair_destroy(&s->lanes[i].p);
	for (int i = 0; i < s->nchans; i++)
		if (s->chans[i].ch)
			ibv_destroy_comp_channel(s->chans[i].ch);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s);
}

TEST_F_TIMEOUT(stress, event_loop, 3600)
{
	struct stress *s = self->s;
	struct worker w[NTHREADS];
	uint64_t t0, t1, sent = 0, nev_min = UINT64_MAX, nev_max = 0;

	/* Receives first, every CQ armed, then each lane's window. */
	for (int i = 0; i < NLANES; i++) {
		struct lane *l = &s->lanes[i];

		for (int k = 0; k < SLOTS; k++)
			ASSERT_EQ(0, post_recv(s, l)) TH_LOG("%s", s->err);
		ASSERT_EQ(0, ibv_req_notify_cq(l->scq.cq, 0));
		ASSERT_EQ(0, ibv_req_notify_cq(l->rcq.cq, 0));
	}
	t0 = rc_now_us();
	for (int i = 0; i < s->nchans; i++)
		s->chans[i].last_event_us = t0;
	for (int i = 0; i < NLANES; i++)
		for (int k = 0; k < WINDOW; k++)
			ASSERT_EQ(0, post_send(s, &s->lanes[i])) TH_LOG("%s", s->err);
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .s = s, .id = i };
		ASSERT_EQ(0, pthread_create(&w[i].t, NULL, worker_fn, &w[i]));
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(w[i].t, NULL);
	t1 = rc_now_us();

	ASSERT_EQ(0, __atomic_load_n(&s->abort, __ATOMIC_ACQUIRE)) TH_LOG("%s", s->err);
	EXPECT_LE(s->target, s->events);
	for (int i = 0; i < NLANES; i++) {
		struct lane *l = &s->lanes[i];
		uint64_t nev = l->scq.events + l->rcq.events;

		EXPECT_EQ(l->posted, l->scq.wcs) TH_LOG("lane %d", i);
		EXPECT_EQ(l->posted, l->rcq.wcs) TH_LOG("lane %d", i);
		EXPECT_EQ(SLOTS + l->posted, l->recv_posted) TH_LOG("lane %d", i);
		EXPECT_LT(0, l->scq.events) TH_LOG("lane %d", i);
		EXPECT_LT(0, l->rcq.events) TH_LOG("lane %d", i);
		sent += l->posted;
		nev_min = nev < nev_min ? nev : nev_min;
		nev_max = nev > nev_max ? nev : nev_max;
	}
	TH_LOG("%s: %d threads x %d CQs, %d channels: %llu events, %llu messages (%llu completions) in %.1f s: %.0f events/s, %.2f completions per event, events per lane %llu..%llu",
	       s->sharing == PRIVATE ? "private" :
	       s->sharing == PER_THREAD ? "per_thread" : "shared",
	       NTHREADS, 2 * LANES, s->nchans,
	       (unsigned long long)s->events, (unsigned long long)sent,
	       (unsigned long long)(2 * sent), (t1 - t0) / 1e6,
	       s->events * 1e6 / (double)(t1 - t0),
	       2.0 * sent / (double)s->events,
	       (unsigned long long)nev_min, (unsigned long long)nev_max);
}

TEST_HARNESS_MAIN
