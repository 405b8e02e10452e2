// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of include/uapi/rdma/softhca-queue.h: sizes and offsets
 * (compile time, and again at run time against the installed mlx5dv.h, an
 * independent statement of the mlx5 layouts), and every constant's value.
 * EQE numbers come from the kernel's include/linux/mlx5/device.h, which is
 * not usable from user space, so they are spelled out here.
 */
#include <stddef.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <rdma/softhca-opcodes.h>
#include <rdma/softhca-queue.h>

#include "tap.h"

#define SIZE_IS(type, n) _Static_assert(sizeof(type) == (n), #type " is " #n " bytes")
#define OFF_IS(type, f, n) \
	_Static_assert(offsetof(type, f) == (n), #type "." #f " at " #n)

SIZE_IS(struct softhca_wqe_ctrl_seg, 16);
SIZE_IS(struct softhca_wqe_raddr_seg, 16);
SIZE_IS(struct softhca_wqe_atomic_seg, 16);
SIZE_IS(struct softhca_wqe_data_seg, 16);
SIZE_IS(struct softhca_wqe_inline_seg, 4);
SIZE_IS(struct softhca_rwqe_sig, 16);
SIZE_IS(struct softhca_wqe_av, SOFTHCA_AV_DS * SOFTHCA_DS_SIZE);
SIZE_IS(struct softhca_cqe, 64);
SIZE_IS(struct softhca_eqe, 64);
SIZE_IS(struct softhca_qp_dbr, 8);
SIZE_IS(struct softhca_cq_dbr, 8);
SIZE_IS(struct softhca_db_thread, 64);
SIZE_IS(struct softhca_db_area, SOFTHCA_DB_AREA_SIZE);
_Static_assert(SOFTHCA_SEND_WQE_BB == 1 << SOFTHCA_SEND_WQE_SHIFT, "WQEBB");
_Static_assert(SOFTHCA_DS_SIZE == 1 << SOFTHCA_DS_SHIFT, "DS");
_Static_assert(SOFTHCA_CQE_SIZE == sizeof(struct softhca_cqe), "CQE size");
_Static_assert(SOFTHCA_EQE_SIZE == sizeof(struct softhca_eqe), "EQE size");

OFF_IS(struct softhca_wqe_ctrl_seg, opmod_idx_opcode, 0);
OFF_IS(struct softhca_wqe_ctrl_seg, qpn_ds, 4);
OFF_IS(struct softhca_wqe_ctrl_seg, signature, 8);
OFF_IS(struct softhca_wqe_ctrl_seg, fm_ce_se, 11);
OFF_IS(struct softhca_wqe_ctrl_seg, imm, 12);
OFF_IS(struct softhca_wqe_raddr_seg, raddr, 0);
OFF_IS(struct softhca_wqe_raddr_seg, rkey, 8);
OFF_IS(struct softhca_wqe_atomic_seg, swap_add, 0);
OFF_IS(struct softhca_wqe_atomic_seg, compare, 8);
OFF_IS(struct softhca_wqe_data_seg, byte_count, 0);
OFF_IS(struct softhca_wqe_data_seg, lkey, 4);
OFF_IS(struct softhca_wqe_data_seg, addr, 8);
OFF_IS(struct softhca_rwqe_sig, signature, 4);

OFF_IS(struct softhca_cqe, smac, 4);
OFF_IS(struct softhca_cqe, timestamp_real_h, 16);
OFF_IS(struct softhca_cqe, timestamp_real_l, 20);
OFF_IS(struct softhca_cqe, flags_rqpn, 24);
OFF_IS(struct softhca_cqe, l4_l3_hdr_type, 29);
OFF_IS(struct softhca_cqe, vlan_info, 30);
OFF_IS(struct softhca_cqe, srqn_uidx, 32);
OFF_IS(struct softhca_cqe, imm_inval_pkey, 36);
OFF_IS(struct softhca_cqe, byte_cnt, 44);
OFF_IS(struct softhca_cqe, timestamp_h, 48);
OFF_IS(struct softhca_cqe, timestamp_l, 52);
OFF_IS(struct softhca_cqe, err_timestamp_h, 40);
OFF_IS(struct softhca_cqe, err_timestamp_l, 44);
OFF_IS(struct softhca_cqe, hw_err_synd, 52);
OFF_IS(struct softhca_cqe, hw_synd_type, 53);
OFF_IS(struct softhca_cqe, vendor_err_synd, 54);
OFF_IS(struct softhca_cqe, syndrome, 55);
OFF_IS(struct softhca_cqe, sop_drop_qpn, 56);
OFF_IS(struct softhca_cqe, wqe_counter, 60);
OFF_IS(struct softhca_cqe, signature, 62);
OFF_IS(struct softhca_cqe, op_own, 63);

OFF_IS(struct softhca_eqe, type, 1);
OFF_IS(struct softhca_eqe, sub_type, 3);
OFF_IS(struct softhca_eqe, data, 32);
OFF_IS(struct softhca_eqe, data.comp.cqn, 56);
OFF_IS(struct softhca_eqe, data.qp.type, 52);
OFF_IS(struct softhca_eqe, data.qp.qpn, 56);
OFF_IS(struct softhca_eqe, data.cq_err.cqn, 32);
OFF_IS(struct softhca_eqe, data.cq_err.syndrome, 43);
OFF_IS(struct softhca_eqe, data.page_fault.mkey, 32);
OFF_IS(struct softhca_eqe, data.page_fault.len, 36);
OFF_IS(struct softhca_eqe, data.page_fault.va_hi, 40);
OFF_IS(struct softhca_eqe, data.page_fault.va_lo, 44);
OFF_IS(struct softhca_eqe, data.page_fault.flags, 48);
OFF_IS(struct softhca_eqe, data.page_fault.qpn, 56);
OFF_IS(struct softhca_eqe, data.port.port, 40);
OFF_IS(struct softhca_eqe, signature, 62);
OFF_IS(struct softhca_eqe, owner, 63);

OFF_IS(struct softhca_qp_dbr, rcv_counter, SOFTHCA_RCV_DBR * 4);
OFF_IS(struct softhca_qp_dbr, snd_counter, SOFTHCA_SND_DBR * 4);
OFF_IS(struct softhca_cq_dbr, set_ci, SOFTHCA_CQ_SET_CI * 4);
OFF_IS(struct softhca_cq_dbr, arm, SOFTHCA_CQ_ARM_DB * 4);
OFF_IS(struct softhca_db_thread, flags, 0);
OFF_IS(struct softhca_device_page, live, 4);

#define SAME_OFF(ours, f, theirs, g) \
	CHECK_EQ(offsetof(ours, f), offsetof(theirs, g))

static void wqe_segments_match_mlx5dv(void)
{
	CHECK_EQ(sizeof(struct softhca_wqe_ctrl_seg), sizeof(struct mlx5_wqe_ctrl_seg));
	SAME_OFF(struct softhca_wqe_ctrl_seg, opmod_idx_opcode, struct mlx5_wqe_ctrl_seg, opmod_idx_opcode);
	SAME_OFF(struct softhca_wqe_ctrl_seg, qpn_ds, struct mlx5_wqe_ctrl_seg, qpn_ds);
	SAME_OFF(struct softhca_wqe_ctrl_seg, signature, struct mlx5_wqe_ctrl_seg, signature);
	SAME_OFF(struct softhca_wqe_ctrl_seg, fm_ce_se, struct mlx5_wqe_ctrl_seg, fm_ce_se);
	SAME_OFF(struct softhca_wqe_ctrl_seg, imm, struct mlx5_wqe_ctrl_seg, imm);
	CHECK_EQ(sizeof(struct softhca_wqe_raddr_seg), sizeof(struct mlx5_wqe_raddr_seg));
	SAME_OFF(struct softhca_wqe_raddr_seg, raddr, struct mlx5_wqe_raddr_seg, raddr);
	SAME_OFF(struct softhca_wqe_raddr_seg, rkey, struct mlx5_wqe_raddr_seg, rkey);
	CHECK_EQ(sizeof(struct softhca_wqe_atomic_seg), sizeof(struct mlx5_wqe_atomic_seg));
	SAME_OFF(struct softhca_wqe_atomic_seg, swap_add, struct mlx5_wqe_atomic_seg, swap_add);
	SAME_OFF(struct softhca_wqe_atomic_seg, compare, struct mlx5_wqe_atomic_seg, compare);
	CHECK_EQ(sizeof(struct softhca_wqe_data_seg), sizeof(struct mlx5_wqe_data_seg));
	SAME_OFF(struct softhca_wqe_data_seg, byte_count, struct mlx5_wqe_data_seg, byte_count);
	SAME_OFF(struct softhca_wqe_data_seg, lkey, struct mlx5_wqe_data_seg, lkey);
	SAME_OFF(struct softhca_wqe_data_seg, addr, struct mlx5_wqe_data_seg, addr);
	CHECK_EQ(sizeof(struct softhca_wqe_inline_seg), sizeof(struct mlx5_wqe_inl_data_seg));
}

/* The datagram segment is mlx5's address vector, field by field. */
static void av_matches_mlx5dv(void)
{
	CHECK_EQ(sizeof(struct softhca_wqe_av), sizeof(struct mlx5_wqe_av));
	CHECK_EQ(sizeof(struct softhca_wqe_av),
		 sizeof(struct mlx5_wqe_datagram_seg));
	SAME_OFF(struct softhca_wqe_av, qkey, struct mlx5_wqe_av, key.qkey.qkey);
	SAME_OFF(struct softhca_wqe_av, dqp_dct, struct mlx5_wqe_av, dqp_dct);
	SAME_OFF(struct softhca_wqe_av, stat_rate_sl, struct mlx5_wqe_av, stat_rate_sl);
	SAME_OFF(struct softhca_wqe_av, fl_mlid, struct mlx5_wqe_av, fl_mlid);
	SAME_OFF(struct softhca_wqe_av, rlid, struct mlx5_wqe_av, rlid);
	SAME_OFF(struct softhca_wqe_av, rmac, struct mlx5_wqe_av, rmac);
	SAME_OFF(struct softhca_wqe_av, tclass, struct mlx5_wqe_av, tclass);
	SAME_OFF(struct softhca_wqe_av, hop_limit, struct mlx5_wqe_av, hop_limit);
	SAME_OFF(struct softhca_wqe_av, grh_gid_fl, struct mlx5_wqe_av, grh_gid_fl);
	SAME_OFF(struct softhca_wqe_av, rgid, struct mlx5_wqe_av, rgid);
	CHECK_EQ(SOFTHCA_AV_EXTENDED, MLX5_EXTENDED_UD_AV);
	/* Control and datagram segment fill one WQEBB: neither wraps. */
	CHECK_EQ(sizeof(struct softhca_wqe_ctrl_seg) + sizeof(struct softhca_wqe_av),
		 SOFTHCA_SEND_WQE_BB);
	CHECK_EQ(SOFTHCA_GRH_SIZE, 40);
	CHECK_EQ(SOFTHCA_QKEY_PRIVILEGED, 0x80000000u);
	/* RoCE L3 header types (kernel MLX5_CQE_ROCE_L3_HEADER_TYPE_*). */
	CHECK_EQ(SOFTHCA_CQE_L3_IPV6, MLX5_CQE_L3_HDR_TYPE_IPV6);
	CHECK_EQ(SOFTHCA_CQE_L3_IPV4, MLX5_CQE_L3_HDR_TYPE_IPV4);
}

static void cqe_matches_mlx5dv(void)
{
	SAME_OFF(struct softhca_cqe, l4_l3_hdr_type, struct mlx5_cqe64, l4_hdr_type_etc);
	SAME_OFF(struct softhca_cqe, vlan_info, struct mlx5_cqe64, vlan_info);
	CHECK_EQ(sizeof(struct softhca_cqe), sizeof(struct mlx5_cqe64));
	SAME_OFF(struct softhca_cqe, flags_rqpn, struct mlx5_cqe64, flags_rqpn);
	SAME_OFF(struct softhca_cqe, srqn_uidx, struct mlx5_cqe64, srqn_uidx);
	SAME_OFF(struct softhca_cqe, imm_inval_pkey, struct mlx5_cqe64, imm_inval_pkey);
	SAME_OFF(struct softhca_cqe, byte_cnt, struct mlx5_cqe64, byte_cnt);
	SAME_OFF(struct softhca_cqe, timestamp_h, struct mlx5_cqe64, timestamp);
	SAME_OFF(struct softhca_cqe, sop_drop_qpn, struct mlx5_cqe64, sop_drop_qpn);
	SAME_OFF(struct softhca_cqe, wqe_counter, struct mlx5_cqe64, wqe_counter);
	SAME_OFF(struct softhca_cqe, signature, struct mlx5_cqe64, signature);
	SAME_OFF(struct softhca_cqe, op_own, struct mlx5_cqe64, op_own);
}

static void err_cqe_matches_mlx5dv(void)
{
	CHECK_EQ(sizeof(struct softhca_cqe), sizeof(struct mlx5_err_cqe));
	SAME_OFF(struct softhca_cqe, srqn_uidx, struct mlx5_err_cqe, srqn);
	SAME_OFF(struct softhca_cqe, vendor_err_synd, struct mlx5_err_cqe, vendor_err_synd);
	SAME_OFF(struct softhca_cqe, syndrome, struct mlx5_err_cqe, syndrome);
	SAME_OFF(struct softhca_cqe, sop_drop_qpn, struct mlx5_err_cqe, s_wqe_opcode_qpn);
	SAME_OFF(struct softhca_cqe, wqe_counter, struct mlx5_err_cqe, wqe_counter);
	SAME_OFF(struct softhca_cqe, op_own, struct mlx5_err_cqe, op_own);
	/* Newer kernels name two of mlx5's reserved bytes; not in mlx5dv.h. */
	CHECK_EQ(offsetof(struct softhca_cqe, hw_err_synd), 52);
	CHECK_EQ(offsetof(struct softhca_cqe, hw_synd_type), 53);
}

static void eqe_offsets(void)
{
	CHECK_EQ(sizeof(struct softhca_eqe), 64);
	CHECK_EQ(offsetof(struct softhca_eqe, type), 1);
	CHECK_EQ(offsetof(struct softhca_eqe, sub_type), 3);
	CHECK_EQ(offsetof(struct softhca_eqe, data.comp.cqn), 56);
	CHECK_EQ(offsetof(struct softhca_eqe, data.qp.type), 52);
	CHECK_EQ(offsetof(struct softhca_eqe, data.qp.qpn), 56);
	CHECK_EQ(offsetof(struct softhca_eqe, data.cq_err.cqn), 32);
	CHECK_EQ(offsetof(struct softhca_eqe, data.cq_err.syndrome), 43);
	CHECK_EQ(offsetof(struct softhca_eqe, data.port.port), 40);
	CHECK_EQ(offsetof(struct softhca_eqe, owner), 63);
	CHECK_EQ(sizeof(((struct softhca_eqe *)0)->data), 28);
}

static void wqe_constants_match_mlx5(void)
{
	CHECK_EQ(SOFTHCA_SEND_WQE_BB, MLX5_SEND_WQE_BB);
	CHECK_EQ(SOFTHCA_SEND_WQE_SHIFT, MLX5_SEND_WQE_SHIFT);
	CHECK_EQ(SOFTHCA_OPCODE_NOP, MLX5_OPCODE_NOP);
	CHECK_EQ(SOFTHCA_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(SOFTHCA_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_WRITE_IMM);
	CHECK_EQ(SOFTHCA_OPCODE_SEND, MLX5_OPCODE_SEND);
	CHECK_EQ(SOFTHCA_OPCODE_SEND_IMM, MLX5_OPCODE_SEND_IMM);
	CHECK_EQ(SOFTHCA_OPCODE_RDMA_READ, MLX5_OPCODE_RDMA_READ);
	CHECK_EQ(SOFTHCA_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_CS);
	CHECK_EQ(SOFTHCA_OPCODE_ATOMIC_FA, MLX5_OPCODE_ATOMIC_FA);
	CHECK_EQ(SOFTHCA_OPCODE_RDMA_WRITE, 0x08);
	CHECK_EQ(SOFTHCA_OPCODE_SEND, 0x0a);
	CHECK_EQ(SOFTHCA_OPCODE_RDMA_READ, 0x10);
	CHECK_EQ(SOFTHCA_WQE_CTRL_CQ_UPDATE, MLX5_WQE_CTRL_CQ_UPDATE);
	CHECK_EQ(SOFTHCA_WQE_CTRL_CQ_UPDATE, 0x08);
	CHECK_EQ(SOFTHCA_WQE_CTRL_SOLICITED, MLX5_WQE_CTRL_SOLICITED);
	CHECK_EQ(SOFTHCA_WQE_CTRL_SOLICITED, 0x02);
	CHECK_EQ(SOFTHCA_FENCE_MODE_SMALL_AND_FENCE, MLX5_WQE_CTRL_FENCE);
	CHECK_EQ(SOFTHCA_FENCE_MODE_INITIATOR_SMALL, MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
	CHECK_EQ(SOFTHCA_INLINE_SEG, MLX5_INLINE_SEG);
	CHECK_EQ(SOFTHCA_INVALID_LKEY, MLX5_INVALID_LKEY);
	CHECK_EQ(SOFTHCA_INVALID_LKEY, 0x100);
	CHECK_EQ(SOFTHCA_RCV_DBR, MLX5_RCV_DBR);
	CHECK_EQ(SOFTHCA_SND_DBR, MLX5_SND_DBR);
}

static void cqe_constants_match_mlx5(void)
{
	CHECK_EQ(SOFTHCA_CQE_OWNER_MASK, MLX5_CQE_OWNER_MASK);
	CHECK_EQ(SOFTHCA_CQE_REQ, MLX5_CQE_REQ);
	CHECK_EQ(SOFTHCA_CQE_RESP_WR_IMM, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(SOFTHCA_CQE_RESP_SEND, MLX5_CQE_RESP_SEND);
	CHECK_EQ(SOFTHCA_CQE_RESP_SEND_IMM, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(SOFTHCA_CQE_REQ_ERR, MLX5_CQE_REQ_ERR);
	CHECK_EQ(SOFTHCA_CQE_RESP_ERR, MLX5_CQE_RESP_ERR);
	CHECK_EQ(SOFTHCA_CQE_INVALID, MLX5_CQE_INVALID);
	CHECK_EQ(SOFTHCA_CQE_INVALID, 0xf);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_MW_BIND_ERR, MLX5_CQE_SYNDROME_MW_BIND_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_BAD_RESP_ERR, MLX5_CQE_SYNDROME_BAD_RESP_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_LOCAL_ACCESS_ERR, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
	CHECK_EQ(SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR, 0x22);
}

static void cq_doorbell_constants_match_mlx5(void)
{
	CHECK_EQ(SOFTHCA_UAR_CQ_DB_OFFSET, MLX5_CQ_DOORBELL);
	CHECK_EQ(SOFTHCA_CQ_DB_REQ_NOT_SOL, MLX5_CQ_DB_REQ_NOT_SOL);
	CHECK_EQ(SOFTHCA_CQ_DB_REQ_NOT, MLX5_CQ_DB_REQ_NOT);
	CHECK_EQ(SOFTHCA_CQ_DB_REQ_NOT_SOL, 1u << 24);
	CHECK_EQ(SOFTHCA_CQ_DB_SN_SHIFT, 28);
	CHECK_EQ(SOFTHCA_CQ_DB_CI_MASK, 0xffffff);
	CHECK_EQ(SOFTHCA_CQ_SET_CI, 0);
	CHECK_EQ(SOFTHCA_CQ_ARM_DB, 1);
}

/* kernel include/linux/mlx5/device.h and mlx5_ifc.h */
static void eqe_constants_match_kernel_mlx5(void)
{
	CHECK_EQ(SOFTHCA_EVENT_TYPE_COMP, 0x00);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_COMM_EST, 0x02);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_SQ_DRAINED, 0x03);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_CQ_ERROR, 0x04);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR, 0x05);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_PORT_CHANGE, 0x09);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR, 0x10);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR, 0x11);
	CHECK_EQ(SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED, 0x13);
	CHECK_EQ(SOFTHCA_CQ_ERROR_SYNDROME_OVERRUN, 0x1);
	CHECK_EQ(SOFTHCA_CQ_ERROR_SYNDROME_ACCESS_VIOL, 0x2);
	CHECK_EQ(SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN, 1);
	CHECK_EQ(SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE, 4);
	CHECK_EQ(SOFTHCA_EQE_OWNER_INIT, 1);
	CHECK_EQ(SOFTHCA_EVENT_QUEUE_TYPE_QP, 0);
	CHECK_EQ(SOFTHCA_EVENT_QUEUE_TYPE_RQ, 1);
	CHECK_EQ(SOFTHCA_EVENT_QUEUE_TYPE_SQ, 2);
}

