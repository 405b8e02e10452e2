// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wr.c - the extended post-send API (ibv_qp_ex: ibv_wr_start, ibv_wr_send,
 * ibv_wr_set_sge, ..., ibv_wr_local_inv, ibv_wr_bind_mw, ibv_wr_complete), for QPs created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (ibv_rc_pingpong -N; perftest only on
 * devices it knows, mlx5, EFA and HNS, so not on softhca).
 *
 * The same stages as ibv_post_send (send.h): wr_start takes the SQ lock;
 * each operation checks the room in the SQ and records what the WR asks
 * for, and its data setter (or the next operation, or wr_complete, for a WR
 * without data) builds the WQE; on a UD QP the WQE is built once it has
 * both its data and its address (ibv_wr_set_ud_addr, in either order, as
 * mlx5), on an XRC initiator its data and the target's SRQ
 * (ibv_wr_set_xrc_srqn); wr_complete rings the doorbell once for the
 * batch and makes the wake-up check. The first error is kept, later calls
 * are ignored, and wr_complete then returns it with every WQE of the batch
 * dropped (cur_post goes back to where wr_start found it), as mlx5 does;
 * wr_abort drops the batch too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "send.h"

struct softhca_wr_batch {
	int err;			/* first error of the batch */
	uint32_t nreq;			/* WQEs built */
	uint32_t cur_post_rb;		/* cur_post at wr_start */
	uint32_t last_idx, last_bbs;	/* the last WQE built */
	bool last_inl;
	bool pending;			/* desc waits for its data */
	bool data_set;			/* ... which it has */
	bool addr_set;			/* a UD or XRC WR has its address */
	uint64_t wr_id;			/* of the pending WR */
	struct softhca_send_wr desc;
	struct softhca_sge sge;		/* one SGE or the inline buffer */
	uint8_t *inl;			/* max_inline bytes for inline lists */
};

static struct softhca_qp *qpx_to_sqp(struct ibv_qp_ex *qpx)
{
	return softhca_container_of(qpx, struct softhca_qp, vqp.qp_ex);
}

static void batch_fail(struct softhca_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* A WQE built from @start (or @err): the batch's last, or its error. */
static void batch_count(struct softhca_qp *qp, uint32_t start, int err,
			bool inl)
{
	struct softhca_wr_batch *b = qp->wr;

	if (err) {
		batch_fail(b, err);
		return;
	}
	b->last_idx = softhca_ring_slot(start, qp->sq.wqebb_cnt);
	b->last_bbs = qp->sq.cur_post - start;
	b->last_inl = inl;
	b->nreq++;
}

/* Build the pending WQE with what desc holds now. */
static void batch_build(struct softhca_qp *qp)
{
	struct softhca_wr_batch *b = qp->wr;
	uint32_t start = qp->sq.cur_post;
	int ret;

	b->pending = false;
	ret = softhca_sq_build_wqe(qp, b->wr_id, &b->desc,
				   qp->sq.wrs.head + b->nreq);
	batch_count(qp, start, ret, softhca_send_wr_inline(&b->desc));
}

/* A new operation: finish the previous one, check room, start desc. */
static struct softhca_send_wr *op_begin(struct ibv_qp_ex *qpx, uint8_t opcode)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = qp->wr;

	if (b->pending && !b->err)
		batch_build(qp);
	if (b->err)
		return NULL;
	if (softhca_sq_overflow(qp, b->nreq)) {
		batch_fail(b, ENOMEM);
		return NULL;
	}
	memset(&b->desc, 0, sizeof(b->desc));
	b->wr_id = qpx->wr_id;
	b->desc.op = &softhca_opcodes[opcode];
	b->desc.fm_ce_se = softhca_fm_ce_se(qpx->wr_flags, qp->sig_all);
	b->pending = true;
	b->data_set = false;
	b->addr_set = false;
	return &b->desc;
}

/* Does a WR of @qp need an address setter (UD: the AH, XRC: the SRQ)? */
static bool wr_needs_addr(const struct softhca_qp *qp)
{
	return qp->sq.fmt.tp == SOFTHCA_TP_UD || qp->sq.fmt.tp == SOFTHCA_TP_XRC;
}

