// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * send.c - ibv_post_send (seed-map.md §3.1, §3.3).
 *
 * Step 1, under the SQ lock: per WR the opcode, the room left in the SQ
 * (re-checked under the send CQ's lock when it looks full, since poll_cq
 * moves the tail), the SGE count. Step 2: the WQE (wqe.c encoders) at
 * cur_post: ctrl, raddr, atomic, then data pointers or inline data, the
 * optional signature; wrid[]/wqe_head[] at its first WQEBB; cur_post moves
 * by its WQEBBs. The first WR that fails is *bad_wr; the ones before it are
 * posted. Step 3: post_send_db: the SND doorbell record, then the UAR
 * (BlueFlame copy of a single small WQE, or the 64-bit doorbell of the last
 * control segment). Then the engine wake-up check (design.md §5).
 */
#include <errno.h>
#include <string.h>

#include "send.h"
#include "wqe.h"

/* mlx5_wq_overflow: near full, look again with the CQ lock held. */
bool softhca_sq_overflow(struct softhca_qp *qp, uint32_t nreq)
{
	struct softhca_sq *sq = &qp->sq;
	struct softhca_cq *cq;
	uint32_t tail;

	tail = __atomic_load_n(&sq->tail, __ATOMIC_RELAXED);
	if (!softhca_wq_overflow(sq->head, tail, nreq, sq->max_post))
		return false;
	cq = to_scq(qp->vqp.qp.send_cq);
	softhca_lock(&cq->lock);
	tail = __atomic_load_n(&sq->tail, __ATOMIC_RELAXED);
	softhca_unlock(&cq->lock);
	return softhca_wq_overflow(sq->head, tail, nreq, sq->max_post);
}

/*
 * DS count of the WQE d describes, or the errno of a WR this QP cannot
 * take, as a negative value: an inline payload beyond max_inline_data is
 * ENOMEM (as mlx5's set_data_inl_seg), anything else EINVAL.
 */
static int wqe_ds(const struct softhca_sq *sq, const struct softhca_wqe_desc *d)
{
	uint32_t ds = 1 + d->raddr + d->atomic;

	if (d->atomic) {
		if (d->num_sge != 1)
			return -EINVAL;
		ds++;
	} else if (d->inl) {
		uint64_t len = 0;

		for (int i = 0; i < d->num_sge; i++)
			len += d->sg[i].length;
		if (len > sq->max_inline)
			return -ENOMEM;
		if (len)
			ds += (sizeof(struct softhca_wqe_inline_seg) + len +
			       SOFTHCA_DS_SIZE - 1) / SOFTHCA_DS_SIZE;
	} else {
		for (int i = 0; i < d->num_sge; i++)
			ds += d->sg[i].length != 0;
	}
	if (ds > SOFTHCA_WQE_MAX_DS ||
	    softhca_ds_to_wqebbs(ds) > sq->max_wqebbs)
		return -EINVAL;
	return (int)ds;
}

/*
 * Write the WQE at cur_post and account for it (seed-map.md §3.1 step 2). seq is
 * this WR's number in the SQ (head + WRs before it in the batch): poll_cq
 * sets the tail to seq + 1 when the WQE completes. Returns 0, or an errno
 * (see wqe_ds) with nothing written.
 */
