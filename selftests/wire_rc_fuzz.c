// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile peer on the wire against a live RC or UC QP (issue 14 item 4,
 * Documentation/wire.md "Responder", "Unreliable connection"): packets
 * forged from a raw socket with the peer's own addresses and the QP's
 * number, each class checked for what it must do and for what it must not
 * write (UC's answers where they differ):
 *
 * - a well-formed WRITE at the expected PSN lands exactly where its RETH
 *   says, and nowhere else (so the packets are right and the refusals
 *   below are the responder's, not a bad ICRC);
 * - a forged rkey, a WRITE past the MR, a WRITE with the rkey of an MR
 *   without REMOTE_WRITE: nothing written, a remote access NAK
 *   (rem_access_naks_sent), the QP in ERR with IBV_EVENT_QP_ACCESS_ERR;
 *   UC: the message dropped (rx_access_drops), the QP in RTS;
 * - a PSN ahead: a sequence NAK, nothing written, the QP still in RTS and
 *   the WRITE at the expected PSN taken after it; UC: the message begins
 *   there and lands (out_of_sequence);
 * - a duplicate (PSN behind) with other bytes: acknowledged, not executed;
 *   UC has no duplicates: it begins a message and lands;
 * - a P_Key not the default one: a header drop, nothing written;
 * - addresses that are not the QP's path, an ACK with nothing outstanding,
 *   a request to a QP in ERR: dropped and counted (wire_rx_not_peer_drops,
 *   wire_rx_unsolicited_drops, wire_rx_qp_state_drops; an ACK to a UC QP
 *   is not its transport: wire_rx_unknown_qpn_drops);
 * - RC, a SEND outstanding: an ACK behind its PSN is dropped and counted
 *   (wire_rx_stale_rsp_drops), the ACK for its PSN completes it;
 * - a CNP from the peer is counted (rp_cnp_handled by an RC QP's
 *   reaction point, rp_cnp_ignored by a UC QP), one from another address
 *   is not the peer's, one short of its reserved bytes a header drop;
 * - rounds of random requests (every request opcode of the transport, PSNs around the
 *   expected one, the window's rkey, a read-only MR's, a forged one,
 *   addresses and lengths in and around the window, random header bits),
 *   the QP reconnected after each round of 20, while a second pair of QPs
 *   passes SENDs between the rounds: not a byte written outside the window
 *   that grants REMOTE_WRITE, every packet arrived.
 *
 * Runs on the wire's test bed (selftests/wire_rc.sh: SOFTHCA_RC_CROSS
 * "shca9 rxe0"): end 0 is the softhca target, end 1's address is the one
 * forged. Elsewhere it skips (scripts/check runs it only there). The
 * random requests follow SOFTHCA_FUZZ_SEED if set.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rocev2.h"
#include "ud.h"

/* IBTA Table 38, RC. */
enum {
	OP_SEND_FIRST = 0x00, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM,
	OP_SEND_ONLY, OP_SEND_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
	OP_WRITE_LAST, OP_WRITE_LAST_IMM, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM,
	OP_READ_REQ, OP_ACK = 0x11, OP_CMP_SWAP = 0x13, OP_FETCH_ADD,
	OP_CNP = 0x81,			/* RoCEv2, Annex A17.9.3 */
};

#define BIG		(256 << 10)	/* the target's memory, canaries around */
#define WIN_OFF		(64 << 10)	/* [64K, 128K): REMOTE_WRITE | READ | ATOMIC */
#define WIN_LEN		(64 << 10)
#define RO_OFF		(128 << 10)	/* [128K, 132K): REMOTE_READ only */
#define RO_LEN		(4 << 10)
#define SEED		0x5eed
#define DROP_MS		3000		/* a counter that does not move by then */

#define UC		0x20		/* the transport bits of a UC opcode */

FIXTURE(fz) {
	struct rc_pair p, q;		/* p: the target; q: traffic beside it */
	uint8_t *big, *want;		/* the memory and what it must hold */
	struct ibv_mr *win, *ro;
	struct in_addr a_ip, b_ip;
	uint32_t epsn;			/* the next PSN the target expects */
	uint8_t tp;			/* 0 (RC) or UC */
	int fd;
};

FIXTURE_VARIANT(fz) {
	enum ibv_qp_type qp_type;
};

FIXTURE_VARIANT_ADD(fz, rc) { .qp_type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(fz, uc) { .qp_type = IBV_QPT_UC };

RC_SHCA1_GUARD()

#define A (&self->p.e[0])
#define B (&self->p.e[1])

static struct in_addr gid_ip(const union ibv_gid *g)
{
	struct in_addr a;

	memcpy(&a, g->raw + 12, 4);
	return a;
}

/* SOFTHCA_FUZZ_SEED, or one printed for a rerun. */
static unsigned int fuzz_seed(void)
{
	const char *v = getenv("SOFTHCA_FUZZ_SEED");
	unsigned int seed = v ? strtoul(v, NULL, 0) : (unsigned int)rc_now_us();

	ksft_print_msg("seed %u (SOFTHCA_FUZZ_SEED)\n", seed);
	return seed;
}

FIXTURE_SETUP(fz)
{
	struct rc_cfg c;

	self->fd = -1;
	if (!rc_on_wire(RC_CROSS_DEV) || rc_dev_is_rxe(rc_cross_dev(0)))
		SKIP(return, "needs SOFTHCA_RC_CROSS with a softhca end 0 on the wire (wire_rc.sh)");
	rc_cfg_default(&c, RC_CROSS_DEV);
	c.buf_size = 64 << 10;
	/* The traffic beside the target is RC in both variants. */
	ASSERT_EQ(0, rc_pair_open(&self->q, &c)) TH_LOG("%s", rc_err);
	c.qp_type = variant->qp_type;
	if (variant->qp_type == IBV_QPT_UC)
		c.qp_access = IBV_ACCESS_REMOTE_WRITE;
	self->tp = variant->qp_type == IBV_QPT_UC ? UC : 0;
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->big = aligned_alloc(4096, BIG);
	self->want = malloc(BIG);
	ASSERT_TRUE(self->big && self->want);
	rc_fill(self->big, BIG, SEED);
	memcpy(self->want, self->big, BIG);
	self->win = ibv_reg_mr(A->pd, self->big + WIN_OFF, WIN_LEN,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	self->ro = ibv_reg_mr(A->pd, self->big + RO_OFF, RO_LEN,
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_TRUE(self->win && self->ro) TH_LOG("reg_mr: %s", strerror(errno));
	self->a_ip = gid_ip(&A->gid);
	self->b_ip = gid_ip(&B->gid);
	self->epsn = c.sq_psn[1];	/* B's send PSN is A's receive PSN */
	rocev2_init();
	srand(fuzz_seed());
	self->fd = rocev2_socket();
	ASSERT_LE(0, self->fd) TH_LOG("raw socket: %s", strerror(errno));
}

FIXTURE_TEARDOWN(fz)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->win)
		ibv_dereg_mr(self->win);
	if (self->ro)
		ibv_dereg_mr(self->ro);
	rc_pair_destroy(&self->q);
	rc_pair_destroy(&self->p);
	free(self->big);
	free(self->want);
}

/* A request with a RETH (WRITE FIRST/ONLY, READ) of @paylen bytes. */
static size_t reth_req(uint8_t *pkt, struct in_addr src, struct in_addr dst,
		       uint8_t op, uint32_t qpn, uint32_t psn, uint64_t va,
		       uint32_t rkey, uint32_t dma_len, const void *pay,
		       size_t paylen)
{
	size_t pad = -paylen & 3;
	size_t len = ROCEV2_BTH_LEN + ROCEV2_RETH_LEN + paylen + pad +
		     ROCEV2_ICRC_LEN;
	size_t tot = rocev2_ip_udp(pkt, src, dst, len);
	uint8_t *b = pkt + ROCEV2_BTH_OFF;

	memset(b, 0, len);
	rocev2_bth(b, op, pad, qpn, psn, 1);
	rocev2_reth(b + ROCEV2_BTH_LEN, va, rkey, dma_len);
	if (paylen)
		memcpy(b + ROCEV2_BTH_LEN + ROCEV2_RETH_LEN, pay, paylen);
	rocev2_seal(pkt, tot);
	return tot;
}

/* A WRITE ONLY from B's address to A: @len bytes of @seed at @va. */
static void forge_write(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self,
			struct in_addr src, uint32_t psn, uint64_t va,
			uint32_t rkey, uint32_t len, uint32_t seed)
{
	uint8_t pkt[ROCEV2_PKT_MAX], pay[1024];

	ASSERT_GE(sizeof(pay), len);
	rc_fill(pay, len, seed);
	ASSERT_EQ(0, rocev2_send(self->fd, pkt,
				 reth_req(pkt, src, self->a_ip, self->tp | OP_WRITE_ONLY,
					  A->qp->qp_num, psn, va, rkey, len, pay,
					  len))) TH_LOG("sendto: %s", strerror(errno));
}

static uint64_t win_va(FIXTURE_DATA(fz) *self, size_t off)
{
	return (uintptr_t)self->big + WIN_OFF + off;
}

static long long ctr(const char *dev, const char *name)
{
	return ud_counter(dev, name);
}

/* Wait up to DROP_MS for counter @name of the target to pass @base. */
static long long ctr_wait(const char *dev, const char *name, long long base)
{
	long long v = ctr(dev, name);

	for (uint64_t t0 = rc_now_us(); v <= base &&
	     rc_now_us() - t0 < DROP_MS * 1000ull; v = ctr(dev, name))
		;
	return v;
}

/* Packets that reached @dev's port: taken, or dropped at the headers. */
static long long wire_arrivals(const char *dev)
{
	return ctr(dev, "wire_rx_packets") + ctr(dev, "wire_rx_header_drops") +
	       ctr(dev, "wire_rx_icrc_drops");
}

/* Every byte of the target's memory is what the test expects. */
static void expect_memory(struct __test_metadata *_metadata,
			  FIXTURE_DATA(fz) *self, const char *what)
{
	size_t i;

	for (i = 0; i < BIG && self->big[i] == self->want[i]; i++)
		;
	EXPECT_EQ(BIG, i) TH_LOG("%s: byte %zu of the target (window at %d..%d) is %#x, want %#x",
				 what, i, WIN_OFF, WIN_OFF + WIN_LEN,
				 i < BIG ? self->big[i] : 0, i < BIG ? self->want[i] : 0);
}

/* The next async event of @ctx within @ms, or -1. */
static int async_event(struct ibv_context *ctx, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	if (poll(&pfd, 1, ms) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	ibv_ack_async_event(&ev);
	return type;
}

/* A well-formed WRITE lands where its RETH says, nowhere else. */
static void expect_write_lands(struct __test_metadata *_metadata,
			       FIXTURE_DATA(fz) *self, size_t off, uint32_t len,
			       uint32_t seed)
{
	uint64_t t0 = rc_now_us();

	forge_write(_metadata, self, self->b_ip, self->epsn, win_va(self, off),
		    self->win->rkey, len, seed);
	rc_fill(self->want + WIN_OFF + off, len, seed);
	while (memcmp(self->big + WIN_OFF + off, self->want + WIN_OFF + off, len) &&
	       rc_now_us() - t0 < DROP_MS * 1000ull)
		usleep(1000);
	self->epsn = (self->epsn + 1) & 0xffffff;
	expect_memory(_metadata, self, "after a forged WRITE at the expected PSN");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
}

TEST_F(fz, well_formed_write_lands_in_place)
{
	long long icrc = ctr(A->dev, "wire_rx_icrc_drops");
	long long hdr = ctr(A->dev, "wire_rx_header_drops");

	expect_write_lands(_metadata, self, 100, 200, 1);
	expect_write_lands(_metadata, self, WIN_LEN - 1024, 1024, 2);
	EXPECT_EQ(icrc, ctr(A->dev, "wire_rx_icrc_drops"));
	EXPECT_EQ(hdr, ctr(A->dev, "wire_rx_header_drops"));
}

/*
 * A refused WRITE writes nothing. RC: a remote access NAK, A in ERR with
 * QP_ACCESS_ERR. UC: the message dropped and counted, A in RTS, taking the
 * next one.
 */
static void expect_access_refused(struct __test_metadata *_metadata,
				  FIXTURE_DATA(fz) *self, uint64_t va,
				  uint32_t rkey, uint32_t len, const char *what)
{
	const char *name = self->tp ? "rx_access_drops" : "rem_access_naks_sent";
	long long n = ctr(A->dev, name);

	forge_write(_metadata, self, self->b_ip, self->epsn, va, rkey, len, 3);
	EXPECT_EQ(n + 1, ctr_wait(A->dev, name, n)) TH_LOG("%s: %s", what, name);
	expect_memory(_metadata, self, what);
	if (self->tp) {
		EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp)) TH_LOG("%s", what);
		EXPECT_EQ(-1, async_event(A->ctx, 0)) TH_LOG("%s", what);
		self->epsn = (self->epsn + 1) & 0xffffff;
		expect_write_lands(_metadata, self, 0, 64, 13);
		return;
	}
	EXPECT_EQ(IBV_QPS_ERR, rc_wait_qp_state(A->qp, IBV_QPS_ERR, DROP_MS)) TH_LOG("%s", what);
	EXPECT_EQ(IBV_EVENT_QP_ACCESS_ERR, async_event(A->ctx, DROP_MS)) TH_LOG("%s", what);
}

TEST_F(fz, forged_rkey_writes_nothing)
{
	/* The window's MR index with another key byte. */
	expect_access_refused(_metadata, self, win_va(self, 0),
			      self->win->rkey ^ 0x5a, 64, "a forged rkey");
}

TEST_F(fz, write_past_the_mr_writes_nothing)
{
	/* 8 bytes inside the window, 56 past it: not even the 8. */
	expect_access_refused(_metadata, self, win_va(self, WIN_LEN - 8),
			      self->win->rkey, 64, "a WRITE across the MR's end");
}

TEST_F(fz, write_with_read_only_rkey_writes_nothing)
{
	expect_access_refused(_metadata, self, (uintptr_t)self->big + RO_OFF,
			      self->ro->rkey, 64, "a WRITE with a REMOTE_READ-only rkey");
}

/* RC: a sequence NAK, nothing written. UC: a message begins there. */
TEST_F(fz, psn_ahead)
{
	const char *name = self->tp ? "out_of_sequence" : "seq_naks_sent";
	long long n = ctr(A->dev, name);

	if (self->tp) {
		self->epsn += 100;
		expect_write_lands(_metadata, self, 0, 64, 4);
		EXPECT_EQ(n + 1, ctr(A->dev, name));
		return;
	}
	forge_write(_metadata, self, self->b_ip, self->epsn + 100, win_va(self, 0),
		    self->win->rkey, 64, 4);
	EXPECT_EQ(n + 1, ctr_wait(A->dev, name, n));
	expect_memory(_metadata, self, "a WRITE with a PSN ahead");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	expect_write_lands(_metadata, self, 0, 64, 5);
}

/* RC: acknowledged, not executed again. UC: a new message, executed. */
TEST_F(fz, duplicate)
{
	long long dups = ctr(A->dev, "duplicate_request");

	expect_write_lands(_metadata, self, 4096, 128, 6);
	if (self->tp) {
		self->epsn--;
		expect_write_lands(_metadata, self, 4096, 128, 7);
		EXPECT_EQ(dups + 1, ctr(A->dev, "duplicate_request"));
		return;
	}
	/* The same PSN again, other bytes. */
	forge_write(_metadata, self, self->b_ip, self->epsn - 1, win_va(self, 4096),
		    self->win->rkey, 128, 7);
	EXPECT_EQ(dups + 1, ctr_wait(A->dev, "duplicate_request", dups));
	expect_memory(_metadata, self, "a duplicate WRITE with other bytes");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
}

TEST_F(fz, not_from_the_peer_is_dropped)
{
	long long drops = ctr(A->dev, "wire_rx_not_peer_drops");
	struct in_addr other = self->b_ip;

	/* The peer's neighbour: same subnet, not the QP's path. */
	other.s_addr = htonl(ntohl(other.s_addr) + 1);
	forge_write(_metadata, self, other, self->epsn, win_va(self, 0),
		    self->win->rkey, 64, 8);
	EXPECT_EQ(drops + 1, ctr_wait(A->dev, "wire_rx_not_peer_drops", drops));
	expect_memory(_metadata, self, "a WRITE from another address");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	expect_write_lands(_metadata, self, 0, 64, 9);
}

/* A P_Key that is not the default one (low 15 bits): a header drop. */
TEST_F(fz, foreign_pkey_is_dropped)
{
	long long drops = ctr(A->dev, "wire_rx_header_drops");
	uint8_t pkt[ROCEV2_PKT_MAX], pay[64];
	size_t tot;

	rc_fill(pay, sizeof(pay), 14);
	tot = reth_req(pkt, self->b_ip, self->a_ip, self->tp | OP_WRITE_ONLY,
		       A->qp->qp_num, self->epsn, win_va(self, 0), self->win->rkey,
		       sizeof(pay), pay, sizeof(pay));
	pkt[ROCEV2_BTH_OFF + 2] = 0x92;		/* P_Key 0x9234: full, not ours */
	pkt[ROCEV2_BTH_OFF + 3] = 0x34;
	rocev2_seal(pkt, tot);
	ASSERT_EQ(0, rocev2_send(self->fd, pkt, tot));
	EXPECT_EQ(drops + 1, ctr_wait(A->dev, "wire_rx_header_drops", drops));
	expect_memory(_metadata, self, "a WRITE with another P_Key");
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	expect_write_lands(_metadata, self, 0, 64, 15);
}

/* An ACK is RC's: to a UC QP, not a QP of its transport. */
TEST_F(fz, unsolicited_ack_is_dropped)
{
	const char *name = self->tp ? "wire_rx_unknown_qpn_drops" :
				      "wire_rx_unsolicited_drops";
	long long drops = ctr(A->dev, name);
	uint8_t pkt[ROCEV2_PKT_MAX];
	size_t len = ROCEV2_BTH_LEN + ROCEV2_AETH_LEN + ROCEV2_ICRC_LEN;
	size_t tot = rocev2_ip_udp(pkt, self->b_ip, self->a_ip, len);
	uint8_t *b = pkt + ROCEV2_BTH_OFF;

	memset(b, 0, len);
	/* An ACK for the PSN A would send next: nothing is outstanding. */
	rocev2_bth(b, OP_ACK, 0, A->qp->qp_num, self->p.cfg.sq_psn[0], 0);
	rocev2_aeth(b + ROCEV2_BTH_LEN, 0x1f, 1);
	rocev2_seal(pkt, tot);
	ASSERT_EQ(0, rocev2_send(self->fd, pkt, tot));
	EXPECT_EQ(drops + 1, ctr_wait(A->dev, name, drops));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	/* A's own SENDs still go and complete. */
	ASSERT_EQ(0, rc_post_recv(B->qp, 1, B->buf, 4096, B->mr->lkey));
	rc_fill(A->buf, 512, 10);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 2, A->buf, 512, A->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	struct rc_wc_want w = rc_want_req(2, IBV_WC_SEND, 512, A);

	rc_expect_wc(_metadata, A->scq, &w);
	w = rc_want_recv(1, IBV_WC_RECV, 512, B, A);
	rc_expect_wc(_metadata, B->rcq, &w);
	rc_expect_bytes(_metadata, B->buf, 512, 10, "A's SEND after the forged ACK");
}

/* Forge an ACK from B for @psn to A. */
static void forge_ack(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self,
		      uint32_t psn, uint32_t msn)
{
	uint8_t pkt[ROCEV2_PKT_MAX];
	size_t len = ROCEV2_BTH_LEN + ROCEV2_AETH_LEN + ROCEV2_ICRC_LEN;
	size_t tot = rocev2_ip_udp(pkt, self->b_ip, self->a_ip, len);
	uint8_t *b = pkt + ROCEV2_BTH_OFF;

	memset(b, 0, len);
	rocev2_bth(b, self->tp | OP_ACK, 0, A->qp->qp_num, psn, 0);
	rocev2_aeth(b + ROCEV2_BTH_LEN, 0x1f, msn);
	rocev2_seal(pkt, tot);
	ASSERT_EQ(0, rocev2_send(self->fd, pkt, tot));
}

/*
 * A SEND of A outstanding (B, in ERR, answers nothing): an ACK for a PSN
 * behind it answers nothing and is counted; the ACK for its own PSN
 * completes it, so the stale one was not taken as an ACK either.
 */
TEST_F(fz, stale_ack_is_dropped)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint32_t psn = self->p.cfg.sq_psn[0];
	long long tx = ctr(A->dev, "wire_tx_packets");
	long long drops = ctr(A->dev, "wire_rx_stale_rsp_drops");

	if (self->tp)
		SKIP(return, "UC has no responses");
	ASSERT_EQ(0, ibv_modify_qp(B->qp, &a, IBV_QP_STATE));
	rc_fill(A->buf, 512, 12);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 3, A->buf, 512, A->mr->lkey,
				  0, 0, IBV_SEND_SIGNALED, 0));
	ASSERT_LT(tx, ctr_wait(A->dev, "wire_tx_packets", tx));
	forge_ack(_metadata, self, (psn - 3) & 0xffffff, 0);
	EXPECT_EQ(drops + 1, ctr_wait(A->dev, "wire_rx_stale_rsp_drops", drops));
	EXPECT_EQ(0, rc_poll_none(A->scq, 0));
	forge_ack(_metadata, self, psn, 1);
	struct rc_wc_want w = rc_want_req(3, IBV_WC_SEND, 512, A);

	rc_expect_wc(_metadata, A->scq, &w);
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	EXPECT_EQ(drops + 1, ctr(A->dev, "wire_rx_stale_rsp_drops"));
}

