// SPDX-License-Identifier: GPL-2.0
/*
 * ibv_rereg_mr, every combination of CHANGE_TRANSLATION, CHANGE_PD and
 * CHANGE_ACCESS, each from an MR that only the change makes usable by
 * B's QP for A's RDMA WRITE and READ (another buffer, a foreign PD, local
 * rights only; a WRITE before the change fails with REM_ACCESS_ERR):
 * - the call succeeds, the MR reports its new PD, address and length;
 * - WRITE and READ through the new rkey succeed, the bytes land at the
 *   new address (the old range is untouched) and read back exactly;
 * - with CHANGE_TRANSLATION the keys change, and the old rkey is dead: a
 *   WRITE with it fails with IBV_WC_REM_ACCESS_ERR and changes no byte;
 *   without it the MR changes in place and keeps its keys, as on mlx5
 *   (rdma-core's own tests write through the rkey they had), unless its
 *   pages were pinned read-only and the new rights write: then it is a
 *   new MR with new keys;
 * - a rereg the kernel refuses (a range that is not mapped, remote write
 *   without local write, no flag) fails with IBV_REREG_MR_ERR_CMD and the
 *   MR keeps its keys and rights: a WRITE through it still succeeds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"
#include "util.h"

#define EV_MS		5000
#define LEN		8192
#define OLD_OFF		(64 * 1024)	/* in B's buffer */
#define NEW_OFF		(256 * 1024)
#define LOCAL_ONLY	IBV_ACCESS_LOCAL_WRITE

FIXTURE(rereg) {
	struct rc_pair p;
	struct ibv_pd *pd2;		/* B's context, not B's QP's PD */
};

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(rereg)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->pd2 = ibv_alloc_pd(self->p.e[1].ctx);
	ASSERT_NE(NULL, self->pd2);
}

FIXTURE_TEARDOWN(rereg)
{
	if (self->pd2)
		ibv_dealloc_pd(self->pd2);
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/*
 * One signaled WRITE or READ of @len bytes from A's buffer at @loff to
 * @raddr/@rkey: its completion status, or -1 if none came.
 */
static int a_rdma(struct rc_pair *p, enum ibv_wr_opcode op, size_t loff,
		  uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct rc_end *a = &p->e[0];
	struct ibv_wc wc;

	if (rc_post_send(a->qp, op, 7, a->buf + loff, len, a->mr->lkey, raddr,
			 rkey, IBV_SEND_SIGNALED, 0))
		return -1;
	if (rc_poll(a->scq, &wc, 1, EV_MS) != 1)
		return -1;
	return wc.status;
}

/* After a remote access error: both QPs back to RTS, CQs drained. */
static int recover(struct rc_pair *p)
{
	struct ibv_wc wc[8];

	while (ibv_poll_cq(p->e[0].scq, 8, wc) > 0 ||
	       ibv_poll_cq(p->e[1].rcq, 8, wc) > 0 ||
	       ibv_poll_cq(p->e[1].scq, 8, wc) > 0 ||
	       ibv_poll_cq(p->e[0].rcq, 8, wc) > 0)
		;
	return rc_pair_connect(p);
}

static bool all_bytes(const uint8_t *b, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

static const char *const flag_names[8] = {
	"-", "T", "P", "TP", "A", "TA", "PA", "TPA",
};

TEST_F(rereg, every_flag_combination)
{
	for (int f = 1; f < 8; f++) {
		bool trans = f & IBV_REREG_MR_CHANGE_TRANSLATION;
		bool pd = f & IBV_REREG_MR_CHANGE_PD;
		bool acc = f & IBV_REREG_MR_CHANGE_ACCESS;
		uint8_t *old = B->buf + OLD_OFF, *cur = trans ? B->buf + NEW_OFF : old;
		struct ibv_mr *m;
		uint32_t old_rkey;
		int st;

		memset(B->buf + OLD_OFF, 0x11, LEN);
		memset(B->buf + NEW_OFF, 0x22, LEN);
		m = ibv_reg_mr(pd ? self->pd2 : B->pd, old, LEN,
			       acc ? LOCAL_ONLY : RC_ACCESS_ALL);
		ASSERT_NE(NULL, m) TH_LOG("%s: reg %s", flag_names[f],
					  strerror(errno));
		old_rkey = m->rkey;
		/* Only the change makes it usable: a foreign PD, no rights. */
		if (pd || acc) {
			st = a_rdma(&self->p, IBV_WR_RDMA_WRITE, 0,
				    (uintptr_t)old, old_rkey, 64);
			EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st)
				TH_LOG("%s: before", flag_names[f]);
			ASSERT_EQ(0, recover(&self->p)) TH_LOG("%s", rc_err);
		}
		ASSERT_EQ(0, ibv_rereg_mr(m, f, B->pd, trans ? cur : NULL,
					  trans ? LEN : 0,
					  acc ? RC_ACCESS_ALL : 0))
			TH_LOG("%s: rereg %s", flag_names[f], strerror(errno));
		EXPECT_EQ(B->pd, m->pd);
		EXPECT_EQ(cur, m->addr);
		EXPECT_EQ(LEN, m->length);
		if (trans) {
			EXPECT_NE(old_rkey, m->rkey) TH_LOG("%s", flag_names[f]);
		} else {
			EXPECT_EQ(old_rkey, m->rkey) TH_LOG("%s: in place", flag_names[f]);
		}

		memset(A->buf, 0x5a, LEN);
		st = a_rdma(&self->p, IBV_WR_RDMA_WRITE, 0, (uintptr_t)cur,
			    m->rkey, LEN);
		ASSERT_EQ(IBV_WC_SUCCESS, st) TH_LOG("%s: write", flag_names[f]);
		EXPECT_TRUE(all_bytes(cur, LEN, 0x5a)) TH_LOG("%s", flag_names[f]);
		if (trans)
			EXPECT_TRUE(all_bytes(old, LEN, 0x11));
		memset(A->buf + LEN, 0, LEN);
		st = a_rdma(&self->p, IBV_WR_RDMA_READ, LEN, (uintptr_t)cur,
			    m->rkey, LEN);
		ASSERT_EQ(IBV_WC_SUCCESS, st) TH_LOG("%s: read", flag_names[f]);
		EXPECT_TRUE(all_bytes(A->buf + LEN, LEN, 0x5a));

		/* B's QP reads it as a local SGE (local read stays implied). */
		if (B->pd == m->pd) {
			struct ibv_wc wc;

			memset(A->buf, 0, 64);
			ASSERT_EQ(0, rc_post_send(B->qp, IBV_WR_RDMA_WRITE, 9, cur,
						  64, m->lkey, (uintptr_t)A->buf,
						  A->mr->rkey, IBV_SEND_SIGNALED, 0));
			ASSERT_EQ(1, rc_poll(B->scq, &wc, 1, EV_MS));
			EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
				TH_LOG("%s: local read", flag_names[f]);
			EXPECT_TRUE(all_bytes(A->buf, 64, 0x5a));
		}
		if (!trans) {
			ASSERT_EQ(0, ibv_dereg_mr(m));
			continue;
		}
		/* The old rkey is gone with the old MKey. */
		memset(A->buf, 0x77, 64);
		st = a_rdma(&self->p, IBV_WR_RDMA_WRITE, 0, (uintptr_t)old,
			    old_rkey, 64);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st) TH_LOG("%s", flag_names[f]);
		EXPECT_FALSE(old[0] == 0x77) TH_LOG("%s", flag_names[f]);
		ASSERT_EQ(0, recover(&self->p)) TH_LOG("%s", rc_err);
		ASSERT_EQ(0, ibv_dereg_mr(m));
	}
}

