// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the ENGINE_WAKE method.
 *
 * A driver method on UVERBS_OBJECT_DEVICE, without attributes, reached by
 * ioctl(RDMA_VERBS_IOCTL) on the context's command fd. The provider calls it
 * only when it finds SOFTHCA_ENGINE_NEED_WAKEUP set in the engine page after
 * ringing a doorbell (DESIGN.md §5). The HCA model then executes the pending
 * work in this caller's context before the call returns, so a post after an
 * idle period does not wait for the engine thread to be scheduled.
 *
 * Registered through ib_device.driver_def (shca_uapi_defs): uverbs merges
 * the method into the DEVICE object's tree of this device.
 */
#include <rdma/ib_verbs.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#define UVERBS_MODULE_NAME softhca_ib
#include <rdma/uverbs_named_ioctl.h>

#include "softhca.h"

static int
UVERBS_HANDLER(SOFTHCA_METHOD_ENGINE_WAKE)(struct uverbs_attr_bundle *attrs)
{
	struct ib_ucontext *uctx = ib_uverbs_get_ucontext(attrs);

	if (IS_ERR(uctx))
		return PTR_ERR(uctx);
	shca_hca_wake(to_shca_dev(uctx->device)->hca);
	return 0;
}

DECLARE_UVERBS_NAMED_METHOD(SOFTHCA_METHOD_ENGINE_WAKE);

ADD_UVERBS_METHODS(shca_device_methods,
		   UVERBS_OBJECT_DEVICE,
		   &UVERBS_METHOD(SOFTHCA_METHOD_ENGINE_WAKE));

const struct uapi_definition shca_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DEVICE, &shca_device_methods),
	{},
};
