/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cqe.h - CQE parsing and the CQ arm doorbell word (seed-map.md §5.3, §5.4).
 *
 * Pure functions over one CQE and plain arguments; the poll loop (CQ lock,
 * udma_from_device_barrier after the ownership check, wrid[] lookup, WQ tail
 * updates, set_ci) belongs to the caller.
 */
#ifndef SOFTHCA_CQE_H
#define SOFTHCA_CQE_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-queue.h>

#include "ring.h"

static inline uint8_t softhca_cqe_opcode(const struct softhca_cqe *cqe)
{
	return cqe->op_own >> SOFTHCA_CQE_OPCODE_SHIFT;
}

/* QPN of the CQE (good and error CQEs keep it at the same offset). */
static inline uint32_t softhca_cqe_qpn(const struct softhca_cqe *cqe)
{
	return be32toh(cqe->sop_drop_qpn) & SOFTHCA_24BIT_MASK;
}

/* The WQE opcode a requester CQE (good or error) completes. */
static inline uint8_t softhca_cqe_wqe_opcode(const struct softhca_cqe *cqe)
{
	return be32toh(cqe->sop_drop_qpn) >> SOFTHCA_CQE_WQE_OPCODE_SHIFT;
}

static inline uint16_t softhca_cqe_wqe_counter(const struct softhca_cqe *cqe)
{
	return be16toh(cqe->wqe_counter);
}

/*
 * True if the CQE seen at consumer index ci in a ring of cqe_cnt entries
 * (power of two) has been written by the HCA on ci's lap: opcode not
 * INVALID and owner bit equal to softhca_owner_of(ci, cqe_cnt). op_own is
 * read once; the caller issues udma_from_device_barrier() before reading
 * anything else.
 */
bool softhca_cqe_owned_by_sw(const struct softhca_cqe *cqe, uint32_t ci,
			     uint32_t cqe_cnt);

/* The CQE for ci in a ring of cqe_cnt 64-byte CQEs, or NULL if not ready. */
const struct softhca_cqe *softhca_cqe_get_sw(const void *ring, uint32_t ci,
					     uint32_t cqe_cnt);

/* ibv_wc_status of an error CQE syndrome (unknown: IBV_WC_GENERAL_ERR). */
enum ibv_wc_status softhca_cqe_syndrome_status(uint8_t syndrome);

/*
 * ibv_wc_opcode of a completed send WQE opcode; *with_imm set for the
 * _IMM forms. Returns -1 for an opcode that has no work completion.
 */
int softhca_wc_opcode_of_wqe(uint8_t wqe_opcode, enum ibv_wc_opcode *opcode,
			     bool *with_imm);

/*
 * Fill every ibv_wc field except wr_id from a CQE the caller owns:
 * status/vendor_err (error CQEs), opcode (requester: from the WQE opcode
 * the HCA copied into the CQE; responder: from the CQE opcode), byte_len,
 * imm_data (network order, as the CQE holds it; the requester CQE of a
 * SEND_IMM or WRITE_IMM echoes the WR's), wc_flags, qp_num, src_qp,
 * sl. For error CQEs opcode and byte_len are not meaningful
 * (ibv_poll_cq(3)). Returns 0, or -EPROTO for a CQE opcode or requester
 * WQE opcode softhca never writes.
 */
int softhca_cqe_to_wc(const struct softhca_cqe *cqe, struct ibv_wc *wc);

/*
 * Remove the CQEs of QP qpn from the part of the ring the HCA has written
 * and the consumer has not read yet: the run of CQEs owned by software
 * from consumer index ci on (at most cqe_cnt). Walking back from the newest,
 * every other CQE moves up by the number removed so far, keeping the owner
 * bit of the slot it lands in; the removed CQEs end up in the oldest slots.
 * Returns that number; the caller adds it to its consumer index and then
 * writes set_ci. Used when the QP is destroyed or reset, after the HCA
 * stopped writing CQEs for it; CQEs the HCA writes meanwhile for other QPs
 * land after the run and are not touched.
 */
uint32_t softhca_cq_compact(struct softhca_cqe *ring, uint32_t cqe_cnt,
			    uint32_t ci, uint32_t qpn);

/*
 * CQ arm word: arm_sn & 3, REQ_NOT_SOL if solicited_only else REQ_NOT,
 * consumer index & 0xffffff. Written big-endian to softhca_cq_dbr.arm.
 */
uint32_t softhca_cq_arm_word(uint32_t arm_sn, bool solicited_only, uint32_t ci);

/* The 64-bit UAR CQ doorbell (host order; store it with htobe64). */
uint64_t softhca_cq_doorbell(uint32_t arm_word, uint32_t cqn);

#endif /* SOFTHCA_CQE_H */
