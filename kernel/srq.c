// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: shared receive queues (create, modify, query,
 * destroy; post_srq_recv for kernel SRQs).
 *
 * As for QPs the kernel sizes the ring from the requested attributes and
 * allocates one zeroed, page-aligned area the provider maps: the ring at
 * offset 0, the doorbell record after it (64-byte aligned). The ring's
 * free list is linked in ring order here, before the HCA sees it, so the
 * model's "the HCA starts at WQE 0" holds whatever the provider does. A
 * ring of cnt WQEs holds cnt - 1 (the free list's tail is never posted),
 * so max_wr + 1 is rounded up. The limit is the model's ARM_RQ.
 *
 * An XRC SRQ (user space only) is the same ring, with its XRC domain and
 * the CQ its completions go to; its number is what initiators name.
 */
#include <linux/log2.h>
#include <rdma/softhca-abi.h>
#include <rdma/softhca-wqe.h>

#include "softhca.h"

#define SHCA_SRQ_NEXT_SIZE	sizeof(struct softhca_srq_next_seg)

static int shca_srq_cmd(struct shca_dev *sdev, u16 op, u32 srqn, u32 limit,
			void *out, size_t outlen)
{
	struct hca_cmd_srq_in in = { .srqn = srqn, .limit = limit };

	return hca_exec(sdev->hca, op, &in, sizeof(in), out, outlen);
}

/* The ring for @attr (granted values written back) and its layout. */
static int shca_srq_layout(const struct hca_caps *caps,
			   struct ib_srq_attr *attr, struct shca_srq *srq,
			   size_t *size)
{
	u32 stride;

	if (!attr->max_wr || attr->max_wr >= caps->max_srq_wqes ||
	    attr->max_sge > caps->max_srq_sge || attr->srq_limit > attr->max_wr)
		return -EINVAL;
	srq->wrs.cnt = roundup_pow_of_two(attr->max_wr + 1);
	stride = SHCA_SRQ_NEXT_SIZE +
		 SOFTHCA_DS_SIZE * max_t(u32, attr->max_sge, 1);
	stride = roundup_pow_of_two(stride);
	srq->wrs.wqe_shift = ilog2(stride);
	if (stride > HCA_SRQ_STRIDE_MAX || srq->wrs.cnt > caps->max_srq_wqes)
		return -EINVAL;
	srq->dbr_offset = ALIGN(srq->wrs.cnt * stride, 64);
	*size = PAGE_ALIGN(srq->dbr_offset + sizeof(struct softhca_srq_dbr));
	attr->max_wr = srq->wrs.cnt - 1;
	attr->max_sge = min_t(u32, softhca_srq_max_gs(stride),
			      caps->max_srq_sge);
	srq->max_gs = attr->max_sge;
	return 0;
}

static void shca_srq_lock(struct softhca_srq_wrs *wrs, int on)
{
	struct shca_srq *srq = container_of(wrs, struct shca_srq, wrs);

	if (on)
		spin_lock_irqsave(&srq->lock, srq->lock_flags);
	else
		spin_unlock_irqrestore(&srq->lock, srq->lock_flags);
}

/* A kernel SRQ's free list and WR records (kverbs polls through them). */
static int shca_ksrq_init(struct shca_srq *srq)
{
	srq->wrs.wrid = kvcalloc(srq->wrs.cnt, sizeof(*srq->wrs.wrid),
				 GFP_KERNEL);
	srq->wrs.posted = kvcalloc(srq->wrs.cnt, 1, GFP_KERNEL);
	if (!srq->wrs.wrid || !srq->wrs.posted) {
		kvfree(srq->wrs.wrid);
		kvfree(srq->wrs.posted);
		return -ENOMEM;
	}
	srq->wrs.lock = shca_srq_lock;
	return 0;
}

static void shca_ksrq_free(struct shca_srq *srq)
{
	kvfree(srq->wrs.wrid);
	kvfree(srq->wrs.posted);
}

int shca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibsrq->device);
	struct shca_srq *srq = to_shca_srq(ibsrq);
	struct softhca_create_srq_req req = {};
	struct softhca_create_srq_resp resp = {};
	struct hca_cmd_create_srq_in in = {};
	struct hca_cmd_create_srq_out out;
	struct ib_srq_attr *attr = &init->attr;
	size_t size;
	int err;

	if (init->srq_type != IB_SRQT_BASIC &&
	    (init->srq_type != IB_SRQT_XRC || !udata))
		return -EOPNOTSUPP;
	if (udata) {
		err = shca_udata_req(udata, &req, sizeof(req));
		if (err)
			return err;
		if (req.comp_mask)
			return -EINVAL;
	}
	err = shca_srq_layout(&sdev->caps, attr, srq, &size);
	if (err)
		return err;
	srq->queue = shca_queue_alloc(udata, size);
	if (IS_ERR(srq->queue))
		return PTR_ERR(srq->queue);
	spin_lock_init(&srq->lock);
	srq->wrs.buf = srq->queue->buf;
	srq->dbr = srq->queue->buf + srq->dbr_offset;
	if (!udata) {
		err = shca_ksrq_init(srq);
		if (err)
			goto err_queue;
	}
	softhca_srq_init(&srq->wrs);

	in.pdn = to_shca_pd(ibsrq->pd)->pdn;
	in.flags = udata ? 0 : HCA_QP_PRIVILEGED;
	in.buf = srq->queue->buf;
	in.wqe_cnt = srq->wrs.cnt;
	in.wqe_shift = srq->wrs.wqe_shift;
	in.dbr = srq->dbr;
	in.limit = attr->srq_limit;
	if (init->srq_type == IB_SRQT_XRC) {
		in.xrcdn = to_shca_xrcd(init->ext.xrc.xrcd)->xrcdn;
		in.cqn = to_shca_cq(init->ext.cq)->cqn;
	}
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_SRQ, &in, sizeof(in),
		       &out, sizeof(out));
	if (err)
		goto err_wrs;
	srq->srqn = out.srqn;
	/* ib_uverbs answers an XRC SRQ's creator with this number. */
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;
	err = shca_srq_ev_register(sdev, &srq->ev, ibsrq, srq->srqn);
	if (err)
		goto err_cmd;
	if (udata) {
		resp.srqn = srq->srqn;
		resp.wqe_cnt = srq->wrs.cnt;
		resp.wqe_shift = srq->wrs.wqe_shift;
		resp.max_gs = srq->max_gs;
		resp.dbr_offset = srq->dbr_offset;
		resp.mmap_offset =
			rdma_user_mmap_get_offset(&srq->queue->rdma_entry);
		resp.mmap_size = size;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_ev;
	}
	return 0;

