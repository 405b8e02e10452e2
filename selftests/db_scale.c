// SPDX-License-Identifier: GPL-2.0
/*
 * Work discovery at scale (design.md §10, Documentation/engine.md "Finding
 * work"): the engine finds work through the hints of each context's
 * doorbell area, so these check the three promises that rest on it.
 *
 * no_lost_doorbell: 8 processes, each a context of its own (one UAR and
 *   doorbell area, shared by all its QPs) with 126 QPs (1,008 in all) on
 *   16 CQs, make SOFTHCA_DBSCALE_ROUNDS (300,000) round trips in all on
 *   random pairs, with random idle gaps (the engine lets quiet areas go)
 *   and, every 2,500 rounds, a pause of all of them together (the engine
 *   goes to sleep; then 8 contexts ring at once). Every round trip must
 *   complete within 5 s, and the engine must have slept and been woken.
 * hints_are_untrusted: a context scribbles over its own doorbell area
 *   (random bytes, every byte set, every byte cleared) while it creates and
 *   destroys QPs and CQs and posts; a bystander context's round trips all
 *   complete meanwhile, everything is destroyed cleanly, and a new context
 *   of the scribbler works.
 * flood_costs_only_the_flooder: a context rings the hints of its 10,000 QPs
 *   over and over (no work behind them) while a victim context measures its
 *   round-trip time: the victim's median stays within 2x of its quiet one.
 *
 * All of it on shca0, in the VM; SOFTHCA_VM_SMP=4 with engine_threads=4
 * runs the same with the slots spread over four engine threads.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "qpset.h"
#include "rc.h"
#include "rng.h"
#include "softhca.h"		/* the doorbell area (white box) */
#include "util.h"
#include "verbs_util.h"

#define RT_MS		5000	/* a round trip that takes longer is lost */

/* Tests that take minutes under TCG: the harness's timeout is per test. */
FIXTURE(scale) {
	int unused;
};

FIXTURE_SETUP(scale)
{
}

FIXTURE_TEARDOWN(scale)
{
}

