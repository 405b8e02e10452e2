/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Many RC QPs in one context, for the scale tests and tools: one PD, one
 * registered buffer, a few CQs shared round robin, and QPs connected in
 * pairs inside the context (QP 2i <-> QP 2i+1, through the device's RoCE
 * v2 IPv4 GID), all in RTS. Small queues, so that 10,000 of them fit.
 * Functions return 0 or -1 with a description in qpset_err.
 */
#ifndef SOFTHCA_SELFTEST_QPSET_H
#define SOFTHCA_SELFTEST_QPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

extern __thread char qpset_err[256];

struct qpset_cfg {
	const char *dev;		/* default "shca0" */
	int nqp;			/* even */
	int ncq;			/* QP i completes on cq[i % ncq] */
	uint32_t depth;			/* max_send_wr = max_recv_wr */
	size_t buf_size;		/* one MR over it, local + remote write */
	struct ibv_context *ctx;	/* use this one instead of opening */
};

struct qpset {
	struct qpset_cfg cfg;
	struct ibv_context *ctx;
	bool own_ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_cq **cq;
	struct ibv_qp **qp;
	int gid_index;
	union ibv_gid gid;
};

/* Everything of @c created, every QP in RTS. On failure nothing is left. */
int qpset_open(struct qpset *s, const struct qpset_cfg *c);
void qpset_close(struct qpset *s);

static inline struct ibv_cq *qpset_cq(const struct qpset *s, int i)
{
	return s->cq[i % s->cfg.ncq];
}

/*
 * One SEND of @len bytes from QP @from to its peer @from ^ 1 (receive
 * posted first), both completions polled within @ms. 0, or -1 with
 * qpset_err saying which completion did not come.
 */
int qpset_round_trip(struct qpset *s, int from, uint32_t len, int ms);

/* A context's QP moved INIT -> RTR -> RTS towards QP number @dest. */
int qpset_qp_to_rts(struct ibv_qp *qp, uint32_t dest, int sgid,
		    const union ibv_gid *dgid);
/* The RoCE v2 IPv4-mapped GID of port 1, or -1. */
int qpset_find_gid(struct ibv_context *ctx, union ibv_gid *gid);
/* The device called @name opened, or NULL. */
struct ibv_context *qpset_open_dev(const char *name);

#endif
