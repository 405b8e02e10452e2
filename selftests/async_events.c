// SPDX-License-Identifier: GPL-2.0
/*
 * Events through the EQs (Documentation/events.md), seen by a user process:
 * port down/up and carrier loss as PORT_ERR / PORT_ACTIVE through the async
 * EQ; completion events injected with GEN_EQE (debugfs) reaching a
 * completion channel; CQ and QP events injected on the async EQ reaching
 * ibv_get_async_event() with the right object; an async EQ overflow ending
 * in DEVICE_FATAL; a CQ destroyed while completion events for it are being
 * injected. Runs in the VM with shca0 on veth0 and veth1 free; the tests
 * that inject use a fresh shca1 on veth1 (its first CQ has CQN 1) and
 * remove it again.
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
#include "events.h"
#include "rdmanl.h"
#include "util.h"
#include "verbs_util.h"
#include "../user/softhca.h"	/* the CQs' CQNs (white box) */

#define EV_TIMEOUT_MS	5000
#define DBG		"/sys/kernel/debug/softhca/shca1"

/* Next async event within @ms, acked; -1 if none came. */
static int next_event(struct ibv_context *ctx, int ms,
		      struct ibv_async_event *out)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	if (ibv_get_async_event(ctx, &ev))
		return -1;
	if (out)
		*out = ev;
	ibv_ack_async_event(&ev);
	return ev.event_type;
}

/* Wait for event @want (port events: on port 1), skipping others. */
static int expect_event(struct ibv_context *ctx, int want,
			struct ibv_async_event *out)
{
	struct ibv_async_event ev;

	for (int i = 0; i < 16; i++) {
		int type = next_event(ctx, EV_TIMEOUT_MS, &ev);
		bool port = type == IBV_EVENT_PORT_ERR ||
			    type == IBV_EVENT_PORT_ACTIVE;

		if (type < 0)
			return -1;
		if (type == want && (!port || ev.element.port_num == 1)) {
			if (out)
				*out = ev;
			return 0;
		}
		fprintf(stderr, "# skipped event %s\n",
			ibv_event_type_str(type));
	}
	return -1;
}

/* shca1's EQs through debugfs (verbs_util.h). */
#define eq_field(name, key)	eq_dbg_field("shca1", name, key)
#define inject(...)		eq_dbg_inject("shca1", __VA_ARGS__)

/* Both ends up, as the VM starts (a failed test may have left one down). */
static int links_up(void)
{
	return sh("ip link set veth0 up && ip link set veth1 up");
}

TEST(port_down_up_events)
{
	struct ibv_context *ctx;

	ASSERT_EQ(0, links_up());
	ctx = open_dev("shca0");
	ASSERT_NE(NULL, ctx);
	/* The carrier of a freshly raised veth may still be settling. */
	while (next_event(ctx, 300, NULL) >= 0)
		;

	ASSERT_EQ(0, sh("ip link set veth0 down"));
	EXPECT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ERR, NULL));
	ASSERT_EQ(0, sh("ip link set veth0 up"));
	EXPECT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ACTIVE, NULL));

	/* Up again without a change: no event. */
	ASSERT_EQ(0, sh("ip link set veth0 up"));
	EXPECT_EQ(-1, next_event(ctx, 300, NULL));
	ibv_close_device(ctx);
}

TEST(carrier_loss_events)
{
	struct ibv_context *ctx;

	ASSERT_EQ(0, links_up());
	ctx = open_dev("shca0");
	ASSERT_NE(NULL, ctx);
	/* The peer down takes veth0's carrier: NETDEV_CHANGE. */
	ASSERT_EQ(0, sh("ip link set veth1 down"));
	EXPECT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ERR, NULL));
	ASSERT_EQ(0, sh("ip link set veth1 up"));
	EXPECT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ACTIVE, NULL));
	ibv_close_device(ctx);
}

