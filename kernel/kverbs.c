// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the kernel verbs of kernel CQs and RC QPs (created
 * with udata NULL): poll_cq, req_notify_cq, post_send, post_recv. The same
 * protocol as the provider (user/poll.c, arm.c, send.c, recv.c) on the same
 * queue formats, with the encoders of <rdma/softhca-enc.h>:
 *
 * - post_send / post_recv build WQEs in the queue memory, then (dma_wmb)
 *   the doorbell record, then hca_kernel_doorbell(): the QP's hint in the
 *   HCA's own doorbell area, a full barrier and, only if its engine thread
 *   does not watch the area, a wake-up of that thread. Any context, no
 *   sleeping.
 * - poll_cq takes CQEs whose owner bit matches the lap, dma_rmb(), turns
 *   them into ib_wc and writes the consumer index to set_ci.
 * - req_notify_cq writes the arm word (arm_sn, solicited, consumer index)
 *   to the doorbell record; the CQE writer evaluates it, and the CQ's
 *   doorbell slot is rung if CQEs are already waiting. arm_sn advances with every
 *   completion event delivered (shca_kcq_comp()).
 *
 * Local keys: the reserved lkey (device->local_dma_lkey, hca.h
 * HCA_RESERVED_LKEY) with the kernel virtual addresses ib_dma_map_*()
 * returns (no DMA device), or the lkey of any MR of the QP's PD.
 */
#include <linux/log2.h>
#include <rdma/softhca-enc.h>

#include "softhca.h"

/* The numbers the encoders use are ib_core's. */
static_assert(SOFTHCA_WC_SUCCESS == (int)IB_WC_SUCCESS);
static_assert(SOFTHCA_WC_LOC_LEN_ERR == (int)IB_WC_LOC_LEN_ERR);
static_assert(SOFTHCA_WC_LOC_QP_OP_ERR == (int)IB_WC_LOC_QP_OP_ERR);
static_assert(SOFTHCA_WC_LOC_PROT_ERR == (int)IB_WC_LOC_PROT_ERR);
static_assert(SOFTHCA_WC_WR_FLUSH_ERR == (int)IB_WC_WR_FLUSH_ERR);
static_assert(SOFTHCA_WC_MW_BIND_ERR == (int)IB_WC_MW_BIND_ERR);
static_assert(SOFTHCA_WC_BAD_RESP_ERR == (int)IB_WC_BAD_RESP_ERR);
static_assert(SOFTHCA_WC_LOC_ACCESS_ERR == (int)IB_WC_LOC_ACCESS_ERR);
static_assert(SOFTHCA_WC_REM_INV_REQ_ERR == (int)IB_WC_REM_INV_REQ_ERR);
static_assert(SOFTHCA_WC_REM_ACCESS_ERR == (int)IB_WC_REM_ACCESS_ERR);
static_assert(SOFTHCA_WC_REM_OP_ERR == (int)IB_WC_REM_OP_ERR);
static_assert(SOFTHCA_WC_RETRY_EXC_ERR == (int)IB_WC_RETRY_EXC_ERR);
static_assert(SOFTHCA_WC_RNR_RETRY_EXC_ERR == (int)IB_WC_RNR_RETRY_EXC_ERR);
static_assert(SOFTHCA_WC_REM_ABORT_ERR == (int)IB_WC_REM_ABORT_ERR);
static_assert(SOFTHCA_WC_GENERAL_ERR == (int)IB_WC_GENERAL_ERR);
static_assert(SOFTHCA_WC_SEND == (int)IB_WC_SEND);
static_assert(SOFTHCA_WC_RDMA_WRITE == (int)IB_WC_RDMA_WRITE);
static_assert(SOFTHCA_WC_RDMA_READ == (int)IB_WC_RDMA_READ);
static_assert(SOFTHCA_WC_COMP_SWAP == (int)IB_WC_COMP_SWAP);
static_assert(SOFTHCA_WC_FETCH_ADD == (int)IB_WC_FETCH_ADD);
static_assert(SOFTHCA_WC_RECV == (int)IB_WC_RECV);
static_assert(SOFTHCA_WC_RECV_RDMA_WITH_IMM == (int)IB_WC_RECV_RDMA_WITH_IMM);