static long engine_counter(const char *name)
{
	char path[128], buf[64];

	snprintf(path, sizeof(path), "/sys/module/softhca/parameters/%s", name);
	if (read_line(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static unsigned long env_ulong(const char *name, unsigned long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : def;
}

/* State the workers of a test share (MAP_SHARED, made before fork). */
struct shared {
	pthread_barrier_t barrier;
	volatile int stop;
	volatile int failed;
	char why[8][512];
	unsigned long rounds[8];
	double median_us[4];
};

static struct shared *shared_new(unsigned int parties)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_barrierattr_t a;

	if (sh == MAP_FAILED)
		return NULL;
	memset(sh, 0, sizeof(*sh));
	pthread_barrierattr_init(&a);
	pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->barrier, &a, parties);
	return sh;
}

static void fail(struct shared *sh, int w, const char *what)
{
	snprintf(sh->why[w], sizeof(sh->why[w]), "%s", what);
	sh->failed = 1;
}

/* Wait for @n children; 0 if each exited 0. */
static int reap(pid_t *pids, int n)
{
	int status, bad = 0;

	for (int i = 0; i < n; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	return bad;
}

/* ---- no lost doorbell ---------------------------------------------------- */

#define LOST_WORKERS	8
#define LOST_QPS	126
#define LOST_SYNC	2500

static void lost_worker(struct shared *sh, int w, unsigned long rounds)
{
	struct qpset_cfg c = { .nqp = LOST_QPS, .ncq = 16, .depth = 4,
			       .buf_size = 1 << 16 };
	struct qpset s;
	int ok;

	ok = !qpset_open(&s, &c);
	if (!ok)
		fail(sh, w, qpset_err);
	pthread_barrier_wait(&sh->barrier);	/* all set up */
	for (unsigned long r = 0; ok && r < rounds && !sh->failed; r++) {
		if (r && !(r % LOST_SYNC)) {
			/* All quiet at once: the engine sleeps... */
			pthread_barrier_wait(&sh->barrier);
			usleep(30000);
			/* ...and eight contexts ring together. */
			pthread_barrier_wait(&sh->barrier);
		} else if (!rnd_below(64)) {
			/* Long enough, often, for the engine to let go. */
			usleep(rnd_below(3000));
		}
		if (qpset_round_trip(&s, rnd_below(LOST_QPS / 2),
				     rnd_below(65), RT_MS)) {
			char msg[512];

			snprintf(msg, sizeof(msg), "worker %d round %lu: %s",
				 w, r, qpset_err);
			fail(sh, w, msg);
			ok = 0;
		}
		sh->rounds[w] = r + 1;
	}
	/* Whoever stopped early still meets the others at every barrier. */
	for (unsigned long r = sh->rounds[w]; r < rounds; r++)
		if (r && !(r % LOST_SYNC)) {
			pthread_barrier_wait(&sh->barrier);
			pthread_barrier_wait(&sh->barrier);
		}
	if (ok)
		qpset_close(&s);
	_exit(ok ? 0 : 1);
}

TEST_F_TIMEOUT(scale, no_lost_doorbell_1000_qps_8_contexts, 900)
{
	unsigned long total = env_ulong("SOFTHCA_DBSCALE_ROUNDS", 300000);
	unsigned long rounds = total / LOST_WORKERS, done = 0;
	long sleeps0 = engine_counter("engine_idle_sleeps");
	long wakes0 = engine_counter("engine_wakeups");
	struct shared *sh = shared_new(LOST_WORKERS);
	pid_t pids[LOST_WORKERS];
	uint64_t t0 = rc_now_us();

	ASSERT_NE(NULL, sh);
	for (int w = 0; w < LOST_WORKERS; w++) {
		pids[w] = fork();
		ASSERT_GE(pids[w], 0);
		if (!pids[w]) {
			rnd_mix((uint64_t)w * 0x9e3779b97f4a7c15ull);
			lost_worker(sh, w, rounds);
		}
	}
	EXPECT_EQ(0, reap(pids, LOST_WORKERS));
	for (int w = 0; w < LOST_WORKERS; w++) {
		done += sh->rounds[w];
		if (sh->why[w][0])
			TH_LOG("%s", sh->why[w]);
	}
	TH_LOG("%lu round trips over %d QPs in %d contexts in %.1f s; engine: %ld idle sleeps, %ld wake-up calls",
	       done, LOST_WORKERS * LOST_QPS, LOST_WORKERS,
	       (rc_now_us() - t0) / 1e6,
	       engine_counter("engine_idle_sleeps") - sleeps0,
	       engine_counter("engine_wakeups") - wakes0);
	EXPECT_EQ(rounds * LOST_WORKERS, done);
	EXPECT_EQ(0, sh->failed);
	/* The pauses made the engine sleep, and calls brought it back. */
	EXPECT_LT(sleeps0, engine_counter("engine_idle_sleeps"));
	EXPECT_LT(wakes0, engine_counter("engine_wakeups"));
}

/* ---- untrusted hints -------------------------------------------------------- */

enum scribble { SCRIBBLE_RANDOM, SCRIBBLE_SET, SCRIBBLE_CLEAR, SCRIBBLE_DONE };

struct scribbler {
	struct softhca_db_area *db;
	volatile int mode;
};

static void *scribble_thread(void *arg)
{
	struct scribbler *s = arg;
	uint8_t *p = (uint8_t *)s->db;

	while (s->mode != SCRIBBLE_DONE) {
		switch (s->mode) {
		case SCRIBBLE_RANDOM: {
			uint32_t off = rnd_below(SOFTHCA_DB_AREA_SIZE);

			rnd_fill(p + off, rnd_below(SOFTHCA_DB_AREA_SIZE - off) + 1);
			break;
		}
		case SCRIBBLE_SET:
			memset(p, 0xff, SOFTHCA_DB_AREA_SIZE);
			break;
		default:
			memset(p, 0, SOFTHCA_DB_AREA_SIZE);
			break;
		}
	}
	return NULL;
}

/* Objects come and go while the hints of their slots are being written. */
static int churn(struct qpset *s, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_cq *cq = ibv_create_cq(s->ctx, 4, NULL, NULL, 0);
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *qp;

		if (!cq)
			return -1;
		qp = ibv_create_qp(s->pd, &ia);
		if (!qp || qpset_qp_to_rts(qp, qp->qp_num, s->gid_index,
					   &s->gid)) {
			if (qp)
				ibv_destroy_qp(qp);
			ibv_destroy_cq(cq);
			return -1;
		}
		/* A post into a QP about to die: its hint may outlive it. */
		rc_post_send(qp, IBV_WR_SEND, 1, NULL, 0, 0, 0, 0,
			     IBV_SEND_SIGNALED, 0);
		if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq))
			return -1;
	}
	return 0;
}

