// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * send.c - ibv_post_send (seed-map.md §3.1, §3.3).
 *
 * Step 1, under the SQ lock: per WR the opcode (the opcode table's WR
 * map), the room left in the SQ (re-checked under the send CQ's lock when
 * it looks full, since poll_cq moves the tail), the SGE count. Step 2: the
 * WQE at cur_post, built by the builder the kernel shares
 * (softhca_build_send_wqe(), <rdma/softhca-wqe.h>): ctrl, raddr, atomic,
 * then data pointers or inline data, the optional signature; wrid[] and
 * wqe_head[] at its first WQEBB; cur_post moves by its WQEBBs. The first
 * WR that fails is *bad_wr; the ones before it are posted. Step 3:
 * post_send_db: the SND doorbell record, then the UAR (BlueFlame copy of a
 * single small WQE, or the 64-bit doorbell of the last control segment).
 * Then the engine wake-up check (design.md §5).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "send.h"

/* The builder reads the application's ibv_sge arrays as they are. */
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct softhca_sge), "sge");
_Static_assert(offsetof(struct ibv_sge, addr) ==
	       offsetof(struct softhca_sge, addr), "sge addr");
_Static_assert(offsetof(struct ibv_sge, length) ==
	       offsetof(struct softhca_sge, length), "sge length");
_Static_assert(offsetof(struct ibv_sge, lkey) ==
	       offsetof(struct softhca_sge, lkey), "sge lkey");

/* The opcode table's WR numbers are libibverbs'. */
_Static_assert((int)IBV_WR_RDMA_WRITE == SOFTHCA_WR_RDMA_WRITE, "wr");
_Static_assert((int)IBV_WR_RDMA_WRITE_WITH_IMM == SOFTHCA_WR_RDMA_WRITE_WITH_IMM,
	       "wr");
_Static_assert((int)IBV_WR_SEND == SOFTHCA_WR_SEND, "wr");
_Static_assert((int)IBV_WR_SEND_WITH_IMM == SOFTHCA_WR_SEND_WITH_IMM, "wr");
_Static_assert((int)IBV_WR_RDMA_READ == SOFTHCA_WR_RDMA_READ, "wr");
_Static_assert((int)IBV_WR_ATOMIC_CMP_AND_SWP == SOFTHCA_WR_ATOMIC_CMP_AND_SWP,
	       "wr");
_Static_assert((int)IBV_WR_ATOMIC_FETCH_AND_ADD ==
	       SOFTHCA_WR_ATOMIC_FETCH_AND_ADD, "wr");
_Static_assert((int)IBV_WR_LOCAL_INV == SOFTHCA_WR_LOCAL_INV, "wr");
_Static_assert((int)IBV_WR_SEND_WITH_INV == SOFTHCA_WR_SEND_WITH_INV, "wr");
_Static_assert((int)IBV_WR_BIND_MW == SOFTHCA_WR_BIND_MW, "wr");
_Static_assert((int)IBV_WC_BIND_MW == SOFTHCA_WC_BIND_MW, "wc");
_Static_assert((int)IBV_WC_LOCAL_INV == SOFTHCA_WC_LOCAL_INV, "wc");

/* mlx5_wq_overflow: near full, look again with the CQ lock held. */
bool softhca_sq_overflow(struct softhca_qp *qp, uint32_t nreq)
{
	struct softhca_sq *sq = &qp->sq;
	struct softhca_cq *cq;
	uint32_t tail;

	tail = __atomic_load_n(&sq->wrs.tail, __ATOMIC_RELAXED);
	if (!softhca_wq_overflow(sq->wrs.head, tail, nreq, sq->max_post))
		return false;
	cq = to_scq(qp->vqp.qp.send_cq);
	softhca_lock(&cq->lock);
	tail = __atomic_load_n(&sq->wrs.tail, __ATOMIC_RELAXED);
	softhca_unlock(&cq->lock);
	return softhca_wq_overflow(sq->wrs.head, tail, nreq, sq->max_post);
}

