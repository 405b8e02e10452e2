// SPDX-License-Identifier: GPL-2.0
/*
 * Data-integrity stress: two processes, 8 RC QPs each,
 * connected pairwise; each process sends N messages on each of its QPs and
 * receives N on each. Every message's opcode (SEND or RDMA_WRITE_WITH_IMM),
 * size (0 to 16 KiB, mostly small), inline flag and bytes come from a
 * generator both sides run, so the receiver checks every byte, the
 * immediate, byte_len and order. Then kill -9 of either process in the
 * middle of traffic: the survivor's QPs fail (transport retries exhausted)
 * and it exits, and no object is left behind (rdma res counts back to
 * where they were) and dmesg stays clean.
 *
 * SOFTHCA_STRESS_MSGS: messages per QP per direction (default 1500, which
 * takes well under a minute under TCG). The full size is
 * SOFTHCA_STRESS_MSGS=1000000 (8 x 2 x 1,000,000 messages): run it by hand,
 *   SOFTHCA_STRESS_MSGS=1000000 SOFTHCA_VM_TIMEOUT=86400 \
 *     scripts/vm-run -- build/selftests/rc_stress -t traffic
 * (the test's own timeout grows with the variable).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"
#include "verbs_util.h"

#define NQP		8
#define SQD		32		/* SQ depth per QP */
#define RQD		64		/* receives posted per QP */
#define WSLOTS		(2 * RQD)	/* WRITE_WITH_IMM targets per QP */
#define MAXMSG		16384
#define MAXINL		64
#define STALL_S		30		/* no progress for this long: stuck */

/* exit codes of a worker */
#define W_DONE		0
#define W_BAD		1
#define W_PEER_GONE	3		/* RETRY_EXC_ERR / flush: the peer died */
#define W_STALL		4

static unsigned long stress_msgs(void)
{
	const char *s = getenv("SOFTHCA_STRESS_MSGS");
	long v = s ? strtol(s, NULL, 0) : 0;

	return v > 0 ? (unsigned long)v : 1500;
}

/* ---- the message generator --------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct msg {
	int write_imm;
	int inl;
	uint32_t len;
	uint32_t seed;
};

/* Message @seq on QP @q sent by process @role. */
static struct msg gen(int role, int q, uint64_t seq)
{
	uint64_t r = mix((uint64_t)role << 60 ^ (uint64_t)q << 48 ^ seq);
	unsigned int pct = r % 100;
	struct msg m;

	if (pct < 40)
		m.len = (r >> 8) % 65;			/* 0..64 */
	else if (pct < 80)
		m.len = 65 + (r >> 8) % 1984;		/* ..2048 */
	else
		m.len = 2049 + (r >> 8) % (MAXMSG - 2048);	/* ..16384 */
	m.write_imm = (r >> 40) % 10 < 3;
	m.inl = m.len <= MAXINL && (r >> 44) & 1;
	m.seed = (uint32_t)(r >> 32) ^ (uint32_t)seq;
	return m;
}

/* ---- a worker process ----------------------------------------------------- */

struct conn {
	uint32_t qpn[NQP];
	uint64_t waddr[NQP];
	uint32_t rkey;
	union ibv_gid gid;
};

struct worker {
	int role;
	const char *dev, *ip;
	int sock;		/* to the peer */
	int status;		/* to the parent: "flowing" */
	unsigned long n;	/* 0: forever */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp[NQP];
	struct ibv_mr *mr;
	uint8_t *mem;
	size_t memlen;
	int gid_index;
	struct conn me, peer;
	uint64_t sent[NQP], done[NQP], rcvd[NQP];
};

#define SEND_AREA(w, q)	((w)->mem + ((size_t)(q) * (SQD + RQD + WSLOTS)) * MAXMSG)
#define RECV_AREA(w, q)	(SEND_AREA(w, q) + (size_t)SQD * MAXMSG)
#define W_AREA(w, q)	(RECV_AREA(w, q) + (size_t)RQD * MAXMSG)

