/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * send.h - the stages of posting a send WQE, shared by ibv_post_send
 * (send.c) and the extended post-send API (wr.c). Callers hold the SQ lock.
 */
#ifndef SOFTHCA_SEND_H
#define SOFTHCA_SEND_H

#include "softhca.h"

/* What one WR asks for, in WQE terms. */
struct softhca_wqe_desc {
	uint64_t wr_id;
	uint8_t opcode;			/* SOFTHCA_OPCODE_* */
	uint8_t fm_ce_se;
	__be32 imm;
	bool raddr;			/* raddr segment */
	bool atomic;			/* atomic segment + one 8-byte pointer */
	bool inl;			/* sg is copied inline */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
	const struct ibv_sge *sg;
	int num_sge;
};

/* True if nreq more WRs do not fit (re-checked under the send CQ lock). */
bool softhca_sq_overflow(struct softhca_qp *qp, uint32_t nreq);

/*
 * Write d's WQE at cur_post: seq is the WR's number in the SQ (head + WRs
 * before it in this batch). Returns 0, or EINVAL / ENOMEM (inline beyond
 * max_inline_data) with nothing written.
 */
int softhca_sq_build_wqe(struct softhca_qp *qp,
			 const struct softhca_wqe_desc *d, uint32_t seq);

/*
 * post_send_db for nreq > 0 WRs just built, the last at WQEBB slot
 * last_idx, last_bbs WQEBBs long, inline or not: the SND record, then the
 * UAR (BlueFlame if it is the only one and qualifies). SQ lock held; the
 * caller makes the wake-up check after releasing it.
 */
void softhca_sq_ring(struct softhca_context *ctx, struct softhca_qp *qp,
		     uint32_t nreq, uint32_t last_idx, uint32_t last_bbs,
		     bool last_inl);

#endif /* SOFTHCA_SEND_H */