err_ev:
	shca_qp_ev_unregister(sdev, &srq->ev);
err_cmd:
	WARN_ON(shca_srq_cmd(sdev, HCA_CMD_DESTROY_SRQ, srq->srqn, 0, NULL, 0));
err_wrs:
	shca_ksrq_free(srq);
err_queue:
	shca_queue_free(srq->queue);
	return err;
}

int shca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibsrq->device);
	struct shca_srq *srq = to_shca_srq(ibsrq);
	int err;

	/* ib_core destroys no SRQ a QP still uses: the model agrees. */
	err = shca_srq_cmd(sdev, HCA_CMD_DESTROY_SRQ, srq->srqn, 0, NULL, 0);
	if (err)
		return err;
	shca_qp_ev_unregister(sdev, &srq->ev);
	shca_ksrq_free(srq);
	shca_queue_free(srq->queue);
	return 0;
}

/* IB_SRQ_LIMIT arms the limit; a resize (IB_SRQ_MAX_WR) is not offered. */
int shca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibsrq->device);
	struct shca_srq *srq = to_shca_srq(ibsrq);

	if (mask & ~IB_SRQ_LIMIT)
		return -EINVAL;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit >= srq->wrs.cnt)
		return -EINVAL;
	return shca_srq_cmd(sdev, HCA_CMD_ARM_RQ, srq->srqn, attr->srq_limit,
			    NULL, 0);
}

int shca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct shca_dev *sdev = to_shca_dev(ibsrq->device);
	struct shca_srq *srq = to_shca_srq(ibsrq);
	struct hca_cmd_query_srq_out out;
	int err;

	err = shca_srq_cmd(sdev, HCA_CMD_QUERY_SRQ, srq->srqn, 0, &out,
			   sizeof(out));
	if (err)
		return err;
	attr->max_wr = srq->wrs.cnt - 1;
	attr->max_sge = srq->max_gs;
	attr->srq_limit = out.limit;
	return 0;
}

/* Kernel SRQs: the shared free list under the SRQ's lock. */
int shca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct shca_srq *srq = to_shca_srq(ibsrq);
	unsigned long flags;
	int err = 0, nreq = 0;

	if (WARN_ON_ONCE(!srq->wrs.wrid))
		return -EINVAL;
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next, nreq++) {
		err = wr->num_sge < 0 || wr->num_sge > srq->max_gs ? -EINVAL :
		      softhca_srq_post(&srq->wrs,
				       (const struct softhca_sge *)wr->sg_list,
				       wr->num_sge, wr->wr_id);
		if (err) {
			if (bad_wr)
				*bad_wr = wr;
			break;
		}
	}
	if (nreq) {
		/* The WQEs before the counter that covers them. */
		dma_wmb();
		WRITE_ONCE(srq->dbr->counter,
			   cpu_to_be32(srq->wrs.counter & SOFTHCA_WQ_DBR_MASK));
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}
