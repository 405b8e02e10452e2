// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the kernel verbs of kernel CQs and QPs, RC and UD
 * (created with udata NULL): poll_cq, req_notify_cq, post_send, post_recv. The same
 * protocol as the provider (user/poll.c, arm.c, send.c, recv.c) on the same
 * queue formats, with the same code: the WQE builder
 * (<rdma/softhca-wqe.h>), the CQE decoder (<rdma/softhca-cqe.h>), the
 * opcode table (<rdma/softhca-opcodes.h>) and the encoders of
 * <rdma/softhca-enc.h>:
 *
 * - post_send / post_recv build WQEs in the queue memory, then (dma_wmb)
 *   the doorbell record, then hca_kernel_doorbell(): the QP's hint in the
 *   HCA's own doorbell area, a full barrier and, only if its engine thread
 *   does not watch the area, a wake-up of that thread. Any context, no
 *   sleeping.
 * - poll_cq takes CQEs whose owner bit matches the lap, dma_rmb(), decodes
 *   them into ib_wc (dropping a CQE that names no outstanding WR, as the
 *   provider does) and writes the consumer index to set_ci.
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
#include <rdma/softhca-cqe.h>
#include <rdma/softhca-enc.h>
#include <rdma/softhca-opcodes.h>
#include <rdma/softhca-wqe.h>

#include "softhca.h"

/* The numbers the shared codecs use are ib_core's. */
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
static_assert(SOFTHCA_WR_RDMA_WRITE == (int)IB_WR_RDMA_WRITE);
static_assert(SOFTHCA_WR_RDMA_WRITE_WITH_IMM == (int)IB_WR_RDMA_WRITE_WITH_IMM);
static_assert(SOFTHCA_WR_SEND == (int)IB_WR_SEND);
static_assert(SOFTHCA_WR_SEND_WITH_IMM == (int)IB_WR_SEND_WITH_IMM);
static_assert(SOFTHCA_WR_RDMA_READ == (int)IB_WR_RDMA_READ);
static_assert(SOFTHCA_WR_ATOMIC_CMP_AND_SWP == (int)IB_WR_ATOMIC_CMP_AND_SWP);
static_assert(SOFTHCA_WR_LOCAL_INV == (int)IB_WR_LOCAL_INV);
static_assert(SOFTHCA_WR_SEND_WITH_INV == (int)IB_WR_SEND_WITH_INV);
static_assert(SOFTHCA_WR_REG_MR == (int)IB_WR_REG_MR);
static_assert(SOFTHCA_WC_LOCAL_INV == (int)IB_WC_LOCAL_INV);
static_assert(SOFTHCA_WC_REG_MR == (int)IB_WC_REG_MR);
static_assert(SOFTHCA_WR_ATOMIC_FETCH_AND_ADD ==
	      (int)IB_WR_ATOMIC_FETCH_AND_ADD);

/* The builder reads ib_sge arrays as they are. */
static_assert(sizeof(struct ib_sge) == sizeof(struct softhca_sge));
static_assert(offsetof(struct ib_sge, addr) ==
	      offsetof(struct softhca_sge, addr));
static_assert(offsetof(struct ib_sge, length) ==
	      offsetof(struct softhca_sge, length));
static_assert(offsetof(struct ib_sge, lkey) ==
	      offsetof(struct softhca_sge, lkey));

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

/*
 * A datagram's receive: what ib_init_ah_attr_from_wc() needs to answer it,
 * the network header type of its GRH area, and the source MAC and VLAN.
 */
static void shca_wc_datagram(const struct softhca_wc *w, struct ib_wc *wc)
{
	wc->network_hdr_type = w->l3 == SOFTHCA_CQE_L3_IPV4 ?
			       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
	memcpy(wc->smac, w->smac, ETH_ALEN);
	wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE | IB_WC_WITH_SMAC;
	if (w->vlan) {
		wc->vlan_id = w->vlan_id;
		wc->wc_flags |= IB_WC_WITH_VLAN;
	}
}

