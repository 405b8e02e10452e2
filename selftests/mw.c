// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows (ibv_alloc_mw, ibv_bind_mw, IBV_WR_BIND_MW) on RC, end B
 * windowing its own buffer and end A reaching it through the window's
 * rkey. Checked: the bind's completion (IBV_WC_BIND_MW, wr_id), the new
 * key (same index, next key byte), data landing only inside the window,
 * the window's rights, zero-based windows, rebinding and unbinding type 1
 * windows (the old key dies), type 2 windows bound once until LOCAL_INV or
 * a SEND with invalidate frees them, bind errors (IBV_WC_MW_BIND_ERR: MR
 * without MW_BIND, a range past the MR, remote write on an MR without
 * local write, binding a bound type 2 window), an MR with a window bound
 * refusing ibv_dereg_mr (EBUSY) until the window goes, and a process that
 * exits with windows bound (the kernel cleans up; dmesg stays clean).
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"

#define EV_MS	5000
#define WIN	4096		/* the window starts here in B's buffer */
#define WLEN	8192
#define DST_OK	(WIN + 100)

FIXTURE(mw) {
	struct rc_pair p;
};

FIXTURE_VARIANT(mw) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(mw, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(mw, cross_dev) { .topo = RC_CROSS_DEV };

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

FIXTURE_SETUP(mw)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.mr_access |= IBV_ACCESS_MW_BIND;
	c.buf_size = 64 * 1024;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(mw)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/* One signaled WR on @e's SQ: its completion in *wc; status or -1. */
static int post_wc(struct rc_end *e, struct ibv_send_wr *wr, struct ibv_wc *wc)
{
	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(e->qp, wr, NULL) || rc_poll(e->scq, wc, 1, EV_MS) != 1)
		return -1;
	return wc->status;
}

/* A's RDMA @op of @len bytes (its buffer at 0) to @raddr through @rkey. */
static int a_rdma(struct rc_pair *p, enum ibv_wr_opcode op, uint64_t raddr,
		  uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, len, p->e[0].mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op };
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wc(&p->e[0], &wr, &wc);
}

static uint64_t b_addr(struct rc_pair *p, size_t off)
{
	return (uintptr_t)p->e[1].buf + off;
}

/*
 * ibv_bind_mw of type 1 @mw on B's QP over B's MR: the WC's status, or the
 * errno of a bind refused before posting (EINVAL and the statuses differ
 * from IBV_WC_SUCCESS alike).
 */
static int bind1(struct rc_pair *p, struct ibv_mw *mw, struct ibv_mr *mr,
		 size_t off, size_t len, unsigned int access, uint64_t wr_id)
{
	struct ibv_mw_bind b = { .wr_id = wr_id,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	b.bind_info.mr = mr;
	b.bind_info.addr = mr ? (uintptr_t)p->e[1].buf + off : 0;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	int err = ibv_bind_mw(p->e[1].qp, mw, &b);

	if (err)
		return err;	/* refused before posting: an errno */
	if (rc_poll(p->e[1].scq, &wc, 1, EV_MS) != 1)
		return -1;
	if (wc.status == IBV_WC_SUCCESS &&
	    (wc.opcode != IBV_WC_BIND_MW || wc.wr_id != wr_id))
		return -2;
	return wc.status;
}

/* IBV_WR_BIND_MW of type 2 @mw with key @rkey on B's QP; the status. */
static int bind2(struct rc_pair *p, struct ibv_mw *mw, uint32_t rkey,
		 size_t off, size_t len, unsigned int access)
{
	struct ibv_send_wr wr = { .wr_id = 77, .opcode = IBV_WR_BIND_MW };
	struct ibv_wc wc;
	int st;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = p->e[1].mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)p->e[1].buf + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	st = post_wc(&p->e[1], &wr, &wc);
	if (st == IBV_WC_SUCCESS && (wc.opcode != IBV_WC_BIND_MW || wc.wr_id != 77))
		return -2;
	return st;
}

