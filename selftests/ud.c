// SPDX-License-Identifier: GPL-2.0
/*
 * UD QPs and address handles (Documentation/testing.md "ud"), in three
 * topologies: both QPs on shca0 in one context, in two, and across shca0
 * and shca1. Every receive is checked field by field (status, opcode,
 * byte_len with the 40-byte GRH area, src_qp, wc_flags, imm_data,
 * pkey_index), byte by byte, and its GRH area is parsed as the IPv4
 * header of the RoCE v2 packet it stands for. Drops (wrong Q_Key, no such
 * QP, no receive posted, a receive too short) leave the sender's
 * completion a success and move exactly their counter. Bad input: a bad
 * GID index, an AH of another PD, no AH, RDMA on UD, a message beyond the
 * path MTU, a privileged Q_Key, a GSI QP. Datagrams rung before the
 * sender's QP is destroyed still arrive (as they had left a NIC by then).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "softhca.h"		/* white box: the AV an AH keeps */
#include "ud.h"
#include "util.h"
#include "verbs_util.h"

RC_SHCA1_GUARD()

/* The MAC of @netdev. */
static int netdev_mac(const char *netdev, uint8_t mac[6])
{
	char path[128], v[32];
	unsigned int b[6];

	snprintf(path, sizeof(path), "/sys/class/net/%s/address", netdev);
	if (read_line(path, v, sizeof(v)) ||
	    sscanf(v, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

FIXTURE(ud) {
	struct ud_pair p;
};

FIXTURE_VARIANT(ud) {
	enum rc_topo topo;
};

FIXTURE_VARIANT_ADD(ud, same_ctx) { .topo = RC_SAME_CTX };
FIXTURE_VARIANT_ADD(ud, two_ctx) { .topo = RC_TWO_CTX };
FIXTURE_VARIANT_ADD(ud, cross_dev) { .topo = RC_CROSS_DEV };

FIXTURE_SETUP(ud)
{
	ASSERT_EQ(0, ud_pair_open(&self->p, variant->topo)) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(ud)
{
	ud_pair_close(&self->p);
}

/* A receive of @len bytes from @from on @e: every field, every byte, the GRH. */
static void expect_datagram(struct __test_metadata *_metadata,
			    struct ud_end *e, struct ud_end *from,
			    uint64_t wr_id, uint32_t len, uint32_t seed,
			    bool imm, uint32_t imm_host, uint8_t tclass,
			    uint8_t ttl)
{
	struct rc_wc_want w = ud_want_recv(wr_id, len, e, from);
	uint8_t *buf = e->buf + UD_RECV_OFF;
	struct ibv_wc wc;

	if (imm)
		w = rc_want_imm(w, imm_host);
	ASSERT_EQ(1, rc_poll(e->rcq, &wc, 1, RC_WC_MS))
		TH_LOG("receive of %u bytes: %s", len, rc_err);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%u bytes: %s", len, rc_err);
	EXPECT_EQ(0, wc.pkey_index);
	/* The RoCE packet type, as mlx5: UDP (v2) | IPv4 (UCX reads it). */
	EXPECT_EQ(0xa, wc.sl) TH_LOG("%u bytes", len);
	EXPECT_EQ(-1, rc_check_fill(buf + UD_GRH, len, seed))
		TH_LOG("%u bytes: payload differs", len);
	EXPECT_EQ(0, ud_grh_check(buf, &from->gid, &e->gid, len, imm, tclass,
				  ttl)) TH_LOG("%u bytes: %s", len, rc_err);
	/* Nothing beyond the message is written. */
	if (UD_GRH + len < UD_GRH + UD_MTU)
		EXPECT_EQ(0xee, buf[UD_GRH + len]) TH_LOG("%u bytes", len);
}

/* Post a receive on @e over a buffer filled with 0xee. */
static void post_recv(struct __test_metadata *_metadata, struct ud_end *e,
		      uint64_t wr_id)
{
	memset(e->buf + UD_RECV_OFF, 0xee, UD_GRH + UD_MTU + 64);
	ASSERT_EQ(0, ud_recv(e, wr_id, UD_RECV_OFF, UD_GRH + UD_MTU));
}

/* The sender's completion of @wr_id: success, message length. */
static void expect_sent(struct __test_metadata *_metadata, struct ud_end *e,
			uint64_t wr_id, uint32_t len, bool imm)
{
	struct rc_wc_want w = rc_want_req(wr_id, IBV_WC_SEND, len,
					  &(struct rc_end){ .qp = e->qp });

	if (imm)
		w.wc_flags |= IBV_WC_WITH_IMM;
	rc_expect_wc(_metadata, e->scq, &w);
}

/*
 * The kernel resolved the destination's MAC (the neighbour's, or the
 * local netdev's for an address of this host) and the provider's AV
 * carries it, with the destination GID, the source GID index and the PD.
 */
TEST_F(ud, ah_carries_the_mac_the_kernel_resolved)
{
	for (int i = 0; i < 2; i++) {
		struct softhca_ah *ah = to_sah(self->p.ah[i]);
		struct ud_end *e = &self->p.e[i], *peer = &self->p.e[!i];
		uint8_t mac[6];

		ASSERT_EQ(0, netdev_mac(peer->netdev, mac));
		EXPECT_EQ(0, memcmp(ah->av.wqe.rmac, mac, 6))
			TH_LOG("end %d: AV MAC %02x:%02x:%02x:%02x:%02x:%02x, %s has %02x:%02x:%02x:%02x:%02x:%02x",
			       i, ah->av.wqe.rmac[0], ah->av.wqe.rmac[1],
			       ah->av.wqe.rmac[2], ah->av.wqe.rmac[3],
			       ah->av.wqe.rmac[4], ah->av.wqe.rmac[5],
			       peer->netdev, mac[0], mac[1], mac[2], mac[3],
			       mac[4], mac[5]);
		EXPECT_EQ(0, memcmp(ah->av.wqe.rgid, peer->gid.raw, 16));
		EXPECT_EQ(e->gid_index, (be32toh(ah->av.wqe.grh_gid_fl) >> 20) &
			  0xff);
		EXPECT_EQ(64, ah->av.wqe.hop_limit);
		EXPECT_EQ(to_spd(e->pd)->pdn, ah->av.pdn);
	}
	/* A second handle to the same address, destroyed again. */
	struct ibv_ah *ah = ud_ah(&self->p.e[0], &self->p.e[1].gid, 0, 0);

	ASSERT_NE(NULL, ah) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/*
 * Datagrams of 0 bytes to the path MTU, from SGEs and inline, with and
 * without an immediate, both ways.
 */
TEST_F(ud, send_recv_every_size)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 7, 8, 15, 16, 63, 64,
					  65, 127, 128, 255, 256, 511, 512,
					  1000, 1023, UD_MTU };
	uint32_t n = 0;

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int way = 0; way < 4; way++) {
			int i = way & 1;
			struct ud_end *from = &self->p.e[i], *to = &self->p.e[!i];
			uint32_t len = sizes[s], seed = 1000 + n;
			bool inl = (way & 2) && len <= from->cap.max_inline_data;
			bool imm = (n % 3) == 1;

			rc_fill(from->buf, len, seed);
			post_recv(_metadata, to, 0x100 + n);
			ASSERT_EQ(0, ud_send(from, self->p.ah[i], to->qp->qp_num,
					     UD_QKEY, imm ? IBV_WR_SEND_WITH_IMM :
					     IBV_WR_SEND, 0x200 + n, 0, len,
					     inl ? IBV_SEND_INLINE : 0,
					     0xabc00000 + n));
			expect_sent(_metadata, from, 0x200 + n, len, imm);
			expect_datagram(_metadata, to, from, 0x100 + n, len, seed,
					imm, 0xabc00000 + n, 0, 64);
			n++;
		}
	}
	rc_expect_quiet(_metadata, self->p.e[0].rcq, "end 0 receives");
	rc_expect_quiet(_metadata, self->p.e[1].rcq, "end 1 receives");
}

/* A message's traffic class and hop limit are its IPv4 header's TOS and TTL. */
TEST_F(ud, grh_carries_traffic_class_and_hop_limit)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = to->gid, .sgid_index = from->gid_index,
			 .hop_limit = 7, .traffic_class = 0x48,
			 .flow_label = 0x12345 },
	};
	struct ibv_ah *ah = ibv_create_ah(from->pd, &a);

	ASSERT_NE(NULL, ah);
	EXPECT_EQ(0xe341, be16toh(to_sah(ah)->av.wqe.rlid))
		TH_LOG("UDP source port of flow label 0x12345");
	rc_fill(from->buf, 33, 7);
	post_recv(_metadata, to, 1);
	ASSERT_EQ(0, ud_send(from, ah, to->qp->qp_num, UD_QKEY, IBV_WR_SEND, 2,
			     0, 33, 0, 0));
	expect_sent(_metadata, from, 2, 33, false);
	expect_datagram(_metadata, to, from, 1, 33, 7, false, 0, 0x48, 7);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/* A datagram nobody takes: the sender succeeds, exactly @counter moves. */
