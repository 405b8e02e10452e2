// SPDX-License-Identifier: GPL-2.0
/*
 * Control-path verbs of the RC data path: MRs (keys,
 * access flags), CQs (sizes), RC QP creation (caps enforced and granted),
 * modify_qp through every state with its required and allowed attributes,
 * query_qp, destroy, unsupported QP types, and rdma res counts back to the
 * baseline. Runs in the VM with shca0 on veth0.
 *
 * Errnos: those ib_uverbs returns before the driver is called are ib_core's
 * (same on every device); the driver's follow mlx5 where mlx5 has one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"

static const char *const res_names[] = { "ctx", "pd", "cq", "qp", "mr" };
#define NRES (sizeof(res_names) / sizeof(res_names[0]))

static void res_snapshot(long *v)
{
	for (unsigned int i = 0; i < NRES; i++)
		v[i] = res_count("shca0", res_names[i]);
}

static void expect_res_baseline(struct __test_metadata *_metadata, const long *base)
{
	for (unsigned int i = 0; i < NRES; i++) {
		long now = res_count("shca0", res_names[i]);

		EXPECT_EQ(base[i], now) TH_LOG("rdma res %s: %ld at start, %ld now",
					       res_names[i], base[i], now);
	}
}

FIXTURE(dev) {
	long base[NRES];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr_ex attr;
};

FIXTURE_SETUP(dev)
{
	res_snapshot(self->base);
	for (unsigned int i = 0; i < NRES; i++) {
		ASSERT_LE(0, self->base[i]) TH_LOG("rdma res %s", res_names[i]);
	}
	self->ctx = open_dev("shca0");
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &self->attr));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->pd) {
		EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	}
	if (self->ctx) {
		EXPECT_EQ(0, ibv_close_device(self->ctx));
	}
	expect_res_baseline(_metadata, self->base);
}

/* ---- MRs ------------------------------------------------------------- */

TEST_F(dev, mr_keys)
{
	size_t len = 64 << 10;
	void *buf = malloc(len);
	uint32_t keys[20];
	struct ibv_mr *mr, *mr2;
	long mrs = res_count("shca0", "mr");

	ASSERT_NE(NULL, buf);
	/* Two MRs over the same memory are two keys; lkey == rkey (mlx5). */
	mr = ibv_reg_mr(self->pd, buf, len, RC_ACCESS_ALL);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr: %s", strerror(errno));
	mr2 = ibv_reg_mr(self->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr2) TH_LOG("reg_mr: %s", strerror(errno));
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_NE(mr->lkey, mr2->lkey);
	EXPECT_EQ(buf, mr->addr);
	EXPECT_EQ(len, mr->length);
	EXPECT_EQ(self->pd, mr->pd);
	EXPECT_EQ(mrs + 2, res_count("shca0", "mr"));
	EXPECT_EQ(0, ibv_dereg_mr(mr2));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(mrs, res_count("shca0", "mr"));

	/* Register, deregister, register again: the key changes every time
	 * (the variant byte moves even when the MKey index is reused), so a
	 * stale key never matches a new MR.
	 */
	for (int i = 0; i < 20; i++) {
		mr = ibv_reg_mr(self->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, mr) TH_LOG("reg_mr %d: %s", i, strerror(errno));
		keys[i] = mr->lkey;
		EXPECT_EQ(0, ibv_dereg_mr(mr));
		for (int j = 0; j < i; j++) {
			EXPECT_NE(keys[j], keys[i]) TH_LOG("registration %d got key %#x of registration %d",
							   i, keys[i], j);
		}
	}
	EXPECT_EQ(mrs, res_count("shca0", "mr"));
	free(buf);
}

