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
 * outstanding WR of a queue on that CQ dropped (white box); every
 * completion arrives through an ib_cqe done callback and every field and
 * byte is checked.
 *
 * Results: read-only parameters passed, failed and done (1 once the run
 * ended and everything was destroyed); each failed check prints one
 * "softhca_ktest: FAIL" line.
 */
#include <linux/completion.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/softhca-opcodes.h>

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

#define KT_CHECK(cond, fmt, ...)					\
	do {								\
		if (cond) {						\
			passed++;					\
		} else {						\
			failed++;					\
			pr_info("softhca_ktest: FAIL line %d: %s: " fmt "\n", \
				__LINE__, #cond, ##__VA_ARGS__);	\
		}							\
	} while (0)

#define KT_BUF		(16 * 1024)
#define KT_UMEM		(8 * 1024)
#define KT_MANY		256
#define KT_BATCH	32
#define KT_NWR		(2 * KT_MANY + 64)

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
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			    IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = rdma_ah_find_type(c->ibdev, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &c->gid, 0, c->sgid_index, 64, 0);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
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
	inv.opcode = IB_WR_LOCAL_INV;
	inv.send_flags = IB_SEND_SIGNALED;
	KT_CHECK(ib_post_send(c->qpa, &inv, &bad) == -EINVAL && bad == &inv,
		 "LOCAL_INV accepted");

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