static void die(struct worker *w, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
static void die(struct worker *w, int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# worker %d (%s): ", w->role, w->dev);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	_exit(code);
}

static void xfer(struct worker *w, void *out, void *in, size_t len)
{
	if (write(w->sock, out, len) != (ssize_t)len)
		die(w, W_BAD, "write to peer: %s", strerror(errno));
	for (size_t got = 0; got < len;) {
		ssize_t r = read(w->sock, (char *)in + got, len - got);

		if (r <= 0)
			die(w, W_BAD, "read from peer: %s", r ? strerror(errno) : "EOF");
		got += r;
	}
}

static void setup(struct worker *w)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
		.cap = { SQD, RQD, 1, 1, MAXINL } };

	w->ctx = open_dev(w->dev);
	if (!w->ctx)
		die(w, W_BAD, "open %s: %s", w->dev, strerror(errno));
	w->gid_index = rc_find_gid(w->ctx, w->ip);
	if (w->gid_index < 0 || ibv_query_gid(w->ctx, 1, w->gid_index, &w->me.gid))
		die(w, W_BAD, "no GID for %s", w->ip);
	w->pd = ibv_alloc_pd(w->ctx);
	w->scq = ibv_create_cq(w->ctx, NQP * SQD, NULL, NULL, 0);
	w->rcq = ibv_create_cq(w->ctx, NQP * RQD, NULL, NULL, 0);
	if (!w->pd || !w->scq || !w->rcq)
		die(w, W_BAD, "pd/cq: %s", strerror(errno));
	w->memlen = (size_t)NQP * (SQD + RQD + WSLOTS) * MAXMSG;
	w->mem = mmap(NULL, w->memlen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (w->mem == MAP_FAILED)
		die(w, W_BAD, "mmap: %s", strerror(errno));
	w->mr = ibv_reg_mr(w->pd, w->mem, w->memlen, RC_ACCESS_ALL);
	if (!w->mr)
		die(w, W_BAD, "reg_mr %zu: %s", w->memlen, strerror(errno));
	ia.send_cq = w->scq;
	ia.recv_cq = w->rcq;
	for (int q = 0; q < NQP; q++) {
		w->qp[q] = ibv_create_qp(w->pd, &ia);
		if (!w->qp[q])
			die(w, W_BAD, "create_qp %d: %s", q, strerror(errno));
		w->me.qpn[q] = w->qp[q]->qp_num;
		w->me.waddr[q] = (uintptr_t)W_AREA(w, q);
	}
	w->me.rkey = w->mr->rkey;
}

static void connect_all(struct worker *w)
{
	for (int q = 0; q < NQP; q++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = RC_QP_ACCESS_ALL };
		int ret = ibv_modify_qp(w->qp[q], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

		if (ret)
			die(w, W_BAD, "QP %d INIT: %d", q, ret);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = w->peer.qpn[q];
		a.rq_psn = 100 + q;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = w->peer.gid;
		a.ah_attr.grh.sgid_index = w->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		ret = ibv_modify_qp(w->qp[q], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		if (ret)
			die(w, W_BAD, "QP %d RTR: %d", q, ret);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 100 + q;
		a.timeout = 14;		/* 67 ms: a dead peer is noticed in ~0.5 s */
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		ret = ibv_modify_qp(w->qp[q], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC);
		if (ret)
			die(w, W_BAD, "QP %d RTS: %d", q, ret);
	}
}

static void post_recv_slot(struct worker *w, int q, unsigned int slot)
{
	struct ibv_sge sge = { (uintptr_t)RECV_AREA(w, q) + (size_t)slot * MAXMSG, MAXMSG,
			       w->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)q << 32 | slot, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(w->qp[q], &wr, &bad);

	if (ret)
		die(w, W_BAD, "QP %d post_recv slot %u: %d", q, slot, ret);
}

static void post_one(struct worker *w, int q)
{
	uint64_t seq = w->sent[q];
	struct msg m = gen(w->role, q, seq);
	uint8_t *src = SEND_AREA(w, q) + (seq % SQD) * MAXMSG;
	struct ibv_sge sge = { (uintptr_t)src, m.len, w->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)q << 32 | (uint32_t)seq,
		.sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl((uint32_t)seq) };
	struct ibv_send_wr *bad;
	int ret;

	rc_fill(src, m.len, m.seed);
	if (m.write_imm) {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = w->peer.waddr[q] + (seq % WSLOTS) * MAXMSG;
		wr.wr.rdma.rkey = w->peer.rkey;
	} else {
		wr.opcode = IBV_WR_SEND;
	}
	if (m.inl) {
		wr.send_flags |= IBV_SEND_INLINE;
		sge.lkey = 0;
	}
	ret = ibv_post_send(w->qp[q], &wr, &bad);
	if (ret)
		die(w, W_BAD, "QP %d post_send %" PRIu64 ": %d", q, seq, ret);
	if (m.inl)
		memset(src, 0, m.len);	/* inline: the buffer is free at once */
	w->sent[q]++;
}

