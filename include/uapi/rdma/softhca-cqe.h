/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca CQE decoder, shared by the provider's poll_cq (user/poll.c) and
 * the kernel's (kernel/kverbs.c): one CQE the consumer owns into neutral
 * work completion fields, with its WR found and retired in the QP's
 * struct softhca_wq_wrs (<rdma/softhca-wqe.h>) under the checks that keep
 * a CQE from moving a queue it has no WR in. What a requester CQE reports
 * comes from the opcode table (<rdma/softhca-opcodes.h>), what a CQE
 * opcode means from softhca_cqe_kinds[] below. The caller holds its CQ
 * lock, found the QP by the CQE's QPN, and converts the result to its
 * ibv_wc or ib_wc.
 */
#ifndef SOFTHCA_CQE_H
#define SOFTHCA_CQE_H

#include <linux/types.h>
#include <rdma/softhca-shim.h>
#include <rdma/softhca-enc.h>
#include <rdma/softhca-opcodes.h>
#include <rdma/softhca-queue.h>
#include <rdma/softhca-wqe.h>

/* ---- fields (at the same offsets in good and error CQEs) ---------------- */

static inline __u8 softhca_cqe_opcode(const struct softhca_cqe *cqe)
{
	return cqe->op_own >> SOFTHCA_CQE_OPCODE_SHIFT;
}

static inline __u32 softhca_cqe_qpn(const struct softhca_cqe *cqe)
{
	return __be32_to_cpu(cqe->sop_drop_qpn) & SOFTHCA_24BIT_MASK;
}

/* The WQE opcode a requester CQE (good or error) completes. */
static inline __u8 softhca_cqe_wqe_opcode(const struct softhca_cqe *cqe)
{
	return __be32_to_cpu(cqe->sop_drop_qpn) >> SOFTHCA_CQE_WQE_OPCODE_SHIFT;
}

static inline __u16 softhca_cqe_wqe_counter(const struct softhca_cqe *cqe)
{
	return __be16_to_cpu(cqe->wqe_counter);
}

/* ---- CQE opcodes ---------------------------------------------------------- */

enum {
	SOFTHCA_CQE_WQ_NONE,		/* completes nothing: dropped */
	SOFTHCA_CQE_WQ_SQ,		/* a send WQE, named by wqe_counter */
	SOFTHCA_CQE_WQ_RQ,		/* the oldest posted receive */
};

/* What a CQE opcode (op_own 7:4) says. */
struct softhca_cqe_kind {
	__u8 wq;			/* SOFTHCA_CQE_WQ_* */
	__u8 error;			/* syndrome, vendor_err_synd are set */
	__u8 wc_opcode;			/* responder: SOFTHCA_WC_RECV* */
	__u8 with_imm;			/* responder: imm_inval_pkey is set */
	__u8 with_inv;			/* ... to the rkey it invalidated */
};

static const struct softhca_cqe_kind softhca_cqe_kinds[16] = {
	[SOFTHCA_CQE_REQ]	    = { SOFTHCA_CQE_WQ_SQ, 0, 0, 0 },
	[SOFTHCA_CQE_RESP_WR_IMM]   = { SOFTHCA_CQE_WQ_RQ, 0,
					SOFTHCA_WC_RECV_RDMA_WITH_IMM, 1 },
	[SOFTHCA_CQE_RESP_SEND]	    = { SOFTHCA_CQE_WQ_RQ, 0, SOFTHCA_WC_RECV, 0 },
	[SOFTHCA_CQE_RESP_SEND_IMM] = { SOFTHCA_CQE_WQ_RQ, 0, SOFTHCA_WC_RECV, 1 },
	[SOFTHCA_CQE_RESP_SEND_INV] = { SOFTHCA_CQE_WQ_RQ, 0, SOFTHCA_WC_RECV, 0,
					1 },
	[SOFTHCA_CQE_REQ_ERR]	    = { SOFTHCA_CQE_WQ_SQ, 1, 0, 0 },
	[SOFTHCA_CQE_RESP_ERR]	    = { SOFTHCA_CQE_WQ_RQ, 1, SOFTHCA_WC_RECV, 0 },
};

static inline const struct softhca_cqe_kind *
softhca_cqe_kind(const struct softhca_cqe *cqe)
{
	return &softhca_cqe_kinds[softhca_cqe_opcode(cqe)];
}