/* A decoded work completion (softhca_cqe_decode()) as ib_core has it. */
static void shca_wc_to_ib(const struct softhca_wc *w, struct shca_qp *qp,
			  struct ib_wc *wc)
{
	SOFTHCA_WC_COPY(wc, w, IB_WC_WITH_IMM, IB_WC_GRH);
	wc->ex.imm_data = w->imm;
	if (w->with_inv) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = w->inv_rkey;
	}
	wc->qp = &qp->ibqp;
	wc->port_num = SHCA_PORT;
	if (w->grh)
		shca_wc_datagram(w, wc);
}

/*
 * One CQE the consumer owns into @wc: its QP among @cq's kernel QPs, then
 * the shared decoder with that QP's queues that complete on @cq. Returns
 * false when the CQE matches no outstanding WR (its QP destroyed meanwhile,
 * its queue on another CQ, a WR not posted or already retired): it is
 * dropped.
 */
static bool shca_kcq_parse(struct shca_cq *cq, const struct softhca_cqe *cqe,
			   struct ib_wc *wc)
{
	struct shca_kcq *kcq = cq->kcq;
	u32 qpn = softhca_cqe_qpn(cqe);
	struct softhca_wc w;
	struct shca_qp *qp;

	qp = kcq->last_qp;
	if (!qp || qp->qpn != qpn) {
		qp = xa_load(&kcq->qps, qpn);
		if (!qp)
			return false;
		kcq->last_qp = qp;
	}
	if (softhca_cqe_decode_srq(cqe,
				   qp->ibqp.send_cq == &cq->ibcq ?
				   &qp->kqp->sq.wrs : NULL,
				   qp->ibqp.recv_cq == &cq->ibcq ?
				   &qp->kqp->rq.wrs : NULL,
				   qp->ibqp.srq && qp->ibqp.recv_cq == &cq->ibcq ?
				   &to_shca_srq(qp->ibqp.srq)->wrs : NULL, &w))
		return false;
	shca_wc_to_ib(&w, qp, wc);
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
	struct shca_cq *cq = to_shca_cq(ibcq);
	struct shca_kcq *kcq = cq->kcq;
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
		if (shca_kcq_parse(cq, cqe, &wc[n]))
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

/* The WR record of a queue of @cnt slots; an SQ's keeps wqe_head[] too. */
static int shca_wrs_init(struct softhca_wq_wrs *wrs, u32 cnt, bool sq)
{
	wrs->cnt = cnt;
	if (!cnt)
		return 0;
	wrs->wrid = kvcalloc(cnt, sizeof(*wrs->wrid), GFP_KERNEL);
	if (!wrs->wrid)
		return -ENOMEM;
	if (sq) {
		wrs->wqe_head = kvcalloc(cnt, sizeof(*wrs->wqe_head),
					 GFP_KERNEL);
		if (!wrs->wqe_head)
			return -ENOMEM;
	}
	return 0;
}

static void shca_wrs_fini(struct softhca_wq_wrs *wrs)
{
	kvfree(wrs->wrid);
	kvfree(wrs->wqe_head);
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
		    u32 sq_wqebb_cnt, u32 sq_max_post, u32 sq_max_wqebbs,
		    u32 max_send_sge, u32 max_inline,
		    struct softhca_qp_dbr *dbr, u32 tp, u32 pdn)
{
	struct shca_cq *scq = to_shca_cq(qp->ibqp.send_cq);
	struct shca_cq *rcq = to_shca_cq(qp->ibqp.recv_cq);
	struct shca_kqp *kqp;
	int err;