/* A setter ran: build the WR once it has all it needs. */
static void setter_done(struct softhca_qp *qp, bool data)
{
	struct softhca_wr_batch *b = qp->wr;

	if (data)
		b->data_set = true;
	else
		b->addr_set = true;
	if (b->data_set && (b->addr_set || !wr_needs_addr(qp)))
		batch_build(qp);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	op_begin(qpx, SOFTHCA_OPCODE_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm_data)
{
	struct softhca_send_wr *d = op_begin(qpx, SOFTHCA_OPCODE_SEND_IMM);

	if (d)
		d->imm = imm_data;
}

/* An operation on remote memory; the WQE carries what its opcode needs. */
static void remote_op(struct ibv_qp_ex *qpx, uint8_t opcode, uint32_t rkey,
		      uint64_t remote_addr, __be32 imm, uint64_t swap_add,
		      uint64_t compare)
{
	struct softhca_send_wr *d = op_begin(qpx, opcode);

	if (!d)
		return;
	d->remote_addr = remote_addr;
	d->rkey = rkey;
	d->imm = imm;
	d->swap_add = swap_add;
	d->compare = compare;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			  uint64_t remote_addr)
{
	remote_op(qpx, SOFTHCA_OPCODE_RDMA_WRITE, rkey, remote_addr, 0, 0, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm_data)
{
	remote_op(qpx, SOFTHCA_OPCODE_RDMA_WRITE_IMM, rkey, remote_addr,
		  imm_data, 0, 0);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr)
{
	remote_op(qpx, SOFTHCA_OPCODE_RDMA_READ, rkey, remote_addr, 0, 0, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	remote_op(qpx, SOFTHCA_OPCODE_ATOMIC_CS, rkey, remote_addr, 0, swap,
		  compare);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	remote_op(qpx, SOFTHCA_OPCODE_ATOMIC_FA, rkey, remote_addr, 0, add, 0);
}

/* LOCAL_INV and SEND_WITH_INV: the key travels in ctrl.imm. */
static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct softhca_send_wr *d = op_begin(qpx, SOFTHCA_OPCODE_LOCAL_INV);

	if (d)
		d->imm = htobe32(invalidate_rkey);
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct softhca_send_wr *d = op_begin(qpx, SOFTHCA_OPCODE_SEND_INV);

	if (d)
		d->imm = htobe32(invalidate_rkey);
}

/* A bind has no setter: its WQE is built at once (mw.c's descriptor). */
static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = qp->wr;
	uint32_t start = qp->sq.cur_post;
	int ret;

	if (!op_begin(qpx, SOFTHCA_OPCODE_BIND_MW))
		return;
	b->pending = false;
	(void)mw;	/* the window is named by rkey's index */
	ret = softhca_sq_build_bind(qp, b->wr_id, info, rkey,
				    b->desc.fm_ce_se,
				    qp->sq.wrs.head + b->nreq);
	batch_count(qp, start, ret, false);
}

/* The data setters: the pending operation's WQE is built now. */
static struct softhca_wr_batch *setter_begin(struct softhca_qp *qp)
{
	struct softhca_wr_batch *b = qp->wr;

	if (b->err)
		return NULL;
	if (!b->pending) {		/* a setter without an operation */
		batch_fail(b, EINVAL);
		return NULL;
	}
	return b;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);

	if (!b)
		return;
	b->sge = (struct softhca_sge){ .addr = addr, .length = length,
				       .lkey = lkey };
	b->desc.sg = &b->sge;
	b->desc.num_sge = 1;
	setter_done(qp, true);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);

	if (!b)
		return;
	if (num_sge > qp->sq.max_gs) {
		b->pending = false;
		batch_fail(b, EINVAL);
		return;
	}
	b->desc.sg = (const struct softhca_sge *)sg_list;
	b->desc.num_sge = (uint32_t)num_sge;
	setter_done(qp, true);
}

