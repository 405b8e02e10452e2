// SPDX-License-Identifier: GPL-2.0
/*
 * Debug messages (Documentation/kernel.md, "Debugging"). With dynamic
 * debug on for the module ('module softhca +p'), each kind of event is a
 * debug-level line in the kernel log that names the device, the object's
 * number and the function: QP state changes (the driver's modify_qp, the
 * model's MODIFY_QP, the engine moving a QP to ERR), an error CQE with its
 * syndrome's name, an async event raised by the model and dispatched by
 * the driver, a refused verb, a refused firmware command (GEN_EQE into a
 * full EQ, through debugfs) with its errno and reason, and the engine
 * thread's state changes. With it off, the same events print none of it.
 *
 * The kernel log is read from /dev/kmsg (records after the test's start
 * only). The dynamic debug state found at the start is restored at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"
#include "verbs_util.h"
/* The provider's CQ: its CQN, which the model's lines name. */
#include "../user/softhca.h"

#define DDEBUG_CONTROL	"/sys/kernel/debug/dynamic_debug/control"
#define LOG_MAX		(1 << 20)	/* bytes of log kept per test */
#define LEVEL_DEBUG	7		/* KERN_DEBUG: pr_debug, ibdev_dbg */

/* 1 if any call site of the module is enabled, 0 if none, -1 on error. */
static int ddebug_any_on(void)
{
	char line[1024];
	int on = 0;
	FILE *f = fopen(DDEBUG_CONTROL, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " [softhca]") && strstr(line, " =p"))
			on = 1;
	fclose(f);
	return on;
}

static int ddebug_set(bool on)
{
	const char *q = on ? "module softhca +p" : "module softhca -p";
	int fd = open(DDEBUG_CONTROL, O_WRONLY);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, q, strlen(q)) == (ssize_t)strlen(q) ? 0 : -errno;
	close(fd);
	return ret;
}

/*
 * The kernel log since klog_open(): every record as "LEVEL TEXT\n" in one
 * buffer (the records' continuation lines, the device dictionary, dropped).
 */
struct klog {
	int fd;
	char *buf;
	size_t len;
};

static int klog_open(struct klog *k)
{
	k->buf = calloc(1, LOG_MAX);
	k->len = 0;
	k->fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (!k->buf || k->fd < 0 || lseek(k->fd, 0, SEEK_END) < 0)
		return -1;
	return 0;
}

/* Append the records written since the last call. */
static void klog_read(struct klog *k)
{
	char rec[8192];

	for (;;) {
		ssize_t n = read(k->fd, rec, sizeof(rec) - 1);
		char *text, *end;
		int pri;

		if (n < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (n <= 0)
			return;
		rec[n] = '\0';
		text = strchr(rec, ';');
		if (!text || sscanf(rec, "%d,", &pri) != 1)
			continue;
		text++;
		end = strchr(text, '\n');
		if (end)
			*end = '\0';
		if (k->len + strlen(text) + 4 >= LOG_MAX)
			return;
		k->len += sprintf(k->buf + k->len, "%d %s\n", pri & 7, text);
	}
}

static void klog_close(struct klog *k)
{
	if (k->fd >= 0)
		close(k->fd);
	free(k->buf);
}

/* A record of @level (-1: any) that contains the formatted text. */
static bool klog_has(const struct klog *k, int level, const char *fmt, ...)
{
	char want[512];
	const char *line = k->buf;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	while (line && *line) {
		const char *next = strchr(line, '\n');
		size_t len = next ? (size_t)(next - line) : strlen(line);
		const char *hit = memmem(line, len, want, strlen(want));

		if (hit && (level < 0 || line[0] - '0' == level))
			return true;
		line = next ? next + 1 : NULL;
	}
	return false;
}

/* What one round of provocations touched, for the lines to look for. */
struct provoked {
	uint32_t qpn_a, qpn_b, scqn_a;
};

FIXTURE(dbg) {
	struct rc_pair p;
	struct klog log;
	int was_on;
	struct provoked pv;
};

FIXTURE_SETUP(dbg)
{
	memset(&self->p, 0, sizeof(self->p));
	self->log.fd = -1;
	self->log.buf = NULL;
	self->was_on = ddebug_any_on();
	if (self->was_on >= 0)
		ASSERT_EQ(0, klog_open(&self->log))
			TH_LOG("/dev/kmsg: %s", strerror(errno));
}

#define NEED_DDEBUG() do { \
	if (self->was_on < 0) \
		SKIP(return, "no %s (dynamic debug, debugfs)", DDEBUG_CONTROL); \
} while (0)