/* ---- CQs ---------------------------------------------------------------- */

/* The EQ tasklet delivers a completion event: the next arm is a new one. */
static void shca_kcq_comp(struct shca_cq_ev *ev)
{
	struct shca_cq *cq = container_of(ev, struct shca_cq, ev);
	struct ib_cq *ibcq = ev->ibcq;

	atomic_inc(&cq->kcq->arm_sn);
	if (ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

/* After shca_cq_ev_register(), before the CQ can be armed. */
int shca_kcq_create(struct shca_dev *sdev, struct shca_cq *cq, u32 cnt)
{
	struct shca_kcq *kcq = kzalloc(sizeof(*kcq), GFP_KERNEL);

	if (!kcq)
		return -ENOMEM;
	spin_lock_init(&kcq->lock);
	kcq->ring = cq->queue->buf;
	kcq->dbr = cq->queue->buf + cnt * SOFTHCA_CQE_SIZE;
	kcq->cqe_cnt = cnt;
	xa_init(&kcq->qps);
	cq->kcq = kcq;
	cq->ev.comp = shca_kcq_comp;
	return 0;
}

void shca_kcq_destroy(struct shca_cq *cq)
{
	/* ib_core destroyed every QP using it first. */
	WARN_ON(!xa_empty(&cq->kcq->qps));
	xa_destroy(&cq->kcq->qps);
	kfree(cq->kcq);
	cq->kcq = NULL;
}

static void shca_wc_clear(struct ib_wc *wc, struct shca_qp *qp)
{
	wc->status = IB_WC_SUCCESS;
	wc->opcode = IB_WC_SEND;
	wc->vendor_err = 0;
	wc->byte_len = 0;
	wc->qp = &qp->ibqp;
	wc->ex.imm_data = 0;
	wc->src_qp = 0;
	wc->wc_flags = 0;
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
	wc->port_num = SHCA_PORT;
}

/*
 * One CQE the consumer owns into @wc. Returns false when no live kernel
 * QP of this CQ has its QPN (destroyed meanwhile): the CQE is dropped.
 */
static bool shca_kcq_parse(struct shca_kcq *kcq, const struct softhca_cqe *cqe,
			   struct ib_wc *wc)
{
	u32 qpn = be32_to_cpu(cqe->sop_drop_qpn) & SOFTHCA_24BIT_MASK;
	u8 wqe_op = be32_to_cpu(cqe->sop_drop_qpn) >>
		    SOFTHCA_CQE_WQE_OPCODE_SHIFT;
	u8 opcode = cqe->op_own >> SOFTHCA_CQE_OPCODE_SHIFT;
	u32 rqpn = be32_to_cpu(cqe->flags_rqpn);
	struct shca_kwq *wq;
	struct shca_qp *qp;
	int with_imm, op;
	u32 idx;

	qp = kcq->last_qp;
	if (!qp || qp->qpn != qpn) {
		qp = xa_load(&kcq->qps, qpn);
		if (!qp)
			return false;
		kcq->last_qp = qp;
	}
	shca_wc_clear(wc, qp);

	switch (opcode) {
	case SOFTHCA_CQE_REQ:
		op = softhca_wqe_wc_opcode(wqe_op, &with_imm);
		if (op < 0) {
			wc->status = IB_WC_GENERAL_ERR;
			break;
		}
		wc->opcode = op;
		if (with_imm) {
			wc->wc_flags |= IB_WC_WITH_IMM;
			wc->ex.imm_data = cqe->imm_inval_pkey;
		}
		wc->byte_len = op == IB_WC_COMP_SWAP || op == IB_WC_FETCH_ADD ?
			       SOFTHCA_ATOMIC_SIZE : be32_to_cpu(cqe->byte_cnt);
		break;
	case SOFTHCA_CQE_RESP_WR_IMM:
	case SOFTHCA_CQE_RESP_SEND:
	case SOFTHCA_CQE_RESP_SEND_IMM:
		wc->opcode = opcode == SOFTHCA_CQE_RESP_WR_IMM ?
			     IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
		if (opcode != SOFTHCA_CQE_RESP_SEND) {
			wc->wc_flags |= IB_WC_WITH_IMM;
			wc->ex.imm_data = cqe->imm_inval_pkey;
		}
		wc->byte_len = be32_to_cpu(cqe->byte_cnt);
		wc->src_qp = rqpn & SOFTHCA_24BIT_MASK;
		wc->sl = (rqpn >> SOFTHCA_CQE_SL_SHIFT) & SOFTHCA_CQE_SL_MASK;
		break;
	case SOFTHCA_CQE_REQ_ERR:
	case SOFTHCA_CQE_RESP_ERR:
		wc->status = softhca_syndrome_wc_status(cqe->syndrome);
		wc->vendor_err = cqe->vendor_err_synd;
		/* Not meaningful with an error status: best effort. */
		op = softhca_wqe_wc_opcode(wqe_op, &with_imm);
		wc->opcode = opcode == SOFTHCA_CQE_RESP_ERR ? IB_WC_RECV :
			     op < 0 ? IB_WC_SEND : op;
		break;
	default:
		wc->status = IB_WC_GENERAL_ERR;
		break;
	}

	/* The WR: by WQE counter (SQ, retiring the unsignaled before it)... */
	if (opcode == SOFTHCA_CQE_REQ || opcode == SOFTHCA_CQE_REQ_ERR) {
		wq = &qp->kqp->sq;
		idx = be16_to_cpu(cqe->wqe_counter) & (wq->cnt - 1);
		wc->wr_id = wq->wrid[idx];
		WRITE_ONCE(wq->tail, wq->wqe_head[idx]);
		return true;
	}
	/* ...or the oldest posted receive (RQ). */
	wq = &qp->kqp->rq;
	if (!wq->cnt)
		return false;
	wc->wr_id = wq->wrid[wq->tail & (wq->cnt - 1)];
	WRITE_ONCE(wq->tail, wq->tail + 1);
	return true;
}

static struct softhca_cqe *shca_kcq_next(struct shca_kcq *kcq, u32 ci)
{
	struct softhca_cqe *cqe = &kcq->ring[ci & (kcq->cqe_cnt - 1)];

	/* One load: the engine may be writing this CQE right now. */
	if (!softhca_cqe_is_sw(READ_ONCE(cqe->op_own), ci, kcq->cqe_cnt))
		return NULL;
	return cqe;
}

int shca_poll_cq(struct ib_cq *ibcq, int ne, struct ib_wc *wc)
{
	struct shca_kcq *kcq = to_shca_cq(ibcq)->kcq;
	unsigned long flags;
	u32 ci, start;
	int n = 0;

	if (WARN_ON_ONCE(!kcq))
		return -EINVAL;
	spin_lock_irqsave(&kcq->lock, flags);
	start = ci = kcq->cons_index;
	while (n < ne) {
		struct softhca_cqe *cqe = shca_kcq_next(kcq, ci);

		if (!cqe)
			break;
		/* Owner and opcode seen: only now read the rest. */
		dma_rmb();
		ci++;
		if (shca_kcq_parse(kcq, cqe, &wc[n]))
			n++;
	}
	if (ci != start) {
		kcq->cons_index = ci;
		/* Our reads of the CQEs before the index that frees them. */
		smp_store_release(&kcq->dbr->set_ci,
				  cpu_to_be32(ci & SOFTHCA_CQ_DB_CI_MASK));
	}
	spin_unlock_irqrestore(&kcq->lock, flags);
	return n;
}

int shca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct shca_cq *cq = to_shca_cq(ibcq);
	struct shca_kcq *kcq = cq->kcq;
	unsigned long irqflags;
	bool waiting;
	u32 arm;

	if (WARN_ON_ONCE(!kcq))
		return -EINVAL;
	spin_lock_irqsave(&kcq->lock, irqflags);
	arm = softhca_enc_cq_arm(atomic_read(&kcq->arm_sn),
				 (flags & IB_CQ_SOLICITED_MASK) ==
				 IB_CQ_SOLICITED, kcq->cons_index);
	WRITE_ONCE(kcq->dbr->arm, cpu_to_be32(arm));
	/*
	 * The arm store before the look at the next CQE; pairs with the
	 * engine's barrier between a CQE's owner byte and its arm load: either
	 * the engine sees this arm, or we see its CQE (events.md).
	 */
	smp_mb();
	waiting = shca_kcq_next(kcq, kcq->cons_index);
	spin_unlock_irqrestore(&kcq->lock, irqflags);
	/* A sleeping engine evaluates the arm (it fires at once) now. */
	if (waiting)
		hca_kernel_doorbell(to_shca_dev(ibcq->device)->hca, cq->db_slot);
	return (flags & IB_CQ_REPORT_MISSED_EVENTS) && waiting ? 1 : 0;
}

/*
 * Remove @qpn's unpolled CQEs from @cq (its QP was destroyed or reset: the
 * engine writes no more for it), as the provider does.
 */
static void shca_kcq_clean(struct shca_cq *cq, u32 qpn)
{
	struct shca_kcq *kcq = cq->kcq;
	unsigned long flags;
	u32 end, removed;

	spin_lock_irqsave(&kcq->lock, flags);
	end = kcq->cons_index;
	while (end - kcq->cons_index < kcq->cqe_cnt && shca_kcq_next(kcq, end))
		end++;
	/* Ownership of [ci, end) seen: only now read the contents. */
	dma_rmb();
	removed = softhca_cq_compact_run(kcq->ring, kcq->cqe_cnt, kcq->cons_index,
					 end, cpu_to_be32(qpn),
					 cpu_to_be32(SOFTHCA_24BIT_MASK));
	if (removed) {
		kcq->cons_index += removed;
		/* The moves (reads and writes) before the index that frees. */
		smp_store_release(&kcq->dbr->set_ci,
				  cpu_to_be32(kcq->cons_index &
					      SOFTHCA_CQ_DB_CI_MASK));
	}
	spin_unlock_irqrestore(&kcq->lock, flags);
}

static void shca_kqp_clean_cqs(struct shca_qp *qp)
{
	struct shca_cq *scq = to_shca_cq(qp->ibqp.send_cq);
	struct shca_cq *rcq = to_shca_cq(qp->ibqp.recv_cq);

	shca_kcq_clean(scq, qp->qpn);
	if (rcq != scq)
		shca_kcq_clean(rcq, qp->qpn);
}

/* ---- QPs ---------------------------------------------------------------- */

static int shca_kwq_init(struct shca_kwq *wq, void *buf, u32 cnt,
			 u32 max_post, bool sq)
{
	spin_lock_init(&wq->lock);
	wq->buf = buf;
	wq->cnt = cnt;
	wq->max_post = max_post;
	if (!cnt)
		return 0;
	wq->wrid = kvcalloc(cnt, sizeof(*wq->wrid), GFP_KERNEL);
	if (!wq->wrid)
		return -ENOMEM;
	if (sq) {
		wq->wqe_head = kvcalloc(cnt, sizeof(*wq->wqe_head),
					GFP_KERNEL);
		if (!wq->wqe_head)
			return -ENOMEM;
	}
	return 0;
}

static void shca_kwq_fini(struct shca_kwq *wq)
{
	kvfree(wq->wrid);
	kvfree(wq->wqe_head);
}

static void shca_kqp_unlink(struct shca_qp *qp, struct shca_cq *cq)
{
	unsigned long flags;

	/*
	 * Not under the CQ lock: poll_cq (softirq) takes that lock, and the
	 * xarray's own lock is taken with softirqs on. poll_cq looks the QP
	 * up (RCU) and uses it only under the CQ lock, so once it is erased
	 * and the lock was taken once more, no poll_cq uses it.
	 */
	xa_cmpxchg(&cq->kcq->qps, qp->qpn, qp, NULL, GFP_KERNEL);
	spin_lock_irqsave(&cq->kcq->lock, flags);
	if (cq->kcq->last_qp == qp)
		cq->kcq->last_qp = NULL;
	spin_unlock_irqrestore(&cq->kcq->lock, flags);
}

/* After CREATE_QP; the QP's CQs are kernel CQs (checked by the caller). */
int shca_kqp_create(struct shca_qp *qp, void *rq_buf, u32 rq_wqe_cnt,
		    u32 rq_wqe_shift, u32 rq_max_gs, void *sq_buf,
		    u32 sq_wqebb_cnt, u32 sq_max_post, u32 max_send_sge,
		    u32 max_inline, struct softhca_qp_dbr *dbr)
{
	struct shca_cq *scq = to_shca_cq(qp->ibqp.send_cq);
	struct shca_cq *rcq = to_shca_cq(qp->ibqp.recv_cq);
	struct shca_kqp *kqp;
	int err;

	kqp = kzalloc(sizeof(*kqp), GFP_KERNEL);
	if (!kqp)
		return -ENOMEM;
	qp->kqp = kqp;
	err = shca_kwq_init(&kqp->sq, sq_buf, sq_wqebb_cnt, sq_max_post, true);
	if (err)
		goto err_free;
	kqp->sq.max_gs = max_send_sge;
	err = shca_kwq_init(&kqp->rq, rq_buf, rq_wqe_cnt, rq_wqe_cnt, false);
	if (err)
		goto err_free;
	kqp->rq.stride_shift = rq_wqe_shift;
	kqp->rq.max_gs = rq_max_gs;
	kqp->dbr = dbr;
	kqp->max_inline = max_inline;

	err = xa_insert(&scq->kcq->qps, qp->qpn, qp, GFP_KERNEL);
	if (err)
		goto err_free;
	if (rcq != scq) {
		err = xa_insert(&rcq->kcq->qps, qp->qpn, qp, GFP_KERNEL);
		if (err)
			goto err_scq;
	}
	return 0;

err_scq:
	shca_kqp_unlink(qp, scq);
err_free:
	shca_kwq_fini(&kqp->sq);
	shca_kwq_fini(&kqp->rq);
	kfree(kqp);
	qp->kqp = NULL;
	return err;
}

/* After DESTROY_QP: the engine writes no more CQEs for it. */
void shca_kqp_destroy(struct shca_qp *qp)
{
	struct shca_kqp *kqp = qp->kqp;

	shca_kqp_clean_cqs(qp);
	shca_kqp_unlink(qp, to_shca_cq(qp->ibqp.send_cq));
	shca_kqp_unlink(qp, to_shca_cq(qp->ibqp.recv_cq));
	shca_kwq_fini(&kqp->sq);
	shca_kwq_fini(&kqp->rq);
	kfree(kqp);
	qp->kqp = NULL;
}

/* The QP went to RESET: the queues start over at 0, as the HCA's do. */
void shca_kqp_reset(struct shca_qp *qp)
{
	struct shca_kqp *kqp = qp->kqp;
	unsigned long flags;

	/* Its CQEs name WRs of the old counters: they go first. */
	shca_kqp_clean_cqs(qp);
	spin_lock_irqsave(&kqp->sq.lock, flags);
	kqp->sq.head = 0;
	kqp->sq.cur_post = 0;
	WRITE_ONCE(kqp->sq.tail, 0);
	WRITE_ONCE(kqp->dbr->snd_counter, 0);
	spin_unlock_irqrestore(&kqp->sq.lock, flags);
	spin_lock_irqsave(&kqp->rq.lock, flags);
	kqp->rq.head = 0;
	WRITE_ONCE(kqp->rq.tail, 0);
	WRITE_ONCE(kqp->dbr->rcv_counter, 0);
	spin_unlock_irqrestore(&kqp->rq.lock, flags);
}

static int shca_wr_opcode(enum ib_wr_opcode op)
{
	switch (op) {
	case IB_WR_RDMA_WRITE:
		return SOFTHCA_OPCODE_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return SOFTHCA_OPCODE_RDMA_WRITE_IMM;
	case IB_WR_SEND:
		return SOFTHCA_OPCODE_SEND;
	case IB_WR_SEND_WITH_IMM:
		return SOFTHCA_OPCODE_SEND_IMM;
	case IB_WR_RDMA_READ:
		return SOFTHCA_OPCODE_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return SOFTHCA_OPCODE_ATOMIC_CS;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return SOFTHCA_OPCODE_ATOMIC_FA;
	default:
		return -1;
	}
}

/* The 16-byte segment @ds units after the WQE at SQ byte offset @off. */
static void *shca_sq_seg(struct shca_kwq *sq, u32 off, u32 ds)
{
	u32 size = sq->cnt * SOFTHCA_SEND_WQE_BB;

	return sq->buf + ((off + ds * SOFTHCA_DS_SIZE) & (size - 1));
}

static void shca_set_data_seg(struct softhca_wqe_data_seg *seg, u32 len,
			      u32 lkey, u64 addr)
{
	seg->byte_count = cpu_to_be32(len);
	seg->lkey = cpu_to_be32(lkey);
	seg->addr = cpu_to_be64(addr);
}

/*
 * Inline payload from the SGEs (kernel virtual addresses) after the WQE's
 * first @ds units, following the ring wrap; zero padding to a DS. Returns
 * the DS it takes (0 for no payload), or -EINVAL if it does not fit.
 */
static int shca_set_inline(struct shca_kwq *sq, u32 max_inline, u32 off,
			   u32 ds, const struct ib_send_wr *wr)
{
	u32 size = sq->cnt * SOFTHCA_SEND_WQE_BB;
	struct softhca_wqe_inline_seg *hdr = shca_sq_seg(sq, off, ds);
	u32 pos = (off + ds * SOFTHCA_DS_SIZE + sizeof(*hdr)) & (size - 1);
	u64 total = 0;
	u32 used, pad;
	int i;

	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (total > max_inline)
		return -EINVAL;
	if (!total)
		return 0;
	hdr->byte_count = cpu_to_be32((u32)total | SOFTHCA_INLINE_SEG);
	for (i = 0; i < wr->num_sge; i++) {
		const u8 *src = (const u8 *)(uintptr_t)wr->sg_list[i].addr;
		u32 len = wr->sg_list[i].length;

		while (len) {
			u32 n = min(len, size - pos);

			memcpy(sq->buf + pos, src, n);
			src += n;
			len -= n;
			pos = (pos + n) & (size - 1);
		}
	}
	used = sizeof(*hdr) + total;
	pad = -used & (SOFTHCA_DS_SIZE - 1);
	/* The padding never crosses the ring's end (a DS never does). */
	memset(sq->buf + pos, 0, pad);
	return DIV_ROUND_UP(used, SOFTHCA_DS_SIZE);
}

/* One send WR into the SQ at cur_post; under sq->lock. */
static int shca_post_one(struct shca_qp *qp, const struct ib_send_wr *wr)
{
	struct shca_kqp *kqp = qp->kqp;
	struct shca_kwq *sq = &kqp->sq;
	u32 off = (sq->cur_post & (sq->cnt - 1)) * SOFTHCA_SEND_WQE_BB;
	struct softhca_wqe_ctrl_seg *ctrl = sq->buf + off;
	int opcode = shca_wr_opcode(wr->opcode);
	u32 ds = 1, slot, wqebbs;
	int i, n;

	if (opcode < 0)
		return -EINVAL;
	if (sq->head - READ_ONCE(sq->tail) >= sq->max_post)
		return -ENOMEM;
	if (wr->num_sge < 0 || wr->num_sge > sq->max_gs)
		return -EINVAL;

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ: {
		struct softhca_wqe_raddr_seg *r = shca_sq_seg(sq, off, ds++);

		r->raddr = cpu_to_be64(rdma_wr(wr)->remote_addr);
		r->rkey = cpu_to_be32(rdma_wr(wr)->rkey);
		r->reserved = 0;
		break;
	}
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD: {
		const struct ib_atomic_wr *a = atomic_wr(wr);
		struct softhca_wqe_raddr_seg *r = shca_sq_seg(sq, off, ds++);
		struct softhca_wqe_atomic_seg *at = shca_sq_seg(sq, off, ds++);

		r->raddr = cpu_to_be64(a->remote_addr);
		r->rkey = cpu_to_be32(a->rkey);
		r->reserved = 0;
		if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP) {
			at->swap_add = cpu_to_be64(a->swap);
			at->compare = cpu_to_be64(a->compare_add);
		} else {
			at->swap_add = cpu_to_be64(a->compare_add);
			at->compare = 0;
		}
		break;
	}
	default:
		break;
	}

	if ((wr->send_flags & IB_SEND_INLINE) &&
	    wr->opcode != IB_WR_RDMA_READ &&
	    wr->opcode != IB_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IB_WR_ATOMIC_FETCH_AND_ADD) {
		n = shca_set_inline(sq, kqp->max_inline, off, ds, wr);
		if (n < 0)
			return n;
		ds += n;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			const struct ib_sge *sg = &wr->sg_list[i];

			if (!sg->length)
				continue;
			shca_set_data_seg(shca_sq_seg(sq, off, ds++), sg->length,
					  sg->lkey, sg->addr);
		}
	}

	ctrl->opmod_idx_opcode =
		cpu_to_be32(softhca_enc_ctrl_opcode(0, sq->cur_post, opcode));
	ctrl->qpn_ds = cpu_to_be32(softhca_enc_ctrl_qpn_ds(qp->qpn, ds));
	ctrl->signature = 0;
	ctrl->rsvd9[0] = 0;
	ctrl->rsvd9[1] = 0;
	ctrl->fm_ce_se =
		softhca_enc_fm_ce_se(qp->sig_all ||
				     (wr->send_flags & IB_SEND_SIGNALED),
				     wr->send_flags & IB_SEND_SOLICITED,
				     wr->send_flags & IB_SEND_FENCE);
	ctrl->imm = (wr->opcode == IB_WR_SEND_WITH_IMM ||
		     wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM) ?
		    wr->ex.imm_data : 0;

	slot = sq->cur_post & (sq->cnt - 1);
	sq->wrid[slot] = wr->wr_id;
	sq->head++;
	/* A CQE for this WQE retires it and every unsignaled one before. */
	sq->wqe_head[slot] = sq->head;
	wqebbs = softhca_enc_ds_to_wqebbs(ds);
	sq->cur_post += wqebbs;
	return 0;
}

