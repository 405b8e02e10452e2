// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * query.c - device and port queries. The kernel answers both; the provider
 * only adds the firmware version string. ibv_query_gid() and
 * ibv_query_gid_ex() are served by libibverbs itself (ioctl or sysfs).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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

int softhca_query_port(struct ibv_context *ibctx, uint8_t port,
		       struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}
