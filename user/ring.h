/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ring.h - index arithmetic of the provider's rings (SQ, RQ, CQ).
 *
 * Producer and consumer counters are free-running unsigned 32-bit values;
 * a slot is counter & (count - 1), so every ring count is a power of two.
 * Only the low 16 bits of a WQ counter reach the doorbell record, only the
 * low 24 bits of a CQ consumer index. The byte ring of the SQ and its
 * wrap (struct softhca_ring) are the shared WQE builder's
 * (<rdma/softhca-wqe.h>).
 */
#ifndef SOFTHCA_RING_H
#define SOFTHCA_RING_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/softhca-enc.h>
#include <rdma/softhca-queue.h>
#include <rdma/softhca-wqe.h>

static inline bool softhca_is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

/* Slot of a free-running counter in a ring of cnt entries (power of two). */
static inline uint32_t softhca_ring_slot(uint32_t counter, uint32_t cnt)
{
	return counter & (cnt - 1);
}

/* Byte offset of the WQEBB that SQ counter cur_post designates. */
static inline uint32_t softhca_sq_wqe_offset(uint32_t cur_post, uint32_t wqebb_cnt)
{
	return softhca_ring_slot(cur_post, wqebb_cnt) << SOFTHCA_SEND_WQE_SHIFT;
}

/* The value of a WQ counter in the doorbell record (host order). */
static inline uint32_t softhca_wq_dbr_value(uint32_t counter)
{
	return counter & SOFTHCA_WQ_DBR_MASK;
}

/* The value of a CQ consumer index in set_ci (host order). */
static inline uint32_t softhca_cq_ci_value(uint32_t ci)
{
	return ci & SOFTHCA_CQ_DB_CI_MASK;
}

/*
 * Owner bit of the lap that counter belongs to in a ring of cnt entries:
 * 0 on the first lap, 1 on the second, and so on. The producer writes it
 * into the entry; the consumer accepts an entry only when they agree.
 */
static inline uint8_t softhca_owner_of(uint32_t counter, uint32_t cnt)
{
	return softhca_enc_owner(counter, cnt);
}

#endif /* SOFTHCA_RING_H */
