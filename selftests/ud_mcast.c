// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast on the local fabric (Documentation/testing.md "ud_mcast"):
 * UD QPs on shca0 and shca1 attached to the group ::ffff:239.1.2.3 with
 * ibv_attach_mcast; a datagram to the group (remote QPN 0xffffff) reaches
 * every attached QP on both devices, each receive checked field by field,
 * byte by byte and by its GRH area (destination: the group); the sender's
 * own QP gets a copy only when it is attached itself (no loopback
 * blocking unless asked for); a detached or destroyed QP gets none; the
 * group's AH carries the IP multicast MAC; attaching what is not a
 * datagram QP or not a multicast GID is refused; an attached QP cannot be
 * destroyed (EBUSY, ib_uverbs' rule) but one whose process is killed is
 * detached and gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "softhca.h"		/* white box: the AV an AH keeps */
#include "ud.h"
#include "util.h"
#include "verbs_util.h"

RC_SHCA1_GUARD()

#define NEND	4		/* the sender and three receivers */

FIXTURE(mcast) {
	int shca1_added;
	struct ud_end e[NEND];		/* 0: sender (shca0), 1: shca0, 2, 3: shca1 */
	union ibv_gid mgid;
	struct ibv_ah *ah;		/* the sender's, to the group */
	long qps0, qps1;
};

FIXTURE_SETUP(mcast)
{
	static const char *const devs[NEND] = { "shca0", "shca0", "shca1", "shca1" };
	int ret = rc_shca1_add();

	ASSERT_LE(0, ret) TH_LOG("%s", rc_err);
	self->shca1_added = ret;
	self->qps0 = res_count("shca0", "qp");
	self->qps1 = res_count("shca1", "qp");
	for (int i = 0; i < NEND; i++) {
		ASSERT_EQ(0, ud_end_open(&self->e[i], devs[i], NULL, UD_QKEY))
			TH_LOG("end %d: %s", i, rc_err);
	}
	memset(&self->mgid, 0, sizeof(self->mgid));
	self->mgid.raw[10] = 0xff;
	self->mgid.raw[11] = 0xff;
	ASSERT_EQ(1, inet_pton(AF_INET, "239.1.2.3", &self->mgid.raw[12]));
	self->ah = ud_ah(&self->e[0], &self->mgid, 0, 0);
	ASSERT_NE(NULL, self->ah) TH_LOG("%s", rc_err);
}

FIXTURE_TEARDOWN(mcast)
{
	if (self->ah)
		ibv_destroy_ah(self->ah);
	for (int i = NEND - 1; i >= 0; i--)
		ud_end_close(&self->e[i]);
	if (self->shca1_added)
		rc_shca1_del();
}

static void post_recv(struct __test_metadata *_metadata, struct ud_end *e,
		      uint64_t wr_id)
{
	memset(e->buf + UD_RECV_OFF, 0xee, UD_GRH + UD_MTU + 64);
	ASSERT_EQ(0, ud_recv(e, wr_id, UD_RECV_OFF, UD_GRH + UD_MTU));
}

/* One datagram of @len bytes from end 0 to the group; its completion. */
static void send_to_group(struct __test_metadata *_metadata,
			  FIXTURE_DATA(mcast) *self, uint64_t wr_id,
			  uint32_t len, uint32_t seed)
{
	struct rc_wc_want w = rc_want_req(wr_id, IBV_WC_SEND, len,
					  &(struct rc_end){ .qp = self->e[0].qp });

	rc_fill(self->e[0].buf, len, seed);
	ASSERT_EQ(0, ud_send(&self->e[0], self->ah, 0xffffff, UD_QKEY,
			     IBV_WR_SEND, wr_id, 0, len, 0, 0));
	rc_expect_wc(_metadata, self->e[0].scq, &w);
}

/* End @i got the datagram: exact fields, the bytes, the group as destination. */
static void expect_copy(struct __test_metadata *_metadata,
			FIXTURE_DATA(mcast) *self, int i, uint64_t wr_id,
			uint32_t len, uint32_t seed)
{
	struct ud_end *e = &self->e[i];
	struct rc_wc_want w = ud_want_recv(wr_id, len, e, &self->e[0]);
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(e->rcq, &wc, 1, RC_WC_MS))
		TH_LOG("end %d (%s): %s", i, e->dev, rc_err);
	EXPECT_EQ(0, rc_wc_check(&wc, &w)) TH_LOG("end %d: %s", i, rc_err);
	EXPECT_EQ(-1, rc_check_fill(e->buf + UD_RECV_OFF + UD_GRH, len, seed))
		TH_LOG("end %d: payload differs", i);
	EXPECT_EQ(0, ud_grh_check(e->buf + UD_RECV_OFF, &self->e[0].gid,
				  &self->mgid, len, false, 0, 64))
		TH_LOG("end %d: %s", i, rc_err);
}