TEST_F(dev, mr_access_flags)
{
	size_t len = 16 << 10;
	void *buf = malloc(len);
	void *ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static const struct {
		int access, err;
	} cases[] = {
		/* ib_core (ib_check_mr_access): remote write/atomic need local write */
		{ IBV_ACCESS_REMOTE_WRITE, EINVAL },
		{ IBV_ACCESS_REMOTE_ATOMIC, EINVAL },
		{ IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, EINVAL },
		{ 0, 0 },
		{ IBV_ACCESS_REMOTE_READ, 0 },
		{ IBV_ACCESS_LOCAL_WRITE, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 0 },
		{ RC_ACCESS_ALL, 0 },
		/* optional bit: ignored by a device without it */
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING, 0 },
		/* an ODP MR: nothing pinned (kernel/odp.c, selftests/odp.c) */
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, 0 },
	};
	struct ibv_mr *mr;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(MAP_FAILED, ro);
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		mr = ibv_reg_mr(self->pd, buf, len, cases[i].access);
		if (cases[i].err) {
			EXPECT_EQ(NULL, mr) TH_LOG("access %#x", cases[i].access);
			EXPECT_EQ(cases[i].err, errno) TH_LOG("access %#x: %s",
							       cases[i].access, strerror(errno));
		} else {
			EXPECT_NE(NULL, mr) TH_LOG("access %#x: %s", cases[i].access,
						   strerror(errno));
		}
		if (mr) {
			EXPECT_EQ(0, ibv_dereg_mr(mr));
		}
	}
	/* Read-only memory: readable registration works, writable fails
	 * (ib_umem_get cannot pin it for writing: EFAULT, as mlx5).
	 */
	mr = ibv_reg_mr(self->pd, ro, len, IBV_ACCESS_REMOTE_READ);
	EXPECT_NE(NULL, mr) TH_LOG("read-only memory, REMOTE_READ: %s", strerror(errno));
	if (mr) {
		EXPECT_EQ(0, ibv_dereg_mr(mr));
	}
	errno = 0;
	mr = ibv_reg_mr(self->pd, ro, len, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EFAULT, errno) TH_LOG("read-only memory, LOCAL_WRITE: %s", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	/* Nothing mapped there. */
	munmap(ro, len);
	errno = 0;
	mr = ibv_reg_mr(self->pd, ro, len, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EFAULT, errno) TH_LOG("unmapped memory: %s", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	free(buf);
}

/* Bad lengths and addressing (Documentation/kernel.md, "Errnos"). */
TEST_F(dev, mr_bad_args)
{
	size_t len = 16 << 10;
	uint8_t *buf = malloc(len + 4096);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, buf);
	errno = 0;
	mr = ibv_reg_mr(self->pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno) TH_LOG("length 0: %s", strerror(errno));
	if (mr) {
		ibv_dereg_mr(mr);
	}
	errno = 0;
	mr = ibv_reg_mr(self->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("ZERO_BASED: %s", strerror(errno));
	if (mr) {
		ibv_dereg_mr(mr);
	}
	/* iova with another page offset than the address */
	errno = 0;
	mr = ibv_reg_mr_iova(self->pd, buf + 100, len, 0x10000 + 200, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno) TH_LOG("iova offset differs: %s", strerror(errno));
	if (mr) {
		ibv_dereg_mr(mr);
	}
	/* an unaligned start and odd length are fine */
	mr = ibv_reg_mr(self->pd, buf + 3, len - 5, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_NE(NULL, mr) TH_LOG("unaligned: %s", strerror(errno));
	if (mr) {
		EXPECT_EQ(buf + 3, mr->addr);
		EXPECT_EQ(len - 5, mr->length);
		EXPECT_EQ(0, ibv_dereg_mr(mr));
	}
	free(buf);
}

TEST_F(dev, pd_with_mr_is_busy)
{
	char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(self->pd, buf, sizeof(buf), 0);

	ASSERT_NE(NULL, mr);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* ---- CQs ------------------------------------------------------------- */

TEST_F_TIMEOUT(dev, cq_sizes, 120)
{
	int max = self->attr.orig_attr.max_cqe;
	int sizes[] = { 1, 2, 3, 63, 64, 65, 1000, 4096, 65535, 0 };
	long cqs = res_count("shca0", "cq");
	struct ibv_cq *cq;

	ASSERT_LT(65536, max);
	sizes[sizeof(sizes) / sizeof(sizes[0]) - 1] = max;
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cq = ibv_create_cq(self->ctx, sizes[i], NULL, NULL, 0);
		ASSERT_NE(NULL, cq) TH_LOG("cqe %d: %s", sizes[i], strerror(errno));
		EXPECT_LE(sizes[i], cq->cqe) TH_LOG("asked %d, granted %d", sizes[i], cq->cqe);
		EXPECT_EQ(cqs + 1, res_count("shca0", "cq"));
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
	/* Beyond max_cqe: EINVAL (mlx5). */
	errno = 0;
	cq = ibv_create_cq(self->ctx, max + 1, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno) TH_LOG("cqe max_cqe + 1 = %d: %s", max + 1, strerror(errno));
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(self->ctx, 0x7fffffff, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	if (cq)
		ibv_destroy_cq(cq);
	/* A completion vector the device does not have (ib_uverbs). */
	errno = 0;
	cq = ibv_create_cq(self->ctx, 16, NULL, NULL, self->ctx->num_comp_vectors);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	if (cq)
		ibv_destroy_cq(cq);
	EXPECT_EQ(cqs, res_count("shca0", "cq"));
}

TEST_F(dev, cq_many)
{
	static struct ibv_cq *cq[200];
	long cqs = res_count("shca0", "cq");

	for (int i = 0; i < 200; i++) {
		cq[i] = ibv_create_cq(self->ctx, 1 + i, NULL, NULL, i % self->ctx->num_comp_vectors);
		ASSERT_NE(NULL, cq[i]) TH_LOG("CQ %d: %s", i, strerror(errno));
	}
	EXPECT_EQ(cqs + 200, res_count("shca0", "cq"));
	for (int i = 0; i < 200; i++) {
		EXPECT_EQ(0, ibv_destroy_cq(cq[i]));
	}
	EXPECT_EQ(cqs, res_count("shca0", "cq"));
}

/* ---- QP creation ------------------------------------------------------ */

static struct ibv_qp *mkqp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_qp_cap *cap,
			   enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = type };
	struct ibv_qp *qp;

	ia.cap = *cap;
	qp = ibv_create_qp(pd, &ia);
	if (qp)
		*cap = ia.cap;
	return qp;
}

TEST_F(dev, cq_used_by_qp_is_busy)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_cap cap = { 4, 4, 1, 1, 0 };
	struct ibv_qp *qp;

	ASSERT_NE(NULL, cq);
	qp = mkqp(self->pd, cq, &cap, IBV_QPT_RC);
	ASSERT_NE(NULL, qp) TH_LOG("create_qp: %s", strerror(errno));
	EXPECT_EQ(EBUSY, ibv_destroy_cq(cq));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

TEST_F(dev, qp_caps_granted)
{
	struct ibv_device_attr *da = &self->attr.orig_attr;
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	struct ibv_qp_cap asks[] = {
		{ 1, 1, 1, 1, 0 },
		{ 10, 10, 3, 3, 17 },
		{ 100, 33, 16, 16, 256 },
		{ 0, 0, 0, 0, 0 },
		{ 1, 0, 1, 0, 64 },
		/* The largest queues of the smallest WQEs. */
		{ da->max_qp_wr, 1, 1, 1, 0 },
		{ 1, da->max_qp_wr, 1, 1, 0 },
		{ 1, 1, da->max_sge, 1, 0 },
		{ 1, 1, 1, da->max_sge, 0 },
	};
	long qps = res_count("shca0", "qp");

	ASSERT_NE(NULL, cq);
	for (unsigned int i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
		struct ibv_qp_cap cap = asks[i];
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr qia;
		struct ibv_qp *qp = mkqp(self->pd, cq, &cap, IBV_QPT_RC);

		ASSERT_NE(NULL, qp) TH_LOG("caps %u/%u/%u/%u/%u: %s", asks[i].max_send_wr,
					   asks[i].max_recv_wr, asks[i].max_send_sge,
					   asks[i].max_recv_sge, asks[i].max_inline_data,
					   strerror(errno));
		EXPECT_LE(asks[i].max_send_wr, cap.max_send_wr) TH_LOG("case %u", i);
		EXPECT_LE(asks[i].max_recv_wr, cap.max_recv_wr) TH_LOG("case %u", i);
		EXPECT_LE(asks[i].max_send_sge, cap.max_send_sge) TH_LOG("case %u", i);
		EXPECT_LE(asks[i].max_recv_sge, cap.max_recv_sge) TH_LOG("case %u", i);
		EXPECT_LE(asks[i].max_inline_data, cap.max_inline_data) TH_LOG("case %u", i);
		/* Granted never beyond the device. */
		EXPECT_GE(da->max_qp_wr, cap.max_send_wr) TH_LOG("case %u", i);
		EXPECT_GE(da->max_qp_wr, cap.max_recv_wr) TH_LOG("case %u", i);
		/* query_qp reports the same caps. */
		ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_CAP, &qia));
		EXPECT_EQ(cap.max_send_wr, qia.cap.max_send_wr) TH_LOG("case %u", i);
		EXPECT_EQ(cap.max_recv_wr, qia.cap.max_recv_wr) TH_LOG("case %u", i);
		EXPECT_EQ(cap.max_send_sge, qia.cap.max_send_sge) TH_LOG("case %u", i);
		EXPECT_EQ(cap.max_recv_sge, qia.cap.max_recv_sge) TH_LOG("case %u", i);
		EXPECT_EQ(cap.max_inline_data, qia.cap.max_inline_data) TH_LOG("case %u", i);
		EXPECT_EQ(cap.max_send_wr, a.cap.max_send_wr) TH_LOG("case %u", i);
		EXPECT_EQ(qps + 1, res_count("shca0", "qp"));
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	}
	EXPECT_EQ(qps, res_count("shca0", "qp"));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

TEST_F(dev, qp_caps_beyond_device)
{
	struct ibv_device_attr *da = &self->attr.orig_attr;
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	uint32_t max_inline = 256;	/* Documentation/kernel.md caps */
	struct ibv_qp_cap asks[] = {
		{ da->max_qp_wr + 1, 1, 1, 1, 0 },
		{ 1, da->max_qp_wr + 1, 1, 1, 0 },
		{ 1, 1, da->max_sge + 1, 1, 0 },
		{ 1, 1, 1, da->max_sge + 1, 0 },
		{ 1, 1, 1, 1, max_inline + 1 },
		{ 1, 1, 1, 1, 1 << 20 },
		{ 1u << 31, 1, 1, 1, 0 },
		/* Each within the caps, together too big for the SQ (mlx5's
		 * provider: WQEBBs beyond max_send_wqebb).
		 */
		{ da->max_qp_wr, 1, da->max_sge, 1, 0 },
		{ da->max_qp_wr, 1, 1, 1, max_inline },
	};
	long qps = res_count("shca0", "qp");

	ASSERT_NE(NULL, cq);
	for (unsigned int i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
		struct ibv_qp_cap cap = asks[i];
		struct ibv_qp *qp;

		errno = 0;
		qp = mkqp(self->pd, cq, &cap, IBV_QPT_RC);
		EXPECT_EQ(NULL, qp);
		EXPECT_EQ(EINVAL, errno) TH_LOG("caps %u/%u/%u/%u/%u: %s",
						asks[i].max_send_wr, asks[i].max_recv_wr,
						asks[i].max_send_sge, asks[i].max_recv_sge,
						asks[i].max_inline_data, strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	EXPECT_EQ(qps, res_count("shca0", "qp"));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/*
 * RC, UC, UD and XRC (selftests/uc.c, xrc.c): the device claims no raw
 * packet QPs (kernel.md). The errno is what create_qp gives for a type it does
 * not implement.
 */
TEST_F(dev, qp_types_not_supported)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	static const enum ibv_qp_type types[] = { IBV_QPT_RAW_PACKET };
	long qps = res_count("shca0", "qp");

	ASSERT_NE(NULL, cq);
	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct ibv_qp_cap cap = { 4, 4, 1, 1, 0 };
		struct ibv_qp *qp;

		errno = 0;
		qp = mkqp(self->pd, cq, &cap, types[i]);
		EXPECT_EQ(NULL, qp) TH_LOG("type %d created", types[i]);
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("type %d: %s", types[i], strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	EXPECT_EQ(qps, res_count("shca0", "qp"));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/* ---- modify_qp / query_qp ---------------------------------------------- */

FIXTURE(qp) {
	long base[NRES];
	struct rc_pair p;
};

FIXTURE_SETUP(qp)
{
	struct rc_cfg c;

	res_snapshot(self->base);
	rc_cfg_default(&c, RC_SAME_CTX);
	c.buf_size = 64 << 10;
	ASSERT_EQ(0, rc_pair_create(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(qp)
{
	rc_pair_destroy(&self->p);
	expect_res_baseline(_metadata, self->base);
}

#define QP0 (self->p.e[0].qp)

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int do_init(struct rc_pair *p)
{
	struct ibv_qp_attr a;
	int mask;

	rc_init_attr(&a, &mask, p->cfg.qp_access);
	return ibv_modify_qp(p->e[0].qp, &a, mask);
}

static int do_rtr(struct rc_pair *p)
{
	struct ibv_qp_attr a;
	int mask;

	rc_rtr_attr(p, 0, &a, &mask);
	return ibv_modify_qp(p->e[0].qp, &a, mask);
}

static int do_rts(struct rc_pair *p)
{
	struct ibv_qp_attr a;
	int mask;

	rc_rts_attr(p, 0, &a, &mask);
	return ibv_modify_qp(p->e[0].qp, &a, mask);
}

TEST_F(qp, reset_init_rtr_rts)
{
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
	ASSERT_EQ(0, do_init(&self->p));
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	EXPECT_EQ(IBV_QPS_INIT, QP0->state);
	ASSERT_EQ(0, do_rtr(&self->p));
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rts(&self->p));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
	EXPECT_EQ(IBV_QPS_RTS, QP0->state);
}

/* Each required attribute left out of each transition: EINVAL, state kept. */
TEST_F(qp, missing_required_attr)
{
	static const int init_req[] = { IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS };
	static const int rtr_req[] = { IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_DEST_QPN,
				       IBV_QP_RQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC,
				       IBV_QP_MIN_RNR_TIMER };
	static const int rts_req[] = { IBV_QP_SQ_PSN, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
				       IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC };
	struct ibv_qp_attr a;
	int mask;

	for (unsigned int i = 0; i < sizeof(init_req) / sizeof(init_req[0]); i++) {
		rc_init_attr(&a, &mask, 0);
		EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask & ~init_req[i]))
			TH_LOG("RESET->INIT without %#x", init_req[i]);
		EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
	}
	ASSERT_EQ(0, do_init(&self->p));
	for (unsigned int i = 0; i < sizeof(rtr_req) / sizeof(rtr_req[0]); i++) {
		rc_rtr_attr(&self->p, 0, &a, &mask);
		EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask & ~rtr_req[i]))
			TH_LOG("INIT->RTR without %#x", rtr_req[i]);
		EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	}
	ASSERT_EQ(0, do_rtr(&self->p));
	for (unsigned int i = 0; i < sizeof(rts_req) / sizeof(rts_req[0]); i++) {
		rc_rts_attr(&self->p, 0, &a, &mask);
		EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask & ~rts_req[i]))
			TH_LOG("RTR->RTS without %#x", rts_req[i]);
		EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	}
	ASSERT_EQ(0, do_rts(&self->p));
}

/* An attribute a transition does not take: EINVAL (ib_modify_qp_is_ok). */
TEST_F(qp, attr_not_allowed_in_transition)
{
	struct ibv_qp_attr a;
	int mask;

	rc_init_attr(&a, &mask, 0);
	a.sq_psn = 5;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask | IBV_QP_SQ_PSN));
	a.timeout = 5;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask | IBV_QP_TIMEOUT));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
	ASSERT_EQ(0, do_init(&self->p));
	rc_rtr_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask | IBV_QP_SQ_PSN));
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rtr(&self->p));
	rc_rts_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask | IBV_QP_RQ_PSN));
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask | IBV_QP_DEST_QPN));
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rts(&self->p));
	/* RTS->RTS takes only a few attributes: a new SQ PSN is not one. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 77;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	a.min_rnr_timer = 3;
	EXPECT_EQ(0, ibv_modify_qp(QP0, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
}

TEST_F(qp, illegal_transitions)
{
	struct ibv_qp_attr a;
	int mask;

	/* From RESET only INIT (and RESET, ERR). */
	rc_rts_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("RESET->RTS");
	rc_rtr_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("RESET->RTR");
	EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_SQD)) TH_LOG("RESET->SQD");
	EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_SQE)) TH_LOG("RESET->SQE");
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
	ASSERT_EQ(0, do_init(&self->p));
	rc_rts_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("INIT->RTS");
	EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_SQD)) TH_LOG("INIT->SQD");
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rtr(&self->p));
	rc_init_attr(&a, &mask, 0);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("RTR->INIT");
	EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_SQD)) TH_LOG("RTR->SQD");
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rts(&self->p));
	/* An RC QP never enters SQE by modify: that state is for UD/UC. */
	EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_SQE)) TH_LOG("RTS->SQE");
	rc_rtr_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("RTS->RTR");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
	/* From ERR only RESET (and ERR). */
	ASSERT_EQ(0, to_state(QP0, IBV_QPS_ERR));
	rc_init_attr(&a, &mask, 0);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("ERR->INIT");
	rc_rts_attr(&self->p, 0, &a, &mask);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("ERR->RTS");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(QP0));
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_ERR)) TH_LOG("ERR->ERR");
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_RESET));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
}