static void scribbler_proc(struct shared *sh)
{
	struct qpset_cfg c = { .nqp = 8, .ncq = 2, .depth = 4,
			       .buf_size = 1 << 16 };
	struct scribbler sc = { .mode = SCRIBBLE_RANDOM };
	struct qpset s, fresh;
	pthread_t t;
	int ok = !qpset_open(&s, &c);

	if (!ok) {
		fail(sh, 0, qpset_err);
		pthread_barrier_wait(&sh->barrier);
		_exit(1);
	}
	sc.db = to_sctx(s.ctx)->db;
	pthread_create(&t, NULL, scribble_thread, &sc);
	pthread_barrier_wait(&sh->barrier);	/* the bystander starts */
	for (int mode = SCRIBBLE_RANDOM; mode <= SCRIBBLE_CLEAR; mode++) {
		uint64_t end = rc_now_us() + 1500000;

		sc.mode = mode;
		while (rc_now_us() < end) {
			if (churn(&s, 4)) {
				fail(sh, 0, "create/destroy under scribbled hints failed");
				ok = 0;
			}
			/* Posts; whether they complete is its own business. */
			for (int p = 0; p < c.nqp / 2; p++)
				qpset_round_trip(&s, p, 8, 1);
		}
	}
	sc.mode = SCRIBBLE_DONE;
	pthread_join(t, NULL);
	sh->stop = 1;
	qpset_close(&s);
	/* A new context of the same process is not harmed by the old one. */
	if (qpset_open(&fresh, &c)) {
		fail(sh, 0, qpset_err);
		_exit(1);
	}
	for (int p = 0; p < c.nqp / 2; p++)
		if (qpset_round_trip(&fresh, p, 8, RT_MS)) {
			fail(sh, 0, qpset_err);
			ok = 0;
		}
	qpset_close(&fresh);
	_exit(ok ? 0 : 1);
}

static void bystander_proc(struct shared *sh)
{
	struct qpset_cfg c = { .nqp = 8, .ncq = 2, .depth = 4,
			       .buf_size = 1 << 16 };
	struct qpset s;
	int ok = !qpset_open(&s, &c);

	if (!ok)
		fail(sh, 1, qpset_err);
	pthread_barrier_wait(&sh->barrier);
	while (ok && !sh->stop) {
		if (qpset_round_trip(&s, rnd_below(c.nqp / 2), 32, RT_MS)) {
			fail(sh, 1, qpset_err);
			ok = 0;
		}
		sh->rounds[1]++;
		if (!rnd_below(32))
			usleep(rnd_below(2000));
	}
	if (ok)
		qpset_close(&s);
	_exit(ok ? 0 : 1);
}

TEST_F_TIMEOUT(scale, hints_are_untrusted, 120)
{
	long qps0 = res_count("shca0", "qp"), cqs0 = res_count("shca0", "cq");
	struct shared *sh = shared_new(2);
	pid_t pids[2];

	ASSERT_NE(NULL, sh);
	pids[0] = fork();
	if (!pids[0])
		scribbler_proc(sh);
	pids[1] = fork();
	if (!pids[1])
		bystander_proc(sh);
	EXPECT_EQ(0, reap(pids, 2));
	for (int w = 0; w < 2; w++)
		if (sh->why[w][0])
			TH_LOG("%s: %s", w ? "bystander" : "scribbler", sh->why[w]);
	TH_LOG("bystander: %lu round trips while its neighbour scribbled",
	       sh->rounds[1]);
	EXPECT_EQ(0, sh->failed);
	EXPECT_LT(100, sh->rounds[1]);
	/* Everything of both went away. */
	EXPECT_EQ(qps0, res_count("shca0", "qp"));
	EXPECT_EQ(cqs0, res_count("shca0", "cq"));
}

/* ---- fairness --------------------------------------------------------------- */

#define FLOOD_QPS	10000
#define VICTIM_ROUNDS	3000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median round trip of @n on @s's pair 0, in microseconds; < 0: lost. */
static double median_rtt(struct qpset *s, int n)
{
	double *v = calloc((size_t)n, sizeof(*v)), m;

	for (int i = 0; i < n; i++) {
		uint64_t t = rc_now_us();

		if (qpset_round_trip(s, 0, 8, RT_MS)) {
			free(v);
			return -1;
		}
		v[i] = (double)(rc_now_us() - t);
	}
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	m = v[n / 2];
	free(v);
	return m;
}

