/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca WQE builder, shared by the provider (user/send.c, wr.c, recv.c)
 * and the kernel's own verbs (kernel/kverbs.c): one send WQE from a
 * neutral descriptor into an SQ ring, following the ring wrap; one receive
 * WQE into its slot; their signatures; the address vector of an address
 * handle (datagram QPs); and the per-slot record of posted
 * WRs that the CQE decoder (<rdma/softhca-cqe.h>) looks WRs up in. What
 * each opcode carries comes from <rdma/softhca-opcodes.h>, the layouts
 * from <rdma/softhca-queue.h>. No locks, no doorbells: the caller holds
 * its queue's lock and rings after building.
 */
#ifndef SOFTHCA_WQE_H
#define SOFTHCA_WQE_H

#include <linux/types.h>
#include <rdma/softhca-shim.h>
#include <rdma/softhca-enc.h>
#include <rdma/softhca-opcodes.h>
#include <rdma/softhca-queue.h>

/*
 * One scatter/gather element, laid out as struct ibv_sge and struct ib_sge
 * (each side asserts it), so their arrays are passed as they are. It may
 * alias them: the provider reads the application's ibv_sge arrays, and
 * its own, through this type.
 */
struct softhca_sge {
	__u64 addr;
	__u32 length;
	__u32 lkey;
} __attribute__((__may_alias__));

/* A byte ring (the SQ): size is a power of two and a multiple of 64. */
struct softhca_ring {
	__u8 *buf;
	__u32 size;
};

/* Bytes from offset @off to the end of the ring (@off < size). */
static inline __u32 softhca_ring_to_end(const struct softhca_ring *r,
					__u32 off)
{
	return r->size - off;
}

/* The offset @n bytes after @off, wrapped into the ring. */
static inline __u32 softhca_ring_advance(const struct softhca_ring *r,
					 __u32 off, __u32 n)
{
	return (off + n) & (r->size - 1);
}

/* What the send WQE builder needs of a send queue. */
struct softhca_sq_fmt {
	struct softhca_ring ring;	/* WQEBBs * 64 bytes */
	__u32 qpn;			/* carried by every control segment */
	__u32 max_wqebbs;		/* the largest WQE the QP was granted */
	__u32 max_inline;		/* its max_inline_data */
	__u32 sign;			/* it signs its WQEs */
	__u32 tp;			/* SOFTHCA_TP_* of the QP */
	__u32 pdn;			/* its PD: an AV must be of the same */
};

/*
 * An address handle's address vector, as both sides keep it: the datagram
 * segment but for the remote QPN and Q_Key of each WR, and the PD the
 * handle belongs to (a WR may use it only on a QP of that PD).
 */
struct softhca_av {
	struct softhca_wqe_av wqe;
	__u32 pdn;
	__u32 reserved;
};

/*
 * The AV of a RoCE v2 address (seed of both sides' create_ah): @dgid the
 * destination, @sgid_index the source GID, @dmac the destination MAC the
 * kernel resolved; the UDP source port from the flow label.
 */
static inline void softhca_set_av(struct softhca_av *av, __u32 pdn,
				  const __u8 *dgid, __u8 sgid_index,
				  __u32 flow_label, __u8 hop_limit,
				  __u8 tclass, __u8 sl, const __u8 *dmac)
{
	struct softhca_wqe_av *w = &av->wqe;

	memset(av, 0, sizeof(*av));
	av->pdn = pdn;
	w->stat_rate_sl = (sl & SOFTHCA_AV_SL_MASK) << SOFTHCA_AV_SL_SHIFT;
	w->rlid = __cpu_to_be16(softhca_enc_udp_sport(flow_label));
	memcpy(w->rmac, dmac, sizeof(w->rmac));
	w->tclass = tclass;
	w->hop_limit = hop_limit;
	w->grh_gid_fl = __cpu_to_be32(SOFTHCA_AV_GRH |
				      (__u32)sgid_index << SOFTHCA_AV_SGID_SHIFT |
				      (flow_label & SOFTHCA_AV_FLOW_LABEL_MASK));
	memcpy(w->rgid, dgid, sizeof(w->rgid));
}