/* A CNP (Annex A17.9.3) from @src to A: BTH 0x81, B bit, @rsvd of 16 bytes. */
static void forge_cnp(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self,
		      struct in_addr src, size_t rsvd)
{
	uint8_t pkt[ROCEV2_PKT_MAX];
	size_t len = ROCEV2_BTH_LEN + rsvd + ROCEV2_ICRC_LEN;
	size_t tot = rocev2_ip_udp(pkt, src, self->a_ip, len);
	uint8_t *b = pkt + ROCEV2_BTH_OFF;

	memset(b, 0, len);
	rocev2_bth(b, OP_CNP, 0, A->qp->qp_num, 0, 0);
	b[4] = 0x40;			/* BECN */
	rocev2_seal(pkt, tot);
	ASSERT_EQ(0, rocev2_send(self->fd, pkt, tot));
}

/*
 * A CNP from the peer is counted: an RC QP's reaction point takes it
 * (rp_cnp_handled, its rate cut), a UC QP's is ignored (rp_cnp_ignored);
 * one from another address is not the peer's; one short of its 16
 * reserved bytes is a header drop. The QP goes on.
 */
TEST_F(fz, cnp_is_counted)
{
	const char *took = self->tp == UC ? "rp_cnp_ignored" : "rp_cnp_handled";
	struct in_addr other = self->b_ip;
	long long cnps = ctr(A->dev, took);
	long long np = ctr(A->dev, "wire_rx_not_peer_drops");
	long long hdr = ctr(A->dev, "wire_rx_header_drops");

	forge_cnp(_metadata, self, self->b_ip, 16);
	EXPECT_EQ(cnps + 1, ctr_wait(A->dev, took, cnps));
	other.s_addr = htonl(ntohl(other.s_addr) + 1);
	forge_cnp(_metadata, self, other, 16);
	EXPECT_EQ(np + 1, ctr_wait(A->dev, "wire_rx_not_peer_drops", np));
	forge_cnp(_metadata, self, self->b_ip, 12);
	EXPECT_EQ(hdr + 1, ctr_wait(A->dev, "wire_rx_header_drops", hdr));
	EXPECT_EQ(cnps + 1, ctr(A->dev, took));
	EXPECT_EQ(IBV_QPS_RTS, rc_qp_state(A->qp));
	expect_write_lands(_metadata, self, 0, 64, 16);
}

