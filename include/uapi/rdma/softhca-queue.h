/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca queue formats: what the provider writes and the HCA model reads
 * (and the reverse) in mmapped memory. mlx5 layouts, big-endian fields.
 *
 * Every structure here keeps the byte offsets of its mlx5 counterpart for the
 * fields it keeps; unused mlx5 fields are reserved and must be written as 0.
 * Offsets are in comments and checked by tests/unit/queue_layout.c. See
 * Documentation/queue-formats.md for who writes and who reads each one.
 */
#ifndef SOFTHCA_QUEUE_H
#define SOFTHCA_QUEUE_H

#include <linux/types.h>

/* UAR page layout (one page per user context). */
#define SOFTHCA_UAR_CQ_DB_OFFSET	0x20	/* 64-bit CQ arm doorbell */
#define SOFTHCA_UAR_BF_OFFSET		0x800	/* first BlueFlame buffer */
#define SOFTHCA_UAR_BF_SIZE		0x100	/* each of the two buffers */

/* ------------------------------------------------------------------------
 * Send queue: WQEs of 1..16 basic blocks (WQEBB) of 64 bytes, made of
 * 16-byte data-size units (DS). A send WQE starts on a WQEBB boundary with a
 * control segment; the following segments may wrap to the start of the ring.
 */
#define SOFTHCA_SEND_WQE_BB		64
#define SOFTHCA_SEND_WQE_SHIFT		6
#define SOFTHCA_DS_SIZE			16
#define SOFTHCA_DS_SHIFT		4
#define SOFTHCA_WQE_MAX_DS		0x3f	/* ds is a 6-bit field */

/* Send WQE opcodes (ctrl opmod_idx_opcode bits 7:0): <rdma/softhca-opcodes.h>. */

/* ctrl.opmod_idx_opcode: opmod 31:24, WQE index (cur_post & 0xffff) 23:8,
 * opcode 7:0. ctrl.qpn_ds: QPN 31:8, DS count 5:0 (the whole WQE, ctrl
 * included).
 */
#define SOFTHCA_WQE_CTRL_OPMOD_SHIFT	24
#define SOFTHCA_WQE_CTRL_IDX_SHIFT	8
#define SOFTHCA_WQE_CTRL_IDX_MASK	0x00ffff00
#define SOFTHCA_WQE_CTRL_OPCODE_MASK	0xff
#define SOFTHCA_WQE_CTRL_QPN_SHIFT	8
#define SOFTHCA_WQE_CTRL_DS_MASK	0x3f

/* ctrl.fm_ce_se: fence mode 7:5, completion mode 3:2, solicited 1. */
#define SOFTHCA_WQE_CTRL_SOLICITED	0x02	/* 1 << 1 */
#define SOFTHCA_WQE_CTRL_CQ_UPDATE	0x08	/* 2 << 2: write a CQE (signaled) */
#define SOFTHCA_WQE_CTRL_CE_MASK	0x0c	/* 0: CQE on error only */
#define SOFTHCA_FENCE_MODE_MASK		0xe0
#define SOFTHCA_FENCE_MODE_NONE		0x00	/* 0 << 5 */
#define SOFTHCA_FENCE_MODE_INITIATOR_SMALL 0x20	/* 1 << 5 */
#define SOFTHCA_FENCE_MODE_FENCE	0x40	/* 2 << 5 */
#define SOFTHCA_FENCE_MODE_STRONG_ORDERING 0x60	/* 3 << 5 */
#define SOFTHCA_FENCE_MODE_SMALL_AND_FENCE 0x80	/* 4 << 5: IBV_SEND_FENCE */

/* Control segment: first 16 bytes of every send WQE. */
struct softhca_wqe_ctrl_seg {
	__be32	opmod_idx_opcode;	/* 0 */
	__be32	qpn_ds;			/* 4 */
	__u8	signature;		/* 8: 0, or see SOFTHCA_WQE_SIG */
	__u8	rsvd9[2];		/* 9 */
	__u8	fm_ce_se;		/* 11 */
	__be32	imm;			/* 12: immediate, network order */
};