int softhca_sq_build_wqe(struct softhca_qp *qp,
			 const struct softhca_wqe_desc *d, uint32_t seq)
{
	struct softhca_sq *sq = &qp->sq;
	int ret = wqe_ds(sq, d);
	uint32_t ds, idx, off, seg;

	if (ret < 0)
		return -ret;
	ds = (uint32_t)ret;
	idx = softhca_ring_slot(sq->cur_post, sq->wqebb_cnt);
	off = idx << SOFTHCA_SEND_WQE_SHIFT;
	seg = off + sizeof(struct softhca_wqe_ctrl_seg);

	/* raddr and atomic fit in the first WQEBB, after ctrl. */
	if (d->raddr) {
		softhca_set_raddr_seg((void *)(sq->ring.buf + seg),
				      d->remote_addr, d->rkey);
		seg += sizeof(struct softhca_wqe_raddr_seg);
	}
	if (d->atomic) {
		softhca_set_atomic_seg((void *)(sq->ring.buf + seg),
				       d->swap_add, d->compare);
		seg += sizeof(struct softhca_wqe_atomic_seg);
		softhca_set_data_seg((void *)(sq->ring.buf + seg),
				     SOFTHCA_ATOMIC_SIZE, d->sg[0].lkey,
				     d->sg[0].addr);
	} else if (d->inl) {
		softhca_set_inline_data(&sq->ring, seg, d->sg, d->num_sge,
					sq->max_inline);
	} else {
		softhca_set_data_segs(&sq->ring, seg, d->sg, d->num_sge);
	}
	softhca_set_ctrl_seg((void *)(sq->ring.buf + off), d->opcode, 0,
			     (uint16_t)sq->cur_post, qp->qpn, (uint8_t)ds,
			     d->fm_ce_se, d->imm);
	if (qp->wqe_sig)
		softhca_sign_send_wqe(&sq->ring, off);

	sq->wrid[idx] = d->wr_id;
	sq->wqe_head[idx] = seq;
	sq->cur_post += softhca_ds_to_wqebbs(ds);
	return 0;
}

/* ibv_send_wr -> descriptor; EINVAL for opcodes softhca does not run. */
static int wr_to_desc(const struct softhca_qp *qp, const struct ibv_send_wr *wr,
		      struct softhca_wqe_desc *d)
{
	int op = softhca_wr_opcode(wr->opcode);

	if (op < 0)
		return EINVAL;
	memset(d, 0, sizeof(*d));
	d->wr_id = wr->wr_id;
	d->opcode = (uint8_t)op;
	d->fm_ce_se = softhca_fm_ce_se(wr->send_flags, qp->sig_all);
	d->sg = wr->sg_list;
	d->num_sge = wr->num_sge;

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
		d->imm = wr->imm_data;
		/* fall through */
	case IBV_WR_SEND:
		d->inl = wr->send_flags & IBV_SEND_INLINE;
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		d->imm = wr->imm_data;
		/* fall through */
	case IBV_WR_RDMA_WRITE:
		d->inl = wr->send_flags & IBV_SEND_INLINE;
		/* fall through */
	case IBV_WR_RDMA_READ:
		d->raddr = true;
		d->remote_addr = wr->wr.rdma.remote_addr;
		d->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		d->raddr = true;
		d->atomic = true;
		d->remote_addr = wr->wr.atomic.remote_addr;
		d->rkey = wr->wr.atomic.rkey;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			d->swap_add = wr->wr.atomic.swap;
			d->compare = wr->wr.atomic.compare_add;
		} else {
			d->swap_add = wr->wr.atomic.compare_add;
		}
		break;
	default:
		return EINVAL;
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
	uint8_t *ctrl = sq->ring.buf + (last_idx << SOFTHCA_SEND_WQE_SHIFT);
	bool locked;
	uint8_t *reg;

	/* poll_cq reads it to tell a posted WR from a stale slot. */
	__atomic_store_n(&sq->head, sq->head + nreq, __ATOMIC_RELAXED);

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
					sq->ring.buf + (s << SOFTHCA_SEND_WQE_SHIFT),
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

int softhca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr)
{
	struct softhca_context *ctx = to_sctx(ibqp->context);
	struct softhca_qp *qp = to_sqp(ibqp);
	struct softhca_sq *sq = &qp->sq;
	struct softhca_wqe_desc d;
	uint32_t nreq = 0, last_idx = 0, last_bbs = 0;
	bool last_inl = false;
	int err = 0;

	softhca_lock(&sq->lock);
	for (; wr; wr = wr->next, nreq++) {
		uint32_t start = sq->cur_post;

		err = wr_to_desc(qp, wr, &d);
		if (err)
			break;
		if (softhca_sq_overflow(qp, nreq)) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > sq->max_gs) {
			err = EINVAL;
			break;
		}
		err = softhca_sq_build_wqe(qp, &d, sq->head + nreq);
		if (err)
			break;
		last_idx = softhca_ring_slot(start, sq->wqebb_cnt);
		last_bbs = sq->cur_post - start;
		last_inl = d.inl;
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
