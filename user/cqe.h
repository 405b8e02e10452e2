/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cqe.h - the provider's side of the CQ formats (seed-map.md §5.3, §5.4):
 * CQE ownership, the shared CQE decoder's work completion as an ibv_wc,
 * CQ cleaning and the CQ arm doorbell word. The decoder itself, with the
 * WR lookup and its checks, is the one the kernel uses too
 * (softhca_cqe_decode(), <rdma/softhca-cqe.h>).
 *
 * Pure functions over one CQE and plain arguments; the poll loop (CQ lock,
 * udma_from_device_barrier after the ownership check, the QP lookup,
 * set_ci) belongs to the caller.
 */
#ifndef SOFTHCA_CQE_H_PROVIDER
#define SOFTHCA_CQE_H_PROVIDER

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-cqe.h>
#include <rdma/softhca-queue.h>

#include "ring.h"

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

/* The ibv_wc_flags of a decoded work completion. */
static inline unsigned int softhca_wc_ibv_flags(const struct softhca_wc *w)
{
	return (w->with_imm ? IBV_WC_WITH_IMM : 0) |
	       (w->grh ? IBV_WC_GRH : 0) |
	       (w->with_inv ? IBV_WC_WITH_INV : 0);
}

/*
 * The immediate field of a decoded work completion: the immediate, or the
 * rkey a SEND_WITH_INV invalidated (ibv_wc's union, host order).
 */
static inline uint32_t softhca_wc_ibv_imm(const struct softhca_wc *w)
{
	return w->with_inv ? w->inv_rkey : w->imm;
}

/*
 * The SL libibverbs reports: a datagram's RoCE packet type, as mlx5's
 * provider reports it from the same four CQE bits (softhca-queue.h,
 * flags_rqpn), else the SL the decoder found (0 on RoCE).
 */
static inline uint8_t softhca_wc_ibv_sl(const struct softhca_wc *w)
{
	return w->grh ? w->pkt_type : w->sl;
}

/* A decoded work completion (softhca_cqe_decode()) as libibverbs has it. */
static inline void softhca_wc_to_ibv(const struct softhca_wc *w,
				     struct ibv_wc *wc)
{
	SOFTHCA_WC_COPY(wc, w, IBV_WC_WITH_IMM, IBV_WC_GRH);
	wc->sl = softhca_wc_ibv_sl(w);
	wc->wc_flags = softhca_wc_ibv_flags(w);
	wc->imm_data = softhca_wc_ibv_imm(w);
	wc->qp_num = w->qpn;
}

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

#endif /* SOFTHCA_CQE_H_PROVIDER */
