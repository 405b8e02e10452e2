// SPDX-License-Identifier: GPL-2.0
/*
 * qp_scale: many QPs on one device, for the scale section of `make bench`
 * (scripts/bench-guest, Documentation/bench.md). Any RDMA device: the same
 * numbers are taken on softhca and on rdma_rxe.
 *
 *   qp_scale hold -d DEV -n QPS
 *       creates QPS RC QPs on QPS / 2 CQs (every fourth CQ armed), connects
 *       them in pairs and moves them to RTS, prints "held qps=N" and keeps
 *       them, idle, until its standard input closes; then destroys them.
 *   qp_scale time -d DEV -n QPS
 *       creates QPS RC QPs (one CQ), moves them to RTS, destroys them, and
 *       prints "time qps=N create_s=.. rts_s=.. destroy_s=..".
 *
 * Exit status 0 on success, 1 on any failure (the reason on stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "qpset.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_qp *create_rc(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static int hold(const char *dev, int n)
{
	struct qpset_cfg c = { .dev = dev, .nqp = n, .ncq = n / 2 ? n / 2 : 1,
			       .depth = 1, .buf_size = 4096 };
	struct qpset s;
	char buf[16];

	if (qpset_open(&s, &c)) {
		fprintf(stderr, "qp_scale: %s\n", qpset_err);
		return 1;
	}
	/* Some CQs wait for an event, as an application's would. */
	for (int i = 0; i < c.ncq; i += 4)
		ibv_req_notify_cq(s.cq[i], 0);
	printf("held qps=%d cqs=%d\n", n, c.ncq);
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	qpset_close(&s);
	return 0;
}

static int timed(const char *dev, int n)
{
	struct ibv_qp **qp = calloc((size_t)n, sizeof(*qp));
	struct ibv_context *ctx = qpset_open_dev(dev);
	double t0, t1, t2, t3;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	int gidx, ret = 1;

	if (!qp || !ctx) {
		fprintf(stderr, "qp_scale: cannot open %s\n", dev);
		return 1;
	}
	gidx = qpset_find_gid(ctx, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (gidx < 0 || !pd || !cq) {
		fprintf(stderr, "qp_scale: %s: no GID, PD or CQ\n", dev);
		goto out;
	}
	t0 = now_s();
	for (int i = 0; i < n; i++) {
		qp[i] = create_rc(pd, cq);
		if (!qp[i]) {
			fprintf(stderr, "qp_scale: create_qp %d: %s\n", i,
				strerror(errno));
			goto out;
		}
	}
	t1 = now_s();
	for (int i = 0; i < n; i++) {
		if (qpset_qp_to_rts(qp[i], qp[i ^ 1]->qp_num,
				    gidx, &gid)) {
			fprintf(stderr, "qp_scale: QP %d to RTS: %s\n", i,
				strerror(errno));
			goto out;
		}
	}
	t2 = now_s();
	for (int i = 0; i < n; i++) {
		if (ibv_destroy_qp(qp[i])) {
			fprintf(stderr, "qp_scale: destroy_qp %d failed\n", i);
			goto out;
		}
		qp[i] = NULL;
	}
	t3 = now_s();
	printf("time qps=%d create_s=%.3f rts_s=%.3f destroy_s=%.3f\n", n,
	       t1 - t0, t2 - t1, t3 - t2);
	ret = 0;
out:
	for (int i = 0; i < n; i++)
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

int main(int argc, char **argv)
{
	const char *dev = "shca0", *mode = argc > 1 ? argv[1] : "";
	int n = 1000, opt;

	optind = 2;
	while ((opt = getopt(argc, argv, "d:n:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (n < 2 || n % 2)
		goto usage;
	if (!strcmp(mode, "hold"))
		return hold(dev, n);
	if (!strcmp(mode, "time"))
		return timed(dev, n);
usage:
	fprintf(stderr, "usage: qp_scale hold|time [-d DEV] [-n QPS (even)]\n");
	return 2;
}