FIXTURE_TEARDOWN(dbg)
{
	rc_pair_destroy(&self->p);
	if (self->was_on >= 0)
		ddebug_set(self->was_on);
	klog_close(&self->log);
}

/*
 * Everything the debug messages report, on shca0: QPs RESET..RTS; a WRITE
 * into an MR without REMOTE_WRITE (the requester's error CQE, both QPs to
 * ERR, the responder's QP_ACCESS_ERR event); modify_qp ERR -> RTS (refused
 * by the driver); GEN_EQE into the full comp0 EQ (refused by the model).
 * Each is checked to have happened.
 */
static void provoke(struct __test_metadata *_metadata, struct rc_pair *p,
		    struct provoked *pv)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS };
	struct ibv_async_event ev;
	long eqn, size, dropped;
	struct ibv_mr *mr;
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	c.buf_size = 64 << 10;
	ASSERT_EQ(0, rc_pair_open(p, &c)) TH_LOG("%s", rc_err);
	pv->qpn_a = a->qp->qp_num;
	pv->qpn_b = b->qp->qp_num;
	pv->scqn_a = to_scq(a->scq)->cqn;

	mr = ibv_reg_mr(b->pd, b->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_RDMA_WRITE, 1, a->buf, 64,
				  a->mr->lkey, (uintptr_t)b->buf, mr->rkey,
				  IBV_SEND_SIGNALED, 0));
	rc_expect_err(_metadata, a->scq, 1, IBV_WC_REM_ACCESS_ERR, a);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(a->qp, IBV_QPS_ERR, 1000));
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(b->qp, IBV_QPS_ERR, 1000));
	EXPECT_EQ(IBV_EVENT_QP_ACCESS_ERR, next_async_event(b->ctx, 5000, &ev));
	ibv_dereg_mr(mr);

	errno = 0;
	EXPECT_NE(0, ibv_modify_qp(a->qp, &attr, IBV_QP_STATE));
	EXPECT_EQ(EINVAL, errno);

	/* One more EQE than comp0 holds: the model refuses the last. */
	eqn = eq_dbg_field("shca0", "comp0", "eqn");
	size = eq_dbg_field("shca0", "comp0", "size");
	dropped = eq_dbg_field("shca0", "comp0", "hca_dropped");
	ASSERT_LE(0, eqn);
	ASSERT_LT(0, size);
	ASSERT_EQ(0, eq_dbg_inject("shca0", "disable %ld", eqn));
	EXPECT_EQ(0, eq_dbg_inject("shca0", "%ld 0 0 %ld", eqn, size + 1));
	EXPECT_LT(dropped, eq_dbg_field("shca0", "comp0", "hca_dropped"));
	ASSERT_EQ(0, eq_dbg_inject("shca0", "enable %ld", eqn));
}

/*
 * Two wake-up calls that ran doorbells, within engine_wake_window_us,
 * restart an idle thread (a call with nothing rung does not). QP a is in
 * ERR, so each post rings and comes back flushed.
 */
static void engine_kick(struct __test_metadata *_metadata, struct rc_pair *p)
{
	struct rc_end *a = &p->e[0];

	for (uint64_t id = 100; id < 110; id++) {
		ASSERT_EQ(0, rc_post_send(a->qp, IBV_WR_SEND, id, a->buf, 8,
					  a->mr->lkey, 0, 0, IBV_SEND_SIGNALED,
					  0));
		rc_expect_err(_metadata, a->scq, id, IBV_WC_WR_FLUSH_ERR, a);
	}
}

/* Read the log until @done says it holds what is expected, or @ms passed. */
static void klog_wait(struct klog *k, bool (*done)(const struct klog *k),
		      int ms)
{
	uint64_t end = rc_now_us() + ms * 1000ULL;

	do {
		klog_read(k);
		if (done && done(k))
			return;
		usleep(20000);
	} while (rc_now_us() < end);
}