/*
 * UMR segment of a REG_MR WQE (opcode UMR, kernel QPs only), after ctrl;
 * then one data segment pointing at the page list: npages big-endian
 * addresses of pages of 1 << page_shift bytes, in kernel memory (lkey
 * 0). mlx5's UMR is richer; this is the part fast registration uses.
 */
struct softhca_wqe_umr_seg {
	__be32	mkey;			/* 0: the key to register (its byte too) */
	__be32	access;			/* 4: SOFTHCA_ACCESS_* */
	__be64	iova;			/* 8 */
	__be64	length;			/* 16 */
	__be32	page_shift;		/* 24 */
	__be32	npages;			/* 28 */
};

#define SOFTHCA_UMR_DS			4	/* ctrl, UMR (2), list pointer */

/*
 * Bind segment of a BIND_MW WQE (ibv_bind_mw, IBV_WR_BIND_MW), after
 * ctrl: the window's new key (index and key byte), the MR it binds to
 * and the range of that MR's address space, the window's rights. A
 * length of 0 unbinds a type 1 window. mlx5 binds with a UMR WQE; softhca
 * keeps mlx5's older BIND_MW opcode so the opcode table has one WR a row.
 */
struct softhca_wqe_bind_seg {
	__be32	mw_key;			/* 0: the window's new key */
	__be32	mr_lkey;		/* 4: the MR's lkey */
	__be64	addr;			/* 8: in the MR's address space */
	__be64	length;			/* 16 */
	__be32	access;			/* 24: SOFTHCA_ACCESS_REMOTE_* */
	__be32	flags;			/* 28: SOFTHCA_BIND_* */
};

#define SOFTHCA_BIND_ZERO_BASED		(1U << 0)	/* window starts at 0 */
#define SOFTHCA_BIND_DS			3	/* ctrl, bind (2) */

/*
 * XRC segment (mlx5_wqe_xrc_seg): every WQE of an XRC initiator, right
 * after ctrl. The target's SRQ the message goes to (the XRCETH's XRCSRQ).
 */
struct softhca_wqe_xrc_seg {
	__be32	xrc_srqn;		/* 0: 24 bits */
	__u8	reserved[12];		/* 4 */
};

/* Remote address segment: RDMA READ/WRITE and atomics, after ctrl. */
struct softhca_wqe_raddr_seg {
	__be64	raddr;			/* 0 */
	__be32	rkey;			/* 8 */
	__be32	reserved;		/* 12 */
};

/* Atomic segment: after the raddr segment of ATOMIC_CS / ATOMIC_FA.
 * CS: swap_add = swap value, compare = compare value.
 * FA: swap_add = value to add, compare = 0.
 */
struct softhca_wqe_atomic_seg {
	__be64	swap_add;		/* 0 */
	__be64	compare;		/* 8 */
};
#define SOFTHCA_ATOMIC_SIZE		8	/* bytes of an atomic's result */

/* Data pointer segment: one non-empty scatter/gather element. */
struct softhca_wqe_data_seg {
	__be32	byte_count;		/* 0 */
	__be32	lkey;			/* 4 */
	__be64	addr;			/* 8 */
};

/*
 * Datagram segment (UD): right after the control segment of every send WQE
 * of a datagram QP, the address vector (mlx5_wqe_av / mlx5_wqe_datagram_seg):
 * an address handle's AV with the WR's remote QPN and Q_Key. Control and
 * datagram segment fill the first WQEBB exactly, so neither wraps.
 */
