// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions over huge pages (issue 15 item 6): hugetlbfs pages
 * (MAP_HUGETLB, 2 MiB; the test reserves them and gives them back) and
 * transparent huge pages (an aligned anonymous range with MADV_HUGEPAGE,
 * AnonHugePages checked in smaps). The MKey's translation is per 4 KiB
 * page whatever backs it, so what is checked is that every byte lands
 * where it should across the huge page boundaries: an RDMA WRITE of a
 * little over 4 MiB from an unaligned offset of one huge-page MR to an
 * unaligned offset of another (crossing two boundaries on each side), a
 * READ back to a third offset, a SEND of 1 MiB + 3 bytes into a receive
 * that straddles a boundary; every byte compared, and the bytes around
 * each target range (canaries) unchanged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"

#define HPAGE		(2UL << 20)
#define REGION		(4 * HPAGE)	/* per end */
#define XFER		(4 * 1024 * 1024 + 4097)
#define SRC_OFF		(HPAGE / 2 - 123)
#define DST_OFF		(HPAGE - 777)
#define BACK_OFF	(3 * HPAGE / 2 + 5)	/* READ back into A */
#define SEND_LEN	(1024 * 1024 + 3)
#define CANARY		4096
#define EV_MS		20000

struct huge_mem {
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
};

FIXTURE(huge) {
	struct rc_pair p;
	long nr_saved;			/* nr_hugepages before, or -1 */
};

static long read_long(const char *path)
{
	char line[64];

	return read_line(path, line, sizeof(line)) ? -1 : atol(line);
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%ld\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

FIXTURE_SETUP(huge)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	c.max_send_sge = 1;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->nr_saved = -1;
}

FIXTURE_TEARDOWN(huge)
{
	rc_pair_destroy(&self->p);
	if (self->nr_saved >= 0)
		write_long("/proc/sys/vm/nr_hugepages", self->nr_saved);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

/* The byte at @i of the pattern @seed: no period a page size divides. */
static uint8_t pat(size_t i, unsigned int seed)
{
	return (uint8_t)(i * 131 + (i >> 12) * 7 + seed);
}

static void fill(uint8_t *b, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(i, seed);
}

/* The first index where b differs from the pattern, or -1. */
static long differs(const uint8_t *b, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(i, seed))
			return (long)i;
	return -1;
}

static long not_all(const uint8_t *b, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != v)
			return (long)i;
	return -1;
}

/* One signaled WR of A: its completion status, or -1 if none came. */
static int a_post(struct rc_pair *p, enum ibv_wr_opcode op, void *addr,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_wc wc;

	if (rc_post_send(p->e[0].qp, op, 9, addr, len, lkey, raddr, rkey,
			 IBV_SEND_SIGNALED, 0))
		return -1;
	if (rc_poll(p->e[0].scq, &wc, 1, EV_MS) != 1)
		return -1;
	return wc.status;
}

/*
 * The transfers of the file's comment between @a (A's) and @b (B's), both
 * registered, REGION bytes each.
 */
static void transfers(struct __test_metadata *_metadata, struct rc_pair *p,
		      struct huge_mem *a, struct huge_mem *b)
{
	struct ibv_wc wc;
	long at;

	fill(a->buf, REGION, 1);
	memset(b->buf, 0xee, REGION);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  a_post(p, IBV_WR_RDMA_WRITE, a->buf + SRC_OFF, XFER,
			 a->mr->lkey, (uintptr_t)(b->buf + DST_OFF),
			 b->mr->rkey));
	/* The source was filled from index 0: compare with its offset. */
	at = -1;
	for (size_t i = 0; at < 0 && i < XFER; i++)
		if (b->buf[DST_OFF + i] != pat(SRC_OFF + i, 1))
			at = (long)i;
	EXPECT_EQ(-1, at) TH_LOG("WRITE: byte %ld of %d differs", at, XFER);
	EXPECT_EQ(-1, not_all(b->buf + DST_OFF - CANARY, CANARY, 0xee));
	EXPECT_EQ(-1, not_all(b->buf + DST_OFF + XFER, CANARY, 0xee));

	/* READ it back to another offset of A. */
	memset(a->buf + BACK_OFF - CANARY, 0x5a, XFER + 2 * CANARY);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  a_post(p, IBV_WR_RDMA_READ, a->buf + BACK_OFF, XFER,
			 a->mr->lkey, (uintptr_t)(b->buf + DST_OFF),
			 b->mr->rkey));
	at = -1;
	for (size_t i = 0; at < 0 && i < XFER; i++)
		if (a->buf[BACK_OFF + i] != pat(SRC_OFF + i, 1))
			at = (long)i;
	EXPECT_EQ(-1, at) TH_LOG("READ: byte %ld of %d differs", at, XFER);
	EXPECT_EQ(-1, not_all(a->buf + BACK_OFF - CANARY, CANARY, 0x5a));
	EXPECT_EQ(-1, not_all(a->buf + BACK_OFF + XFER, CANARY, 0x5a));

	/* A SEND into a receive across B's second boundary. */
	fill(a->buf, SEND_LEN, 9);
	memset(b->buf + 2 * HPAGE - SEND_LEN / 2 - CANARY, 0x77,
	       SEND_LEN + 2 * CANARY);
	ASSERT_EQ(0, rc_post_recv(p->e[1].qp, 4,
				  b->buf + 2 * HPAGE - SEND_LEN / 2, SEND_LEN,
				  b->mr->lkey));
	ASSERT_EQ(IBV_WC_SUCCESS,
		  a_post(p, IBV_WR_SEND, a->buf, SEND_LEN, a->mr->lkey, 0, 0));
	ASSERT_EQ(1, rc_poll(p->e[1].rcq, &wc, 1, EV_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(4, wc.wr_id);
	EXPECT_EQ(SEND_LEN, wc.byte_len);
	EXPECT_EQ(-1, differs(b->buf + 2 * HPAGE - SEND_LEN / 2, SEND_LEN, 9));
	EXPECT_EQ(-1, not_all(b->buf + 2 * HPAGE - SEND_LEN / 2 - CANARY,
			      CANARY, 0x77));
	EXPECT_EQ(-1, not_all(b->buf + 2 * HPAGE - SEND_LEN / 2 + SEND_LEN,
			      CANARY, 0x77));
}

static int reg(struct huge_mem *m, struct ibv_pd *pd)
{
	m->mr = ibv_reg_mr(pd, m->buf, m->len, RC_ACCESS_ALL);
	return m->mr ? 0 : -errno;
}

static void unreg(struct huge_mem *m)
{
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->buf && m->buf != MAP_FAILED)
		munmap(m->buf, m->len);
}