/*
 * A WQE of @bbs WQEBBs was just written at cur_post (or the builder's
 * -errno): record the WR at its slot and step over it.
 */
static int sq_advance(struct softhca_sq *sq, int bbs, uint64_t wr_id,
		      uint32_t seq)
{
	if (bbs < 0)
		return -bbs;
	softhca_wq_wrs_record(&sq->wrs,
			      softhca_ring_slot(sq->cur_post, sq->wqebb_cnt),
			      wr_id, seq);
	sq->cur_post += (uint32_t)bbs;
	return 0;
}

/*
 * Write the WQE at cur_post and account for it (seed-map.md §3.1 step 2).
 * seq is this WR's number in the SQ (head + WRs before it in the batch):
 * poll_cq sets the tail to seq + 1 when the WQE completes. Returns 0, or
 * an errno (softhca_send_wqe_ds()) with nothing written.
 */
int softhca_sq_build_wqe(struct softhca_qp *qp, uint64_t wr_id,
			 const struct softhca_send_wr *wr, uint32_t seq)
{
	struct softhca_sq *sq = &qp->sq;

	return sq_advance(sq, softhca_build_send_wqe(&sq->fmt, sq->cur_post, wr),
			  wr_id, seq);
}

#define SOFTHCA_MW_RIGHTS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
				 IBV_ACCESS_REMOTE_ATOMIC)