static void attach(struct __test_metadata *_metadata, FIXTURE_DATA(mcast) *self,
		   int i)
{
	ASSERT_EQ(0, ibv_attach_mcast(self->e[i].qp, &self->mgid, 0))
		TH_LOG("attach end %d", i);
}

/* The group's AH: its GID, and the IPv4 multicast MAC 01:00:5e + 23 bits. */
TEST_F(mcast, group_ah_carries_the_multicast_mac)
{
	static const uint8_t mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	struct softhca_ah *ah = to_sah(self->ah);

	EXPECT_EQ(0, memcmp(ah->av.wqe.rmac, mac, 6));
	EXPECT_EQ(0, memcmp(ah->av.wqe.rgid, self->mgid.raw, 16));
}

TEST_F(mcast, two_receivers_on_two_devices)
{
	attach(_metadata, self, 1);
	attach(_metadata, self, 2);
	for (int k = 0; k < 3; k++) {
		uint32_t len = k == 0 ? 0 : k == 1 ? 77 : UD_MTU;

		post_recv(_metadata, &self->e[1], 10 + k);
		post_recv(_metadata, &self->e[2], 20 + k);
		post_recv(_metadata, &self->e[3], 30 + k);
		post_recv(_metadata, &self->e[0], 40 + k);
		send_to_group(_metadata, self, k, len, 100 + k);
		expect_copy(_metadata, self, 1, 10 + k, len, 100 + k);
		expect_copy(_metadata, self, 2, 20 + k, len, 100 + k);
		/* Not attached: neither the other QP nor the sender. */
		rc_expect_quiet(_metadata, self->e[3].rcq, "end 3, not attached");
		rc_expect_quiet(_metadata, self->e[0].rcq, "the sender, not attached");
	}
}

/* Three receivers, and the sender attached too: it gets its own copy. */
TEST_F(mcast, three_receivers_and_the_senders_own_copy)
{
	for (int i = 0; i < NEND; i++) {
		attach(_metadata, self, i);
		post_recv(_metadata, &self->e[i], 50 + i);
	}
	send_to_group(_metadata, self, 1, 500, 7);
	for (int i = 0; i < NEND; i++)
		expect_copy(_metadata, self, i, 50 + i, 500, 7);
	for (int i = 0; i < NEND; i++) {
		rc_expect_quiet(_metadata, self->e[i].rcq, "a second copy");
	}
}

/*
 * A process that attached a QP to the group and is killed: ib_uverbs
 * detaches it and destroys it, the group goes on without it. @wfd gets
 * a byte once the QP is attached; the child then waits to be killed.
 */
