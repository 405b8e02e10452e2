// SPDX-License-Identifier: GPL-2.0
/*
 * CQ arming and completion events (seed-map.md §5.3):
 * - no event without an arm; an arm fires once, on the next CQE, and again
 *   only after ibv_get_cq_event + a new arm (arm_sn);
 * - an arm that finds unconsumed CQEs no event announced yet fires at
 *   once; one that finds the CQ drained, or only CQEs the last event
 *   announced (event, ack, re-arm, then poll), does not;
 * - a solicited-only arm ignores plain CQEs and fires on a solicited or an
 *   error CQE, including one already waiting when it arms;
 * - arming an empty CQ makes no system call, whatever the engine is doing
 *   (the wake-up call counter does not move);
 * - CQ overrun: IBV_EVENT_CQ_ERR for the CQ, IBV_EVENT_QP_FATAL for the QP
 *   whose CQE did not fit, the QP in ERR;
 * - a completion EQ overflow: the events it dropped are resent once it is
 *   drained, to the CQs whose arm fired, and to no other CQ.
 * Each end's CQs report to that end's completion channel (one per end, so
 * also two channels on one context).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "events.h"
#include "rc.h"
#include "verbs_util.h"
#include "util.h"

#define EV_MS		5000	/* an event that takes longer is lost */
#define QUIET_MS	200	/* how long "no event" is watched */
#define WAKEUPS		"/sys/module/softhca/parameters/engine_wakeups"

FIXTURE(arm) {
	struct rc_pair p;
};

FIXTURE_VARIANT(arm) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(arm, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(arm, cross_dev) { .topo = RC_CROSS_DEV };

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(arm)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.channels = true;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(arm)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/* The next CQ event on @ch within @ms, acked; why not in rc_err. */
static struct ibv_cq *next_ev(struct ibv_comp_channel *ch, int ms)
{
	return ev_next(ch, ms, rc_err, sizeof(rc_err));
}

/* 1 if @ch has an event pending within @ms (it is consumed), else 0. */
static int event_within(struct ibv_comp_channel *ch, int ms)
{
	return next_ev(ch, ms) != NULL;
}

/* A signaled 8-byte RDMA WRITE from @e to its peer: one send CQE on e. */
static int write_8(struct rc_pair *p, struct rc_end *e, uint64_t wr_id)
{
	struct rc_end *peer = rc_peer(p, e == &p->e[0] ? 0 : 1);

	return rc_post_send(e->qp, IBV_WR_RDMA_WRITE, wr_id, e->buf, 8,
			    e->mr->lkey, (uintptr_t)peer->buf + 4096,
			    peer->mr->rkey, IBV_SEND_SIGNALED, 0);
}

/* @n completions of @cq, all successful. */
static int drain(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[16];
	int got = 0;

	while (got < n) {
		int k = n - got < 16 ? n - got : 16;
		int r = rc_poll(cq, wc, k, EV_MS);

		if (r < 0)
			return r;
		for (int i = 0; i < r; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				snprintf(rc_err, sizeof(rc_err), "%s",
					 rc_wc_str(&wc[i]));
				return -EIO;
			}
		got += r;
		if (r < k)
			break;
	}
	return got;
}

static unsigned long wakeups(void)
{
	char line[64];

	if (read_line(WAKEUPS, line, sizeof(line)))
		return ~0ul;
	return strtoul(line, NULL, 10);
}

TEST_F(arm, no_event_without_arm)
{
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
}

TEST_F(arm, arm_fires_once_on_next_cqe)
{
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	/* Armed, nothing written yet: quiet. */
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	/* The arm is used up: the next CQE raises nothing. */
	ASSERT_EQ(0, write_8(&self->p, A, 2)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	/* The peer's CQs were never armed. */
	EXPECT_EQ(0, event_within(B->ch, 0));
}

/* The classic event loop, many times: exactly one event per arm. */
TEST_F(arm, rearm_after_event_fires_again)
{
	for (int i = 0; i < 200; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
		ASSERT_EQ(0, write_8(&self->p, A, i)) TH_LOG("%s", rc_err);
		ASSERT_EQ(A->scq, next_ev(A->ch, EV_MS))
			TH_LOG("round %d: %s", i, rc_err);
		ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	}
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
}

/* Arming twice before the event (same arm_sn) still gives one event. */
TEST_F(arm, double_arm_fires_once)
{
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, write_8(&self->p, A, 2)) TH_LOG("%s", rc_err);
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(2, drain(A->scq, 2)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
}

/* Re-arming without get_cq_event (no new arm_sn) gives no second event. */
TEST_F(arm, rearm_without_get_event_is_the_same_arm)
{
	struct pollfd pfd = { .fd = A->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;

	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, poll(&pfd, 1, EV_MS));
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	/* The event is pending in the channel, not yet taken. */
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 2)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, ibv_get_cq_event(A->ch, &cq, &cq_ctx));
	EXPECT_EQ(A->scq, cq);
	ibv_ack_cq_events(cq, 1);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	/* Now with the new arm_sn it fires again. */
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 3)) TH_LOG("%s", rc_err);
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
}

