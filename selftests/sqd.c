// SPDX-License-Identifier: GPL-2.0
/*
 * Send queue drain (RTS -> SQD) and IBV_EVENT_SQ_DRAINED:
 * - with en_sqd_async_notify the owner gets SQ_DRAINED once the SQ has no
 *   WQE in flight: at once when idle, after the in-flight WQE's completion
 *   when one is waiting (here for an RNR retry);
 * - without it, no event; each entry into SQD raises at most one;
 * - WQEs posted in SQD wait, and run after SQD -> RTS;
 * - RESET forgets the flag.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"

#define EV_MS		5000
#define QUIET_MS	300

FIXTURE(sqd) {
	struct rc_pair p;
};

FIXTURE_SETUP(sqd)
{
	struct rc_cfg c;

	/* One context per end: each end's async events are its own. */
	rc_cfg_default(&c, RC_TWO_CTX);
	c.min_rnr_timer[1] = 1;		/* B's RNR NAKs: 0.01 ms */
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(sqd)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

static int to_sqd(struct ibv_qp *qp, int notify)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_SQD,
		.en_sqd_async_notify = notify,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE |
			     (notify >= 0 ? IBV_QP_EN_SQD_ASYNC_NOTIFY : 0));
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int sq_draining(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -errno;
	return a.sq_draining;
}

TEST_F(sqd, idle_sq_drains_at_once)
{
	struct ibv_async_event ev;

	ASSERT_EQ(0, to_sqd(A->qp, 1));
	ASSERT_EQ(IBV_EVENT_SQ_DRAINED, next_async_event(A->ctx, EV_MS, &ev));
	EXPECT_EQ(A->qp, ev.element.qp);
	EXPECT_EQ(IBV_QPS_SQD, rc_qp_state(A->qp));
	EXPECT_EQ(0, sq_draining(A->qp));
	/* One per entry into SQD. */
	EXPECT_EQ(-1, next_async_event(A->ctx, QUIET_MS, &ev));
	EXPECT_EQ(-1, next_async_event(B->ctx, 0, &ev));
	/* SQD -> RTS -> SQD raises it again. */
	ASSERT_EQ(0, to_rts(A->qp));
	ASSERT_EQ(0, to_sqd(A->qp, -1));	/* notify kept from before */
	ASSERT_EQ(IBV_EVENT_SQ_DRAINED, next_async_event(A->ctx, EV_MS, &ev));
	EXPECT_EQ(A->qp, ev.element.qp);
}

TEST_F(sqd, no_event_without_notify)
{
	struct ibv_async_event ev;

	ASSERT_EQ(0, to_sqd(A->qp, 0));
	EXPECT_EQ(IBV_QPS_SQD, rc_qp_state(A->qp));
	EXPECT_EQ(-1, next_async_event(A->ctx, QUIET_MS, &ev));
	ASSERT_EQ(0, to_rts(A->qp));
	ASSERT_EQ(0, to_sqd(A->qp, -1));
	EXPECT_EQ(-1, next_async_event(A->ctx, QUIET_MS, &ev));
}

/*
 * RESET forgets en_sqd_async_notify: after a reconnect, SQD without the
 * flag raises nothing. (ibv_query_qp cannot show the flag: libibverbs does
 * not copy it, "irrelevant for ibv_query_qp".)
 */
TEST_F(sqd, reset_clears_notify)
{
	struct ibv_async_event ev;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	ASSERT_EQ(0, to_sqd(A->qp, 1));
	ASSERT_EQ(IBV_EVENT_SQ_DRAINED, next_async_event(A->ctx, EV_MS, &ev));
	ASSERT_EQ(0, ibv_modify_qp(A->qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RESET;
	ASSERT_EQ(0, ibv_modify_qp(A->qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, rc_end_connect(&self->p, 0)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, to_sqd(A->qp, -1));
	EXPECT_EQ(IBV_QPS_SQD, rc_qp_state(A->qp));
	EXPECT_EQ(-1, next_async_event(A->ctx, QUIET_MS, &ev));
	/* Asked again: raised again. */
	ASSERT_EQ(0, to_rts(A->qp));
	ASSERT_EQ(0, to_sqd(A->qp, 1));
	ASSERT_EQ(IBV_EVENT_SQ_DRAINED, next_async_event(A->ctx, EV_MS, &ev));
}

/*
 * A SEND waiting for B's receive (RNR, retried forever) is in flight: the
 * drain completes only with it, and the event comes after its completion.
 */
TEST_F(sqd, drained_after_the_waiting_wqe_completes)
{
	struct ibv_async_event ev;
	struct ibv_wc wc;

	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 41, A->buf, 32,
				  A->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
	EXPECT_EQ(0, rc_poll_none(A->scq, 50)) TH_LOG("%s", rc_err);
	/*
	 * Nothing shows from outside that the engine has sent it and got the
	 * RNR NAK. If SQD came first, the SEND has not started: then the SQ
	 * is drained at once and the SEND waits for RTS; go back and let it
	 * start (a loaded host can delay the engine that long).
	 */
	for (int try = 0; try < 6; try++) {
		ASSERT_EQ(0, to_sqd(A->qp, 1));
		if (sq_draining(A->qp) == 1)
			break;
		ASSERT_EQ(IBV_EVENT_SQ_DRAINED,
			  next_async_event(A->ctx, EV_MS, &ev));
		EXPECT_EQ(0, rc_poll_none(A->scq, 0)) TH_LOG("%s", rc_err);
		ASSERT_EQ(0, to_rts(A->qp));
		usleep(50000 << try);
	}
	ASSERT_EQ(1, sq_draining(A->qp));
	EXPECT_EQ(-1, next_async_event(A->ctx, QUIET_MS, &ev));
	ASSERT_EQ(0, rc_post_recv(B->qp, 42, B->buf, 64, B->mr->lkey));
	ASSERT_EQ(IBV_EVENT_SQ_DRAINED, next_async_event(A->ctx, EV_MS, &ev))
		TH_LOG("no SQ_DRAINED: send CQ has %d, sq_draining %d, state %d",
		       rc_poll(A->scq, &wc, 1, 0), sq_draining(A->qp),
		       rc_qp_state(A->qp));
	EXPECT_EQ(A->qp, ev.element.qp);
	/* Its completion was written before the event. */
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, 0)) TH_LOG("%s", rc_err);
	EXPECT_EQ(41, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, sq_draining(A->qp));
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(42, wc.wr_id);
	EXPECT_EQ(32, wc.byte_len);
}

/* Posted in SQD: not started until the QP is back in RTS. */
TEST_F(sqd, wqes_posted_in_sqd_wait_for_rts)
{
	struct ibv_wc wc;

	rc_fill(A->buf, 64, 7);
	ASSERT_EQ(0, to_sqd(A->qp, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 5, A->buf, 64,
				  A->mr->lkey, (uintptr_t)B->buf + 8192,
				  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	EXPECT_EQ(0, rc_poll_none(A->scq, QUIET_MS)) TH_LOG("%s", rc_err);
	EXPECT_NE(-1, rc_check_fill(B->buf + 8192, 64, 7));
	ASSERT_EQ(0, to_rts(A->qp));
	ASSERT_EQ(1, rc_poll(A->scq, &wc, 1, EV_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(5, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(-1, rc_check_fill(B->buf + 8192, 64, 7));
}

TEST_HARNESS_MAIN