/* Inline only carries the payloads the opcode table allows it for. */
static bool inline_ok(const struct softhca_send_wr *d)
{
	return d->op->segs & SOFTHCA_SEG_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
			       size_t length)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);

	if (!b)
		return;
	if (!inline_ok(&b->desc) || length > qp->sq.fmt.max_inline) {
		b->pending = false;
		batch_fail(b, inline_ok(&b->desc) ? ENOMEM : EINVAL);
		return;
	}
	/* Built later (a UD WR waits for its address): the bytes are ours. */
	if (wr_needs_addr(qp) && !b->addr_set && length) {
		memcpy(b->inl, addr, length);
		addr = b->inl;
	}
	b->sge = (struct softhca_sge){ .addr = (uintptr_t)addr,
				       .length = (uint32_t)length };
	b->desc.sg = &b->sge;
	b->desc.num_sge = 1;
	b->desc.send_inline = true;
	setter_done(qp, true);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);
	size_t len = 0;

	if (!b)
		return;
	if (!inline_ok(&b->desc)) {
		b->pending = false;
		batch_fail(b, EINVAL);
		return;
	}
	/* Gather into one buffer: the payload is at most max_inline. */
	for (size_t i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->sq.fmt.max_inline - len) {
			b->pending = false;
			batch_fail(b, ENOMEM);
			return;
		}
		memcpy(b->inl + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	b->sge = (struct softhca_sge){ .addr = (uintptr_t)b->inl,
				       .length = (uint32_t)len };
	b->desc.sg = &b->sge;
	b->desc.num_sge = 1;
	b->desc.send_inline = true;
	setter_done(qp, true);
}

/* A UD QP's WR: its destination (the builder checks the AH's PD). */
static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);

	if (!b)
		return;
	b->desc.av = ah ? &to_sah(ah)->av : NULL;
	b->desc.remote_qpn = remote_qpn;
	b->desc.remote_qkey = remote_qkey;
	setter_done(qp, false);
}

/* An XRC initiator's WR: the target's SRQ. */
static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = setter_begin(qp);

	if (!b)
		return;
	b->desc.remote_srqn = remote_srqn;
	setter_done(qp, false);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_wr_batch *b = qp->wr;

	softhca_lock(&qp->sq.lock);
	b->err = 0;
	b->nreq = 0;
	b->pending = false;
	b->cur_post_rb = qp->sq.cur_post;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);
	struct softhca_context *ctx = to_sctx(qp->vqp.qp.context);
	struct softhca_wr_batch *b = qp->wr;
	uint32_t nreq;
	int err;

	if (b->pending && !b->err)
		batch_build(qp);	/* the last WR had no data */
	err = b->err;
	/* The QP's state counts when the batch is rung, as on mlx5. */
	if (!err && !__atomic_load_n(&qp->sq.post_ok, __ATOMIC_RELAXED))
		err = EINVAL;
	nreq = err ? 0 : b->nreq;
	if (err)
		qp->sq.cur_post = b->cur_post_rb;
	else if (nreq)
		softhca_sq_ring(ctx, qp, nreq, b->last_idx, b->last_bbs,
				b->last_inl);
	softhca_unlock(&qp->sq.lock);
	if (nreq)
		softhca_db_ring(ctx, &qp->db);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct softhca_qp *qp = qpx_to_sqp(qpx);

	qp->sq.cur_post = qp->wr->cur_post_rb;
	softhca_unlock(&qp->sq.lock);
}

int softhca_wr_api_init(struct softhca_qp *qp)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	struct softhca_wr_batch *b;

	b = calloc(1, sizeof(*b));
	if (!b)
		return ENOMEM;
	b->inl = malloc(qp->sq.fmt.max_inline ? qp->sq.fmt.max_inline : 1);
	if (!b->inl) {
		free(b);
		return ENOMEM;
	}
	qp->wr = b;

	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qp->vqp.comp_mask |= VERBS_QP_EX;
	return 0;
}

void softhca_wr_api_free(struct softhca_qp *qp)
{
	if (!qp->wr)
		return;
	free(qp->wr->inl);
	free(qp->wr);
	qp->wr = NULL;
}