/* Out-of-range attribute values: EINVAL, nothing changed. These are the
 * checks mlx5_ib makes (port, P_Key index, path MTU, rd_atomic depths
 * against the caps) and ib_core's GID lookup. (PSNs of more than 24 bits
 * are masked by ib_core with a warning, not refused: not tested.)
 */
TEST_F(qp, attr_values_out_of_range)
{
	struct ibv_qp_attr a;
	int mask;

	rc_init_attr(&a, &mask, 0);
	a.port_num = 2;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("port 2");
	rc_init_attr(&a, &mask, 0);
	a.port_num = 0;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("port 0");
	rc_init_attr(&a, &mask, 0);
	a.pkey_index = 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("pkey_index 1 of 1");
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
	ASSERT_EQ(0, do_init(&self->p));

	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.path_mtu = 6;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("path_mtu 6");
	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.path_mtu = 0;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("path_mtu 0");
	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.max_dest_rd_atomic = 17;	/* max_qp_rd_atom is 16 */
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("max_dest_rd_atomic 17");
	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.ah_attr.grh.sgid_index = 127;	/* an empty entry of the GID table */
	EXPECT_NE(0, ibv_modify_qp(QP0, &a, mask)) TH_LOG("sgid_index of an empty GID");
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rtr(&self->p));

	rc_rts_attr(&self->p, 0, &a, &mask);
	a.max_rd_atomic = 17;		/* max_qp_init_rd_atom is 16 */
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("max_rd_atomic 17");
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rts(&self->p));
}