static void on_error_wc(struct worker *w, const struct ibv_wc *wc, const char *cq)
{
	/* After the peer died, RETRY_EXC_ERR then flushes are what RC says. */
	if (!w->n && (wc->status == IBV_WC_RETRY_EXC_ERR ||
		      wc->status == IBV_WC_WR_FLUSH_ERR))
		die(w, W_PEER_GONE, "peer gone: %s on the %s CQ", rc_wc_str(wc), cq);
	die(w, W_BAD, "%s CQ: %s", cq, rc_wc_str(wc));
}

static int all_done(struct worker *w)
{
	if (!w->n)
		return 0;
	for (int q = 0; q < NQP; q++) {
		if (w->done[q] < w->n || w->rcvd[q] < w->n)
			return 0;
	}
	return 1;
}

static void run(struct worker *w)
{
	struct ibv_wc wc[32];
	uint64_t last = rc_now_us(), total = 0;
	int told = 0;

	while (!all_done(w)) {
		int progress = 0, n;

		for (int q = 0; q < NQP; q++) {
			while ((!w->n || w->sent[q] < w->n) && w->sent[q] - w->done[q] < SQD) {
				post_one(w, q);
				progress = 1;
			}
		}
		n = ibv_poll_cq(w->scq, 32, wc);
		if (n < 0)
			die(w, W_BAD, "poll send CQ: %d", n);
		for (int i = 0; i < n; i++) {
			int q = wc[i].wr_id >> 32;
			uint32_t seq = (uint32_t)wc[i].wr_id;
			struct msg m;

			if (wc[i].status != IBV_WC_SUCCESS)
				on_error_wc(w, &wc[i], "send");
			if (q >= NQP || seq != (uint32_t)w->done[q])
				die(w, W_BAD, "send completion out of order: %s, expected QP %d WR %" PRIu64,
				    rc_wc_str(&wc[i]), q, q < NQP ? w->done[q] : 0);
			m = gen(w->role, q, w->done[q]);
			if (wc[i].opcode != (m.write_imm ? IBV_WC_RDMA_WRITE : IBV_WC_SEND) ||
			    wc[i].byte_len != m.len || wc[i].qp_num != w->qp[q]->qp_num ||
			    !rc_wc_flags_are(&wc[i], m.write_imm ? IBV_WC_WITH_IMM : 0))
				die(w, W_BAD, "send completion: %s, want len %u %s", rc_wc_str(&wc[i]),
				    m.len, m.write_imm ? "WRITE_IMM" : "SEND");
			w->done[q]++;
			progress = 1;
		}
		n = ibv_poll_cq(w->rcq, 32, wc);
		if (n < 0)
			die(w, W_BAD, "poll recv CQ: %d", n);
		for (int i = 0; i < n; i++) {
			int q = wc[i].wr_id >> 32;
			unsigned int slot = (uint32_t)wc[i].wr_id;
			uint64_t seq;
			struct msg m;
			const uint8_t *data;
			long bad;

			if (wc[i].status != IBV_WC_SUCCESS)
				on_error_wc(w, &wc[i], "recv");
			if (q >= NQP || slot >= RQD || slot != w->rcvd[q] % RQD)
				die(w, W_BAD, "receive out of order: %s", rc_wc_str(&wc[i]));
			seq = w->rcvd[q];
			m = gen(!w->role, q, seq);
			if (wc[i].opcode != (m.write_imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) ||
			    wc[i].byte_len != m.len || wc[i].qp_num != w->qp[q]->qp_num ||
			    !rc_src_qp_is(&wc[i], w->peer.qpn[q]) ||
			    !rc_wc_flags_are(&wc[i], m.write_imm ? IBV_WC_WITH_IMM : 0) ||
			    (m.write_imm && ntohl(wc[i].imm_data) != (uint32_t)seq))
				die(w, W_BAD, "QP %d message %" PRIu64 ": %s, want len %u %s", q, seq,
				    rc_wc_str(&wc[i]), m.len, m.write_imm ? "WRITE_IMM" : "SEND");
			data = m.write_imm ? W_AREA(w, q) + (seq % WSLOTS) * MAXMSG :
					     RECV_AREA(w, q) + (size_t)slot * MAXMSG;
			bad = rc_check_fill(data, m.len, m.seed);
			if (bad >= 0)
				die(w, W_BAD, "QP %d message %" PRIu64 " (%s, %u bytes%s): byte %ld wrong",
				    q, seq, m.write_imm ? "WRITE_IMM" : "SEND", m.len,
				    m.inl ? ", inline" : "", bad);
			w->rcvd[q]++;
			total++;
			/* another receive only if a message will need it */
			if (!w->n || w->rcvd[q] + RQD - 1 < w->n)
				post_recv_slot(w, q, slot);
			progress = 1;
		}
		if (progress) {
			last = rc_now_us();
			if (!told && total >= 500) {
				told = 1;
				if (write(w->status, "x", 1) != 1)
					die(w, W_BAD, "status pipe");
			}
		} else if (rc_now_us() - last > STALL_S * 1000000ull) {
			die(w, W_STALL, "no progress for %d s: sent %" PRIu64 " done %" PRIu64
			    " rcvd %" PRIu64 " on QP 0", STALL_S, w->sent[0], w->done[0], w->rcvd[0]);
		}
	}
}

