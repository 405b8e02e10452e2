// SPDX-License-Identifier: GPL-2.0
/*
 * The completion channel as an application sees it, with
 * events raised by real traffic through the engine's armed-CQ path
 * (seed-map.md §5): the fd is close-on-exec and an "[infinibandevent]" anon inode;
 * poll() and epoll report it readable exactly while an event is pending;
 * with O_NONBLOCK, ibv_get_cq_event fails with EAGAIN when none is;
 * several channels of one context each get only their own CQs' events;
 * ibv_destroy_cq with unacked events blocks until another thread acks them;
 * the /proc/interrupts count of the CQ's vector (comp_vector) moves with
 * the events, the other vectors' do not.
 *
 * Everything runs on shca0, both QPs in one context (RC_SAME_CTX).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "events.h"
#include "rc.h"
#include "verbs_util.h"

/* Generous: TCG on a loaded host. A missing event costs this much. */
#define EV_MS		10000
/* How long "no event" is watched for. */
#define QUIET_MS	500
#define MSG_LEN		64

/* One SEND of MSG_LEN bytes from end @from, its receive posted first. */
static int message(struct rc_pair *p, int from, uint64_t id)
{
	struct rc_end *s = &p->e[from], *r = &p->e[!from];
	int ret;

	ret = rc_post_recv(r->qp, id, r->buf, 4096, r->mr->lkey);
	if (ret) {
		snprintf(rc_err, sizeof(rc_err), "post_recv: %s", strerror(ret));
		return -ret;
	}
	ret = rc_post_send(s->qp, IBV_WR_SEND, id, s->buf, MSG_LEN, s->mr->lkey,
			   0, 0, IBV_SEND_SIGNALED, 0);
	if (ret)
		snprintf(rc_err, sizeof(rc_err), "post_send: %s", strerror(ret));
	return -ret;
}

/* Both completions of message @id from @from, checked field by field. */
static int reap(struct rc_pair *p, int from, uint64_t id)
{
	struct rc_end *s = &p->e[from], *r = &p->e[!from];
	struct rc_wc_want ws = {
		.wr_id = id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND,
		.byte_len = MSG_LEN, .qp_num = s->qp->qp_num,
	};
	struct rc_wc_want wr = {
		.wr_id = id, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
		.byte_len = MSG_LEN, .qp_num = r->qp->qp_num,
		.src_qp = s->qp->qp_num,
	};
	struct ibv_wc wc;

	if (rc_poll(s->scq, &wc, 1, EV_MS) != 1 || rc_wc_check(&wc, &ws))
		return -1;
	if (rc_poll(r->rcq, &wc, 1, EV_MS) != 1 || rc_wc_check(&wc, &wr))
		return -1;
	return 0;
}

/* A pair on shca0 in one context, end 1's receive CQ on a channel. */
FIXTURE(chan)
{
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct rc_pair p;
	struct ibv_cq *unacked_cq;
	unsigned int unacked;
};