TEST(toggles_in_order)
{
	struct ibv_context *ctx;

	ASSERT_EQ(0, links_up());
	ctx = open_dev("shca0");
	ASSERT_NE(NULL, ctx);
	/* Few: each `ip` costs much under TCG (30 s per test). */
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(0, sh("ip link set veth0 down"));
		ASSERT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ERR, NULL))
			TH_LOG("iteration %d", i);
		ASSERT_EQ(0, sh("ip link set veth0 up"));
		ASSERT_EQ(0, expect_event(ctx, IBV_EVENT_PORT_ACTIVE, NULL))
			TH_LOG("iteration %d", i);
	}
	ibv_close_device(ctx);
}

/* A fresh shca1 with a PD, a completion channel and a CQ on vector 0. */
FIXTURE(shca1)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	long comp0, comp1, async;
	int cqn;	/* the CQ's CQN: ib_mad's CQ came first */
};

FIXTURE_SETUP(shca1)
{
	ASSERT_EQ(0, links_up());
	ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"));
	self->ctx = open_dev("shca1");
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ch = ibv_create_comp_channel(self->ctx);
	ASSERT_NE(NULL, self->ch);
	self->cq = ibv_create_cq(self->ctx, 16, self, self->ch, 0);
	ASSERT_NE(NULL, self->cq);
	self->cqn = to_scq(self->cq)->cqn;
	self->comp0 = eq_field("comp0", "eqn");
	self->comp1 = eq_field("comp1", "eqn");
	self->async = eq_field("async", "eqn");
	ASSERT_LE(0, self->comp0);
	ASSERT_LE(0, self->async);
}

FIXTURE_TEARDOWN(shca1)
{
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->ch)
		ibv_destroy_comp_channel(self->ch);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	rdmanl_link_del("shca1");
	links_up();
}

/* Skip when the CQ/QP code does not register with the EQ layer yet. */
#define REQUIRE_KNOWN(eq, before)					\
	do {								\
		if (eq_field(eq, "unknown") > (before))			\
			SKIP(return, "not registered with the EQs (eq.h)"); \
	} while (0)

TEST_F(shca1, comp_event_reaches_the_channel)
{
	long unknown = eq_field("comp0", "unknown");
	int n = 0;

	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, inject("%ld 0 %d", self->comp0, self->cqn));
	if (!ev_next(self->ch, EV_TIMEOUT_MS, NULL, 0)) {
		REQUIRE_KNOWN("comp0", unknown);
		ASSERT_TRUE(false) TH_LOG("no completion event");
	}
	/* A burst: coalesced per tasklet run, at least one, never more. */
	ASSERT_EQ(0, inject("%ld 0 %d 100", self->comp0, self->cqn));
	while (ev_next(self->ch, n ? 300 : EV_TIMEOUT_MS, NULL, 0) == self->cq)
		n++;
	EXPECT_LE(1, n);
	EXPECT_GE(100, n);
	EXPECT_EQ(unknown, eq_field("comp0", "unknown"));
}

TEST_F(shca1, comp_event_on_another_vector_and_wrong_eq)
{
	struct ibv_cq *cq2;

	if (self->comp1 < 0)
		SKIP(return, "one completion vector");
	/* A second CQ, on vector 1. */
	cq2 = ibv_create_cq(self->ctx, 16, NULL, self->ch, 1);
	ASSERT_NE(NULL, cq2);
	ASSERT_EQ(0, inject("%ld 0 %u", self->comp1, to_scq(cq2)->cqn));
	if (ev_next(self->ch, EV_TIMEOUT_MS, NULL, 0) != cq2) {
		REQUIRE_KNOWN("comp1", 0);
		ASSERT_TRUE(false);
	}
	/* A COMP for it on the async EQ still runs its own EQ's tasklet. */
	ASSERT_EQ(0, inject("%ld 0 %u", self->async, to_scq(cq2)->cqn));
	EXPECT_EQ(cq2, ev_next(self->ch, EV_TIMEOUT_MS, NULL, 0));
	ASSERT_EQ(0, ibv_destroy_cq(cq2));
}

