// SPDX-License-Identifier: GPL-2.0
/*
 * XRC, eXtended Reliable Connection (Documentation/testing.md "xrc"): an
 * XRC domain opened through a file, XRC SRQs (each its own PD, CQ and
 * number), an XRC_SEND initiator connected to an XRC_RECV target. Each
 * test of the fixture runs twice: same_dev, everything on shca0 in one
 * context; cross_dev, the initiator (its PD, CQ and MR) on shca0 and the
 * target with the domain, the SRQs and their PDs, CQs and MRs on shca1
 * (added on veth1 for the test), each side its own context, each QP's
 * AV the other side's GID. SOFTHCA_RC_CROSS="DEV0 DEV1" (selftests/lib/rc.h;
 * wire_xrc.sh: "shca9 shca8", across the wire) names the two devices
 * instead; same_dev and the single-device tests then run on DEV0.
 * Checked: the device cap, distinct SRQ numbers, the
 * domain busy while used (EBUSY), no queue to post to on a target (nor a
 * receive queue on an initiator), LOCAL_INV and BIND_MW refused for an
 * initiator (EOPNOTSUPP); SENDs with and
 * without immediate, 0 B .. 64 KiB, alternating between two SRQs through
 * one target, each receive on the named SRQ's CQ with its wr_id, the
 * target's QPN, the initiator's as src_qp, byte_len, immediate, every
 * byte and a canary after it, the SRQs' free lists recycled; WRITE,
 * WRITE with immediate (taking a receive of the named SRQ), READ and both
 * atomics against MRs of the named SRQ's PD; rkeys checked against that
 * PD and no other (the initiator's own PD, or across devices its buffer
 * in a PD of its own on the target's device; another SRQ's:
 * REM_ACCESS_ERR, nothing touched); a request naming an SRQ of another
 * domain, a destroyed one, a basic one or no SRQ at all (REM_ACCESS_ERR,
 * the WR after it flushed, both QPs in ERR, QP_ACCESS_ERR on the target
 * only, rx_xrc_srq_errors + 1 on the target's device, no receive
 * consumed); RNR while the SRQ is
 * empty (rnr_retry 7: delivered once a receive comes; 0:
 * RNR_RETRY_EXC_ERR); the extended post-send API with the SRQ number set
 * before or after the data; ibv_open_qp and delivery into another
 * process's SRQ of the shared domain (that process on the target's
 * device); teardown in any order with the
 * domain's EBUSY until its last user is gone and `rdma res` back to the
 * baseline (on one device).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "ud.h"			/* ud_counter(): the port's counters */
#include "verbs_util.h"

#define SRQ_WR		7		/* asked and granted per SRQ */
#define RLEN		(64 * 1024)	/* what one receive takes */
#define SLOT		(RLEN + 4096)	/* a receive, then room for a canary */
#define NSLOT		8		/* one more than SRQ_WR: slots rotate */
#define RDMA_OFF	(NSLOT * SLOT)	/* an SRQ buffer's RDMA target area */
#define RDMA_LEN	(256 * 1024)
#define SRQ_BUF		(RDMA_OFF + RDMA_LEN)
#define INI_BUF		(1024 * 1024)	/* sources, READ and atomic results */
#define READ_OFF	(512 * 1024)
#define ATOM_OFF	(INI_BUF - 4096)

#define PSN_INI		0x1234		/* the initiator's SQ = target's RQ */
#define PSN_TGT		0x5678

#define CTR		"rx_xrc_srq_errors"

/* An XRC SRQ and what it brings: its PD, its CQ, a registered buffer. */
struct xsrq {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	uint32_t srqn;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct xenv {
	/* The initiator's side (dev 0) and the target's (dev 1, or the same). */
	bool cross;			/* two devices, one context each */
	int shca1_added;		/* env_open added shca1 (rc_shca1_add) */
	const char *idev, *tdev;
	struct ibv_context *ictx, *tctx;	/* one context if !cross */
	int igid_index, tgid_index;
	union ibv_gid igid, tgid;
	char path[64];			/* the XRC domain's file */
	bool own_path;			/* made (and unlinked) by env_open */
	int fd;
	struct ibv_xrcd *xrcd;		/* the target's */
	struct ibv_pd *pd;		/* the initiator's */
	struct ibv_cq *scq;
	struct ibv_mr *mr;
	uint8_t *buf;
	/* cross: the initiator's buffer on the target's device, its own PD */
	struct ibv_pd *opd;
	struct ibv_mr *omr;
	struct xsrq s[2];		/* SRQ A and SRQ B */
	struct ibv_qp *ini, *tgt;
};

/* ---- objects ------------------------------------------------------------- */

static int make_tmp(char *path, size_t len, const char *name)
{
	int fd;

	snprintf(path, len, "/tmp/xrc-%s.XXXXXX", name);
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* The XRC domain of file @path (its fd in *fd), O_CREAT if @oflags says. */
static struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, const char *path,
				  int oflags, int *fd)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.oflags = oflags,
	};
	struct ibv_xrcd *x;

	*fd = open(path, O_RDONLY | O_CREAT, 0600);
	if (*fd < 0)
		return NULL;
	xa.fd = *fd;
	x = ibv_open_xrcd(ctx, &xa);
	if (!x) {
		int err = errno;

		close(*fd);
		*fd = -1;
		errno = err;
	}
	return x;
}

static struct ibv_srq *xsrq_create(struct ibv_context *ctx, struct ibv_xrcd *xrcd,
				   struct ibv_pd *pd, struct ibv_cq *cq,
				   uint32_t max_wr, uint32_t *srqn)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = max_wr, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd, .xrcd = xrcd, .cq = cq,
	};
	struct ibv_srq *srq = ibv_create_srq_ex(ctx, &sa);

	if (srq && ibv_get_srq_num(srq, srqn)) {
		ibv_destroy_srq(srq);
		errno = EPROTO;
		return NULL;
	}
	return srq;
}

/* An initiator; @ops 0: ibv_create_qp_ex with the PD only. */
static struct ibv_qp *ini_create(struct xenv *e, uint64_t ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = e->scq, .qp_type = IBV_QPT_XRC_SEND,
		.cap = { .max_send_wr = 64, .max_send_sge = 2,
			 .max_inline_data = 256 },
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = e->pd,
	};

	if (ops) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = ops;
	}
	return ibv_create_qp_ex(e->ictx, &ia);
}

static struct ibv_qp *tgt_create(struct ibv_context *ctx, struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrcd,
	};

	return ibv_create_qp_ex(ctx, &ia);
}

/* The AV of the target's QP (@tgt) or the initiator's: the other side's GID. */
static void set_av(const struct xenv *e, struct ibv_qp_attr *a, bool tgt)
{
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = tgt ? e->igid : e->tgid;
	a->ah_attr.grh.sgid_index = (uint8_t)(tgt ? e->tgid_index : e->igid_index);
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.port_num = 1;
}