/* One send WR in WQE terms, as either side's post_send found it. */
struct softhca_send_wr {
	const struct softhca_opcode_info *op;
	__u8 fm_ce_se;			/* softhca_enc_fm_ce_se() */
	__u8 send_inline;		/* copy the bytes, if op allows it */
	__be32 imm;			/* network order; sent if op has one */
	__u64 remote_addr;		/* raddr segment */
	__u32 rkey;
	__u64 swap_add;			/* atomic: swap (CS) or add (FA) */
	__u64 compare;			/* atomic: compare (CS only) */
	const struct softhca_sge *sg;
	__u32 num_sge;			/* at most the QP's max_send_sge */
	/* Datagram QPs: the address handle's AV and the WR's address. */
	const struct softhca_av *av;
	__u32 remote_qpn;
	__u32 remote_qkey;
	/* XRC initiators: the target's SRQ (the XRC segment). */
	__u32 remote_srqn;
};

/*
 * The WRs of one work queue by slot, what posting records and the CQE
 * decoder retires. Counters are free-running, in WRs. An SQ WR lives at
 * the WQEBB slot of its control segment; an RQ WR at head & (cnt - 1).
 */
struct softhca_wq_wrs {
	__u64 *wrid;			/* per slot: the WR's wr_id */
	__u32 *wqe_head;		/* SQ, per slot: the WR's number */
	__u32 cnt;			/* slots, a power of two; 0: no queue */
	__u32 head;			/* WRs posted, written by the poster */
	__u32 tail;			/* WRs retired, written by the poller */
};

/*
 * Record the WR numbered @seq (head + the WRs before it in this batch)
 * at @slot. A requester CQE naming this slot retires it and every
 * unsignaled WR before it: the tail becomes seq + 1.
 */
static inline void softhca_wq_wrs_record(struct softhca_wq_wrs *wrs,
					 __u32 slot, __u64 wr_id, __u32 seq)
{
	wrs->wrid[slot] = wr_id;
	if (wrs->wqe_head)
		wrs->wqe_head[slot] = seq;
}

/*
 * mlx5_wq_overflow without a lock: true if a WQ holding head - tail
 * outstanding WRs (free-running, any wrap) cannot take one more after the
 * @nreq already accepted in this batch. A tail ahead of head (corrupt)
 * never looks like room.
 */
static inline int softhca_wq_overflow(__u32 head, __u32 tail, __u32 nreq,
				      __u32 max_post)
{
	__u64 outstanding = (__u32)(head - tail);

	return outstanding + nreq >= max_post;
}

/* ---- segments ----------------------------------------------------------- */

/* XOR of @len bytes; a WQE signature is its complement. */
static inline __u8 softhca_xor(const void *p, __u32 len)
{
	const __u8 *b = (const __u8 *)p;
	__u8 x = 0;

	while (len--)
		x ^= *b++;
	return x;
}

/* ~(XOR of @len bytes): the mlx5 WQE signature function. */
static inline __u8 softhca_calc_sig(const void *p, __u32 len)
{
	return (__u8)~softhca_xor(p, len);
}

/*
 * Control segment. @idx is the WQE's SQ counter (low 16 bits), @qpn 24
 * bits, @ds the WQE's 16-byte units counting ctrl (1..63), @imm in network
 * order. The signature byte is cleared.
 */
static inline void softhca_set_ctrl_seg(struct softhca_wqe_ctrl_seg *ctrl,
					__u8 opcode, __u8 opmod, __u16 idx,
					__u32 qpn, __u8 ds, __u8 fm_ce_se,
					__be32 imm)
{
	ctrl->opmod_idx_opcode =
		__cpu_to_be32(softhca_enc_ctrl_opcode(opmod, idx, opcode));
	ctrl->qpn_ds = __cpu_to_be32(softhca_enc_ctrl_qpn_ds(qpn, ds));
	ctrl->signature = 0;
	ctrl->rsvd9[0] = 0;
	ctrl->rsvd9[1] = 0;
	ctrl->fm_ce_se = fm_ce_se;
	ctrl->imm = imm;
}