/* Work completion status of each error CQE syndrome (0: not one). */
static const __u8 softhca_syndrome_statuses[0x23] = {
	[SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR]	= SOFTHCA_WC_LOC_LEN_ERR,
	[SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR]	= SOFTHCA_WC_LOC_QP_OP_ERR,
	[SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR]	= SOFTHCA_WC_LOC_PROT_ERR,
	[SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR]	= SOFTHCA_WC_WR_FLUSH_ERR,
	[SOFTHCA_CQE_SYNDROME_MW_BIND_ERR]	= SOFTHCA_WC_MW_BIND_ERR,
	[SOFTHCA_CQE_SYNDROME_BAD_RESP_ERR]	= SOFTHCA_WC_BAD_RESP_ERR,
	[SOFTHCA_CQE_SYNDROME_LOCAL_ACCESS_ERR]	= SOFTHCA_WC_LOC_ACCESS_ERR,
	[SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR] = SOFTHCA_WC_REM_INV_REQ_ERR,
	[SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR] = SOFTHCA_WC_REM_ACCESS_ERR,
	[SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR]	= SOFTHCA_WC_REM_OP_ERR,
	[SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR] = SOFTHCA_WC_RETRY_EXC_ERR,
	[SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR] = SOFTHCA_WC_RNR_RETRY_EXC_ERR,
	[SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR] = SOFTHCA_WC_REM_ABORT_ERR,
};

/* The work completion status of an error CQE's syndrome. */
static inline __u32 softhca_syndrome_wc_status(__u8 syndrome)
{
	__u8 status = 0;

	if (syndrome < sizeof(softhca_syndrome_statuses))
		status = softhca_syndrome_statuses[syndrome];
	return status ? status : SOFTHCA_WC_GENERAL_ERR;
}

/* ---- the WR a CQE completes --------------------------------------------- */

/*
 * The WR a requester CQE completes: the one recorded at @wqe_counter's
 * slot, if it is posted and not yet retired (tail <= wqe_head[idx] <
 * head), so the tail never moves back nor past the head. It and every
 * unsignaled WR before it are retired. Returns 0 with *@wr_id set, or -1.
 * (Checking that a WQE really starts at idx would read the SQ ring in
 * poll_cq: +0.4 us on ib_read_lat under TCG, measured.)
 */
static inline int softhca_wrs_retire_sq(struct softhca_wq_wrs *sq,
					__u16 wqe_counter, __u64 *wr_id)
{
	__u32 idx, tail, seq;

	if (!sq || !sq->cnt)
		return -1;
	idx = wqe_counter & (sq->cnt - 1);
	tail = sq->tail;
	seq = sq->wqe_head[idx];
	if (seq - tail >= SOFTHCA_READ_ONCE(sq->head) - tail)
		return -1;
	*wr_id = sq->wrid[idx];
	/* Our reads of the slots before the tail that frees them. */
	SOFTHCA_STORE_RELEASE(&sq->tail, seq + 1);
	return 0;
}

/* The WR a responder CQE completes: the oldest posted receive, if any. */
static inline int softhca_wrs_retire_rq(struct softhca_wq_wrs *rq,
					__u64 *wr_id)
{
	__u32 tail;

	if (!rq || !rq->cnt)
		return -1;
	tail = rq->tail;
	if (tail == SOFTHCA_READ_ONCE(rq->head))
		return -1;
	*wr_id = rq->wrid[tail & (rq->cnt - 1)];
	SOFTHCA_STORE_RELEASE(&rq->tail, tail + 1);
	return 0;
}

/* ---- decoding ------------------------------------------------------------ */

/* A work completion, as both sides' ibv_wc / ib_wc have it. */
struct softhca_wc {
	__u64 wr_id;
	__u32 status;			/* SOFTHCA_WC_* status */
	__u32 opcode;			/* SOFTHCA_WC_* opcode */
	__u32 byte_len;
	__be32 imm;			/* network order, if with_imm */
	__u32 qpn;
	__u32 src_qp;			/* responder */
	__u8 vendor_err;
	__u8 sl;			/* responder */
	__u8 with_imm;
	__u8 with_inv;			/* inv_rkey was invalidated */
	__u32 inv_rkey;
	/* A datagram's responder CQE: the GRH area heads the buffer. */
	__u8 grh;
	__u8 l3;			/* SOFTHCA_CQE_L3_IPV4 / _IPV6 */
	__u8 pkt_type;			/* flags_rqpn 27:24: SOFTHCA_CQE_PKT_* */
	__u8 vlan;			/* vlan_id is valid */
	__u16 vlan_id;
	__u8 smac[6];
	/* The CQ's clocks (CREATE_CQ flags), 0 where it has none. */
	__u64 ts;			/* device clock, ns */
	__u64 ts_real;			/* CLOCK_REALTIME, ns */
};

