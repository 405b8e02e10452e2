/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca: what the shared queue codecs (<rdma/softhca-wqe.h>,
 * <rdma/softhca-cqe.h>) need from the side that compiles them, the
 * provider (user/) or the module (kernel/): memcpy/memset, errno values,
 * byte order (<asm/byteorder.h>, which both sides have) and the two
 * kinds of access to a counter another thread reads or writes.
 */
#ifndef SOFTHCA_SHIM_H
#define SOFTHCA_SHIM_H

#include <linux/types.h>
#include <asm/byteorder.h>

#ifdef __KERNEL__
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <asm/barrier.h>

/* A relaxed load of a counter another thread writes. */
#define SOFTHCA_READ_ONCE(x)		READ_ONCE(x)
/* A store after which the slots it frees may be reused: reads before it. */
#define SOFTHCA_STORE_RELEASE(p, v)	smp_store_release(p, v)
#else
#include <errno.h>
#include <string.h>

#define SOFTHCA_READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SOFTHCA_STORE_RELEASE(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
#endif

#endif /* SOFTHCA_SHIM_H */
