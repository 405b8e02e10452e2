/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RC data-path helpers for the softhca selftests: a connected pair of RC
 * (or UC: rc_cfg.qp_type) QPs
 * (both on shca0, in one or two contexts, or across shca0 and shca1 with
 * shca1 created on veth1 for the test), the modify_qp attribute sets of
 * RESET->INIT->RTR->RTS, posting, polling with deadlines, and an exact
 * field-by-field check of a work completion.
 *
 * Functions that can fail return 0 or a negative errno and leave a
 * description in rc_err (for TH_LOG).
 */
#ifndef SOFTHCA_SELFTEST_RC_H
#define SOFTHCA_SELFTEST_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The addresses vm-run gives the veths (Documentation/testing.md). */
#define RC_IP0		"198.18.0.1"	/* veth0: shca0 */
#define RC_IP1		"198.18.0.2"	/* veth1: shca1 when a test adds it */

/* Full access for MRs and QPs that are targets of every operation. */
#define RC_ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define RC_QP_ACCESS_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			  IBV_ACCESS_REMOTE_ATOMIC)

extern __thread char rc_err[512];

/* Which devices the two ends use. */
enum rc_topo {
	RC_SAME_CTX,	/* both QPs on shca0, one context (one UAR) */
	RC_TWO_CTX,	/* both on shca0, one context each */
	RC_CROSS_DEV,	/* end 0 on shca0, end 1 on shca1 (veth1) */
};

/*
 * How the helpers make CQs: ibv_create_cq (ex false), or ibv_create_cq_ex
 * with @wc_flags (selftests/cq_ex.c).
 */
struct rc_cq_kind {
	bool ex;
	uint64_t wc_flags;
};

/* A CQ of @kind (NULL: ibv_create_cq), NULL with errno on failure. */
struct ibv_cq *rc_cq_create(struct ibv_context *ctx, int cqe, void *cq_context,
			    struct ibv_comp_channel *ch, int vector,
			    const struct rc_cq_kind *kind);

struct rc_cfg {
	enum rc_topo topo;
	enum ibv_qp_type qp_type;	/* IBV_QPT_RC (0: RC too) or IBV_QPT_UC */
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	int cqe;			/* per CQ; each end has a send and a recv CQ */
	size_t buf_size;		/* one registered buffer per end */
	int mr_access;
	int qp_access;			/* qp_access_flags at INIT */
	int sq_sig_all;
	enum ibv_mtu mtu;
	/* Per end: what that end's QP is given at RTR/RTS. */
	uint8_t timeout[2], retry_cnt[2], rnr_retry[2], min_rnr_timer[2];
	uint8_t max_rd_atomic[2], max_dest_rd_atomic[2];
	uint32_t sq_psn[2];		/* end i's SQ PSN = end !i's RQ PSN */
	bool channels;			/* each end's CQs report to its channel */
	int comp_vector;		/* of every CQ */
	/* Optional (0/NULL by default): a context end 0 (and end 1 in
	 * RC_SAME_CTX) uses instead of opening one (not closed by the pair);
	 * channels of the caller's for each end's send and receive CQs (they
	 * take precedence over cfg.channels); the cq_context of every CQ.
	 */
	struct ibv_context *ctx;
	struct ibv_comp_channel *scq_ch[2], *rcq_ch[2];
	void *cq_context;
	struct rc_cq_kind cq_kind;	/* of every CQ */
};

struct rc_end {
	const char *dev;
	struct ibv_context *ctx;
	bool own_ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;	/* cfg.channels: of scq and rcq */
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_size;
	int gid_index;			/* RoCE v2 GID of this end's IPv4 address */
	union ibv_gid gid;
	struct ibv_qp_cap cap;		/* what create_qp granted */
};

struct rc_pair {
	struct rc_cfg cfg;
	struct rc_end e[2];
	int shca1_added;		/* this pair created shca1 */
};

/*
 * SOFTHCA_RC_CROSS="DEV0 DEV1" (the wire's test bed, selftests/wire.sh):
 * the devices of end 0 and end 1 in RC_CROSS_DEV instead of shca0 and
 * shca1 (both exist already, each on veth0 or veth1); the other
 * topologies run on DEV0. An rxe among them relaxes the completion checks
 * that rxe does differently (as SOFTHCA_RC_LINK_TYPE=rxe). NULL: not set.
 */
const char *rc_cross_dev(int i);
/* Do a pair's QPs of @topo cross the wire (SOFTHCA_RC_CROSS, force_wire)? */
bool rc_on_wire(enum rc_topo topo);
/* Is @dev (an end's) an rdma_rxe device? */
bool rc_dev_is_rxe(const char *dev);

static inline bool rc_cfg_uc(const struct rc_cfg *c)
{
	return c->qp_type == IBV_QPT_UC;
}

/* Defaults: 64-deep queues, 4 SGEs, 256 bytes inline, 256-entry CQs,
 * 1 MiB buffers, full access, MTU 1024, timeout 14, retry 7, RNR retry 7,
 * min_rnr_timer 12 (0.64 ms), 4 outstanding reads/atomics.
 */