static inline void softhca_set_raddr_seg(struct softhca_wqe_raddr_seg *seg,
					 __u64 raddr, __u32 rkey)
{
	seg->raddr = __cpu_to_be64(raddr);
	seg->rkey = __cpu_to_be32(rkey);
	seg->reserved = 0;
}

/* CS: (swap, compare). FA: (add, 0). */
static inline void softhca_set_atomic_seg(struct softhca_wqe_atomic_seg *seg,
					  __u64 swap_add, __u64 compare)
{
	seg->swap_add = __cpu_to_be64(swap_add);
	seg->compare = __cpu_to_be64(compare);
}

static inline void softhca_set_data_seg(struct softhca_wqe_data_seg *seg,
					__u32 byte_count, __u32 lkey,
					__u64 addr)
{
	seg->byte_count = __cpu_to_be32(byte_count);
	seg->lkey = __cpu_to_be32(lkey);
	seg->addr = __cpu_to_be64(addr);
}

/* The receive list terminator: byte_count 0, SOFTHCA_INVALID_LKEY, addr 0. */
static inline void softhca_set_sentinel_seg(struct softhca_wqe_data_seg *seg)
{
	softhca_set_data_seg(seg, 0, SOFTHCA_INVALID_LKEY, 0);
}

/*
 * Data pointer segments for @sg into the ring from byte offset @off
 * (16-aligned), one per SGE of non-zero length, continuing at the start of
 * the ring at its end (a 16-byte segment never straddles it). Returns the
 * number of DS written.
 */
static inline __u32 softhca_set_data_segs(const struct softhca_ring *sq,
					  __u32 off,
					  const struct softhca_sge *sg,
					  __u32 num_sge)
{
	__u32 ds = 0, i;

	off &= sq->size - 1;
	for (i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		softhca_set_data_seg((struct softhca_wqe_data_seg *)
				     (sq->buf + off),
				     sg[i].length, sg[i].lkey, sg[i].addr);
		off = softhca_ring_advance(sq, off, SOFTHCA_DS_SIZE);
		ds++;
	}
	return ds;
}

/*
 * Copy @len bytes (@src, or zeros if @src is NULL) into the ring at @off,
 * split at its end. Returns the offset after them.
 */
static inline __u32 softhca_ring_put(const struct softhca_ring *sq,
				     __u32 off, const void *src, __u32 len)
{
	while (len) {
		__u32 n = softhca_ring_to_end(sq, off);

		if (n > len)
			n = len;
		if (src) {
			memcpy(sq->buf + off, src, n);
			src = (const __u8 *)src + n;
		} else {
			memset(sq->buf + off, 0, n);
		}
		off = softhca_ring_advance(sq, off, n);
		len -= n;
	}
	return off;
}

/* Bytes of an inline payload made of @sg (more than 32 bits: too long). */
static inline __u64 softhca_inline_len(const struct softhca_sge *sg,
				       __u32 num_sge)
{
	__u64 len = 0;
	__u32 i;

	for (i = 0; i < num_sge; i++)
		len += sg[i].length;
	return len;
}

/* DS of an inline segment carrying @len bytes (0: no segment). */
static inline __u32 softhca_inline_ds(__u32 len)
{
	return len ? (sizeof(struct softhca_wqe_inline_seg) + len +
		      SOFTHCA_DS_SIZE - 1) / SOFTHCA_DS_SIZE : 0;
}

/*
 * Inline segment of @len (softhca_inline_len(@sg), not 0) bytes: the
 * header at @off (16-aligned), then the bytes of every SGE (sg[i].addr is
 * an address in this address space) back to back, split at the end of the
 * ring, and zero padding up to the next DS. Returns the DS written.
 */