static void __attribute__((noreturn)) worker_main(struct worker *w)
{
	char c = 0, d;

	setup(w);
	xfer(w, &w->me, &w->peer, sizeof(w->me));
	connect_all(w);
	for (int q = 0; q < NQP; q++) {
		for (unsigned int s = 0; s < RQD; s++)
			post_recv_slot(w, q, s);
	}
	xfer(w, &c, &d, 1);		/* both have their receives posted */
	run(w);
	xfer(w, &c, &d, 1);		/* both are done: nothing more in flight */
	for (int q = 0; q < NQP; q++)
		ibv_destroy_qp(w->qp[q]);
	ibv_dereg_mr(w->mr);
	ibv_destroy_cq(w->scq);
	ibv_destroy_cq(w->rcq);
	ibv_dealloc_pd(w->pd);
	ibv_close_device(w->ctx);
	_exit(W_DONE);
}

/* ---- the test ---------------------------------------------------------------- */

static const char *const res_names[] = { "ctx", "pd", "cq", "qp", "mr" };
#define NRES 5

FIXTURE(stress) {
	int shca1_added;
	const char *dev[2];
	long base[2][NRES];
	int dmesg_bad;
	pid_t pid[2];
	int status_fd[2];
};

FIXTURE_VARIANT(stress) {
	int cross;
};

FIXTURE_VARIANT_ADD(stress, same_dev) { .cross = 0 };
FIXTURE_VARIANT_ADD(stress, cross_dev) { .cross = 1 };

RC_SHCA1_GUARD()

static int dmesg_bad_lines(void)
{
	return sh("exit $(dmesg | grep -cE 'WARNING:|BUG[: ]|Oops|Call Trace|general protection|KASAN|UBSAN|hung_task[^_]|blocked for more than')");
}

FIXTURE_SETUP(stress)
{
	self->dev[0] = "shca0";
	self->dev[1] = variant->cross ? "shca1" : "shca0";
	if (rc_cross_dev(0)) {
		/* SOFTHCA_RC_CROSS: the given devices, there already. */
		self->dev[0] = rc_cross_dev(0);
		self->dev[1] = rc_cross_dev(variant->cross);
	} else if (variant->cross) {
		self->shca1_added = rc_shca1_add();
		ASSERT_LE(0, self->shca1_added) TH_LOG("%s", rc_err);
	}
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < NRES; i++) {
			self->base[d][i] = res_count(self->dev[d], res_names[i]);
			ASSERT_LE(0, self->base[d][i]);
		}
	}
	self->dmesg_bad = dmesg_bad_lines();
	self->pid[0] = self->pid[1] = -1;
}

FIXTURE_TEARDOWN(stress)
{
	for (int i = 0; i < 2; i++) {
		if (self->pid[i] > 0) {
			kill(self->pid[i], SIGKILL);
			waitpid(self->pid[i], NULL, 0);
		}
	}
	if (self->shca1_added > 0)
		rc_shca1_del();
}

