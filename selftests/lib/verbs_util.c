// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/softhca-abi.h>

#include "rdmanl.h"
#include "verbs_util.h"

struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	errno = ENODEV;
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	ibv_free_device_list(list);
	return ctx;
}

long res_count(const char *dev, const char *res)
{
	uint64_t n;

	if (rdmanl_res_count(dev, res, &n))
		return -1;
	return (long)n;
}

int next_async_event(struct ibv_context *ctx, int ms,
		     struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return -1;
	if (ibv_get_async_event(ctx, ev))
		return -1;
	ibv_ack_async_event(ev);
	return ev->event_type;
}

int engine_wake_method(struct ibv_context *ctx)
{
	struct ib_uverbs_ioctl_hdr hdr;

	memset(&hdr, 0, sizeof(hdr));
	hdr.length = sizeof(hdr);
	hdr.object_id = UVERBS_OBJECT_DEVICE;
	hdr.method_id = SOFTHCA_METHOD_ENGINE_WAKE;
	hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	return ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &hdr) ? -errno : 0;
}

int wake_fd_open_len(struct ibv_context *ctx, uint16_t len)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr;
	} cmd;
	uint64_t out = UINT64_MAX;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.length = sizeof(cmd);
	cmd.hdr.object_id = UVERBS_OBJECT_DEVICE;
	cmd.hdr.method_id = SOFTHCA_METHOD_WAKE_FD_OPEN;
	cmd.hdr.num_attrs = 1;
	cmd.hdr.driver_id = RDMA_DRIVER_UNKNOWN;
	cmd.attr.attr_id = SOFTHCA_ATTR_WAKE_FD_OPEN_FD;
	cmd.attr.len = len;
	cmd.attr.flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attr.data = (uintptr_t)&out;
	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return -errno;
	return (int)(uint32_t)out;
}

long eq_dbg_field(const char *dev, const char *eq_name, const char *key)
{
	char path[128], line[1024], want[32], k[40];
	long val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/softhca/%s/eqs", dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	snprintf(want, sizeof(want), " name=%s ", eq_name);
	snprintf(k, sizeof(k), " %s=", key);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, k);

		if (!strstr(line, want))
			continue;
		if (!strcmp(key, "eqn"))
			sscanf(line, "eqn=%ld", &val);
		else if (p)
			val = strtol(p + strlen(k), NULL, 10);
	}
	fclose(f);
	return val;
}

int eq_dbg_inject(const char *dev, const char *fmt, ...)
{
	char path[128], cmd[128];
	va_list ap;
	int fd, len, ret;

	va_start(ap, fmt);
	len = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "/sys/kernel/debug/softhca/%s/inject",
		 dev);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, cmd, len) == len ? 0 : -errno;
	close(fd);
	return ret;
}