FIXTURE_SETUP(chan)
{
	struct rc_cfg c;

	self->ctx = open_dev("shca0");
	ASSERT_NE(NULL, self->ctx);
	self->ch = ibv_create_comp_channel(self->ctx);
	ASSERT_NE(NULL, self->ch);
	rc_cfg_default(&c, RC_SAME_CTX);
	c.ctx = self->ctx;
	c.rcq_ch[1] = self->ch;
	c.cq_context = self;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(chan)
{
	/* A failed test may leave events unacked: destroy_cq would wait. */
	if (self->unacked_cq && self->unacked)
		ibv_ack_cq_events(self->unacked_cq, self->unacked);
	rc_pair_destroy(&self->p);
	if (self->ch)
		ibv_destroy_comp_channel(self->ch);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* Just the context, for tests that build their own channels and pairs. */
FIXTURE(dev)
{
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	self->ctx = open_dev("shca0");
	ASSERT_NE(NULL, self->ctx);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST(channel_fd_is_cloexec_anon_inode)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_comp_channel *ch;
	char link[64], target[128];
	ssize_t n;
	int flags, st;
	pid_t pid;

	ASSERT_NE(NULL, ctx);
	ch = ibv_create_comp_channel(ctx);
	ASSERT_NE(NULL, ch);

	flags = fcntl(ch->fd, F_GETFD);
	ASSERT_LE(0, flags);
	EXPECT_EQ(FD_CLOEXEC, flags & FD_CLOEXEC);
	flags = fcntl(ch->fd, F_GETFL);
	ASSERT_LE(0, flags);
	EXPECT_EQ(O_RDONLY, flags & O_ACCMODE);
	EXPECT_EQ(0, flags & O_NONBLOCK);

	snprintf(link, sizeof(link), "/proc/self/fd/%d", ch->fd);
	n = readlink(link, target, sizeof(target) - 1);
	ASSERT_LT(0, n);
	target[n] = 0;
	EXPECT_STREQ("anon_inode:[infinibandevent]", target);

	/* Across exec: gone; a dup without FD_CLOEXEC (fd 100) stays. */
	ASSERT_EQ(100, dup2(ch->fd, 100));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char cmd[160];

		snprintf(cmd, sizeof(cmd),
			 "[ ! -e /proc/$$/fd/%d ] && [ -e /proc/$$/fd/100 ]",
			 ch->fd);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		TH_LOG("after exec: fd %d open or fd 100 closed (status %#x)",
		       ch->fd, st);
	close(100);

	ASSERT_EQ(0, ibv_destroy_comp_channel(ch));
	ibv_close_device(ctx);
}

TEST_F_TIMEOUT(chan, poll_and_epoll_readable_exactly_when_pending, 90)
{
	struct epoll_event ee = { .events = EPOLLIN, .data.u64 = 0x5eed };
	struct pollfd pfd = { .fd = self->ch->fd, .events = POLLIN };
	struct ibv_cq *rcq = self->p.e[1].rcq, *cq;
	void *ctx;
	int ep;

	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, self->ch->fd, &ee));

	/* Nothing yet. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	memset(&ee, 0, sizeof(ee));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));

	/* A completion on an unarmed CQ is no event. */
	ASSERT_EQ(0, message(&self->p, 0, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, reap(&self->p, 0, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, poll(&pfd, 1, QUIET_MS));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));

	/* Armed: the next completion is. */
	ASSERT_EQ(0, ibv_req_notify_cq(rcq, 0));
	ASSERT_EQ(0, message(&self->p, 0, 2)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, poll(&pfd, 1, EV_MS)) TH_LOG("no event within %d ms", EV_MS);
	EXPECT_EQ(POLLIN, pfd.revents & (POLLIN | POLLERR | POLLHUP));
	ASSERT_EQ(1, epoll_wait(ep, &ee, 1, EV_MS));
	EXPECT_EQ(EPOLLIN, ee.events & (EPOLLIN | EPOLLERR | EPOLLHUP));
	EXPECT_EQ(0x5eed, ee.data.u64);
	/* Level: still readable until it is read. */
	pfd.revents = 0;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(1, epoll_wait(ep, &ee, 1, 0));

	ASSERT_EQ(0, ibv_get_cq_event(self->ch, &cq, &ctx));
	EXPECT_EQ(rcq, cq);
	EXPECT_EQ(self, ctx);
	/* Read: not readable any more, also while unacked. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));
	ibv_ack_cq_events(cq, 1);
	ASSERT_EQ(0, reap(&self->p, 0, 2)) TH_LOG("%s", rc_err);
	/* Not re-armed: the next completion makes none. */
	ASSERT_EQ(0, message(&self->p, 0, 3)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, reap(&self->p, 0, 3)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, poll(&pfd, 1, QUIET_MS));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));
	close(ep);
}