/* Both from RESET to RTS, each the other's destination. 0 or -errno. */
static int xrc_connect(const struct xenv *e, struct ibv_qp *ini,
		       struct ibv_qp *tgt, uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	int mask, ret;

	rc_init_attr(&a, &mask, 0);
	ret = ibv_modify_qp(ini, &a, mask);
	if (ret)
		return -ret;
	rc_init_attr(&a, &mask, RC_QP_ACCESS_ALL);
	ret = ibv_modify_qp(tgt, &a, mask);
	if (ret)
		return -ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = ini->qp_num;
	a.rq_psn = PSN_INI;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;		/* 0.01 ms */
	set_av(e, &a, true);
	ret = ibv_modify_qp(tgt, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return -ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.sq_psn = PSN_TGT;
	ret = ibv_modify_qp(tgt, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
	if (ret)
		return -ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = tgt->qp_num;
	a.rq_psn = PSN_TGT;
	set_av(e, &a, false);
	ret = ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	if (ret)
		return -ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = PSN_INI;
	a.max_rd_atomic = 4;
	ret = ibv_modify_qp(ini, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			    IBV_QP_MAX_QP_RD_ATOMIC);
	return -ret;
}

/*
 * *ini and *tgt (destroyed first if set) replaced by a new connected pair,
 * the target in @xrcd, the initiator with send ops @ops (0: default).
 */
static int pair_new(struct xenv *e, struct ibv_xrcd *xrcd, uint8_t rnr_retry,
		    uint64_t ops, struct ibv_qp **ini, struct ibv_qp **tgt)
{
	if (*ini && ibv_destroy_qp(*ini))
		return -EBUSY;
	*ini = NULL;
	if (*tgt && ibv_destroy_qp(*tgt))
		return -EBUSY;
	*tgt = NULL;
	*ini = ini_create(e, ops);
	if (!*ini)
		return -errno;
	*tgt = tgt_create(e->tctx, xrcd);
	if (!*tgt)
		return -errno;
	return xrc_connect(e, *ini, *tgt, rnr_retry);
}

static uint8_t *buf_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int xsrq_open(struct xenv *e, struct xsrq *s)
{
	s->pd = ibv_alloc_pd(e->tctx);
	s->cq = ibv_create_cq(e->tctx, 256, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		return -errno;
	s->srq = xsrq_create(e->tctx, e->xrcd, s->pd, s->cq, SRQ_WR, &s->srqn);
	if (!s->srq)
		return -errno;
	s->buf = buf_map(SRQ_BUF);
	if (!s->buf)
		return -errno;
	s->mr = ibv_reg_mr(s->pd, s->buf, SRQ_BUF, RC_ACCESS_ALL);
	return s->mr ? 0 : -errno;
}

static void xsrq_close(struct xsrq *s)
{
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->buf)
		munmap(s->buf, SRQ_BUF);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	memset(s, 0, sizeof(*s));
}

/* Device @i of a cross pair (0: the initiator's), or of everything. */
static const char *xdev(int i)
{
	if (rc_cross_dev(0))
		return rc_cross_dev(i);
	return i ? "shca1" : "shca0";
}

/* The RoCE v2 GID of the device's address (198.18.0.1, else .2). */
static int find_gid(struct ibv_context *ctx, int *index, union ibv_gid *gid)
{
	*index = rc_find_gid(ctx, RC_IP0);
	if (*index < 0)
		*index = rc_find_gid(ctx, RC_IP1);
	if (*index < 0)
		return *index;
	return ibv_query_gid(ctx, 1, *index, gid) ? -EIO : 0;
}

/* A failed step of env_open: its description in rc_err, -errno. */
static int env_fail(const struct xenv *e, int err, const char *what)
{
	snprintf(rc_err, sizeof(rc_err), "%s (initiator on %s, target on %s): %s",
		 what, e->idev, e->tdev, strerror(err));
	return -err;
}

/*
 * The whole set: the initiator with its PD, CQ and MR on dev 0; the
 * domain of file @path (NULL: a new temporary file), SRQ A and B and the
 * target on dev 1 (@cross: shca1, added if not there, or the second of
 * SOFTHCA_RC_CROSS; else dev 0, in the initiator's context); the
 * initiator connected to the target. On failure rc_err says why.
 */
static int env_open(struct xenv *e, const char *path, bool cross)
{
	int ret;

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->cross = cross;
	e->idev = xdev(0);
	e->tdev = xdev(cross);
	if (path) {
		snprintf(e->path, sizeof(e->path), "%s", path);
	} else {
		ret = make_tmp(e->path, sizeof(e->path), "domain");
		if (ret)
			return env_fail(e, -ret, "a temporary file");
		e->own_path = true;
	}
	if (cross && !rc_cross_dev(0)) {
		ret = rc_shca1_add();
		if (ret < 0)
			return ret;	/* rc_err has it */
		e->shca1_added = ret;
	}
	e->ictx = open_dev(e->idev);
	if (!e->ictx)
		return env_fail(e, errno, "open the initiator's device");
	e->tctx = e->ictx;
	if (cross) {
		e->tctx = open_dev(e->tdev);
		if (!e->tctx)
			return env_fail(e, errno, "open the target's device");
	}
	ret = find_gid(e->ictx, &e->igid_index, &e->igid);
	if (ret)
		return env_fail(e, -ret, "the initiator's RoCE v2 GID");
	ret = find_gid(e->tctx, &e->tgid_index, &e->tgid);
	if (ret)
		return env_fail(e, -ret, "the target's RoCE v2 GID");
	e->xrcd = xrcd_open(e->tctx, e->path, O_CREAT, &e->fd);
	if (!e->xrcd)
		return env_fail(e, errno, "open_xrcd");
	e->pd = ibv_alloc_pd(e->ictx);
	e->scq = ibv_create_cq(e->ictx, 256, NULL, NULL, 0);
	e->buf = buf_map(INI_BUF);
	if (!e->pd || !e->scq || !e->buf)
		return env_fail(e, errno, "the initiator's PD, CQ and buffer");
	e->mr = ibv_reg_mr(e->pd, e->buf, INI_BUF, RC_ACCESS_ALL);
	if (!e->mr)
		return env_fail(e, errno, "the initiator's MR");
	for (int i = 0; i < 2; i++) {
		ret = xsrq_open(e, &e->s[i]);
		if (ret)
			return env_fail(e, -ret, i ? "SRQ B" : "SRQ A");
	}
	ret = pair_new(e, e->xrcd, 7, 0, &e->ini, &e->tgt);
	return ret ? env_fail(e, -ret, "the connected initiator and target") : 0;
}

static void env_close(struct xenv *e)
{
	if (e->ini)
		ibv_destroy_qp(e->ini);
	if (e->tgt)
		ibv_destroy_qp(e->tgt);
	for (int i = 0; i < 2; i++)
		xsrq_close(&e->s[i]);
	if (e->omr)
		ibv_dereg_mr(e->omr);
	if (e->opd)
		ibv_dealloc_pd(e->opd);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, INI_BUF);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->xrcd)
		ibv_close_xrcd(e->xrcd);
	if (e->fd >= 0)
		close(e->fd);
	if (e->tctx && e->tctx != e->ictx)
		ibv_close_device(e->tctx);
	if (e->ictx)
		ibv_close_device(e->ictx);
	if (e->own_path)
		unlink(e->path);
	if (e->shca1_added)
		rc_shca1_del();
	memset(e, 0, sizeof(*e));
}

RC_SHCA1_GUARD()

FIXTURE(xrc) {
	struct xenv e;
};

/* The target's side on the initiator's device, or on another device. */
FIXTURE_VARIANT(xrc) {
	bool cross;
};

FIXTURE_VARIANT_ADD(xrc, same_dev) { .cross = false };
FIXTURE_VARIANT_ADD(xrc, cross_dev) { .cross = true };

FIXTURE_SETUP(xrc)
{
	ASSERT_EQ(0, env_open(&self->e, NULL, variant->cross)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(xrc)
{
	env_close(&self->e);
}

/* ---- posting and expecting ---------------------------------------------- */

/* One signaled WR on an initiator naming SRQ @srqn (no SGE if len 0, NULL). */
static int xpost(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		 uint32_t rkey, uint32_t imm, uint32_t srqn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = addr || len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),
	}, *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(qp, &wr, &bad);
}

static int xpost_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
			uint64_t *local, uint32_t lkey, uint64_t raddr,
			uint32_t rkey, uint64_t compare_add, uint64_t swap,
			uint32_t srqn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad = NULL;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(qp, &wr, &bad);
}

/* The initiator's successful completion. */
static struct rc_wc_want want_req(uint64_t wr_id, enum ibv_wc_opcode op,
				  uint32_t len, const struct ibv_qp *ini)
{
	return (struct rc_wc_want){ .wr_id = wr_id, .status = IBV_WC_SUCCESS,
		.opcode = op, .byte_len = len, .qp_num = ini->qp_num };
}

/* A receive of an XRC SRQ: the target's QPN, the initiator's as source. */
static struct rc_wc_want want_recv(uint64_t wr_id, enum ibv_wc_opcode op,
				   uint32_t len, const struct ibv_qp *tgt,
				   const struct ibv_qp *ini)
{
	struct rc_wc_want w = want_req(wr_id, op, len, tgt);

	w.src_qp = ini->qp_num;
	return w;
}

static struct rc_wc_want want_err(uint64_t wr_id, enum ibv_wc_status st,
				  const struct ibv_qp *qp)
{
	return (struct rc_wc_want){ .wr_id = wr_id, .status = st,
				    .qp_num = qp->qp_num };
}

/* The wr_id of receive slot @slot of SRQ @i (0: A, 1: B). */
static uint64_t slot_id(int i, uint32_t slot)
{
	return (i ? 0xb000u : 0xa000u) + slot;
}

/* A receive of RLEN bytes into slot @slot of SRQ @i, the slot set to 0xee. */
static int post_slot(struct xenv *e, int i, uint32_t slot)
{
	struct xsrq *s = &e->s[i];
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf + (size_t)slot * SLOT,
			       .length = RLEN, .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot_id(i, slot), .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	memset(s->buf + (size_t)slot * SLOT, 0xee, SLOT);
	return ibv_post_srq_recv(s->srq, &wr, &bad);
}

