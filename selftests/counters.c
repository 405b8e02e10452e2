// SPDX-License-Identifier: GPL-2.0
/*
 * Hardware counters and driver details, read with iproute2's `rdma` as a
 * user would (issue 11 item 7):
 * - `rdma statistic show link DEV/1`: known traffic (SENDs, WRITEs, READs,
 *   atomics, both ways) moves the request and byte counters by exactly
 *   that, on the device of the side that did it (one device, or shca0 and
 *   shca1); an RNR situation, transport retries, remote access, length,
 *   remote operation and local protection errors, flushes and a CQ
 *   overrun move exactly their counters and nothing else; wake-up calls
 *   count on the device that made them, engine back-offs as the engine's;
 * - `rdma statistic qp bind/unbind` and `set ... auto type on`: a bound
 *   QP's counter counts that QP's traffic only, from the moment it was
 *   bound; the port's totals stay the sum of everything, also after the
 *   counter is gone;
 * - `rdma -dd res show qp|cq|mr`: the HCA's producer and consumer indexes,
 *   CQNs, counter set, what the engine waits for (RNR, ACK timeout), the
 *   CQ's EQ, indexes, arm state and overrun, the MKey's translation.
 * Every check compares a number with what the test did, so a counter one
 * off fails it. The test reads the provider's CQN and PD number through
 * user/softhca.h (white box) to match them with the HCA's.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rdmanl.h"
#include "util.h"
#include "../user/softhca.h"

#define PARAM		"/sys/module/softhca/parameters/"

/* ---- `rdma` output: lines of "key value" tokens ------------------------- */

#define RD_TOKS		160
#define RD_LINES	64

struct rd_line {
	char *tok[RD_TOKS];
	int n;
};

struct rd_out {
	char buf[1 << 16];
	struct rd_line line[RD_LINES];
	int n;
};

/* Run an `rdma` command line; its output split into lines and tokens. */
static int rd_run(struct rd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int rd_run(struct rd_out *o, const char *fmt, ...)
{
	char cmd[512], *p, *save = NULL;
	size_t len = 0, n;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (len < sizeof(o->buf) - 1 &&
	       (n = fread(o->buf + len, 1, sizeof(o->buf) - 1 - len, f)) > 0)
		len += n;
	o->buf[len] = 0;
	if (pclose(f))
		return -EIO;
	o->n = 0;
	for (p = strtok_r(o->buf, "\n", &save); p && o->n < RD_LINES;
	     p = strtok_r(NULL, "\n", &save)) {
		struct rd_line *l = &o->line[o->n++];
		char *t, *s2 = NULL;

		l->n = 0;
		for (t = strtok_r(p, " \t", &s2); t && l->n < RD_TOKS;
		     t = strtok_r(NULL, " \t", &s2))
			l->tok[l->n++] = t;
	}
	return 0;
}

/* The token after @key on @l, or NULL. */
static const char *rd_str(const struct rd_line *l, const char *key)
{
	for (int i = 0; i + 1 < l->n; i++)
		if (!strcmp(l->tok[i], key))
			return l->tok[i + 1];
	return NULL;
}

/* The number after @key (decimal or 0x hex), or UINT64_MAX if none. */
static uint64_t rd_u64(const struct rd_line *l, const char *key)
{
	const char *v = l ? rd_str(l, key) : NULL;
	char *end;
	uint64_t x;

	if (!v)
		return UINT64_MAX;
	x = strtoull(v, &end, 0);
	return *end ? UINT64_MAX : x;
}

/* The first line whose @key is @val, or NULL. */
static struct rd_line *rd_find(struct rd_out *o, const char *key, uint64_t val)
{
	for (int i = 0; i < o->n; i++)
		if (rd_u64(&o->line[i], key) == val)
			return &o->line[i];
	return NULL;
}

static struct rd_out *rd_alloc(void)
{
	return calloc(1, sizeof(struct rd_out));
}

/* ---- port counters ------------------------------------------------------ */

enum stat {
	TX_REQ, TX_BYTES, RX_REQ, RX_BYTES, TX_RETRIES, RNR_SENT, RNR_RCVD,
	ACK_TIMEOUTS, E_LOC_LEN, E_LOC_QP_OP, E_LOC_PROT, E_FLUSH, E_REM_INV_REQ,
	E_REM_ACCESS, E_REM_OP, E_RETRY_EXC, E_RNR_RETRY_EXC, CQ_OVERRUNS,
	WAKEUPS, BACKOFFS, NSTATS,
	/* The counts of one QP's traffic: a Q counter has these. */
	NQSTATS = CQ_OVERRUNS,
};

static const char *const stat_names[NSTATS] = {
	"tx_requests", "tx_bytes", "rx_requests", "rx_bytes", "tx_retries",
	"rnr_naks_sent", "rnr_naks_rcvd", "local_ack_timeouts",
	"cqe_loc_len_err", "cqe_loc_qp_op_err", "cqe_loc_prot_err",
	"cqe_wr_flush_err", "cqe_rem_inv_req_err", "cqe_rem_access_err",
	"cqe_rem_op_err", "cqe_retry_exc_err", "cqe_rnr_retry_exc_err",
	"cq_overruns", "wakeup_calls", "engine_backoffs",
};

struct stats {
	uint64_t v[NSTATS];
};

/* Every counter of @l; -ENOENT (and its name in rc_err) if one is missing. */
static int stats_of(const struct rd_line *l, struct stats *s, int n)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < n; i++) {
		s->v[i] = rd_u64(l, stat_names[i]);
		if (s->v[i] == UINT64_MAX) {
			snprintf(rc_err, sizeof(rc_err), "no %s", stat_names[i]);
			return -ENOENT;
		}
	}
	return 0;
}