static inline __u32 softhca_set_inline_data(const struct softhca_ring *sq,
					    __u32 off,
					    const struct softhca_sge *sg,
					    __u32 num_sge, __u32 len)
{
	struct softhca_wqe_inline_seg *hdr;
	__u32 used = sizeof(*hdr) + len, i;

	off &= sq->size - 1;
	hdr = (struct softhca_wqe_inline_seg *)(sq->buf + off);
	hdr->byte_count = __cpu_to_be32(len | SOFTHCA_INLINE_SEG);
	off = softhca_ring_advance(sq, off, sizeof(*hdr));
	for (i = 0; i < num_sge; i++)
		off = softhca_ring_put(sq, off,
				       (const void *)(unsigned long)sg[i].addr,
				       sg[i].length);
	softhca_ring_put(sq, off, 0, -used & (SOFTHCA_DS_SIZE - 1));
	return softhca_inline_ds(len);
}

/*
 * Sign the send WQE whose control segment is at ring offset @off: clears
 * ctrl.signature, computes the signature over ds * 16 bytes (ds from
 * ctrl.qpn_ds, following the wrap), stores and returns it.
 */
static inline __u8 softhca_sign_send_wqe(const struct softhca_ring *sq,
					 __u32 off)
{
	struct softhca_wqe_ctrl_seg *ctrl;
	__u32 len, first;
	__u8 x;

	off &= sq->size - 1;
	ctrl = (struct softhca_wqe_ctrl_seg *)(sq->buf + off);
	ctrl->signature = 0;
	len = (__be32_to_cpu(ctrl->qpn_ds) & SOFTHCA_WQE_CTRL_DS_MASK) *
	      SOFTHCA_DS_SIZE;
	first = softhca_ring_to_end(sq, off);
	if (first > len)
		first = len;
	x = softhca_xor(sq->buf + off, first) ^
	    softhca_xor(sq->buf, len - first);
	ctrl->signature = (__u8)~x;
	return ctrl->signature;
}

/* ---- send WQEs ---------------------------------------------------------- */

/* Is @wr's payload copied inline? Only where its opcode allows it. */
static inline int softhca_send_wr_inline(const struct softhca_send_wr *wr)
{
	return wr->send_inline && (wr->op->segs & SOFTHCA_SEG_INLINE);
}

/*
 * The DS count of @wr's WQE on @sq, and its inline payload's length in
 * *@inl_len, or a negative errno for a WR the QP cannot take: an inline
 * payload beyond max_inline_data is -ENOMEM (as mlx5); an atomic without
 * exactly one SGE, a WQE beyond the QP's largest, an opcode the QP's
 * transport does not post (UC: READ, atomics, SEND_WITH_INV), and on a
 * datagram QP no AV or an AV of another PD are -EINVAL.
 */
static inline int softhca_send_wqe_ds(const struct softhca_sq_fmt *sq,
				      const struct softhca_send_wr *wr,
				      __u32 *inl_len)
{
	__u8 segs = wr->op->segs;
	__u32 ds = 1, i;

	*inl_len = 0;
	/* The one test of the transport (an RC QP posts every opcode). */
	if (!(wr->op->tp & sq->tp))
		return -EINVAL;
	if (sq->tp == SOFTHCA_TP_UD) {
		if (!wr->av || wr->av->pdn != sq->pdn)
			return -EINVAL;
		ds += SOFTHCA_AV_DS;
	}
	if (sq->tp == SOFTHCA_TP_XRC)
		ds++;
	if (segs & SOFTHCA_SEG_RADDR)
		ds++;
	if (segs & SOFTHCA_SEG_ATOMIC) {
		if (wr->num_sge != 1)
			return -EINVAL;
		ds += 2;
	} else if (softhca_send_wr_inline(wr)) {
		__u64 len = softhca_inline_len(wr->sg, wr->num_sge);

		if (len > sq->max_inline)
			return -ENOMEM;
		*inl_len = (__u32)len;
		ds += softhca_inline_ds(*inl_len);
	} else if (segs & SOFTHCA_SEG_DATA) {
		for (i = 0; i < wr->num_sge; i++)
			ds += wr->sg[i].length != 0;
	}
	if (ds > SOFTHCA_WQE_MAX_DS ||
	    softhca_ds_to_wqebbs(ds) > sq->max_wqebbs)
		return -EINVAL;
	return (int)ds;
}