static void expect_dropped(struct __test_metadata *_metadata,
			   struct ud_end *from, struct ud_end *to,
			   const char *dev, const char *counter,
			   long long before, uint64_t wr_id, uint32_t len)
{
	expect_sent(_metadata, from, wr_id, len, false);
	rc_expect_quiet(_metadata, to->rcq, counter);
	EXPECT_EQ(before + 1, ud_counter(dev, counter)) TH_LOG("%s on %s", counter, dev);
}

TEST_F(ud, wrong_qkey_is_dropped)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	long long c = ud_counter(to->dev, "rx_qkey_drops");

	ASSERT_LE(0, c);
	post_recv(_metadata, to, 1);
	rc_fill(from->buf, 100, 3);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, 0x22222222,
			     IBV_WR_SEND, 2, 0, 100, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "rx_qkey_drops", c, 2, 100);
	/* The receive is still posted: the right Q_Key lands in it. */
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 3, 0, 100, 0, 0));
	expect_sent(_metadata, from, 3, 100, false);
	expect_datagram(_metadata, to, from, 1, 100, 3, false, 0, 0, 64);
}

/*
 * The answer to a datagram goes through an AH made from its work
 * completion and GRH area, as udaddy and ib_mad's users answer:
 * ibv_create_ah_from_wc() takes the SL from the completion, the packet
 * type 0xa here (as mlx5's), which the AH takes as priority 2 (as mlx5's
 * does), and the addresses from the IPv4 header; libibverbs asks the
 * kernel for the route to them, whose hop limit (IPv4's default TTL, 64)
 * the answer carries.
 */
