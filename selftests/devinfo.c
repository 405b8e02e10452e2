// SPDX-License-Identifier: GPL-2.0
/*
 * `ibv_devinfo -v` (the stock tool, through libibverbs and our provider)
 * checked field by field against what the driver reports on its own paths:
 * sysfs, RDMA netlink (`rdma`), the netdev, and the driver's debugfs caps file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "util.h"
#include "verbs_util.h"

#define MAX_FIELDS 256

struct devinfo {
	int n;
	char key[MAX_FIELDS][48];
	char val[MAX_FIELDS][160];
};

/* Parse "key: value" lines of ibv_devinfo -v (device and port 1 level). */
static int devinfo_load(struct devinfo *d, const char *dev)
{
	char cmd[128], line[512];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ibv_devinfo -v -d %s 2>&1", dev);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	d->n = 0;
	while (fgets(line, sizeof(line), f) && d->n < MAX_FIELDS) {
		char *k = line, *colon = strchr(line, ':'), *v;

		if (!colon)
			continue;
		*colon = 0;
		while (*k == '\t' || *k == ' ')
			k++;
		v = colon + 1;
		while (*v == '\t' || *v == ' ')
			v++;
		v[strcspn(v, "\n")] = 0;
		snprintf(d->key[d->n], sizeof(d->key[0]), "%.47s", k);
		snprintf(d->val[d->n], sizeof(d->val[0]), "%.159s", v);
		d->n++;
	}
	return pclose(f) == 0 ? 0 : -EIO;
}

static const char *field(const struct devinfo *d, const char *key)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->key[i], key))
			return d->val[i];
	return NULL;
}

static unsigned long long num(const char *s)
{
	return s ? strtoull(s, NULL, 0) : ~0ULL;
}

/* Value of @key in the driver's debugfs caps file, or ~0 when absent. */
static unsigned long long dbg_cap(const char *dev, const char *key)
{
	char path[128], k[64];
	unsigned long long v, found = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/softhca/%s/caps", dev);
	f = fopen(path, "r");
	if (!f)
		return ~0ULL;
	while (fscanf(f, "%63s %lli", k, &v) == 2)
		if (!strcmp(k, key))
			found = v;
	fclose(f);
	return found;
}

TEST(identity_fields_match_sysfs)
{
	static struct devinfo d;
	char buf[128];

	ASSERT_EQ(0, devinfo_load(&d, "shca0"));
	ASSERT_NE(NULL, field(&d, "hca_id"));
	EXPECT_STREQ("shca0", field(&d, "hca_id"));
	EXPECT_STREQ("InfiniBand (0)", field(&d, "transport"));
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/fw_ver", buf, sizeof(buf)));
	EXPECT_STREQ(buf, field(&d, "fw_ver"));
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/node_guid", buf, sizeof(buf)));
	EXPECT_STREQ(buf, field(&d, "node_guid"));
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/sys_image_guid", buf, sizeof(buf)));
	EXPECT_STREQ(buf, field(&d, "sys_image_guid"));
	EXPECT_EQ(dbg_cap("shca0", "hw_ver"), num(field(&d, "hw_ver")));
	EXPECT_EQ(1, num(field(&d, "phys_port_cnt")));
}