/*
 * The datagram segment at @seg: the AV with the WR's remote QPN and
 * Q_Key. It ends the first WQEBB, so it never wraps.
 */
static inline void softhca_set_datagram_seg(struct softhca_wqe_av *seg,
					    const struct softhca_av *av,
					    __u32 remote_qpn, __u32 remote_qkey)
{
	memcpy(seg, &av->wqe, sizeof(*seg));
	seg->qkey = __cpu_to_be32(remote_qkey);
	seg->dqp_dct = __cpu_to_be32(SOFTHCA_AV_EXTENDED |
				     (remote_qpn & SOFTHCA_24BIT_MASK));
}

/*
 * Write @wr's WQE at SQ counter @cur_post (seed-map.md §3.1 step 2): ctrl,
 * the datagram segment on a datagram QP, then the segments its opcode
 * carries: raddr, atomic and its 8-byte data pointer, inline data or one
 * data pointer per non-empty SGE; then the signature if the QP signs.
 * Returns the WQEBBs it occupies (cur_post's advance), or the negative
 * errno of softhca_send_wqe_ds() with nothing written.
 */
static inline int softhca_build_send_wqe(const struct softhca_sq_fmt *sq,
					 __u32 cur_post,
					 const struct softhca_send_wr *wr)
{
	const struct softhca_opcode_info *op = wr->op;
	__u32 inl_len, off, seg;
	int ds = softhca_send_wqe_ds(sq, wr, &inl_len);

	if (ds < 0)
		return ds;
	off = (cur_post << SOFTHCA_SEND_WQE_SHIFT) & (sq->ring.size - 1);
	seg = off + sizeof(struct softhca_wqe_ctrl_seg);
	if (sq->tp == SOFTHCA_TP_UD) {
		softhca_set_datagram_seg((struct softhca_wqe_av *)
					 (sq->ring.buf + seg), wr->av,
					 wr->remote_qpn, wr->remote_qkey);
		/* The data segments start the next WQEBB: they may wrap. */
		seg = softhca_ring_advance(&sq->ring, seg,
					   sizeof(struct softhca_wqe_av));
	}
	if (sq->tp == SOFTHCA_TP_XRC) {
		struct softhca_wqe_xrc_seg *x =
			(struct softhca_wqe_xrc_seg *)(sq->ring.buf + seg);

		memset(x, 0, sizeof(*x));
		x->xrc_srqn = __cpu_to_be32(wr->remote_srqn &
					    SOFTHCA_24BIT_MASK);
		seg += sizeof(*x);
	}
	/*
	 * raddr and atomic fit in the first WQEBB; an atomic's data pointer
	 * too, but after an XRC segment it starts the next one: it may wrap.
	 */
	if (op->segs & SOFTHCA_SEG_RADDR) {
		softhca_set_raddr_seg((struct softhca_wqe_raddr_seg *)
				      (sq->ring.buf + seg),
				      wr->remote_addr, wr->rkey);
		seg += sizeof(struct softhca_wqe_raddr_seg);
	}
	if (op->segs & SOFTHCA_SEG_ATOMIC) {
		softhca_set_atomic_seg((struct softhca_wqe_atomic_seg *)
				       (sq->ring.buf + seg), wr->swap_add,
				       op->flags & SOFTHCA_OPF_COMPARE ?
				       wr->compare : 0);
		seg = softhca_ring_advance(&sq->ring, seg,
					   sizeof(struct softhca_wqe_atomic_seg));
		softhca_set_data_seg((struct softhca_wqe_data_seg *)
				     (sq->ring.buf + seg), SOFTHCA_ATOMIC_SIZE,
				     wr->sg[0].lkey, wr->sg[0].addr);
	} else if (softhca_send_wr_inline(wr)) {
		if (inl_len)
			softhca_set_inline_data(&sq->ring, seg, wr->sg,
						wr->num_sge, inl_len);
	} else if (op->segs & SOFTHCA_SEG_DATA) {
		softhca_set_data_segs(&sq->ring, seg, wr->sg, wr->num_sge);
	}
	softhca_set_ctrl_seg((struct softhca_wqe_ctrl_seg *)(sq->ring.buf + off),
			     op->opcode, 0, (__u16)cur_post, sq->qpn, (__u8)ds,
			     wr->fm_ce_se,
			     softhca_opcode_has_imm(op) ? wr->imm : 0);
	if (sq->sign)
		softhca_sign_send_wqe(&sq->ring, off);
	return (int)softhca_ds_to_wqebbs(ds);
}