/* B's RDMA WRITE to A's buffer from B's memory at @off through @lkey. */
static int b_write_from(struct rc_pair *p, size_t off, uint32_t lkey)
{
	struct ibv_sge sge = { b_addr(p, off), 8, lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)p->e[0].buf;
	wr.wr.rdma.rkey = p->e[0].mr->rkey;
	return post_wc(&p->e[1], &wr, &wc);
}

/* A's 16-byte SEND that invalidates @rkey at B; A's status. */
static int a_send_inv(struct rc_pair *p, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)p->e[0].buf, 16, p->e[0].mr->lkey };
	struct ibv_send_wr s = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_INV };
	struct ibv_wc wc;

	s.invalidate_rkey = rkey;
	return post_wc(&p->e[0], &s, &wc);
}

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[8];

	while (rc_poll(cq, wc, 8, 50) > 0)
		;
}

/* After an error: both QPs back to RTS, the CQs empty. */
static int reconnect(struct rc_pair *p)
{
	drain(p->e[0].scq);
	drain(p->e[0].rcq);
	drain(p->e[1].scq);
	drain(p->e[1].rcq);
	return rc_pair_connect(p);
}

#define RW	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

TEST_F(mw, device_offers_windows)
{
	struct ibv_device_attr attr;

	ASSERT_EQ(0, ibv_query_device(B->ctx, &attr));
	EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	EXPECT_TRUE(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	EXPECT_LT(0, attr.max_mw);
}

TEST_F(mw, type1_bind_write_read_bounds)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);
	uint32_t key0;

	ASSERT_NE(NULL, mw);
	key0 = mw->rkey;
	EXPECT_EQ(IBV_MW_TYPE_1, mw->type);
	ASSERT_EQ(IBV_WC_SUCCESS, bind1(&self->p, mw, B->mr, WIN, WLEN, RW, 5));
	/* Same index, the next key byte (ibv_inc_rkey). */
	EXPECT_EQ(key0 & ~0xffu, mw->rkey & ~0xffu);
	EXPECT_EQ((key0 + 1) & 0xff, mw->rkey & 0xff);

	memset(B->buf, 0, B->buf_size);
	rc_fill(A->buf, 1000, 11);
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, DST_OK), mw->rkey, 1000));
	EXPECT_EQ(-1, rc_check_fill(B->buf + DST_OK, 1000, 11));
	EXPECT_EQ(0, B->buf[DST_OK - 1]);
	EXPECT_EQ(0, B->buf[DST_OK + 1000]);
	/* READ back the window's last bytes. */
	memset(A->buf, 0, 64);
	memset(B->buf + WIN + WLEN - 64, 0x5a, 64);
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_READ,
					 b_addr(&self->p, WIN + WLEN - 64),
					 mw->rkey, 64));
	EXPECT_EQ(0x5a, A->buf[0]);
	EXPECT_EQ(0x5a, A->buf[63]);
	/* Four bytes inside and four past the end: refused, nothing lands. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, WIN + WLEN - 4), mw->rkey, 8));
	EXPECT_EQ(0, B->buf[WIN + WLEN]);
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Below the window. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, WIN - 8), mw->rkey, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

TEST_F(mw, type1_rebind_and_unbind_kill_old_keys)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);
	uint32_t k1, k2;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(IBV_WC_SUCCESS, bind1(&self->p, mw, B->mr, WIN, WLEN, RW, 1));
	k1 = mw->rkey;
	ASSERT_EQ(IBV_WC_SUCCESS,
		  bind1(&self->p, mw, B->mr, 2 * WIN, WLEN, RW, 2));
	k2 = mw->rkey;
	EXPECT_NE(k1, k2);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, 2 * WIN), k1, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	memset(A->buf, 0x3c, 8);
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, 2 * WIN), k2, 8));
	EXPECT_EQ(0x3c, B->buf[2 * WIN + 7]);
	/* The old range is outside the new binding. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, WIN), k2, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Unbind: a zero-length bind without an MR. */
	ASSERT_EQ(IBV_WC_SUCCESS, bind1(&self->p, mw, NULL, 0, 0, 0, 3));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, 2 * WIN), k2, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, 2 * WIN), mw->rkey, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