TEST_F(arm, arm_with_unconsumed_cqe_fires_at_once)
{
	struct ibv_wc wc;

	memcpy(A->buf, "arm-test", 8);
	ASSERT_EQ(0, write_8(&self->p, A, 7)) TH_LOG("%s", rc_err);
	/*
	 * Wait, without consuming it, until the CQE is there: the data lands
	 * at the peer first and the CQE follows in the same engine step.
	 */
	for (int i = 0; i < 5000 && memcmp(B->buf + 4096, "arm-test", 8); i++)
		usleep(1000);
	ASSERT_EQ(0, memcmp(B->buf + 4096, "arm-test", 8));
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	/* No further traffic: the waiting CQE alone makes the event. */
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, EV_MS));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

TEST_F(arm, arm_after_drain_does_not_fire)
{
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	ASSERT_EQ(0, write_8(&self->p, A, 2)) TH_LOG("%s", rc_err);
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
}

/* The receive side: SENDs from the peer, with and without SOLICITED. */
static int send_to(struct rc_pair *p, struct rc_end *from, struct rc_end *to,
		   uint64_t wr_id, unsigned int flags)
{
	int ret = rc_post_recv(to->qp, wr_id, to->buf, 64, to->mr->lkey);

	if (ret)
		return ret;
	return rc_post_send(from->qp, IBV_WR_SEND, wr_id, from->buf, 16,
			    from->mr->lkey, 0, 0, IBV_SEND_SIGNALED | flags, 0);
}

