// SPDX-License-Identifier: GPL-2.0
/*
 * softhca_ktest: the kernel verbs of softhca as a kernel ULP uses them,
 * run once at load (selftests/kverbs.sh, in the VM only). On device @dev:
 * a PD, CQ A (ib_alloc_cq, IB_POLL_SOFTIRQ) and CQ B (IB_POLL_WORKQUEUE),
 * RC QPs A and B connected to each other through the RoCE v2 GID of
 * 198.18.0.1; SENDs (SGE lists, immediate, inline, unsignaled), RDMA
 * WRITE (with immediate), READ and atomics on an MR of this process, many
 * SENDs, a bad opcode, WRs the WQE builder refuses, rkey 0, ib_drain_qp()
 * with receives left posted, a reset QP's CQEs removed from its
 * (IB_POLL_DIRECT) CQ, and CQEs written into a CQ by the test that name no
 * outstanding WR of a queue on that CQ dropped (white box); then UD:
 * kernel AHs created sleepable and in atomic context, datagrams between
 * kernel UD QPs (the WC's GRH, network header type, source MAC; an answer
 * through ib_init_ah_attr_from_wc()), a privileged Q_Key only its owner
 * sends with, multicast with and without IB_QP_CREATE_BLOCK_MULTICAST_
 * LOOPBACK; a kernel SRQ shared by two RC QPs (post_srq_recv, the limit
 * event, the WR each receive names). Every completion arrives through an ib_cqe done callback and
 * every field and byte is checked.
 *
 * Results: read-only parameters passed, failed and done (1 once the run
 * ended and everything was destroyed); each failed check prints one
 * "softhca_ktest: FAIL" line.
 */
#include <linux/completion.h>
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/softhca-opcodes.h>

#include "ktest_common.h"
#include "softhca.h"	/* a kernel CQ's ring: kt_inject_cqe() (white box) */

static char *dev = "shca0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default shca0)");
static int passed;
module_param(passed, int, 0444);
static int failed;
module_param(failed, int, 0444);
static int done;
module_param(done, int, 0444);

#define KT_CHECK(cond, fmt, ...)						\
	KTEST_CHECK("softhca_ktest", passed, failed, cond, fmt, ##__VA_ARGS__)

#define KT_BUF		(16 * 1024)
#define KT_UMEM		(8 * 1024)
#define KT_MANY		256
#define KT_BATCH	32
#define KT_NWR		(2 * KT_MANY + 192)

/* One WR's completion; static so that a late callback finds it alive. */
struct kt_wr {
	struct ib_cqe cqe;
	struct completion done;
	struct ib_wc wc;
	bool softirq;
	bool task;
};

static struct kt_wr kt_wrs[KT_NWR];
static int kt_next;

struct kt_ctx {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cqa, *cqb;
	struct ib_qp *qpa, *qpb;
	u8 *bufa, *bufb;
	u64 dmaa, dmab;
	unsigned long uaddr;
	struct ib_mr *mr;
	union ib_gid gid;
	u8 sgid_index;
};

static void kt_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kt_wr *w = container_of(wc->wr_cqe, struct kt_wr, cqe);

	w->wc = *wc;
	w->softirq = in_serving_softirq();
	w->task = in_task();
	complete(&w->done);
}

static struct kt_wr *kt_wr_new(void)
{
	struct kt_wr *w;

	if (WARN_ON(kt_next >= KT_NWR))
		return NULL;
	w = &kt_wrs[kt_next++];
	w->cqe.done = kt_done;
	init_completion(&w->done);
	return w;
}

static bool kt_wait(struct kt_wr *w)
{
	return wait_for_completion_timeout(&w->done, 10 * HZ) > 0;
}

static int kt_post_recv(struct kt_ctx *c, struct ib_qp *qp,
			struct ib_sge *sge, int nsge, struct kt_wr **wp)
{
	struct ib_recv_wr wr = {};
	struct kt_wr *w = kt_wr_new();

	if (!w)
		return -ENOMEM;
	wr.wr_cqe = &w->cqe;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	*wp = w;
	return ib_post_recv(qp, &wr, NULL);
}

static int kt_connect(struct kt_ctx *c, struct ib_qp *qp, u32 dqpn)
{
	return ktest_rc_connect(qp, dqpn, &c->gid, c->sgid_index,
				IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC);
}

static struct ib_qp *kt_qp(struct kt_ctx *c, struct ib_cq *send_cq,
			   struct ib_cq *recv_cq)
{
	struct ib_qp_init_attr ia = {};

	ia.send_cq = send_cq;
	ia.recv_cq = recv_cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = 2;
	ia.cap.max_inline_data = 128;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.qp_type = IB_QPT_RC;
	return ib_create_qp(c->pd, &ia);
}

/* The sender's completion on CQ A (softirq) or CQ B (workqueue). */
static void kt_check_send(struct kt_ctx *c, struct kt_wr *w,
			  struct ib_qp *qp, enum ib_wc_opcode op)
{
	if (!kt_wait(w)) {
		KT_CHECK(0, "send completion timed out");
		return;
	}
	KT_CHECK(w->wc.status == IB_WC_SUCCESS, "status %d", w->wc.status);
	KT_CHECK(w->wc.opcode == op, "opcode %d", w->wc.opcode);
	KT_CHECK(w->wc.qp == qp, "qp");
	if (qp == c->qpa)
		KT_CHECK(w->softirq, "CQ A callback not in softirq");
	else
		KT_CHECK(w->task, "CQ B callback not in a task");
}

static void kt_check_recv(struct kt_ctx *c, struct kt_wr *w,
			  struct ib_qp *qp, enum ib_wc_opcode op, u32 len,
			  bool imm, __be32 imm_data)
{
	struct ib_qp *peer = qp == c->qpa ? c->qpb : c->qpa;

	if (!kt_wait(w)) {
		KT_CHECK(0, "receive completion timed out");
		return;
	}
	KT_CHECK(w->wc.status == IB_WC_SUCCESS, "status %d", w->wc.status);
	KT_CHECK(w->wc.opcode == op, "opcode %d", w->wc.opcode);
	KT_CHECK(w->wc.byte_len == len, "byte_len %u want %u",
		 w->wc.byte_len, len);
	KT_CHECK(w->wc.qp == qp, "qp");
	KT_CHECK(w->wc.src_qp == peer->qp_num, "src_qp %u", w->wc.src_qp);
	KT_CHECK(!!(w->wc.wc_flags & IB_WC_WITH_IMM) == imm, "wc_flags %x",
		 w->wc.wc_flags);
	if (imm)
		KT_CHECK(w->wc.ex.imm_data == imm_data, "imm %08x",
			 be32_to_cpu(w->wc.ex.imm_data));
	if (qp == c->qpa)
		KT_CHECK(w->softirq, "CQ A callback not in softirq");
	else
		KT_CHECK(w->task, "CQ B callback not in a task");
}

static void kt_fill(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7;
}