/*
 * Counter @name of device @dev once it reaches @want, or its value after
 * 2 s (the target counts before it NAKs, so it is there by the time the
 * initiator's error completion is; the sysfs value is cached 10 ms).
 * ib_core's shared netns mode shows a device of another namespace (the
 * wire's shca9 and shca8) in this one's sysfs too.
 */
static long long counter_reaches(const char *dev, const char *name, long long want)
{
	long long v = -1;

	for (int i = 0; i < 100 && v != want; i++)
		v = ud_counter(dev, name);	/* 20 ms each */
	return v;
}

#define A (&self->e.s[0])
#define B (&self->e.s[1])

/* ---- the tests ------------------------------------------------------------ */

TEST_F(xrc, caps_and_objects)
{
	struct xenv *e = &self->e;
	struct ibv_device_attr da;
	struct ibv_srq_attr sa;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_srq *third;
	struct ibv_qp *qp;
	uint32_t n3;
	struct ibv_send_wr wr = { .wr_id = 0x99, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
	struct ibv_recv_wr rwr = { .wr_id = 0x98 }, *rbad;

	ASSERT_EQ(0, ibv_query_device(e->ictx, &da));
	EXPECT_EQ(IBV_DEVICE_XRC, da.device_cap_flags & IBV_DEVICE_XRC)
		TH_LOG("%s", e->idev);
	ASSERT_EQ(0, ibv_query_device(e->tctx, &da));
	EXPECT_EQ(IBV_DEVICE_XRC, da.device_cap_flags & IBV_DEVICE_XRC)
		TH_LOG("%s", e->tdev);

	/* Two SRQs: two numbers, neither 0; the depth asked is granted. */
	EXPECT_NE(0u, A->srqn);
	EXPECT_NE(0u, B->srqn);
	EXPECT_NE(A->srqn, B->srqn);
	ASSERT_EQ(0, ibv_query_srq(A->srq, &sa));
	EXPECT_EQ((uint32_t)SRQ_WR, sa.max_wr);
	EXPECT_EQ(0u, sa.srq_limit);
	for (uint32_t i = 0; i < SRQ_WR; i++) {
		ASSERT_EQ(0, post_slot(e, 0, i)) TH_LOG("receive %u", i);
	}
	EXPECT_EQ(ENOMEM, post_slot(e, 0, SRQ_WR));

	/* In use (two SRQs and a target): the domain stays, and works. */
	EXPECT_EQ(EBUSY, ibv_close_xrcd(e->xrcd));
	third = xsrq_create(e->tctx, e->xrcd, A->pd, A->cq, 3, &n3);
	ASSERT_NE(NULL, third) TH_LOG("%s", strerror(errno));
	EXPECT_NE(0u, n3);
	EXPECT_NE(A->srqn, n3);
	EXPECT_NE(B->srqn, n3);
	EXPECT_EQ(0, ibv_destroy_srq(third));
	EXPECT_EQ(EBUSY, ibv_close_xrcd(e->xrcd));

	/* The target: RTS, XRC_RECV, connected to the initiator. */
	ASSERT_EQ(0, ibv_query_qp(e->tgt, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qia));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_EQ(e->ini->qp_num, qa.dest_qp_num);
	EXPECT_EQ(IBV_QPT_XRC_RECV, qia.qp_type);
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->ini));

	/* Initiators do not invalidate or bind (EOPNOTSUPP); the rest, yes. */
	errno = 0;
	EXPECT_EQ(NULL, ini_create(e, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV));
	EXPECT_EQ(EOPNOTSUPP, errno);
	errno = 0;
	EXPECT_EQ(NULL, ini_create(e, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW));
	EXPECT_EQ(EOPNOTSUPP, errno);
	qp = ini_create(e, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_READ |
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			IBV_QP_EX_WITH_SEND_WITH_INV);
	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	/*
	 * A target has no send queue: posting to it fails, nothing runs.
	 * Neither end has a receive queue (the SRQs are the receive queues).
	 */
	wr.qp_type.xrc.remote_srqn = A->srqn;
	EXPECT_NE(0, ibv_post_send(e->tgt, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	rbad = NULL;
	EXPECT_NE(0, ibv_post_recv(e->tgt, &rwr, &rbad));
	EXPECT_EQ(&rwr, rbad);
	rbad = NULL;
	EXPECT_NE(0, ibv_post_recv(e->ini, &rwr, &rbad));
	EXPECT_EQ(&rwr, rbad);
	rc_expect_quiet(_metadata, e->scq, "a send on a target");
	rc_expect_quiet(_metadata, A->cq, "a send on a target (SRQ A)");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->tgt));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->ini));
}

static const uint32_t sizes[16] = { 0, 1, 63, 64, 1023, 1024, 1025, 4095,
				    4096, 4097, 9000, 16384, 32767, 50000,
				    65535, 65536 };

/* Message @i: SRQ i % 2, each SRQ gets every size, half with immediate. */
static uint32_t msg_len(uint32_t i)
{
	return sizes[(i / 2 + 8 * (i % 2)) % 16];
}

static bool msg_imm(uint32_t i)
{
	return (i / 2) % 2;
}

/*
 * 32 SENDs through one target, alternating SRQ A and B, in rounds of 8:
 * each lands on the named SRQ's CQ in one of its posted slots, with
 * every WC field and byte; each used receive is re-posted into the slot
 * left free (8 slots for 7 receives), so 16 messages per SRQ go through
 * every slot and the free list more than twice.
 */
TEST_F(xrc, send_into_two_srqs)
{
	struct xenv *e = &self->e;
	bool posted[2][NSLOT] = {};
	uint32_t got[2] = {};

	for (int s = 0; s < 2; s++)
		for (uint32_t k = 0; k < SRQ_WR; k++) {
			ASSERT_EQ(0, post_slot(e, s, k));
			posted[s][k] = true;
		}
	for (uint32_t round = 0; round < 4; round++) {
		for (uint32_t k = 0; k < 8; k++) {
			uint32_t i = round * 8 + k, len = msg_len(i);
			uint8_t *src = e->buf + (size_t)k * RLEN;

			rc_fill(src, len, 0x100 + i);
			ASSERT_EQ(0, xpost(e->ini, msg_imm(i) ? IBV_WR_SEND_WITH_IMM :
					   IBV_WR_SEND, 0x100 + i, len ? src : NULL,
					   len, e->mr->lkey, 0, 0, 0x1e000000 + i,
					   e->s[i % 2].srqn));
		}
		for (uint32_t k = 0; k < 8; k++) {
			uint32_t i = round * 8 + k;
			struct rc_wc_want w = want_req(0x100 + i, IBV_WC_SEND,
						       msg_len(i), e->ini);

			if (msg_imm(i))
				w = rc_want_imm(w, 0x1e000000 + i);
			rc_expect_wc(_metadata, e->scq, &w);
		}
		for (uint32_t k = 0; k < 8; k++) {
			uint32_t i = round * 8 + k, len = msg_len(i), slot, spare;
			int s = i % 2;
			struct rc_wc_want w;
			struct ibv_wc wc;
			uint8_t *p;

			ASSERT_EQ(1, rc_poll(e->s[s].cq, &wc, 1, RC_WC_MS))
				TH_LOG("message %u on SRQ %c: %s", i, 'A' + s, rc_err);
			slot = (uint32_t)(wc.wr_id - slot_id(s, 0));
			ASSERT_LT(slot, (uint32_t)NSLOT)
				TH_LOG("message %u: wr_id %#llx not SRQ %c's", i,
				       (unsigned long long)wc.wr_id, 'A' + s);
			ASSERT_TRUE(posted[s][slot]) TH_LOG("slot %u taken twice", slot);
			w = want_recv(wc.wr_id, IBV_WC_RECV, len, e->tgt, e->ini);
			if (msg_imm(i))
				w = rc_want_imm(w, 0x1e000000 + i);
			EXPECT_EQ(0, rc_wc_check(&wc, &w))
				TH_LOG("message %u: %s", i, rc_err);
			p = e->s[s].buf + (size_t)slot * SLOT;
			rc_expect_bytes(_metadata, p, len, 0x100 + i, "received");
			rc_expect_canary(_metadata, p + len, 64, 0xee, "after it");
			posted[s][slot] = false;
			got[s]++;
			/* The free slot that is not this one, if any. */
			for (spare = 0; spare < NSLOT; spare++)
				if (!posted[s][spare] && spare != slot)
					break;
			if (spare == NSLOT)
				spare = slot;
			ASSERT_EQ(0, post_slot(e, s, spare));
			posted[s][spare] = true;
		}
	}
	EXPECT_EQ(16u, got[0]);
	EXPECT_EQ(16u, got[1]);
	rc_expect_quiet(_metadata, A->cq, "SRQ A: nothing more");
	rc_expect_quiet(_metadata, B->cq, "SRQ B: nothing more");
	rc_expect_quiet(_metadata, e->scq, "initiator: nothing more");
}

