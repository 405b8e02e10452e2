/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca queue encoders shared by the provider (user/) and the kernel
 * (kernel/kverbs.c and the HCA model): pure functions of plain integers,
 * host order; the caller stores the result big-endian where the format
 * says so (<rdma/softhca-queue.h>). No locks, no memory access, except the
 * CQ compaction at the end. The WQE builder is <rdma/softhca-wqe.h>, the
 * CQE decoder <rdma/softhca-cqe.h>, the opcodes <rdma/softhca-opcodes.h>.
 *
 * Work completion numbers: ib_wc_status / ibv_wc_status and ib_wc_opcode /
 * ibv_wc_opcode have the same values (IBA); each side checks that with
 * static asserts where it converts.
 */
#ifndef SOFTHCA_ENC_H
#define SOFTHCA_ENC_H

#include <linux/types.h>
#include <rdma/softhca-queue.h>

/* Work completion status numbers (IB_WC_* / IBV_WC_*). */
enum {
	SOFTHCA_WC_SUCCESS		= 0,
	SOFTHCA_WC_LOC_LEN_ERR		= 1,
	SOFTHCA_WC_LOC_QP_OP_ERR	= 2,
	SOFTHCA_WC_LOC_PROT_ERR		= 4,
	SOFTHCA_WC_WR_FLUSH_ERR		= 5,
	SOFTHCA_WC_MW_BIND_ERR		= 6,
	SOFTHCA_WC_BAD_RESP_ERR		= 7,
	SOFTHCA_WC_LOC_ACCESS_ERR	= 8,
	SOFTHCA_WC_REM_INV_REQ_ERR	= 9,
	SOFTHCA_WC_REM_ACCESS_ERR	= 10,
	SOFTHCA_WC_REM_OP_ERR		= 11,
	SOFTHCA_WC_RETRY_EXC_ERR	= 12,
	SOFTHCA_WC_RNR_RETRY_EXC_ERR	= 13,
	SOFTHCA_WC_REM_ABORT_ERR	= 16,
	SOFTHCA_WC_GENERAL_ERR		= 21,
};

/* Work completion opcode numbers (IB_WC_* / IBV_WC_*). */
enum {
	SOFTHCA_WC_SEND			= 0,
	SOFTHCA_WC_RDMA_WRITE		= 1,
	SOFTHCA_WC_RDMA_READ		= 2,
	SOFTHCA_WC_COMP_SWAP		= 3,
	SOFTHCA_WC_FETCH_ADD		= 4,
	SOFTHCA_WC_BIND_MW		= 5,
	SOFTHCA_WC_LOCAL_INV		= 6,
	SOFTHCA_WC_REG_MR		= 8,	/* kernel only (IB_WC_REG_MR) */
	SOFTHCA_WC_RECV			= 128,
	SOFTHCA_WC_RECV_RDMA_WITH_IMM	= 129,
};

/* ctrl.opmod_idx_opcode: idx is the WQE's SQ counter (low 16 bits). */
static inline __u32 softhca_enc_ctrl_opcode(__u8 opmod, __u16 idx, __u8 opcode)
{
	return (__u32)opmod << SOFTHCA_WQE_CTRL_OPMOD_SHIFT |
	       (__u32)idx << SOFTHCA_WQE_CTRL_IDX_SHIFT | opcode;
}

/* ctrl.qpn_ds: ds counts 16-byte units, ctrl included (1..63). */
static inline __u32 softhca_enc_ctrl_qpn_ds(__u32 qpn, __u8 ds)
{
	return (qpn & SOFTHCA_24BIT_MASK) << SOFTHCA_WQE_CTRL_QPN_SHIFT |
	       (ds & SOFTHCA_WQE_CTRL_DS_MASK);
}

/* ctrl.fm_ce_se of a WR. */
static inline __u8 softhca_enc_fm_ce_se(int signaled, int solicited, int fence)
{
	return (signaled ? SOFTHCA_WQE_CTRL_CQ_UPDATE : 0) |
	       (solicited ? SOFTHCA_WQE_CTRL_SOLICITED : 0) |
	       (fence ? SOFTHCA_FENCE_MODE_SMALL_AND_FENCE : 0);
}