void rc_cfg_default(struct rc_cfg *c, enum rc_topo topo);

/* Objects of both ends (QPs in RESET), shca1 added if the topology needs
 * it. On failure everything created is destroyed.
 */
int rc_pair_create(struct rc_pair *p, const struct rc_cfg *cfg);
/* Both QPs RESET (or any state) -> RESET -> INIT -> RTR -> RTS. */
int rc_pair_connect(struct rc_pair *p);
/* create + connect */
int rc_pair_open(struct rc_pair *p, const struct rc_cfg *cfg);
/* Destroy everything (NULL-safe, idempotent); delete shca1 if we added it. */
void rc_pair_destroy(struct rc_pair *p);
/* Peer of end i. */
static inline struct rc_end *rc_peer(struct rc_pair *p, int i)
{
	return &p->e[!i];
}

/* Attribute sets, so tests can drop or add bits of the mask. */
void rc_init_attr(struct ibv_qp_attr *a, int *mask, int access);
void rc_rtr_attr(const struct rc_pair *p, int i, struct ibv_qp_attr *a, int *mask);
void rc_rts_attr(const struct rc_pair *p, int i, struct ibv_qp_attr *a, int *mask);
/* Move end i through INIT, RTR, RTS (from RESET). */
int rc_end_connect(struct rc_pair *p, int i);

/* Index of the RoCE v2 GID of IPv4 @ip on port 1, or -ENOENT. */
int rc_find_gid(struct ibv_context *ctx, const char *ip);
/* shca1 on veth1 with its RoCE v2 GID present: 1 if added, 0 if it was
 * there already, -errno.
 */
int rc_shca1_add(void);
int rc_shca1_del(void);

/* Current QP state via ibv_query_qp, or -errno. */
int rc_qp_state(struct ibv_qp *qp);
/* Wait up to ms for the QP to reach @state; returns the last state seen. */
int rc_wait_qp_state(struct ibv_qp *qp, int state, int ms);

/* Monotonic microseconds (vDSO: no syscall on x86 with the TSC). */
uint64_t rc_now_us(void);

/*
 * Poll @cq until @n completions were read into wc[] or @ms passed. Returns
 * how many were read (less than n on timeout), or -errno if ibv_poll_cq
 * failed.
 */
int rc_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms);
/* Completions that arrive on @cq within ms (0 expected), printed to rc_err. */
int rc_poll_none(struct ibv_cq *cq, int ms);

/* One receive: num_sge 0 when len is 0 and addr is NULL. */
int rc_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey);
/* One send-queue WR with one SGE (num_sge 0 when len is 0 and addr NULL). */
int rc_post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
		 uint32_t rkey, unsigned int flags, uint32_t imm_host);
/* One atomic (8 bytes at local addr get the old value). */
int rc_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		   uint64_t *local, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey, uint64_t compare_add, uint64_t swap,
		   unsigned int flags);

/* What a completion must say. Fields beyond status are checked as the
 * verbs define them: opcode, byte_len and wc_flags (exactly) only on
 * success; imm_data and src_qp only on a successful receive completion;
 * vendor_err non-zero on an error.
 */
struct rc_wc_want {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint32_t imm_host;		/* imm_data is compared with htonl() of it */
};

/* 0 if @wc is exactly @w, else 1 with every mismatch described in rc_err. */
int rc_wc_check(const struct ibv_wc *wc, const struct rc_wc_want *w);
/* What to expect: a successful requester completion of @e's QP; the same
 * for a receive from @from's QP; an error completion (status only); with
 * an immediate.
 */
struct rc_wc_want rc_want_req(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			      const struct rc_end *e);
struct rc_wc_want rc_want_recv(uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			       const struct rc_end *e, const struct rc_end *from);
struct rc_wc_want rc_want_err(uint64_t wr_id, enum ibv_wc_status st,
			      const struct rc_end *e);
struct rc_wc_want rc_want_imm(struct rc_wc_want w, uint32_t imm);
/* Replace @p by a pair made from its configuration changed by @tweak. */
int rc_pair_reopen(struct rc_pair *p, void (*tweak)(struct rc_cfg *c));
/* wc_flags is exactly @flags / src_qp is @qpn (for checks done by hand;
 * relaxed as rc_wc_check() is when the suites run against rdma_rxe).
 */
bool rc_wc_flags_are(const struct ibv_wc *wc, unsigned int flags);
bool rc_src_qp_is(const struct ibv_wc *wc, uint32_t qpn);
/* "wr_id=.. status=..(name) opcode=.. len=.. qp=.. src=.. flags=.. imm=.." */
const char *rc_wc_str(const struct ibv_wc *wc);

/* Deterministic bytes: fill and compare (returns the first bad offset or
 * -1 when equal).
 */