TEST_F(ud, reply_through_ah_from_wc)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_wc wc;
	struct ibv_ah *ah;

	post_recv(_metadata, to, 1);
	rc_fill(from->buf, 40, 8);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 2, 0, 40, 0, 0));
	expect_sent(_metadata, from, 2, 40, false);
	ASSERT_EQ(1, rc_poll(to->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0xa, wc.sl);
	ah = ibv_create_ah_from_wc(to->pd, &wc,
				   (struct ibv_grh *)(to->buf + UD_RECV_OFF), 1);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah_from_wc: %s", strerror(errno));
	post_recv(_metadata, from, 3);
	rc_fill(to->buf, 24, 9);
	ASSERT_EQ(0, ud_send(to, ah, wc.src_qp, UD_QKEY, IBV_WR_SEND, 4, 0, 24,
			     0, 0));
	expect_sent(_metadata, to, 4, 24, false);
	expect_datagram(_metadata, from, to, 3, 24, 9, false, 0, 0, 64);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
}

TEST_F(ud, nonexistent_or_rc_qpn_is_dropped)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	long long c = ud_counter(to->dev, "rx_no_qp_drops");
	struct ibv_qp_init_attr ia = {
		.send_cq = to->scq, .recv_cq = to->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr at;
	struct ibv_qp *rc;
	int mask;

	ASSERT_LE(0, c);
	post_recv(_metadata, to, 1);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], 0xfffffe, UD_QKEY,
			     IBV_WR_SEND, 2, 0, 10, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "rx_no_qp_drops", c, 2, 10);

	/* An RC QP takes no datagram. */
	rc = ibv_create_qp(to->pd, &ia);
	ASSERT_NE(NULL, rc);
	/* In INIT, which takes receives (a QP in RESET takes no WR). */
	rc_init_attr(&at, &mask, IBV_ACCESS_REMOTE_WRITE);
	ASSERT_EQ(0, ibv_modify_qp(rc, &at, mask));
	ASSERT_EQ(0, rc_post_recv(rc, 9, to->buf, 64, to->mr->lkey));
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], rc->qp_num, UD_QKEY,
			     IBV_WR_SEND, 3, 0, 10, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "rx_no_qp_drops", c + 1, 3,
		       10);
	EXPECT_EQ(0, ibv_destroy_qp(rc));
}

