// SPDX-License-Identifier: GPL-2.0
/*
 * Doorbells (design.md §5, §9):
 * - while traffic flows, post_send, post_recv and poll_cq make no system
 *   call: 100,000 rounds of post_recv + post_send + poll_cq (both CQs),
 *   with the thread's system calls counted by the kernel itself: perf
 *   counters on the raw_syscalls:sys_enter and syscalls:sys_enter_*
 *   tracepoints for this thread (counting mode: nothing is stopped or
 *   slowed down, unlike strace or a seccomp supervisor). More than 100
 *   calls fail the test unless the engine's counters and the rounds' own
 *   TSC clock show host contention as the cause (then it is a skip with
 *   the numbers): see no_syscall_on_the_fast_path;
 * - idle, the engine uses no CPU (its kthreads' utime + stime over 3 s, and
 *   the whole VM's busy time);
 * - the first post after idle completes, and costs at most one wake-up
 *   call; posts after random idle gaps all complete (no lost doorbell);
 * - many QPs sharing one context's UAR, posting from as many threads with
 *   idle gaps between posts: no doorbell is lost.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"

#define HOT_ROUNDS	100000
/* Syscalls allowed in HOT_ROUNDS rounds: the odd wake-up if the engine
 * dozed off; anything near one per round is a syscall on the fast path.
 */
#define HOT_MAX_SYSCALLS 100
#define SPIN_LIMIT	400000000ul	/* polls before a completion is lost */

/* ---- counting this thread's system calls ---------------------------------- */

static const char *const sc_events[] = {
	"raw_syscalls/sys_enter",	/* every system call: the total */
	"syscalls/sys_enter_fsync",	/* the wake-up call: fsync on the wake fd */
	"syscalls/sys_enter_futex",
	"syscalls/sys_enter_sched_yield",
	"syscalls/sys_enter_write",
	"syscalls/sys_enter_read",
	"syscalls/sys_enter_clock_gettime",
	"syscalls/sys_enter_nanosleep",
	"syscalls/sys_enter_mmap",
	"syscalls/sys_enter_ioctl",	/* ENGINE_WAKE, WAKE_FD_OPEN */
};
#define NSC (sizeof(sc_events) / sizeof(sc_events[0]))

struct sccount {
	int fd[NSC];
	unsigned long long v[NSC];
};

static int tp_id(const char *ev)
{
	static const char *const roots[] = { "/sys/kernel/tracing",
					     "/sys/kernel/debug/tracing" };
	char path[256], buf[32];

	for (unsigned int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events/%s/id", roots[i], ev);
		if (!read_line(path, buf, sizeof(buf)))
			return atoi(buf);
	}
	return -ENOENT;
}