TEST_F(arm, solicited_only)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 1));
	ASSERT_EQ(0, send_to(&self->p, A, B, 1, 0)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(B->ch, QUIET_MS));
	/* A solicited SEND fires it. */
	ASSERT_EQ(0, send_to(&self->p, A, B, 2, IBV_SEND_SOLICITED))
		TH_LOG("%s", rc_err);
	EXPECT_EQ(B->rcq, next_ev(B->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(2, wc.wr_id);
	ASSERT_EQ(2, drain(A->scq, 2)) TH_LOG("%s", rc_err);
	/* The sender's CQ was not armed. */
	EXPECT_EQ(0, event_within(A->ch, 0));
}

TEST_F(arm, solicited_only_arm_with_waiting_cqes)
{
	struct ibv_wc wc[2];

	/* Only an unsolicited CQE waits: the arm does not fire. */
	ASSERT_EQ(0, send_to(&self->p, A, B, 1, 0)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 1));
	EXPECT_EQ(0, event_within(B->ch, QUIET_MS));
	/* A solicited one behind it (the arm was first): fires. */
	ASSERT_EQ(0, send_to(&self->p, A, B, 2, IBV_SEND_SOLICITED))
		TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(B->rcq, next_ev(B->ch, EV_MS)) TH_LOG("%s", rc_err);
	/* Both unconsumed, both announced by that event: a new arm waits. */
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 1));
	EXPECT_EQ(0, event_within(B->ch, QUIET_MS));
	ASSERT_EQ(2, rc_poll(B->rcq, wc, 2, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(1, wc[0].wr_id);
	EXPECT_EQ(2, wc[1].wr_id);
	/* The next solicited CQE fires that arm... */
	ASSERT_EQ(0, send_to(&self->p, A, B, 3, IBV_SEND_SOLICITED))
		TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(B->rcq, next_ev(B->ch, EV_MS)) TH_LOG("%s", rc_err);
	/* ...one arriving unarmed is unannounced: the next arm fires at once. */
	ASSERT_EQ(0, send_to(&self->p, A, B, 4, IBV_SEND_SOLICITED))
		TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(B->ch, QUIET_MS));
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 1));
	EXPECT_EQ(B->rcq, next_ev(B->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(2, rc_poll(B->rcq, wc, 2, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(3, wc[0].wr_id);
	EXPECT_EQ(4, wc[1].wr_id);
}

/*
 * The loop of ibv_get_cq_event(3) and perftest: event, ack, re-arm, then
 * poll. The CQE that woke it was announced: the re-arm does not fire for
 * it (perftest -e posts the next WR only after one poll per event).
 */
TEST_F(arm, rearm_before_poll_gets_no_second_event)
{
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
		ASSERT_EQ(0, write_8(&self->p, A, i)) TH_LOG("%s", rc_err);
		ASSERT_EQ(A->scq, next_ev(A->ch, EV_MS))
			TH_LOG("round %d: %s", i, rc_err);
		ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
		EXPECT_EQ(0, event_within(A->ch, 20)) TH_LOG("round %d", i);
		ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
		/* The arm is live: the next CQE fires it (next round's arm
		 * is then the same arm_sn... so take the event here). */
		ASSERT_EQ(0, write_8(&self->p, A, 100 + i)) TH_LOG("%s", rc_err);
		ASSERT_EQ(A->scq, next_ev(A->ch, EV_MS))
			TH_LOG("round %d: %s", i, rc_err);
		ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	}
}

/*
 * No lost wake-up in that loop: a CQE written after the event (while
 * nothing was armed) makes the re-arm fire at once.
 */
TEST_F(arm, cqe_between_event_and_rearm_fires_at_once)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	/* Wait for the event without taking it, then a second CQE. */
	ASSERT_EQ(1, poll(&(struct pollfd){ .fd = A->ch->fd,
					    .events = POLLIN }, 1, EV_MS));
	ASSERT_EQ(0, write_8(&self->p, A, 2)) TH_LOG("%s", rc_err);
	usleep(50000);
	ASSERT_EQ(0, ibv_get_cq_event(A->ch, &cq, &cq_ctx));
	ibv_ack_cq_events(cq, 1);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(2, drain(A->scq, 2)) TH_LOG("%s", rc_err);
}

/* An error CQE satisfies a solicited-only arm. */
TEST_F(arm, solicited_only_fires_on_error)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 1));
	ASSERT_EQ(0, write_8(&self->p, A, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	/* A WRITE with a bad rkey: remote access error. */
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 2, A->buf, 8,
				  A->mr->lkey, (uintptr_t)B->buf,
				  B->mr->rkey ^ 0x80, IBV_SEND_SIGNALED, 0));
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
}

/*
 * Arming an empty CQ needs nobody to look now: no wake-up call, whether
 * the engine is polling or asleep (the gaps let it fall asleep).
 */