/* Every device limit ibv_devinfo prints equals the HCA's QUERY_CAPS answer. */
TEST(device_limits_match_driver_caps)
{
	static const char *const keys[] = {
		"vendor_id", "vendor_part_id", "max_mr_size", "page_size_cap",
		"max_qp", "max_qp_wr", "device_cap_flags", "max_sge", "max_sge_rd",
		"max_cq", "max_cqe", "max_mr", "max_pd", "max_qp_rd_atom",
		"max_ee_rd_atom", "max_res_rd_atom", "max_qp_init_rd_atom",
		"max_ee_init_rd_atom", "max_ee", "max_rdd", "max_mw",
		"max_raw_ipv6_qp", "max_raw_ethy_qp", "max_mcast_grp",
		"max_mcast_qp_attach", "max_total_mcast_qp_attach", "max_ah",
		"max_fmr", "max_srq", "max_srq_wr", "max_srq_sge", "max_pkeys",
		"local_ca_ack_delay",
	};
	static struct devinfo d;
	int checked = 0;

	ASSERT_EQ(0, devinfo_load(&d, "shca0"));
	ASSERT_EQ(0, access("/sys/kernel/debug/softhca/shca0/caps", R_OK))
		TH_LOG("the driver's debugfs caps file is missing");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = field(&d, keys[i]);
		unsigned long long want = dbg_cap("shca0", keys[i]);

		if (!v && want == ~0ULL)
			continue; /* neither side knows this field */
		if (!v && !strncmp(keys[i], "max_srq_", 8)) {
			/* ibv_devinfo omits the SRQ limits when max_srq is 0. */
			EXPECT_EQ(0, dbg_cap("shca0", "max_srq"));
			EXPECT_EQ(0, want) TH_LOG("%s without SRQs", keys[i]);
			continue;
		}
		ASSERT_NE(NULL, v) TH_LOG("ibv_devinfo lacks %s", keys[i]);
		EXPECT_NE(~0ULL, want) TH_LOG("driver caps lack %s", keys[i]);
		EXPECT_EQ(want, num(v)) TH_LOG("%s: devinfo %s, driver %llu",
						keys[i], v, want);
		checked++;
	}
	EXPECT_LE(25, checked);
	EXPECT_STREQ("ATOMIC_HCA (1)", field(&d, "atomic_cap"));
}

TEST(port_fields_match_netdev_and_sysfs)
{
	static struct devinfo d;
	char buf[128], want[160];

	ASSERT_EQ(0, devinfo_load(&d, "shca0"));
	EXPECT_STREQ("PORT_ACTIVE (4)", field(&d, "state"));
	EXPECT_STREQ("4096 (5)", field(&d, "max_mtu"));
	EXPECT_STREQ("1024 (3)", field(&d, "active_mtu"));
	EXPECT_STREQ("Ethernet", field(&d, "link_layer"));
	EXPECT_STREQ("LINK_UP (5)", field(&d, "phys_state"));
	/* Each GID line is "<gid>, <type>" with the GID in compressed form. */
	for (int i = 0; i < 2; i++) {
		char key[16], path[96], type[32], txt[INET6_ADDRSTRLEN];
		struct in6_addr a;

		snprintf(key, sizeof(key), "GID[%3d]", i);
		ASSERT_NE(NULL, field(&d, key)) TH_LOG("no %s", key);
		snprintf(path, sizeof(path), "/sys/class/infiniband/shca0/ports/1/gids/%d", i);
		ASSERT_EQ(0, read_line(path, buf, sizeof(buf)));
		ASSERT_EQ(1, inet_pton(AF_INET6, buf, &a));
		ASSERT_NE(NULL, inet_ntop(AF_INET6, &a, txt, sizeof(txt)));
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/shca0/ports/1/gid_attrs/types/%d", i);
		ASSERT_EQ(0, read_line(path, type, sizeof(type)));
		snprintf(want, sizeof(want), "%s, %s", txt, type);
		EXPECT_STREQ(want, field(&d, key));
	}
	EXPECT_EQ(0, strncmp("fe80::", field(&d, "GID[  0]"), 6));
	EXPECT_STREQ("::ffff:198.18.0.1, RoCE v2", field(&d, "GID[  1]"));
	ASSERT_EQ(0, read_line("/sys/class/infiniband/shca0/ports/1/pkeys/0", buf, sizeof(buf)));
	EXPECT_STREQ("0xffff", buf);
}

TEST(rdma_tool_reports_same_identity)
{
	static struct devinfo d;
	char cmd[256];

	ASSERT_EQ(0, devinfo_load(&d, "shca0"));
	snprintf(cmd, sizeof(cmd),
		 "rdma dev show shca0 | grep -q 'node_guid %s sys_image_guid %s'",
		 field(&d, "node_guid"), field(&d, "sys_image_guid"));
	EXPECT_EQ(0, sh("%s", cmd));
	snprintf(cmd, sizeof(cmd), "rdma dev show shca0 | grep -q 'fw %s'",
		 field(&d, "fw_ver"));
	EXPECT_EQ(0, sh("%s", cmd));
	EXPECT_EQ(0, sh("rdma link show shca0/1 | grep -q 'state ACTIVE physical_state LINK_UP netdev veth0'"));
}

TEST_HARNESS_MAIN