struct softhca_wqe_av {
	__be32	qkey;			/* 0: the WR's Q_Key; bit 31: the QP's own */
	__be32	reserved4;		/* 4 */
	__be32	dqp_dct;		/* 8: SOFTHCA_AV_EXTENDED | remote QPN 23:0 */
	__u8	stat_rate_sl;		/* 12: static rate 7:4, SL 3:1 (RoCE) */
	__u8	fl_mlid;		/* 13: 0 (InfiniBand source path bits) */
	__be16	rlid;			/* 14: RoCE v2: the UDP source port */
	__u8	reserved16[4];		/* 16 */
	__u8	rmac[6];		/* 20: destination MAC */
	__u8	tclass;			/* 26: traffic class */
	__u8	hop_limit;		/* 27 */
	__be32	grh_gid_fl;		/* 28: GRH 30, SGID index 27:20, flow label 19:0 */
	__u8	rgid[16];		/* 32: destination GID */
};
#define SOFTHCA_AV_DS			3	/* 48 bytes */
#define SOFTHCA_AV_EXTENDED		0x80000000U	/* dqp_dct: a full AV */
#define SOFTHCA_AV_GRH			(1U << 30)
#define SOFTHCA_AV_SGID_SHIFT		20
#define SOFTHCA_AV_SGID_MASK		0xff
#define SOFTHCA_AV_FLOW_LABEL_MASK	0xfffff
#define SOFTHCA_AV_SL_SHIFT		1
#define SOFTHCA_AV_SL_MASK		0x7
/*
 * A Q_Key with bit 31 set is a controlled (privileged) one: in a WR it
 * stands for the sending QP's own Q_Key (IBA 10.2.5); only QPs the kernel
 * created may own one (the GSI QP's is 0x80010000).
 */
#define SOFTHCA_QKEY_PRIVILEGED		0x80000000U

/* Inline data segment: this 4-byte header, then byte_count & ~INLINE bytes
 * of payload, padded to a DS boundary; the payload may wrap to the start of
 * the ring. Present only when the inline payload is not empty.
 */
struct softhca_wqe_inline_seg {
	__be32	byte_count;		/* 0: length | SOFTHCA_INLINE_SEG */
};
#define SOFTHCA_INLINE_SEG		0x80000000U

/*
 * WQE signature (optional, per QP): ~(XOR of every byte covered), computed
 * with the signature byte 0. The XOR of all covered bytes including the
 * stored signature is therefore 0xff.
 * Send WQE: covers ds * 16 bytes from the control segment (following the
 * ring wrap), signature in ctrl.signature.
 * Receive WQE: covers the whole RQ WQE stride, plus the 4 bytes of the QPN
 * and the 2 bytes of the WQE's 16-bit index, signature in sig.signature.
 */

/* ------------------------------------------------------------------------
 * Receive queue: fixed-stride WQEs (stride a power of two >= 16 bytes):
 * [optional signature segment] then data pointer segments. When fewer than
 * the stride's capacity are used, a sentinel data segment (byte_count 0,
 * lkey SOFTHCA_INVALID_LKEY, addr 0) ends the list.
 */
#define SOFTHCA_INVALID_LKEY		0x100

struct softhca_rwqe_sig {
	__u8	rsvd0[4];		/* 0 */
	__u8	signature;		/* 4 */
	__u8	rsvd5[11];		/* 5 */
};

/*
 * SRQ WQE (mlx5_wqe_srq_next_seg + data segments): a 16-byte next segment,
 * then data segments up to the sentinel or the end of the stride (a power
 * of two >= 32 bytes). The free WQEs form a list through next_wqe_index,
 * which the provider keeps; the HCA takes WQEs from its own head, starting
 * at WQE 0, following next_wqe_index of each WQE it takes, as many as the
 * SRQ doorbell record's counter says were posted (queue-formats.md).
 */
struct softhca_srq_next_seg {
	__u8	rsvd0[2];		/* 0 */
	__be16	next_wqe_index;		/* 2 */
	__u8	signature;		/* 4: not checked */
	__u8	rsvd5[11];		/* 5 */
};

/* ------------------------------------------------------------------------
 * Completion queue entry, 64 bytes (mlx5 cqe64). The HCA writes it, last
 * op_own (after a write barrier); the provider reads op_own first.
 */
#define SOFTHCA_CQE_SIZE		64

/* op_own: opcode 7:4, format 3:2 (always 0 here), solicited event 1,
 * owner 0.
 */
#define SOFTHCA_CQE_OWNER_MASK		0x01
#define SOFTHCA_CQE_SE			0x02
#define SOFTHCA_CQE_FORMAT_MASK		0x0c
#define SOFTHCA_CQE_OPCODE_SHIFT	4

