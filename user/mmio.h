/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mmio.h - ordering between the provider and the HCA (seed-map.md §3.1.3, §4.1.3,
 * §5.3), for x86_64 and aarch64.
 *
 * Three kinds of memory meet on the data path:
 *  - queues and doorbell records (DBR): ordinary cacheable host memory that
 *    the HCA reads and writes (DMA);
 *  - the UAR page: the device's doorbell register window, written with
 *    single 64-bit stores or 64-byte BlueFlame copies, possibly mapped
 *    write-combining;
 *  - flags the HCA (here: the softhca engine) sets for the provider to read.
 *
 * Barrier                  x86_64                  aarch64
 * udma_to_device_barrier   compiler barrier        dmb oshst
 *   (queue/WQE stores before the DBR store)
 * udma_from_device_barrier lfence                  dmb oshld
 *   (owner-bit/opcode check before reading the rest of a CQE/EQE)
 * mmio_flush_writes        sfence                  dsb st
 *   (drain write-combining; after the UAR store)
 * mmio_wc_start            = mmio_flush_writes     = mmio_flush_writes
 *   (DBR and earlier MMIO before a new WC UAR store)
 * udma_full_barrier        mfence                  dmb osh
 *   (a store before a later load: doorbell store, then NEED_WAKEUP read)
 *
 * x86_64 keeps cacheable stores in order, so a compiler barrier suffices
 * before the DBR; an application using non-temporal stores or special memory
 * types must issue its own SFENCE before calling verbs.
 */
#ifndef SOFTHCA_MMIO_H
#define SOFTHCA_MMIO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/types.h>

#if defined(__x86_64__)

static inline void udma_to_device_barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

static inline void udma_from_device_barrier(void)
{
	__asm__ volatile("lfence" ::: "memory");
}

static inline void mmio_flush_writes(void)
{
	__asm__ volatile("sfence" ::: "memory");
}

static inline void udma_full_barrier(void)
{
	__asm__ volatile("mfence" ::: "memory");
}

#elif defined(__aarch64__)

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

static inline void udma_to_device_barrier(void)
{
	__asm__ volatile("dmb oshst" ::: "memory");
}

static inline void udma_from_device_barrier(void)
{
	__asm__ volatile("dmb oshld" ::: "memory");
}

static inline void mmio_flush_writes(void)
{
	__asm__ volatile("dsb st" ::: "memory");
}

static inline void udma_full_barrier(void)
{
	__asm__ volatile("dmb osh" ::: "memory");
}

#else
#error "softhca: mmio.h has barriers for x86_64 and aarch64 only"
#endif

/* Order the DBR (and earlier MMIO) before a new write-combining UAR store. */
static inline void mmio_wc_start(void)
{
	mmio_flush_writes();
}

/*
 * One 64-bit store of an already big-endian value, exactly as given (no byte
 * swap): a relaxed atomic store, i.e. a single MOV (x86_64) or STR (aarch64)
 * that cannot be split or merged. addr must be 8-byte aligned.
 */
static inline void mmio_write64_be(void *addr, __be64 val)
{
	atomic_store_explicit((_Atomic uint64_t *)addr, (uint64_t)val,
			      memory_order_relaxed);
}

static inline void mmio_write32_be(void *addr, __be32 val)
{
	atomic_store_explicit((_Atomic uint32_t *)addr, (uint32_t)val,
			      memory_order_relaxed);
}

/*
 * BlueFlame copy: bytecnt (a multiple of 64) bytes from src to the UAR at
 * dst (64-byte aligned), 64 bytes at a time with ascending addresses. The
 * caller brackets it with mmio_wc_start() and mmio_flush_writes().
 * x86_64: eight 64-bit stores per block. aarch64: one NEON ld4/st4 pair per
 * block (ST64B would need LS64 and Device memory; our UAR is normal memory).
 * src need not be aligned; it is read as bytes.
 */
static inline void mmio_memcpy_x64(void *dst, const void *src, size_t bytecnt)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	for (; bytecnt >= 64; bytecnt -= 64, d += 64, s += 64) {
#if defined(__aarch64__) && defined(__ARM_NEON)
		vst4q_u64((uint64_t *)(void *)d,
			  vld4q_u64((const uint64_t *)(const void *)s));
#else
		for (int i = 0; i < 64; i += 8) {
			uint64_t w;

			memcpy(&w, s + i, sizeof(w));
			mmio_write64_be(d + i, (__be64)w);
		}
#endif
	}
}

#endif /* SOFTHCA_MMIO_H */