/*
 * RDMA through the target with MRs of the named SRQ's PD (neither is the
 * initiator's): WRITE (leaving SRQ A's receive alone), WRITE_IMM into A
 * and into B (each taking a receive of the SRQ it names, on that SRQ's
 * CQ, the data at the address and not in the receive), READ and both
 * atomics from A, READ and FETCH_ADD from B.
 */
TEST_F(xrc, rdma_ops)
{
	struct xenv *e = &self->e;
	uint8_t *ra = A->buf + RDMA_OFF, *rb = B->buf + RDMA_OFF;
	uint8_t *src = e->buf, *dst = e->buf + READ_OFF;
	uint64_t *old = (uint64_t *)(e->buf + ATOM_OFF);
	uint64_t *rema = (uint64_t *)(ra + 65536), *remb = (uint64_t *)(rb + 65536);
	struct rc_wc_want w;

	ASSERT_EQ(0, post_slot(e, 0, 0));
	ASSERT_EQ(0, post_slot(e, 1, 0));

	/* WRITE into A's area. */
	rc_fill(src, 5000, 31);
	memset(ra, 0xee, 5000 + 64);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE, 1, src, 5000, e->mr->lkey,
			   (uintptr_t)ra, A->mr->rkey, 0, A->srqn));
	w = want_req(1, IBV_WC_RDMA_WRITE, 5000, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	rc_expect_bytes(_metadata, ra, 5000, 31, "WRITE");
	rc_expect_canary(_metadata, ra + 5000, 64, 0xee, "after the WRITE");
	rc_expect_quiet(_metadata, A->cq, "a plain WRITE takes no receive");

	/* WRITE with immediate into A: A's receive, the data not in it. */
	rc_fill(src, 3000, 32);
	memset(ra + 8192, 0xee, 3000 + 64);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE_WITH_IMM, 2, src, 3000,
			   e->mr->lkey, (uintptr_t)ra + 8192, A->mr->rkey,
			   0xa1a1a1a1, A->srqn));
	w = rc_want_imm(want_req(2, IBV_WC_RDMA_WRITE, 3000, e->ini), 0xa1a1a1a1);
	rc_expect_wc(_metadata, e->scq, &w);
	w = rc_want_imm(want_recv(slot_id(0, 0), IBV_WC_RECV_RDMA_WITH_IMM, 3000,
				  e->tgt, e->ini), 0xa1a1a1a1);
	rc_expect_wc(_metadata, A->cq, &w);
	rc_expect_bytes(_metadata, ra + 8192, 3000, 32, "WRITE_IMM into A");
	rc_expect_canary(_metadata, ra + 8192 + 3000, 64, 0xee, "after it");
	rc_expect_canary(_metadata, A->buf, 4096, 0xee, "A's receive buffer");

	/* WRITE with immediate into B (B's PD, B's CQ). */
	rc_fill(src, 2000, 33);
	memset(rb, 0xee, 2000 + 64);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE_WITH_IMM, 3, src, 2000,
			   e->mr->lkey, (uintptr_t)rb, B->mr->rkey, 0xb2b2b2b2,
			   B->srqn));
	w = rc_want_imm(want_req(3, IBV_WC_RDMA_WRITE, 2000, e->ini), 0xb2b2b2b2);
	rc_expect_wc(_metadata, e->scq, &w);
	w = rc_want_imm(want_recv(slot_id(1, 0), IBV_WC_RECV_RDMA_WITH_IMM, 2000,
				  e->tgt, e->ini), 0xb2b2b2b2);
	rc_expect_wc(_metadata, B->cq, &w);
	rc_expect_bytes(_metadata, rb, 2000, 33, "WRITE_IMM into B");
	rc_expect_canary(_metadata, rb + 2000, 64, 0xee, "after it");
	rc_expect_canary(_metadata, B->buf, 4096, 0xee, "B's receive buffer");

	/* READ from A, then from B. */
	rc_fill(ra + 20000, 10000, 34);
	memset(dst, 0xee, 10000 + 64);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_READ, 4, dst, 10000, e->mr->lkey,
			   (uintptr_t)ra + 20000, A->mr->rkey, 0, A->srqn));
	w = want_req(4, IBV_WC_RDMA_READ, 10000, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	rc_expect_bytes(_metadata, dst, 10000, 34, "READ from A");
	rc_expect_canary(_metadata, dst + 10000, 64, 0xee, "after the READ");
	rc_fill(rb + 20000, 777, 35);
	memset(dst, 0xee, 777 + 64);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_READ, 5, dst, 777, e->mr->lkey,
			   (uintptr_t)rb + 20000, B->mr->rkey, 0, B->srqn));
	w = want_req(5, IBV_WC_RDMA_READ, 777, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	rc_expect_bytes(_metadata, dst, 777, 35, "READ from B");
	rc_expect_canary(_metadata, dst + 777, 64, 0xee, "after the READ");

	/* CMP_SWP on A: equal (swapped), then different (unchanged). */
	memset(ra + 65536 - 8, 0xee, 24);
	*rema = 0x1122334455667788ull;
	*old = 0;
	ASSERT_EQ(0, xpost_atomic(e->ini, IBV_WR_ATOMIC_CMP_AND_SWP, 6, old,
				  e->mr->lkey, (uintptr_t)rema, A->mr->rkey,
				  0x1122334455667788ull, 0xdeadbeefcafef00dull,
				  A->srqn));
	w = want_req(6, IBV_WC_COMP_SWAP, 8, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	EXPECT_EQ(0x1122334455667788ull, *old);
	EXPECT_EQ(0xdeadbeefcafef00dull, *rema);
	*old = 0;
	ASSERT_EQ(0, xpost_atomic(e->ini, IBV_WR_ATOMIC_CMP_AND_SWP, 7, old,
				  e->mr->lkey, (uintptr_t)rema, A->mr->rkey,
				  0x1122334455667788ull, 0x5555555555555555ull,
				  A->srqn));
	w = want_req(7, IBV_WC_COMP_SWAP, 8, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	EXPECT_EQ(0xdeadbeefcafef00dull, *old);
	EXPECT_EQ(0xdeadbeefcafef00dull, *rema);
	rc_expect_canary(_metadata, ra + 65536 - 8, 8, 0xee, "before the atomic");
	rc_expect_canary(_metadata, ra + 65536 + 8, 8, 0xee, "after the atomic");

	/* FETCH_ADD on A, and on B across the 64-bit wrap. */
	*rema = 1000;
	*old = 0;
	ASSERT_EQ(0, xpost_atomic(e->ini, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, old,
				  e->mr->lkey, (uintptr_t)rema, A->mr->rkey, 5, 0,
				  A->srqn));
	w = want_req(8, IBV_WC_FETCH_ADD, 8, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	EXPECT_EQ(1000u, *old);
	EXPECT_EQ(1005u, *rema);
	*remb = ~0ull;
	*old = 0;
	ASSERT_EQ(0, xpost_atomic(e->ini, IBV_WR_ATOMIC_FETCH_AND_ADD, 9, old,
				  e->mr->lkey, (uintptr_t)remb, B->mr->rkey, 2, 0,
				  B->srqn));
	w = want_req(9, IBV_WC_FETCH_ADD, 8, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	EXPECT_EQ(~0ull, *old);
	EXPECT_EQ(1u, *remb);

	rc_expect_quiet(_metadata, A->cq, "READ and atomics take no receive (A)");
	rc_expect_quiet(_metadata, B->cq, "READ and atomics take no receive (B)");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->tgt));
}

/*
 * The failed request of a pair: its error, the WR after it flushed, both
 * QPs in ERR, QP_ACCESS_ERR for the target and no other event.
 */
static void expect_access_err(struct __test_metadata *_metadata, struct xenv *e,
			      struct ibv_qp *ini, struct ibv_qp *tgt,
			      uint64_t bad_id, uint64_t next_id)
{
	struct ibv_async_event ev;
	struct rc_wc_want w;

	w = want_err(bad_id, IBV_WC_REM_ACCESS_ERR, ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_err(next_id, IBV_WC_WR_FLUSH_ERR, ini);
	rc_expect_wc(_metadata, e->scq, &w);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(tgt, IBV_QPS_ERR, 5000));
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(ini, IBV_QPS_ERR, 5000));
	ASSERT_EQ(IBV_EVENT_QP_ACCESS_ERR, next_async_event(e->tctx, 2000, &ev));
	EXPECT_EQ(tgt, ev.element.qp);
	EXPECT_EQ(-1, next_async_event(e->tctx, 100, &ev))
		TH_LOG("a second event: %s", ibv_event_type_str(ev.event_type));
	if (e->ictx != e->tctx)
		EXPECT_EQ(-1, next_async_event(e->ictx, 100, &ev))
			TH_LOG("an event on the initiator's device: %s",
			       ibv_event_type_str(ev.event_type));
}

/*
 * At the target an rkey is checked against the PD of the SRQ the request
 * names: B's MR with B's SRQ works; the same rkey naming SRQ A, the
 * initiator's own MR (its own PD; across devices its buffer in a PD of
 * its own on the target's device) naming A, and a READ through B's rkey
 * naming A each fail with REM_ACCESS_ERR and touch nothing.
 */
TEST_F(xrc, rkey_checked_against_srq_pd)
{
	struct xenv *e = &self->e;
	uint8_t *rb = B->buf + RDMA_OFF, *src = e->buf;
	struct ibv_mr *mr;
	struct rc_wc_want w;

	rc_fill(src, 512, 41);
	memset(rb, 0xee, 8192);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE, 1, src, 512, e->mr->lkey,
			   (uintptr_t)rb, B->mr->rkey, 0, B->srqn));
	w = want_req(1, IBV_WC_RDMA_WRITE, 512, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	rc_expect_bytes(_metadata, rb, 512, 41, "WRITE with B's rkey naming B");

	/* B's rkey naming A. */
	ASSERT_EQ(0, post_slot(e, 0, 0));
	rc_fill(src, 512, 42);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE, 2, src, 512, e->mr->lkey,
			   (uintptr_t)rb + 4096, B->mr->rkey, 0, A->srqn));
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 3, src, 16, e->mr->lkey, 0, 0, 0,
			   A->srqn));
	expect_access_err(_metadata, e, e->ini, e->tgt, 2, 3);
	rc_expect_canary(_metadata, rb + 4096, 4096, 0xee, "B's rkey naming A");

	/*
	 * The initiator's own MR (its PD, not A's) naming A. Across devices
	 * its rkey means nothing on the target's: there the same buffer is
	 * registered in a PD of its own (neither A's nor B's).
	 */
	mr = e->mr;
	if (e->cross) {
		e->opd = ibv_alloc_pd(e->tctx);
		ASSERT_NE(NULL, e->opd);
		e->omr = ibv_reg_mr(e->opd, e->buf, INI_BUF, RC_ACCESS_ALL);
		ASSERT_NE(NULL, e->omr) TH_LOG("%s", strerror(errno));
		mr = e->omr;
	}
	ASSERT_EQ(0, pair_new(e, e->xrcd, 7, 0, &e->ini, &e->tgt));
	memset(e->buf + 65536, 0xee, 4096);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_WRITE, 4, src, 512, e->mr->lkey,
			   (uintptr_t)e->buf + 65536, mr->rkey, 0, A->srqn));
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 5, src, 16, e->mr->lkey, 0, 0, 0,
			   A->srqn));
	expect_access_err(_metadata, e, e->ini, e->tgt, 4, 5);
	rc_expect_canary(_metadata, e->buf + 65536, 4096, 0xee,
			 "the initiator's MR naming A");

	/* A READ through B's rkey naming A: nothing read. */
	ASSERT_EQ(0, pair_new(e, e->xrcd, 7, 0, &e->ini, &e->tgt));
	rc_fill(rb + 8192, 256, 43);
	memset(e->buf + READ_OFF, 0xee, 4096);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_RDMA_READ, 6, e->buf + READ_OFF, 256,
			   e->mr->lkey, (uintptr_t)rb + 8192, B->mr->rkey, 0,
			   A->srqn));
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 7, src, 16, e->mr->lkey, 0, 0, 0,
			   A->srqn));
	expect_access_err(_metadata, e, e->ini, e->tgt, 6, 7);
	rc_expect_canary(_metadata, e->buf + READ_OFF, 4096, 0xee,
			 "READ with B's rkey naming A");

	/* A's receive was never taken: a good pair's SEND gets it. */
	ASSERT_EQ(0, pair_new(e, e->xrcd, 7, 0, &e->ini, &e->tgt));
	rc_fill(src, 100, 44);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 8, src, 100, e->mr->lkey, 0, 0, 0,
			   A->srqn));
	w = want_req(8, IBV_WC_SEND, 100, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_recv(slot_id(0, 0), IBV_WC_RECV, 100, e->tgt, e->ini);
	rc_expect_wc(_metadata, A->cq, &w);
	rc_expect_bytes(_metadata, A->buf, 100, 44, "the SEND after");
	rc_expect_quiet(_metadata, B->cq, "SRQ B");
}