/* A fast registration (IB_WR_REG_MR): what the UMR segment says. */
struct softhca_umr_wr {
	__u8 fm_ce_se;
	__u32 mkey;			/* the MR's key, its new key byte included */
	__u32 access;			/* SOFTHCA_ACCESS_* */
	__u64 iova;
	__u64 length;
	__u32 page_shift;
	__u32 npages;
	__u64 list;			/* address of the page list */
};

/*
 * Write a REG_MR WQE at @cur_post: ctrl (opcode UMR), the UMR segment and
 * the page list's data pointer, all in one WQEBB. Returns the WQEBBs (1)
 * or -EINVAL if the QP's WQEs cannot be that large.
 */
static inline int softhca_build_umr_wqe(const struct softhca_sq_fmt *sq,
					__u32 cur_post,
					const struct softhca_umr_wr *u)
{
	__u32 off = (cur_post << SOFTHCA_SEND_WQE_SHIFT) & (sq->ring.size - 1);
	struct softhca_wqe_umr_seg *umr;

	if (!(softhca_opcodes[SOFTHCA_OPCODE_UMR].tp & sq->tp) ||
	    softhca_ds_to_wqebbs(SOFTHCA_UMR_DS) > sq->max_wqebbs)
		return -EINVAL;
	umr = (struct softhca_wqe_umr_seg *)
	      (sq->ring.buf + off + sizeof(struct softhca_wqe_ctrl_seg));
	umr->mkey = __cpu_to_be32(u->mkey);
	umr->access = __cpu_to_be32(u->access);
	umr->iova = __cpu_to_be64(u->iova);
	umr->length = __cpu_to_be64(u->length);
	umr->page_shift = __cpu_to_be32(u->page_shift);
	umr->npages = __cpu_to_be32(u->npages);
	softhca_set_data_seg((struct softhca_wqe_data_seg *)(umr + 1),
			     u->npages * 8, 0, u->list);
	softhca_set_ctrl_seg((struct softhca_wqe_ctrl_seg *)(sq->ring.buf + off),
			     SOFTHCA_OPCODE_UMR, 0, (__u16)cur_post, sq->qpn,
			     SOFTHCA_UMR_DS, u->fm_ce_se, 0);
	if (sq->sign)
		softhca_sign_send_wqe(&sq->ring, off);
	return (int)softhca_ds_to_wqebbs(SOFTHCA_UMR_DS);
}

/* A window bind (ibv_bind_mw, IBV_WR_BIND_MW): what the bind segment says. */
struct softhca_bind_wr {
	__u8 fm_ce_se;
	__u32 mw_key;			/* the window's new key */
	__u32 mr_lkey;
	__u64 addr;
	__u64 length;
	__u32 access;			/* SOFTHCA_ACCESS_REMOTE_* */
	__u32 flags;			/* SOFTHCA_BIND_* */
};

/*
 * Write a BIND_MW WQE at @cur_post: ctrl and the bind segment, in one
 * WQEBB. Returns the WQEBBs (1) or -EINVAL on a datagram QP.
 */