TEST_F_TIMEOUT(chan, nonblocking_get_cq_event_eagain, 90)
{
	struct ibv_cq *rcq = self->p.e[1].rcq, *cq = NULL;
	uint64_t t0;
	void *ctx;
	int flags;

	flags = fcntl(self->ch->fd, F_GETFL);
	ASSERT_LE(0, flags);
	ASSERT_EQ(0, fcntl(self->ch->fd, F_SETFL, flags | O_NONBLOCK));

	t0 = rc_now_us();
	errno = 0;
	EXPECT_EQ(-1, ibv_get_cq_event(self->ch, &cq, &ctx));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_GT(1000000, rc_now_us() - t0);

	ASSERT_EQ(0, ibv_req_notify_cq(rcq, 0));
	ASSERT_EQ(0, message(&self->p, 0, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, reap(&self->p, 0, 1)) TH_LOG("%s", rc_err);
	/* The event follows its CQE; wait for it without blocking reads. */
	for (int i = 0; i < EV_MS / 10; i++) {
		errno = 0;
		if (!ibv_get_cq_event(self->ch, &cq, &ctx))
			break;
		ASSERT_EQ(EAGAIN, errno);
		usleep(10000);
	}
	ASSERT_EQ(rcq, cq) TH_LOG("no event within %d ms", EV_MS);
	EXPECT_EQ(self, ctx);
	ibv_ack_cq_events(cq, 1);

	errno = 0;
	EXPECT_EQ(-1, ibv_get_cq_event(self->ch, &cq, &ctx));
	EXPECT_EQ(EAGAIN, errno);
}

/*
 * One context, four channels: each CQ of the pair on its own. A message
 * from end 0 completes on end 0's send CQ and end 1's receive CQ: exactly
 * those two channels get an event, each for its own CQ.
 */
TEST_F_TIMEOUT(dev, multiple_channels_per_context, 90)
{
	struct ibv_context *ctx = self->ctx;
	struct ibv_comp_channel *ch[4];
	struct rc_pair p;
	struct rc_cfg c;

	ASSERT_NE(NULL, ctx);
	for (int i = 0; i < 4; i++) {
		ch[i] = ibv_create_comp_channel(ctx);
		ASSERT_NE(NULL, ch[i]);
	}
	rc_cfg_default(&c, RC_SAME_CTX);
	c.ctx = ctx;
	c.scq_ch[0] = ch[0];
	c.scq_ch[1] = ch[1];
	c.rcq_ch[0] = ch[2];
	c.rcq_ch[1] = ch[3];
	ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
	ASSERT_NE(ch[0]->fd, ch[1]->fd);

	for (int from = 0; from < 2; from++) {
		/* channel of the sender's send CQ, of the receiver's recv CQ */
		int hit[2] = { from, 3 - from };
		struct ibv_cq *want[2] = { p.e[from].scq, p.e[!from].rcq };

		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, ibv_req_notify_cq(p.e[i].scq, 0));
			ASSERT_EQ(0, ibv_req_notify_cq(p.e[i].rcq, 0));
		}
		ASSERT_EQ(0, message(&p, from, from)) TH_LOG("%s", rc_err);
		for (int k = 0; k < 2; k++) {
			struct ibv_cq *cq = NULL;
			int ret = ev_get(ch[hit[k]], EV_MS, &cq, NULL);

			ASSERT_EQ(0, ret) TH_LOG("from %d: channel %d: %s", from,
						 hit[k], strerror(-ret));
			EXPECT_EQ(want[k], cq) TH_LOG("from %d: channel %d", from,
						      hit[k]);
			ibv_ack_cq_events(cq, 1);
		}
		ASSERT_EQ(0, reap(&p, from, from)) TH_LOG("%s", rc_err);
		usleep(QUIET_MS * 1000);
		for (int i = 0; i < 4; i++) {
			EXPECT_EQ(0, ev_pending(ch[i]))
				TH_LOG("from %d: channel %d has an event", from, i);
		}
	}
	/* The two CQs that got no event are still armed; harmless. */
	rc_pair_destroy(&p);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, ibv_destroy_comp_channel(ch[i]));
}

struct acker {
	struct ibv_cq *cq;
	int delay_ms;
	int acked;		/* events acked so far (atomic) */
};