/*
 * Requests naming no SRQ of the target's domain: an SRQ of a second
 * domain (which its own target reaches), the other way round, a
 * destroyed SRQ's number, one never given out, a basic SRQ's. Each on a
 * fresh pair: REM_ACCESS_ERR, the SEND after it flushed, both QPs in ERR,
 * QP_ACCESS_ERR on the target, rx_xrc_srq_errors + 1 on the target's
 * device (none on the initiator's), and no receive of any SRQ taken (the
 * ones posted first are those the last SENDs fill).
 */
TEST_F(xrc, bad_srq)
{
	struct xenv *e = &self->e;
	char path2[64];
	int fd2 = -1;
	struct ibv_xrcd *x2;
	struct ibv_cq *cq_c;
	struct ibv_srq *c, *gone, *basic;
	struct ibv_srq_init_attr ba = { .attr = { .max_wr = 4, .max_sge = 1 } };
	uint32_t n_c, n_gone, n_basic;
	struct ibv_qp *ini2 = NULL, *tgt2 = NULL;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 0xc007, .sg_list = &sge,
				   .num_sge = 1 }, *rbad;
	uint8_t *slot_c = A->buf + 7 * SLOT;	/* C's receive: A's PD */
	struct rc_wc_want w;
	struct {
		const char *what;
		int domain;			/* 1 or 2: the pair's */
		uint32_t srqn;
	} cases[5];
	uint64_t id = 0x500;
	long long ictr = e->cross ? ud_counter(e->idev, CTR) : 0;

	ASSERT_EQ(0, make_tmp(path2, sizeof(path2), "domain2"));
	x2 = xrcd_open(e->tctx, path2, O_CREAT, &fd2);
	ASSERT_NE(NULL, x2) TH_LOG("%s", strerror(errno));
	cq_c = ibv_create_cq(e->tctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, cq_c);
	c = xsrq_create(e->tctx, x2, A->pd, cq_c, 4, &n_c);
	ASSERT_NE(NULL, c) TH_LOG("%s", strerror(errno));
	gone = xsrq_create(e->tctx, e->xrcd, A->pd, A->cq, 4, &n_gone);
	ASSERT_NE(NULL, gone);
	ASSERT_EQ(0, ibv_destroy_srq(gone));
	basic = ibv_create_srq(A->pd, &ba);
	ASSERT_NE(NULL, basic);
	ASSERT_EQ(0, ibv_get_srq_num(basic, &n_basic));
	EXPECT_NE(n_c, A->srqn);
	EXPECT_NE(n_c, B->srqn);

	/* Receives in A, B and C, untouched until the end. */
	ASSERT_EQ(0, post_slot(e, 0, 0));
	ASSERT_EQ(0, post_slot(e, 1, 0));
	memset(slot_c, 0xee, SLOT);
	sge = (struct ibv_sge){ (uintptr_t)slot_c, RLEN, A->mr->lkey };
	ASSERT_EQ(0, ibv_post_srq_recv(c, &rwr, &rbad));

	cases[0].what = "an SRQ of another domain";
	cases[0].domain = 1;
	cases[0].srqn = n_c;
	cases[1].what = "the other domain naming SRQ A";
	cases[1].domain = 2;
	cases[1].srqn = A->srqn;
	cases[2].what = "a destroyed SRQ";
	cases[2].domain = 1;
	cases[2].srqn = n_gone;
	cases[3].what = "a number never given out";
	cases[3].domain = 1;
	cases[3].srqn = 0xfffffe;
	cases[4].what = "a basic SRQ";
	cases[4].domain = 1;
	cases[4].srqn = n_basic;

	for (unsigned int k = 0; k < 5; k++) {
		struct ibv_qp **ini = cases[k].domain == 1 ? &e->ini : &ini2;
		struct ibv_qp **tgt = cases[k].domain == 1 ? &e->tgt : &tgt2;
		uint32_t good = cases[k].domain == 1 ? A->srqn : n_c;
		long long ctr;

		TH_LOG("case %u: %s (SRQ %#x)", k, cases[k].what, cases[k].srqn);
		ASSERT_EQ(0, pair_new(e, cases[k].domain == 1 ? e->xrcd : x2, 7, 0,
				      ini, tgt));
		ctr = ud_counter(e->tdev, CTR);
		ASSERT_LE(0, ctr);
		rc_fill(e->buf, 64, 50 + k);
		ASSERT_EQ(0, xpost(*ini, IBV_WR_SEND, id, e->buf, 64, e->mr->lkey,
				   0, 0, 0, cases[k].srqn));
		ASSERT_EQ(0, xpost(*ini, IBV_WR_SEND, id + 1, e->buf, 64,
				   e->mr->lkey, 0, 0, 0, good));
		expect_access_err(_metadata, e, *ini, *tgt, id, id + 1);
		EXPECT_EQ(ctr + 1, counter_reaches(e->tdev, CTR, ctr + 1))
			TH_LOG("case %u: %s, %s of %s", k, cases[k].what, CTR,
			       e->tdev);
		id += 2;
	}
	rc_expect_quiet(_metadata, A->cq, "SRQ A");
	rc_expect_quiet(_metadata, B->cq, "SRQ B");
	rc_expect_quiet(_metadata, cq_c, "SRQ C");
	if (e->cross)
		EXPECT_EQ(ictr, ud_counter(e->idev, CTR))
			TH_LOG("%s of the initiator's device %s", CTR, e->idev);

	/* Each domain's own pair still delivers, into the first receive. */
	ASSERT_EQ(0, pair_new(e, e->xrcd, 7, 0, &e->ini, &e->tgt));
	ASSERT_EQ(0, pair_new(e, x2, 7, 0, &ini2, &tgt2));
	rc_fill(e->buf, 300, 58);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 0x600, e->buf, 300, e->mr->lkey,
			   0, 0, 0, A->srqn));
	w = want_req(0x600, IBV_WC_SEND, 300, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_recv(slot_id(0, 0), IBV_WC_RECV, 300, e->tgt, e->ini);
	rc_expect_wc(_metadata, A->cq, &w);
	rc_expect_bytes(_metadata, A->buf, 300, 58, "domain 1 into A");
	rc_fill(e->buf + 4096, 200, 59);
	ASSERT_EQ(0, xpost(ini2, IBV_WR_SEND_WITH_IMM, 0x601, e->buf + 4096, 200,
			   e->mr->lkey, 0, 0, 0xc0c0, n_c));
	w = rc_want_imm(want_req(0x601, IBV_WC_SEND, 200, ini2), 0xc0c0);
	rc_expect_wc(_metadata, e->scq, &w);
	w = rc_want_imm(want_recv(0xc007, IBV_WC_RECV, 200, tgt2, ini2), 0xc0c0);
	rc_expect_wc(_metadata, cq_c, &w);
	rc_expect_bytes(_metadata, slot_c, 200, 59, "domain 2 into C");
	rc_expect_canary(_metadata, slot_c + 200, 64, 0xee, "after it");

	EXPECT_EQ(0, ibv_destroy_qp(ini2));
	EXPECT_EQ(0, ibv_destroy_qp(tgt2));
	EXPECT_EQ(0, ibv_destroy_srq(c));
	EXPECT_EQ(0, ibv_destroy_srq(basic));
	EXPECT_EQ(0, ibv_destroy_cq(cq_c));
	EXPECT_EQ(0, ibv_close_xrcd(x2));
	close(fd2);
	unlink(path2);
}