int softhca_bind_desc(const struct ibv_mw_bind_info *info, uint32_t rkey,
		      uint8_t fm_ce_se, struct softhca_bind_wr *b)
{
	unsigned int acc = info->mw_access_flags;

	/*
	 * Local write is taken and means nothing for a window, which is
	 * reached by its rkey only (mlx5 takes it too; rdma-core's tests
	 * bind with it).
	 */
	if (acc & ~(SOFTHCA_MW_RIGHTS | IBV_ACCESS_ZERO_BASED |
		    IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (!info->mr && info->length)
		return EINVAL;
	b->fm_ce_se = fm_ce_se;
	b->mw_key = rkey;
	b->mr_lkey = info->mr ? info->mr->lkey : 0;
	b->addr = info->addr;
	b->length = info->length;
	b->access = (acc & IBV_ACCESS_REMOTE_WRITE ? SOFTHCA_ACCESS_REMOTE_WRITE : 0) |
		    (acc & IBV_ACCESS_REMOTE_READ ? SOFTHCA_ACCESS_REMOTE_READ : 0) |
		    (acc & IBV_ACCESS_REMOTE_ATOMIC ? SOFTHCA_ACCESS_REMOTE_ATOMIC : 0);
	b->flags = acc & IBV_ACCESS_ZERO_BASED ? SOFTHCA_BIND_ZERO_BASED : 0;
	return 0;
}

int softhca_sq_build_bind(struct softhca_qp *qp, uint64_t wr_id,
			  const struct ibv_mw_bind_info *info, uint32_t rkey,
			  uint8_t fm_ce_se, uint32_t seq)
{
	struct softhca_sq *sq = &qp->sq;
	struct softhca_bind_wr b;
	int bbs;

	bbs = softhca_bind_desc(info, rkey, fm_ce_se, &b);
	if (bbs)
		return bbs;
	return sq_advance(sq, softhca_build_bind_wqe(&sq->fmt, sq->cur_post, &b),
			  wr_id, seq);
}

/*
 * ibv_send_wr -> WR descriptor; EINVAL for opcodes softhca does not run.
 * wr.ud (datagram QPs), wr.atomic or wr.rdma: the union is read as the
 * QP and the opcode say.
 */
static int wr_to_desc(const struct softhca_qp *qp, const struct ibv_send_wr *wr,
		      struct softhca_send_wr *d)
{
	int opcode = softhca_wr_opcode(wr->opcode);
	const struct softhca_opcode_info *op;

	if (opcode < 0)
		return EINVAL;
	op = &softhca_opcodes[opcode];
	/* Fast registration is for kernel QPs (IB_WR_REG_MR). */
	if (op->mkop == SOFTHCA_MKOP_REG)
		return EINVAL;
	d->op = op;
	d->fm_ce_se = softhca_fm_ce_se(wr->send_flags, qp->sig_all);
	d->send_inline = !!(wr->send_flags & IBV_SEND_INLINE);
	/* The key a LOCAL_INV or SEND_WITH_INV names travels in ctrl.imm. */
	d->imm = op->mkop == SOFTHCA_MKOP_NONE ? wr->imm_data :
		 htobe32(wr->invalidate_rkey);
	d->sg = (const struct softhca_sge *)wr->sg_list;
	d->num_sge = (uint32_t)wr->num_sge;
	/* An XRC initiator's WR names the target's SRQ. */
	if (qp->sq.fmt.tp == SOFTHCA_TP_XRC)
		d->remote_srqn = wr->qp_type.xrc.remote_srqn;
	/* The builder refuses a datagram WR without an AH or of another PD. */
	if (qp->sq.fmt.tp == SOFTHCA_TP_UD) {
		d->av = wr->wr.ud.ah ? &to_sah(wr->wr.ud.ah)->av : NULL;
		d->remote_qpn = wr->wr.ud.remote_qpn;
		d->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (op->segs & SOFTHCA_SEG_ATOMIC) {
		/* compare_add is CS's compare and FA's addend. */
		d->remote_addr = wr->wr.atomic.remote_addr;
		d->rkey = wr->wr.atomic.rkey;
		d->swap_add = op->flags & SOFTHCA_OPF_COMPARE ?
			      wr->wr.atomic.swap : wr->wr.atomic.compare_add;
		d->compare = wr->wr.atomic.compare_add;
	} else {
		d->remote_addr = wr->wr.rdma.remote_addr;
		d->rkey = wr->wr.rdma.rkey;
		d->swap_add = 0;
		d->compare = 0;
	}
	return 0;
}

/*
 * post_send_db (seed-map.md §3.1 step 3), SQ lock held, nreq > 0 WRs just built,
 * the last one at WQEBB slot last_idx. bf_bbs: copy that WQE whole, this
 * many WQEBBs (0: the 64-bit doorbell).
 */
static void sq_doorbell(struct softhca_context *ctx, struct softhca_qp *qp,
			uint32_t nreq, uint32_t last_idx, uint32_t bf_bbs)
{
	struct softhca_sq *sq = &qp->sq;
	uint8_t *ctrl = sq->fmt.ring.buf + (last_idx << SOFTHCA_SEND_WQE_SHIFT);
	bool locked;
	uint8_t *reg;

	/* poll_cq reads it to tell a posted WR from a stale slot. */
	__atomic_store_n(&sq->wrs.head, sq->wrs.head + nreq, __ATOMIC_RELAXED);

	/* 3.1: the WQEs before the producer counter. */
	udma_to_device_barrier();
	__atomic_store_n(&qp->dbr->snd_counter,
			 htobe32(softhca_wq_dbr_value(sq->cur_post)),
			 __ATOMIC_RELAXED);

	/* The BF lock, once several QPs share this UAR: read the flag once. */
	locked = __atomic_load_n(&ctx->bf_lock.need_lock, __ATOMIC_RELAXED);
	if (locked)
		softhca_spin_lock(&ctx->bf_lock.held);
	reg = (uint8_t *)ctx->uar +
	      __atomic_load_n(&ctx->bf_offset, __ATOMIC_RELAXED);

	/* 3.2: the record before the write-combining UAR store. */
	mmio_wc_start();
	if (bf_bbs) {
		/* 3.3: whole WQEBBs, following the ring wrap. */
		for (uint32_t i = 0; i < bf_bbs; i++) {
			uint32_t s = softhca_ring_slot(last_idx + i, sq->wqebb_cnt);

			mmio_memcpy_x64(reg + i * SOFTHCA_SEND_WQE_BB,
					sq->fmt.ring.buf + (s << SOFTHCA_SEND_WQE_SHIFT),
					SOFTHCA_SEND_WQE_BB);
		}
	} else {
		/* 3.4: opmod_idx_opcode and qpn_ds in one 64-bit store. */
		uint64_t w;

		memcpy(&w, ctrl, sizeof(w));
		mmio_write64_be(reg, (__be64)w);
	}
	/* 3.5: flush inside the lock, then the other buffer next time. */
	mmio_flush_writes();
	__atomic_store_n(&ctx->bf_offset,
			 __atomic_load_n(&ctx->bf_offset, __ATOMIC_RELAXED) ^
				 SOFTHCA_UAR_BF_SIZE,
			 __ATOMIC_RELAXED);
	if (locked)
		softhca_spin_unlock(&ctx->bf_lock.held);
}

/* BlueFlame size limit: one buffer, as the kernel states it. */
static uint32_t bf_limit(const struct softhca_context *ctx)
{
	return ctx->bf_buf_size < SOFTHCA_UAR_BF_SIZE ? ctx->bf_buf_size :
							SOFTHCA_UAR_BF_SIZE;
}

void softhca_sq_ring(struct softhca_context *ctx, struct softhca_qp *qp,
		     uint32_t nreq, uint32_t last_idx, uint32_t last_bbs,
		     bool last_inl)
{
	/* BlueFlame: a single WR, inline (or preferred), that fits. */
	if (nreq != 1 || !(last_inl || ctx->prefer_bf) ||
	    last_bbs * SOFTHCA_SEND_WQE_BB > bf_limit(ctx))
		last_bbs = 0;
	sq_doorbell(ctx, qp, nreq, last_idx, last_bbs);
}

/*
 * The WQE of the batch's WR number @nreq at cur_post; @d: its descriptor
 * (d->op NULL for a bind). The opcode first, then the room, as before.
 */
static int post_one(struct softhca_qp *qp, const struct ibv_send_wr *wr,
		    uint32_t nreq, struct softhca_send_wr *d)
{
	uint32_t seq = qp->sq.wrs.head + nreq;
	bool bind = wr->opcode == IBV_WR_BIND_MW;
	int err = 0;

	d->op = NULL;
	if (!bind)
		err = wr_to_desc(qp, wr, d);
	if (err)
		return err;
	if (softhca_sq_overflow(qp, nreq))
		return ENOMEM;
	if (bind)
		return softhca_sq_build_bind(qp, wr->wr_id,
					     &wr->bind_mw.bind_info,
					     wr->bind_mw.rkey,
					     softhca_fm_ce_se(wr->send_flags,
							      qp->sig_all),
					     seq);
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_gs)
		return EINVAL;
	return softhca_sq_build_wqe(qp, wr->wr_id, d, seq);
}

int softhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	struct softhca_context *ctx = to_sctx(ibqp->context);
	struct softhca_qp *qp = to_sqp(ibqp);
	struct softhca_sq *sq = &qp->sq;
	struct softhca_send_wr d;
	uint32_t nreq = 0, last_idx = 0, last_bbs = 0;
	bool last_inl = false;
	int err = 0;

	/* An XRC target has no send queue (nor the CQ its check locks). */
	if (qp->xrc_tgt || !__atomic_load_n(&sq->post_ok, __ATOMIC_RELAXED)) {
		*bad_wr = wr;
		return EINVAL;
	}
	softhca_lock(&sq->lock);
	for (; wr; wr = wr->next, nreq++) {
		uint32_t start = sq->cur_post;

		err = post_one(qp, wr, nreq, &d);
		if (err)
			break;
		last_idx = softhca_ring_slot(start, sq->wqebb_cnt);
		last_bbs = sq->cur_post - start;
		last_inl = d.op && softhca_send_wr_inline(&d);
	}

	if (nreq)
		softhca_sq_ring(ctx, qp, nreq, last_idx, last_bbs, last_inl);
	softhca_unlock(&sq->lock);

	if (nreq)
		softhca_db_ring(ctx, &qp->db);
	if (err)
		*bad_wr = wr;
	return err;
}