static void flooder_proc(struct shared *sh)
{
	struct qpset_cfg c = { .nqp = FLOOD_QPS, .ncq = FLOOD_QPS / 2,
			       .depth = 1, .buf_size = 1 << 16 };
	uint64_t t0 = rc_now_us();
	struct softhca_db_area *db;
	struct qpset s;

	if (qpset_open(&s, &c)) {
		fail(sh, 0, qpset_err);
		pthread_barrier_wait(&sh->barrier);
		pthread_barrier_wait(&sh->barrier);
		_exit(1);
	}
	db = to_sctx(s.ctx)->db;
	sh->median_us[3] = (double)(rc_now_us() - t0);
	pthread_barrier_wait(&sh->barrier);	/* set up: victim, quiet */
	pthread_barrier_wait(&sh->barrier);	/* victim measured: flood */
	while (!sh->stop) {
		/* A real round trip keeps the area watched (or calling)... */
		if (qpset_round_trip(&s, 0, 8, RT_MS)) {
			fail(sh, 0, qpset_err);
			break;
		}
		/* ...and every QP's hint rung, with nothing behind it. */
		memset(db->slot, 1, sizeof(db->slot));
		memset(db->group, 1, sizeof(db->group));
		for (int t = 0; t < SOFTHCA_DB_MAX_THREADS; t++)
			__atomic_store_n(&db->thread[t].pending, 1,
					 __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		sh->rounds[0]++;
	}
	qpset_close(&s);
	_exit(sh->why[0][0] ? 1 : 0);
}

static void victim_proc(struct shared *sh)
{
	struct qpset_cfg c = { .nqp = 2, .ncq = 2, .depth = 4,
			       .buf_size = 1 << 16 };
	struct qpset s;
	int ok = !qpset_open(&s, &c);

	if (!ok)
		fail(sh, 1, qpset_err);
	pthread_barrier_wait(&sh->barrier);
	if (ok) {
		median_rtt(&s, 300);		/* warm up */
		sh->median_us[0] = median_rtt(&s, VICTIM_ROUNDS);
	}
	pthread_barrier_wait(&sh->barrier);
	if (ok) {
		/* Let the flood start, then measure through it. */
		while (sh->rounds[0] < 20 && !sh->failed)
			usleep(1000);
		sh->median_us[1] = median_rtt(&s, VICTIM_ROUNDS);
		sh->stop = 1;
		usleep(100000);
		sh->median_us[2] = median_rtt(&s, VICTIM_ROUNDS);
		qpset_close(&s);
	} else {
		sh->stop = 1;
	}
	_exit(ok ? 0 : 1);
}

TEST_F_TIMEOUT(scale, flood_costs_only_the_flooder, 600)
{
	struct shared *sh = shared_new(2);
	double quiet, flood, after;
	pid_t pids[2];

	ASSERT_NE(NULL, sh);
	pids[0] = fork();
	if (!pids[0])
		flooder_proc(sh);
	pids[1] = fork();
	if (!pids[1])
		victim_proc(sh);
	EXPECT_EQ(0, reap(pids, 2));
	for (int w = 0; w < 2; w++)
		if (sh->why[w][0])
			TH_LOG("%s: %s", w ? "victim" : "flooder", sh->why[w]);
	ASSERT_EQ(0, sh->failed);
	quiet = sh->median_us[0];
	flood = sh->median_us[1];
	after = sh->median_us[2];
	TH_LOG("flooder: %d QPs created and connected in %.1f s",
	       FLOOD_QPS, sh->median_us[3] / 1e6);
	TH_LOG("victim round trip: %.1f us quiet, %.1f us while %lu floods of %d hints, %.1f us after",
	       quiet, flood, sh->rounds[0], FLOOD_QPS, after);
	ASSERT_LT(0, quiet);
	ASSERT_LT(0, flood);
	/* A host that slowed us down by itself says nothing about fairness. */
	if (after > 1.5 * quiet || quiet > 1.5 * after)
		SKIP(return, "host contention: quiet %.1f us before, %.1f us after",
		     quiet, after);
	EXPECT_LT(flood, 2 * quiet);
}

TEST_HARNESS_MAIN