/* CQE opcodes (op_own 7:4) */
#define SOFTHCA_CQE_REQ			0x0
#define SOFTHCA_CQE_RESP_WR_IMM		0x1
#define SOFTHCA_CQE_RESP_SEND		0x2
#define SOFTHCA_CQE_RESP_SEND_IMM	0x3
#define SOFTHCA_CQE_RESP_SEND_INV	0x4	/* imm_inval_pkey: the rkey */
#define SOFTHCA_CQE_REQ_ERR		0xd
#define SOFTHCA_CQE_RESP_ERR		0xe
#define SOFTHCA_CQE_INVALID		0xf	/* initial value of every CQE */

/* Error CQE syndromes (mlx5 numbering) */
#define SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR		0x01
#define SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR		0x02
#define SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR		0x04
#define SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR		0x05
#define SOFTHCA_CQE_SYNDROME_MW_BIND_ERR		0x06
#define SOFTHCA_CQE_SYNDROME_BAD_RESP_ERR		0x10
#define SOFTHCA_CQE_SYNDROME_LOCAL_ACCESS_ERR		0x11
#define SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR	0x12
#define SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR		0x13
#define SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR		0x14
#define SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR	0x15
#define SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR		0x16
#define SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR		0x22

/* 24-bit QPN/CQN/index fields */
#define SOFTHCA_24BIT_MASK		0x00ffffff
/* sop_drop_qpn / s_wqe_opcode_qpn: WQE opcode 31:24, QPN 23:0 */
#define SOFTHCA_CQE_WQE_OPCODE_SHIFT	24
/*
 * flags_rqpn (responder): GRH 29:28 (SOFTHCA_CQE_GRH_IN_BUFFER: the
 * receive buffer starts with the 40-byte GRH area, as every datagram's
 * does), the RoCE packet type 27:24, remote (source) QPN 23:0. The packet
 * type is a ConnectX's: bit 27 set for a RoCE v2 packet (a UDP header;
 * softhca's datagrams all are), the L3 header type in 25:24. mlx5's
 * provider reports the four bits as the work completion's SL, and UCX's
 * UD transport reads the L3 type there to find the destination address in
 * the GRH area; ib_core's consumers get the SL from the VLAN priority
 * (vlan_info, 0 without a VLAN) and the type as the network header type.
 */
#define SOFTHCA_CQE_GRH_SHIFT		28
#define SOFTHCA_CQE_GRH_MASK		0x3
#define SOFTHCA_CQE_GRH_IN_BUFFER	1
#define SOFTHCA_CQE_PKT_SHIFT		24
#define SOFTHCA_CQE_PKT_MASK		0xf
#define SOFTHCA_CQE_PKT_UDP		0x8	/* RoCE v2 */
#define SOFTHCA_CQE_L3_SHIFT		24
#define SOFTHCA_CQE_L3_MASK		0x3
#define SOFTHCA_CQE_L3_IPV6		1	/* MLX5_CQE_ROCE_L3_HEADER_TYPE_* */
#define SOFTHCA_CQE_L3_IPV4		2
/* l4_l3_hdr_type bit 0: vlan_info holds the VLAN tag (PCP 15:13, VID 11:0). */
#define SOFTHCA_CQE_VLAN_PRESENT	0x01
#define SOFTHCA_CQE_VLAN_PCP_SHIFT	13
#define SOFTHCA_CQE_VLAN_VID_MASK	0x0fff

/*
 * The GRH area at the head of every datagram's receive buffer: RoCE v2
 * over IPv6 puts the IPv6 header in all 40 bytes, over IPv4 the IPv4
 * header in the last 20 (the first 20 are zero). byte_cnt counts it.
 */
#define SOFTHCA_GRH_SIZE		40
#define SOFTHCA_GRH_IPV4_OFFSET		20

/*
 * Bytes 36..55 are read one way in a good CQE and another in an error CQE
 * (opcode REQ_ERR / RESP_ERR), as in mlx5_cqe64 / mlx5_err_cqe.
 */
