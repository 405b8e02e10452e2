// SPDX-License-Identifier: GPL-2.0
/*
 * softhca link management over RDMA netlink: `rdma link add/del`, bad input,
 * netdev removal, renaming. Runs in the VM with shca0 already on veth0 and
 * veth1 free; every test leaves that state behind.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rdmanl.h"
#include "util.h"

static int dev_gone(void *name)
{
	return rdmanl_dev_index(name) == -ENODEV;
}

TEST(baseline_shca0_present)
{
	ASSERT_LE(0, rdmanl_dev_index("shca0"));
	ASSERT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
}

TEST(add_unknown_netdev)
{
	EXPECT_EQ(-ENODEV, rdmanl_link_add("shca1", "softhca", "nosuch0"));
	EXPECT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
}

TEST(add_same_netdev_twice)
{
	EXPECT_EQ(-EEXIST, rdmanl_link_add("shca1", "softhca", "veth0"));
	EXPECT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
}

TEST(add_duplicate_name)
{
	int idx = rdmanl_dev_index("shca0");

	EXPECT_EQ(-EEXIST, rdmanl_link_add("shca0", "softhca", "veth1"));
	/* shca0 is untouched and veth1 is still free for a new device. */
	EXPECT_EQ(idx, rdmanl_dev_index("shca0"));
	ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"));
	EXPECT_EQ(0, rdmanl_link_del("shca1"));
}

TEST(add_non_ethernet_netdev)
{
	EXPECT_EQ(-EINVAL, rdmanl_link_add("shca1", "softhca", "lo"));
	EXPECT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
}

TEST(del_unknown_device)
{
	EXPECT_EQ(-ENODEV, rdmanl_link_del("shca7"));
}

TEST(add_del_100_times)
{
	char path[128], buf[64];

	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"))
			TH_LOG("iteration %d", i);
		ASSERT_LE(0, rdmanl_dev_index("shca1"));
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/shca1/ports/1/state");
		ASSERT_EQ(0, read_line(path, buf, sizeof(buf)));
		ASSERT_EQ(0, rdmanl_link_del("shca1")) TH_LOG("iteration %d", i);
		ASSERT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
	}
}

TEST(netdev_removal_removes_device)
{
	ASSERT_EQ(0, sh("ip link add vtmp0 type veth peer name vtmp1 && ip link set vtmp0 up && ip link set vtmp1 up"));
	ASSERT_EQ(0, rdmanl_link_add("shca2", "softhca", "vtmp0"));
	ASSERT_LE(0, rdmanl_dev_index("shca2"));
	ASSERT_EQ(0, sh("ip link del vtmp0"));
	/* The device goes away asynchronously (queued unregistration). */
	EXPECT_TRUE(wait_until(dev_gone, "shca2", 5000));
	EXPECT_EQ(-ENODEV, rdmanl_link_del("shca2"));
}

TEST(rename_keeps_parent_modalias)
{
	char buf[64];

	ASSERT_EQ(0, rdmanl_link_add("shca1", "softhca", "veth1"));
	ASSERT_EQ(0, rdmanl_dev_rename("shca1", "foo"));
	EXPECT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
	ASSERT_EQ(0, read_line("/sys/class/infiniband/foo/device/modalias",
			       buf, sizeof(buf)));
	EXPECT_STREQ("platform:softhca", buf);
	ASSERT_EQ(0, read_line("/sys/class/infiniband/foo/node_type", buf,
			       sizeof(buf)));
	EXPECT_STREQ("1: CA", buf);
	EXPECT_EQ(0, rdmanl_link_del("foo"));
}

TEST(rdma_tool_add_del)
{
	/* iproute2's rdma tool is the interface users know. */
	ASSERT_EQ(0, sh("rdma link add shca1 type softhca netdev veth1"));
	EXPECT_EQ(0, sh("rdma link show shca1/1 | grep -q 'state ACTIVE.*netdev veth1'"));
	EXPECT_NE(0, sh("rdma link add shca3 type softhca netdev veth1 2>/dev/null"));
	EXPECT_EQ(0, sh("rdma link del shca1"));
	EXPECT_EQ(-ENODEV, rdmanl_dev_index("shca1"));
}

TEST_HARNESS_MAIN