/*
 * Values too wide for their IB fields (5-bit timers, 3-bit retry counts).
 * ConnectX masks these silently; softhca validates every attribute, so they
 * are EINVAL here.
 */
TEST_F(qp, field_overflow_rejected)
{
	struct ibv_qp_attr a;
	int mask;

	ASSERT_EQ(0, do_init(&self->p));
	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.min_rnr_timer = 32;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("min_rnr_timer 32");
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rtr(&self->p));
	rc_rts_attr(&self->p, 0, &a, &mask);
	a.timeout = 32;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("timeout 32");
	rc_rts_attr(&self->p, 0, &a, &mask);
	a.retry_cnt = 8;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("retry_cnt 8");
	rc_rts_attr(&self->p, 0, &a, &mask);
	a.rnr_retry = 8;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("rnr_retry 8");
	EXPECT_EQ(IBV_QPS_RTR, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rts(&self->p));
}

/* Also softhca's (kernel.md): a 25-bit QPN, a wrong IB_QP_CUR_STATE,
 * access flags that are not rights (ON_DEMAND is taken, as on mlx5).
 */
TEST_F(qp, other_bad_attrs)
{
	struct ibv_qp_attr a;
	int mask;

	rc_init_attr(&a, &mask, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED);
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("ZERO_BASED in qp_access_flags");
	/* ...but ON_DEMAND is taken and ignored, as mlx5 does. */
	rc_init_attr(&a, &mask, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ON_DEMAND);
	EXPECT_EQ(0, ibv_modify_qp(QP0, &a, mask)) TH_LOG("ON_DEMAND in qp_access_flags");
	ASSERT_EQ(0, to_state(QP0, IBV_QPS_RESET));
	ASSERT_EQ(0, do_init(&self->p));
	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.dest_qp_num = 1 << 24;
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, mask)) TH_LOG("dest_qp_num 2^24");
	EXPECT_EQ(IBV_QPS_INIT, rc_qp_state(QP0));
	ASSERT_EQ(0, do_rtr(&self->p));
	ASSERT_EQ(0, do_rts(&self->p));
	/* ib_core takes IB_QP_CUR_STATE only from RTR, RTS, SQD, SQE and
	 * believes it; the driver must check it against the real state.
	 */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_SQD;	/* it is RTS */
	EXPECT_EQ(EINVAL, ibv_modify_qp(QP0, &a, IBV_QP_STATE | IBV_QP_CUR_STATE))
		TH_LOG("IB_QP_CUR_STATE SQD while in RTS");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
	a.cur_qp_state = IBV_QPS_RTS;
	EXPECT_EQ(0, ibv_modify_qp(QP0, &a, IBV_QP_STATE | IBV_QP_CUR_STATE))
		TH_LOG("IB_QP_CUR_STATE RTS while in RTS");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
}