/* `rdma statistic show link DEV/1` */
static int port_stats(const char *dev, struct stats *s)
{
	struct rd_out *o = rd_alloc();
	int ret = -ENOMEM;

	if (o) {
		ret = rd_run(o, "rdma statistic show link %s/1", dev);
		if (!ret)
			ret = o->n == 1 ? stats_of(&o->line[0], s, NSTATS) : -EINVAL;
		free(o);
	}
	return ret;
}

/* One expected delta; a list ends at stat -1. */
struct want {
	int stat;
	uint64_t delta;
};

#define WANT(...)	((const struct want[]){ __VA_ARGS__, { -1, 0 } })
#define NONE		WANT({ -1, 0 })

static uint64_t want_of(const struct want *w, int stat)
{
	uint64_t d = 0;

	for (; w && w->stat >= 0; w++)
		if (w->stat == stat)
			d += w->delta;
	return d;
}

/*
 * b - a is exactly @w for every counter of a QP's traffic and CQ overruns
 * (unlisted: 0); wake-up calls and back-offs are the engine's business and
 * left out (see their own tests).
 */
static int check_deltas(const char *what, const struct stats *a,
			const struct stats *b, const struct want *w,
			const struct want *w2)
{
	int bad = 0;
	size_t n = 0;

	rc_err[0] = 0;
	for (int i = 0; i <= CQ_OVERRUNS; i++) {
		uint64_t want = want_of(w, i) + want_of(w2, i);
		uint64_t got = b->v[i] - a->v[i];

		if (got == want)
			continue;
		bad = 1;
		if (n < sizeof(rc_err))
			n += snprintf(rc_err + n, sizeof(rc_err) - n,
				      "%s %s moved %llu, want %llu; ", what,
				      stat_names[i], (unsigned long long)got,
				      (unsigned long long)want);
	}
	return bad;
}

/* ---- module parameters ------------------------------------------------- */

static long read_long(const char *path)
{
	char buf[64];

	if (read_line(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static int write_param(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), PARAM "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* ---- the fixture: a pair, and the counters of its devices before ------- */

FIXTURE(cnt) {
	struct rc_pair p;
	struct stats base[2];		/* of each end's device */
};

FIXTURE_VARIANT(cnt) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(cnt, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(cnt, cross_dev) { .topo = RC_CROSS_DEV };

RC_SHCA1_GUARD()

FIXTURE_SETUP(cnt)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.buf_size = 256 << 10;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(cnt)
{
	rc_pair_destroy(&self->p);
	/* Whatever a test did, the next one finds the engine polling. */
	write_param("engine_poll", "1");
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

static bool one_dev(struct rc_pair *p)
{
	return !strcmp(p->e[0].dev, p->e[1].dev);
}

/* The counters of both ends' devices, into s[0] and s[1]. */
static int pair_stats(struct rc_pair *p, struct stats s[2])
{
	int ret = port_stats(p->e[0].dev, &s[0]);

	if (!ret)
		ret = port_stats(p->e[1].dev, &s[1]);
	return ret;
}

static void snap(struct __test_metadata *_metadata, struct rc_pair *p,
		 struct stats base[2])
{
	ASSERT_EQ(0, pair_stats(p, base)) TH_LOG("%s", rc_err);
}

/*
 * The counters moved by exactly @wa (A's side) and @wb (B's side) since
 * @base: on one device both, else each on its end's device.
 */
static void expect_moved(struct __test_metadata *_metadata, struct rc_pair *p,
			 const struct stats base[2], const struct want *wa,
			 const struct want *wb)
{
	struct stats now[2];

	ASSERT_EQ(0, pair_stats(p, now)) TH_LOG("%s", rc_err);
	if (one_dev(p)) {
		EXPECT_EQ(0, check_deltas(p->e[0].dev, &base[0], &now[0], wa, wb))
			TH_LOG("%s", rc_err);
		return;
	}
	EXPECT_EQ(0, check_deltas(p->e[0].dev, &base[0], &now[0], wa, NULL))
		TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas(p->e[1].dev, &base[1], &now[1], wb, NULL))
		TH_LOG("%s", rc_err);
}

/* One WR from @s's QP, signaled, and its successful completion. */
static void do_wr(struct __test_metadata *_metadata, struct rc_end *s,
		  struct rc_end *r, enum ibv_wr_opcode op, uint32_t len,
		  enum ibv_wc_opcode wc_op)
{
	struct rc_wc_want w = rc_want_req(op, wc_op, len, s);

	ASSERT_EQ(0, rc_post_send(s->qp, op, op, s->buf, len, s->mr->lkey,
				  (uintptr_t)r->buf + 65536, r->mr->rkey,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_wc(_metadata, s->scq, &w);
}

static void do_send(struct __test_metadata *_metadata, struct rc_end *s,
		    struct rc_end *r, uint32_t len)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, rc_post_recv(r->qp, 1, r->buf, 65536, r->mr->lkey));
	do_wr(_metadata, s, r, IBV_WR_SEND, len, IBV_WC_SEND);
	ASSERT_EQ(1, rc_poll(r->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
}

static void do_atomic(struct __test_metadata *_metadata, struct rc_end *s,
		      struct rc_end *r, enum ibv_wr_opcode op)
{
	struct rc_wc_want w = rc_want_req(7, op == IBV_WR_ATOMIC_CMP_AND_SWP ?
					  IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD, 8, s);

	ASSERT_EQ(0, rc_post_atomic(s->qp, op, 7, (uint64_t *)s->buf, s->mr->lkey,
				    (uintptr_t)r->buf, r->mr->rkey, 1, 2,
				    IBV_SEND_SIGNALED));
	rc_expect_wc(_metadata, s->scq, &w);
}

/* ---- traffic ------------------------------------------------------------ */

/* sysfs hw_counters say what `rdma statistic` says (after their 10 ms cache). */
static void expect_sysfs_is_rdma(struct __test_metadata *_metadata, const char *dev)
{
	struct stats s;
	char path[128], v[32];

	usleep(20000);
	ASSERT_EQ(0, port_stats(dev, &s)) TH_LOG("%s", rc_err);
	for (int i = 0; i < NQSTATS; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev,
			 stat_names[i]);
		ASSERT_EQ(0, read_line(path, v, sizeof(v))) TH_LOG("%s", path);
		EXPECT_EQ(s.v[i], strtoull(v, NULL, 10)) TH_LOG("%s", path);
	}
}

/*
 * A: 10 SENDs of 1000 bytes, 7 WRITEs of 3000, 5 READs of 2048, 2
 * FETCH_ADDs and a CMP_SWP; B: 2 SENDs of 300. Requests and payload count
 * on the side that sent or received them: a READ's or an atomic's data is
 * the responder's tx and the requester's rx.
 */
TEST_F(cnt, traffic_counts_requests_and_bytes)
{
	int i;

	snap(_metadata, &self->p, self->base);
	for (i = 0; i < 10; i++)
		do_send(_metadata, A, B, 1000);
	for (i = 0; i < 7; i++)
		do_wr(_metadata, A, B, IBV_WR_RDMA_WRITE, 3000, IBV_WC_RDMA_WRITE);
	for (i = 0; i < 5; i++)
		do_wr(_metadata, A, B, IBV_WR_RDMA_READ, 2048, IBV_WC_RDMA_READ);
	do_atomic(_metadata, A, B, IBV_WR_ATOMIC_FETCH_AND_ADD);
	do_atomic(_metadata, A, B, IBV_WR_ATOMIC_FETCH_AND_ADD);
	do_atomic(_metadata, A, B, IBV_WR_ATOMIC_CMP_AND_SWP);
	for (i = 0; i < 2; i++)
		do_send(_metadata, B, A, 300);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 10 + 7 + 5 + 3 }, { TX_BYTES, 10 * 1000 + 7 * 3000 },
			  { RX_BYTES, 5 * 2048 + 3 * 8 },
			  { RX_REQ, 2 }, { RX_BYTES, 2 * 300 }),
		     WANT({ RX_REQ, 10 + 7 + 5 + 3 }, { RX_BYTES, 10 * 1000 + 7 * 3000 },
			  { TX_BYTES, 5 * 2048 + 3 * 8 },
			  { TX_REQ, 2 }, { TX_BYTES, 2 * 300 }));
	expect_sysfs_is_rdma(_metadata, A->dev);
}

/* ---- retries ------------------------------------------------------------ */

static void rnr2(struct rc_cfg *c)
{
	c->rnr_retry[0] = 2;
	c->min_rnr_timer[1] = 1;	/* 10 us */
}

/*
 * No receive at B: the SEND goes out 3 times (2 retries), B answers each
 * with an RNR NAK, then RNR_RETRY_EXC_ERR; the SEND behind it is flushed.
 * Each try carries the payload; none is placed.
 */
TEST_F(cnt, rnr_naks_and_retries)
{
	rc_reopen(_metadata, &self->p, rnr2);
	snap(_metadata, &self->p, self->base);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, A->scq, 1, IBV_WC_RNR_RETRY_EXC_ERR, A);
	rc_expect_err(_metadata, A->scq, 2, IBV_WC_WR_FLUSH_ERR, A);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 3 }, { TX_BYTES, 300 }, { TX_RETRIES, 2 },
			  { RNR_RCVD, 3 }, { E_RNR_RETRY_EXC, 1 }, { E_FLUSH, 1 }),
		     WANT({ RX_REQ, 3 }, { RNR_SENT, 3 }));
}