/* How long an RNR-delayed completion may take (a wire's retries are slower). */
#define RNR_WC_MS	20000

/* Exactly one completion from @cq within @ms, compared with @w. */
static void expect_wc_ms(struct __test_metadata *_metadata, struct ibv_cq *cq,
			 const struct rc_wc_want *w, int ms)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(cq, &wc, 1, ms))
		TH_LOG("waiting for wr_id %#llx (%s): %s", (unsigned long long)w->wr_id,
		       ibv_wc_status_str(w->status), rc_err);
	EXPECT_EQ(0, rc_wc_check(&wc, w)) TH_LOG("%s", rc_err);
}

/*
 * An empty SRQ: RNR NAKs. With rnr_retry 7 the SEND waits and lands once
 * a receive is posted; with 0 it fails (RNR_RETRY_EXC_ERR), the target
 * stays in RTS and the message never arrives.
 */
TEST_F(xrc, rnr)
{
	struct xenv *e = &self->e;
	struct rc_wc_want w;

	rc_fill(e->buf, 3000, 61);
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND_WITH_IMM, 1, e->buf, 3000,
			   e->mr->lkey, 0, 0, 0x61, A->srqn));
	rc_expect_quiet(_metadata, e->scq, "RNR: no completion yet");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->tgt));
	ASSERT_EQ(0, post_slot(e, 0, 3));
	w = rc_want_imm(want_req(1, IBV_WC_SEND, 3000, e->ini), 0x61);
	expect_wc_ms(_metadata, e->scq, &w, RNR_WC_MS);
	w = rc_want_imm(want_recv(slot_id(0, 3), IBV_WC_RECV, 3000, e->tgt, e->ini),
			0x61);
	expect_wc_ms(_metadata, A->cq, &w, RNR_WC_MS);
	rc_expect_bytes(_metadata, A->buf + 3 * SLOT, 3000, 61, "after RNR");
	rc_expect_canary(_metadata, A->buf + 3 * SLOT + 3000, 64, 0xee, "after it");

	/* rnr_retry 0: the first RNR NAK ends it. */
	ASSERT_EQ(0, pair_new(e, e->xrcd, 0, 0, &e->ini, &e->tgt));
	ASSERT_EQ(0, xpost(e->ini, IBV_WR_SEND, 2, e->buf, 10, e->mr->lkey, 0, 0, 0,
			   A->srqn));
	w = want_err(2, IBV_WC_RNR_RETRY_EXC_ERR, e->ini);
	expect_wc_ms(_metadata, e->scq, &w, RNR_WC_MS);
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(e->ini, IBV_QPS_ERR, 5000));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e->tgt));
	ASSERT_EQ(0, post_slot(e, 0, 4));
	rc_expect_quiet(_metadata, A->cq, "the refused SEND never arrives");
}

/*
 * The extended post-send API on an initiator: one batch of a SEND (SRQ
 * number before its SGE), a SEND with immediate (after), an inline WRITE
 * (number after the inline data, whose source is overwritten before the
 * WR is complete) and a gathered WRITE (number before); then a READ and a
 * FETCH_ADD (number before and after).
 */
