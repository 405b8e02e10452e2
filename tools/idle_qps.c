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

/* Index of a RoCE v2 GID holding an IPv4-mapped address, or -1. */
static int roce_v2_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest_qpn, int sgid, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)sgid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		return -1;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
	return ibv_modify_qp(qp, &a, mask) ? -1 : 0;
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static void usage(void)
{
	fprintf(stderr, "usage: idle_qps [-d DEV] [-n QPS (even)] [-t SECONDS] [-k COMM]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = "shca0";
	int nqps = 100, gidx, opt, ret = 1;
	double seconds = 5.0;
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp **qp;
	union ibv_gid gid;

	while ((opt = getopt(argc, argv, "d:n:t:k:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': nqps = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'k': comm_want = optarg; break;
		default: usage();
		}
	}
	if (nqps < 0 || nqps % 2 || seconds <= 0)
		usage();

	/* Reference: the device exists, nothing of ours is open yet. */
	if (measure(0, seconds))
		return 1;

	qp = calloc((size_t)nqps + 1, sizeof(*qp));
	ctx = open_dev(dev);
	if (!qp || !ctx) {
		fprintf(stderr, "idle_qps: cannot open %s\n", dev);
		return 1;
	}
	gidx = roce_v2_ipv4_gid(ctx, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 2 * nqps + 1, NULL, NULL, 0);
	if (gidx < 0 || !pd || !cq) {
		fprintf(stderr, "idle_qps: %s: no RoCE v2 IPv4 GID, PD or CQ\n", dev);
		goto out;
	}
	for (int i = 0; i < nqps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &ia);
		if (!qp[i]) {
			fprintf(stderr, "idle_qps: create_qp %d: %s\n", i, strerror(errno));
			goto out;
		}
	}
	for (int i = 0; i < nqps; i++) {
		if (to_rts(qp[i], qp[i ^ 1]->qp_num, gidx, &gid)) {
			fprintf(stderr, "idle_qps: QP %d to RTS: %s\n", i, strerror(errno));
			goto out;
		}
	}
	for (int i = 0; i < nqps; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (ibv_query_qp(qp[i], &a, IBV_QP_STATE, &ia) || a.qp_state != IBV_QPS_RTS) {
			fprintf(stderr, "idle_qps: QP %d not in RTS\n", i);
			goto out;
		}
	}
	/* Let anything the setup started settle before measuring. */
	usleep(500000);
	ret = measure(nqps, seconds) ? 1 : 0;
out:
	for (int i = 0; i < nqps; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(qp);
	return ret;
}
