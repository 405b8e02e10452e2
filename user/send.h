/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * send.h - the stages of posting a send WQE, shared by ibv_post_send
 * (send.c) and the extended post-send API (wr.c). Callers hold the SQ lock.
 * The WQE itself is the shared builder's (<rdma/softhca-wqe.h>).
 */
#ifndef SOFTHCA_SEND_H
#define SOFTHCA_SEND_H

#include <rdma/softhca-wqe.h>

#include "softhca.h"

/*
 * fm_ce_se of a WR: CQ_UPDATE if IBV_SEND_SIGNALED or the QP signals all,
 * SOLICITED if IBV_SEND_SOLICITED, SMALL_AND_FENCE if IBV_SEND_FENCE.
 */
static inline uint8_t softhca_fm_ce_se(unsigned int send_flags, bool sig_all)
{
	return softhca_enc_fm_ce_se(sig_all || (send_flags & IBV_SEND_SIGNALED),
				    send_flags & IBV_SEND_SOLICITED,
				    send_flags & IBV_SEND_FENCE);
}

/* True if nreq more WRs do not fit (re-checked under the send CQ lock). */
bool softhca_sq_overflow(struct softhca_qp *qp, uint32_t nreq);

/*
 * Write wr's WQE at cur_post and record wr_id at its slot: seq is the
 * WR's number in the SQ (head + WRs before it in this batch). Returns 0,
 * or EINVAL / ENOMEM (inline beyond max_inline_data) with nothing written.
 */
int softhca_sq_build_wqe(struct softhca_qp *qp, uint64_t wr_id,
			 const struct softhca_send_wr *wr, uint32_t seq);

/*
 * A BIND_MW WR (mw.c builds its descriptor) at cur_post, recorded as
 * softhca_sq_build_wqe() records a send WR. Returns 0 or EINVAL.
 */
int softhca_sq_build_bind(struct softhca_qp *qp, uint64_t wr_id,
			  const struct ibv_mw_bind_info *info, uint32_t rkey,
			  uint8_t fm_ce_se, uint32_t seq);
/* A bind's rights and MR as the bind segment says them; EINVAL if bad. */
int softhca_bind_desc(const struct ibv_mw_bind_info *info, uint32_t rkey,
		      uint8_t fm_ce_se, struct softhca_bind_wr *b);

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