TEST_F(qp, query_returns_what_was_set)
{
	struct rc_end *e = &self->p.e[0], *peer = &self->p.e[1];
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;

	rc_init_attr(&a, &mask, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ASSERT_EQ(0, ibv_modify_qp(QP0, &a, mask));
	ASSERT_EQ(0, ibv_query_qp(QP0, &q, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				  IBV_QP_PORT | IBV_QP_PKEY_INDEX, &qi));
	EXPECT_EQ(IBV_QPS_INIT, q.qp_state);
	EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, q.qp_access_flags);
	EXPECT_EQ(1, q.port_num);
	EXPECT_EQ(0, q.pkey_index);

	rc_rtr_attr(&self->p, 0, &a, &mask);
	a.path_mtu = IBV_MTU_512;
	a.rq_psn = 0x654321;
	a.min_rnr_timer = 9;
	a.max_dest_rd_atomic = 5;
	a.ah_attr.grh.hop_limit = 17;	/* ib_core replaces it: see below */
	ASSERT_EQ(0, ibv_modify_qp(QP0, &a, mask));
	rc_rts_attr(&self->p, 0, &a, &mask);
	a.sq_psn = 0x123456;
	a.timeout = 17;
	a.retry_cnt = 5;
	a.rnr_retry = 3;
	a.max_rd_atomic = 3;
	ASSERT_EQ(0, ibv_modify_qp(QP0, &a, mask));

	memset(&q, 0xa5, sizeof(q));
	memset(&qi, 0xa5, sizeof(qi));
	ASSERT_EQ(0, ibv_query_qp(QP0, &q, IBV_QP_STATE | IBV_QP_CUR_STATE |
				  IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
				  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_MIN_RNR_TIMER |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MAX_QP_RD_ATOMIC |
				  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_CAP, &qi));
	EXPECT_EQ(IBV_QPS_RTS, q.qp_state);
	EXPECT_EQ(IBV_QPS_RTS, q.cur_qp_state);
	EXPECT_EQ(0, q.sq_draining);
	EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, q.qp_access_flags);
	EXPECT_EQ(1, q.port_num);
	EXPECT_EQ(0, q.pkey_index);
	EXPECT_EQ(IBV_MTU_512, q.path_mtu);
	EXPECT_EQ(peer->qp->qp_num, q.dest_qp_num);
	EXPECT_EQ(0x654321, q.rq_psn);
	EXPECT_EQ(0x123456, q.sq_psn);
	EXPECT_EQ(9, q.min_rnr_timer);
	EXPECT_EQ(5, q.max_dest_rd_atomic);
	EXPECT_EQ(3, q.max_rd_atomic);
	EXPECT_EQ(17, q.timeout);
	EXPECT_EQ(5, q.retry_cnt);
	EXPECT_EQ(3, q.rnr_retry);
	EXPECT_EQ(1, q.ah_attr.is_global);
	EXPECT_EQ(1, q.ah_attr.port_num);
	EXPECT_EQ(e->gid_index, q.ah_attr.grh.sgid_index);
	/* For RoCE, ib_core (ib_resolve_eth_dmac) sets the hop limit from the
	 * route to the destination: the IPv4 default TTL.
	 */
	EXPECT_EQ(64, q.ah_attr.grh.hop_limit);
	EXPECT_EQ(0, memcmp(&peer->gid, &q.ah_attr.grh.dgid, sizeof(peer->gid)));
	EXPECT_EQ(e->cap.max_send_wr, q.cap.max_send_wr);
	EXPECT_EQ(e->cap.max_recv_wr, q.cap.max_recv_wr);
	EXPECT_EQ(e->cap.max_send_sge, q.cap.max_send_sge);
	EXPECT_EQ(e->cap.max_recv_sge, q.cap.max_recv_sge);
	EXPECT_EQ(e->cap.max_inline_data, q.cap.max_inline_data);
	EXPECT_EQ(IBV_QPT_RC, qi.qp_type);
	EXPECT_EQ(e->scq, qi.send_cq);
	EXPECT_EQ(e->rcq, qi.recv_cq);
	EXPECT_EQ(0, qi.sq_sig_all);
	EXPECT_EQ(e->cap.max_send_wr, qi.cap.max_send_wr);
	EXPECT_EQ(e->cap.max_inline_data, qi.cap.max_inline_data);

	/* RTS->RTS changes what it may. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC;
	a.min_rnr_timer = 20;
	ASSERT_EQ(0, ibv_modify_qp(QP0, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
				   IBV_QP_MIN_RNR_TIMER));
	ASSERT_EQ(0, ibv_query_qp(QP0, &q, IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
				  IBV_QP_SQ_PSN, &qi));
	EXPECT_EQ(IBV_ACCESS_REMOTE_ATOMIC, q.qp_access_flags);
	EXPECT_EQ(20, q.min_rnr_timer);
	EXPECT_EQ(0x123456, q.sq_psn);
}

TEST_F(qp, init_to_init)
{
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask;

	ASSERT_EQ(0, do_init(&self->p));
	rc_init_attr(&a, &mask, IBV_ACCESS_REMOTE_READ);
	EXPECT_EQ(0, ibv_modify_qp(QP0, &a, mask));
	ASSERT_EQ(0, ibv_query_qp(QP0, &q, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &qi));
	EXPECT_EQ(IBV_QPS_INIT, q.qp_state);
	EXPECT_EQ(IBV_ACCESS_REMOTE_READ, q.qp_access_flags);
	/* INIT->INIT with nothing but the state is fine too. */
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_INIT));
}

