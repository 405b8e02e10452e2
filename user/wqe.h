/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * wqe.h - encoding of send and receive WQEs (seed-map.md §3.1 step 2, §4.1).
 *
 * Pure functions: they write the bytes of one WQE or segment and return
 * sizes. No locks, no doorbells, no I/O; post_send/post_recv own those.
 * Layouts are in <rdma/softhca-queue.h>, every multi-byte field big-endian.
 */
#ifndef SOFTHCA_WQE_H
#define SOFTHCA_WQE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/softhca-queue.h>

#include "ring.h"

/* WQE opcode of an ibv_wr_opcode, or -1 if softhca does not execute it. */
int softhca_wr_opcode(enum ibv_wr_opcode op);

/*
 * fm_ce_se of a WR: CQ_UPDATE if IBV_SEND_SIGNALED or the QP signals all,
 * SOLICITED if IBV_SEND_SOLICITED, SMALL_AND_FENCE if IBV_SEND_FENCE.
 */
uint8_t softhca_fm_ce_se(unsigned int send_flags, bool sig_all);

/*
 * Control segment. idx is the WQE's SQ counter (cur_post, low 16 bits used),
 * qpn 24 bits, ds the WQE's size in 16-byte units counting ctrl itself
 * (1..63), imm already in network order (ibv_send_wr.imm_data). The
 * signature byte is cleared.
 */
void softhca_set_ctrl_seg(struct softhca_wqe_ctrl_seg *ctrl, uint8_t opcode,
			  uint8_t opmod, uint16_t idx, uint32_t qpn, uint8_t ds,
			  uint8_t fm_ce_se, __be32 imm);

void softhca_set_raddr_seg(struct softhca_wqe_raddr_seg *seg, uint64_t raddr,
			   uint32_t rkey);

/* CS: (swap, compare). FA: (add, 0). */
void softhca_set_atomic_seg(struct softhca_wqe_atomic_seg *seg,
			    uint64_t swap_add, uint64_t compare);

void softhca_set_data_seg(struct softhca_wqe_data_seg *seg, uint32_t byte_count,
			  uint32_t lkey, uint64_t addr);

/* The receive list terminator: byte_count 0, SOFTHCA_INVALID_LKEY, addr 0. */
void softhca_set_sentinel_seg(struct softhca_wqe_data_seg *seg);

/*
 * Data pointer segments for sg[0..num_sge) into the SQ ring from byte offset
 * off (16-aligned), one per SGE of non-zero length, continuing at the start
 * of the ring when the end is reached. Returns the number of DS written.
 */
uint32_t softhca_set_data_segs(const struct softhca_ring *sq, uint32_t off,
			       const struct ibv_sge *sg, int num_sge);

/*
 * Inline segment: header at offset off (16-aligned), then the bytes of every
 * SGE (sg[i].addr is a pointer in this process) back to back, split at the
 * end of the ring, and zero padding up to the next DS boundary.
 * Returns the DS count (0 and nothing written when the payload is empty), or
 * -ENOMEM, with nothing written, when the payload exceeds max_inline.
 */
int softhca_set_inline_data(const struct softhca_ring *sq, uint32_t off,
			    const struct ibv_sge *sg, int num_sge,
			    uint32_t max_inline);

/* ~(XOR of len bytes): the mlx5 WQE signature function. */
uint8_t softhca_calc_sig(const void *p, size_t len);

/*
 * Sign the send WQE whose control segment is at ring offset off: clears
 * ctrl.signature, computes the signature over ds * 16 bytes (ds from
 * ctrl.qpn_ds, following the wrap), stores and returns it.
 */
uint8_t softhca_sign_send_wqe(const struct softhca_ring *sq, uint32_t off);

/*
 * Receive WQE of stride bytes (a power of two >= 16) at wqe. With with_sig
 * the first 16 bytes are the signature segment and the WQE is cleared first.
 * Writes one data segment per SGE of non-zero length and, if fewer than the
 * stride holds, the sentinel after them. With with_sig, signs the WQE over
 * the whole stride, the QPN (4 bytes) and idx (the WQE's 16-bit RQ counter).
 * Returns the number of data segments, or -EINVAL (nothing written) when
 * num_sge exceeds what the stride holds.
 */
int softhca_set_recv_wqe(void *wqe, uint32_t stride, bool with_sig,
			 const struct ibv_sge *sg, int num_sge,
			 uint32_t qpn, uint16_t idx);

/* Data segments a receive WQE of this stride holds. */
uint32_t softhca_recv_max_gs(uint32_t stride, bool with_sig);

/*
 * mlx5_wq_overflow without the lock: true if a WQ holding head - tail
 * outstanding WRs (free-running counters, any wrap) cannot take one more
 * after nreq already accepted in this batch. The caller re-reads tail under
 * the CQ lock and calls it again before failing (seed-map.md §3.1 step 1).
 */
bool softhca_wq_overflow(uint32_t head, uint32_t tail, uint32_t nreq,
			 uint32_t max_post);

#endif /* SOFTHCA_WQE_H */