TEST_F(ud, no_receive_posted_is_dropped)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	long long c = ud_counter(to->dev, "out_of_buffer");

	ASSERT_LE(0, c);
	rc_fill(from->buf, 50, 1);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 1, 0, 50, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "out_of_buffer", c, 1, 50);
	/* UD has no RNR: a receive posted now gets only the next one. */
	post_recv(_metadata, to, 7);
	rc_expect_quiet(_metadata, to->rcq, "the dropped datagram");
	rc_fill(from->buf, 60, 2);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 2, 0, 60, 0, 0));
	expect_sent(_metadata, from, 2, 60, false);
	expect_datagram(_metadata, to, from, 7, 60, 2, false, 0, 0, 64);
}

/* A receive shorter than 40 + the message is skipped (IBA class D). */
TEST_F(ud, receive_too_short_is_dropped)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	long long c = ud_counter(to->dev, "rx_len_drops");

	ASSERT_LE(0, c);
	memset(to->buf + UD_RECV_OFF, 0xee, UD_GRH + UD_MTU + 64);
	ASSERT_EQ(0, ud_recv(to, 5, UD_RECV_OFF, UD_GRH + 10));
	rc_fill(from->buf, 11, 4);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 1, 0, 11, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "rx_len_drops", c, 1, 11);
	EXPECT_EQ(0xee, to->buf[UD_RECV_OFF]) TH_LOG("the short buffer was written");
	rc_fill(from->buf, 10, 5);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 2, 0, 10, 0, 0));
	expect_sent(_metadata, from, 2, 10, false);
	expect_datagram(_metadata, to, from, 5, 10, 5, false, 0, 0, 64);
}

/* A WR's Q_Key with bit 31 set is the sending QP's own (IBA 10.2.5). */
TEST_F(ud, high_bit_qkey_is_the_qps_own)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_qp_attr a = { .qkey = 0x33333333 };
	long long c = ud_counter(to->dev, "rx_qkey_drops");

	post_recv(_metadata, to, 1);
	rc_fill(from->buf, 20, 9);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, 0x80000000,
			     IBV_WR_SEND, 2, 0, 20, 0, 0));
	expect_sent(_metadata, from, 2, 20, false);
	expect_datagram(_metadata, to, from, 1, 20, 9, false, 0, 0, 64);

	/* The receiver's Q_Key changes: the sender's own no longer matches... */
	ASSERT_EQ(0, ibv_modify_qp(to->qp, &a, IBV_QP_QKEY));
	post_recv(_metadata, to, 3);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, 0xffffffff,
			     IBV_WR_SEND, 4, 0, 20, 0, 0));
	expect_dropped(_metadata, from, to, to->dev, "rx_qkey_drops", c, 4, 20);
	/* ...until the sender's does. */
	ASSERT_EQ(0, ibv_modify_qp(from->qp, &a, IBV_QP_QKEY));
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, 0x80000000,
			     IBV_WR_SEND, 5, 0, 20, 0, 0));
	expect_sent(_metadata, from, 5, 20, false);
	expect_datagram(_metadata, to, from, 3, 20, 9, false, 0, 0, 64);
}