/*
 * Pages pinned read-only (no right that writes) cannot take remote write in
 * place: CHANGE_ACCESS makes a new MR, with new keys, and the old rkey dies.
 */
TEST_F(rereg, access_that_writes_read_only_pages_is_a_new_mr)
{
	uint8_t *buf = B->buf + OLD_OFF;
	struct ibv_mr *m;
	uint32_t old_rkey;

	memset(buf, 0x11, LEN);
	m = ibv_reg_mr(B->pd, buf, LEN, IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, m) TH_LOG("reg %s", strerror(errno));
	old_rkey = m->rkey;
	ASSERT_EQ(0, ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  RC_ACCESS_ALL)) TH_LOG("rereg %s", strerror(errno));
	EXPECT_NE(old_rkey, m->rkey);
	memset(A->buf, 0x5a, LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE, 0,
					 (uintptr_t)buf, m->rkey, LEN));
	EXPECT_TRUE(all_bytes(buf, LEN, 0x5a));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, a_rdma(&self->p, IBV_WR_RDMA_READ, LEN,
						(uintptr_t)buf, old_rkey, 64));
	ASSERT_EQ(0, recover(&self->p)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, ibv_dereg_mr(m));
}

TEST_F(rereg, refused_leaves_the_mr_working)
{
	uint8_t *buf = B->buf + OLD_OFF;
	struct ibv_mr *m = ibv_reg_mr(B->pd, buf, LEN, RC_ACCESS_ALL);
	uint32_t lkey, rkey;
	void *hole;

	ASSERT_NE(NULL, m);
	lkey = m->lkey;
	rkey = m->rkey;
	hole = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, munmap(hole, LEN));

	EXPECT_EQ(IBV_REREG_MR_ERR_CMD,
		  ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, hole,
			       LEN, 0));
	EXPECT_EQ(IBV_REREG_MR_ERR_CMD,
		  ibv_rereg_mr(m, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(IBV_REREG_MR_ERR_CMD, ibv_rereg_mr(m, 0, NULL, NULL, 0, 0));
	EXPECT_EQ(buf, m->addr);
	EXPECT_EQ(lkey, m->lkey);
	EXPECT_EQ(rkey, m->rkey);

	memset(A->buf, 0x3c, LEN);
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE, 0,
					 (uintptr_t)buf, rkey, LEN));
	EXPECT_TRUE(all_bytes(buf, LEN, 0x3c));
	EXPECT_EQ(0, ibv_dereg_mr(m));
}

TEST_HARNESS_MAIN