static void retry2(struct rc_cfg *c)
{
	c->timeout[0] = 10;	/* 4.096 us * 2^10 = 4.2 ms */
	c->retry_cnt[0] = 2;
}

/*
 * Nobody answers (B's QP is gone): the WRITE goes out 3 times, each time
 * the ACK timer expires, then RETRY_EXC_ERR; the SEND behind it is flushed.
 */
TEST_F(cnt, ack_timeouts_and_retries)
{
	rc_reopen(_metadata, &self->p, retry2);
	ASSERT_EQ(0, ibv_destroy_qp(B->qp));
	B->qp = NULL;
	snap(_metadata, &self->p, self->base);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1, A->buf, 64, A->mr->lkey,
				  (uintptr_t)B->buf, B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 64, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, A->scq, 1, IBV_WC_RETRY_EXC_ERR, A);
	rc_expect_err(_metadata, A->scq, 2, IBV_WC_WR_FLUSH_ERR, A);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 3 }, { TX_BYTES, 3 * 64 }, { TX_RETRIES, 2 },
			  { ACK_TIMEOUTS, 3 }, { E_RETRY_EXC, 1 }, { E_FLUSH, 1 }),
		     NONE);
}

/* ---- errors ------------------------------------------------------------- */

/* @n receives of @len bytes at B with @lkey. */
static void post_recvs(struct __test_metadata *_metadata, struct rc_end *r, int n,
		       uint32_t len, uint32_t lkey)
{
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, rc_post_recv(r->qp, 100 + i, r->buf, len, lkey));
}

/* @cq's next completions: @first, then @flushed flushes, then nothing. */
static void expect_errs(struct __test_metadata *_metadata, struct ibv_cq *cq,
			enum ibv_wc_status first, int flushed)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(cq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(first, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	for (int i = 0; i < flushed; i++) {
		ASSERT_EQ(1, rc_poll(cq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status) TH_LOG("%s", rc_wc_str(&wc));
	}
	rc_expect_quiet(_metadata, cq, "after the errors");
}

/*
 * A WRITE with a wrong rkey: REM_ACCESS_ERR at A, the WRITE behind it
 * flushed; B goes to ERR and its 3 receives are flushed. B took the
 * request, placed nothing.
 */
TEST_F(cnt, remote_access_error)
{
	snap(_metadata, &self->p, self->base);
	post_recvs(_metadata, B, 3, 4096, B->mr->lkey);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 1, A->buf, 256, A->mr->lkey,
				  (uintptr_t)B->buf, B->mr->rkey ^ 0x5a00,
				  IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 2, A->buf, 256, A->mr->lkey,
				  (uintptr_t)B->buf, B->mr->rkey, IBV_SEND_SIGNALED, 0));
	expect_errs(_metadata, A->scq, IBV_WC_REM_ACCESS_ERR, 1);
	expect_errs(_metadata, B->rcq, IBV_WC_WR_FLUSH_ERR, 2);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 1 }, { TX_BYTES, 256 }, { E_REM_ACCESS, 1 },
			  { E_FLUSH, 1 }),
		     WANT({ RX_REQ, 1 }, { E_FLUSH, 3 }));
}