TEST_F(mw, zero_based_and_rights)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  bind1(&self->p, mw, B->mr, 3 * WIN + 40, 1000,
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED, 1));
	memset(B->buf, 0, B->buf_size);
	memset(A->buf, 0x71, 16);
	/* Address 16 of the window is byte 3 * WIN + 56 of the buffer. */
	EXPECT_EQ(IBV_WC_SUCCESS,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE, 16, mw->rkey, 16));
	EXPECT_EQ(0x71, B->buf[3 * WIN + 56]);
	EXPECT_EQ(0x71, B->buf[3 * WIN + 71]);
	EXPECT_EQ(0, B->buf[3 * WIN + 55]);
	EXPECT_EQ(0, B->buf[3 * WIN + 72]);
	/* Past the window's 1000 bytes. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE, 996, mw->rkey, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Write-only: a READ is refused. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_READ, 0, mw->rkey, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* A window is never an lkey. */
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR,
		  b_write_from(&self->p, 3 * WIN + 40, mw->rkey));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

TEST_F(mw, bind_errors)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);
	struct ibv_mr *nobind, *ro;

	ASSERT_NE(NULL, mw);
	nobind = ibv_reg_mr(B->pd, B->buf, B->buf_size, RC_ACCESS_ALL);
	ro = ibv_reg_mr(B->pd, B->buf, B->buf_size, IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, nobind);
	ASSERT_NE(NULL, ro);
	/* The MR does not allow binding. */
	EXPECT_EQ(IBV_WC_MW_BIND_ERR,
		  bind1(&self->p, mw, nobind, WIN, WLEN, RW, 1));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Past the MR's end. */
	EXPECT_EQ(IBV_WC_MW_BIND_ERR,
		  bind1(&self->p, mw, B->mr, B->buf_size - 100, 200, RW, 2));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Remote write over an MR without local write. */
	EXPECT_EQ(IBV_WC_MW_BIND_ERR,
		  bind1(&self->p, mw, ro, WIN, WLEN, IBV_ACCESS_REMOTE_WRITE, 3));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* ...but remote read over it is fine. */
	EXPECT_EQ(IBV_WC_SUCCESS,
		  bind1(&self->p, mw, ro, WIN, WLEN, IBV_ACCESS_REMOTE_READ, 4));
	/* Rights a window cannot have: refused before posting. */
	EXPECT_EQ(EINVAL, bind1(&self->p, mw, B->mr, WIN, 8,
				IBV_ACCESS_MW_BIND, 5));
	/* Local write is taken and ignored, as mlx5 takes it. */
	EXPECT_EQ(IBV_WC_SUCCESS, bind1(&self->p, mw, ro, WIN, WLEN,
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_READ, 6));
	/* The MR with the window bound stays until the window goes. */
	EXPECT_EQ(EBUSY, ibv_dereg_mr(ro));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dereg_mr(ro));
	EXPECT_EQ(0, ibv_dereg_mr(nobind));
}

TEST_F(mw, type2_bind_invalidate_rebind)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr inv = { .wr_id = 8, .opcode = IBV_WR_LOCAL_INV };
	uint32_t k1, k2;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mw);
	k1 = ibv_inc_rkey(mw->rkey);
	ASSERT_EQ(IBV_WC_SUCCESS, bind2(&self->p, mw, k1, WIN, WLEN, RW));
	memset(A->buf, 0x44, 32);
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, WIN), k1, 32));
	EXPECT_EQ(0x44, B->buf[WIN + 31]);
	/* Bound once: a second bind before invalidation fails. */
	EXPECT_EQ(IBV_WC_MW_BIND_ERR,
		  bind2(&self->p, mw, ibv_inc_rkey(k1), WIN, WLEN, RW));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* The failed bind left the window as it was. */
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, WIN), k1, 32));
	/* LOCAL_INV by its QP: the key dies. */
	inv.invalidate_rkey = k1;
	EXPECT_EQ(IBV_WC_SUCCESS, post_wc(B, &inv, &wc));
	EXPECT_EQ(IBV_WC_LOCAL_INV, wc.opcode);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, WIN), k1, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Bound again with the next key, invalidated by the peer's SEND. */
	k2 = ibv_inc_rkey(k1);
	ASSERT_EQ(IBV_WC_SUCCESS, bind2(&self->p, mw, k2, WIN, WLEN, RW));
	ASSERT_EQ(0, rc_post_recv(B->qp, 10, B->buf, 64, B->mr->lkey));
	EXPECT_EQ(IBV_WC_SUCCESS, a_send_inv(&self->p, k2));
	ASSERT_EQ(1, rc_poll(B->rcq, &wc, 1, EV_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
	EXPECT_EQ(k2, wc.invalidated_rkey);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  a_rdma(&self->p, IBV_WR_RDMA_WRITE,
			 b_addr(&self->p, WIN), k2, 8));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* A second RC QP on @e's PD and CQs (in place of e->qp in a copied pair). */
static struct ibv_qp *second_qp(struct rc_end *e)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(e->pd, &ia);
}

