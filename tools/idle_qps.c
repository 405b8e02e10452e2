// SPDX-License-Identifier: GPL-2.0
/*
 * idle_qps: CPU time of the softhca engine kthread while the device is idle,
 * first with no QP, then with N RC QPs (default 100) created on one device,
 * connected in pairs (QP 2i <-> QP 2i+1, through the device's RoCE v2 GID)
 * and moved to RTS, with no traffic at all. `make bench` runs it in the VM.
 *
 *   idle_qps [-d DEV] [-n QPS] [-t SECONDS] [-k COMM]
 *
 * The engine's CPU time is read from /proc/<pid>/schedstat (run time in ns)
 * of every task whose comm starts with COMM (default softhca_engine: the
 * threads are softhca_engine0, 1, ...), or from the
 * utime + stime ticks of /proc/<pid>/stat when schedstat is missing. Output,
 * one line per phase, for scripts/bench-guest:
 *
 *   idle qps=<n> seconds=<s> engine_ns=<ns> engine_pct=<% of one CPU> \
 *        threads=<k> vm_busy_pct=<% of all VM CPUs> \
 *        engine_total_ns=<run time since the thread started> source=<schedstat|stat>
 *
 * Exit status 0 when both phases were measured, 1 on any failure.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "qpset.h"

static const char *comm_want = "softhca_engine";

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	char *nl;

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	return 0;
}

struct sample {
	uint64_t engine_ns;	/* summed over the matching tasks, since they started */
	int threads;
	bool schedstat;		/* every thread read from schedstat */
	uint64_t busy, all;	/* /proc/stat ticks, whole VM */
	uint64_t t_ns;		/* CLOCK_MONOTONIC */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Run time of task @pid in ns, from schedstat or else from stat ticks. */
static int task_ns(const char *pid, uint64_t *ns, bool *from_schedstat)
{
	char path[300], buf[1024], *p;
	unsigned long long run;
	unsigned long ut, st;

	snprintf(path, sizeof(path), "/proc/%s/schedstat", pid);
	if (!read_line(path, buf, sizeof(buf)) && sscanf(buf, "%llu", &run) == 1) {
		*ns = run;
		*from_schedstat = true;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (read_line(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	/* after ")": state(3) ppid ... utime(14) stime(15) */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	*ns = (uint64_t)(ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	*from_schedstat = false;
	return 0;
}

static void sample(struct sample *s)
{
	unsigned long long v[8] = {};
	DIR *d = opendir("/proc");
	struct dirent *de;
	FILE *f;

	memset(s, 0, sizeof(*s));
	s->schedstat = true;
	while (d && (de = readdir(d))) {
		char path[300], comm[64];
		uint64_t ns;
		bool ss;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (read_line(path, comm, sizeof(comm)) ||
		    strncmp(comm, comm_want, strlen(comm_want)))
			continue;
		if (task_ns(de->d_name, &ns, &ss))
			continue;
		s->engine_ns += ns;
		s->threads++;
		s->schedstat &= ss;
	}
	if (d)
		closedir(d);
	f = fopen("/proc/stat", "r");
	if (f) {
		/* user nice system idle iowait irq softirq steal */
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
			s->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
			s->all = s->busy + v[3] + v[4];
		}
		fclose(f);
	}
	s->t_ns = now_ns();
}

static int measure(int nqps, double seconds)
{
	struct sample a, b;
	double pct, vm;

	sample(&a);
	usleep((useconds_t)(seconds * 1e6));
	sample(&b);
	if (!a.threads || a.threads != b.threads) {
		fprintf(stderr, "idle_qps: %d, then %d tasks named %s\n", a.threads,
			b.threads, comm_want);
		return -1;
	}
	pct = 100.0 * (double)(b.engine_ns - a.engine_ns) / (double)(b.t_ns - a.t_ns);
	vm = b.all > a.all ? 100.0 * (double)(b.busy - a.busy) / (double)(b.all - a.all) : 0;
	printf("idle qps=%d seconds=%.2f engine_ns=%llu engine_pct=%.4f threads=%d vm_busy_pct=%.1f engine_total_ns=%llu source=%s\n",
	       nqps, (double)(b.t_ns - a.t_ns) / 1e9,
	       (unsigned long long)(b.engine_ns - a.engine_ns), pct, b.threads, vm,
	       (unsigned long long)b.engine_ns,
	       a.schedstat && b.schedstat ? "schedstat" : "stat");
	fflush(stdout);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: idle_qps [-d DEV] [-n QPS (even)] [-t SECONDS] [-k COMM]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct qpset_cfg c = { .dev = "shca0", .nqp = 100, .ncq = 1,
			       .depth = 16, .buf_size = 4096 };
	double seconds = 5.0;
	struct qpset s;
	int opt, ret;

	while ((opt = getopt(argc, argv, "d:n:t:k:")) != -1) {
		switch (opt) {
		case 'd': c.dev = optarg; break;
		case 'n': c.nqp = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'k': comm_want = optarg; break;
		default: usage();
		}
	}
	if (c.nqp < 2 || c.nqp % 2 || seconds <= 0)
		usage();

	/* Reference: the device exists, nothing of ours is open yet. */
	if (measure(0, seconds))
		return 1;
	/* Every QP in RTS, connected in pairs, no traffic. */
	if (qpset_open(&s, &c)) {
		fprintf(stderr, "idle_qps: %s\n", qpset_err);
		return 1;
	}
	/* Let anything the setup started settle before measuring. */
	usleep(500000);
	ret = measure(c.nqp, seconds) ? 1 : 0;
	qpset_close(&s);
	return ret;
}