struct softhca_cqe {
	__u8	rsvd0[4];		/* 0 */
	__u8	smac[6];		/* 4: datagram: the source MAC (softhca's) */
	__u8	rsvd10[6];		/* 10 */
	/* 16: CQ created with the wall clock: CLOCK_REALTIME ns (good and
	 * error CQEs), the instant of the device timestamp below
	 */
	__be32	timestamp_real_h;	/* 16 */
	__be32	timestamp_real_l;	/* 20 */
	__be32	flags_rqpn;		/* 24: responder: GRH, L3 type, source QPN */
	__u8	hds_ip_ext;		/* 28 */
	__u8	l4_l3_hdr_type;		/* 29: SOFTHCA_CQE_VLAN_PRESENT */
	__be16	vlan_info;		/* 30: datagram: PCP, VID */
	__be32	srqn_uidx;		/* 32 */
	union {
		struct {
			__be32	imm_inval_pkey;	/* 36: immediate, network order */
			__u8	rsvd40[4];	/* 40 */
			__be32	byte_cnt;	/* 44: bytes transferred */
			/* 48: CQ created with timestamps: the device clock */
			__be32	timestamp_h;	/* 48 */
			__be32	timestamp_l;	/* 52 */
		};
		struct {
			__u8	rsvd36[4];	/* 36 */
			/* 40: the device clock (48..55 hold the syndromes) */
			__be32	err_timestamp_h; /* 40 */
			__be32	err_timestamp_l; /* 44 */
			__u8	rsvd48[4];	/* 48 */
			__u8	hw_err_synd;	/* 52 */
			__u8	hw_synd_type;	/* 53 */
			__u8	vendor_err_synd; /* 54: -> ibv_wc.vendor_err */
			__u8	syndrome;	/* 55: SOFTHCA_CQE_SYNDROME_* */
		};
	};
	__be32	sop_drop_qpn;		/* 56: WQE opcode (requester), QPN */
	__be16	wqe_counter;		/* 60: requester: index of the WQE */
	__u8	signature;		/* 62 */
	__u8	op_own;			/* 63: opcode, se, owner */
};

/* ------------------------------------------------------------------------
 * Event queue entry, 64 bytes (mlx5_eqe). Written by the HCA model, read by
 * the kernel driver (EQs are not mapped to user space).
 */
#define SOFTHCA_EQE_SIZE		64
#define SOFTHCA_EQE_OWNER_MASK		0x01
#define SOFTHCA_EQE_OWNER_INIT		0x01	/* every EQE before the first lap */

/* EQE types (mlx5 numbering) */
#define SOFTHCA_EVENT_TYPE_COMP			0x00	/* data.comp.cqn */
#define SOFTHCA_EVENT_TYPE_COMM_EST		0x02	/* data.qp.qpn */
#define SOFTHCA_EVENT_TYPE_SQ_DRAINED		0x03	/* data.qp.qpn */
#define SOFTHCA_EVENT_TYPE_CQ_ERROR		0x04	/* data.cq_err */
#define SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR	0x05	/* QP fatal; data.qp */
#define SOFTHCA_EVENT_TYPE_PORT_CHANGE		0x09	/* data.port, sub_type */
#define SOFTHCA_EVENT_TYPE_PAGE_FAULT		0x0c	/* data.page_fault */
#define SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR	0x10	/* data.qp.qpn */
#define SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR	0x11	/* data.qp.qpn */
#define SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED	0x13	/* data.qp.qpn */
#define SOFTHCA_EVENT_TYPE_SRQ_CATAS_ERROR	0x12	/* data.qp.qpn: SRQN */
#define SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT		0x14	/* data.qp.qpn: SRQN */

/* data.qp.type */
#define SOFTHCA_EVENT_QUEUE_TYPE_QP	0
#define SOFTHCA_EVENT_QUEUE_TYPE_RQ	1
#define SOFTHCA_EVENT_QUEUE_TYPE_SQ	2
#define SOFTHCA_EVENT_QUEUE_TYPE_SRQ	3	/* data.qp.qpn is an SRQN */

/* PAGE_FAULT data.page_fault.flags */
#define SOFTHCA_PAGE_FAULT_RESPONDER	0x01	/* else the requester's SGEs */
#define SOFTHCA_PAGE_FAULT_WRITE	0x02	/* the access writes the pages */

/* CQ_ERROR syndromes */
#define SOFTHCA_CQ_ERROR_SYNDROME_OVERRUN	0x01
#define SOFTHCA_CQ_ERROR_SYNDROME_ACCESS_VIOL	0x02