/* Counters for the calling thread; 0 or -errno (rc_err says which). */
static int sc_open(struct sccount *c)
{
	for (unsigned int i = 0; i < NSC; i++) {
		struct perf_event_attr a;
		int id = tp_id(sc_events[i]);

		c->fd[i] = -1;
		if (id < 0) {
			snprintf(rc_err, sizeof(rc_err), "no tracepoint %s", sc_events[i]);
			return id;
		}
		memset(&a, 0, sizeof(a));
		a.type = PERF_TYPE_TRACEPOINT;
		a.size = sizeof(a);
		a.config = id;
		c->fd[i] = syscall(__NR_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (c->fd[i] < 0) {
			snprintf(rc_err, sizeof(rc_err), "perf_event_open %s: %s",
				 sc_events[i], strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/* Read every counter (NSC read()s, each counted by the counters read
 * after it: sc_diff() takes them out).
 */
static void sc_read(struct sccount *c)
{
	for (unsigned int i = 0; i < NSC; i++) {
		if (read(c->fd[i], &c->v[i], sizeof(c->v[i])) != sizeof(c->v[i]))
			c->v[i] = 0;
	}
}

static void sc_close(struct sccount *c)
{
	for (unsigned int i = 0; i < NSC; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
	}
}

/* Calls between two sc_read()s, without the reads themselves. */
static void sc_diff(const struct sccount *a, const struct sccount *b,
		    unsigned long long *d)
{
	for (unsigned int i = 0; i < NSC; i++)
		d[i] = b->v[i] - a->v[i];
	/* the second sc_read(): counter i sees i reads; the total and the
	 * read counter (index 5) see reads from the first sc_read() too
	 */
	d[0] -= NSC;
	d[5] -= NSC;
}

/* ---- one round: post_recv on B, SEND from A, both completions ---------- */

struct hot {
	struct rc_pair *p;
	unsigned long rounds;
	unsigned long long d[NSC];
	char why[256];
	uint64_t us;
	/* Rounds longer than @slow_us (the engine's idle window): the
	 * application itself did not post for that long (descheduled in the
	 * guest, or its vCPU stopped by the host).
	 */
	unsigned long slow_us, slow;
	uint64_t max_round_us;
	long csw[2];			/* this thread's voluntary, involuntary switches */
	uint64_t t_first, t_last;	/* rc_now_us() at the loop's start, end */
};

/*
 * A clock without a system call: the VM's clocksource is the HPET, so
 * clock_gettime() enters the kernel there; the TSC is readable from user
 * space. Calibrated against rc_now_us() over the whole loop.
 */
static inline uint64_t cycles(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#else
	return rc_now_us();
#endif
}

/* This thread's context switches (voluntary, involuntary). */
static void ctxt_switches(long *v)
{
	char line[128];
	FILE *f = fopen("/proc/thread-self/status", "r");

	v[0] = v[1] = -1;
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %ld", &v[0]);
		sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v[1]);
	}
	if (f)
		fclose(f);
}

static uint64_t round_cycles[HOT_ROUNDS];

/* No syscall of its own: spins on ibv_poll_cq with a count, not a clock. */
static int round_trip(struct rc_pair *p, unsigned long i, char *why, size_t len)
{
	struct rc_end *a = &p->e[0], *b = &p->e[1];
	struct ibv_sge sge = { (uintptr_t)a->buf, 8, a->mr->lkey };
	struct ibv_sge rsge = { (uintptr_t)b->buf, 64, b->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = i, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;
	unsigned long spins;
	int ret, n;

	ret = ibv_post_recv(b->qp, &rwr, &rbad);
	if (ret) {
		snprintf(why, len, "round %lu: post_recv %d", i, ret);
		return -1;
	}
	ret = ibv_post_send(a->qp, &wr, &bad);
	if (ret) {
		snprintf(why, len, "round %lu: post_send %d", i, ret);
		return -1;
	}
	for (int k = 0; k < 2; k++) {
		struct ibv_cq *cq = k ? b->rcq : a->scq;

		for (spins = 0; !(n = ibv_poll_cq(cq, 1, &wc)) && spins < SPIN_LIMIT; spins++)
			;
		if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != i) {
			snprintf(why, len, "round %lu, %s CQ: poll %d after %lu spins, %s", i,
				 k ? "recv" : "send", n, spins, n == 1 ? rc_wc_str(&wc) : "-");
			return -1;
		}
	}
	return 0;
}

/* @n rounds from @first with this thread's system calls counted. */
static int counted_rounds(struct hot *h, unsigned long first, unsigned long n)
{
	struct sccount c0, c1;
	unsigned long i;
	uint64_t t0;
	int ret = sc_open(&c0);

	if (ret)
		return ret;
	memcpy(c1.fd, c0.fd, sizeof(c1.fd));
	long csw0[2];
	uint64_t cy0, cy;

	if (n > HOT_ROUNDS)
		return -EINVAL;
	ctxt_switches(csw0);
	t0 = rc_now_us();
	sc_read(&c0);
	cy0 = cycles();
	for (i = 0; i < n; i++) {
		uint64_t r0 = cycles();

		if (round_trip(h->p, first + i, h->why, sizeof(h->why)))
			break;
		round_cycles[i] = cycles() - r0;
	}
	cy = cycles() - cy0;
	sc_read(&c1);
	/* rc_now_us() may be a system call: outside the counted stretch. */
	h->us = rc_now_us() - t0;
	h->t_first = t0;
	h->t_last = t0 + h->us;
	h->rounds = i;
	sc_diff(&c0, &c1, h->d);
	sc_close(&c0);
	ctxt_switches(h->csw);
	h->csw[0] -= csw0[0];
	h->csw[1] -= csw0[1];
	h->slow = 0;
	h->max_round_us = 0;
	if (h->us && cy) {
		double per_us = (double)cy / h->us;

		for (unsigned long k = 0; k < h->rounds; k++) {
			uint64_t us = round_cycles[k] / per_us;

			/* a migration between vCPUs may show a bogus value */
			if (us > h->us)
				continue;
			if (us > h->max_round_us)
				h->max_round_us = us;
			if (h->slow_us && us > h->slow_us)
				h->slow++;
		}
	}
	return 0;
}

static unsigned long long report(struct __test_metadata *_metadata, const struct hot *h)
{
	for (unsigned int i = 1; i < NSC; i++) {
		if (h->d[i])
			TH_LOG("%llu x %s", h->d[i], strchr(sc_events[i], '/') + 11);
	}
	return h->d[0];
}

FIXTURE(db) {
	struct rc_pair p;
	struct ibv_qp *xqp[2][16];
	struct ibv_cq *xcq[2][16];
};

FIXTURE_VARIANT(db) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(db, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(db, cross_dev) { .topo = RC_CROSS_DEV };

RC_SHCA1_GUARD()

FIXTURE_SETUP(db)
{
	struct rc_cfg c;

	rc_cfg_default(&c, variant->topo);
	c.buf_size = 64 << 10;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(db)
{
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < 16; k++) {
			if (self->xqp[i][k])
				ibv_destroy_qp(self->xqp[i][k]);
			if (self->xcq[i][k])
				ibv_destroy_cq(self->xcq[i][k]);
		}
	}
	rc_pair_destroy(&self->p);
}

/* ---- idle engine CPU ------------------------------------------------------ */

struct cpu {
	unsigned long engine;		/* utime + stime of the engine kthreads */
	int nengine;
	unsigned long busy, all;	/* /proc/stat, whole VM */
	char names[256];
};

static int is_engine(const char *comm)
{
	return !strncmp(comm, "softhca", 7) || !strncmp(comm, "shca", 4);
}

static void cpu_sample(struct cpu *c)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned long v[10] = {};
	FILE *f;

	memset(c, 0, sizeof(*c));
	while (d && (de = readdir(d))) {
		char path[300], comm[64], stat[1024], *p;
		unsigned long ut, st;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (read_line(path, comm, sizeof(comm)) || !is_engine(comm))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (read_line(path, stat, sizeof(stat)))
			continue;
		p = strrchr(stat, ')');
		/* after ")": state(3) ... utime(14) stime(15) */
		if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				 &ut, &st) != 2)
			continue;
		c->engine += ut + st;
		c->nengine++;
		if (strlen(c->names) + strlen(comm) + 2 < sizeof(c->names)) {
			strcat(c->names, comm);
			strcat(c->names, " ");
		}
	}
	if (d)
		closedir(d);
	f = fopen("/proc/stat", "r");
	if (f) {
		if (fscanf(f, "cpu %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8) {
			/* user nice system idle iowait irq softirq steal */
			c->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
			c->all = c->busy + v[3] + v[4];
		}
		fclose(f);
	}
}

/* A counter the engine exports as a read-only module parameter, or -1. */
static long engine_counter(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/module/softhca/parameters/%s", name);
	if (read_line(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/* The engine's counters (kernel/hca/engine.c), before and after a loop. */
enum { EW, EW_IDLE, EW_WAKING, EW_BACKOFF, E_SLEEPS, E_BACKOFFS, NENG };
static const char *const eng_names[NENG] = {
	"engine_wakeups", "engine_wakeups_idle", "engine_wakeups_waking",
	"engine_wakeups_backoff", "engine_idle_sleeps", "engine_backoffs",
};

static int eng_read(long *v)
{
	for (int k = 0; k < NENG; k++) {
		v[k] = engine_counter(eng_names[k]);
		if (v[k] < 0)
			return -1;
	}
	return 0;
}

TEST_F_TIMEOUT(db, no_syscall_on_the_fast_path, 300)
{
	long e0[NENG], e1[NENG], d[NENG], polling;
	uint64_t t_e0, t_e1;
	unsigned long edges;
	static struct hot h;
	unsigned long long total;
	struct cpu c0, c1;
	char why[256];

	memset(&h, 0, sizeof(h));
	h.p = &self->p;
	/*
	 * A pause the engine may sleep in: its idle window, less a quarter for
	 * the two clocks (the engine times from its last progress, we time
	 * whole rounds).
	 */
	h.slow_us = engine_counter("engine_idle_us") * 3 / 4;
	ASSERT_LT(0, (long)h.slow_us) TH_LOG("no engine_idle_us parameter");
	/* warm up, so the engine is polling */
	for (int i = 0; i < 1000; i++) {
		ASSERT_EQ(0, round_trip(&self->p, i, why, sizeof(why))) TH_LOG("%s", why);
	}
	/*
	 * The engine counters right around the loop: a /proc scan under TCG
	 * takes milliseconds, and an idle sleep of the engine during one
	 * would be counted against rounds that never paused.
	 */
	cpu_sample(&c0);
	ASSERT_EQ(0, eng_read(e0)) TH_LOG("engine counters missing in /sys/module/softhca/parameters");
	t_e0 = rc_now_us();
	ASSERT_EQ(0, counted_rounds(&h, 1000, HOT_ROUNDS)) TH_LOG("%s", rc_err);
	t_e1 = rc_now_us();
	ASSERT_EQ(0, eng_read(e1));
	cpu_sample(&c1);
	/*
	 * Between the counters and the loop (the syscall counters opened and
	 * closed) nothing is posted either: a gap longer than the idle window
	 * at either end is a pause the engine may sleep in.
	 */
	edges = (h.t_first - t_e0 > h.slow_us) + (t_e1 - h.t_last > h.slow_us);
	ASSERT_EQ(HOT_ROUNDS, h.rounds) TH_LOG("%s", h.why);
	for (int k = 0; k < NENG; k++)
		d[k] = e1[k] - e0[k];
	polling = d[EW] - d[EW_IDLE] - d[EW_WAKING] - d[EW_BACKOFF];
	total = report(_metadata, &h);
	TH_LOG("%d rounds (post_recv + post_send + 2 x poll_cq) in %llu us (%.1f us each), %llu syscalls",
	       HOT_ROUNDS, (unsigned long long)h.us, (double)h.us / HOT_ROUNDS, total);
	TH_LOG("rounds longer than 3/4 of the engine's idle window (%lu us): %lu, longest %llu us; gaps before and after the loop %llu and %llu us; this thread's context switches: %ld voluntary, %ld involuntary",
	       h.slow_us, h.slow, (unsigned long long)h.max_round_us,
	       (unsigned long long)(h.t_first - t_e0),
	       (unsigned long long)(t_e1 - h.t_last), h.csw[0], h.csw[1]);
	TH_LOG("engine: %ld idle sleeps, %ld back-offs; wake-up calls %ld: %ld idle, %ld waking, %ld backed off, %ld polling",
	       d[E_SLEEPS], d[E_BACKOFFS], d[EW], d[EW_IDLE], d[EW_WAKING], d[EW_BACKOFF], polling);
	TH_LOG("meanwhile the engine thread(s) ran %lu ticks, the VM was busy %lu of %lu",
	       c1.engine - c0.engine, c1.busy - c0.busy, c1.all - c0.all);
	if (total <= HOT_MAX_SYSCALLS)
		return;
	/*
	 * Too many calls. design.md §5 allows two causes, each seen by its own
	 * witness; anything else is a failure:
	 * - the application paused longer than the engine's idle window (its
	 *   vCPU stopped by a loaded host: the guest sees no other sign), and
	 *   the engine rightly went idle: the rounds' own clock counts those
	 *   pauses, so more idle sleeps than slow rounds means the engine went
	 *   idle by choice while posts kept coming;
	 * - other tasks kept the engine off the CPU: calls while it was backed
	 *   off, or kicked back to polling but not yet running, or had just
	 *   resumed (polling).
	 * Calls while idle by choice and not yet kicked must stay near two a
	 * sleep (the second one kicks), plus one per slow round.
	 */
	EXPECT_LT(0, d[E_SLEEPS] + d[E_BACKOFFS])
		TH_LOG("%llu syscalls while the engine neither slept nor backed off", total);
	EXPECT_GE((long)(h.slow + edges), d[E_SLEEPS])
		TH_LOG("the engine went idle %ld times while the application paused longer than %lu us only %lu times (%lu at the loop's ends)",
		       d[E_SLEEPS], h.slow_us, h.slow + edges, edges);
	EXPECT_GE(2 * d[E_SLEEPS] + (long)h.slow + HOT_MAX_SYSCALLS, d[EW_IDLE])
		TH_LOG("%ld wake-up calls found the engine idle and not brought back to polling (%ld sleeps)",
		       d[EW_IDLE], d[E_SLEEPS]);
	EXPECT_EQ((long long)total, (long long)h.d[1])
		TH_LOG("system calls other than the wake-up call (fsync)");
	if (_metadata->passed)
		SKIP(return, "%llu syscalls, all from host CPU contention: %lu application pauses > %lu us, %ld idle sleeps, %ld back-offs; calls idle %ld, waking %ld, backed off %ld, polling %ld",
		     total, h.slow, h.slow_us, d[E_SLEEPS], d[E_BACKOFFS], d[EW_IDLE], d[EW_WAKING],
		     d[EW_BACKOFF], polling);
}

static void warm(struct __test_metadata *_metadata, struct rc_pair *p, int n)
{
	char why[256];

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, round_trip(p, i, why, sizeof(why))) TH_LOG("%s", why);
	}
}

TEST_F_TIMEOUT(db, idle_engine_uses_no_cpu, 60)
{
	struct cpu c0, c1;
	char why[256];
	uint64_t t0, t;

	warm(_metadata, &self->p, 2000);
	/* Let the engine notice the silence, then measure 3 s of it. */
	usleep(200000);
	cpu_sample(&c0);
	sleep(3);
	cpu_sample(&c1);
	TH_LOG("engine threads: %d (%s), %lu ticks in 3 s; VM busy %lu of %lu ticks",
	       c1.nengine, c1.names, c1.engine - c0.engine, c1.busy - c0.busy,
	       c1.all - c0.all);
	ASSERT_LE(1, c1.nengine) TH_LOG("no engine kthread found (comm softhca* or shca*)");
	EXPECT_GE(2, c1.engine - c0.engine);
	EXPECT_GE(15, c1.busy - c0.busy);

	/* The first post after the idle period completes, promptly. */
	t0 = rc_now_us();
	ASSERT_EQ(0, round_trip(&self->p, 7777, why, sizeof(why))) TH_LOG("%s", why);
	t = rc_now_us() - t0;
	TH_LOG("first round trip after idle: %llu us", (unsigned long long)t);
	EXPECT_GT(1000000, t);
}

/* One cold post: at most one wake-up call (fsync), nothing else. */
TEST_F_TIMEOUT(db, cold_post_makes_one_wakeup_call, 60)
{
	static struct hot h;
	unsigned long long total;

	warm(_metadata, &self->p, 100);
	memset(&h, 0, sizeof(h));
	h.p = &self->p;
	for (int k = 0; k < 5; k++) {
		usleep(500000);
		ASSERT_EQ(0, counted_rounds(&h, 4242 + k, 1)) TH_LOG("%s", rc_err);
		ASSERT_EQ(1, h.rounds) TH_LOG("%s", h.why);
		total = report(_metadata, &h);
		TH_LOG("cold round trip %d: %llu us, %llu syscalls", k, (unsigned long long)h.us,
		       total);
		/* The provider's NEED_WAKEUP call: fsync on its wake fd. */
		EXPECT_GE(1, total);
		EXPECT_EQ(total, h.d[1]);
	}
}

TEST_F_TIMEOUT(db, posts_after_random_idle_gaps, 120)
{
	char why[256];
	unsigned int seed = 12345;

	for (int i = 0; i < 200; i++) {
		uint64_t t0 = rc_now_us(), t;

		/* gaps of 0..40 ms around the engine's idle threshold */
		usleep(rand_r(&seed) % 40000);
		ASSERT_EQ(0, round_trip(&self->p, i, why, sizeof(why)))
			TH_LOG("post %d after a gap: %s", i, why);
		t = rc_now_us() - t0;
		ASSERT_GT(2000000, t) TH_LOG("post %d took %llu us", i, (unsigned long long)t);
	}
}

/* ---- many QPs on one UAR ---------------------------------------------------- */

struct qpth {
	pthread_t th;
	struct ibv_qp *qa, *qb;
	struct ibv_cq *ca, *cb;
	struct rc_end *a, *b;
	int k, n;
	char why[768];
};

static void *qp_thread(void *arg)
{
	struct qpth *q = arg;
	unsigned int seed = q->k;

	for (int i = 0; i < q->n; i++) {
		uint8_t *src = q->a->buf + 1024 * q->k;
		uint8_t *dst = q->b->buf + 1024 * q->k;
		struct ibv_wc wc;
		int ret;

		if (rand_r(&seed) % 2)
			usleep(rand_r(&seed) % 3000);
		rc_fill(src, 64, q->k << 16 | i);
		ret = rc_post_recv(q->qb, i, dst, 64, q->b->mr->lkey);
		if (!ret)
			ret = rc_post_send(q->qa, IBV_WR_SEND, i, src, 64, q->a->mr->lkey, 0, 0,
					   IBV_SEND_SIGNALED, 0);
		if (ret) {
			snprintf(q->why, sizeof(q->why), "QP %d post %d: %d", q->k, i, ret);
			return NULL;
		}
		if (rc_poll(q->ca, &wc, 1, 5000) != 1 || wc.status || wc.wr_id != (uint64_t)i) {
			snprintf(q->why, sizeof(q->why), "QP %d SEND %d lost: %s", q->k, i,
				 rc_err);
			return NULL;
		}
		if (rc_poll(q->cb, &wc, 1, 5000) != 1 || wc.status || wc.wr_id != (uint64_t)i) {
			snprintf(q->why, sizeof(q->why), "QP %d receive %d lost: %s", q->k, i,
				 rc_err);
			return NULL;
		}
		if (rc_check_fill(dst, 64, q->k << 16 | i) != -1) {
			snprintf(q->why, sizeof(q->why), "QP %d message %d corrupted", q->k, i);
			return NULL;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(db, many_qps_share_a_uar, 180)
{
	struct rc_end *a = &self->p.e[0], *b = &self->p.e[1];
	static struct qpth q[16];

	for (int k = 0; k < 16; k++) {
		struct rc_pair pp = self->p;
		struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC, .cap = { 4, 4, 1, 1, 0 } };

		self->xcq[0][k] = ibv_create_cq(a->ctx, 8, NULL, NULL, 0);
		self->xcq[1][k] = ibv_create_cq(b->ctx, 8, NULL, NULL, 0);
		ASSERT_NE(NULL, self->xcq[0][k]);
		ASSERT_NE(NULL, self->xcq[1][k]);
		ia.send_cq = ia.recv_cq = self->xcq[0][k];
		self->xqp[0][k] = ibv_create_qp(a->pd, &ia);
		ia.send_cq = ia.recv_cq = self->xcq[1][k];
		self->xqp[1][k] = ibv_create_qp(b->pd, &ia);
		ASSERT_NE(NULL, self->xqp[0][k]);
		ASSERT_NE(NULL, self->xqp[1][k]);
		pp.e[0].qp = self->xqp[0][k];
		pp.e[1].qp = self->xqp[1][k];
		pp.shca1_added = 0;
		ASSERT_EQ(0, rc_end_connect(&pp, 0)) TH_LOG("%s", rc_err);
		ASSERT_EQ(0, rc_end_connect(&pp, 1)) TH_LOG("%s", rc_err);
		q[k] = (struct qpth){ .qa = self->xqp[0][k], .qb = self->xqp[1][k],
				      .ca = self->xcq[0][k], .cb = self->xcq[1][k],
				      .a = a, .b = b, .k = k, .n = 150 };
	}
	for (int k = 0; k < 16; k++) {
		ASSERT_EQ(0, pthread_create(&q[k].th, NULL, qp_thread, &q[k]));
	}
	for (int k = 0; k < 16; k++)
		pthread_join(q[k].th, NULL);
	for (int k = 0; k < 16; k++) {
		EXPECT_EQ(0, q[k].why[0]) TH_LOG("%s", q[k].why);
	}
}

TEST_HARNESS_MAIN
