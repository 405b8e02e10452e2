// SPDX-License-Identifier: GPL-2.0
/*
 * wake_cost: what one wake-up call costs, against plain system calls, so
 * that `make bench` shows the floor of a post made while the engine thread
 * cannot run (Documentation/bench.md). Each call is timed over N calls
 * (default 100,000) on an idle device:
 *
 *   getppid           the cheapest system call
 *   ioctl_devnull     an ioctl on a plain file (fd lookup, LSM hook, vfs)
 *   wake_fd_fsync     fsync() on a wake fd, the provider's call (no pending work)
 *   engine_wake       the SOFTHCA_METHOD_ENGINE_WAKE uverbs method
 *
 *   wake_cost [-d DEV] [-n CALLS]
 *
 * Output, one line each: "wake_cost call=<name> us=<microseconds per call>".
 * Exit status 0 when every call was measured, 1 on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/softhca-abi.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void method_hdr(struct ib_uverbs_ioctl_hdr *hdr, uint16_t method,
		       uint16_t num_attrs)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->length = sizeof(*hdr) + num_attrs * sizeof(struct ib_uverbs_attr);
	hdr->object_id = UVERBS_OBJECT_DEVICE;
	hdr->method_id = method;
	hdr->num_attrs = num_attrs;
	hdr->driver_id = RDMA_DRIVER_UNKNOWN;
}

static int wake_fd_open(int cmd_fd)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr;
	} cmd;
	uint32_t fd = 0;

	method_hdr(&cmd.hdr, SOFTHCA_METHOD_WAKE_FD_OPEN, 1);
	memset(&cmd.attr, 0, sizeof(cmd.attr));
	cmd.attr.attr_id = SOFTHCA_ATTR_WAKE_FD_OPEN_FD;
	cmd.attr.len = sizeof(fd);
	cmd.attr.flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attr.data = (uintptr_t)&fd;
	if (ioctl(cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return -errno;
	return (int)fd;
}

enum call { GETPPID, IOCTL_DEVNULL, WAKE_FD_FSYNC, ENGINE_WAKE, NCALLS };
static const char *const names[NCALLS] = {
	"getppid", "ioctl_devnull", "wake_fd_fsync", "engine_wake",
};

/* One call; 0 or -errno. */
static int call_once(enum call c, int null_fd, int wake_fd, int cmd_fd,
		     struct ib_uverbs_ioctl_hdr *wake_hdr)
{
	int n;

	switch (c) {
	case GETPPID:
		syscall(SYS_getppid);
		return 0;
	case IOCTL_DEVNULL:
		/* /dev/null has no ioctls: ENOTTY after the whole path. */
		return ioctl(null_fd, FIONREAD, &n) && errno != ENOTTY ? -errno : 0;
	case WAKE_FD_FSYNC:
		return fsync(wake_fd) ? -errno : 0;
	case ENGINE_WAKE:
		return ioctl(cmd_fd, RDMA_VERBS_IOCTL, wake_hdr) ? -errno : 0;
	default:
		return -EINVAL;
	}
}

int main(int argc, char **argv)
{
	struct ib_uverbs_ioctl_hdr wake_hdr;
	const char *dev = "shca0";
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	long calls = 100000;
	int null_fd, wake_fd, opt, n, i;

	while ((opt = getopt(argc, argv, "d:n:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'n':
			calls = strtol(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: wake_cost [-d DEV] [-n CALLS]\n");
			return 1;
		}
	}
	if (calls <= 0) {
		fprintf(stderr, "wake_cost: -n must be positive\n");
		return 1;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "wake_cost: cannot open %s\n", dev);
		return 1;
	}
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	wake_fd = wake_fd_open(ctx->cmd_fd);
	if (null_fd < 0 || wake_fd < 0) {
		fprintf(stderr, "wake_cost: /dev/null %d, wake fd %d\n", null_fd,
			wake_fd);
		return 1;
	}
	method_hdr(&wake_hdr, SOFTHCA_METHOD_ENGINE_WAKE, 0);

	for (int c = 0; c < NCALLS; c++) {
		double t0;
		int err;

		/* Warm up, and check the call works at all. */
		for (i = 0; i < 1000; i++) {
			err = call_once(c, null_fd, wake_fd, ctx->cmd_fd, &wake_hdr);
			if (err) {
				fprintf(stderr, "wake_cost: %s: %s\n", names[c],
					strerror(-err));
				return 1;
			}
		}
		t0 = now_ns();
		for (long k = 0; k < calls; k++)
			call_once(c, null_fd, wake_fd, ctx->cmd_fd, &wake_hdr);
		printf("wake_cost call=%s us=%.3f\n", names[c],
		       (now_ns() - t0) / calls / 1000.0);
	}
	close(wake_fd);
	close(null_fd);
	ibv_close_device(ctx);
	return 0;
}