/*
 * Copy decoded work completion @w into @wc, an ibv_wc or an ib_wc: the
 * fields both have under the same names. @with_imm_flag and @grh_flag are
 * the side's IBV_WC_WITH_IMM / IB_WC_WITH_IMM and IBV_WC_GRH / IB_WC_GRH;
 * the immediate, the QP and the kernel's datagram fields (network header
 * type, source MAC, VLAN) are the caller's, their fields differ. pkey_index
 * is 0: the P_Key table has one entry.
 */
#define SOFTHCA_WC_COPY(wc, w, with_imm_flag, grh_flag)			\
	do {								\
		(wc)->wr_id = (w)->wr_id;				\
		(wc)->status = (w)->status;				\
		(wc)->opcode = (w)->opcode;				\
		(wc)->vendor_err = (w)->vendor_err;			\
		(wc)->byte_len = (w)->byte_len;				\
		(wc)->src_qp = (w)->src_qp;				\
		(wc)->wc_flags = ((w)->with_imm ? (with_imm_flag) : 0) |	\
				 ((w)->grh ? (grh_flag) : 0);		\
		(wc)->pkey_index = 0;					\
		(wc)->slid = 0;						\
		(wc)->sl = (w)->sl;					\
		(wc)->dlid_path_bits = 0;				\
	} while (0)

/*
 * A good requester CQE of opcode @op (NULL: not an opcode): the message
 * length (atomics: 8) and the immediate the HCA echoes for the _IMM
 * opcodes, as mlx5 reports them. An opcode without a work completion is
 * SOFTHCA_WC_GENERAL_ERR.
 */
static inline void softhca_cqe_decode_req(const struct softhca_cqe *cqe,
					  const struct softhca_opcode_info *op,
					  struct softhca_wc *wc)
{
	if (!op || op->wc_opcode == SOFTHCA_WC_NONE) {
		wc->status = SOFTHCA_WC_GENERAL_ERR;
		return;
	}
	if (op->flags & SOFTHCA_OPF_IMM) {
		wc->with_imm = 1;
		wc->imm = cqe->imm_inval_pkey;
	}
	wc->byte_len = op->segs & SOFTHCA_SEG_ATOMIC ? SOFTHCA_ATOMIC_SIZE :
		       __be32_to_cpu(cqe->byte_cnt);
}

/*
 * What a datagram's CQE says of its packet (the GRH area in the buffer):
 * the L3 header type, the source MAC, the VLAN and, as on Ethernet, the SL
 * from its priority.
 */
static inline void softhca_cqe_decode_datagram(const struct softhca_cqe *cqe,
					       __u32 rqpn,
					       struct softhca_wc *wc)
{
	__u16 vlan = __be16_to_cpu(cqe->vlan_info);

	wc->grh = 1;
	wc->l3 = (rqpn >> SOFTHCA_CQE_L3_SHIFT) & SOFTHCA_CQE_L3_MASK;
	wc->pkt_type = (rqpn >> SOFTHCA_CQE_PKT_SHIFT) & SOFTHCA_CQE_PKT_MASK;
	memcpy(wc->smac, cqe->smac, sizeof(wc->smac));
	if (cqe->l4_l3_hdr_type & SOFTHCA_CQE_VLAN_PRESENT) {
		wc->vlan = 1;
		wc->vlan_id = vlan & SOFTHCA_CQE_VLAN_VID_MASK;
		wc->sl = vlan >> SOFTHCA_CQE_VLAN_PCP_SHIFT;
	}
}

/* A good responder CQE: length, immediate, source QPN, datagram fields. */
static inline void softhca_cqe_decode_resp(const struct softhca_cqe *cqe,
					   const struct softhca_cqe_kind *k,
					   struct softhca_wc *wc)
{
	__u32 rqpn = __be32_to_cpu(cqe->flags_rqpn);

