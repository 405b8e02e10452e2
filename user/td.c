// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * td.c - thread domains and parent domains (ibv_alloc_td,
 * ibv_alloc_parent_domain). A thread domain is the application's promise
 * that the objects of a parent domain holding it are used by one thread
 * at a time, so a QP created on such a parent domain takes no locks on its
 * queues (as mlx5 does). A parent domain has no kernel object: it stands
 * for its protection domain (the kernel commands see that PD's handle and
 * the data path its pdn) plus the thread domain and the caller's context
 * pointer. References keep the pieces alive in order: a PD or a thread
 * domain with a parent domain on it, or a parent domain with a QP on it,
 * refuses to be freed (EBUSY).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "softhca.h"

struct ibv_td *softhca_alloc_td(struct ibv_context *ibctx,
				struct ibv_td_init_attr *attr)
{
	struct softhca_td *td;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv_td.context = ibctx;
	return &td->ibv_td;
}

int softhca_dealloc_td(struct ibv_td *ibtd)
{
	struct softhca_td *td = to_std(ibtd);

	if (__atomic_load_n(&td->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(td);
	return 0;
}

/* What ibv_alloc_parent_domain may be given; EINVAL or EOPNOTSUPP if not. */
static int parent_domain_attr_ok(struct ibv_context *ibctx,
				 const struct ibv_parent_domain_init_attr *attr)
{
	if (!attr->pd || attr->pd->context != ibctx ||
	    to_spd(attr->pd)->protection)
		return EINVAL;
	if (attr->td && attr->td->context != ibctx)
		return EINVAL;
	/* Queue memory is the kernel's (mmapped): no allocator is called. */
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS)
		return EOPNOTSUPP;
	if (attr->comp_mask & ~IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		return EINVAL;
	return 0;
}

struct ibv_pd *
softhca_alloc_parent_domain(struct ibv_context *ibctx,
			    struct ibv_parent_domain_init_attr *attr)
{
	struct softhca_pd *pd;
	int err = parent_domain_attr_ok(ibctx, attr);

	if (err) {
		errno = err;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->protection = to_spd(attr->pd);
	pd->pdn = pd->protection->pdn;
	/* The kernel sees the protection domain wherever this one is passed. */
	pd->ibv_pd.context = ibctx;
	pd->ibv_pd.handle = attr->pd->handle;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	if (attr->td) {
		pd->td = to_std(attr->td);
		__atomic_fetch_add(&pd->td->users, 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&pd->protection->users, 1, __ATOMIC_RELAXED);
	return &pd->ibv_pd;
}

int softhca_dealloc_parent_domain(struct softhca_pd *pd)
{
	if (__atomic_load_n(&pd->users, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (pd->td)
		__atomic_fetch_sub(&pd->td->users, 1, __ATOMIC_RELEASE);
	__atomic_fetch_sub(&pd->protection->users, 1, __ATOMIC_RELEASE);
	free(pd);
	return 0;
}