/* No user QP may own a controlled Q_Key (it could forge MADs to QP1). */
TEST_F(ud, privileged_qkey_is_eperm)
{
	struct ud_end *e = &self->p.e[0];
	struct ibv_qp_attr a = { .qkey = 0x80010000 }, q;
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	EXPECT_EQ(EPERM, ibv_modify_qp(e->qp, &a, IBV_QP_QKEY));
	ASSERT_EQ(0, ibv_query_qp(e->qp, &q, IBV_QP_QKEY | IBV_QP_STATE, &ia));
	EXPECT_EQ(UD_QKEY, q.qkey);
	EXPECT_EQ(IBV_QPS_RTS, q.qp_state);
	a.qkey = 0xffffffff;
	EXPECT_EQ(EPERM, ibv_modify_qp(e->qp, &a, IBV_QP_QKEY));

	/* Not at INIT either. */
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp(e->pd, &ia);
	ASSERT_NE(NULL, qp);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x80010000;
	EXPECT_EQ(EPERM, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY));
	EXPECT_EQ(IBV_QPS_RESET, rc_qp_state(qp));
	a.qkey = 0x7fffffff;
	EXPECT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_QKEY));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(ud, bad_ah_attributes_are_refused)
{
	struct ud_end *e = &self->p.e[0];
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = self->p.e[1].gid, .sgid_index = 100,
			 .hop_limit = 64 },
	};

	/* An empty GID entry; one beyond the table; port 2; no GRH on RoCE. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_ah(e->pd, &a));
	EXPECT_EQ(ENODATA, errno);
	a.grh.sgid_index = 200;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_ah(e->pd, &a));
	EXPECT_EQ(EINVAL, errno);
	a.grh.sgid_index = e->gid_index;
	a.port_num = 2;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_ah(e->pd, &a));
	EXPECT_EQ(EINVAL, errno);
	a.port_num = 1;
	a.is_global = 0;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_ah(e->pd, &a));
	EXPECT_EQ(EINVAL, errno);
}

/* WRs a UD QP refuses at post time: EINVAL, bad_wr, nothing sent. */
TEST_F(ud, bad_wrs_are_refused_at_post)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_pd *pd2 = ibv_alloc_pd(from->ctx);
	struct ibv_sge sge = { .addr = (uintptr_t)from->buf, .length = 8,
			       .lkey = from->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_ah *ah2;

	ASSERT_NE(NULL, pd2);
	ah2 = ud_ah(&(struct ud_end){ .pd = pd2, .gid_index = from->gid_index,
				      .dev = from->dev }, &to->gid, 0, 0);
	ASSERT_NE(NULL, ah2) TH_LOG("%s", rc_err);
	wr.wr.ud.remote_qpn = to->qp->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	post_recv(_metadata, to, 1);

	/* An AH of another PD. */
	wr.wr.ud.ah = ah2;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(from->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* No AH. */
	wr.wr.ud.ah = NULL;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(from->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* RDMA and atomics on UD. */
	wr.wr.ud.ah = self->p.ah[0];
	wr.opcode = IBV_WR_RDMA_WRITE;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(from->qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	wr.opcode = IBV_WR_RDMA_READ;
	EXPECT_EQ(EINVAL, ibv_post_send(from->qp, &wr, &bad));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	EXPECT_EQ(EINVAL, ibv_post_send(from->qp, &wr, &bad));
	rc_expect_quiet(_metadata, from->scq, "refused WRs");
	rc_expect_quiet(_metadata, to->rcq, "refused WRs");

	/* A good one after them goes out. */
	rc_fill(from->buf, 8, 6);
	wr.opcode = IBV_WR_SEND;
	EXPECT_EQ(0, ibv_post_send(from->qp, &wr, &bad));
	expect_sent(_metadata, from, 1, 8, false);
	expect_datagram(_metadata, to, from, 1, 8, 6, false, 0, 0, 64);
	EXPECT_EQ(0, ibv_destroy_ah(ah2));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/*
 * Beyond the path MTU: LOC_LEN_ERR, the QP in SQE (its receive queue goes
 * on), the WRs behind flushed; SQE -> RTS recovers it.
 */
TEST_F(ud, beyond_the_mtu_is_loc_len_err_and_sqe)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)from->buf, .length = UD_MTU + 1,
		  .lkey = from->mr->lkey },
		{ .addr = (uintptr_t)from->buf, .length = 8,
		  .lkey = from->mr->lkey },
	};
	struct ibv_send_wr w2 = { .wr_id = 2, .sg_list = &sge[1], .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr w1 = { .wr_id = 1, .sg_list = &sge[0], .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED, .next = &w2 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };
	struct ibv_send_wr *bad;

	for (struct ibv_send_wr *w = &w1; w; w = w->next) {
		w->wr.ud.ah = self->p.ah[0];
		w->wr.ud.remote_qpn = to->qp->qp_num;
		w->wr.ud.remote_qkey = UD_QKEY;
	}
	post_recv(_metadata, to, 1);
	ASSERT_EQ(0, ibv_post_send(from->qp, &w1, &bad));
	rc_expect_err(_metadata, from->scq, 1, IBV_WC_LOC_LEN_ERR,
		      &(struct rc_end){ .qp = from->qp });
	rc_expect_err(_metadata, from->scq, 2, IBV_WC_WR_FLUSH_ERR,
		      &(struct rc_end){ .qp = from->qp });
	EXPECT_EQ(IBV_QPS_SQE, rc_wait_qp_state(from->qp, IBV_QPS_SQE, 1000));
	rc_expect_quiet(_metadata, to->rcq, "the failed datagrams");

	/* In SQE it still receives. */
	post_recv(_metadata, from, 5);
	rc_fill(to->buf, 12, 8);
	ASSERT_EQ(0, ud_send(to, self->p.ah[1], from->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 6, 0, 12, 0, 0));
	expect_sent(_metadata, to, 6, 12, false);
	expect_datagram(_metadata, from, to, 5, 12, 8, false, 0, 0, 64);

	/* SQE -> RTS, then sends work again. */
	ASSERT_EQ(0, ibv_modify_qp(from->qp, &a, IBV_QP_STATE));
	rc_fill(from->buf, UD_MTU, 9);
	ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num, UD_QKEY,
			     IBV_WR_SEND, 3, 0, UD_MTU, 0, 0));
	expect_sent(_metadata, from, 3, UD_MTU, false);
	expect_datagram(_metadata, to, from, 1, UD_MTU, 9, false, 0, 0, 64);
}

