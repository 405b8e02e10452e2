// SPDX-License-Identifier: GPL-2.0
/*
 * CQ resize (ibv_resize_cq) and moderation (ibv_modify_cq):
 * - resize keeps every CQE not yet polled, in order, with its fields and
 *   data, whether the consumer index sits at the start of the old ring or
 *   past a wrap; CQEs written after it land in the new ring, laps of it
 *   included; cqe reports the new size;
 * - a resize below the CQEs present fails with EINVAL and changes nothing;
 *   0, negative and past max_cqe fail with EINVAL;
 * - the arm moves with the CQEs: an arm set before the resize fires on
 *   the next CQE after it, and a CQE an event announced before the resize
 *   is not announced again;
 * - moderation caps (ibv_query_device_ex) are mlx5's; a period past them,
 *   an empty or unknown attr_mask fail with EINVAL;
 * - a count: no event for count - 1 CQEs, one on the count-th;
 * - a period: the event comes, and not before the period has passed since
 *   the CQE; with a count too, the period still ends a batch short of it;
 * - (0, 0) turns moderation off again: the next CQE fires at once.
 * Receives of B are what the tests count: A's send completion of an RC
 * SEND means B's receive CQE was written (the model acks after it).
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
#define RCQ_CQE		15	/* B's receive CQ: a 16-entry ring */
#define PERIOD_US	4000

FIXTURE(cqm) {
	struct rc_pair p;
};

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(cqm)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	c.channels = true;
	c.cqe = RCQ_CQE;
	c.max_recv_wr = 32;
	c.max_send_wr = 32;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(cqm)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/*
 * SEND @n messages A -> B, message i (from @first) of i % 61 + 1 bytes
 * filled with i, into receives B posted with wr_id i; returns once A has
 * all its send completions (so B's receive CQEs are written). In chunks
 * that A's 16-entry send CQ holds.
 */
static int send_n(struct rc_pair *p, uint32_t first, int n)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_wc wc[8];
	int i, j, chunk;

	for (i = 0; i < n; i += chunk) {
		chunk = n - i > 8 ? 8 : n - i;
		for (j = 0; j < chunk; j++) {
			uint32_t k = first + i + j, len = k % 61 + 1;
			uint8_t *src = a->buf + 64 * (k % 256);

			memset(src, (int)(k & 0xff), len);
			if (rc_post_recv(b->qp, k, b->buf + 64 * (k % 256), 64,
					 b->mr->lkey) ||
			    rc_post_send(a->qp, IBV_WR_SEND, k, src, len,
					 a->mr->lkey, 0, 0, IBV_SEND_SIGNALED,
					 0))
				return -1;
		}
		if (rc_poll(a->scq, wc, chunk, EV_MS) != chunk)
			return -1;
		for (j = 0; j < chunk; j++)
			if (wc[j].status != IBV_WC_SUCCESS)
				return -1;
	}
	return 0;
}

/*
 * Poll @n receive completions of B: wr_id first..first+n-1 in order, each
 * with its length and data. 0, or -1 with rc_err set.
 */
static int recv_check(struct rc_pair *p, uint32_t first, int n)
{
	struct rc_end *b = &p->e[1];
	struct ibv_wc wc;
	int i;

	for (i = 0; i < n; i++) {
		uint32_t k = first + i, len = k % 61 + 1;
		const uint8_t *dst = b->buf + 64 * (k % 256);
		uint32_t j;

		if (rc_poll(b->rcq, &wc, 1, EV_MS) != 1) {
			snprintf(rc_err, sizeof(rc_err), "CQE %u missing", k);
			return -1;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
		    wc.wr_id != k || wc.byte_len != len ||
		    wc.qp_num != b->qp->qp_num) {
			snprintf(rc_err, sizeof(rc_err),
				 "CQE %u: status %d opcode %d wr_id %llu len %u qpn %u",
				 k, wc.status, wc.opcode,
				 (unsigned long long)wc.wr_id, wc.byte_len,
				 wc.qp_num);
			return -1;
		}
		for (j = 0; j < len; j++)
			if (dst[j] != (k & 0xff)) {
				snprintf(rc_err, sizeof(rc_err),
					 "CQE %u: byte %u is %u", k, j, dst[j]);
				return -1;
			}
	}
	return 0;
}