void rc_fill(void *buf, size_t len, uint32_t seed);
long rc_check_fill(const void *buf, size_t len, uint32_t seed);

/*
 * Call once from a constructor of a test program that may add shca1: when
 * the main process exits, shca1 is deleted if it did not exist at start
 * (a test killed by the harness timeout runs no teardown).
 */
void rc_shca1_guard(void);

/* ---- for kselftest_harness.h users (included before this file) ------------ */
#ifdef __KSELFTEST_HARNESS_H

#define RC_WC_MS	5000	/* a completion that takes longer is lost */
#define RC_QUIET_MS	100	/* how long "no completion" is watched */

/* Poll exactly one completion from @cq and compare it with @w. */
static inline void rc_expect_wc(struct __test_metadata *_metadata, struct ibv_cq *cq,
				const struct rc_wc_want *w)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(cq, &wc, 1, RC_WC_MS))
		TH_LOG("waiting for wr_id %#llx (%s): %s", (unsigned long long)w->wr_id,
		       ibv_wc_status_str(w->status), rc_err);
	EXPECT_EQ(0, rc_wc_check(&wc, w)) TH_LOG("%s", rc_err);
}

/* The same for an error completion of @e's QP. */
static inline void rc_expect_err(struct __test_metadata *_metadata, struct ibv_cq *cq,
				 uint64_t wr_id, enum ibv_wc_status st, const struct rc_end *e)
{
	struct rc_wc_want w = rc_want_err(wr_id, st, e);

	rc_expect_wc(_metadata, cq, &w);
}

/* No completion on @cq for RC_QUIET_MS. */
static inline void rc_expect_quiet(struct __test_metadata *_metadata, struct ibv_cq *cq,
				   const char *what)
{
	EXPECT_EQ(0, rc_poll_none(cq, RC_QUIET_MS)) TH_LOG("%s: %s", what, rc_err);
}

/* @len bytes at @buf are rc_fill()'s of @seed. */
static inline void rc_expect_bytes(struct __test_metadata *_metadata,
				   const void *buf, size_t len, uint32_t seed,
				   const char *what)
{
	long bad = rc_check_fill(buf, len, seed);

	EXPECT_EQ(-1, bad) TH_LOG("%s: %zu bytes, first wrong byte at %ld", what, len, bad);
}

/* @len bytes at @p are all @v: nothing wrote there. */
static inline void rc_expect_canary(struct __test_metadata *_metadata,
				    const uint8_t *p, size_t len, uint8_t v,
				    const char *what)
{
	size_t i;

	for (i = 0; i < len && p[i] == v; i++)
		;
	EXPECT_EQ(len, i) TH_LOG("%s: byte %zu is %#x, want untouched %#x", what, i,
				 i < len ? p[i] : 0, v);
}

/*
 * A 1500-byte SEND each way between @p's ends, into offset @off of the
 * receiver's buffer (the bytes of @seed, then @seed + 1): both completions
 * exact, every byte.
 */
static inline void rc_expect_sends(struct __test_metadata *_metadata,
				   struct rc_pair *p, size_t off, uint32_t seed)
{
	for (int i = 0; i < 2; i++) {
		struct rc_end *s = &p->e[i], *r = &p->e[!i];
		struct rc_wc_want w;

		rc_fill(s->buf, 1500, seed + i);
		ASSERT_EQ(0, rc_post_recv(r->qp, 900, r->buf + off, 2048, r->mr->lkey));
		ASSERT_EQ(0, rc_post_send(s->qp, IBV_WR_SEND, 901, s->buf, 1500,
					  s->mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0));
		w = rc_want_req(901, IBV_WC_SEND, 1500, s);
		rc_expect_wc(_metadata, s->scq, &w);
		w = rc_want_recv(900, IBV_WC_RECV, 1500, r, s);
		rc_expect_wc(_metadata, r->rcq, &w);
		rc_expect_bytes(_metadata, r->buf + off, 1500, seed + i, "a SEND each way");
	}
}

/* The fixture's pair replaced by one made from a modified configuration. */
static inline void rc_reopen(struct __test_metadata *_metadata, struct rc_pair *p,
			     void (*tweak)(struct rc_cfg *c))
{
	ASSERT_EQ(0, rc_pair_reopen(p, tweak)) TH_LOG("%s", rc_err);
}

/*
 * A test of what end @e's own device does (posting errors, its SQD, its
 * responder's statuses): softhca's behaviour, which rdma_rxe does not share.
 */
#define RC_SKIP_IF_RXE(e) \
	do { \
		if (rc_dev_is_rxe((e)->dev)) \
			SKIP(return, "checks %s's own behaviour (rxe differs)", (e)->dev); \
	} while (0)

/* A test program that may add shca1 (see rc_shca1_guard()). */
#define RC_SHCA1_GUARD() \
	static void __attribute__((constructor)) rc_guard_ctor(void) \
	{ \
		rc_shca1_guard(); \
	}

#endif /* __KSELFTEST_HARNESS_H */

#endif