TEST_F(shca1, cq_error_event)
{
	struct ibv_async_event ev;

	ASSERT_EQ(0, inject("%ld 4 %d", self->async, self->cqn));
	if (expect_event(self->ctx, IBV_EVENT_CQ_ERR, &ev)) {
		REQUIRE_KNOWN("async", 0);
		ASSERT_TRUE(false);
	}
	EXPECT_EQ(self->cq, ev.element.cq);
}

TEST_F(shca1, qp_events)
{
	static const struct { int type, event; } map[] = {
		{ 0x05, IBV_EVENT_QP_FATAL },
		{ 0x10, IBV_EVENT_QP_REQ_ERR },
		{ 0x11, IBV_EVENT_QP_ACCESS_ERR },
		{ 0x13, IBV_EVENT_QP_LAST_WQE_REACHED },
		{ 0x02, IBV_EVENT_COMM_EST },
		{ 0x03, IBV_EVENT_SQ_DRAINED },
	};
	struct ibv_qp_init_attr ia = {
		.send_cq = self->cq, .recv_cq = self->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_async_event ev;
	struct ibv_qp *qp;

	qp = ibv_create_qp(self->pd, &ia);
	if (!qp)
		SKIP(return, "no QPs: %s", strerror(errno));
	for (unsigned int i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		ASSERT_EQ(0, inject("%ld %d %u", self->async, map[i].type,
				    qp->qp_num));
		if (expect_event(self->ctx, map[i].event, &ev)) {
			REQUIRE_KNOWN("async", 0);
			ASSERT_TRUE(false) TH_LOG("type 0x%x", map[i].type);
		}
		EXPECT_EQ(qp, ev.element.qp);
	}
	/* An unknown QPN is counted, nobody hears of it. */
	ASSERT_EQ(0, inject("%ld 5 %u", self->async, qp->qp_num + 1000));
	EXPECT_EQ(-1, next_event(self->ctx, 300, NULL));
	EXPECT_EQ(1, eq_field("async", "unknown"));
	ASSERT_EQ(0, ibv_destroy_qp(qp));
}

struct storm {
	long eqn;
	int cqn;
	int rounds;
};

static void *storm_fn(void *arg)
{
	struct storm *s = arg;

	for (int i = 0; i < s->rounds; i++)
		inject("%ld 0 %d 50", s->eqn, s->cqn);
	return NULL;
}

/* destroy_cq waits for the handlers and tasklets using the CQ. */
TEST_F(shca1, destroy_cq_during_comp_storm)
{
	struct storm s = { .eqn = self->comp0, .cqn = self->cqn, .rounds = 200 };
	struct ibv_cq *cq;
	pthread_t t;
	int n = 0;

	ASSERT_EQ(0, pthread_create(&t, NULL, storm_fn, &s));
	while ((cq = ev_next(self->ch, 100, NULL, 0)) && n < 20)
		n++;
	ASSERT_EQ(0, ibv_destroy_cq(self->cq));
	self->cq = NULL;
	pthread_join(t, NULL);
	TH_LOG("%d events before the destroy", n);
}

/*
 * The async EQ (256 entries) filled while its vector is disabled: the HCA
 * writes an EQ_OVERFLOW report and drops the rest; the driver declares the
 * device fatal and re-announces the port state.
 */
TEST_F(shca1, async_eq_overflow_is_device_fatal)
{
	ASSERT_EQ(0, inject("disable %ld", self->async));
	/* LAST_WQE_REACHED (0x13) for a QPN nobody has, 300 times. */
	ASSERT_EQ(0, inject("%ld 0x13 0xabcde 300", self->async));
	EXPECT_EQ(-1, next_event(self->ctx, 200, NULL));
	ASSERT_EQ(0, inject("enable %ld", self->async));
	EXPECT_EQ(0, expect_event(self->ctx, IBV_EVENT_DEVICE_FATAL, NULL));
	EXPECT_EQ(0, sh("grep -q '^device_fatal=1' " DBG "/eqs"));
	/* 255 EQEs and the report written, 45 dropped. */
	EXPECT_EQ(1, eq_field("async", "overflows"));
	EXPECT_EQ(1, eq_field("async", "hca_overflows"));
	EXPECT_EQ(45, eq_field("async", "hca_dropped"));
	/* It still works: the port events come through. */
	ASSERT_EQ(0, sh("ip link set veth1 down"));
	EXPECT_EQ(0, expect_event(self->ctx, IBV_EVENT_PORT_ERR, NULL));
	ASSERT_EQ(0, sh("ip link set veth1 up"));
	EXPECT_EQ(0, expect_event(self->ctx, IBV_EVENT_PORT_ACTIVE, NULL));
}

struct blocked_reader {
	struct ibv_comp_channel *ch;
	int ret, err;
	int done;		/* atomic */
};

static void *blocked_reader_fn(void *arg)
{
	struct blocked_reader *r = arg;
	struct ibv_cq *cq;
	void *ctx;

	r->ret = ibv_get_cq_event(r->ch, &cq, &ctx);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int reader_done(void *arg)
{
	return __atomic_load_n(&((struct blocked_reader *)arg)->done,
			       __ATOMIC_ACQUIRE);
}


/*
 * `rdma link del` while a process has the device open, with objects and
 * a thread asleep in ibv_get_cq_event: the device goes at once (the driver
 * disassociates the context, it does not wait for the user); ib_uverbs
 * queues IBV_EVENT_DEVICE_FATAL on the context's async fd (it does so for
 * every context it disassociates), once and nothing else, the sleeping
 * channel reader wakes with
 * EIO, and every object can still be destroyed without an error
 * (libibverbs takes EIO from a destroy of a disassociated object as done).
 * No warning in dmesg.
 */
TEST(device_fatal_on_link_del_with_user)
{
	struct blocked_reader r = {};
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_async_event ev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	static char buf[4096];
	long lines;
	int type, fatal = 0, others = 0;
	pthread_t t;

	ASSERT_EQ(0, links_up());
	ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"));
	ctx = open_dev("shca1");
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	ch = ibv_create_comp_channel(ctx);
	ASSERT_NE(NULL, ch);
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	ASSERT_NE(NULL, cq);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, mr);
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
	r.ch = ch;
	ASSERT_EQ(0, pthread_create(&t, NULL, blocked_reader_fn, &r));
	usleep(200 * 1000);
	ASSERT_EQ(0, reader_done(&r)) TH_LOG("the reader did not block");
	/* Drop the port events of the new device. */
	while (next_event(ctx, 300, NULL) >= 0)
		;
	lines = dmesg_lines();
	ASSERT_LE(0, lines);

	ASSERT_EQ(0, rdmanl_link_del("shca1"));
	EXPECT_GT(0, rdmanl_dev_index("shca1"));

	/* DEVICE_FATAL, then nothing more. */
	while ((type = next_event(ctx, fatal ? 500 : EV_TIMEOUT_MS, &ev)) >= 0) {
		if (type == IBV_EVENT_DEVICE_FATAL) {
			fatal++;
		} else {
			others++;
			TH_LOG("other event %s", ibv_event_type_str(type));
		}
	}
	TH_LOG("%d DEVICE_FATAL, %d other events", fatal, others);
	EXPECT_EQ(1, fatal) TH_LOG("DEVICE_FATAL %d times within %d ms", fatal,
				   EV_TIMEOUT_MS);
	EXPECT_EQ(0, others);

	EXPECT_TRUE(wait_until(reader_done, &r, EV_TIMEOUT_MS))
		TH_LOG("the channel reader still asleep");
	if (reader_done(&r)) {
		pthread_join(t, NULL);
		EXPECT_EQ(-1, r.ret);
		EXPECT_EQ(EIO, r.err);
	}

	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));

	EXPECT_NE(0, sh("dmesg | tail -n +%ld | grep -E 'WARNING:|BUG:|BUG |Oops|cut here|Call Trace|general protection|blocked for more than|softhca.*(leak|busy)' >&2",
			lines + 1)) TH_LOG("dmesg not clean after the link del");
}

TEST_HARNESS_MAIN