static void start(struct __test_metadata *_metadata, FIXTURE_DATA(stress) *self,
		  const FIXTURE_VARIANT(stress) *variant, unsigned long n)
{
	int sv[2], st[2][2];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	for (int r = 0; r < 2; r++) {
		ASSERT_EQ(0, pipe(st[r]));
		self->pid[r] = fork();
		ASSERT_LE(0, self->pid[r]);
		if (!self->pid[r]) {
			struct worker *w = calloc(1, sizeof(*w));

			if (!w)
				_exit(W_BAD);
			w->role = r;
			w->dev = self->dev[r];
			w->ip = variant->cross && r ? RC_IP1 : RC_IP0;
			w->sock = sv[r];
			close(sv[!r]);
			close(st[r][0]);
			w->status = st[r][1];
			w->n = n;
			worker_main(w);
		}
		close(st[r][1]);
		self->status_fd[r] = st[r][0];
	}
	close(sv[0]);
	close(sv[1]);
}

/* Wait for @pid until @ms passed; its exit code, or -1 (killed: -signal). */
static int reap(pid_t pid, int ms)
{
	int st;

	for (int waited = 0; waited <= ms; waited += 10) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
		usleep(10000);
	}
	return -1000;
}

static void expect_clean(struct __test_metadata *_metadata, FIXTURE_DATA(stress) *self)
{
	for (int d = 0; d < 2; d++) {
		for (int i = 0; i < NRES; i++) {
			long now = res_count(self->dev[d], res_names[i]);

			EXPECT_EQ(self->base[d][i], now) TH_LOG("%s: rdma res %s %ld, was %ld",
								 self->dev[d], res_names[i], now,
								 self->base[d][i]);
		}
	}
	EXPECT_EQ(self->dmesg_bad, dmesg_bad_lines()) TH_LOG("new WARNING/BUG lines in dmesg");
}

/* Seconds the traffic test may take: generous for 1000 messages/s. */
static int traffic_timeout(void)
{
	return 300 + (int)(stress_msgs() * 2 * NQP / 1000);
}

TEST_F_TIMEOUT(stress, traffic, 300)
{
	unsigned long n = stress_msgs();
	uint64_t t0 = rc_now_us();
	int code[2];

	start(_metadata, self, variant, n);
	for (int r = 0; r < 2; r++) {
		code[r] = reap(self->pid[r], (traffic_timeout() - 10) * 1000);
		self->pid[r] = -1;
		EXPECT_EQ(W_DONE, code[r]) TH_LOG("worker %d exit %d", r, code[r]);
	}
	TH_LOG("%d QPs x 2 processes x %lu messages in %.1f s", NQP, n,
	       (rc_now_us() - t0) / 1e6);
	expect_clean(_metadata, self);
}

static void kill_one(struct __test_metadata *_metadata, FIXTURE_DATA(stress) *self,
		     const FIXTURE_VARIANT(stress) *variant, int victim)
{
	int code;
	char c;

	start(_metadata, self, variant, 0);
	/* Both must be moving traffic before the kill. */
	for (int r = 0; r < 2; r++) {
		struct pollfd pfd = { .fd = self->status_fd[r], .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 60000)) TH_LOG("worker %d never got going", r);
		ASSERT_EQ(1, read(self->status_fd[r], &c, 1)) TH_LOG("worker %d died early", r);
	}
	usleep(300000);
	ASSERT_EQ(0, kill(self->pid[victim], SIGKILL));
	code = reap(self->pid[victim], 10000);
	self->pid[victim] = -1;
	EXPECT_EQ(-SIGKILL, code);
	/* The survivor's WRs time out (no QP answers any more) and it ends. */
	code = reap(self->pid[!victim], 60000);
	if (code == -1000)
		TH_LOG("survivor still running 60 s after the kill");
	else
		self->pid[!victim] = -1;
	EXPECT_EQ(W_PEER_GONE, code);
	expect_clean(_metadata, self);
}

/* The harness reads the timeout from the test's object: scale it. */
static void __attribute__((constructor(65535))) scale_timeout(void)
{
	_stress_traffic_object.timeout = traffic_timeout();
}

TEST_F_TIMEOUT(stress, kill9_first, 180)
{
	kill_one(_metadata, self, variant, 0);
}

TEST_F_TIMEOUT(stress, kill9_second, 180)
{
	kill_one(_metadata, self, variant, 1);
}

TEST_HARNESS_MAIN