/* The engine thread was woken from IDLE and went idle again. */
static bool engine_cycled(const struct klog *k)
{
	return klog_has(k, LEVEL_DEBUG,
			"softhca engine: hca_engine_sleep: IDLE -> POLLING") &&
	       klog_has(k, LEVEL_DEBUG,
			"softhca engine: hca_engine_sleep: POLLING -> IDLE");
}

/* One line: present at @level (-1: any) if @want, else absent. */
static void expect_line(struct __test_metadata *_metadata,
			const struct klog *k, int level, bool want,
			const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	EXPECT_EQ(want, klog_has(k, level, "%s", line))
		TH_LOG("%s: %s", want ? "missing" : "printed", line);
}

/* Each line debug output has after provoke(). */
static void expect_lines(struct __test_metadata *_metadata,
			 const struct klog *k, const struct provoked *pv,
			 int level, bool want)
{
	uint32_t a = pv->qpn_a, b = pv->qpn_b;

#define LINE(...) expect_line(_metadata, k, level, want, __VA_ARGS__)
	/* QP state changes: driver, model, engine. */
	LINE("shca0: QP[%u] shca_modify_qp_once: RTR -> RTS (mask 0x", a);
	LINE("softhca shca0: QP[%u] hca_cmd_modify_qp: RTR -> RTS", b);
	LINE("softhca shca0: QP[%u] hca_qp_set_err: RTS -> ERR (", a);
	LINE("softhca shca0: QP[%u] hca_qp_set_err: RTS -> ERR (", b);
	/* The error CQE, its syndrome by name. */
	LINE("softhca shca0: CQ[%u] hca_cqe_write: error CQE: QP[%u] send WQE 0: REM_ACCESS_ERR (syndrome 0x13",
	     pv->scqn_a, a);
	/* The async event: raised by the model, dispatched by the driver. */
	LINE("softhca shca0: QP[%u] hca_eq_qp_event: WQ_ACCESS_ERROR (0x11) raised",
	     b);
	LINE("shca0: QP[%u] shca_eq_queue_event: QP access error", b);
	/* Refusals: a verb, a firmware command (errno and reason). */
	LINE("shca0: QP[%u] shca_modify_qp_once: refused: ERR -> RTS with mask 0x1: not in the IB table",
	     a);
	LINE("softhca shca0: hca_exec: GEN_EQE (0x304) refused: -ENOSPC (resource exhausted");
	/* The engine thread: woken by the calls, idle again afterwards. */
	LINE("softhca engine: hca_engine_sleep: IDLE -> POLLING after");
	LINE("softhca engine: hca_engine_sleep: POLLING -> IDLE (");
#undef LINE
}

TEST_F(dbg, on_prints_every_kind)
{
	NEED_DDEBUG();
	ASSERT_EQ(0, ddebug_set(true));
	ASSERT_EQ(1, ddebug_any_on());
	provoke(_metadata, &self->p, &self->pv);
	/* A thread that was backing off is not restarted by calls: again. */
	for (int i = 0; i < 5 && !engine_cycled(&self->log); i++) {
		engine_kick(_metadata, &self->p);
		klog_wait(&self->log, engine_cycled, 1000);
	}
	ASSERT_EQ(0, ddebug_set(false));
	klog_read(&self->log);
	expect_lines(_metadata, &self->log, &self->pv, LEVEL_DEBUG, true);
	if (_metadata->passed != 1)
		fprintf(stderr, "# kernel log:\n%s", self->log.buf);
}

TEST_F(dbg, off_prints_nothing)
{
	NEED_DDEBUG();
	ASSERT_EQ(0, ddebug_set(false));
	ASSERT_EQ(0, ddebug_any_on());
	/* What was on its way while debug was still on (SOFTHCA_DYNDBG). */
	klog_read(&self->log);
	self->log.len = 0;
	self->log.buf[0] = '\0';
	provoke(_metadata, &self->p, &self->pv);
	engine_kick(_metadata, &self->p);
	klog_wait(&self->log, NULL, 500);
	/* Not at any level, and no debug-level line of the module at all. */
	expect_lines(_metadata, &self->log, &self->pv, -1, false);
	EXPECT_FALSE(klog_has(&self->log, LEVEL_DEBUG, "shca"));
	EXPECT_FALSE(klog_has(&self->log, LEVEL_DEBUG, "softhca"));
	if (_metadata->passed != 1)
		fprintf(stderr, "# kernel log:\n%s", self->log.buf);
}

TEST_HARNESS_MAIN