/* PORT_CHANGE sub_type; the port number is in data.port.port bits 7:4 */
#define SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN	1
#define SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE	4
#define SOFTHCA_EQE_PORT_SHIFT			4

struct softhca_eqe {
	__u8	rsvd0;			/* 0 */
	__u8	type;			/* 1: SOFTHCA_EVENT_TYPE_* */
	__u8	rsvd2;			/* 2 */
	__u8	sub_type;		/* 3 */
	__be32	rsvd4[7];		/* 4 */
	union {				/* 32..59 */
		__be32	raw[7];
		struct {
			__be32	rsvd[6];
			__be32	cqn;	/* 56: 24-bit CQN */
		} comp;
		struct {
			__be32	rsvd[5];
			__u8	type;	/* 52: SOFTHCA_EVENT_QUEUE_TYPE_* */
			__u8	rsvd53[3];
			__be32	qpn;	/* 56: 24-bit QPN */
		} qp;
		struct {
			__be32	cqn;	/* 32: 24-bit CQN */
			__u8	rsvd36[7];
			__u8	syndrome; /* 43: SOFTHCA_CQ_ERROR_SYNDROME_* */
			__be32	rsvd44[4];
		} cq_err;
		struct {
			__u8	rsvd32[8];
			__u8	port;	/* 40: port number << 4 */
			__u8	rsvd41[19];
		} port;
		struct {
			__be32	mkey;	/* 32: the MKey that lacks pages */
			__be32	len;	/* 36: bytes from va on */
			__be32	va_hi;	/* 40: the first byte missing */
			__be32	va_lo;	/* 44 (4-byte fields: the EQE's alignment) */
			__u8	flags;	/* 48: SOFTHCA_PAGE_FAULT_* */
			__u8	rsvd49[7];
			__be32	qpn;	/* 56: 24-bit QPN */
		} page_fault;
	} data;
	__be16	rsvd60;			/* 60 */
	__u8	signature;		/* 62 */
	__u8	owner;			/* 63: bit 0 */
};

/* ------------------------------------------------------------------------
 * Doorbell records: host memory the provider writes and the HCA polls
 * (design.md §5: the DBR is the truth, a UAR store is only the wake-up).
 */

/* Per QP: 16-bit producer counters in the low half of a big-endian word.
 * rcv_counter = rq.head & 0xffff (RQ WQEs posted),
 * snd_counter = sq.cur_post & 0xffff (WQEBBs posted).
 */
#define SOFTHCA_RCV_DBR			0
#define SOFTHCA_SND_DBR			1
#define SOFTHCA_WQ_DBR_MASK		0xffff
struct softhca_qp_dbr {
	__be32	rcv_counter;		/* 0 */
	__be32	snd_counter;		/* 4 */
};

/*
 * Per SRQ: counter = WQEs posted & 0xffff (free-running), the low half of
 * a big-endian word as a QP's rcv_counter.
 */
struct softhca_srq_dbr {
	__be32	counter;		/* 0 */
	__be32	rsvd;			/* 4 */
};

/* Per CQ: set_ci = consumer index & 0xffffff; arm = the last arm word. */
#define SOFTHCA_CQ_SET_CI		0
#define SOFTHCA_CQ_ARM_DB		1
struct softhca_cq_dbr {
	__be32	set_ci;			/* 0 */
	__be32	arm;			/* 4 */
};

/*
 * CQ arm word (ibv_req_notify_cq): arm_sn & 3 at 29:28, command at 27:24,
 * consumer index & 0xffffff at 23:0. The provider writes it to
 * softhca_cq_dbr.arm, then stores (arm word << 32 | CQN) as one big-endian
 * 64-bit value at SOFTHCA_UAR_CQ_DB_OFFSET.
 */