TEST_F(cqm, resize_keeps_unpolled_cqes)
{
	struct ibv_cq *cq = B->rcq;

	ASSERT_EQ(RCQ_CQE, cq->cqe);
	ASSERT_EQ(0, send_n(&self->p, 0, 10));
	/* 10 present: a 7-CQE ring cannot hold them. */
	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 5));
	EXPECT_EQ(RCQ_CQE, cq->cqe);
	ASSERT_EQ(0, recv_check(&self->p, 0, 3)) TH_LOG("%s", rc_err);
	/* 7 left, consumer index 3: into a ring of 16 (cqe 15). */
	ASSERT_EQ(0, ibv_resize_cq(cq, 8));
	EXPECT_EQ(15, cq->cqe);
	ASSERT_EQ(0, recv_check(&self->p, 3, 7)) TH_LOG("%s", rc_err);
	/* Laps of the new ring. */
	for (int k = 0; k < 4; k++) {
		ASSERT_EQ(0, send_n(&self->p, 10 + 12 * k, 12));
		ASSERT_EQ(0, recv_check(&self->p, 10 + 12 * k, 12))
			TH_LOG("%s", rc_err);
	}
	/* Unpolled CQEs across the wrap of the old ring, into a big one. */
	ASSERT_EQ(0, send_n(&self->p, 58, 13));
	ASSERT_EQ(0, ibv_resize_cq(cq, 1000));
	EXPECT_EQ(1023, cq->cqe);
	ASSERT_EQ(0, send_n(&self->p, 71, 18));
	ASSERT_EQ(0, recv_check(&self->p, 58, 31)) TH_LOG("%s", rc_err);
	/* And back down while empty. */
	ASSERT_EQ(0, ibv_resize_cq(cq, 3));
	EXPECT_EQ(3, cq->cqe);
	ASSERT_EQ(0, send_n(&self->p, 89, 3));
	ASSERT_EQ(0, recv_check(&self->p, 89, 3)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, rc_poll_none(cq, 0)) TH_LOG("%s", rc_err);
}

TEST_F(cqm, resize_bad_sizes)
{
	struct ibv_device_attr da;

	ASSERT_EQ(0, ibv_query_device(B->ctx, &da));
	EXPECT_EQ(EINVAL, ibv_resize_cq(B->rcq, 0));
	EXPECT_EQ(EINVAL, ibv_resize_cq(B->rcq, -1));
	EXPECT_EQ(EINVAL, ibv_resize_cq(B->rcq, da.max_cqe + 1));
	EXPECT_EQ(RCQ_CQE, B->rcq->cqe);
	/* Still working. */
	ASSERT_EQ(0, send_n(&self->p, 0, 2));
	ASSERT_EQ(0, recv_check(&self->p, 0, 2)) TH_LOG("%s", rc_err);
}

TEST_F(cqm, resize_moves_the_arm)
{
	struct ibv_comp_channel *ch = B->ch;

	/* Armed while empty: the arm fires on the first CQE after it. */
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	ASSERT_EQ(0, ibv_resize_cq(B->rcq, 100));
	EXPECT_EQ(NULL, ev_next(ch, QUIET_MS, NULL, 0));
	ASSERT_EQ(0, send_n(&self->p, 0, 1));
	EXPECT_EQ(B->rcq, ev_next(ch, EV_MS, NULL, 0));
	/* Announced, re-armed, not polled: no second event after a resize. */
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	ASSERT_EQ(0, ibv_resize_cq(B->rcq, 20));
	EXPECT_EQ(NULL, ev_next(ch, QUIET_MS, NULL, 0));
	ASSERT_EQ(0, send_n(&self->p, 1, 1));
	EXPECT_EQ(B->rcq, ev_next(ch, EV_MS, NULL, 0));
	ASSERT_EQ(0, recv_check(&self->p, 0, 2)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, rc_poll_none(B->rcq, 0)) TH_LOG("%s", rc_err);
}