static inline int softhca_build_bind_wqe(const struct softhca_sq_fmt *sq,
					 __u32 cur_post,
					 const struct softhca_bind_wr *b)
{
	__u32 off = (cur_post << SOFTHCA_SEND_WQE_SHIFT) & (sq->ring.size - 1);
	struct softhca_wqe_bind_seg *seg;

	if (!(softhca_opcodes[SOFTHCA_OPCODE_BIND_MW].tp & sq->tp) ||
	    softhca_ds_to_wqebbs(SOFTHCA_BIND_DS) > sq->max_wqebbs)
		return -EINVAL;
	seg = (struct softhca_wqe_bind_seg *)
	      (sq->ring.buf + off + sizeof(struct softhca_wqe_ctrl_seg));
	seg->mw_key = __cpu_to_be32(b->mw_key);
	seg->mr_lkey = __cpu_to_be32(b->mr_lkey);
	seg->addr = __cpu_to_be64(b->addr);
	seg->length = __cpu_to_be64(b->length);
	seg->access = __cpu_to_be32(b->access);
	seg->flags = __cpu_to_be32(b->flags);
	softhca_set_ctrl_seg((struct softhca_wqe_ctrl_seg *)(sq->ring.buf + off),
			     SOFTHCA_OPCODE_BIND_MW, 0, (__u16)cur_post, sq->qpn,
			     SOFTHCA_BIND_DS, b->fm_ce_se, 0);
	if (sq->sign)
		softhca_sign_send_wqe(&sq->ring, off);
	return (int)softhca_ds_to_wqebbs(SOFTHCA_BIND_DS);
}

/* ---- receive WQEs ------------------------------------------------------- */

/*
 * XOR of what a receive WQE's signature covers: the whole stride, then
 * the QPN and the WQE's 16-bit RQ counter, big-endian. 0xff when signed.
 */
static inline __u8 softhca_recv_wqe_xor(const void *wqe, __u32 stride,
					__u32 qpn, __u16 idx)
{
	__be32 qpn_be = __cpu_to_be32(qpn);
	__be16 idx_be = __cpu_to_be16(idx);

	return softhca_xor(wqe, stride) ^
	       softhca_xor(&qpn_be, sizeof(qpn_be)) ^
	       softhca_xor(&idx_be, sizeof(idx_be));
}

/* Data segments a receive WQE of @stride bytes holds. */
static inline __u32 softhca_recv_max_gs(__u32 stride, int sign)
{
	__u32 n = stride / sizeof(struct softhca_wqe_data_seg);

	return sign ? (n ? n - 1 : 0) : n;
}

/*
 * Receive WQE of @stride bytes (a power of two >= 16) at @wqe (seed-map.md §4.1).
 * With @sign the first 16 bytes are the signature segment and the WQE is
 * cleared first. One data segment per SGE of non-zero length and, if
 * fewer than the stride holds, the sentinel after them; with @sign the
 * signature over the whole stride, @qpn (4 bytes) and @idx (the WQE's
 * 16-bit RQ counter). Returns the data segments written, or -EINVAL
 * (nothing written) when @num_sge exceeds what the stride holds.
 */
static inline int softhca_set_recv_wqe(void *wqe, __u32 stride, int sign,
				       const struct softhca_sge *sg,
				       __u32 num_sge, __u32 qpn, __u16 idx)
{
	__u32 max_gs = softhca_recv_max_gs(stride, sign);
	struct softhca_wqe_data_seg *dseg = (struct softhca_wqe_data_seg *)wqe;
	__u32 i, n = 0;

	if (num_sge > max_gs)
		return -EINVAL;
	if (sign) {
		memset(wqe, 0, stride);
		dseg++;
	}
	for (i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		softhca_set_data_seg(&dseg[n++], sg[i].length, sg[i].lkey,
				     sg[i].addr);
	}
	if (n < max_gs)
		softhca_set_sentinel_seg(&dseg[n]);
	if (sign)
		((struct softhca_rwqe_sig *)wqe)->signature =
			(__u8)~softhca_recv_wqe_xor(wqe, stride, qpn, idx);
	return (int)n;
}

/* ---- shared receive queues (queue-formats.md "SRQ WQE") ------------------ */

/*
 * The poster's view of an SRQ (mlx5's free list, kept the same way by the
 * provider and by kverbs): @head is the next free WQE to post, @tail the
 * last free one, the end of the list, which is never posted (so an SRQ of
 * cnt WQEs holds cnt - 1). Posting takes the head and follows its
 * next_wqe_index; a completion's WQE is appended after the tail. The HCA
 * takes posted WQEs in the same order from its own head, so nothing but
 * the tail's next_wqe_index is ever written while the HCA may read it,
 * and the tail is never a WQE the HCA may take. @posted marks the WQEs
 * the HCA may complete: a CQE naming any other is dropped. @lock (the
 * side's lock, on or off) serialises the retiring decoder with posters.
 */