/*
 * A SEND of 100 bytes into a 64-byte receive: LOC_LEN_ERR on that receive
 * and the one behind it flushed at B, REM_INV_REQ_ERR at A.
 */
TEST_F(cnt, length_error)
{
	snap(_metadata, &self->p, self->base);
	post_recvs(_metadata, B, 2, 64, B->mr->lkey);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	expect_errs(_metadata, A->scq, IBV_WC_REM_INV_REQ_ERR, 0);
	expect_errs(_metadata, B->rcq, IBV_WC_LOC_LEN_ERR, 1);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 1 }, { TX_BYTES, 100 }, { E_REM_INV_REQ, 1 }),
		     WANT({ RX_REQ, 1 }, { E_LOC_LEN, 1 }, { E_FLUSH, 1 }));
}

/* A receive with a wrong lkey: LOC_PROT_ERR at B, REM_OP_ERR at A. */
TEST_F(cnt, remote_operation_error)
{
	snap(_metadata, &self->p, self->base);
	post_recvs(_metadata, B, 1, 4096, B->mr->lkey ^ 0x5a00);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 100, A->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	expect_errs(_metadata, A->scq, IBV_WC_REM_OP_ERR, 0);
	expect_errs(_metadata, B->rcq, IBV_WC_LOC_PROT_ERR, 0);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 1 }, { TX_BYTES, 100 }, { E_REM_OP, 1 }),
		     WANT({ RX_REQ, 1 }, { E_LOC_PROT, 1 }));
}

/* A SEND with a wrong lkey fails before it leaves A: no request counted. */
TEST_F(cnt, local_protection_error_sends_nothing)
{
	snap(_metadata, &self->p, self->base);
	post_recvs(_metadata, B, 1, 4096, B->mr->lkey);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1, A->buf, 100,
				  A->mr->lkey ^ 0x5a00, 0, 0, IBV_SEND_SIGNALED, 0));
	expect_errs(_metadata, A->scq, IBV_WC_LOC_PROT_ERR, 0);
	expect_moved(_metadata, &self->p, self->base, WANT({ E_LOC_PROT, 1 }), NONE);
}

/* ---- the engine's counts ------------------------------------------------- */

/*
 * The engine told not to poll: each of A's 50 posts makes a wake-up call,
 * counted on A's device (posting receives rings nothing: B's device sees
 * none unless it is A's), and the device counts add up to the module's.
 */
TEST_F(cnt, wakeup_calls_count_on_the_calling_device)
{
	struct stats now[2];
	long g0, g1;
	uint64_t da, db;

	ASSERT_EQ(0, write_param("engine_poll", "0"));
	usleep(20000);
	snap(_metadata, &self->p, self->base);
	g0 = read_long(PARAM "engine_wakeups");
	for (int i = 0; i < 50; i++)
		do_send(_metadata, A, B, 8);
	g1 = read_long(PARAM "engine_wakeups");
	write_param("engine_poll", "1");
	ASSERT_EQ(0, pair_stats(&self->p, now)) TH_LOG("%s", rc_err);
	da = now[0].v[WAKEUPS] - self->base[0].v[WAKEUPS];
	db = now[1].v[WAKEUPS] - self->base[1].v[WAKEUPS];
	EXPECT_LE(50, da);
	EXPECT_GE(50 + 20, da);
	if (one_dev(&self->p)) {
		EXPECT_EQ(da, db);
		EXPECT_EQ(g1 - g0, (long)da);
	} else {
		EXPECT_EQ(0, db);
		EXPECT_EQ(g1 - g0, (long)(da + db));
	}
}

/* ---- CQ overrun ------------------------------------------------------------ */

static void tiny_cq(struct rc_cfg *c)
{
	c->cqe = 1;
}

/*
 * A send CQ of 2 entries, never polled, and 4 WRITEs: 2 CQEs fit, the
 * third overruns the CQ (A's QP to ERR, its CQE lost), the fourth is
 * flushed into the CQ in error. The CQ shows it in `rdma res show cq`.
 */
TEST_F_TIMEOUT(cnt, cq_overrun, 120)
{
	struct rd_out *o = rd_alloc();
	struct rd_line *l;
	struct stats now[2];
	uint64_t t0;

	ASSERT_NE(NULL, o);
	rc_reopen(_metadata, &self->p, tiny_cq);
	ASSERT_EQ(1, A->scq->cqe);
	snap(_metadata, &self->p, self->base);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, i, A->buf, 8,
					  A->mr->lkey, (uintptr_t)B->buf + 8 * i,
					  B->mr->rkey, IBV_SEND_SIGNALED, 0));
	ASSERT_EQ(IBV_QPS_ERR, rc_wait_qp_state(A->qp, IBV_QPS_ERR, 5000));
	/* The flush follows the move to ERR: wait for its count. */
	t0 = rc_now_us();
	do {
		ASSERT_EQ(0, pair_stats(&self->p, now)) TH_LOG("%s", rc_err);
	} while (now[0].v[E_FLUSH] == self->base[0].v[E_FLUSH] &&
		 rc_now_us() - t0 < 5000000);
	expect_moved(_metadata, &self->p, self->base,
		     WANT({ TX_REQ, 3 }, { TX_BYTES, 24 }, { E_FLUSH, 1 },
			  { CQ_OVERRUNS, 1 }),
		     WANT({ RX_REQ, 3 }, { RX_BYTES, 24 }));
	ASSERT_EQ(0, rd_run(o, "rdma -dd res show cq dev %s", A->dev));
	l = rd_find(o, "drv_hw_cqn", to_scq(A->scq)->cqn);
	ASSERT_NE(NULL, l) TH_LOG("no CQ %u in rdma res show cq", to_scq(A->scq)->cqn);
	EXPECT_EQ(1, rd_u64(l, "drv_overrun"));
	EXPECT_EQ(2, rd_u64(l, "drv_pi"));
	EXPECT_EQ(0, rd_u64(l, "drv_ci"));
	l = rd_find(o, "drv_hw_cqn", to_scq(A->rcq)->cqn);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(0, rd_u64(l, "drv_overrun"));
	free(o);
}