/* SEND of two SGEs from A into two SGEs of B. */
static void kt_send_sgl(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	struct ib_sge rs[2] = {
		{ .addr = c->dmab, .length = 1000, .lkey = lkey },
		{ .addr = c->dmab + 4096, .length = 3000, .lkey = lkey },
	};
	struct ib_sge ss[2] = {
		{ .addr = c->dmaa, .length = 1500, .lkey = lkey },
		{ .addr = c->dmaa + 2000, .length = 500, .lkey = lkey },
	};
	struct ib_send_wr wr = {};
	struct kt_wr *r, *s;

	kt_fill(c->bufa, KT_BUF, 1);
	memset(c->bufb, 0, KT_BUF);
	KT_CHECK(!kt_post_recv(c, c->qpb, rs, 2, &r), "post_recv");
	s = kt_wr_new();
	wr.wr_cqe = &s->cqe;
	wr.sg_list = ss;
	wr.num_sge = 2;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	KT_CHECK(!ib_post_send(c->qpa, &wr, NULL), "post_send");
	kt_check_send(c, s, c->qpa, IB_WC_SEND);
	kt_check_recv(c, r, c->qpb, IB_WC_RECV, 2000, false, 0);
	KT_CHECK(!memcmp(c->bufb, c->bufa, 1000), "data 0");
	KT_CHECK(!memcmp(c->bufb + 4096, c->bufa + 1000, 500), "data 1");
	KT_CHECK(!memcmp(c->bufb + 4596, c->bufa + 2000, 500), "data 2");
	KT_CHECK(c->bufb[5096] == 0, "wrote past the message");
}

/* Inline SEND with immediate, B to A, solicited. */
static void kt_send_imm_inline(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	struct ib_sge rs = { .addr = c->dmaa + 8192, .length = 256,
			     .lkey = lkey };
	/* Inline: the address is read by post_send itself. */
	struct ib_sge ss = { .addr = (uintptr_t)c->bufb + 8192, .length = 100,
			     .lkey = lkey };
	struct ib_send_wr wr = {};
	struct kt_wr *r, *s;

	kt_fill(c->bufb + 8192, 100, 42);
	memset(c->bufa + 8192, 0, 256);
	KT_CHECK(!kt_post_recv(c, c->qpa, &rs, 1, &r), "post_recv");
	s = kt_wr_new();
	wr.wr_cqe = &s->cqe;
	wr.sg_list = &ss;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND_WITH_IMM;
	wr.ex.imm_data = cpu_to_be32(0x1234abcd);
	wr.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE | IB_SEND_SOLICITED;
	KT_CHECK(!ib_post_send(c->qpb, &wr, NULL), "post_send");
	/* Overwritten after the post: inline data was copied at post time. */
	memset(c->bufb + 8192, 0xee, 100);
	kt_check_send(c, s, c->qpb, IB_WC_SEND);
	kt_check_recv(c, r, c->qpa, IB_WC_RECV, 100, true,
		      cpu_to_be32(0x1234abcd));
	kt_fill(c->bufb + 8192, 100, 42);
	KT_CHECK(!memcmp(c->bufa + 8192, c->bufb + 8192, 100), "data");
}

