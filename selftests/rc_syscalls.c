// SPDX-License-Identifier: GPL-2.0
/*
 * Doorbells (issue 3 item 3, DESIGN.md §5, §9):
 * - while traffic flows, post_send, post_recv and poll_cq make no system
 *   call: 100,000 rounds of post_recv + post_send + poll_cq (both CQs) run
 *   in a thread under a seccomp filter that reports every system call of
 *   that thread to a supervisor thread (SECCOMP_RET_USER_NOTIF, answered
 *   with SECCOMP_USER_NOTIF_FLAG_CONTINUE), which counts them by number;
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
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"

#define NSYS		512
#define HOT_ROUNDS	100000
/* Syscalls allowed in HOT_ROUNDS rounds: the odd wake-up if the engine
 * dozed off; anything near one per round is a syscall on the fast path.
 */
#define HOT_MAX_SYSCALLS 100
#define SPIN_LIMIT	400000000ul	/* polls before a completion is lost */

/* ---- counting a thread's system calls ---------------------------------- */

struct sysmon {
	pthread_t th;
	atomic_int fd;			/* the listener, -1 until installed */
	atomic_int stop;
	atomic_ulong counts[NSYS];
	atomic_ulong total;
	int error;
};

static void *sysmon_main(void *arg)
{
	struct sysmon *m = arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	while (atomic_load(&m->fd) < 0 && !atomic_load(&m->stop))
		usleep(1000);
	while (!atomic_load(&m->stop)) {
		struct pollfd pfd = { .fd = atomic_load(&m->fd), .events = POLLIN };
		int r = poll(&pfd, 1, 100);

		if (r < 0 && errno != EINTR) {
			m->error = errno;
			break;
		}
		if (r <= 0)
			continue;
		if (pfd.revents & (POLLHUP | POLLERR) && !(pfd.revents & POLLIN))
			break;		/* the filtered thread is gone */
		memset(&req, 0, sizeof(req));
		if (ioctl(pfd.fd, SECCOMP_IOCTL_NOTIF_RECV, &req)) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			m->error = errno;
			break;
		}
		if (req.data.nr >= 0 && req.data.nr < NSYS)
			atomic_fetch_add(&m->counts[req.data.nr], 1);
		atomic_fetch_add(&m->total, 1);
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		/* ENOENT: the call was interrupted meanwhile; nothing to do. */
		ioctl(pfd.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

static int sysmon_start(struct sysmon *m)
{
	memset(m, 0, sizeof(*m));
	atomic_store(&m->fd, -1);
	return pthread_create(&m->th, NULL, sysmon_main, m);
}

/* Called by the thread to watch: from now on its every syscall is counted. */
static int sysmon_install(struct sysmon *m)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	int fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		return -errno;
	atomic_store(&m->fd, fd);
	return 0;
}

static void sysmon_stop(struct sysmon *m)
{
	atomic_store(&m->stop, 1);
	pthread_join(m->th, NULL);
	if (atomic_load(&m->fd) >= 0)
		close(atomic_load(&m->fd));
}

static void sysmon_snap(struct sysmon *m, unsigned long *v)
{
	for (int i = 0; i < NSYS; i++)
		v[i] = atomic_load(&m->counts[i]);
}

static const char *sysname(int nr)
{
	switch (nr) {
	case __NR_ioctl: return "ioctl";
	case __NR_write: return "write";
	case __NR_read: return "read";
	case __NR_futex: return "futex";
	case __NR_sched_yield: return "sched_yield";
	case __NR_clock_gettime: return "clock_gettime";
	case __NR_mmap: return "mmap";
	case __NR_munmap: return "munmap";
	case __NR_getpid: return "getpid";
	case __NR_exit: return "exit";
	default: return "?";
	}
}

/* ---- one round: post_recv on B, SEND from A, both completions ---------- */

struct hot {
	struct rc_pair *p;
	struct sysmon mon;
	unsigned long rounds;
	unsigned long before[NSYS], after[NSYS];
	char why[256];
	int install_err;
	uint64_t us;
};

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

static void *hot_main(void *arg)
{
	struct hot *h = arg;
	unsigned long i;
	uint64_t t0;

	/* warm up (unwatched), so the engine is polling */
	for (i = 0; i < 1000; i++) {
		if (round_trip(h->p, i, h->why, sizeof(h->why)))
			return NULL;
	}
	h->install_err = sysmon_install(&h->mon);
	if (h->install_err)
		return NULL;
	t0 = rc_now_us();
	sysmon_snap(&h->mon, h->before);
	for (i = 0; i < HOT_ROUNDS; i++) {
		if (round_trip(h->p, 1000 + i, h->why, sizeof(h->why)))
			break;
	}
	sysmon_snap(&h->mon, h->after);
	h->us = rc_now_us() - t0;
	h->rounds = i;
	return NULL;
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

static void __attribute__((constructor)) guard(void)
{
	rc_shca1_guard();
}

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

TEST_F_TIMEOUT(db, no_syscall_on_the_fast_path, 300)
{
	static struct hot h;
	pthread_t th;
	unsigned long total = 0;

	memset(&h, 0, sizeof(h));
	h.p = &self->p;
	ASSERT_EQ(0, sysmon_start(&h.mon));
	ASSERT_EQ(0, pthread_create(&th, NULL, hot_main, &h));
	pthread_join(th, NULL);
	sysmon_stop(&h.mon);
	ASSERT_EQ(0, h.install_err) TH_LOG("seccomp filter: %s", strerror(-h.install_err));
	ASSERT_EQ(0, h.mon.error) TH_LOG("seccomp supervisor: %s", strerror(h.mon.error));
	ASSERT_EQ(HOT_ROUNDS, h.rounds) TH_LOG("%s", h.why);
	for (int nr = 0; nr < NSYS; nr++) {
		unsigned long d = h.after[nr] - h.before[nr];

		if (d)
			TH_LOG("%lu x %s (%d)", d, sysname(nr), nr);
		total += d;
	}
	TH_LOG("%d rounds (post_recv + post_send + 2 x poll_cq) in %llu us, %lu syscalls",
	       HOT_ROUNDS, (unsigned long long)h.us, total);
	EXPECT_GE(HOT_MAX_SYSCALLS, total);
	/* The counter works: the watched thread's own exit was seen. */
	EXPECT_LE(1, atomic_load(&h.mon.counts[__NR_exit]));
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

/* One cold post: at most one wake-up call (an ioctl), nothing else. */
static void *cold_main(void *arg)
{
	struct hot *h = arg;

	h->install_err = sysmon_install(&h->mon);
	if (h->install_err)
		return NULL;
	sysmon_snap(&h->mon, h->before);
	if (!round_trip(h->p, 4242, h->why, sizeof(h->why)))
		h->rounds = 1;
	sysmon_snap(&h->mon, h->after);
	return NULL;
}

TEST_F_TIMEOUT(db, cold_post_makes_one_wakeup_call, 60)
{
	static struct hot h;
	pthread_t th;
	unsigned long total = 0;

	warm(_metadata, &self->p, 100);
	sleep(1);
	memset(&h, 0, sizeof(h));
	h.p = &self->p;
	ASSERT_EQ(0, sysmon_start(&h.mon));
	ASSERT_EQ(0, pthread_create(&th, NULL, cold_main, &h));
	pthread_join(th, NULL);
	sysmon_stop(&h.mon);
	ASSERT_EQ(0, h.install_err) TH_LOG("seccomp filter: %s", strerror(-h.install_err));
	ASSERT_EQ(1, h.rounds) TH_LOG("%s", h.why);
	for (int nr = 0; nr < NSYS; nr++) {
		unsigned long d = h.after[nr] - h.before[nr];

		if (d)
			TH_LOG("%lu x %s (%d)", d, sysname(nr), nr);
		total += d;
	}
	/* The provider's NEED_WAKEUP call is an ioctl on the command fd. */
	EXPECT_GE(1, total);
	EXPECT_EQ(total, h.after[__NR_ioctl] - h.before[__NR_ioctl]);
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