struct softhca_srq_wrs {
	__u64 *wrid;			/* per WQE: the WR's wr_id */
	__u8 *posted;			/* per WQE: 1 from post to completion */
	void *buf;			/* the ring */
	__u32 cnt;			/* WQEs, a power of two >= 2 */
	__u32 wqe_shift;		/* log2 of the stride */
	__u32 head;
	__u32 tail;
	__u32 counter;			/* WQEs posted (the DBR counter) */
	void (*lock)(struct softhca_srq_wrs *srq, int on);
};

static inline struct softhca_srq_next_seg *
softhca_srq_wqe(const struct softhca_srq_wrs *srq, __u32 idx)
{
	return (struct softhca_srq_next_seg *)((char *)srq->buf +
					       ((__u64)idx << srq->wqe_shift));
}

static inline __u32 softhca_srq_next(const struct softhca_srq_wrs *srq,
				     __u32 idx)
{
	return __be16_to_cpu(softhca_srq_wqe(srq, idx)->next_wqe_index) &
	       (srq->cnt - 1);
}

/*
 * A new SRQ: every WQE free, in ring order; head 0, tail cnt - 1 (the
 * kernel links a new ring so, without records; the poster again).
 */
static inline void softhca_srq_init(struct softhca_srq_wrs *srq)
{
	__u32 i;

	for (i = 0; i < srq->cnt; i++) {
		softhca_srq_wqe(srq, i)->next_wqe_index =
			__cpu_to_be16((__u16)((i + 1) & (srq->cnt - 1)));
		if (srq->posted)
			srq->posted[i] = 0;
	}
	srq->head = 0;
	srq->tail = srq->cnt - 1;
	srq->counter = 0;
}

/* Data segments after the next segment: the receive builder's. */
static inline __u32 softhca_srq_max_gs(__u32 stride)
{
	return softhca_recv_max_gs(stride - sizeof(struct softhca_srq_next_seg),
				   0);
}

/*
 * Post one WR at the head (under the poster's lock): -ENOMEM when only the
 * tail is free, -EINVAL for too many SGEs. The caller writes the counter
 * to the doorbell record after a barrier, once per batch.
 */
static inline int softhca_srq_post(struct softhca_srq_wrs *srq,
				   const struct softhca_sge *sg,
				   __u32 num_sge, __u64 wr_id)
{
	__u32 stride = 1U << srq->wqe_shift, idx = srq->head;
	__u32 hdr = sizeof(struct softhca_srq_next_seg);

	if (idx == srq->tail)
		return -ENOMEM;
	if (num_sge > softhca_srq_max_gs(stride))
		return -EINVAL;
	softhca_set_recv_wqe((char *)softhca_srq_wqe(srq, idx) + hdr,
			     stride - hdr, 0, sg, num_sge, 0, 0);
	srq->wrid[idx] = wr_id;
	srq->posted[idx] = 1;
	srq->head = softhca_srq_next(srq, idx);
	srq->counter++;
	return 0;
}

/*
 * The WR an SRQ's receive CQE completes: WQE @wqe_counter, if it is
 * posted. Its WQE goes back to the free list, after the tail.
 */
static inline int softhca_wrs_retire_srq(struct softhca_srq_wrs *srq,
					 __u16 wqe_counter, __u64 *wr_id)
{
	__u32 idx = wqe_counter;
	int ret = -1;

	if (idx >= srq->cnt)
		return -1;
	srq->lock(srq, 1);
	if (srq->posted[idx]) {
		*wr_id = srq->wrid[idx];
		srq->posted[idx] = 0;
		softhca_srq_wqe(srq, srq->tail)->next_wqe_index =
			__cpu_to_be16((__u16)idx);
		srq->tail = idx;
		ret = 0;
	}
	srq->lock(srq, 0);
	return ret;
}

#endif /* SOFTHCA_WQE_H */
