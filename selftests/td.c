// SPDX-License-Identifier: GPL-2.0
/*
 * Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain)
 * as mlx5 offers them: a QP created on a parent domain that holds a thread
 * domain takes no locks on its queues (white box: the provider's lock
 * flags) and carries traffic like any QP, in the parent's protection
 * domain (an MR of that PD serves it, an MR of another PD does not); the
 * parent domain's pd_context comes back; a PD or a thread domain under a
 * parent domain, and a parent domain with a QP, refuse to be freed (EBUSY)
 * until what holds them goes; bad arguments are refused (no PD, a PD of
 * another context, a parent domain as the PD, allocators, a thread domain
 * with a comp_mask).
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"
#include "../user/softhca.h"	/* the queue locks' need_lock (white box) */

#define EV_MS	5000

FIXTURE(td) {
	struct rc_pair p;
	struct ibv_td *td;
	struct ibv_pd *parent;
};

FIXTURE_SETUP(td)
{
	struct ibv_parent_domain_init_attr pa = {
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.pd_context = (void *)0x5eed,
	};
	struct ibv_td_init_attr ta = {};
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->td = ibv_alloc_td(self->p.e[0].ctx, &ta);
	ASSERT_NE(NULL, self->td) TH_LOG("alloc_td: %s", strerror(errno));
	pa.pd = self->p.e[0].pd;
	pa.td = self->td;
	self->parent = ibv_alloc_parent_domain(self->p.e[0].ctx, &pa);
	ASSERT_NE(NULL, self->parent) TH_LOG("%s", strerror(errno));
}

FIXTURE_TEARDOWN(td)
{
	if (self->parent)
		ibv_dealloc_pd(self->parent);
	if (self->td)
		ibv_dealloc_td(self->td);
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

static struct ibv_qp *qp_on(struct ibv_pd *pd, struct rc_end *e)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

/* A SEND of @len bytes from A's QP (lkey @lkey) to B's; A's status. */
static int a_send(struct rc_pair *p, uint32_t lkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, len, lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	if (ibv_post_send(p->e[0].qp, &wr, NULL) ||
	    rc_poll(p->e[0].scq, &wc, 1, EV_MS) != 1)
		return -1;
	return wc.status;
}

TEST_F(td, qp_on_thread_domain_is_lockless_and_works)
{
	struct rc_pair p2 = self->p;
	struct ibv_mr *other;
	struct ibv_pd *pd2;
	struct ibv_wc wc;

	EXPECT_EQ(self->p.e[0].pd->handle, self->parent->handle);
	EXPECT_EQ(self->p.e[0].ctx, self->parent->context);
	p2.e[0].qp = qp_on(self->parent, A);
	ASSERT_NE(NULL, p2.e[0].qp) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(self->parent, p2.e[0].qp->pd);
	/* The thread domain's promise: no locks; a plain PD's QP has them. */
	EXPECT_FALSE(to_sqp(p2.e[0].qp)->sq.lock.need_lock);
	EXPECT_FALSE(to_sqp(p2.e[0].qp)->rq.lock.need_lock);
	EXPECT_TRUE(to_sqp(A->qp)->sq.lock.need_lock);
	ASSERT_EQ(0, rc_pair_connect(&p2)) TH_LOG("%s", rc_err);

	/* Traffic in the protection domain: A's MR (of that PD) works. */
	rc_fill(A->buf, 300, 4);
	memset(B->buf, 0, 300);
	ASSERT_EQ(0, rc_post_recv(B->qp, 7, B->buf, 4096, B->mr->lkey));
	EXPECT_EQ(IBV_WC_SUCCESS, a_send(&p2, A->mr->lkey, 300));
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(300, wc.byte_len);
	EXPECT_EQ(p2.e[0].qp->qp_num, wc.src_qp);
	EXPECT_EQ(-1, rc_check_fill(B->buf, 300, 4));

	/* An MR of another PD is no lkey for it. */
	pd2 = ibv_alloc_pd(A->ctx);
	ASSERT_NE(NULL, pd2);
	other = ibv_reg_mr(pd2, A->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, other);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, a_send(&p2, other->lkey, 64));

	/* Held: the parent by its QP, the PD and the TD by the parent. */
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->parent));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(A->pd));
	EXPECT_EQ(EBUSY, ibv_dealloc_td(self->td));
	EXPECT_EQ(0, ibv_destroy_qp(p2.e[0].qp));
	EXPECT_EQ(0, ibv_dealloc_pd(self->parent));
	self->parent = NULL;
	EXPECT_EQ(0, ibv_dealloc_td(self->td));
	self->td = NULL;
	EXPECT_EQ(0, ibv_dereg_mr(other));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	/* B's QP took A's traffic: back to RTS for the teardown. */
	ASSERT_EQ(0, rc_pair_connect(&self->p)) TH_LOG("%s", rc_err);
}

TEST_F(td, parent_domain_without_td_keeps_locks)
{
	struct ibv_parent_domain_init_attr pa = { .pd = A->pd };
	struct ibv_pd *plain = ibv_alloc_parent_domain(A->ctx, &pa);
	struct ibv_qp *qp;

	ASSERT_NE(NULL, plain);
	qp = qp_on(plain, A);
	ASSERT_NE(NULL, qp);
	EXPECT_TRUE(to_sqp(qp)->sq.lock.need_lock);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_dealloc_pd(plain));
}

TEST_F(td, bad_arguments)
{
	struct ibv_parent_domain_init_attr pa = { .pd = NULL };
	struct ibv_td_init_attr ta = { .comp_mask = 1 };
	struct ibv_context *other;

	EXPECT_EQ(NULL, ibv_alloc_parent_domain(A->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	/* A parent domain is no protection domain for another one. */
	pa.pd = self->parent;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(A->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	/* Allocators: the queues are the kernel's memory, so not offered. */
	pa.pd = A->pd;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(A->ctx, &pa));
	EXPECT_EQ(EOPNOTSUPP, errno);
	pa.comp_mask = 1U << 7;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(A->ctx, &pa));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, ibv_alloc_td(A->ctx, &ta));
	EXPECT_EQ(EINVAL, errno);
	/* A PD of another context. */
	other = ibv_open_device(A->ctx->device);
	ASSERT_NE(NULL, other);
	pa.comp_mask = 0;
	EXPECT_EQ(NULL, ibv_alloc_parent_domain(other, &pa));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, ibv_close_device(other));
}

TEST_HARNESS_MAIN