TEST_F(arm, arm_makes_no_wakeup_call)
{
	unsigned long before, after;

	before = wakeups();
	ASSERT_NE(~0ul, before);
	for (int i = 0; i < 1000; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(A->rcq, i & 1));
		if (!(i % 100))
			usleep(2000);
	}
	after = wakeups();
	EXPECT_EQ(before, after) TH_LOG("%lu wake-up calls in 1000 arms",
					 after - before);
	/* And the last of those arms is live. */
	ASSERT_EQ(0, send_to(&self->p, B, A, 1, IBV_SEND_SOLICITED))
		TH_LOG("%s", rc_err);
	EXPECT_EQ(A->rcq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(A->rcq, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(1, drain(B->scq, 1)) TH_LOG("%s", rc_err);
}

/*
 * A completion EQ that overflows drops events; once the driver has drained
 * it, the HCA resends exactly the ones it dropped: one to each CQ whose
 * arm fired into the full EQ, none to a CQ that was not armed (a spurious
 * event would advance that consumer's arm_sn for nothing, and a kernel
 * CQ polled directly WARNs on one). A's CQs are on shca0's comp0, whose
 * interrupt is held off while test events (CQN 0) fill it to the brink.
 */
TEST_F(arm, comp_eq_overflow_resends_only_lost_events)
{
	long eqn = eq_dbg_field("shca0", "comp0", "eqn");
	long size = eq_dbg_field("shca0", "comp0", "size");
	long overflows = eq_dbg_field("shca0", "comp0", "hca_overflows");
	struct ibv_cq *cq;

	ASSERT_LT(0, size);
	ASSERT_LE(0, overflows);
	ASSERT_EQ(0, rc_post_recv(A->qp, 5, A->buf, 64, A->mr->lkey));

	ASSERT_EQ(0, eq_dbg_inject("shca0", "disable %ld", eqn));
	ASSERT_EQ(0, eq_dbg_inject("shca0", "%ld 0 0 %ld", eqn, size - 1));
	/* A's send CQ armed, its receive CQ not; a CQE on each. */
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 1));
	EXPECT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, rc_post_send(B->qp, IBV_WR_SEND, 2, B->buf, 8,
				  B->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	EXPECT_EQ(1, drain(A->rcq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(1, drain(B->scq, 1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(overflows + 1,
		  eq_dbg_field("shca0", "comp0", "hca_overflows"));
	ASSERT_EQ(0, eq_dbg_inject("shca0", "enable %ld", eqn));

	cq = next_ev(A->ch, EV_MS);
	EXPECT_EQ(A->scq, cq) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, event_within(A->ch, QUIET_MS));
	EXPECT_EQ(0, event_within(B->ch, QUIET_MS));

	/* Arming goes on as before: the next arm fires on the next CQE. */
	ASSERT_EQ(0, ibv_req_notify_cq(A->scq, 0));
	ASSERT_EQ(0, write_8(&self->p, A, 3));
	EXPECT_EQ(A->scq, next_ev(A->ch, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(1, drain(A->scq, 1)) TH_LOG("%s", rc_err);
}

static void small_cq(struct rc_cfg *c)
{
	c->cqe = 4;
}

/*
 * More signaled WQEs than the send CQ holds, never polled: the CQ
 * overruns. The owner hears IBV_EVENT_CQ_ERR for the CQ and
 * IBV_EVENT_QP_FATAL for the QP, which is in ERR.
 */
TEST_F(arm, overrun_is_cq_err_and_qp_fatal)
{
	struct ibv_async_event ev;
	bool cq_err = false, qp_fatal = false;
	struct rc_cfg c = self->p.cfg;
	int n;

	rc_pair_destroy(&self->p);
	small_cq(&c);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	n = A->scq->cqe + 2;
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, write_8(&self->p, A, i)) TH_LOG("%s", rc_err);
	for (int i = 0; i < 4 && !(cq_err && qp_fatal); i++) {
		int type = next_async_event(A->ctx, EV_MS, &ev);

		ASSERT_NE(-1, type) TH_LOG("cq_err %d qp_fatal %d", cq_err,
					   qp_fatal);
		if (type == IBV_EVENT_CQ_ERR) {
			EXPECT_EQ(A->scq, ev.element.cq);
			cq_err = true;
		} else if (type == IBV_EVENT_QP_FATAL) {
			EXPECT_EQ(A->qp, ev.element.qp);
			qp_fatal = true;
		}
	}
	EXPECT_TRUE(cq_err);
	EXPECT_TRUE(qp_fatal);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(A->qp, IBV_QPS_ERR, EV_MS));
	/* The peer saw nothing of it. */
	if (B->ctx != A->ctx)
		EXPECT_EQ(-1, next_async_event(B->ctx, 0, &ev));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(B->qp));
}

TEST_HARNESS_MAIN