/* ---- per-QP counters ------------------------------------------------------ */

FIXTURE(qpc) {
	struct rc_pair p, q;
	struct rd_out *o;
	char yield_us[32];		/* engine_yield_us at the start */
};

FIXTURE_SETUP(qpc)
{
	struct rc_cfg c;

	self->o = rd_alloc();
	ASSERT_NE(NULL, self->o);
	ASSERT_EQ(0, read_line(PARAM "engine_yield_us", self->yield_us,
			       sizeof(self->yield_us)));
	rc_cfg_default(&c, RC_SAME_CTX);
	c.buf_size = 256 << 10;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, rc_pair_open(&self->q, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(qpc)
{
	rc_pair_destroy(&self->q);
	rc_pair_destroy(&self->p);
	sh("rdma statistic qp set link shca0/1 auto off");
	if (self->yield_us[0])
		write_param("engine_yield_us", self->yield_us);
	free(self->o);
}

/* Is @qpn in the list of an "LQPN: <2,3>" line? */
static bool lqpn_has(const struct rd_line *l, uint32_t qpn)
{
	const char *p;
	char *end;

	if (l->n != 2 || strcmp(l->tok[0], "LQPN:"))
		return false;
	for (p = l->tok[1] + 1; *p && *p != '>'; p = *end ? end + 1 : end) {
		if (strtoul(p, &end, 10) == qpn)
			return true;
		if (end == p)
			return false;
	}
	return false;
}

/*
 * The counter QP @qpn is bound to in `rdma statistic qp show link
 * shca0/1` (each counter's line is followed by its LQPN line): its id and
 * counts. (The lqpn filter of iproute2 6.1 finds no auto-mode counter.)
 */
static int qp_counter(struct rd_out *o, uint32_t qpn, uint64_t *cntn,
		      struct stats *s)
{
	int ret = rd_run(o, "rdma statistic qp show link shca0/1");

	if (ret)
		return ret;
	for (int i = 1; i < o->n; i++) {
		if (!lqpn_has(&o->line[i], qpn))
			continue;
		*cntn = rd_u64(&o->line[i - 1], "cntn");
		if (*cntn == UINT64_MAX)
			break;
		return stats_of(&o->line[i - 1], s, NQSTATS);
	}
	snprintf(rc_err, sizeof(rc_err), "QP %u is in no counter (%d lines)", qpn, o->n);
	return -ENOENT;
}

/* The counter set `rdma -dd res show qp` says the QP counts in. */
static uint64_t qp_set(struct rd_out *o, uint32_t qpn)
{
	if (rd_run(o, "rdma -dd res show qp link shca0/1 lqpn %u", qpn) || o->n != 1)
		return UINT64_MAX;
	return rd_u64(&o->line[0], "drv_q_counter");
}

/* Counter @id's counts in `rdma statistic qp show`, or -ENOENT if gone. */
static int counter_stats(struct rd_out *o, uint64_t id, struct stats *s)
{
	struct rd_line *l;

	if (rd_run(o, "rdma statistic qp show link shca0/1"))
		return -EIO;
	l = rd_find(o, "cntn", id);
	return l ? stats_of(l, s, NQSTATS) : -ENOENT;
}

#define P (&self->p)
#define Q (&self->q)

/*
 * P's A bound to a counter of its own: it counts A's traffic (as requester
 * and as responder) and nothing of B's or of the other pair Q, from the
 * bind on; B bound to it later adds B's traffic from then on; A unbound
 * stops counting there (the counter keeps what it had). The port counts
 * everything throughout, also after the counter is freed with P's QPs.
 */
TEST_F_TIMEOUT(qpc, bound_qp_counts_only_its_own_traffic, 120)
{
	struct stats port0, port1, c, zero = {}, before_destroy;
	struct rc_end *a = &P->e[0], *b = &P->e[1];
	uint64_t id, id2;
	int i;

	/* Traffic before the bind is not the counter's. */
	do_send(_metadata, a, b, 500);
	ASSERT_EQ(0, port_stats("shca0", &port0)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, sh("rdma statistic qp bind link shca0/1 lqpn %u", a->qp->qp_num));
	ASSERT_EQ(0, qp_counter(self->o, a->qp->qp_num, &id, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("new counter", &zero, &c, NONE, NULL)) TH_LOG("%s", rc_err);
	EXPECT_EQ(id, qp_set(self->o, a->qp->qp_num));
	EXPECT_EQ(0, qp_set(self->o, b->qp->qp_num));

	for (i = 0; i < 4; i++)
		do_send(_metadata, a, b, 1000);			/* A's tx, B's rx */
	for (i = 0; i < 3; i++)
		do_wr(_metadata, a, b, IBV_WR_RDMA_READ, 512, IBV_WC_RDMA_READ);
	do_send(_metadata, b, a, 200);				/* A's rx */
	for (i = 0; i < 5; i++)
		do_send(_metadata, &Q->e[0], &Q->e[1], 700);	/* not A's */
	ASSERT_EQ(0, qp_counter(self->o, a->qp->qp_num, &id2, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(id, id2);
	EXPECT_EQ(0, check_deltas("A's counter", &zero, &c,
				  WANT({ TX_REQ, 4 + 3 }, { TX_BYTES, 4000 },
				       { RX_BYTES, 3 * 512 + 200 }, { RX_REQ, 1 }), NULL))
		TH_LOG("%s", rc_err);
	/* The port: everything, bound or not. */
	ASSERT_EQ(0, port_stats("shca0", &port1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("shca0", &port0, &port1,
				  WANT({ TX_REQ, 4 + 3 + 1 + 5 },
				       { TX_BYTES, 4000 + 3 * 512 + 200 + 5 * 700 },
				       { RX_REQ, 4 + 3 + 1 + 5 },
				       { RX_BYTES, 4000 + 3 * 512 + 200 + 5 * 700 }), NULL))
		TH_LOG("%s", rc_err);

	/* B joins: from now on B's side counts there too. */
	ASSERT_EQ(0, sh("rdma statistic qp bind link shca0/1 lqpn %u cntn %llu",
			b->qp->qp_num, (unsigned long long)id));
	EXPECT_EQ(id, qp_set(self->o, b->qp->qp_num));
	for (i = 0; i < 2; i++)
		do_send(_metadata, a, b, 100);
	ASSERT_EQ(0, counter_stats(self->o, id, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("A+B's counter", &zero, &c,
				  WANT({ TX_REQ, 4 + 3 + 2 }, { TX_BYTES, 4000 + 200 },
				       { RX_BYTES, 3 * 512 + 200 + 200 }, { RX_REQ, 1 + 2 }),
				  NULL))
		TH_LOG("%s", rc_err);

	/* A leaves: its traffic stays counted, new traffic is only B's. */
	ASSERT_EQ(0, sh("rdma statistic qp unbind link shca0/1 cntn %llu lqpn %u",
			(unsigned long long)id, a->qp->qp_num));
	EXPECT_EQ(0, qp_set(self->o, a->qp->qp_num));
	do_send(_metadata, a, b, 50);
	ASSERT_EQ(0, counter_stats(self->o, id, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("B's counter", &zero, &c,
				  WANT({ TX_REQ, 4 + 3 + 2 }, { TX_BYTES, 4000 + 200 },
				       { RX_BYTES, 3 * 512 + 200 + 200 + 50 },
				       { RX_REQ, 1 + 2 + 1 }), NULL))
		TH_LOG("%s", rc_err);

	/* The counter goes with B; the port keeps every count. */
	ASSERT_EQ(0, port_stats("shca0", &before_destroy)) TH_LOG("%s", rc_err);
	rc_pair_destroy(P);
	EXPECT_EQ(-ENOENT, counter_stats(self->o, id, &c));
	ASSERT_EQ(0, port_stats("shca0", &port1)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("shca0 after the counter went", &before_destroy, &port1,
				  NONE, NULL))
		TH_LOG("%s", rc_err);
}

/*
 * Auto mode by QP type: both QPs of a new pair land in one new counter,
 * which counts the pair's traffic and nothing of the older pair Q.
 */
TEST_F_TIMEOUT(qpc, auto_mode_binds_new_qps, 120)
{
	struct stats c, zero = {};
	struct rc_pair r = {};
	struct rc_cfg cfg;
	uint64_t id, id2;

	rc_pair_destroy(P);
	ASSERT_EQ(0, sh("rdma statistic qp set link shca0/1 auto type on"));
	rc_cfg_default(&cfg, RC_SAME_CTX);
	cfg.buf_size = 256 << 10;
	ASSERT_EQ(0, rc_pair_open(&r, &cfg)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, qp_counter(self->o, r.e[0].qp->qp_num, &id, &c)) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, qp_counter(self->o, r.e[1].qp->qp_num, &id2, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(id, id2);
	EXPECT_EQ(id, qp_set(self->o, r.e[1].qp->qp_num));
	EXPECT_EQ(0, qp_set(self->o, Q->e[0].qp->qp_num));
	for (int i = 0; i < 3; i++)
		do_send(_metadata, &r.e[0], &r.e[1], 64);
	do_send(_metadata, &Q->e[0], &Q->e[1], 64);
	ASSERT_EQ(0, counter_stats(self->o, id, &c)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, check_deltas("auto counter", &zero, &c,
				  WANT({ TX_REQ, 3 }, { TX_BYTES, 192 }, { RX_REQ, 3 },
				       { RX_BYTES, 192 }), NULL))
		TH_LOG("%s", rc_err);
	EXPECT_EQ(0, sh("rdma statistic qp set link shca0/1 auto off"));
	rc_pair_destroy(&r);
	EXPECT_EQ(-ENOENT, counter_stats(self->o, id, &c));
}

/* A child that spins until it is killed: a task that wants a CPU. */
static pid_t hog(void)
{
	pid_t pid = fork();

	if (!pid) {
		/* Not a moment longer than the test, whatever becomes of it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			;
	}
	return pid;
}

/*
 * Two CPU hogs on the 2 vCPUs while traffic flows: the engine thread finds
 * its CPU wanted and backs off. The device's engine_backoffs moves with the
 * engine's (the module parameter), read before and after each reading of
 * the device's.
 */
TEST_F_TIMEOUT(qpc, engine_backoffs_are_the_engines, 120)
{
	long pa, p0, p1, pb;
	struct stats s0, s1;
	pid_t hogs[2];
	uint64_t t0;

	pa = read_long(PARAM "engine_backoffs");
	ASSERT_EQ(0, port_stats("shca0", &s0)) TH_LOG("%s", rc_err);
	p0 = read_long(PARAM "engine_backoffs");
	/* Back off at the first sign of a CPU wanted; traffic until it does. */
	ASSERT_EQ(0, write_param("engine_yield_us", "1"));
	for (int i = 0; i < 2; i++)
		ASSERT_LT(0, hogs[i] = hog());
	t0 = rc_now_us();
	do {
		for (int i = 0; i < 20; i++)
			do_send(_metadata, &P->e[0], &P->e[1], 8);
	} while (read_long(PARAM "engine_backoffs") == p0 &&
		 rc_now_us() - t0 < 5000000);
	for (int i = 0; i < 2; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	write_param("engine_yield_us", self->yield_us);
	p1 = read_long(PARAM "engine_backoffs");
	ASSERT_EQ(0, port_stats("shca0", &s1)) TH_LOG("%s", rc_err);
	pb = read_long(PARAM "engine_backoffs");
	if (p1 == p0)
		SKIP(return, "the engine did not back off (%ld)", p0);
	EXPECT_LE((uint64_t)(p1 - p0), s1.v[BACKOFFS] - s0.v[BACKOFFS]);
	EXPECT_GE((uint64_t)(pb - pa), s1.v[BACKOFFS] - s0.v[BACKOFFS]);
	TH_LOG("%ld back-offs", p1 - p0);

	/* A device created now counts the back-offs from its creation on. */
	if (rdmanl_dev_index("shca1") >= 0)
		return;
	pa = read_long(PARAM "engine_backoffs");
	ASSERT_EQ(1, rc_shca1_add()) TH_LOG("%s", rc_err);
	ASSERT_EQ(0, port_stats("shca1", &s1)) TH_LOG("%s", rc_err);
	pb = read_long(PARAM "engine_backoffs");
	EXPECT_EQ(0, rc_shca1_del()) TH_LOG("%s", rc_err);
	EXPECT_GE((uint64_t)(pb - pa), s1.v[BACKOFFS]);
}

/* ---- driver details --------------------------------------------------------- */

/* `rdma -dd res show qp` of one QP. */
static struct rd_line *qp_details(struct rd_out *o, struct ibv_qp *qp)
{
	if (rd_run(o, "rdma -dd res show qp link shca0/1 lqpn %u", qp->qp_num) ||
	    o->n != 1)
		return NULL;
	return &o->line[0];
}

/*
 * 3 SENDs from A into 5 receives of B: A's SQ produced and executed 3
 * WQEBBs, B's RQ has 5 posted and 3 consumed; the CQNs are the ones the
 * provider got; nothing waits. The CQs: A's send CQ wrote 3 CQEs and was
 * polled to 3, then arms (next, solicited only); its EQ is the one of its
 * completion vector.
 */
TEST_F_TIMEOUT(qpc, qp_and_cq_details, 120)
{
	struct rc_end *a = &P->e[0], *b = &P->e[1];
	struct rd_line *l;
	struct ibv_wc wc;
	char eqs[4096], want[32], *e;

	post_recvs(_metadata, b, 5, 4096, b->mr->lkey);
	for (int i = 0; i < 3; i++)
		do_wr(_metadata, a, b, IBV_WR_SEND, 100, IBV_WC_SEND);
	ASSERT_EQ(3, rc_poll(b->rcq, (struct ibv_wc[3]){}, 3, RC_WC_MS));

	l = qp_details(self->o, a->qp);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(3, rd_u64(l, "drv_sq_pi"));
	EXPECT_EQ(3, rd_u64(l, "drv_sq_ci"));
	EXPECT_EQ(0, rd_u64(l, "drv_rq_pi"));
	EXPECT_EQ(0, rd_u64(l, "drv_rq_ci"));
	EXPECT_EQ(to_scq(a->scq)->cqn, rd_u64(l, "drv_hw_send_cqn"));
	EXPECT_EQ(to_scq(a->rcq)->cqn, rd_u64(l, "drv_hw_recv_cqn"));
	EXPECT_EQ(0, rd_u64(l, "drv_q_counter"));
	EXPECT_STREQ("none", rd_str(l, "drv_wait") ?: "");
	l = qp_details(self->o, b->qp);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(0, rd_u64(l, "drv_sq_pi"));
	EXPECT_EQ(0, rd_u64(l, "drv_sq_ci"));
	EXPECT_EQ(5, rd_u64(l, "drv_rq_pi"));
	EXPECT_EQ(3, rd_u64(l, "drv_rq_ci"));
	EXPECT_EQ(to_scq(b->rcq)->cqn, rd_u64(l, "drv_hw_recv_cqn"));

	/* A's send CQ: 3 written, 3 polled, not armed; then armed. */
	ASSERT_EQ(0, rd_run(self->o, "rdma -dd res show cq dev shca0"));
	l = rd_find(self->o, "drv_hw_cqn", to_scq(a->scq)->cqn);
	ASSERT_NE(NULL, l);
	EXPECT_EQ(3, rd_u64(l, "drv_pi"));
	EXPECT_EQ(3, rd_u64(l, "drv_ci"));
	EXPECT_EQ(0, rd_u64(l, "drv_overrun"));
	EXPECT_STREQ("none", rd_str(l, "drv_arm") ?: "");
	ASSERT_EQ(0, read_line("/sys/kernel/debug/softhca/shca0/eqs", eqs, sizeof(eqs)));
	snprintf(want, sizeof(want), "name=comp%d ", P->cfg.comp_vector);
	e = strstr(eqs, want);
	ASSERT_NE(NULL, e) TH_LOG("no %s in %s", want, eqs);
	while (e > eqs && strncmp(e, "eqn=", 4))
		e--;
	EXPECT_EQ(strtoull(e + 4, NULL, 10), rd_u64(l, "drv_eqn"));

	ASSERT_EQ(0, ibv_req_notify_cq(a->scq, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(b->rcq, 1));
	ASSERT_EQ(0, rd_run(self->o, "rdma -dd res show cq dev shca0"));
	EXPECT_STREQ("next", rd_str(rd_find(self->o, "drv_hw_cqn", to_scq(a->scq)->cqn),
				    "drv_arm") ?: "");
	EXPECT_STREQ("solicited",
		     rd_str(rd_find(self->o, "drv_hw_cqn", to_scq(b->rcq)->cqn),
			    "drv_arm") ?: "");
	/* The next CQE fires the arm of A's send CQ: not armed any more. */
	do_wr(_metadata, a, b, IBV_WR_SEND, 100, IBV_WC_SEND);
	ASSERT_EQ(1, rc_poll(b->rcq, &wc, 1, RC_WC_MS));
	ASSERT_EQ(0, rd_run(self->o, "rdma -dd res show cq dev shca0"));
	l = rd_find(self->o, "drv_hw_cqn", to_scq(a->scq)->cqn);
	EXPECT_STREQ("none", rd_str(l, "drv_arm") ?: "");
	EXPECT_EQ(4, rd_u64(l, "drv_pi"));
	EXPECT_EQ(4, rd_u64(l, "drv_ci"));
	/* B's receive CQE was not solicited: still armed. */
	EXPECT_STREQ("solicited",
		     rd_str(rd_find(self->o, "drv_hw_cqn", to_scq(b->rcq)->cqn),
			    "drv_arm") ?: "");
}

/* Wait up to @ms for the QP's drv_wait to be @want; the last line seen. */
static struct rd_line *wait_for(struct rd_out *o, struct ibv_qp *qp,
				const char *want, int ms)
{
	uint64_t t0 = rc_now_us();
	struct rd_line *l;

	do {
		l = qp_details(o, qp);
		if (l && !strcmp(rd_str(l, "drv_wait") ?: "", want))
			return l;
	} while (rc_now_us() - t0 < (uint64_t)ms * 1000);
	return l;
}

static void rnr_slow(struct rc_cfg *c)
{
	c->min_rnr_timer[1] = 28;	/* 245.76 ms, in B's RNR NAKs */
	c->rnr_retry[0] = 7;		/* for ever */
}

/* A SEND without a receive waits for B's RNR timer: `wait rnr`. */
TEST_F_TIMEOUT(qpc, qp_waiting_for_rnr, 120)
{
	struct rc_end *a = &P->e[0], *b = &P->e[1];
	struct rd_line *l;
	struct ibv_wc wc;

	rc_reopen(_metadata, P, rnr_slow);
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 1, a->buf, 100, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	l = wait_for(self->o, a->qp, "rnr", 5000);
	ASSERT_NE(NULL, l);
	EXPECT_STREQ("rnr", rd_str(l, "drv_wait") ?: "");
	EXPECT_EQ(1, rd_u64(l, "drv_sq_pi"));
	EXPECT_EQ(0, rd_u64(l, "drv_sq_ci"));
	post_recvs(_metadata, b, 1, 4096, b->mr->lkey);
	ASSERT_EQ(1, rc_poll(a->scq, &wc, 1, RC_WC_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	l = qp_details(self->o, a->qp);
	ASSERT_NE(NULL, l);
	EXPECT_STREQ("none", rd_str(l, "drv_wait") ?: "");
	EXPECT_EQ(1, rd_u64(l, "drv_sq_ci"));
}

static void ack_slow(struct rc_cfg *c)
{
	c->timeout[0] = 21;		/* 8.6 s */
	c->retry_cnt[0] = 3;
}

/*
 * B's QP back in RESET drops A's request: A waits for its ACK timeout with
 * its 3 retries left.
 */
TEST_F_TIMEOUT(qpc, qp_waiting_for_an_ack, 120)
{
	struct rc_end *a = &P->e[0], *b = &P->e[1];
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct rd_line *l;

	rc_reopen(_metadata, P, ack_slow);
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &attr, IBV_QP_STATE));
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, 1, a->buf, 100, a->mr->lkey, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	l = wait_for(self->o, a->qp, "ack_timeout", 5000);
	ASSERT_NE(NULL, l);
	EXPECT_STREQ("ack_timeout", rd_str(l, "drv_wait") ?: "");
	EXPECT_EQ(3, rd_u64(l, "drv_retry_left"));
	EXPECT_EQ(0, rd_u64(l, "drv_sq_ci"));
}

/*
 * An MR over 2 pages starting 100 bytes into a page: the HCA's MKey is
 * the lkey, in the provider's PD, at the address, over 3 pages, with the
 * rights asked (LOCAL_WRITE | REMOTE_READ) and the implied LOCAL_READ.
 */
TEST_F_TIMEOUT(qpc, mr_details, 120)
{
	struct rc_end *a = &P->e[0];
	uint8_t *buf = a->buf + 64 * 1024 + 100;
	struct ibv_mr *mr;
	struct rd_line *l;

	mr = ibv_reg_mr(a->pd, buf, 2 * 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, rd_run(self->o, "rdma -dd res show mr dev shca0"));
	l = rd_find(self->o, "drv_mkey", mr->lkey);
	ASSERT_NE(NULL, l) TH_LOG("no MKey %#x", mr->lkey);
	EXPECT_EQ((uintptr_t)buf, rd_u64(l, "drv_iova"));
	EXPECT_EQ(3, rd_u64(l, "drv_npages"));
	EXPECT_EQ(12, rd_u64(l, "drv_page_shift"));
	EXPECT_EQ(to_spd(a->pd)->pdn, rd_u64(l, "drv_hw_pdn"));
	/* HCA_ACCESS_LOCAL_WRITE | REMOTE_READ | LOCAL_READ */
	EXPECT_EQ(0x15, rd_u64(l, "drv_access"));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(0, rd_run(self->o, "rdma -dd res show mr dev shca0"));
	EXPECT_EQ(NULL, rd_find(self->o, "drv_mkey", mr->lkey));
}

TEST_HARNESS_MAIN