/* Two unsignaled SENDs and a signaled one: one send completion. */
static void kt_unsignaled(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	struct ib_send_wr wr[3] = {};
	struct ib_sge ss[3], rs[3];
	struct kt_wr *r[3], *s[3];
	int i;

	for (i = 0; i < 3; i++) {
		rs[i] = (struct ib_sge){ .addr = c->dmab + i * 64,
					 .length = 64, .lkey = lkey };
		ss[i] = (struct ib_sge){ .addr = c->dmaa + i * 64,
					 .length = 10 + i, .lkey = lkey };
		KT_CHECK(!kt_post_recv(c, c->qpb, &rs[i], 1, &r[i]),
			 "post_recv");
		s[i] = kt_wr_new();
		wr[i].wr_cqe = &s[i]->cqe;
		wr[i].sg_list = &ss[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IB_WR_SEND;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[2].send_flags = IB_SEND_SIGNALED;
	KT_CHECK(!ib_post_send(c->qpa, &wr[0], NULL), "post_send");
	kt_check_send(c, s[2], c->qpa, IB_WC_SEND);
	for (i = 0; i < 3; i++)
		kt_check_recv(c, r[i], c->qpb, IB_WC_RECV, 10 + i, false, 0);
	KT_CHECK(!completion_done(&s[0]->done) &&
		 !completion_done(&s[1]->done), "unsignaled WR completed");
}

/* RDMA WRITE, WRITE with immediate and READ on B's MR. */
static void kt_rdma(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	u8 *tmp = kzalloc(KT_UMEM, GFP_KERNEL);
	struct ib_rdma_wr wr = {};
	struct ib_sge sge;
	struct kt_wr *s, *r;

	if (!tmp) {
		KT_CHECK(0, "no memory");
		return;
	}
	kt_fill(c->bufa, KT_BUF, 9);

	/* WRITE 1000 bytes to uaddr + 100. */
	sge = (struct ib_sge){ .addr = c->dmaa, .length = 1000, .lkey = lkey };
	s = kt_wr_new();
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_RDMA_WRITE;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = c->uaddr + 100;
	wr.rkey = c->mr->rkey;
	KT_CHECK(!ib_post_send(c->qpa, &wr.wr, NULL), "post WRITE");
	kt_check_send(c, s, c->qpa, IB_WC_RDMA_WRITE);

	/* WRITE_IMM 64 bytes to uaddr + 2000: consumes a receive of B. */
	KT_CHECK(!kt_post_recv(c, c->qpb, NULL, 0, &r), "post_recv");
	sge = (struct ib_sge){ .addr = c->dmaa + 3000, .length = 64,
			       .lkey = lkey };
	s = kt_wr_new();
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.ex.imm_data = cpu_to_be32(0xdeadbeef);
	wr.remote_addr = c->uaddr + 2000;
	KT_CHECK(!ib_post_send(c->qpa, &wr.wr, NULL), "post WRITE_IMM");
	kt_check_send(c, s, c->qpa, IB_WC_RDMA_WRITE);
	kt_check_recv(c, r, c->qpb, IB_WC_RECV_RDMA_WITH_IMM, 64, true,
		      cpu_to_be32(0xdeadbeef));

	KT_CHECK(!copy_from_user(tmp, (void __user *)c->uaddr, KT_UMEM),
		 "copy_from_user");
	KT_CHECK(!memcmp(tmp + 100, c->bufa, 1000), "WRITE data");
	KT_CHECK(!memcmp(tmp + 2000, c->bufa + 3000, 64), "WRITE_IMM data");
	KT_CHECK(tmp[99] == 0x5a && tmp[1100] == 0x5a && tmp[2064] == 0x5a,
		 "WRITE touched bytes around its range");

	/* READ 512 bytes of uaddr + 4096 into bufa + 12288, through B. */
	memset(c->bufb + 12288, 0, 512);
	sge = (struct ib_sge){ .addr = c->dmab + 12288, .length = 512,
			       .lkey = lkey };
	s = kt_wr_new();
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.opcode = IB_WR_RDMA_READ;
	wr.remote_addr = c->uaddr + 4096;
	KT_CHECK(!ib_post_send(c->qpb, &wr.wr, NULL), "post READ");
	kt_check_send(c, s, c->qpb, IB_WC_RDMA_READ);
	KT_CHECK(!memcmp(c->bufb + 12288, tmp + 4096, 512), "READ data");
	KT_CHECK(s->wc.byte_len == 512, "READ byte_len %u", s->wc.byte_len);
	kfree(tmp);
}

/* KT_MANY SENDs in batches: arming and re-arming under load. */
static void kt_many(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	/* Static: too big for the stack; one run at a time (module init). */
	static struct kt_wr *r[KT_BATCH], *s[KT_BATCH];
	static struct ib_send_wr wr[KT_BATCH];
	static struct ib_sge ss[KT_BATCH], rs[KT_BATCH];
	int i, b, bad = 0;

	for (b = 0; b < KT_MANY / KT_BATCH; b++) {
		for (i = 0; i < KT_BATCH; i++) {
			u32 *p = (u32 *)(c->bufa + i * 64);

			*p = b * KT_BATCH + i;
			rs[i] = (struct ib_sge){ .addr = c->dmab + i * 64,
						 .length = 64, .lkey = lkey };
			ss[i] = (struct ib_sge){ .addr = c->dmaa + i * 64,
						 .length = 4, .lkey = lkey };
			if (kt_post_recv(c, c->qpb, &rs[i], 1, &r[i]))
				bad++;
			s[i] = kt_wr_new();
			wr[i].wr_cqe = &s[i]->cqe;
			wr[i].sg_list = &ss[i];
			wr[i].num_sge = 1;
			wr[i].opcode = IB_WR_SEND;
			wr[i].send_flags = IB_SEND_SIGNALED;
			wr[i].next = i + 1 < KT_BATCH ? &wr[i + 1] : NULL;
		}
		if (ib_post_send(c->qpa, &wr[0], NULL))
			bad++;
		for (i = 0; i < KT_BATCH; i++) {
			if (!kt_wait(s[i]) || !kt_wait(r[i]) ||
			    s[i]->wc.status || r[i]->wc.status ||
			    r[i]->wc.byte_len != 4 || !s[i]->softirq ||
			    !r[i]->task ||
			    *(u32 *)(c->bufb + i * 64) != b * KT_BATCH + i)
				bad++;
		}
		/* The next batch reuses the records. */
		kt_next -= 2 * KT_BATCH;
	}
	KT_CHECK(bad == 0, "%d of %d round trips wrong", bad, KT_MANY);
}

/* Atomics on B's MR, results into A's kernel memory; a bad opcode. */
static void kt_atomics_and_bad_wr(struct kt_ctx *c)
{
	u64 *res = (u64 *)(c->bufa + 6144);
	struct ib_sge sge = { .addr = c->dmaa + 6144, .length = 8,
			      .lkey = c->pd->local_dma_lkey };
	/* Longer than any QP's max_inline_data (the device's is 256). */
	struct ib_sge big = { .addr = (uintptr_t)c->bufb, .length = 1024,
			      .lkey = c->pd->local_dma_lkey };
	const struct ib_send_wr *bad = NULL;
	struct ib_send_wr inv = {}, inl = {};
	struct ib_atomic_wr wr = {};
	struct ib_sge two[2];
	struct kt_wr *s;
	u64 v = 0;

	*res = 0;
	s = kt_wr_new();
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = c->uaddr + 6144;
	wr.rkey = c->mr->rkey;
	wr.compare_add = 5;
	KT_CHECK(!ib_post_send(c->qpa, &wr.wr, NULL), "post FETCH_ADD");
	kt_check_send(c, s, c->qpa, IB_WC_FETCH_ADD);
	KT_CHECK(*res == 0x5a5a5a5a5a5a5a5aULL, "FETCH_ADD old %llx", *res);

	s = kt_wr_new();
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
	wr.compare_add = 0x5a5a5a5a5a5a5a5fULL;
	wr.swap = 0x1122334455667788ULL;
	KT_CHECK(!ib_post_send(c->qpa, &wr.wr, NULL), "post CMP_AND_SWP");
	kt_check_send(c, s, c->qpa, IB_WC_COMP_SWAP);
	KT_CHECK(*res == 0x5a5a5a5a5a5a5a5fULL, "CMP_AND_SWP old %llx", *res);
	KT_CHECK(!copy_from_user(&v, (void __user *)(c->uaddr + 6144), 8) &&
		 v == 0x1122334455667788ULL, "swapped value %llx", v);

	/* No such opcode here: EINVAL, bad_wr names it, nothing posted. */
	inv.opcode = IB_WR_BIND_MW;
	inv.send_flags = IB_SEND_SIGNALED;
	KT_CHECK(ib_post_send(c->qpa, &inv, &bad) == -EINVAL && bad == &inv,
		 "BIND_MW accepted");

	/* The WQE builder's checks (the provider's): an atomic is one SGE. */
	two[0] = sge;
	two[1] = sge;
	wr.wr.sg_list = two;
	wr.wr.num_sge = 2;
	bad = NULL;
	KT_CHECK(ib_post_send(c->qpa, &wr.wr, &bad) == -EINVAL &&
		 bad == &wr.wr, "an atomic with two SGEs accepted");
	/* Inline beyond max_inline_data: ENOMEM, as mlx5. */
	inl.opcode = IB_WR_SEND;
	inl.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE;
	inl.sg_list = &big;
	inl.num_sge = 1;
	bad = NULL;
	KT_CHECK(ib_post_send(c->qpa, &inl, &bad) == -ENOMEM && bad == &inl,
		 "inline beyond max_inline_data accepted");
}

/*
 * The reserved lkey is no rkey: a WRITE with rkey 0 to B's kernel buffer
 * fails with a remote access error and writes nothing (both QPs end in
 * ERR; kt_drain() follows).
 */
static void kt_rlkey_not_rkey(struct kt_ctx *c)
{
	struct ib_sge sge = { .addr = c->dmaa, .length = 64,
			      .lkey = c->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {};
	struct kt_wr *s = kt_wr_new();

	memset(c->bufb, 0, 64);
	memset(c->bufa, 0x77, 64);
	wr.wr.wr_cqe = &s->cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = IB_WR_RDMA_WRITE;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = c->dmab;
	wr.rkey = 0;
	KT_CHECK(!ib_post_send(c->qpa, &wr.wr, NULL), "post WRITE");
	KT_CHECK(kt_wait(s), "timed out");
	KT_CHECK(s->wc.status == IB_WC_REM_ACCESS_ERR, "status %d",
		 s->wc.status);
	KT_CHECK(s->wc.qp == c->qpa, "qp");
	KT_CHECK(!memchr_inv(c->bufb, 0, 64), "the WRITE reached memory");
}

/* ib_drain_qp() with receives still posted: they flush. */
static void kt_drain(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	struct ib_sge rs = { .addr = c->dmab, .length = 64, .lkey = lkey };
	struct kt_wr *ra[3], *rb[5];
	int i;

	for (i = 0; i < 3; i++)
		KT_CHECK(!kt_post_recv(c, c->qpa, &rs, 1, &ra[i]),
			 "post_recv");
	for (i = 0; i < 5; i++)
		KT_CHECK(!kt_post_recv(c, c->qpb, &rs, 1, &rb[i]),
			 "post_recv");
	ib_drain_qp(c->qpa);
	ib_drain_qp(c->qpb);
	for (i = 0; i < 3; i++)
		KT_CHECK(completion_done(&ra[i]->done) &&
			 ra[i]->wc.status == IB_WC_WR_FLUSH_ERR,
			 "A recv %d status %d", i, ra[i]->wc.status);
	for (i = 0; i < 5; i++)
		KT_CHECK(completion_done(&rb[i]->done) &&
			 rb[i]->wc.status == IB_WC_WR_FLUSH_ERR,
			 "B recv %d status %d", i, rb[i]->wc.status);
}

/* Poll @cq (IB_POLL_DIRECT) until @n completions came, up to 10 s. */
static int kt_poll_n(struct ib_cq *cq, struct ib_wc *wc, int n)
{
	unsigned long end = jiffies + 10 * HZ;
	int got = 0, r;

	while (got < n && time_before(jiffies, end)) {
		r = ib_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep_range(100, 200);
	}
	return got;
}

/*
 * A QP moved to RESET takes its unpolled CQEs with it: QP C (on CQ C,
 * IB_POLL_DIRECT, never polled) sends two signaled SENDs to QP D (CQ D);
 * once D received both, C's first send CQE is in CQ C (the requester
 * completes a WQE before it starts the next). After C's RESET, CQ C
 * is empty: its CQEs would name WRs of the old counters.
 */
static void kt_reset_cleans_cq(struct kt_ctx *c)
{
	u32 lkey = c->pd->local_dma_lkey;
	struct ib_qp_attr a = { .qp_state = IB_QPS_RESET };
	struct ib_cq *cqc = NULL, *cqd = NULL;
	struct ib_qp *qpc = NULL, *qpd = NULL;
	struct ib_send_wr wr[2] = {};
	struct ib_recv_wr rwr[2] = {};
	struct ib_sge sge[2];
	struct ib_wc wc[4];
	int i;

	cqc = ib_alloc_cq(c->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	cqd = ib_alloc_cq(c->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(cqc) || IS_ERR(cqd)) {
		KT_CHECK(0, "ib_alloc_cq(IB_POLL_DIRECT)");
		goto out;
	}
	qpc = kt_qp(c, cqc, cqc);
	qpd = kt_qp(c, cqd, cqd);
	if (IS_ERR(qpc) || IS_ERR(qpd)) {
		KT_CHECK(0, "ib_create_qp");
		goto out;
	}
	KT_CHECK(!kt_connect(c, qpc, qpd->qp_num) &&
		 !kt_connect(c, qpd, qpc->qp_num), "connect C and D");
	for (i = 0; i < 2; i++) {
		sge[i] = (struct ib_sge){ .addr = c->dmab + i * 64,
					  .length = 64, .lkey = lkey };
		rwr[i].wr_id = 100 + i;
		rwr[i].sg_list = &sge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i ? NULL : &rwr[1];
		wr[i].wr_id = 200 + i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IB_WR_SEND;
		wr[i].send_flags = IB_SEND_SIGNALED;
		wr[i].next = i ? NULL : &wr[1];
	}
	KT_CHECK(!ib_post_recv(qpd, rwr, NULL) && !ib_post_send(qpc, wr, NULL),
		 "post");
	KT_CHECK(kt_poll_n(cqd, wc, 2) == 2 && wc[0].wr_id == 100 &&
		 wc[1].wr_id == 101 && !wc[0].status && !wc[1].status,
		 "D's receives");
	KT_CHECK(!ib_modify_qp(qpc, &a, IB_QP_STATE), "C to RESET");
	KT_CHECK(ib_poll_cq(cqc, 4, wc) == 0, "CQ C kept C's CQEs (wr_id %llu)",
		 wc[0].wr_id);
out:
	if (!IS_ERR_OR_NULL(qpc))
		ib_destroy_qp(qpc);
	if (!IS_ERR_OR_NULL(qpd))
		ib_destroy_qp(qpd);
	if (!IS_ERR_OR_NULL(cqc))
		ib_free_cq(cqc);
	if (!IS_ERR_OR_NULL(cqd))
		ib_free_cq(cqd);
}

/*
 * Write a CQE into kernel CQ @cq's ring at its consumer index as the HCA
 * does (all of it, then op_own with the owner bit of the lap). White box:
 * the ring is the driver's (kernel/softhca.h).
 */
static void kt_inject_cqe(struct ib_cq *cq, u8 cqe_opcode, u32 qpn,
			  u16 wqe_counter)
{
	struct shca_kcq *kcq = to_shca_cq(cq)->kcq;
	u32 ci = kcq->cons_index;
	struct softhca_cqe *cqe = &kcq->ring[ci & (kcq->cqe_cnt - 1)];

	memset(cqe, 0, offsetof(struct softhca_cqe, op_own));
	cqe->sop_drop_qpn = cpu_to_be32(SOFTHCA_OPCODE_SEND <<
					SOFTHCA_CQE_WQE_OPCODE_SHIFT | qpn);
	cqe->wqe_counter = cpu_to_be16(wqe_counter);
	cqe->byte_cnt = cpu_to_be32(8);
	dma_wmb();
	WRITE_ONCE(cqe->op_own, cqe_opcode << SOFTHCA_CQE_OPCODE_SHIFT |
				((ci & kcq->cqe_cnt) ? 1 : 0));
}

/* Inject one CQE into @cq and poll it: the wr_id it completed, or -1. */
static s64 kt_injected(struct ib_cq *cq, u8 cqe_opcode, struct ib_qp *qp,
		       u16 wqe_counter)
{
	struct ib_wc wc = {};

	kt_inject_cqe(cq, cqe_opcode, qp->qp_num, wqe_counter);
	if (ib_poll_cq(cq, 1, &wc) != 1)
		return -1;
	KT_CHECK(wc.status == IB_WC_SUCCESS && wc.qp == qp &&
		 wc.opcode == (cqe_opcode == SOFTHCA_CQE_REQ ? IB_WC_SEND :
			       IB_WC_RECV), "wr_id %llu: status %d opcode %d",
		 wc.wr_id, wc.status, wc.opcode);
	return wc.wr_id;
}

/*
 * poll_cq completes only a CQE that names an outstanding WR of a queue on
 * its CQ, as the provider (the CQE decoder both share): CQEs this test
 * writes for QP E, which stays in INIT so the HCA runs none of its WQEs.
 * E's SQ completes on CQ S, its RQ on CQ R (both IB_POLL_DIRECT); the
 * dropped CQEs are consumed and return nothing.
 */
static void kt_cqe_checks(struct kt_ctx *c)
{
	struct ib_sge sge = { .addr = c->dmaa, .length = 8,
			      .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 400, .sg_list = &sge, .num_sge = 1 };
	struct ib_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };
	struct ib_qp_attr a = { .qp_state = IB_QPS_INIT, .port_num = 1 };
	struct ib_cq *cqs, *cqr;
	struct ib_qp *qp = NULL;

	cqs = ib_alloc_cq(c->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	cqr = ib_alloc_cq(c->ibdev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(cqs) || IS_ERR(cqr)) {
		KT_CHECK(0, "ib_alloc_cq(IB_POLL_DIRECT)");
		goto out;
	}
	qp = kt_qp(c, cqs, cqr);
	if (IS_ERR(qp)) {
		KT_CHECK(0, "ib_create_qp");
		goto out;
	}
	KT_CHECK(!ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			       IB_QP_PORT | IB_QP_ACCESS_FLAGS), "E to INIT");
	/* SENDs 300 and 301 at WQEBBs 0 and 1 (a WQE its own size), receive 400. */
	wr.wr_id = 300;
	KT_CHECK(!ib_post_send(qp, &wr, NULL), "post 300");
	wr.wr_id = 301;
	KT_CHECK(!ib_post_send(qp, &wr, NULL), "post 301");
	KT_CHECK(!ib_post_recv(qp, &rwr, NULL), "post 400");

	KT_CHECK(kt_injected(cqs, SOFTHCA_CQE_RESP_SEND, qp, 0) == -1,
		 "a receive completed on the send CQ");
	KT_CHECK(kt_injected(cqr, SOFTHCA_CQE_REQ, qp, 1) == -1,
		 "a send completed on the receive CQ");
	KT_CHECK(kt_injected(cqs, SOFTHCA_CQE_REQ, qp, 0) == 300, "SEND 300");
	KT_CHECK(kt_injected(cqs, SOFTHCA_CQE_REQ, qp, 0) == -1,
		 "a retired WR completed again");
	/* WQEBB 2 holds no WR: its record (0) names the retired SEND 300. */
	KT_CHECK(kt_injected(cqs, SOFTHCA_CQE_REQ, qp, 2) == -1,
		 "a CQE naming a WQEBB without a WR completed");
	KT_CHECK(kt_injected(cqs, SOFTHCA_CQE_REQ, qp, 1) == 301, "SEND 301");
	KT_CHECK(kt_injected(cqr, SOFTHCA_CQE_RESP_SEND, qp, 0) == 400,
		 "receive 400");
	KT_CHECK(kt_injected(cqr, SOFTHCA_CQE_RESP_SEND, qp, 0) == -1,
		 "a receive completed with the RQ empty");
out:
	if (!IS_ERR_OR_NULL(qp))
		ib_destroy_qp(qp);
	if (!IS_ERR_OR_NULL(cqs))
		ib_free_cq(cqs);
	if (!IS_ERR_OR_NULL(cqr))
		ib_free_cq(cqr);
}

/* ---- UD: kernel AHs, datagrams, Q_Keys, multicast ------------------------- */

#define KT_QKEY		0x11111111
#define KT_QKEY_GSI	0x80010000	/* privileged: only a kernel QP has it */
#define KT_UD_OFF	8192		/* of bufa (send) and bufb (receive) */
#define KT_GRH		40
#define KT_IP0		htonl(0xc6120001)	/* 198.18.0.1 */

struct kt_ud {
	/* 0: the privileged Q_Key; 1: KT_QKEY; 2: KT_QKEY, blocks loopback */
	struct ib_qp *qp[3];
	struct ib_ah *ah;		/* to the GID of 198.18.0.1, sleepable */
	struct ib_ah *ah_atomic;	/* the same, made in atomic context */
	u8 mac[ETH_ALEN];		/* veth0's: dmac of both, every smac */
};

static struct ib_qp *kt_ud_qp(struct kt_ctx *c, u32 qkey, u32 create_flags)
{
	struct ib_qp_init_attr ia = {};
	struct ib_qp_attr a = {};
	struct ib_qp *qp;
	int err;

	ia.send_cq = c->cqa;
	ia.recv_cq = c->cqa;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;
	ia.sq_sig_type = IB_SIGNAL_ALL_WR;
	ia.qp_type = IB_QPT_UD;
	ia.create_flags = create_flags;
	qp = ib_create_qp(c->pd, &ia);
	if (IS_ERR(qp))
		return qp;
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
			   IB_QP_QKEY);
	a.qp_state = IB_QPS_RTR;
	if (!err)
		err = ib_modify_qp(qp, &a, IB_QP_STATE);
	a.qp_state = IB_QPS_RTS;
	if (!err)
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
	if (err) {
		ib_destroy_qp(qp);
		return ERR_PTR(err);
	}
	return qp;
}

static struct ib_ah *kt_ud_ah(struct kt_ctx *c, union ib_gid *dgid,
			      const u8 *dmac, u32 flags)
{
	struct rdma_ah_attr a = {};

	a.type = rdma_ah_find_type(c->ibdev, 1);
	rdma_ah_set_port_num(&a, 1);
	rdma_ah_set_grh(&a, dgid, 0, c->sgid_index, 64, 0);
	memcpy(a.roce.dmac, dmac, ETH_ALEN);
	return rdma_create_ah(c->pd, &a, flags);
}

/* A receive of KT_GRH + 1024 bytes at KT_UD_OFF of bufb. */
static int kt_ud_recv(struct kt_ctx *c, struct ib_qp *qp, struct kt_wr **w)
{
	struct ib_sge sge = { .addr = c->dmab + KT_UD_OFF,
			      .length = KT_GRH + 1024,
			      .lkey = c->pd->local_dma_lkey };

	memset(c->bufb + KT_UD_OFF, 0xee, KT_GRH + 1024);
	return kt_post_recv(c, qp, &sge, 1, w);
}

/* @len bytes of bufa at KT_UD_OFF from @qp through @ah to @dqpn. */
static int kt_ud_send(struct kt_ctx *c, struct ib_qp *qp, struct ib_ah *ah,
		      u32 dqpn, u32 qkey, u32 len, struct kt_wr **w)
{
	struct ib_sge sge = { .addr = c->dmaa + KT_UD_OFF, .length = len,
			      .lkey = c->pd->local_dma_lkey };
	struct ib_ud_wr wr = {};

	*w = kt_wr_new();
	if (!*w)
		return -ENOMEM;
	wr.wr.wr_cqe = &(*w)->cqe;
	wr.wr.opcode = IB_WR_SEND;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.ah = ah;
	wr.remote_qpn = dqpn;
	wr.remote_qkey = qkey;
	return ib_post_send(qp, &wr.wr, NULL);
}

/* The sender's completion of a datagram (CQ A: softirq). */
static void kt_check_ud_send(struct kt_wr *w, struct ib_qp *qp)
{
	if (!kt_wait(w)) {
		KT_CHECK(0, "UD send completion timed out");
		return;
	}
	KT_CHECK(w->wc.status == IB_WC_SUCCESS && w->wc.opcode == IB_WC_SEND &&
		 w->wc.qp == qp && w->softirq, "status %d opcode %d",
		 w->wc.status, w->wc.opcode);
}

/* Nothing completes @w for 100 ms (a datagram was dropped). */
static bool kt_quiet(struct kt_wr *w)
{
	return !wait_for_completion_timeout(&w->done, HZ / 10);
}

/*
 * A datagram of @len bytes from @from arrived as @w: every field a kernel
 * consumer reads, the payload and the GRH area's IPv4 header.
 */
static void kt_check_datagram(struct kt_ctx *c, struct kt_ud *u,
			      struct kt_wr *w, struct ib_qp *qp,
			      struct ib_qp *from, u32 len, u8 seed, __be32 dst)
{
	const struct iphdr *ip = (void *)(c->bufb + KT_UD_OFF + 20);
	u8 *p = c->bufb + KT_UD_OFF + KT_GRH;
	u32 i, bad = 0;

	if (!kt_wait(w)) {
		KT_CHECK(0, "datagram receive timed out");
		return;
	}
	KT_CHECK(w->wc.status == IB_WC_SUCCESS, "status %d", w->wc.status);
	KT_CHECK(w->wc.opcode == IB_WC_RECV, "opcode %d", w->wc.opcode);
	KT_CHECK(w->wc.byte_len == KT_GRH + len, "byte_len %u", w->wc.byte_len);
	KT_CHECK(w->wc.qp == qp && w->wc.src_qp == from->qp_num,
		 "qp, src_qp %u", w->wc.src_qp);
	KT_CHECK(w->wc.wc_flags == (IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE |
				    IB_WC_WITH_SMAC),
		 "wc_flags %#x", w->wc.wc_flags);
	KT_CHECK(w->wc.network_hdr_type == RDMA_NETWORK_IPV4,
		 "network_hdr_type %u", w->wc.network_hdr_type);
	KT_CHECK(ether_addr_equal(w->wc.smac, u->mac), "smac %pM", w->wc.smac);
	KT_CHECK(w->wc.pkey_index == 0, "pkey_index %u", w->wc.pkey_index);
	for (i = 0; i < len; i++)
		bad += p[i] != (u8)(seed + i * 7);
	KT_CHECK(!bad, "%u payload bytes differ", bad);
	KT_CHECK(ip->version == 4 && ip->ihl == 5 &&
		 ip->protocol == IPPROTO_UDP && ip->saddr == KT_IP0 &&
		 ip->daddr == dst && !ip_fast_csum(ip, 5),
		 "GRH IPv4 header %*ph", 20, ip);
}

/*
 * Kernel AHs: sleepable, and in atomic context (no sleeping allocation);
 * both carry the MAC given, as rdma_query_ah() shows.
 */
static int kt_ud_setup(struct kt_ctx *c, struct kt_ud *u)
{
	const struct ib_gid_attr *ga;
	struct rdma_ah_attr q;
	int i, err;

	ga = rdma_get_gid_attr(c->ibdev, 1, c->sgid_index);
	if (IS_ERR(ga))
		return PTR_ERR(ga);
	err = rdma_read_gid_l2_fields(ga, NULL, u->mac);
	rdma_put_gid_attr(ga);
	if (err)
		return err;
	u->qp[0] = kt_ud_qp(c, KT_QKEY_GSI, 0);
	u->qp[1] = kt_ud_qp(c, KT_QKEY, 0);
	u->qp[2] = kt_ud_qp(c, KT_QKEY, IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK);
	for (i = 0; i < 3; i++) {
		if (IS_ERR(u->qp[i])) {
			err = PTR_ERR(u->qp[i]);
			u->qp[i] = NULL;
			return err;
		}
	}
	u->ah = kt_ud_ah(c, &c->gid, u->mac, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(u->ah)) {
		err = PTR_ERR(u->ah);
		u->ah = NULL;
		return err;
	}
	local_bh_disable();
	u->ah_atomic = kt_ud_ah(c, &c->gid, u->mac, 0);
	local_bh_enable();
	if (IS_ERR(u->ah_atomic)) {
		err = PTR_ERR(u->ah_atomic);
		u->ah_atomic = NULL;
		return err;
	}
	err = rdma_query_ah(u->ah_atomic, &q);
	KT_CHECK(!err && ether_addr_equal(q.roce.dmac, u->mac) &&
		 !memcmp(rdma_ah_read_grh(&q)->dgid.raw, c->gid.raw, 16) &&
		 rdma_ah_read_grh(&q)->sgid_index == c->sgid_index,
		 "query_ah %d: %pM", err, q.roce.dmac);
	return 0;
}

static void kt_ud_teardown(struct kt_ctx *c, struct kt_ud *u)
{
	int i;

	if (u->ah_atomic) {
		local_bh_disable();
		KT_CHECK(!rdma_destroy_ah_user(u->ah_atomic, 0, NULL), "destroy atomic AH");
		local_bh_enable();
	}
	if (u->ah)
		KT_CHECK(!rdma_destroy_ah_user(u->ah, RDMA_DESTROY_AH_SLEEPABLE, NULL),
			 "destroy AH");
	for (i = 0; i < 3; i++)
		if (u->qp[i])
			KT_CHECK(!ib_destroy_qp(u->qp[i]), "destroy UD QP %d", i);
}

/*
 * A datagram between two kernel QPs, and the answer through an AH made
 * from its work completion (ib_init_ah_attr_from_wc(): the GRH area and
 * the network header type, as rdma_cm and ib_mad use them).
 */
static void kt_ud_send_and_answer(struct kt_ctx *c, struct kt_ud *u)
{
	struct rdma_ah_attr ra;
	struct kt_wr *s, *r;
	struct ib_ah *back;
	u32 src;
	int err;

	kt_fill(c->bufa + KT_UD_OFF, 100, 31);
	KT_CHECK(!kt_ud_recv(c, u->qp[1], &r), "post recv");
	KT_CHECK(!kt_ud_send(c, u->qp[2], u->ah_atomic, u->qp[1]->qp_num,
			     KT_QKEY, 100, &s), "post UD send");
	kt_check_ud_send(s, u->qp[2]);
	kt_check_datagram(c, u, r, u->qp[1], u->qp[2], 100, 31, KT_IP0);

	err = ib_init_ah_attr_from_wc(c->ibdev, 1, &r->wc,
				      (const struct ib_grh *)(c->bufb + KT_UD_OFF),
				      &ra);
	KT_CHECK(!err, "ib_init_ah_attr_from_wc: %d", err);
	if (err)
		return;
	KT_CHECK(!memcmp(rdma_ah_read_grh(&ra)->dgid.raw, c->gid.raw, 16) &&
		 ether_addr_equal(ra.roce.dmac, u->mac),
		 "AH from the WC: %pI6 %pM", rdma_ah_read_grh(&ra)->dgid.raw,
		 ra.roce.dmac);
	back = rdma_create_ah(c->pd, &ra, RDMA_CREATE_AH_SLEEPABLE);
	rdma_destroy_ah_attr(&ra);
	KT_CHECK(!IS_ERR(back), "AH from the WC: %ld", PTR_ERR(back));
	if (IS_ERR(back))
		return;
	/* The answer, to the QPN the WC named, at the path MTU. */
	kt_fill(c->bufa + KT_UD_OFF, 1024, 32);
	src = r->wc.src_qp;
	KT_CHECK(!kt_ud_recv(c, u->qp[2], &r), "post recv");
	KT_CHECK(!kt_ud_send(c, u->qp[1], back, src, KT_QKEY, 1024, &s),
		 "post UD send");
	kt_check_ud_send(s, u->qp[1]);
	kt_check_datagram(c, u, r, u->qp[2], u->qp[1], 1024, 32, KT_IP0);
	KT_CHECK(!rdma_destroy_ah_user(back, RDMA_DESTROY_AH_SLEEPABLE, NULL),
		 "destroy AH from the WC");
}

/*
 * The privileged Q_Key: a kernel QP may own one, a WR's Q_Key with bit
 * 31 set is the sender's own, so only the owner reaches its QP.
 */
static void kt_ud_privileged_qkey(struct kt_ctx *c, struct kt_ud *u)
{
	struct kt_wr *s, *r;

	kt_fill(c->bufa + KT_UD_OFF, 50, 33);
	KT_CHECK(!kt_ud_recv(c, u->qp[0], &r), "post recv");
	/* QP 1's "0x80010000" is its own KT_QKEY: dropped. */
	KT_CHECK(!kt_ud_send(c, u->qp[1], u->ah, u->qp[0]->qp_num,
			     KT_QKEY_GSI, 50, &s), "post UD send");
	kt_check_ud_send(s, u->qp[1]);
	KT_CHECK(kt_quiet(r), "a forged privileged Q_Key was taken");
	/* The owner's, to itself: taken, into the same receive. */
	KT_CHECK(!kt_ud_send(c, u->qp[0], u->ah, u->qp[0]->qp_num,
			     SOFTHCA_QKEY_PRIVILEGED, 50, &s), "post UD send");
	kt_check_ud_send(s, u->qp[0]);
	kt_check_datagram(c, u, r, u->qp[0], u->qp[0], 50, 33, KT_IP0);
}

/*
 * Multicast between kernel QPs: every attached QP gets a copy, the
 * sender's own QP too unless it was created with
 * IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK; none after the detach.
 */
static void kt_ud_multicast(struct kt_ctx *c, struct kt_ud *u)
{
	static const u8 mmac[ETH_ALEN] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x04 };
	struct kt_wr *s, *r1, *r2;
	union ib_gid mgid;
	struct ib_ah *ah;

	ipv6_addr_set_v4mapped(htonl(0xef010204), (struct in6_addr *)mgid.raw);
	ah = kt_ud_ah(c, &mgid, mmac, RDMA_CREATE_AH_SLEEPABLE);
	KT_CHECK(!IS_ERR(ah), "multicast AH: %ld", PTR_ERR(ah));
	if (IS_ERR(ah))
		return;
	KT_CHECK(!ib_attach_mcast(u->qp[1], &mgid, 0), "attach QP 1");
	KT_CHECK(!ib_attach_mcast(u->qp[2], &mgid, 0), "attach QP 2");
	kt_fill(c->bufa + KT_UD_OFF, 64, 34);

	/* From QP 2 (blocks its loopback): QP 1's copy only. */
	KT_CHECK(!kt_ud_recv(c, u->qp[1], &r1), "post recv");
	KT_CHECK(!kt_ud_recv(c, u->qp[2], &r2), "post recv");
	KT_CHECK(!kt_ud_send(c, u->qp[2], ah, 0xffffff, KT_QKEY, 64, &s),
		 "post UD send");
	kt_check_ud_send(s, u->qp[2]);
	kt_check_datagram(c, u, r1, u->qp[1], u->qp[2], 64, 34,
			  htonl(0xef010204));
	KT_CHECK(kt_quiet(r2), "QP 2 got its own multicast copy");

	/* From QP 1: both copies, its own included (into QP 2's receive). */
	KT_CHECK(!kt_ud_recv(c, u->qp[1], &r1), "post recv");
	KT_CHECK(!kt_ud_send(c, u->qp[1], ah, 0xffffff, KT_QKEY, 64, &s),
		 "post UD send");
	kt_check_ud_send(s, u->qp[1]);
	KT_CHECK(kt_wait(r1) && r1->wc.status == IB_WC_SUCCESS &&
		 r1->wc.src_qp == u->qp[1]->qp_num, "QP 1's own copy");
	KT_CHECK(kt_wait(r2) && r2->wc.status == IB_WC_SUCCESS &&
		 r2->wc.src_qp == u->qp[1]->qp_num, "QP 2's copy");

	/* Detached, nobody gets one. */
	KT_CHECK(!ib_detach_mcast(u->qp[1], &mgid, 0), "detach QP 1");
	KT_CHECK(!ib_detach_mcast(u->qp[2], &mgid, 0), "detach QP 2");
	KT_CHECK(!kt_ud_recv(c, u->qp[1], &r1), "post recv");
	KT_CHECK(!kt_ud_send(c, u->qp[2], ah, 0xffffff, KT_QKEY, 64, &s),
		 "post UD send");
	kt_check_ud_send(s, u->qp[2]);
	KT_CHECK(kt_quiet(r1), "a detached QP got a copy");
	KT_CHECK(!rdma_destroy_ah_user(ah, RDMA_DESTROY_AH_SLEEPABLE, NULL),
		 "destroy multicast AH");
}

/* ib_mad holds the port's GSI QP (QPN 1): a second one is refused. */
static void kt_ud_second_gsi(struct kt_ctx *c)
{
	struct ib_qp_init_attr ia = {};
	struct ib_qp *qp;

	ia.send_cq = c->cqa;
	ia.recv_cq = c->cqa;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_type = IB_SIGNAL_ALL_WR;
	ia.qp_type = IB_QPT_GSI;
	ia.port_num = 1;
	qp = ib_create_qp(c->pd, &ia);
	KT_CHECK(PTR_ERR_OR_ZERO(qp) == -EEXIST, "a second GSI QP: %d",
		 PTR_ERR_OR_ZERO(qp));
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
}

static void kt_ud(struct kt_ctx *c)
{
	struct kt_ud u = {};
	int err = kt_ud_setup(c, &u);

	KT_CHECK(!err, "UD setup: %d", err);
	if (!err) {
		kt_ud_send_and_answer(c, &u);
		kt_ud_privileged_qkey(c, &u);
		kt_ud_multicast(c, &u);
		kt_ud_second_gsi(c);
	}
	kt_ud_teardown(c, &u);
}

/* ---- a kernel SRQ -------------------------------------------------------- */

#define KT_SRQ_WR	15
#define KT_SRQ_OFF	8192		/* receive buffers in B's memory */

static DECLARE_COMPLETION(kt_srq_limit);

static void kt_srq_event(struct ib_event *ev, void *ctx)
{
	if (ev->event == IB_EVENT_SRQ_LIMIT_REACHED)
		complete(&kt_srq_limit);
}

static int kt_post_srq_recv(struct kt_ctx *c, struct ib_srq *srq, int i,
			    struct kt_wr **wp)
{
	struct ib_sge sge = { .addr = c->dmab + KT_SRQ_OFF + i * 256,
			      .length = 256, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct kt_wr *w = kt_wr_new();

	if (!w)
		return -ENOMEM;
	wr.wr_cqe = &w->cqe;
	*wp = w;
	return ib_post_srq_recv(srq, &wr, NULL);
}

/*
 * Two RC QPs (C, D) on one kernel SRQ, fed by E and F: every receive names
 * the QP it arrived on and its sender, and its buffer (the SRQ WR's) holds
 * the sender's bytes; the SRQ holds KT_SRQ_WR WRs and not one more; the
 * limit event; the SRQ is not destroyed while QPs use it.
 */
static void kt_srq_traffic(struct kt_ctx *c, struct ib_srq *srq,
			   struct ib_qp **rq, struct ib_qp **sq)
{
	struct kt_wr *r[8], *s, *extra;
	struct ib_srq_attr a = { .srq_limit = 5 };
	int i, bad = 0;

	for (i = 0; i < 8; i++)
		if (kt_post_srq_recv(c, srq, i, &r[i]))
			bad++;
	KT_CHECK(!bad, "post_srq_recv");
	KT_CHECK(!ib_modify_srq(srq, &a, IB_SRQ_LIMIT), "arm the limit");
	for (i = 0; i < 8; i++) {
		u8 *src = c->bufa + 4096 + i * 256;
		struct ib_sge sge = { .addr = c->dmaa + 4096 + i * 256,
				      .length = 100 + i,
				      .lkey = c->pd->local_dma_lkey };
		struct ib_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					 .opcode = IB_WR_SEND,
					 .send_flags = IB_SEND_SIGNALED };

		kt_fill(src, 100 + i, 0x40 + i);
		s = kt_wr_new();
		wr.wr_cqe = &s->cqe;
		KT_CHECK(!ib_post_send(sq[i & 1], &wr, NULL), "post_send");
		kt_check_send(c, s, sq[i & 1], IB_WC_SEND);
	}
	for (i = 0; i < 8; i++) {
		struct kt_wr *w = r[i];
		int k;

		if (!kt_wait(w)) {
			KT_CHECK(0, "SRQ receive %d timed out", i);
			continue;
		}
		/* WQEs are taken in posting order: message i took WR i. */
		KT_CHECK(w->wc.status == IB_WC_SUCCESS, "status %d",
			 w->wc.status);
		KT_CHECK(w->wc.opcode == IB_WC_RECV, "opcode %d", w->wc.opcode);
		KT_CHECK(w->wc.byte_len == 100 + i, "byte_len %u",
			 w->wc.byte_len);
		KT_CHECK(w->wc.qp == rq[i & 1], "qp of receive %d", i);
		KT_CHECK(w->wc.src_qp == sq[i & 1]->qp_num, "src_qp %u",
			 w->wc.src_qp);
		for (k = 0; k < 100 + i; k++)
			if (c->bufb[KT_SRQ_OFF + i * 256 + k] !=
			    (u8)(0x40 + i + k * 7))
				break;
		KT_CHECK(k == 100 + i, "receive %d bytes differ at %d", i, k);
	}
	KT_CHECK(wait_for_completion_timeout(&kt_srq_limit, 5 * HZ),
		 "SRQ_LIMIT_REACHED");
	memset(&a, 0, sizeof(a));
	KT_CHECK(!ib_query_srq(srq, &a) && a.srq_limit == 0 &&
		 a.max_wr == KT_SRQ_WR, "query: limit %u max_wr %u",
		 a.srq_limit, a.max_wr);
	for (i = 0, bad = 0; i < KT_SRQ_WR; i++)
		if (kt_post_srq_recv(c, srq, i & 7, &extra))
			bad++;
	KT_CHECK(!bad, "post %d", KT_SRQ_WR);
	KT_CHECK(kt_post_srq_recv(c, srq, 0, &extra) == -ENOMEM,
		 "one more than max_wr");
}

static void kt_srq(struct kt_ctx *c)
{
	struct ib_srq_init_attr sa = { .event_handler = kt_srq_event,
		.attr = { .max_wr = KT_SRQ_WR, .max_sge = 1 } };
	struct ib_qp *rq[2] = {}, *sq[2] = {};
	struct ib_srq *srq;
	int i, err = 0;

	srq = ib_create_srq(c->pd, &sa);
	if (IS_ERR(srq)) {
		KT_CHECK(0, "create_srq: %ld", PTR_ERR(srq));
		return;
	}
	for (i = 0; i < 2 && !err; i++) {
		struct ib_qp_init_attr ia = {
			.send_cq = c->cqb, .recv_cq = c->cqb, .srq = srq,
			.cap = { .max_send_wr = 8, .max_send_sge = 1 },
			.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
		};

		rq[i] = ib_create_qp(c->pd, &ia);
		sq[i] = kt_qp(c, c->cqb, c->cqb);
		if (IS_ERR(rq[i]) || IS_ERR(sq[i])) {
			err = IS_ERR(rq[i]) ? PTR_ERR(rq[i]) : PTR_ERR(sq[i]);
			break;
		}
		err = kt_connect(c, rq[i], sq[i]->qp_num);
		if (!err)
			err = kt_connect(c, sq[i], rq[i]->qp_num);
	}
	KT_CHECK(!err, "SRQ QPs: %d", err);
	if (!err)
		kt_srq_traffic(c, srq, rq, sq);
	for (i = 0; i < 2; i++) {
		if (!IS_ERR_OR_NULL(sq[i]))
			ib_destroy_qp(sq[i]);
		if (!IS_ERR_OR_NULL(rq[i]))
			ib_destroy_qp(rq[i]);
	}
	KT_CHECK(!ib_destroy_srq_user(srq, NULL), "destroy_srq");
}

static int kt_setup_mr(struct kt_ctx *c)
{
	u8 *tmp;
	int err = 0;

	/* An MR of this (insmod's) process: the rkey of the RDMA tests. */
	c->uaddr = vm_mmap(NULL, 0, KT_UMEM, PROT_READ | PROT_WRITE,
			   MAP_ANONYMOUS | MAP_PRIVATE, 0);
	if (IS_ERR_VALUE(c->uaddr)) {
		c->uaddr = 0;
		return -ENOMEM;
	}
	tmp = kmalloc(KT_UMEM, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	memset(tmp, 0x5a, KT_UMEM);
	kt_fill(tmp + 4096, 512, 77);
	if (copy_to_user((void __user *)c->uaddr, tmp, KT_UMEM))
		err = -EFAULT;
	kfree(tmp);
	if (err)
		return err;
	c->mr = ib_reg_user_mr(c->pd, c->uaddr, KT_UMEM, c->uaddr,
			       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(c->mr)) {
		err = PTR_ERR(c->mr);
		c->mr = NULL;
	}
	return err;
}

static int kt_setup(struct kt_ctx *c)
{
	const struct ib_gid_attr *ga;
	int err;

	c->pd = ib_alloc_pd(c->ibdev, 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		return err;
	}
	KT_CHECK(c->pd->local_dma_lkey == 0, "local_dma_lkey %#x",
		 c->pd->local_dma_lkey);
	c->cqa = ib_alloc_cq(c->ibdev, NULL, 256, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(c->cqa)) {
		err = PTR_ERR(c->cqa);
		c->cqa = NULL;
		return err;
	}
	c->cqb = ib_alloc_cq(c->ibdev, NULL, 256,
			     c->ibdev->num_comp_vectors - 1,
			     IB_POLL_WORKQUEUE);
	if (IS_ERR(c->cqb)) {
		err = PTR_ERR(c->cqb);
		c->cqb = NULL;
		return err;
	}
	c->qpa = kt_qp(c, c->cqa, c->cqa);
	if (IS_ERR(c->qpa)) {
		err = PTR_ERR(c->qpa);
		c->qpa = NULL;
		return err;
	}
	c->qpb = kt_qp(c, c->cqb, c->cqb);
	if (IS_ERR(c->qpb)) {
		err = PTR_ERR(c->qpb);
		c->qpb = NULL;
		return err;
	}

	ipv6_addr_set_v4mapped(htonl(0xc6120001), (struct in6_addr *)c->gid.raw);
	ga = rdma_find_gid(c->ibdev, &c->gid, IB_GID_TYPE_ROCE_UDP_ENCAP,
			   NULL);
	if (IS_ERR(ga))
		return PTR_ERR(ga);
	c->sgid_index = ga->index;
	rdma_put_gid_attr(ga);
	err = kt_connect(c, c->qpa, c->qpb->qp_num);
	if (!err)
		err = kt_connect(c, c->qpb, c->qpa->qp_num);
	if (err)
		return err;

	c->bufa = kzalloc(KT_BUF, GFP_KERNEL);
	c->bufb = kzalloc(KT_BUF, GFP_KERNEL);
	if (!c->bufa || !c->bufb)
		return -ENOMEM;
	c->dmaa = ib_dma_map_single(c->ibdev, c->bufa, KT_BUF,
				    DMA_BIDIRECTIONAL);
	c->dmab = ib_dma_map_single(c->ibdev, c->bufb, KT_BUF,
				    DMA_BIDIRECTIONAL);
	return kt_setup_mr(c);
}

static void kt_teardown(struct kt_ctx *c)
{
	if (c->mr)
		KT_CHECK(!ib_dereg_mr(c->mr), "dereg_mr");
	if (c->uaddr)
		vm_munmap(c->uaddr, KT_UMEM);
	if (c->bufa) {
		ib_dma_unmap_single(c->ibdev, c->dmaa, KT_BUF,
				    DMA_BIDIRECTIONAL);
		kfree(c->bufa);
	}
	if (c->bufb) {
		ib_dma_unmap_single(c->ibdev, c->dmab, KT_BUF,
				    DMA_BIDIRECTIONAL);
		kfree(c->bufb);
	}
	if (c->qpa)
		KT_CHECK(!ib_destroy_qp(c->qpa), "destroy QP A");
	if (c->qpb)
		KT_CHECK(!ib_destroy_qp(c->qpb), "destroy QP B");
	if (c->cqa)
		ib_free_cq(c->cqa);
	if (c->cqb)
		ib_free_cq(c->cqb);
	if (c->pd)
		ib_dealloc_pd(c->pd);
}

static int __init kt_init(void)
{
	struct kt_ctx c = {};
	int err;

	c.ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!c.ibdev) {
		pr_info("softhca_ktest: no device %s\n", dev);
		return -ENODEV;
	}
	err = kt_setup(&c);
	KT_CHECK(!err, "setup: %d", err);
	if (!err) {
		kt_send_sgl(&c);
		kt_send_imm_inline(&c);
		kt_unsignaled(&c);
		kt_rdma(&c);
		kt_many(&c);
		kt_atomics_and_bad_wr(&c);
		kt_rlkey_not_rkey(&c);
		kt_drain(&c);
		kt_reset_cleans_cq(&c);
		kt_cqe_checks(&c);
		kt_ud(&c);
		kt_srq(&c);
	}
	kt_teardown(&c);
	ib_device_put(c.ibdev);
	done = 1;
	pr_info("softhca_ktest: passed %d failed %d\n", passed, failed);
	return 0;
}

static void __exit kt_exit(void)
{
}

module_init(kt_init);
module_exit(kt_exit);
MODULE_DESCRIPTION("softhca kernel verbs test (VM only)");
MODULE_LICENSE("GPL");