TEST_F(qp, sqd_and_back)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;

	ASSERT_EQ(0, rc_pair_connect(&self->p)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, to_state(QP0, IBV_QPS_SQD));
	/* Nothing outstanding: drained at once. */
	ASSERT_EQ(0, ibv_query_qp(QP0, &q, IBV_QP_STATE, &qi));
	EXPECT_EQ(IBV_QPS_SQD, q.qp_state);
	EXPECT_EQ(0, q.sq_draining);
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_SQD)) TH_LOG("SQD->SQD");
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_RTS)) TH_LOG("SQD->RTS");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
	/* and traffic flows again */
	ASSERT_EQ(0, rc_post_recv(b->qp, 1, b->buf, 64, b->mr->lkey));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 2, a->buf, 64, a->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_SQD));
	EXPECT_EQ(0, to_state(QP0, IBV_QPS_ERR)) TH_LOG("SQD->ERR");
	EXPECT_EQ(IBV_QPS_ERR, rc_qp_state(QP0));
}

TEST_F(qp, err_and_reset_from_every_state)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_RESET, IBV_QPS_INIT,
		IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD };

	for (unsigned int i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		for (int to_err = 0; to_err < 2; to_err++) {
			enum ibv_qp_state want = to_err ? IBV_QPS_ERR : IBV_QPS_RESET;

			ASSERT_EQ(0, to_state(QP0, IBV_QPS_RESET));
			if (states[i] >= IBV_QPS_INIT) {
				ASSERT_EQ(0, do_init(&self->p));
			}
			if (states[i] >= IBV_QPS_RTR) {
				ASSERT_EQ(0, do_rtr(&self->p));
			}
			if (states[i] >= IBV_QPS_RTS) {
				ASSERT_EQ(0, do_rts(&self->p));
			}
			if (states[i] == IBV_QPS_SQD) {
				ASSERT_EQ(0, to_state(QP0, IBV_QPS_SQD));
			}
			ASSERT_EQ(states[i], rc_qp_state(QP0));
			if (states[i] == IBV_QPS_RESET && to_err) {
				/* ib_core's table has no RESET->ERR */
				EXPECT_EQ(EINVAL, to_state(QP0, IBV_QPS_ERR)) TH_LOG("RESET->ERR");
				EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(QP0));
				continue;
			}
			EXPECT_EQ(0, to_state(QP0, want))
				TH_LOG("state %d -> %d", states[i], want);
			EXPECT_EQ(want, rc_qp_state(QP0));
		}
	}
	/* ...and from ERR back to RESET, then up again. */
	ASSERT_EQ(0, to_state(QP0, IBV_QPS_ERR));
	ASSERT_EQ(0, to_state(QP0, IBV_QPS_RESET));
	ASSERT_EQ(0, do_init(&self->p));
	ASSERT_EQ(0, do_rtr(&self->p));
	ASSERT_EQ(0, do_rts(&self->p));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(QP0));
}

