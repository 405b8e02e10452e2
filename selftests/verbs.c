// SPDX-License-Identifier: GPL-2.0
/*
 * Control-path verbs through libibverbs and our provider: device list, open,
 * query_device_ex, query_port, GIDs, PDs, cleanup at process exit.
 * Runs in the VM with shca0 on veth0 (198.18.0.1/24).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rdmanl.h"
#include "util.h"
#include "verbs_util.h"

static void mac_to_guid(const char *mac, char *guid, size_t len)
{
	unsigned int m[6];

	sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
	/* EUI-64 from EUI-48: flip the universal/local bit, insert ff:fe. */
	snprintf(guid, len, "%02x%02x:%02xff:fe%02x:%02x%02x", m[0] ^ 2, m[1],
		 m[2], m[3], m[4], m[5]);
}

static void guid_str(__be64 guid, char *buf, size_t len)
{
	uint64_t g = be64toh(guid);

	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48) & 0xffff,
		 (unsigned int)(g >> 32) & 0xffff, (unsigned int)(g >> 16) & 0xffff,
		 (unsigned int)g & 0xffff);
}

TEST(device_list_and_names)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int found = 0;

	ASSERT_NE(NULL, list);
	for (int i = 0; list[i]; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "shca0"))
			continue;
		found++;
		EXPECT_EQ(IBV_NODE_CA, list[i]->node_type);
		EXPECT_EQ(IBV_TRANSPORT_IB, list[i]->transport_type);
	}
	ibv_free_device_list(list);
	EXPECT_EQ(1, found);
}

TEST(query_device_ex_matches_sysfs)
{
	struct ibv_device_attr_ex attr = {};
	struct ibv_context *ctx = open_dev("shca0");
	char buf[64], guid[64], mac[64];

	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_device_ex(ctx, NULL, &attr));

	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/fw_ver", buf, sizeof(buf)));
	EXPECT_STREQ(buf, attr.orig_attr.fw_ver);
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/node_guid", buf, sizeof(buf)));
	guid_str(attr.orig_attr.node_guid, guid, sizeof(guid));
	EXPECT_STREQ(buf, guid);
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/sys_image_guid", buf, sizeof(buf)));
	guid_str(attr.orig_attr.sys_image_guid, guid, sizeof(guid));
	EXPECT_STREQ(buf, guid);
	/* The node GUID is the EUI-64 of the bound netdev's MAC. */
	ASSERT_EQ(0, read_line("/sys/class/net/veth0/address", mac, sizeof(mac)));
	mac_to_guid(mac, buf, sizeof(buf));
	guid_str(attr.orig_attr.node_guid, guid, sizeof(guid));
	EXPECT_STREQ(buf, guid);

	EXPECT_EQ(1, attr.orig_attr.phys_port_cnt);
	EXPECT_EQ(IBV_ATOMIC_HCA, attr.orig_attr.atomic_cap);
	EXPECT_LE(1, attr.orig_attr.max_qp);
	EXPECT_LE(1, attr.orig_attr.max_cq);
	EXPECT_LE(1, attr.orig_attr.max_mr);
	EXPECT_LE(1, attr.orig_attr.max_pd);
	EXPECT_LE(1, attr.orig_attr.max_sge);
	EXPECT_LE(1, attr.orig_attr.max_qp_rd_atom);
	EXPECT_LE(1, attr.orig_attr.max_qp_init_rd_atom);
	/* Basic SRQs (selftests/srq.c checks the values). */
	EXPECT_LE(1, attr.orig_attr.max_srq);
	EXPECT_LE(1, attr.orig_attr.max_srq_wr);
	/* Memory windows share the MKey index with MRs (selftests/mw.c). */
	EXPECT_EQ(attr.orig_attr.max_mr, attr.orig_attr.max_mw);
	EXPECT_NE(0, attr.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	EXPECT_NE(0, attr.orig_attr.device_cap_flags &
		     IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	/* UD: address handles and multicast groups (the values: devinfo.c). */
	EXPECT_LE(1, attr.orig_attr.max_ah);
	EXPECT_LE(1, attr.orig_attr.max_mcast_grp);
	EXPECT_LE(2, attr.orig_attr.max_mcast_qp_attach);
	EXPECT_NE(0, attr.orig_attr.device_cap_flags & IBV_DEVICE_UD_AV_PORT_ENFORCE);
	EXPECT_EQ(1, attr.orig_attr.max_pkeys);
	/* One completion vector per online CPU (the VM has at least one). */
	EXPECT_EQ(sysconf(_SC_NPROCESSORS_ONLN), ctx->num_comp_vectors);
	EXPECT_EQ(0, ibv_close_device(ctx));
}

TEST(query_port_follows_netdev)
{
	struct ibv_port_attr pa;
	struct ibv_context *ctx = open_dev("shca0");
	char buf[64];

	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(5, pa.phys_state); /* LinkUp */
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
	EXPECT_EQ(IBV_MTU_4096, pa.max_mtu);
	EXPECT_EQ(IBV_MTU_1024, pa.active_mtu); /* veth MTU 1500 */
	EXPECT_EQ(1, pa.pkey_tbl_len);
	EXPECT_LE(16, pa.gid_tbl_len);
	EXPECT_NE(0, pa.port_cap_flags & IBV_PORT_CM_SUP);
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/ports/1/state", buf, sizeof(buf)));
	EXPECT_STREQ("4: ACTIVE", buf);
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/ports/1/link_layer", buf, sizeof(buf)));
	EXPECT_STREQ("Ethernet", buf);

	/* A larger netdev MTU raises the active MTU. */
	ASSERT_EQ(0, sh("ip link set veth0 mtu 9000"));
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_MTU_4096, pa.active_mtu);
	ASSERT_EQ(0, sh("ip link set veth0 mtu 1500"));

	/* Administratively down: the port follows. */
	ASSERT_EQ(0, sh("ip link set veth0 down"));
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_DOWN, pa.state);
	EXPECT_EQ(3, pa.phys_state); /* Disabled */
	ASSERT_EQ(0, sh("ip link set veth0 up"));
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(EINVAL, ibv_query_port(ctx, 2, &pa));
	EXPECT_EQ(0, ibv_close_device(ctx));
}