	if (k->with_imm) {
		wc->with_imm = 1;
		wc->imm = cqe->imm_inval_pkey;
	}
	if (k->with_inv) {
		wc->with_inv = 1;
		wc->inv_rkey = __be32_to_cpu(cqe->imm_inval_pkey);
	}
	wc->byte_len = __be32_to_cpu(cqe->byte_cnt);
	wc->src_qp = rqpn & SOFTHCA_24BIT_MASK;
	if (((rqpn >> SOFTHCA_CQE_GRH_SHIFT) & SOFTHCA_CQE_GRH_MASK) ==
	    SOFTHCA_CQE_GRH_IN_BUFFER)
		softhca_cqe_decode_datagram(cqe, rqpn, wc);
}

static inline __u64 softhca_be_pair(__be32 h, __be32 l)
{
	return (__u64)__be32_to_cpu(h) << 32 | __be32_to_cpu(l);
}

/*
 * The CQE's timestamps, 0 unless its CQ was created with them: the device
 * clock sits where the syndromes leave room (an error CQE's at 40), the
 * wall clock at 16 in both kinds.
 */
static inline void softhca_cqe_decode_ts(const struct softhca_cqe *cqe,
					 const struct softhca_cqe_kind *k,
					 struct softhca_wc *wc)
{
	wc->ts = k->error ?
		 softhca_be_pair(cqe->err_timestamp_h, cqe->err_timestamp_l) :
		 softhca_be_pair(cqe->timestamp_h, cqe->timestamp_l);
	wc->ts_real = softhca_be_pair(cqe->timestamp_real_h,
				      cqe->timestamp_real_l);
}

/*
 * Decode @cqe, which the consumer owns (after its read barrier), into @wc
 * and retire its WR (seed-map.md §5.4). @sq and @rq are the WR records of the
 * CQE's QP's queues that complete on this CQ, NULL for one that does not;
 * @srq the QP's SRQ (its receives then complete there, by WQE index).
 * Returns 0, or -1 when no outstanding WR matches: the caller drops the
 * CQE (consumes it, returns nothing), which would otherwise block the CQ
 * for good or move a queue's tail over WRs still posted. For an error CQE
 * the opcode is a best effort and byte_len 0 (ibv_poll_cq(3)).
 */
static inline int softhca_cqe_decode_srq(const struct softhca_cqe *cqe,
					 struct softhca_wq_wrs *sq,
					 struct softhca_wq_wrs *rq,
					 struct softhca_srq_wrs *srq,
					 struct softhca_wc *wc)
{
	const struct softhca_cqe_kind *k = softhca_cqe_kind(cqe);
	const struct softhca_opcode_info *op;

	wc->status = SOFTHCA_WC_SUCCESS;
	wc->byte_len = 0;
	wc->imm = 0;
	wc->qpn = softhca_cqe_qpn(cqe);
	wc->src_qp = 0;
	wc->vendor_err = 0;
	wc->sl = 0;
	wc->with_imm = 0;
	wc->with_inv = 0;
	wc->inv_rkey = 0;
	wc->grh = 0;
	wc->pkt_type = 0;
	wc->vlan = 0;
	if (k->wq == SOFTHCA_CQE_WQ_SQ) {
		if (softhca_wrs_retire_sq(sq, softhca_cqe_wqe_counter(cqe),
					  &wc->wr_id))
			return -1;
		op = softhca_opcode_info(softhca_cqe_wqe_opcode(cqe));
		wc->opcode = op && op->wc_opcode != SOFTHCA_WC_NONE ?
			     (__u32)op->wc_opcode : SOFTHCA_WC_SEND;
		if (!k->error)
			softhca_cqe_decode_req(cqe, op, wc);
	} else if (k->wq == SOFTHCA_CQE_WQ_RQ) {
		if (srq ? softhca_wrs_retire_srq(srq,
						 softhca_cqe_wqe_counter(cqe),
						 &wc->wr_id) :
			  softhca_wrs_retire_rq(rq, &wc->wr_id))
			return -1;
		wc->opcode = k->wc_opcode;
		if (!k->error)
			softhca_cqe_decode_resp(cqe, k, wc);
	} else {
		return -1;
	}
	if (k->error) {
		wc->status = softhca_syndrome_wc_status(cqe->syndrome);
		wc->vendor_err = cqe->vendor_err_synd;
	}
	softhca_cqe_decode_ts(cqe, k, wc);
	return 0;
}

/* A QP without an SRQ. */
static inline int softhca_cqe_decode(const struct softhca_cqe *cqe,
				     struct softhca_wq_wrs *sq,
				     struct softhca_wq_wrs *rq,
				     struct softhca_wc *wc)
{
	return softhca_cqe_decode_srq(cqe, sq, rq, NULL, wc);
}

#endif /* SOFTHCA_CQE_H */