/* Receives may be posted in INIT and RTR; they are used once connected. */
TEST_F(qp, recv_posted_before_rts)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	struct rc_wc_want w = { .wr_id = 5, .status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RECV, .byte_len = 100 };
	struct ibv_wc wc;
	struct ibv_qp_attr at;
	int mask;

	rc_init_attr(&at, &mask, self->p.cfg.qp_access);
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &at, mask));
	ASSERT_EQ(0, rc_post_recv(b->qp, 5, b->buf, 4096, b->mr->lkey))
		TH_LOG("post_recv in INIT");
	rc_rtr_attr(&self->p, 1, &at, &mask);
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &at, mask));
	ASSERT_EQ(0, rc_post_recv(b->qp, 6, b->buf + 4096, 4096, b->mr->lkey))
		TH_LOG("post_recv in RTR");
	rc_rts_attr(&self->p, 1, &at, &mask);
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &at, mask));
	ASSERT_EQ(0, rc_end_connect(&self->p, 0)) TH_LOG("%s", rc_err);
	rc_fill(a->buf, 100, 1);
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 7, a->buf, 100, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, 5000))
		TH_LOG("%s; sender QP state %d, sender CQ: %d", rc_err, rc_qp_state(a->qp),
		       rc_poll(a->scq, &wc, 1, 0));
	w.qp_num = b->qp->qp_num;
	w.src_qp = a->qp->qp_num;
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%s", rc_err);
	EXPECT_EQ(-1, rc_check_fill(b->buf, 100, 1));
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, 5000)) TH_LOG("%s", rc_err);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* A third QP, taken through @state, with a receive outstanding, destroyed. */
static int destroy_in(struct rc_pair *p, enum ibv_qp_state state, long *qps_during)
{
	struct rc_end *e = &p->e[0];
	struct ibv_qp_init_attr ia = { .send_cq = e->scq, .recv_cq = e->rcq,
		.qp_type = IBV_QPT_RC, .cap = { 8, 8, 1, 1, 0 } };
	struct ibv_qp *keep = e->qp, *qp = ibv_create_qp(e->pd, &ia);
	int ret = 0;

	if (!qp)
		return -errno;
	e->qp = qp;	/* do_init() and friends move e[0]'s QP */
	if (state != IBV_QPS_RESET)
		ret = do_init(p);
	if (!ret && state != IBV_QPS_RESET && state != IBV_QPS_INIT && state != IBV_QPS_ERR)
		ret = do_rtr(p);
	if (!ret && (state == IBV_QPS_RTS || state == IBV_QPS_SQD))
		ret = do_rts(p);
	if (!ret && (state == IBV_QPS_SQD || state == IBV_QPS_ERR))
		ret = to_state(qp, state);
	e->qp = keep;
	if (!ret && state != IBV_QPS_RESET)
		ret = rc_post_recv(qp, 1, e->buf, 64, e->mr->lkey);
	*qps_during = res_count("shca0", "qp");
	if (ret) {
		ibv_destroy_qp(qp);
		return -ret;
	}
	return ibv_destroy_qp(qp);
}

TEST_F(qp, destroy_in_every_state)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_RESET, IBV_QPS_INIT,
		IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR };
	long qps = res_count("shca0", "qp"), during;

	for (unsigned int i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		EXPECT_EQ(0, destroy_in(&self->p, states[i], &during)) TH_LOG("state %d", states[i]);
		EXPECT_EQ(qps + 1, during);
		EXPECT_EQ(qps, res_count("shca0", "qp"));
	}
}

TEST_HARNESS_MAIN