TEST_F(fz, request_to_qp_in_err_is_dropped)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	long long drops = ctr(A->dev, "wire_rx_qp_state_drops");

	ASSERT_EQ(0, ibv_modify_qp(A->qp, &a, IBV_QP_STATE));
	forge_write(_metadata, self, self->b_ip, self->epsn, win_va(self, 0),
		    self->win->rkey, 64, 11);
	EXPECT_EQ(drops + 1, ctr_wait(A->dev, "wire_rx_qp_state_drops", drops));
	expect_memory(_metadata, self, "a WRITE to a QP in ERR");
}

/* ---- random requests ---------------------------------------------------- */

static const uint8_t req_ops[] = {
	OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_LAST_IMM,
	OP_SEND_ONLY, OP_SEND_ONLY_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE,
	OP_WRITE_LAST, OP_WRITE_LAST_IMM, OP_WRITE_ONLY, OP_WRITE_ONLY_IMM,
	OP_READ_REQ, OP_CMP_SWAP, OP_FETCH_ADD,
};

/* An rkey the fuzz uses: the window's, the read-only MR's, or forged. */
static uint32_t fuzz_rkey(FIXTURE_DATA(fz) *self)
{
	switch (rand() % 4) {
	case 0: return self->ro->rkey;
	case 1: return self->win->rkey ^ (1 + rand() % 255);
	case 2: return rand();
	default: return self->win->rkey;
	}
}