/* WQEBBs a send WQE of ds 16-byte units occupies: cur_post's advance. */
static inline __u32 softhca_ds_to_wqebbs(__u32 ds)
{
	return (ds * SOFTHCA_DS_SIZE + SOFTHCA_SEND_WQE_BB - 1) >>
	       SOFTHCA_SEND_WQE_SHIFT;
}

/*
 * The UDP source port of RoCE v2 packets of a flow (IBTA Annex A17: the
 * range 0xC000..0xFFFF): the flow label folded into 14 bits, as ib_core's
 * rdma_flow_label_to_udp_sport(); flow label 0 is the first port.
 */
#define SOFTHCA_UDP_SPORT_MIN		0xc000
static inline __u16 softhca_enc_udp_sport(__u32 flow_label)
{
	__u32 low = flow_label & 0x03fff, high = flow_label & 0xfc000;

	return (__u16)((low ^ (high >> 14)) | SOFTHCA_UDP_SPORT_MIN);
}

/* Owner bit of the lap of a free-running counter (ring of cnt, pow2). */
static inline __u8 softhca_enc_owner(__u32 counter, __u32 cnt)
{
	return (counter & cnt) ? 1 : 0;
}

/*
 * Has the HCA written the CQE whose op_own byte is @op_own for consumer
 * index @ci (ring of @cnt)? Opcode not INVALID and owner bit of ci's lap.
 */
static inline int softhca_cqe_is_sw(__u8 op_own, __u32 ci, __u32 cnt)
{
	if ((op_own >> SOFTHCA_CQE_OPCODE_SHIFT) == SOFTHCA_CQE_INVALID)
		return 0;
	return (op_own & SOFTHCA_CQE_OWNER_MASK) == softhca_enc_owner(ci, cnt);
}

/* CQ arm word: arm_sn, solicited only or next completion, consumer index. */
static inline __u32 softhca_enc_cq_arm(__u32 arm_sn, int solicited_only,
				       __u32 ci)
{
	return (arm_sn & SOFTHCA_CQ_DB_SN_MASK) << SOFTHCA_CQ_DB_SN_SHIFT |
	       (solicited_only ? SOFTHCA_CQ_DB_REQ_NOT_SOL :
				 SOFTHCA_CQ_DB_REQ_NOT) |
	       (ci & SOFTHCA_CQ_DB_CI_MASK);
}

/* The 64-bit UAR CQ doorbell (host order). */
static inline __u64 softhca_enc_cq_doorbell(__u32 arm_word, __u32 cqn)
{
	return (__u64)arm_word << 32 | (cqn & SOFTHCA_24BIT_MASK);
}

/*
 * Remove the CQEs of one QP from the run [ci, end) of CQEs the consumer
 * owns (the caller found end and issued its read barrier): walking back
 * from the newest, every other CQE moves up by the number removed so far,
 * keeping the owner bit of the slot it lands in; the removed ones end up
 * in the oldest slots. The QP is matched as big-endian words: qpn_be =
 * the QPN, mask_be = the 24-bit mask, both stored big-endian. Returns the
 * number removed: the caller adds it to its consumer index, then writes
 * set_ci.
 */
static inline __u32 softhca_cq_compact_run(struct softhca_cqe *ring,
					   __u32 cnt, __u32 ci, __u32 end,
					   __be32 qpn_be, __be32 mask_be)
{
	__u32 i = end, removed = 0;

	while (i != ci) {
		struct softhca_cqe *cqe = &ring[--i & (cnt - 1)];
		struct softhca_cqe *to;
		__u8 owner;

		if ((cqe->sop_drop_qpn & mask_be) == qpn_be) {
			removed++;
			continue;
		}
		if (!removed)
			continue;
		to = &ring[(i + removed) & (cnt - 1)];
		owner = to->op_own & SOFTHCA_CQE_OWNER_MASK;
		*to = *cqe;
		to->op_own = (to->op_own & ~SOFTHCA_CQE_OWNER_MASK) | owner;
	}
	return removed;
}

#endif /* SOFTHCA_ENC_H */
