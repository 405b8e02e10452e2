// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * query.c - device and port queries and the device clock. The kernel
 * answers all three; the provider only adds the firmware version string
 * (hca_core_clock and completion_timestamp_mask come with the device's
 * attributes). ibv_query_gid() and
 * ibv_query_gid_ex() are served by libibverbs itself (ioctl or sysfs).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "softhca.h"

/*
 * The kernel's fw_ver string in sysfs is the one truth, so ibv_devinfo and
 * /sys/class/infiniband/<dev>/fw_ver agree by construction. If it cannot be
 * read (the device was renamed since enumeration), decode the 64-bit value
 * of QUERY_DEVICE as the kernel does: major.minor.sub from bits 63..32,
 * 31..16, 15..0.
 */
static void softhca_fw_ver(struct ibv_context *ibctx, uint64_t raw,
			   char *buf, size_t size)
{
	struct verbs_device *vdev =
		softhca_container_of(ibctx->device, struct verbs_device, device);

	if (vdev->sysfs &&
	    ibv_read_ibdev_sysfs_file(buf, size, vdev->sysfs, "fw_ver") > 0)
		return;
	snprintf(buf, size, "%" PRIu32 ".%" PRIu32 ".%" PRIu32,
		 (uint32_t)(raw >> 32), (uint32_t)(raw >> 16) & 0xffff,
		 (uint32_t)raw & 0xffff);
}

int softhca_query_device_ex(struct ibv_context *ibctx,
			    const struct ibv_query_device_ex_input *input,
			    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	int ret;

	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;

	softhca_fw_ver(ibctx, resp.base.fw_ver, attr->orig_attr.fw_ver,
		       sizeof(attr->orig_attr.fw_ver));
	return 0;
}

/*
 * ibv_query_rt_values_ex: the device clock, read by the kernel (the
 * QUERY_CLOCK method: CLOCK_MONOTONIC as the HCA stamps CQEs with it, not
 * as a time namespace would shift it for us). As mlx5, the raw clock is
 * in tv_nsec, tv_sec 0.
 */
int softhca_query_rt_values(struct ibv_context *ibctx,
			    struct ibv_values_ex *values)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr ns_attr;
	} cmd;
	uint64_t ns = 0;

	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (!(values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	softhca_method_hdr(&cmd.hdr, SOFTHCA_METHOD_QUERY_CLOCK, 1);
	memset(&cmd.ns_attr, 0, sizeof(cmd.ns_attr));
	cmd.ns_attr.attr_id = SOFTHCA_ATTR_QUERY_CLOCK_NS;
	cmd.ns_attr.len = sizeof(ns);
	cmd.ns_attr.flags = UVERBS_ATTR_F_MANDATORY;
	cmd.ns_attr.data = (uintptr_t)&ns;
	if (ioctl(ibctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd)) {
		values->comp_mask = 0;
		return errno;
	}
	values->raw_clock.tv_sec = 0;
	values->raw_clock.tv_nsec = (long)ns;
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

int softhca_query_port(struct ibv_context *ibctx, uint8_t port,
		       struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}