TEST_F(xrc, wr_api)
{
	struct xenv *e = &self->e;
	uint8_t *ra = A->buf + RDMA_OFF, *rb = B->buf + RDMA_OFF;
	uint8_t *s0 = e->buf, *s1 = e->buf + 8192, *s2 = e->buf + 16384;
	uint8_t *s3 = e->buf + 24576;
	uint64_t *old = (uint64_t *)(e->buf + ATOM_OFF);
	struct ibv_sge sg[2] = {
		{ (uintptr_t)s3, 4000, e->mr->lkey },
		{ (uintptr_t)s3 + 5000, 2000, e->mr->lkey },
	};
	struct ibv_qp_ex *qpx;
	struct rc_wc_want w;

	ASSERT_EQ(0, pair_new(e, e->xrcd, 7,
			      IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
			      &e->ini, &e->tgt));
	qpx = ibv_qp_to_qp_ex(e->ini);
	ASSERT_NE(NULL, qpx);
	ASSERT_EQ(0, post_slot(e, 0, 0));
	ASSERT_EQ(0, post_slot(e, 1, 0));
	rc_fill(s0, 1500, 71);
	rc_fill(s1, 2500, 72);
	rc_fill(s2, 200, 73);
	rc_fill(s3, 4000, 74);
	rc_fill(s3 + 5000, 2000, 75);
	memset(ra, 0xee, 4096);
	memset(rb, 0xee, 8192);

	ibv_wr_start(qpx);
	qpx->wr_id = 0x71;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, A->srqn);
	ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)s0, 1500);
	qpx->wr_id = 0x72;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_imm(qpx, htonl(0x7272));
	ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)s1, 2500);
	ibv_wr_set_xrc_srqn(qpx, B->srqn);
	qpx->wr_id = 0x73;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, A->mr->rkey, (uintptr_t)ra);
	ibv_wr_set_inline_data(qpx, s2, 200);
	memset(s2, 0, 200);		/* inline: the bytes were taken */
	ibv_wr_set_xrc_srqn(qpx, A->srqn);
	qpx->wr_id = 0x74;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qpx, B->mr->rkey, (uintptr_t)rb);
	ibv_wr_set_xrc_srqn(qpx, B->srqn);
	ibv_wr_set_sge_list(qpx, 2, sg);
	ASSERT_EQ(0, ibv_wr_complete(qpx));

	w = want_req(0x71, IBV_WC_SEND, 1500, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = rc_want_imm(want_req(0x72, IBV_WC_SEND, 2500, e->ini), 0x7272);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_req(0x73, IBV_WC_RDMA_WRITE, 200, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_req(0x74, IBV_WC_RDMA_WRITE, 6000, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_recv(slot_id(0, 0), IBV_WC_RECV, 1500, e->tgt, e->ini);
	rc_expect_wc(_metadata, A->cq, &w);
	rc_expect_bytes(_metadata, A->buf, 1500, 71, "SEND into A");
	rc_expect_canary(_metadata, A->buf + 1500, 64, 0xee, "after it");
	w = rc_want_imm(want_recv(slot_id(1, 0), IBV_WC_RECV, 2500, e->tgt, e->ini),
			0x7272);
	rc_expect_wc(_metadata, B->cq, &w);
	rc_expect_bytes(_metadata, B->buf, 2500, 72, "SEND_IMM into B");
	rc_expect_canary(_metadata, B->buf + 2500, 64, 0xee, "after it");
	rc_expect_bytes(_metadata, ra, 200, 73, "inline WRITE into A's area");
	rc_expect_canary(_metadata, ra + 200, 64, 0xee, "after it");
	rc_expect_bytes(_metadata, rb, 4000, 74, "WRITE into B's area, SGE 1");
	rc_expect_bytes(_metadata, rb + 4000, 2000, 75, "SGE 2");
	rc_expect_canary(_metadata, rb + 6000, 64, 0xee, "after it");

	/* READ back what the gathered WRITE put in B's area; FETCH_ADD on A. */
	memset(e->buf + READ_OFF, 0xee, 8192);
	*(uint64_t *)(ra + 4096) = 40;
	*old = 0;
	ibv_wr_start(qpx);
	qpx->wr_id = 0x75;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(qpx, B->mr->rkey, (uintptr_t)rb + 4000);
	ibv_wr_set_xrc_srqn(qpx, B->srqn);
	ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf + READ_OFF, 2000);
	qpx->wr_id = 0x76;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(qpx, A->mr->rkey, (uintptr_t)ra + 4096, 2);
	ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)old, 8);
	ibv_wr_set_xrc_srqn(qpx, A->srqn);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	w = want_req(0x75, IBV_WC_RDMA_READ, 2000, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	w = want_req(0x76, IBV_WC_FETCH_ADD, 8, e->ini);
	rc_expect_wc(_metadata, e->scq, &w);
	rc_expect_bytes(_metadata, e->buf + READ_OFF, 2000, 75, "READ from B");
	rc_expect_canary(_metadata, e->buf + READ_OFF + 2000, 64, 0xee, "after it");
	EXPECT_EQ(40u, *old);
	EXPECT_EQ(42u, *(uint64_t *)(ra + 4096));
	rc_expect_quiet(_metadata, A->cq, "SRQ A");
	rc_expect_quiet(_metadata, B->cq, "SRQ B");
}

/* ---- another process --------------------------------------------------- */

#define NCHILD	6
static const uint32_t child_len[NCHILD] = { 0, 1, 1024, 1025, 4096, 40000 };

/* What the parent tells the child (the child answers with its SRQ number). */
struct to_child {
	uint32_t tgt_qpn, ini_qpn;
};