static void doorbell_area(void)
{
	CHECK_EQ(offsetof(struct softhca_db_thread, flags), 0);
	CHECK_EQ(offsetof(struct softhca_db_thread, pending), 4);
	CHECK_EQ(offsetof(struct softhca_db_area, thread[1]), 64);
	CHECK_EQ(offsetof(struct softhca_db_area, group),
		 SOFTHCA_DB_GROUP_OFFSET);
	CHECK_EQ(offsetof(struct softhca_db_area, slot),
		 SOFTHCA_DB_SLOT_OFFSET);
	CHECK_EQ(SOFTHCA_DB_GROUPS << SOFTHCA_DB_GROUP_SHIFT, SOFTHCA_DB_SLOTS);
	/* Whole 8-byte words of groups and slots, as the engine claims them. */
	CHECK_EQ(SOFTHCA_DB_GROUP_OFFSET % 8, 0);
	CHECK_EQ(SOFTHCA_DB_GROUPS % (8 * SOFTHCA_DB_MAX_THREADS), 0);
	CHECK_EQ(SOFTHCA_ENGINE_NEED_WAKEUP, 1);
}

static const struct tap_test tests[] = {
	{ "wqe_segments_match_mlx5dv", wqe_segments_match_mlx5dv },
	{ "av_matches_mlx5dv", av_matches_mlx5dv },
	{ "cqe_matches_mlx5dv", cqe_matches_mlx5dv },
	{ "err_cqe_matches_mlx5dv", err_cqe_matches_mlx5dv },
	{ "eqe_offsets", eqe_offsets },
	{ "wqe_constants_match_mlx5", wqe_constants_match_mlx5 },
	{ "cqe_constants_match_mlx5", cqe_constants_match_mlx5 },
	{ "cq_doorbell_constants_match_mlx5", cq_doorbell_constants_match_mlx5 },
	{ "eqe_constants_match_kernel_mlx5", eqe_constants_match_kernel_mlx5 },
	{ "doorbell_area", doorbell_area },
};

TAP_MAIN(tests)