#define SOFTHCA_CQ_DB_SN_SHIFT		28
#define SOFTHCA_CQ_DB_SN_MASK		0x3
#define SOFTHCA_CQ_DB_CMD_SHIFT		24
#define SOFTHCA_CQ_DB_CMD_MASK		0x0f000000
#define SOFTHCA_CQ_DB_REQ_NOT_SOL	0x01000000	/* solicited only */
#define SOFTHCA_CQ_DB_REQ_NOT		0x00000000	/* next completion */
/* The arm word CREATE_CQ leaves in the record: not armed yet. */
#define SOFTHCA_CQ_DB_CMD_NONE		0x0f000000
#define SOFTHCA_CQ_DB_CI_MASK		0x00ffffff

/* ------------------------------------------------------------------------
 * Doorbell area (design.md §10): one per UAR, i.e. per user context, mapped
 * read-write by the provider; host byte order, a software handshake rather
 * than a device format. It tells the engine WHERE to look; the doorbell
 * records stay the truth, and everything here is an untrusted hint.
 *
 * Every QP and CQ of the context has a doorbell slot (CREATE_QP / CREATE_CQ
 * return it) served by one engine thread (the slot's range). After a
 * doorbell record store the provider stores, in this order, each with
 * release semantics:
 *   slot[s] = 1; group[s / 64] = 1; thread[t].pending = 1;
 * then a full barrier, then loads thread[t].flags and makes one wake-up
 * call only if SOFTHCA_ENGINE_NEED_WAKEUP is set. The engine claims a hint
 * by exchanging the byte (or the word it is in) with 0, then reads the
 * doorbell record. Before it stops watching an area it sets NEED_WAKEUP in
 * thread[t].flags, issues a full barrier and looks at thread[t].pending
 * again: either it sees the hint, or the provider sees the flag.
 *
 * A CQ's slot is rung only by an arm that finds CQEs already waiting (a
 * CQE written later is checked against the arm word by the CQE writer).
 */
#define SOFTHCA_ENGINE_NEED_WAKEUP	(1U << 0)

#define SOFTHCA_DB_MAX_THREADS		8	/* engine threads at most */
#define SOFTHCA_DB_SLOTS		32768	/* QPs and CQs of one area */
#define SOFTHCA_DB_GROUP_SHIFT		6	/* 64 slots per group byte */
#define SOFTHCA_DB_GROUPS		(SOFTHCA_DB_SLOTS >> SOFTHCA_DB_GROUP_SHIFT)

/* One engine thread's line: written by the provider (pending) and the
 * engine (flags); the provider reads flags right after writing pending.
 */
struct softhca_db_thread {
	__u32	flags;			/* 0: SOFTHCA_ENGINE_*, engine-written */
	__u8	pending;		/* 4: some group byte of this thread set */
	__u8	rsvd5[59];		/* 5 */
};

#define SOFTHCA_DB_GROUP_OFFSET		0x200
#define SOFTHCA_DB_SLOT_OFFSET		0x1000
#define SOFTHCA_DB_AREA_SIZE		(SOFTHCA_DB_SLOT_OFFSET + SOFTHCA_DB_SLOTS)

struct softhca_db_area {
	struct softhca_db_thread thread[SOFTHCA_DB_MAX_THREADS];	/* 0 */
	__u8	group[SOFTHCA_DB_GROUPS];	/* 0x200 */
	__u8	rsvd[SOFTHCA_DB_SLOT_OFFSET - SOFTHCA_DB_GROUP_OFFSET -
		     SOFTHCA_DB_GROUPS];	/* 0x400 */
	__u8	slot[SOFTHCA_DB_SLOTS];		/* 0x1000 */
};

/* ------------------------------------------------------------------------
 * Device page: one page per device, mapped read-only into every context.
 * live is SOFTHCA_DEVICE_LIVE from power-on and never changes. When the
 * device goes away under a context (disassociate) the kernel replaces the
 * context's mapping of this page with the zero page, where live reads 0:
 * so the provider's data path learns that the device is gone without a
 * system call. (No word of the doorbell area would do: after a disassociate
 * every writable mapping of the context shares one writable dummy page.)
 */
#define SOFTHCA_DEVICE_LIVE		0x4c495645	/* "LIVE" */
struct softhca_device_page {
	__u32	reserved;		/* 0 */
	__u32	live;			/* 4: SOFTHCA_DEVICE_LIVE */
};

#endif /* SOFTHCA_QUEUE_H */