TEST_F(huge, hugetlb_pages)
{
	struct huge_mem a = { .len = REGION }, b = { .len = REGION };
	long nr = read_long("/proc/sys/vm/nr_hugepages");

	if (read_long("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") < 0)
		SKIP(return, "no 2 MiB hugetlb pages in this kernel");
	if (nr < 2 * REGION / HPAGE) {
		self->nr_saved = nr;
		ASSERT_EQ(0, write_long("/proc/sys/vm/nr_hugepages",
					nr + 2 * REGION / HPAGE));
	}
	a.buf = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	b.buf = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (a.buf == MAP_FAILED || b.buf == MAP_FAILED) {
		unreg(&a);
		unreg(&b);
		SKIP(return, "no hugetlb pages to be had: %s", strerror(errno));
	}
	/* Each starts a huge page: the offsets above cross boundaries. */
	ASSERT_EQ(0, (uintptr_t)a.buf % HPAGE);
	ASSERT_EQ(0, (uintptr_t)b.buf % HPAGE);
	ASSERT_EQ(0, reg(&a, A->pd)) TH_LOG("reg_mr hugetlb: %s", strerror(errno));
	ASSERT_EQ(0, reg(&b, B->pd)) TH_LOG("reg_mr hugetlb: %s", strerror(errno));
	EXPECT_EQ(REGION, a.mr->length);
	transfers(_metadata, &self->p, &a, &b);
	unreg(&a);
	unreg(&b);
}

/* AnonHugePages of the smaps entry that starts at @addr, in kB, or -1. */
static long anon_huge_kb(const void *addr)
{
	char line[256], want[32];
	bool in = false;
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, want, strlen(want));
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* An anonymous range of @len at a huge page boundary, THP asked for. */
static uint8_t *thp_map(size_t len)
{
	uint8_t *raw = mmap(NULL, len + HPAGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *p;

	if (raw == MAP_FAILED)
		return MAP_FAILED;
	p = (uint8_t *)(((uintptr_t)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + len, raw + HPAGE - p);
	madvise(p, len, MADV_HUGEPAGE);
	memset(p, 0, len);
	return p;
}

TEST_F(huge, transparent_huge_pages)
{
	struct huge_mem a = { .len = REGION }, b = { .len = REGION };
	char mode[128];

	if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", mode,
		      sizeof(mode)) || strstr(mode, "[never]"))
		SKIP(return, "THP off in this kernel (%s)", mode);
	a.buf = thp_map(REGION);
	b.buf = thp_map(REGION);
	ASSERT_NE(MAP_FAILED, a.buf);
	ASSERT_NE(MAP_FAILED, b.buf);
	if (anon_huge_kb(a.buf) <= 0 || anon_huge_kb(b.buf) <= 0) {
		unreg(&a);
		unreg(&b);
		SKIP(return, "the kernel gave no huge page (AnonHugePages %ld, %ld kB)",
		     anon_huge_kb(a.buf), anon_huge_kb(b.buf));
	}
	ASSERT_EQ(0, reg(&a, A->pd)) TH_LOG("reg_mr THP: %s", strerror(errno));
	ASSERT_EQ(0, reg(&b, B->pd)) TH_LOG("reg_mr THP: %s", strerror(errno));
	transfers(_metadata, &self->p, &a, &b);
	/* Registered and written, still huge: the MR split nothing. */
	EXPECT_LT(0, anon_huge_kb(a.buf));
	unreg(&a);
	unreg(&b);
}

TEST_HARNESS_MAIN