int shca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct shca_qp *qp = to_shca_qp(ibqp);
	struct shca_kqp *kqp = qp->kqp;
	unsigned long flags;
	int err = 0, nreq = 0;

	if (WARN_ON_ONCE(!kqp))
		return -EINVAL;
	spin_lock_irqsave(&kqp->sq.lock, flags);
	for (; wr; wr = wr->next, nreq++) {
		err = shca_post_one(qp, wr);
		if (err) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
	}
	if (nreq) {
		/* The WQEs before the doorbell record. */
		dma_wmb();
		WRITE_ONCE(kqp->dbr->snd_counter,
			   cpu_to_be32(kqp->sq.cur_post & SOFTHCA_WQ_DBR_MASK));
	}
	spin_unlock_irqrestore(&kqp->sq.lock, flags);
	if (nreq)
		hca_kernel_doorbell(to_shca_dev(ibqp->device)->hca, qp->db_slot);
	return err;
}

int shca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct shca_qp *qp = to_shca_qp(ibqp);
	struct shca_kqp *kqp = qp->kqp;
	struct shca_kwq *rq;
	unsigned long flags;
	int err = 0, nreq = 0;

	if (WARN_ON_ONCE(!kqp))
		return -EINVAL;
	rq = &kqp->rq;
	spin_lock_irqsave(&rq->lock, flags);
	for (; wr; wr = wr->next, nreq++) {
		struct softhca_wqe_data_seg *seg;
		u32 slot = rq->head & (rq->cnt - 1);
		int i, n = 0;

		if (!rq->cnt || rq->head - READ_ONCE(rq->tail) >= rq->cnt)
			err = -ENOMEM;
		else if (wr->num_sge < 0 || wr->num_sge > rq->max_gs)
			err = -EINVAL;
		if (err) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
		seg = rq->buf + (slot << rq->stride_shift);
		for (i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			shca_set_data_seg(&seg[n++], wr->sg_list[i].length,
					  wr->sg_list[i].lkey,
					  wr->sg_list[i].addr);
		}
		if (n < rq->max_gs)
			shca_set_data_seg(&seg[n], 0, SOFTHCA_INVALID_LKEY, 0);
		rq->wrid[slot] = wr->wr_id;
		rq->head++;
	}
	if (nreq) {
		dma_wmb();
		WRITE_ONCE(kqp->dbr->rcv_counter,
			   cpu_to_be32(rq->head & SOFTHCA_WQ_DBR_MASK));
	}
	spin_unlock_irqrestore(&rq->lock, flags);
	/* A QP in ERR flushes it; an RNR-waiting requester may retry. */
	if (nreq)
		hca_kernel_doorbell(to_shca_dev(ibqp->device)->hca, qp->db_slot);
	return err;
}