/* Type 2B: a window bound by QP B answers B alone, not B's PD's other QPs. */
TEST_F(mw, type2_answers_its_qp_only)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
	struct rc_pair p2 = self->p;
	uint32_t k;

	ASSERT_NE(NULL, mw);
	p2.e[0].qp = second_qp(A);
	p2.e[1].qp = second_qp(B);
	ASSERT_NE(NULL, p2.e[0].qp);
	ASSERT_NE(NULL, p2.e[1].qp);
	ASSERT_EQ(0, rc_pair_connect(&p2)) TH_LOG("%s", rc_err);
	k = ibv_inc_rkey(mw->rkey);
	ASSERT_EQ(IBV_WC_SUCCESS, bind2(&self->p, mw, k, WIN, WLEN, RW));
	/* B's MR itself is open to both QPs. */
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&p2, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, WIN), B->mr->rkey, 8));
	/* The window: through the QP that bound it only. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, a_rdma(&p2, IBV_WR_RDMA_WRITE,
						b_addr(&self->p, WIN), k, 8));
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, WIN), k, 8));
	drain(A->scq);
	EXPECT_EQ(0, ibv_destroy_qp(p2.e[0].qp));
	EXPECT_EQ(0, ibv_destroy_qp(p2.e[1].qp));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

TEST_F(mw, type1_cannot_be_invalidated)
{
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);
	struct ibv_send_wr inv = { .wr_id = 8, .opcode = IBV_WR_LOCAL_INV };
	struct ibv_wc wc;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(IBV_WC_SUCCESS, bind1(&self->p, mw, B->mr, WIN, WLEN, RW, 1));
	inv.invalidate_rkey = mw->rkey;
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, post_wc(B, &inv, &wc));
	ASSERT_EQ(0, reconnect(&self->p)) TH_LOG("%s", rc_err);
	/* Still bound. */
	EXPECT_EQ(IBV_WC_SUCCESS, a_rdma(&self->p, IBV_WR_RDMA_WRITE,
					 b_addr(&self->p, WIN), mw->rkey, 8));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* A process that exits with windows bound to its MR: the kernel's cleanup
 * destroys windows and MRs in whatever order; the child reports success. */
TEST_F(mw, exit_with_windows_bound)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rc_pair p;
		struct rc_cfg c;
		struct ibv_mw *m1, *m2;

		rc_cfg_default(&c, variant->topo);
		c.mr_access |= IBV_ACCESS_MW_BIND;
		c.buf_size = 64 * 1024;
		if (rc_pair_open(&p, &c))
			_exit(2);
		m1 = ibv_alloc_mw(p.e[1].pd, IBV_MW_TYPE_1);
		m2 = ibv_alloc_mw(p.e[1].pd, IBV_MW_TYPE_2);
		if (!m1 || !m2 ||
		    bind1(&p, m1, p.e[1].mr, WIN, WLEN, RW, 1) ||
		    bind2(&p, m2, ibv_inc_rkey(m2->rkey), WIN, WLEN, RW))
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