/* The RoCE v2 GID of @e's IPv6 link-local address, or -1. */
static int ll_gid(struct ud_end *e, union ibv_gid *gid)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(e->ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry g;

		if (ibv_query_gid_ex(e->ctx, 1, i, &g, 0) ||
		    g.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    g.gid.raw[0] != 0xfe || (g.gid.raw[1] & 0xc0) != 0x80)
			continue;
		*gid = g.gid;
		return i;
	}
	return -1;
}

/*
 * A datagram of @len bytes over the link-local GIDs with AH attributes @a
 * (the GIDs filled in here), checked through the GRH area, which is its
 * IPv6 header: version, traffic class and flow label (its 20 bits), the
 * payload length of UDP + BTH + DETH + payload + ICRC, next header UDP,
 * hop limit, both addresses. False if an end has no link-local GID.
 */
static bool ipv6_datagram(struct __test_metadata *_metadata,
			  struct ud_end *from, struct ud_end *to,
			  struct ibv_ah_attr *a, uint32_t len, uint32_t seed)
{
	const uint8_t *g = to->buf + UD_RECV_OFF;
	struct rc_wc_want w = ud_want_recv(1, len, to, from);
	union ibv_gid sgid, dgid;
	int si = ll_gid(from, &sgid), di = ll_gid(to, &dgid);
	struct ibv_wc wc;
	struct ibv_ah *ah;

	if (si < 0 || di < 0)
		return false;
	a->grh.sgid_index = si;
	a->grh.dgid = dgid;
	ah = ibv_create_ah(from->pd, a);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah: %s", strerror(errno));
	rc_fill(from->buf, len, seed);
	post_recv(_metadata, to, 1);
	ASSERT_EQ(0, ud_send(from, ah, to->qp->qp_num, UD_QKEY, IBV_WR_SEND, 2,
			     0, len, 0, 0));
	expect_sent(_metadata, from, 2, len, false);
	ASSERT_EQ(1, rc_poll(to->rcq, &wc, 1, RC_WC_MS)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%s", rc_err);
	EXPECT_EQ(0x9, wc.sl);		/* RoCE v2 | IPv6 */
	EXPECT_EQ(-1, rc_check_fill(g + UD_GRH, len, seed));
	EXPECT_EQ(6u << 28 | (uint32_t)a->grh.traffic_class << 20 |
		  (a->grh.flow_label & 0xfffff), be32toh(*(uint32_t *)g));
	EXPECT_EQ(8 + 12 + 8 + ((len + 3) & ~3u) + 4, g[4] << 8 | g[5]);
	EXPECT_EQ(17, g[6]);
	EXPECT_EQ(a->grh.hop_limit, g[7]);
	EXPECT_EQ(0, memcmp(g + 8, sgid.raw, 16));
	EXPECT_EQ(0, memcmp(g + 24, dgid.raw, 16));
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	return true;
}

/* Over IPv6 (the link-local GIDs) the GRH area is the IPv6 header. */
TEST_F(ud, ipv6_grh_is_the_ipv6_header)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .hop_limit = 9, .traffic_class = 0x20,
			 .flow_label = 0xabcde },
	};

	if (!ipv6_datagram(_metadata, &self->p.e[0], &self->p.e[1], &a, 45, 13))
		SKIP(return, "no IPv6 link-local GID on both ends");
}

