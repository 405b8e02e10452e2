// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq_ex.c - the extended poll API of a CQ made by ibv_create_cq_ex
 * (start_poll, next_poll, end_poll and the ibv_wc_read_* functions).
 *
 * A batch is poll_cq's loop cut in pieces: start_poll takes the CQ lock
 * and the first completion, next_poll the next, end_poll publishes the
 * consumer index (cons_index, set_ci) and unlocks. Each completion is
 * decoded once, by poll.c's softhca_cq_take() on the decoder the kernel
 * shares, into the CQ's ex_wc; wr_id and status go straight into the
 * ibv_cq_ex, every read_* returns a field of ex_wc. So poll_cq and this
 * API report the same completion identically, poll_cq also works on
 * such a CQ (as upstream perftest polls its cq_ex), and the timestamps
 * are whatever the HCA stamped (the CQ's CREATE_CQ clocks).
 *
 * As mlx5: only the readers the wc_flags asked for are set (the others
 * stay NULL); an empty CQ is ENOENT from start_poll, which then holds no
 * lock (no end_poll), and from next_poll (end_poll follows). A CQ of a
 * device that is gone is EIO from start_poll, as poll_cq's -EIO.
 */
#include <errno.h>

#include "cqe.h"
#include "softhca.h"

static struct softhca_cq *to_scq_ex(struct ibv_cq_ex *ibcq)
{
	return to_scq(ibv_cq_ex_to_cq(ibcq));
}

/* The batch's next completion into the cq_ex, or ENOENT. */
static int cq_ex_next(struct softhca_cq *cq)
{
	if (softhca_cq_take(cq, &cq->ex_ci, &cq->ex_wc))
		return ENOENT;
	cq->vcq.cq_ex.wr_id = cq->ex_wc.wr_id;
	cq->vcq.cq_ex.status = (enum ibv_wc_status)cq->ex_wc.status;
	return 0;
}

static int softhca_start_poll(struct ibv_cq_ex *ibcq,
			      struct ibv_poll_cq_attr *attr)
{
	struct softhca_cq *cq = to_scq_ex(ibcq);

	/* ibv_poll_cq_attr: comp_mask must be 0 (nothing is defined). */
	if (attr->comp_mask)
		return EINVAL;
	softhca_lock(&cq->lock);
	cq->ex_ci = cq->cons_index;
	if (!cq_ex_next(cq))
		return 0;
	/* Dropped CQEs are consumed all the same. */
	softhca_cq_commit(cq, cq->ex_ci);
	softhca_unlock(&cq->lock);
	return softhca_device_gone(to_sctx(ibcq->context)) ? EIO : ENOENT;
}

static int softhca_next_poll(struct ibv_cq_ex *ibcq)
{
	return cq_ex_next(to_scq_ex(ibcq));
}

static void softhca_end_poll(struct ibv_cq_ex *ibcq)
{
	struct softhca_cq *cq = to_scq_ex(ibcq);

	softhca_cq_commit(cq, cq->ex_ci);
	softhca_unlock(&cq->lock);
}

/* ---- the current completion's fields ------------------------------------ */

static const struct softhca_wc *cur(struct ibv_cq_ex *ibcq)
{
	return &to_scq_ex(ibcq)->ex_wc;
}

static enum ibv_wc_opcode softhca_read_opcode(struct ibv_cq_ex *ibcq)
{
	return (enum ibv_wc_opcode)cur(ibcq)->opcode;
}

static uint32_t softhca_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->vendor_err;
}

static uint32_t softhca_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->byte_len;
}

/* ibv_wc_read_invalidated_rkey() reads this too, as imm_data's union. */
static __be32 softhca_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return softhca_wc_ibv_imm(cur(ibcq));
}

static uint32_t softhca_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->qpn;
}

static uint32_t softhca_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->src_qp;
}

static unsigned int softhca_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return softhca_wc_ibv_flags(cur(ibcq));
}

/* RoCE has no LIDs: 0, as ibv_poll_cq reports. */
static uint32_t softhca_read_slid(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

static uint8_t softhca_read_sl(struct ibv_cq_ex *ibcq)
{
	return softhca_wc_ibv_sl(cur(ibcq));
}

static uint8_t softhca_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

/* The device clock (hca_core_clock: 1 GHz), stamped by the HCA. */
static uint64_t softhca_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->ts;
}

/* CLOCK_REALTIME of the same instant, stamped by the HCA too. */
static uint64_t softhca_read_completion_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	return cur(ibcq)->ts_real;
}

void softhca_cq_ex_set_ops(struct softhca_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	ex->start_poll = softhca_start_poll;
	ex->next_poll = softhca_next_poll;
	ex->end_poll = softhca_end_poll;
	ex->read_opcode = softhca_read_opcode;
	ex->read_vendor_err = softhca_read_vendor_err;
	ex->read_wc_flags = softhca_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = softhca_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = softhca_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = softhca_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = softhca_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = softhca_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = softhca_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = softhca_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		ex->read_completion_ts = softhca_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		ex->read_completion_wallclock_ns =
			softhca_read_completion_wallclock_ns;
}