static int moderate(struct ibv_cq *cq, uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr attr = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = count, .cq_period = period },
	};

	return ibv_modify_cq(cq, &attr);
}

TEST_F(cqm, moderation_caps_and_bad_input)
{
	struct ibv_device_attr_ex ax = {};
	struct ibv_modify_cq_attr attr = {};

	ASSERT_EQ(0, ibv_query_device_ex(B->ctx, NULL, &ax));
	EXPECT_EQ(0xffff, ax.cq_mod_caps.max_cq_count);
	EXPECT_EQ(0xfff, ax.cq_mod_caps.max_cq_period);
	EXPECT_EQ(EINVAL, moderate(B->rcq, 1, 0x1000));
	EXPECT_EQ(EINVAL, ibv_modify_cq(B->rcq, &attr));
	attr.attr_mask = IBV_CQ_ATTR_MODERATE << 1;
	EXPECT_EQ(EINVAL, ibv_modify_cq(B->rcq, &attr));
	EXPECT_EQ(0, moderate(B->rcq, 0xffff, 0xfff));
	EXPECT_EQ(0, moderate(B->rcq, 0, 0));
}

TEST_F(cqm, moderation_count)
{
	struct ibv_comp_channel *ch = B->ch;

	ASSERT_EQ(0, moderate(B->rcq, 4, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	ASSERT_EQ(0, send_n(&self->p, 0, 3));
	EXPECT_EQ(NULL, ev_next(ch, QUIET_MS, NULL, 0));
	ASSERT_EQ(0, send_n(&self->p, 3, 1));
	EXPECT_EQ(B->rcq, ev_next(ch, EV_MS, NULL, 0));
	ASSERT_EQ(0, recv_check(&self->p, 0, 4)) TH_LOG("%s", rc_err);
	/* Off again: the next CQE fires at once. */
	ASSERT_EQ(0, moderate(B->rcq, 0, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	ASSERT_EQ(0, send_n(&self->p, 4, 1));
	EXPECT_EQ(B->rcq, ev_next(ch, EV_MS, NULL, 0));
	ASSERT_EQ(0, recv_check(&self->p, 4, 1)) TH_LOG("%s", rc_err);
}

/* Microseconds from posting one SEND to its event on B's receive CQ. */
static long long event_after_us(struct rc_pair *p, uint32_t k)
{
	uint64_t t0 = rc_now_us();

	if (send_n(p, k, 1) || ev_next(p->e[1].ch, EV_MS, NULL, 0) != p->e[1].rcq)
		return -1;
	return (long long)(rc_now_us() - t0);
}

TEST_F(cqm, moderation_period)
{
	long long us;

	/* The period alone. */
	ASSERT_EQ(0, moderate(B->rcq, 0, PERIOD_US));
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	us = event_after_us(&self->p, 0);
	EXPECT_LE(PERIOD_US, us) TH_LOG("event after %lld us", us);
	ASSERT_EQ(0, recv_check(&self->p, 0, 1)) TH_LOG("%s", rc_err);
	/* A count the batch does not reach: the period ends it. */
	ASSERT_EQ(0, moderate(B->rcq, 8, PERIOD_US));
	ASSERT_EQ(0, ibv_req_notify_cq(B->rcq, 0));
	us = event_after_us(&self->p, 1);
	EXPECT_LE(PERIOD_US, us) TH_LOG("event after %lld us", us);
	ASSERT_EQ(0, recv_check(&self->p, 1, 1)) TH_LOG("%s", rc_err);
}

TEST_HARNESS_MAIN