/*
 * A flow label with bits above its 20 (UCX sets ~0 for its RoCE source
 * port choice, and puts 0xc000 in the DLID) is taken, as ib_core and the
 * hardware drivers take it: the datagram's IPv6 header carries the 20.
 */
TEST_F(ud, ah_flow_label_high_bits_ignored)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1, .dlid = 0xc000,
		.grh = { .hop_limit = 64, .flow_label = 0xffffffff },
	};

	if (!ipv6_datagram(_metadata, &self->p.e[0], &self->p.e[1], &a, 16, 21))
		SKIP(return, "no IPv6 link-local GID on both ends");
}

/* The extended post-send API: ibv_wr_set_ud_addr. */
TEST_F(ud, wr_api_set_ud_addr)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = from->scq, .recv_cq = from->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = from->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	struct ud_end x = *from;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;

	qp = ibv_create_qp_ex(from->ctx, &ia);
	ASSERT_NE(NULL, qp) TH_LOG("create_qp_ex: %s", strerror(errno));
	ASSERT_EQ(0, ud_qp_rts(qp, UD_QKEY)) TH_LOG("%s", rc_err);
	qpx = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(NULL, qpx);
	x.qp = qp;
	rc_fill(from->buf, 100, 11);
	rc_fill(from->buf + 4096, 30, 12);
	post_recv(_metadata, to, 1);

	ibv_wr_start(qpx);
	qpx->wr_id = 10;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_ud_addr(qpx, self->p.ah[0], to->qp->qp_num, UD_QKEY);
	ibv_wr_set_sge(qpx, from->mr->lkey, (uintptr_t)from->buf, 100);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	expect_sent(_metadata, &x, 10, 100, false);
	expect_datagram(_metadata, to, &x, 1, 100, 11, false, 0, 0, 64);

	/* Data first, then the address; inline and an immediate. */
	post_recv(_metadata, to, 2);
	ibv_wr_start(qpx);
	qpx->wr_id = 11;
	ibv_wr_send_imm(qpx, htonl(0x1234));
	ibv_wr_set_inline_data(qpx, from->buf + 4096, 30);
	ibv_wr_set_ud_addr(qpx, self->p.ah[0], to->qp->qp_num, UD_QKEY);
	ASSERT_EQ(0, ibv_wr_complete(qpx));
	expect_sent(_metadata, &x, 11, 30, true);
	expect_datagram(_metadata, to, &x, 2, 30, 12, true, 0x1234, 0, 64);
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	/* A UD QP asked for RDMA through the extended API: refused. */
	ia.send_ops_flags |= IBV_QP_EX_WITH_RDMA_WRITE;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp_ex(from->ctx, &ia));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* The HCA counts datagrams: sent on the sender's device, taken on the receiver's. */
TEST_F(ud, counters_count_datagrams)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	long long tx = ud_counter(from->dev, "tx_requests");
	long long txb = ud_counter(from->dev, "tx_bytes");
	long long rx = ud_counter(to->dev, "rx_requests");
	long long rxb = ud_counter(to->dev, "rx_bytes");

	ASSERT_LE(0, tx);
	ASSERT_LE(0, rx);
	rc_fill(from->buf, 100, 0);
	for (int k = 0; k < 5; k++) {
		post_recv(_metadata, to, k);
		ASSERT_EQ(0, ud_send(from, self->p.ah[0], to->qp->qp_num,
				     UD_QKEY, IBV_WR_SEND, k, 0, 100, 0, 0));
		expect_sent(_metadata, from, k, 100, false);
		expect_datagram(_metadata, to, from, k, 100, 0, false, 0, 0, 64);
	}
	/* On one device both lines are its own: each moves by exactly this. */
	EXPECT_EQ(tx + 5, ud_counter(from->dev, "tx_requests"));
	EXPECT_EQ(txb + 500, ud_counter(from->dev, "tx_bytes"));
	EXPECT_EQ(rx + 5, ud_counter(to->dev, "rx_requests"));
	EXPECT_EQ(rxb + 500, ud_counter(to->dev, "rx_bytes"));
}