/* An address in, across the edges of, or around the window. */
static uint64_t fuzz_va(FIXTURE_DATA(fz) *self)
{
	uint64_t base = (uintptr_t)self->big;

	switch (rand() % 4) {
	case 0: return base + rand() % BIG;
	case 1: return base + WIN_OFF - 64 + rand() % 128;
	case 2: return base + WIN_OFF + WIN_LEN - 64 + rand() % 128;
	default: return base + WIN_OFF + rand() % WIN_LEN;
	}
}

/*
 * A random request: any RC request opcode with the headers it needs (or
 * not), a PSN around the expected one, a payload of 0..1024 bytes, and
 * now and then a flipped header bit (the ICRC sealed after it).
 */
static size_t fuzz_packet(FIXTURE_DATA(fz) *self, uint8_t *pkt)
{
	/* UC: its own opcodes, and now and then an RC one (not its transport). */
	uint8_t op = req_ops[rand() % sizeof(req_ops)] | (rand() % 8 ? self->tp : 0);
	size_t paylen = rand() % 3 ? rand() % 1025 : 8 * (rand() % 3);
	size_t ext = 0, pad = -paylen & 3, len, tot;
	uint32_t psn = self->epsn + rand() % 9 - 4;
	uint8_t *b;

	if (op == OP_WRITE_FIRST || op == OP_WRITE_ONLY ||
	    op == OP_WRITE_ONLY_IMM || op == OP_READ_REQ)
		ext = ROCEV2_RETH_LEN;
	else if (op == OP_CMP_SWAP || op == OP_FETCH_ADD)
		ext = 28;
	if (op == OP_SEND_LAST_IMM || op == OP_SEND_ONLY_IMM ||
	    op == OP_WRITE_LAST_IMM || op == OP_WRITE_ONLY_IMM)
		ext += 4;
	len = ROCEV2_BTH_LEN + ext + paylen + pad + ROCEV2_ICRC_LEN;
	tot = rocev2_ip_udp(pkt, self->b_ip, self->a_ip, len);
	b = pkt + ROCEV2_BTH_OFF;
	for (size_t i = 0; i < len; i++)
		b[i] = rand();
	rocev2_bth(b, op, pad, A->qp->qp_num, psn, rand() & 1);
	if (ext >= ROCEV2_RETH_LEN)
		rocev2_reth(b + ROCEV2_BTH_LEN, fuzz_va(self), fuzz_rkey(self),
			    rand() % 3 ? paylen : rand() % 70000);
	if (rand() % 8 == 0)
		b[rand() % (ROCEV2_BTH_LEN + ext)] ^= 1 << (rand() % 8);
	rocev2_seal(pkt, tot);
	return tot;
}