	kqp = kzalloc(sizeof(*kqp), GFP_KERNEL);
	if (!kqp)
		return -ENOMEM;
	qp->kqp = kqp;
	spin_lock_init(&kqp->sq.lock);
	/* Kernel QPs do not sign their WQEs (only a user can ask). */
	kqp->sq.fmt.ring.buf = sq_buf;
	kqp->sq.fmt.ring.size = sq_wqebb_cnt * SOFTHCA_SEND_WQE_BB;
	kqp->sq.fmt.qpn = qp->qpn;
	kqp->sq.fmt.max_wqebbs = sq_max_wqebbs;
	kqp->sq.fmt.max_inline = max_inline;
	kqp->sq.fmt.tp = tp;
	kqp->sq.fmt.pdn = pdn;
	kqp->sq.max_post = sq_max_post;
	kqp->sq.max_gs = max_send_sge;
	err = shca_wrs_init(&kqp->sq.wrs, sq_wqebb_cnt, true);
	if (err)
		goto err_free;
	spin_lock_init(&kqp->rq.lock);
	kqp->rq.buf = rq_buf;
	kqp->rq.stride_shift = rq_wqe_shift;
	kqp->rq.max_gs = rq_max_gs;
	err = shca_wrs_init(&kqp->rq.wrs, rq_wqe_cnt, false);
	if (err)
		goto err_free;
	kqp->dbr = dbr;

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
	shca_wrs_fini(&kqp->sq.wrs);
	shca_wrs_fini(&kqp->rq.wrs);
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
	shca_wrs_fini(&kqp->sq.wrs);
	shca_wrs_fini(&kqp->rq.wrs);
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
	WRITE_ONCE(kqp->sq.wrs.head, 0);
	kqp->sq.cur_post = 0;
	WRITE_ONCE(kqp->sq.wrs.tail, 0);
	WRITE_ONCE(kqp->dbr->snd_counter, 0);
	spin_unlock_irqrestore(&kqp->sq.lock, flags);
	spin_lock_irqsave(&kqp->rq.lock, flags);
	WRITE_ONCE(kqp->rq.wrs.head, 0);
	WRITE_ONCE(kqp->rq.wrs.tail, 0);
	WRITE_ONCE(kqp->dbr->rcv_counter, 0);
	spin_unlock_irqrestore(&kqp->rq.lock, flags);
}

/*
 * ib_send_wr -> the shared builder's WR descriptor; -EINVAL for opcodes
 * softhca does not run. The containers (ib_ud_wr of a datagram QP,
 * ib_rdma_wr, ib_atomic_wr) are read only for the QPs and opcodes that
 * come in them; the builder refuses a datagram WR without an AH, or with
 * one of another PD.
 */
static int shca_wr_to_desc(const struct shca_qp *qp,
			   const struct ib_send_wr *wr,
			   struct softhca_send_wr *d)
{
	int opcode = softhca_wr_opcode(wr->opcode);
	const struct softhca_opcode_info *op;
	const struct ib_atomic_wr *a;