/* A UD QP on @e's PD and CQs with room for @n sends and @n receives, RTS. */
static struct ibv_qp *big_ud_qp(struct ud_end *e, uint32_t n)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = n, .max_recv_wr = n,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	if (qp && ud_qp_rts(qp, UD_QKEY)) {
		ibv_destroy_qp(qp);
		qp = NULL;
	}
	return qp;
}

/*
 * A QP destroyed right after its last post (mckey does so): what rang has
 * left, as a NIC sends it long before a DESTROY_QP reaches its firmware.
 * 250 datagrams in one post: one doorbell, more than the engine runs of a
 * QP in one turn, so the rest waits for the engine thread when the destroy
 * comes. Each arrives, in order, whole.
 */
TEST_F(ud, datagrams_rung_before_destroy_arrive)
{
	struct ud_end *from = &self->p.e[0], *to = &self->p.e[1];
	enum { N = 250, LEN = 100, STRIDE = 256 };
	struct ibv_qp *sq = big_ud_qp(from, N), *rq = big_ud_qp(to, N);
	struct ibv_send_wr wr[N], *bad = NULL;
	struct ibv_sge sge[N];
	struct rc_wc_want w;
	struct ibv_wc wc;
	int k;

	ASSERT_NE(NULL, sq);
	ASSERT_NE(NULL, rq);
	w = (struct rc_wc_want){ .status = IBV_WC_SUCCESS,
				 .opcode = IBV_WC_RECV,
				 .byte_len = UD_GRH + LEN, .qp_num = rq->qp_num,
				 .src_qp = sq->qp_num, .wc_flags = IBV_WC_GRH };
	for (k = 0; k < N; k++) {
		uint32_t off = UD_RECV_OFF + k * STRIDE;

		memset(to->buf + off, 0xee, STRIDE);
		ASSERT_EQ(0, rc_post_recv(rq, k, to->buf + off, UD_GRH + LEN,
					  to->mr->lkey));
		rc_fill(from->buf + k * STRIDE, LEN, k);
		sge[k] = (struct ibv_sge){ .addr = (uintptr_t)from->buf +
					   k * STRIDE, .length = LEN,
					   .lkey = from->mr->lkey };
		wr[k] = (struct ibv_send_wr){
			.wr_id = k, .sg_list = &sge[k], .num_sge = 1,
			.opcode = IBV_WR_SEND, .next = k + 1 < N ? &wr[k + 1] : NULL,
		};
		wr[k].wr.ud.ah = self->p.ah[0];
		wr[k].wr.ud.remote_qpn = rq->qp_num;
		wr[k].wr.ud.remote_qkey = UD_QKEY;
	}
	ASSERT_EQ(0, ibv_post_send(sq, wr, &bad));
	ASSERT_EQ(0, ibv_destroy_qp(sq));
	for (k = 0; k < N; k++) {
		uint8_t *buf = to->buf + UD_RECV_OFF + k * STRIDE;

		if (rc_poll(to->rcq, &wc, 1, RC_WC_MS) != 1)
			break;
		w.wr_id = k;
		EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("%d: %s", k, rc_err);
		EXPECT_EQ(-1, rc_check_fill(buf + UD_GRH, LEN, k))
			TH_LOG("datagram %d: payload differs", k);
	}
	EXPECT_EQ(N, k) TH_LOG("%d of %d datagrams arrived", k, N);
	EXPECT_EQ(0, ibv_destroy_qp(rq));
}

/* No GSI QP for user space: ib_mad owns QPN 1 (the provider refuses it). */
TEST_F(ud, gsi_qp_is_refused)
{
	struct ud_end *e = &self->p.e[0];
	struct ibv_qp_init_attr ia = {
		.send_cq = e->scq, .recv_cq = e->rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = (enum ibv_qp_type)1,	/* IB_QPT_GSI */
	};

	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp(e->pd, &ia));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

TEST_HARNESS_MAIN