/* Reconnect A (RESET -> RTS, the same PSNs) after a round. */
static void fuzz_reconnect(struct __test_metadata *_metadata, FIXTURE_DATA(fz) *self)
{
	struct ibv_wc wc[16];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	while (rc_poll(A->scq, wc, 16, 0) > 0 || rc_poll(A->rcq, wc, 16, 0) > 0)
		;
	ASSERT_EQ(0, ibv_modify_qp(A->qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, rc_end_connect(&self->p, 0)) TH_LOG("%s", rc_err);
	self->epsn = self->p.cfg.sq_psn[1];
	while (async_event(A->ctx, 0) >= 0)
		;
}

TEST_F(fz, random_requests_write_only_the_window)
{
	/* Short rounds: the first refusal puts A in ERR for the rest. */
	int rounds = 100, per_round = 20;
	uint8_t pkt[ROCEV2_PKT_MAX];
	long long rx0 = wire_arrivals(A->dev);

	for (int r = 0; r < rounds; r++) {
		/* Receives for SENDs, some of them in the window. */
		for (int k = 0; k < 8; k++)
			ASSERT_EQ(0, rc_post_recv(A->qp, k, self->big + WIN_OFF + k * 4096,
						  4096, self->win->lkey));
		for (int k = 0; k < per_round; k++)
			ASSERT_EQ(0, rocev2_send(self->fd, pkt, fuzz_packet(self, pkt)));
		rc_expect_sends(_metadata, &self->q, 32768, 11);
		usleep(20000);
		fuzz_reconnect(_metadata, self);
		/* The window may hold anything now; the rest may not. */
		memcpy(self->want + WIN_OFF, self->big + WIN_OFF, WIN_LEN);
		expect_memory(_metadata, self, "after a round of random requests");
		if (_metadata->passed == 0)
			break;
	}
	/* The packets reached the target (not lost in the IP stack). */
	EXPECT_LE(rx0 + rounds * per_round, wire_arrivals(A->dev));
	expect_write_lands(_metadata, self, 512, 256, 12);
}

TEST_HARNESS_MAIN
