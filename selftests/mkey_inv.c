// SPDX-License-Identifier: GPL-2.0
/*
 * Invalidation as user space can ask for it (fast registration itself is
 * for kernel QPs: selftests/kfrwr.sh): only fast-registration MKeys (and,
 * later, memory windows) can be invalidated, so
 * - IBV_WR_SEND_WITH_INV naming the peer's MR rkey: the sender completes
 *   with IBV_WC_REM_INV_REQ_ERR, the receive with IBV_WC_LOC_QP_OP_ERR,
 *   no byte lands, and the MR is untouched: after reconnecting, a WRITE
 *   through the same rkey works;
 * - IBV_WR_LOCAL_INV of the QP's own MR key: IBV_WC_LOC_QP_OP_ERR, the MR
 *   still works;
 * - a fast-registration opcode (IB_WR_REG_MR's 0x20) is refused by
 *   ibv_post_send with EINVAL.
 * Same context and shca0<->shca1; over the wire when the suite forces it.
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"

#define EV_MS	5000
#define DST	(128 * 1024)

FIXTURE(inv) {
	struct rc_pair p;
};

FIXTURE_VARIANT(inv) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(inv, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(inv, cross_dev) { .topo = RC_CROSS_DEV };

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(inv)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(inv)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/* One signaled WR of A; its completion status, or -1. */
static int a_post(struct rc_pair *p, struct ibv_send_wr *wr)
{
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(p->e[0].qp, wr, NULL) ||
	    rc_poll(p->e[0].scq, &wc, 1, EV_MS) != 1)
		return -1;
	return wc.status;
}

static int a_write(struct rc_pair *p, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, len, p->e[0].mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };

	wr.wr.rdma.remote_addr = (uintptr_t)p->e[1].buf + DST;
	wr.wr.rdma.rkey = p->e[1].mr->rkey;
	return a_post(p, &wr);
}

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[8];

	while (rc_poll(cq, wc, 8, 50) > 0)
		;
}

TEST_F(inv, send_with_inv_of_an_mr)
{
	struct ibv_sge sge = { (uintptr_t)A->buf, 100, A->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV };
	struct ibv_wc wc;

	memset(A->buf, 0x61, 100);
	memset(B->buf, 0, 100);
	ASSERT_EQ(0, rc_post_recv(B->qp, 9, B->buf, 256, B->mr->lkey));
	wr.invalidate_rkey = B->mr->rkey;
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, a_post(&self->p, &wr));
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS));
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status);
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(0, B->buf[0]);
	drain(A->scq);
	drain(B->rcq);
	ASSERT_EQ(0, rc_pair_connect(&self->p)) TH_LOG("%s", rc_err);
	memset(A->buf, 0x62, 64);
	EXPECT_EQ(IBV_WC_SUCCESS, a_write(&self->p, 64));
	EXPECT_EQ(0x62, B->buf[DST + 63]);
}

TEST_F(inv, local_inv_of_an_mr)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV };

	wr.invalidate_rkey = A->mr->lkey;
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, a_post(&self->p, &wr));
	drain(A->scq);
	ASSERT_EQ(0, rc_pair_connect(&self->p)) TH_LOG("%s", rc_err);
	memset(A->buf, 0x63, 64);
	EXPECT_EQ(IBV_WC_SUCCESS, a_write(&self->p, 64));
	EXPECT_EQ(0x63, B->buf[DST]);
}

TEST_F(inv, reg_mr_opcode_refused)
{
	struct ibv_send_wr wr = { .opcode = (enum ibv_wr_opcode)0x20 }, *bad;

	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(A->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	EXPECT_EQ(IBV_WC_SUCCESS, a_write(&self->p, 8));
}

TEST_HARNESS_MAIN