static void *acker_fn(void *arg)
{
	struct acker *a = arg;

	for (int i = 0; i < 2; i++) {
		usleep(a->delay_ms * 1000);
		ibv_ack_cq_events(a->cq, 1);
		__atomic_store_n(&a->acked, i + 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/*
 * libibverbs: destroy_cq waits until every event read for the CQ has been
 * acked (the kernel reports how many it delivered). Two events read and
 * not acked; another thread acks one after 300 ms and the second after
 * 600 ms. destroy_cq must return after the second ack, and succeed.
 */
TEST_F_TIMEOUT(chan, destroy_cq_blocks_until_acked, 90)
{
	struct ibv_cq *rcq = self->p.e[1].rcq, *cq;
	struct acker a = { .delay_ms = 300 };
	uint64_t t0, t1;
	pthread_t t;
	int ret, acked;

	for (int i = 1; i <= 2; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(rcq, 0));
		ASSERT_EQ(0, message(&self->p, 0, i)) TH_LOG("%s", rc_err);
		ret = ev_get(self->ch, EV_MS, &cq, NULL);
		ASSERT_EQ(0, ret) TH_LOG("event %d: %s", i, strerror(-ret));
		ASSERT_EQ(rcq, cq);
		self->unacked_cq = cq;
		self->unacked++;
		ASSERT_EQ(0, reap(&self->p, 0, i)) TH_LOG("%s", rc_err);
	}
	/* The CQ's QP goes first (a CQ in use cannot be destroyed). */
	ASSERT_EQ(0, ibv_destroy_qp(self->p.e[1].qp));
	self->p.e[1].qp = NULL;

	a.cq = rcq;
	self->unacked = 0;	/* the thread acks them */
	/* Before the thread starts its first sleep: it may run at once. */
	t0 = rc_now_us();
	ASSERT_EQ(0, pthread_create(&t, NULL, acker_fn, &a));
	ret = ibv_destroy_cq(rcq);
	t1 = rc_now_us();
	acked = __atomic_load_n(&a.acked, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	self->p.e[1].rcq = NULL;
	self->unacked_cq = NULL;
	EXPECT_EQ(0, ret);
	EXPECT_EQ(2, acked) TH_LOG("destroy_cq returned after %llu us with %d of 2 events acked",
				   (unsigned long long)(t1 - t0), acked);
	EXPECT_LE(2 * a.delay_ms * 1000, t1 - t0);
	TH_LOG("destroy_cq returned after %llu us", (unsigned long long)(t1 - t0));
}

/*
 * Events of a CQ on vector v are interrupts of softhca-shca0-comp<v>: one
 * each (every event is one armed EQ's message: the loop waits for each
 * before it arms again), while the other completion vectors stay still.
 */
#define IRQ_EVENTS	50

TEST_F_TIMEOUT(dev, proc_interrupts_follow_comp_vector, 300)
{
	struct ibv_context *ctx = self->ctx;
	struct ibv_comp_channel *ch;
	int nvec;

	ASSERT_NE(NULL, ctx);
	nvec = ctx->num_comp_vectors;
	ASSERT_LE(1, nvec);
	ASSERT_GE(64, nvec);
	ch = ibv_create_comp_channel(ctx);
	ASSERT_NE(NULL, ch);

	for (int v = 0; v < nvec; v++) {
		long before[64], after[64];
		char name[64];
		struct rc_pair p;
		struct rc_cfg c;

		rc_cfg_default(&c, RC_SAME_CTX);
		c.ctx = ctx;
		c.rcq_ch[1] = ch;
		c.comp_vector = v;
		ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
		for (int i = 0; i < nvec; i++) {
			snprintf(name, sizeof(name), "softhca-shca0-comp%d", i);
			before[i] = irq_count(name);
			ASSERT_LE(0, before[i]) TH_LOG("no %s in /proc/interrupts", name);
		}
		for (int k = 0; k < IRQ_EVENTS; k++) {
			struct ibv_cq *cq;
			int ret;

			ASSERT_EQ(0, ibv_req_notify_cq(p.e[1].rcq, 0));
			ASSERT_EQ(0, message(&p, 0, k)) TH_LOG("%s", rc_err);
			ret = ev_get(ch, EV_MS, &cq, NULL);
			ASSERT_EQ(0, ret) TH_LOG("vector %d event %d: %s", v, k,
						 strerror(-ret));
			ASSERT_EQ(p.e[1].rcq, cq);
			ibv_ack_cq_events(cq, 1);
			ASSERT_EQ(0, reap(&p, 0, k)) TH_LOG("%s", rc_err);
		}
		for (int i = 0; i < nvec; i++) {
			snprintf(name, sizeof(name), "softhca-shca0-comp%d", i);
			after[i] = irq_count(name);
			TH_LOG("CQ on vector %d: comp%d +%ld", v, i,
			       after[i] - before[i]);
		}
		for (int i = 0; i < nvec; i++) {
			EXPECT_EQ(i == v ? IRQ_EVENTS : 0, after[i] - before[i])
				TH_LOG("CQ on vector %d: comp%d moved by %ld",
				       v, i, after[i] - before[i]);
		}
		rc_pair_destroy(&p);
	}
	ASSERT_EQ(0, ibv_destroy_comp_channel(ch));
}

TEST_HARNESS_MAIN
