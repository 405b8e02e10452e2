// SPDX-License-Identifier: GPL-2.0
/* RDMA netlink (NLDEV) requests with libmnl: link add/del, rename, resources. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "rdmanl.h"

struct rdmanl_req {
	struct mnl_socket *nl;
	char buf[32768];	/* >= MNL_SOCKET_BUFFER_SIZE on any page size */
	struct nlmsghdr *nlh;
	unsigned int seq;
};

static int rdmanl_open(struct rdmanl_req *r, int cmd, int flags)
{
	r->nl = mnl_socket_open(NETLINK_RDMA);
	if (!r->nl)
		return -errno;
	if (mnl_socket_bind(r->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(r->nl);
		return err;
	}
	r->seq = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	r->nlh = mnl_nlmsg_put_header(r->buf);
	r->nlh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	r->nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	r->nlh->nlmsg_seq = r->seq;
	return 0;
}

/* Send the request, feed every answer to cb, return 0 or -errno. */
static int rdmanl_talk(struct rdmanl_req *r, mnl_cb_t cb, void *data)
{
	unsigned int portid = mnl_socket_get_portid(r->nl);
	int ret;

	if (mnl_socket_sendto(r->nl, r->nlh, r->nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(r->nl, r->buf, sizeof(r->buf));

		if (n < 0) {
			ret = -errno;
			break;
		}
		ret = mnl_cb_run(r->buf, (size_t)n, r->seq, portid, cb, data);
		if (ret < 0) {
			ret = -errno;
			break;
		}
		if (ret == MNL_CB_STOP) {
			ret = 0;
			break;
		}
	}
out:
	mnl_socket_close(r->nl);
	return ret;
}

int rdmanl_link_add(const char *name, const char *type, const char *netdev)
{
	struct rdmanl_req r;
	int ret = rdmanl_open(&r, RDMA_NLDEV_CMD_NEWLINK, 0);

	if (ret)
		return ret;
	mnl_attr_put_strz(r.nlh, RDMA_NLDEV_ATTR_DEV_NAME, name);
	mnl_attr_put_strz(r.nlh, RDMA_NLDEV_ATTR_LINK_TYPE, type);
	mnl_attr_put_strz(r.nlh, RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
	return rdmanl_talk(&r, NULL, NULL);
}

struct dev_lookup {
	const char *name;
	int index;
};

static int dev_attr_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(attr);

	if (type >= 0 && type < RDMA_NLDEV_ATTR_MAX)
		tb[type] = attr;
	return MNL_CB_OK;
}

static int dev_lookup_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct dev_lookup *l = data;

	mnl_attr_parse(nlh, 0, dev_attr_cb, tb);
	if (tb[RDMA_NLDEV_ATTR_DEV_NAME] && tb[RDMA_NLDEV_ATTR_DEV_INDEX] &&
	    !strcmp(mnl_attr_get_str(tb[RDMA_NLDEV_ATTR_DEV_NAME]), l->name))
		l->index = (int)mnl_attr_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	return MNL_CB_OK;
}

int rdmanl_dev_index(const char *name)
{
	struct dev_lookup l = { .name = name, .index = -ENODEV };
	struct rdmanl_req r;
	int ret = rdmanl_open(&r, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);

	if (ret)
		return ret;
	ret = rdmanl_talk(&r, dev_lookup_cb, &l);
	return ret ? ret : l.index;
}

int rdmanl_link_del(const char *name)
{
	struct rdmanl_req r;
	int idx = rdmanl_dev_index(name);
	int ret;

	if (idx < 0)
		return idx;
	ret = rdmanl_open(&r, RDMA_NLDEV_CMD_DELLINK, 0);
	if (ret)
		return ret;
	mnl_attr_put_u32(r.nlh, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)idx);
	return rdmanl_talk(&r, NULL, NULL);
}

int rdmanl_dev_rename(const char *name, const char *new_name)
{
	struct rdmanl_req r;
	int idx = rdmanl_dev_index(name);
	int ret;

	if (idx < 0)
		return idx;
	ret = rdmanl_open(&r, RDMA_NLDEV_CMD_SET, 0);
	if (ret)
		return ret;
	mnl_attr_put_u32(r.nlh, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)idx);
	mnl_attr_put_strz(r.nlh, RDMA_NLDEV_ATTR_DEV_NAME, new_name);
	return rdmanl_talk(&r, NULL, NULL);
}

struct res_lookup {
	const char *res;
	uint64_t count;
	int found;
};

static int res_entry_cb(const struct nlattr *attr, void *data)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};
	struct res_lookup *l = data;

	if (mnl_attr_get_type(attr) != RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY)
		return MNL_CB_OK;
	mnl_attr_parse_nested(attr, dev_attr_cb, tb);
	if (tb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME] &&
	    tb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR] &&
	    !strcmp(mnl_attr_get_str(tb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME]),
		    l->res)) {
		l->count = mnl_attr_get_u64(tb[RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR]);
		l->found = 1;
	}
	return MNL_CB_OK;
}

static int res_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = {};

	mnl_attr_parse(nlh, 0, dev_attr_cb, tb);
	if (tb[RDMA_NLDEV_ATTR_RES_SUMMARY])
		mnl_attr_parse_nested(tb[RDMA_NLDEV_ATTR_RES_SUMMARY],
				      res_entry_cb, data);
	return MNL_CB_OK;
}

int rdmanl_res_count(const char *dev, const char *res, uint64_t *count)
{
	struct res_lookup l = { .res = res };
	struct rdmanl_req r;
	int idx = rdmanl_dev_index(dev);
	int ret;

	if (idx < 0)
		return idx;
	ret = rdmanl_open(&r, RDMA_NLDEV_CMD_RES_GET, 0);
	if (ret)
		return ret;
	mnl_attr_put_u32(r.nlh, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)idx);
	ret = rdmanl_talk(&r, res_cb, &l);
	if (ret)
		return ret;
	if (!l.found)
		return -ENOENT;
	*count = l.count;
	return 0;
}