/* Read exactly @len bytes from @fd within @ms: 0, or -1. */
static int read_full(int fd, void *p, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;

	while (got < len) {
		ssize_t n;

		if (poll(&pfd, 1, ms) != 1)
			return -1;
		n = read(fd, (uint8_t *)p + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

#define CHILD_FAIL(...) \
	do { \
		fprintf(stderr, "# child: " __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		fails++; \
	} while (0)

/*
 * The other process: the target's device @dev, the parent's domain through its
 * file (no O_CREAT: it must exist), its own PD, CQ and XRC SRQ with
 * NCHILD receives; ibv_open_qp of the parent's target (RTS, its
 * destination the parent's initiator), closed again; then the SRQ
 * number to the parent and every receive checked. The exit status is
 * the number of failed checks (capped), 100 + n if setup step n failed.
 */
static int child_main(const char *dev, const char *path, int rfd, int wfd)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_NUM |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct to_child tc;
	uint8_t *buf;
	uint32_t srqn;
	int fd, fails = 0;

	if (read_full(rfd, &tc, sizeof(tc), 20000))
		return 101;
	ctx = open_dev(dev);
	if (!ctx)
		return 102;
	xrcd = xrcd_open(ctx, path, 0, &fd);
	if (!xrcd) {
		fprintf(stderr, "# child: open_xrcd: %s\n", strerror(errno));
		return 103;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = buf_map(NCHILD * SLOT);
	if (!pd || !cq || !buf)
		return 104;
	mr = ibv_reg_mr(pd, buf, NCHILD * SLOT, IBV_ACCESS_LOCAL_WRITE);
	srq = mr ? xsrq_create(ctx, xrcd, pd, cq, 15, &srqn) : NULL;
	if (!srq)
		return 105;
	memset(buf, 0xee, NCHILD * SLOT);
	for (uint32_t k = 0; k < NCHILD; k++) {
		struct ibv_sge sge = { (uintptr_t)buf + k * SLOT, RLEN, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 0xc100 + k, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			return 106;
	}

	/* Another handle of the parent's target, by number. */
	oa.qp_num = tc.tgt_qpn;
	oa.xrcd = xrcd;
	qp = ibv_open_qp(ctx, &oa);
	if (!qp) {
		CHILD_FAIL("open_qp %#x: %s", tc.tgt_qpn, strerror(errno));
	} else {
		if (qp->qp_num != tc.tgt_qpn)
			CHILD_FAIL("open_qp: qp_num %#x, want %#x", qp->qp_num,
				   tc.tgt_qpn);
		if (ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qia))
			CHILD_FAIL("query_qp of the opened target failed");
		else if (qa.qp_state != IBV_QPS_RTS ||
			 qa.dest_qp_num != tc.ini_qpn)
			CHILD_FAIL("opened target: state %d dest %#x, want %d %#x",
				   qa.qp_state, qa.dest_qp_num, IBV_QPS_RTS,
				   tc.ini_qpn);
		if (ibv_destroy_qp(qp))
			CHILD_FAIL("closing the opened target failed");
	}

	if (write(wfd, &srqn, sizeof(srqn)) != sizeof(srqn))
		return 107;
	for (uint32_t k = 0; k < NCHILD; k++) {
		struct rc_wc_want w = {
			.wr_id = 0xc100 + k, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .byte_len = child_len[k],
			.qp_num = tc.tgt_qpn, .src_qp = tc.ini_qpn,
		};
		struct ibv_wc wc;
		long bad;

		if (k % 2)
			w = rc_want_imm(w, 0xc4000000 + k);
		if (rc_poll(cq, &wc, 1, 10000) != 1) {
			CHILD_FAIL("receive %u did not come: %s", k, rc_err);
			break;
		}
		if (rc_wc_check(&wc, &w))
			CHILD_FAIL("receive %u: %s", k, rc_err);
		bad = rc_check_fill(buf + k * SLOT, child_len[k], 0x800 + k);
		if (bad != -1)
			CHILD_FAIL("receive %u: first wrong byte at %ld", k, bad);
		for (uint32_t j = 0; j < 64; j++)
			if (buf[k * SLOT + child_len[k] + j] != 0xee) {
				CHILD_FAIL("receive %u: byte %u after it written",
					   k, j);
				break;
			}
	}
	if (rc_poll_none(cq, RC_QUIET_MS))
		CHILD_FAIL("more receives: %s", rc_err);

	if (ibv_destroy_srq(srq) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) ||
	    ibv_dealloc_pd(pd))
		CHILD_FAIL("teardown");
	/* This handle's last user is gone: it closes (the domain lives on). */
	if (ibv_close_xrcd(xrcd))
		CHILD_FAIL("close_xrcd");
	close(fd);
	ibv_close_device(ctx);
	return fails > 99 ? 99 : fails;
}

/*
 * The fork happens before any verbs object exists in the test's process,
 * so this fixture makes none in its setup; its variants are xrc's.
 */
FIXTURE(xrc_proc) {
	int unused;
};

FIXTURE_VARIANT(xrc_proc) {
	bool cross;
};

FIXTURE_VARIANT_ADD(xrc_proc, same_dev) { .cross = false };
FIXTURE_VARIANT_ADD(xrc_proc, cross_dev) { .cross = true };

FIXTURE_SETUP(xrc_proc)
{
}

FIXTURE_TEARDOWN(xrc_proc)
{
}

/*
 * A second process joins the domain through its file (on the target's
 * device) and makes its own
 * XRC SRQ on its own CQ; the parent's target delivers into it (between
 * messages into the parent's SRQ A) and the child sees each receive with
 * the target's QPN. ibv_open_qp gives another handle of the target, in
 * the child and in the parent; closing one leaves the target working.
 */
TEST_F(xrc_proc, open_qp_and_other_process)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_NUM |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	char path[64];
	int to_c[2], to_p[2], st = -1;
	struct to_child tc;
	struct xenv e;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *h;
	struct rc_wc_want w;
	uint32_t srqn = 0;
	pid_t pid;

	/* Fork before any verbs object exists in this process. */
	ASSERT_EQ(0, make_tmp(path, sizeof(path), "shared"));
	ASSERT_EQ(0, pipe(to_c));
	ASSERT_EQ(0, pipe(to_p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(to_c[1]);
		close(to_p[0]);
		_exit(child_main(xdev(variant->cross), path, to_c[0], to_p[1]));
	}
	close(to_c[0]);
	close(to_p[1]);

	ASSERT_EQ(0, env_open(&e, path, variant->cross)) TH_LOG("%s", rc_err);
	tc.tgt_qpn = e.tgt->qp_num;
	tc.ini_qpn = e.ini->qp_num;
	ASSERT_EQ((ssize_t)sizeof(tc), write(to_c[1], &tc, sizeof(tc)));
	ASSERT_EQ(0, read_full(to_p[0], &srqn, sizeof(srqn), 20000))
		TH_LOG("no SRQ number from the child");
	EXPECT_NE(0u, srqn);
	EXPECT_NE(e.s[0].srqn, srqn);
	EXPECT_NE(e.s[1].srqn, srqn);

	/* A handle of our own target, in this process: RTS, then closed. */
	oa.qp_num = e.tgt->qp_num;
	oa.xrcd = e.xrcd;
	h = ibv_open_qp(e.tctx, &oa);
	ASSERT_NE(NULL, h) TH_LOG("open_qp: %s", strerror(errno));
	EXPECT_NE(e.tgt, h);
	EXPECT_EQ(e.tgt->qp_num, h->qp_num);
	ASSERT_EQ(0, ibv_query_qp(h, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qia));
	EXPECT_EQ(IBV_QPS_RTS, qa.qp_state);
	EXPECT_EQ(e.ini->qp_num, qa.dest_qp_num);
	EXPECT_EQ(0, ibv_destroy_qp(h));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e.tgt));

	ASSERT_EQ(0, post_slot(&e, 0, 0));
	ASSERT_EQ(0, post_slot(&e, 0, 1));
	for (uint32_t k = 0; k < NCHILD; k++) {
		uint8_t *src = e.buf + (size_t)k * RLEN;

		rc_fill(src, child_len[k], 0x800 + k);
		ASSERT_EQ(0, xpost(e.ini, k % 2 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				   0x800 + k, child_len[k] ? src : NULL,
				   child_len[k], e.mr->lkey, 0, 0, 0xc4000000 + k,
				   srqn));
		w = want_req(0x800 + k, IBV_WC_SEND, child_len[k], e.ini);
		if (k % 2)
			w = rc_want_imm(w, 0xc4000000 + k);
		rc_expect_wc(_metadata, e.scq, &w);
		if (k != 2 && k != NCHILD - 1)
			continue;
		/* And one into our own SRQ A through the same target. */
		rc_fill(e.buf + READ_OFF, 500, 0x900 + k);
		ASSERT_EQ(0, xpost(e.ini, IBV_WR_SEND, 0x900 + k, e.buf + READ_OFF,
				   500, e.mr->lkey, 0, 0, 0, e.s[0].srqn));
		w = want_req(0x900 + k, IBV_WC_SEND, 500, e.ini);
		rc_expect_wc(_metadata, e.scq, &w);
		w = want_recv(slot_id(0, k == 2 ? 0 : 1), IBV_WC_RECV, 500, e.tgt,
			      e.ini);
		rc_expect_wc(_metadata, e.s[0].cq, &w);
		rc_expect_bytes(_metadata, e.s[0].buf + (k == 2 ? 0 : SLOT), 500,
				0x900 + k, "into our SRQ A");
	}

	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st)) TH_LOG("child status %#x", st);
	EXPECT_EQ(0, WEXITSTATUS(st)) TH_LOG("the child's failed checks (or setup step 100+n)");
	rc_expect_quiet(_metadata, e.s[0].cq, "SRQ A: nothing of the child's");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(e.tgt));
	close(to_c[1]);
	close(to_p[0]);
	env_close(&e);
	unlink(path);
}

/* ---- teardown ------------------------------------------------------------ */

static const char *const res_names[] = { "ctx", "pd", "cq", "qp", "srq", "mr" };
#define NRES (sizeof(res_names) / sizeof(res_names[0]))

/*
 * On one device (shca0, or the first of SOFTHCA_RC_CROSS), everything
 * counted in `rdma res` (the target once: ib_core's own QP;
 * three PDs, CQs and MRs, two SRQs); the target destroyed while its SRQs
 * live, the domain busy while any SRQ does (and an SRQ's CQ while the
 * SRQ does), closed once the last is gone; every count back at the
 * baseline.
 */
TEST(teardown_order)
{
	static const long more[NRES] = { 1, 3, 3, 2, 2, 3 };
	long base[NRES];
	const char *dev = xdev(0);
	struct xenv e;
	struct rc_wc_want w;

	for (unsigned int i = 0; i < NRES; i++) {
		base[i] = res_count(dev, res_names[i]);
		ASSERT_LE(0, base[i]) TH_LOG("rdma res %s", res_names[i]);
	}
	ASSERT_EQ(0, env_open(&e, NULL, false)) TH_LOG("%s", rc_err);
	for (unsigned int i = 0; i < NRES; i++) {
		EXPECT_EQ(base[i] + more[i], res_count(dev, res_names[i]))
			TH_LOG("rdma res %s", res_names[i]);
	}

	/* One message first, so that the target has done something. */
	ASSERT_EQ(0, post_slot(&e, 1, 0));
	rc_fill(e.buf, 64, 91);
	ASSERT_EQ(0, xpost(e.ini, IBV_WR_SEND, 1, e.buf, 64, e.mr->lkey, 0, 0, 0,
			   e.s[1].srqn));
	w = want_req(1, IBV_WC_SEND, 64, e.ini);
	rc_expect_wc(_metadata, e.scq, &w);
	w = want_recv(slot_id(1, 0), IBV_WC_RECV, 64, e.tgt, e.ini);
	rc_expect_wc(_metadata, e.s[1].cq, &w);

	EXPECT_EQ(EBUSY, ibv_close_xrcd(e.xrcd));
	ASSERT_EQ(0, ibv_destroy_qp(e.tgt));
	e.tgt = NULL;
	EXPECT_EQ(base[3] + 1, res_count(dev, "qp"));
	EXPECT_EQ(EBUSY, ibv_close_xrcd(e.xrcd));
	EXPECT_EQ(EBUSY, ibv_destroy_cq(e.s[0].cq));
	/* An SRQ with a receive posted goes without a completion. */
	ASSERT_EQ(0, post_slot(&e, 0, 0));
	ASSERT_EQ(0, ibv_destroy_srq(e.s[0].srq));
	e.s[0].srq = NULL;
	EXPECT_EQ(EBUSY, ibv_close_xrcd(e.xrcd));
	ASSERT_EQ(0, ibv_destroy_srq(e.s[1].srq));
	e.s[1].srq = NULL;
	EXPECT_EQ(base[4], res_count(dev, "srq"));
	EXPECT_EQ(0, ibv_close_xrcd(e.xrcd));
	e.xrcd = NULL;
	rc_expect_quiet(_metadata, e.s[0].cq, "the destroyed SRQ's receive");
	for (int i = 0; i < 2; i++)
		xsrq_close(&e.s[i]);
	env_close(&e);
	for (unsigned int i = 0; i < NRES; i++) {
		EXPECT_EQ(base[i], res_count(dev, res_names[i]))
			TH_LOG("rdma res %s back to the baseline", res_names[i]);
	}
}

TEST_HARNESS_MAIN