	if (opcode < 0)
		return -EINVAL;
	op = &softhca_opcodes[opcode];
	/* Kernel ULPs have no memory windows (mw.c): no bind WR. */
	if (op->mkop == SOFTHCA_MKOP_BIND)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->op = op;
	d->fm_ce_se = softhca_enc_fm_ce_se(qp->sig_all ||
					   (wr->send_flags & IB_SEND_SIGNALED),
					   wr->send_flags & IB_SEND_SOLICITED,
					   wr->send_flags & IB_SEND_FENCE);
	d->send_inline = !!(wr->send_flags & IB_SEND_INLINE);
	/* The key a LOCAL_INV or SEND_WITH_INV names travels in ctrl.imm. */
	d->imm = op->mkop == SOFTHCA_MKOP_NONE ? wr->ex.imm_data :
		 cpu_to_be32(wr->ex.invalidate_rkey);
	d->sg = (const struct softhca_sge *)wr->sg_list;
	d->num_sge = wr->num_sge;
	if (qp->kqp->sq.fmt.tp == SOFTHCA_TP_UD) {
		const struct ib_ud_wr *u = ud_wr(wr);

		d->av = u->ah ? &to_shca_ah(u->ah)->av : NULL;
		d->remote_qpn = u->remote_qpn;
		d->remote_qkey = u->remote_qkey;
	} else if (op->segs & SOFTHCA_SEG_ATOMIC) {
		/* compare_add is CS's compare and FA's addend. */
		a = atomic_wr(wr);
		d->remote_addr = a->remote_addr;
		d->rkey = a->rkey;
		d->swap_add = op->flags & SOFTHCA_OPF_COMPARE ? a->swap :
				a->compare_add;
		d->compare = a->compare_add;
	} else if (op->segs & SOFTHCA_SEG_RADDR) {
		d->remote_addr = rdma_wr(wr)->remote_addr;
		d->rkey = rdma_wr(wr)->rkey;
	}
	return 0;
}

/*
 * IB_WR_REG_MR: a UMR WQE that registers @rw->mr (ib_alloc_mr) with the
 * page list shca_map_mr_sg() built, under the key the ULP chose
 * (ib_update_fast_reg_key()) and @rw->access.
 */
static int shca_build_reg_mr(const struct shca_qp *qp,
			     const struct ib_reg_wr *rw)
{
	const struct shca_mr *mr = to_shca_mr(rw->mr);
	struct softhca_umr_wr u = {
		.fm_ce_se = softhca_enc_fm_ce_se(qp->sig_all ||
						 (rw->wr.send_flags &
						  IB_SEND_SIGNALED), false,
						 rw->wr.send_flags &
						 IB_SEND_FENCE),
		.mkey = rw->key,
		.access = shca_mr_access(rw->access),
		.iova = rw->mr->iova,
		.length = rw->mr->length,
		.page_shift = ilog2(rw->mr->page_size),
		.npages = mr->npages,
		.list = (uintptr_t)mr->list,
	};

	if (mr->umem || !mr->npages)
		return -EINVAL;
	return softhca_build_umr_wqe(&qp->kqp->sq.fmt, qp->kqp->sq.cur_post, &u);
}

/* One send WR into the SQ at cur_post; under sq->lock. */
static int shca_post_one(struct shca_qp *qp, const struct ib_send_wr *wr)
{
	struct shca_ksq *sq = &qp->kqp->sq;
	struct softhca_send_wr d;
	int bbs;

	if (softhca_wq_overflow(sq->wrs.head, READ_ONCE(sq->wrs.tail), 0,
				sq->max_post))
		return -ENOMEM;
	if (wr->opcode == IB_WR_REG_MR) {
		bbs = shca_build_reg_mr(qp, reg_wr(wr));
	} else {
		bbs = shca_wr_to_desc(qp, wr, &d);
		if (bbs)
			return bbs;
		if (wr->num_sge < 0 || wr->num_sge > sq->max_gs)
			return -EINVAL;
		bbs = softhca_build_send_wqe(&sq->fmt, sq->cur_post, &d);
	}
	if (bbs < 0)
		return bbs;
	softhca_wq_wrs_record(&sq->wrs, sq->cur_post & (sq->wrs.cnt - 1),
			      wr->wr_id, sq->wrs.head);
	/* poll_cq reads it to tell a posted WR from a stale slot. */
	WRITE_ONCE(sq->wrs.head, sq->wrs.head + 1);
	sq->cur_post += bbs;
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
	struct shca_krq *rq;
	unsigned long flags;
	int err = 0, nreq = 0;

	if (WARN_ON_ONCE(!kqp))
		return -EINVAL;
	rq = &kqp->rq;
	spin_lock_irqsave(&rq->lock, flags);
	for (; wr; wr = wr->next, nreq++) {
		u32 slot = rq->wrs.head & (rq->wrs.cnt - 1);

		if (!rq->wrs.cnt ||
		    softhca_wq_overflow(rq->wrs.head, READ_ONCE(rq->wrs.tail),
					0, rq->wrs.cnt))
			err = -ENOMEM;
		else if (wr->num_sge < 0 || wr->num_sge > rq->max_gs ||
			 softhca_set_recv_wqe(rq->buf + (slot << rq->stride_shift),
					      1U << rq->stride_shift, 0,
					      (const struct softhca_sge *)wr->sg_list,
					      wr->num_sge, qp->qpn,
					      rq->wrs.head) < 0)
			err = -EINVAL;
		if (err) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
		softhca_wq_wrs_record(&rq->wrs, slot, wr->wr_id, rq->wrs.head);
		WRITE_ONCE(rq->wrs.head, rq->wrs.head + 1);
	}
	if (nreq) {
		dma_wmb();
		WRITE_ONCE(kqp->dbr->rcv_counter,
			   cpu_to_be32(rq->wrs.head & SOFTHCA_WQ_DBR_MASK));
	}
	spin_unlock_irqrestore(&rq->lock, flags);
	/* A QP in ERR flushes it; an RNR-waiting requester may retry. */
	if (nreq)
		hca_kernel_doorbell(to_shca_dev(ibqp->device)->hca, qp->db_slot);
	return err;
}