struct gid_wait {
	struct ibv_context *ctx;
	const char *ip;
	int present;
};

static int gid_state_is(void *arg)
{
	struct gid_wait *w = arg;

	return (rc_find_gid(w->ctx, w->ip) >= 0) == w->present;
}

TEST(roce_v2_gids_follow_ip_addresses)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct gid_wait w = { .ip = "198.18.0.11" };
	union ibv_gid gid;
	int idx;

	ASSERT_NE(NULL, ctx);
	w.ctx = ctx;
	idx = rc_find_gid(ctx, "198.18.0.1");
	ASSERT_LE(0, idx);
	ASSERT_EQ(0, ibv_query_gid(ctx, 1, idx, &gid));
	EXPECT_EQ(0xff, gid.raw[11]);
	/* IPv6 link-local GID from the MAC is there too. */
	ASSERT_EQ(0, ibv_query_gid(ctx, 1, 0, &gid));
	EXPECT_EQ(0xfe, gid.raw[0]);
	EXPECT_EQ(0x80, gid.raw[1]);

	ASSERT_EQ(0, sh("ip addr add 198.18.0.11/24 dev veth0"));
	w.present = 1;
	EXPECT_TRUE(wait_until(gid_state_is, &w, 3000));
	ASSERT_EQ(0, sh("ip addr del 198.18.0.11/24 dev veth0"));
	w.present = 0;
	EXPECT_TRUE(wait_until(gid_state_is, &w, 3000));
	EXPECT_EQ(0, ibv_close_device(ctx));
}

TEST(pd_alloc_dealloc_1000)
{
	struct ibv_context *ctx = open_dev("shca0");
	static struct ibv_pd *pds[1000];
	long base;

	ASSERT_NE(NULL, ctx);
	base = res_count("shca0", "pd");
	ASSERT_LE(0, base);
	for (int i = 0; i < 1000; i++) {
		pds[i] = ibv_alloc_pd(ctx);
		ASSERT_NE(NULL, pds[i]) TH_LOG("pd %d: %s", i, strerror(errno));
	}
	EXPECT_EQ(base + 1000, res_count("shca0", "pd"));
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(0, ibv_dealloc_pd(pds[i]));
	EXPECT_EQ(base, res_count("shca0", "pd"));
	EXPECT_EQ(0, ibv_close_device(ctx));
}

TEST(unsupported_verbs_say_so)
{
	struct ibv_context *ctx = open_dev("shca0");
	struct ibv_pd *pd;

	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	/* An XRC SRQ without its domain and CQ: a clear error, not a crash. */
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .pd = pd,
	};
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq_ex(ctx, &sa));
	EXPECT_NE(0, errno);
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
}

TEST(mmap_of_unknown_offset_fails)
{
	struct ibv_context *ctx = open_dev("shca0");
	void *p;

	ASSERT_NE(NULL, ctx);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 4096L * 777777);
	EXPECT_EQ(MAP_FAILED, p);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	EXPECT_EQ(0, ibv_close_device(ctx));
}

/* Child: open shca0, allocate PDs, tell the parent, then exit or wait. */
static void child_hold(int wfd, int npd, int exit_now)
{
	struct ibv_context *ctx = open_dev("shca0");

	if (!ctx)
		_exit(2);
	for (int i = 0; i < npd; i++)
		if (!ibv_alloc_pd(ctx))
			_exit(3);
	if (write(wfd, "x", 1) != 1)
		_exit(4);
	if (exit_now)
		_exit(0);
	for (;;)
		pause();
}

static void hold_and_end(struct __test_metadata *_metadata, int killit)
{
	long pd0 = res_count("shca0", "pd"), ctx0 = res_count("shca0", "ctx");
	int fds[2], st;
	char c;
	pid_t pid;

	ASSERT_LE(0, pd0);
	ASSERT_LE(0, ctx0);
	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		child_hold(fds[1], 50, !killit);
	ASSERT_EQ(1, read(fds[0], &c, 1));
	if (killit) {
		EXPECT_EQ(pd0 + 50, res_count("shca0", "pd"));
		EXPECT_EQ(ctx0 + 1, res_count("shca0", "ctx"));
		kill(pid, SIGKILL);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	close(fds[0]);
	close(fds[1]);
	/* The file release tears everything down synchronously. */
	EXPECT_EQ(pd0, res_count("shca0", "pd"));
	EXPECT_EQ(ctx0, res_count("shca0", "ctx"));
}

TEST(exit_with_objects_open_cleans_up)
{
	hold_and_end(_metadata, 0);
}

TEST(kill9_with_objects_open_cleans_up)
{
	hold_and_end(_metadata, 1);
}

TEST(provider_matches_after_rename)
{
	struct ibv_context *ctx;
	struct ibv_port_attr pa;

	ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"));
	ASSERT_EQ(0, rdmanl_dev_rename("shca1", "foo"));
	ctx = open_dev("foo");
	ASSERT_NE(NULL, ctx) TH_LOG("open foo: %s", strerror(errno));
	EXPECT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(0, ibv_close_device(ctx));
	EXPECT_EQ(0, rdmanl_link_del("foo"));
}

TEST_HARNESS_MAIN