static void attached_child(const union ibv_gid *mgid, int wfd)
{
	struct ud_end e;

	if (ud_end_open(&e, "shca1", NULL, UD_QKEY) ||
	    ibv_attach_mcast(e.qp, mgid, 0) ||
	    ud_recv(&e, 1, UD_RECV_OFF, UD_GRH + UD_MTU))
		_exit(1);
	if (write(wfd, "a", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

TEST_F(mcast, detached_and_destroyed_qps_get_nothing)
{
	union ibv_gid uni = self->e[1].gid;
	struct ibv_qp_init_attr ia = {
		.send_cq = self->e[1].scq, .recv_cq = self->e[1].rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *rc;
	int pfd[2], st;
	pid_t child;
	char c;
	long qps;

	attach(_metadata, self, 1);
	attach(_metadata, self, 2);
	attach(_metadata, self, 3);
	ASSERT_EQ(0, ibv_detach_mcast(self->e[2].qp, &self->mgid, 0));
	/* ib_uverbs refuses to destroy an attached QP; it stays a member. */
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->e[3].qp));
	post_recv(_metadata, &self->e[1], 1);
	post_recv(_metadata, &self->e[2], 2);
	post_recv(_metadata, &self->e[3], 3);
	send_to_group(_metadata, self, 9, 64, 3);
	expect_copy(_metadata, self, 1, 1, 64, 3);
	expect_copy(_metadata, self, 3, 3, 64, 3);
	rc_expect_quiet(_metadata, self->e[2].rcq, "a detached QP");
	/* Detached, it goes. */
	ASSERT_EQ(0, ibv_detach_mcast(self->e[3].qp, &self->mgid, 0));
	ASSERT_EQ(0, ibv_destroy_qp(self->e[3].qp));
	self->e[3].qp = NULL;
	qps = res_count("shca1", "qp");
	EXPECT_EQ(self->qps1 + 1, qps) TH_LOG("QPs on shca1 (end 2 only)");

	/* A member killed with its process: gone, the others still served. */
	ASSERT_EQ(0, pipe(pfd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(pfd[0]);
		attached_child(&self->mgid, pfd[1]);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1)) TH_LOG("the child did not attach");
	close(pfd[0]);
	EXPECT_EQ(self->qps1 + 2, res_count("shca1", "qp"));
	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	EXPECT_EQ(self->qps1 + 1, res_count("shca1", "qp"))
		TH_LOG("the killed process's QP is left");
	post_recv(_metadata, &self->e[1], 4);
	send_to_group(_metadata, self, 11, 66, 5);
	expect_copy(_metadata, self, 1, 4, 66, 5);
	rc_expect_quiet(_metadata, self->e[2].rcq, "a detached QP");

	/* Detached twice; not a multicast GID; an RC QP. */
	EXPECT_EQ(EINVAL, ibv_detach_mcast(self->e[2].qp, &self->mgid, 0));
	EXPECT_EQ(EINVAL, ibv_attach_mcast(self->e[2].qp, &uni, 0));
	rc = ibv_create_qp(self->e[1].pd, &ia);
	ASSERT_NE(NULL, rc);
	EXPECT_EQ(EINVAL, ibv_attach_mcast(rc, &self->mgid, 0));
	EXPECT_EQ(0, ibv_destroy_qp(rc));
	/* Attached again, it receives again. */
	attach(_metadata, self, 2);
	post_recv(_metadata, &self->e[1], 3);
	send_to_group(_metadata, self, 10, 65, 4);
	expect_copy(_metadata, self, 1, 3, 65, 4);
	expect_copy(_metadata, self, 2, 2, 65, 4);
}

/* A member with another Q_Key drops its copy; the others get theirs. */
TEST_F(mcast, a_member_with_another_qkey_drops_its_copy)
{
	struct ibv_qp_attr a = { .qkey = 0x44444444 };
	long long c = ud_counter("shca1", "rx_qkey_drops");

	attach(_metadata, self, 1);
	attach(_metadata, self, 2);
	ASSERT_EQ(0, ibv_modify_qp(self->e[2].qp, &a, IBV_QP_QKEY));
	post_recv(_metadata, &self->e[1], 1);
	post_recv(_metadata, &self->e[2], 2);
	send_to_group(_metadata, self, 5, 128, 5);
	expect_copy(_metadata, self, 1, 1, 128, 5);
	rc_expect_quiet(_metadata, self->e[2].rcq, "another Q_Key");
	EXPECT_EQ(c + 1, ud_counter("shca1", "rx_qkey_drops"));
}

TEST_HARNESS_MAIN
