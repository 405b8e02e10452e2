// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: completion queues. The kernel allocates the CQE
 * ring and its doorbell record in one zeroed, page-aligned area that the
 * provider maps (SHCA_MMAP_QUEUE): the ring at offset 0, the DBR at
 * dbr_offset (the end of the ring, 64-byte aligned). RESIZE_CQ replaces
 * that area with a new one (the model moves the CQEs); MODIFY_CQ sets
 * the CQ's event moderation.
 */
#include <linux/log2.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

/* softhca_create_cq_req.comp_mask bits this driver understands. */
#define SHCA_CQ_REQ_MASK	0

/*
 * The clocks a CQ's CQEs are stamped with: ib_uverbs' TIMESTAMP_COMPLETION
 * (libibverbs sets it for either wc_flags timestamp) asks for stamps, our
 * request's flags say which clocks; the flag alone is the device clock.
 * A clock asked for without the flag is -EINVAL, other bits too.
 */
static int shca_cq_ts_flags(const struct ib_cq_init_attr *attr,
			    const struct softhca_create_cq_req *req, u32 *ts)
{
	const u32 clocks = SOFTHCA_CQ_FLAG_TS | SOFTHCA_CQ_FLAG_TS_WALLCLOCK;

	*ts = 0;
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)
		return -EOPNOTSUPP;
	if (req->flags & ~clocks)
		return -EINVAL;
	if (!(attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION))
		return req->flags ? -EINVAL : 0;
	if (!req->flags || (req->flags & SOFTHCA_CQ_FLAG_TS))
		*ts |= HCA_CQ_TS;
	if (req->flags & SOFTHCA_CQ_FLAG_TS_WALLCLOCK)
		*ts |= HCA_CQ_TS_WALLCLOCK;
	return 0;
}

int shca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibcq->device);
	struct shca_cq *cq = to_shca_cq(ibcq);
	struct softhca_create_cq_req req = {};
	struct softhca_create_cq_resp resp = {};
	struct hca_cmd_create_cq_in in = {};
	struct hca_cmd_destroy_cq_in din;
	struct hca_cmd_create_cq_out out;
	struct softhca_cqe *ring;
	size_t ring_size, size;
	u32 cnt, i;
	int err;

	if (!udata && attr->flags)
		return -EOPNOTSUPP;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (attr->cqe > sdev->caps.max_cqe)
		return -EINVAL;
	/* A kernel CQ (udata NULL): polled through kverbs.c, never mapped. */
	if (udata) {
		err = shca_udata_req(udata, &req, sizeof(req));
		if (err)
			return err;
		if (req.comp_mask & ~SHCA_CQ_REQ_MASK)
			return -EINVAL;
		err = shca_cq_ts_flags(attr, &req, &in.flags);
		if (err)
			return err;
	}

	/*
	 * As mlx5: a power of two with room for cqe + 1 entries, so that a
	 * full CQ (cqe entries) never looks empty; ibcq->cqe = cnt - 1.
	 */
	cnt = roundup_pow_of_two(attr->cqe + 1);
	ring_size = size_mul(cnt, SOFTHCA_CQE_SIZE);
	size = PAGE_ALIGN(ring_size + sizeof(struct softhca_cq_dbr));
	cq->queue = shca_queue_alloc(udata, size);
	if (IS_ERR(cq->queue))
		return PTR_ERR(cq->queue);

	/* Every CQE starts INVALID with owner 0 (queue-formats.md). */
	ring = cq->queue->buf;
	for (i = 0; i < cnt; i++)
		ring[i].op_own = SOFTHCA_CQE_INVALID << SOFTHCA_CQE_OPCODE_SHIFT;

	in.ring = ring;
	in.dbr = cq->queue->buf + ring_size;
	in.log_size = ilog2(cnt);
	in.eqn = shca_comp_eqn(sdev, attr->comp_vector);
	in.uar_index = shca_udata_uar(udata);
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_CQ, &in, sizeof(in),
			    &out, sizeof(out));
	if (err)
		goto err_queue;
	cq->cqn = out.cqn;
	cq->db_slot = out.db_slot;
	mutex_init(&cq->resize_lock);
	/* Issue 4: the EQ handler finds the CQ by its CQN (eq.h). */
	err = shca_cq_ev_register(sdev, &cq->ev, ibcq, cq->cqn,
				  attr->comp_vector);
	if (err)
		goto err_cq_cmd;

	if (!udata) {
		err = shca_kcq_create(sdev, cq, cnt);
		if (err)
			goto err_cq;
		ibcq->cqe = cnt - 1;
		return 0;
	}

	resp.cqn = cq->cqn;
	resp.cqe_cnt = cnt;
	resp.dbr_offset = ring_size;
	resp.mmap_offset = rdma_user_mmap_get_offset(&cq->queue->rdma_entry);
	resp.mmap_size = size;
	resp.db_slot = out.db_slot;
	resp.db_thread = out.db_thread;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_cq;
	ibcq->cqe = cnt - 1;
	return 0;

err_cq:
	shca_cq_ev_unregister(sdev, &cq->ev);
err_cq_cmd:
	din.cqn = cq->cqn;
	WARN_ON(hca_exec(sdev->hca, HCA_CMD_DESTROY_CQ, &din,
			      sizeof(din), NULL, 0));
err_queue:
	shca_queue_free(cq->queue);
	return err;
}

/*
 * ib_free_cq() calls this before it stops the CQ's poller (cancel_work_sync,
 * irq_poll_disable): no completion event may reach the CQ after that, or a
 * tasklet running now would queue the work again on a CQ about to be freed.
 */
int shca_pre_destroy_cq(struct ib_cq *ibcq)
{
	struct shca_cq *cq = to_shca_cq(ibcq);

	shca_cq_ev_unregister(to_shca_dev(ibcq->device), &cq->ev);
	cq->ev_gone = true;
	return 0;
}

int shca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibcq->device);
	struct shca_cq *cq = to_shca_cq(ibcq);
	struct hca_cmd_destroy_cq_in in = { .cqn = cq->cqn };

	/*
	 * Events first (waits for EQ handlers, tasklets, event work: eq.h),
	 * then the model, which frees the CQN: a create_cq handed the same
	 * number must find its event slot free. ib_core destroyed the QPs, so
	 * no CQE (no event) comes meanwhile; the engine lets go of the ring.
	 */
	if (!cq->ev_gone)
		shca_cq_ev_unregister(sdev, &cq->ev);
	WARN_ON(hca_exec(sdev->hca, HCA_CMD_DESTROY_CQ, &in, sizeof(in),
			      NULL, 0));
	if (cq->kcq)
		shca_kcq_destroy(cq);
	shca_queue_free(cq->queue);
	return 0;
}

/* The new queue's first entries are the old one's unconsumed CQEs. */
static struct shca_mmap_entry *shca_cq_queue_new(struct ib_udata *udata,
						 u32 cnt)
{
	size_t ring_size = size_mul(cnt, SOFTHCA_CQE_SIZE);
	struct shca_mmap_entry *queue;
	struct softhca_cqe *ring;
	u32 i;

	queue = shca_queue_alloc(udata,
				 PAGE_ALIGN(ring_size +
					    sizeof(struct softhca_cq_dbr)));
	if (IS_ERR(queue))
		return queue;
	ring = queue->buf;
	for (i = 0; i < cnt; i++)
		ring[i].op_own = SOFTHCA_CQE_INVALID << SOFTHCA_CQE_OPCODE_SHIFT;
	return queue;
}

/*
 * ibv_resize_cq. A kernel CQ's consumer state (kverbs.c) is not moved:
 * -EOPNOTSUPP for those. The response is copied out before the model
 * switches rings, so a failure after the switch cannot strand the
 * provider on a ring it does not know.
 */
int shca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibcq->device);
	struct shca_cq *cq = to_shca_cq(ibcq);
	struct hca_cmd_modify_cq_in in = {
		.cqn = cq->cqn, .field_select = HCA_CQ_MODIFY_RESIZE,
	};
	struct softhca_resize_cq_resp resp = {};
	struct hca_cmd_modify_cq_out out;
	struct shca_mmap_entry *queue;
	u32 cnt;
	int err;

	if (!udata || cq->kcq)
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > sdev->caps.max_cqe)
		return -EINVAL;
	cnt = roundup_pow_of_two(cqe + 1);
	queue = shca_cq_queue_new(udata, cnt);
	if (IS_ERR(queue))
		return PTR_ERR(queue);

	resp.cqe_cnt = cnt;
	resp.dbr_offset = cnt * SOFTHCA_CQE_SIZE;
	resp.mmap_offset = rdma_user_mmap_get_offset(&queue->rdma_entry);
	resp.mmap_size = queue->size;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_queue;

	in.ring = queue->buf;
	in.dbr = queue->buf + resp.dbr_offset;
	in.log_size = ilog2(cnt);
	/* Two resizes of one CQ at once: ib_uverbs holds it only shared. */
	mutex_lock(&cq->resize_lock);
	err = hca_exec(sdev->hca, HCA_CMD_MODIFY_CQ, &in, sizeof(in),
		       &out, sizeof(out));
	if (err) {
		mutex_unlock(&cq->resize_lock);
		goto err_queue;
	}
	swap(cq->queue, queue);
	ibcq->cqe = cnt - 1;
	mutex_unlock(&cq->resize_lock);
	shca_queue_free(queue);
	return 0;

err_queue:
	shca_queue_free(queue);
	return err;
}

/* ibv_modify_cq / rdma_set_cq_moderation(): count and period (us). */
int shca_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct shca_dev *sdev = to_shca_dev(ibcq->device);
	struct hca_cmd_modify_cq_in in = {
		.cqn = to_shca_cq(ibcq)->cqn,
		.field_select = HCA_CQ_MODIFY_MODERATION,
		.mod_count = cq_count, .mod_period = cq_period,
	};
	struct hca_cmd_modify_cq_out out;

	if (cq_count > sdev->caps.max_cq_mod_count ||
	    cq_period > sdev->caps.max_cq_mod_period)
		return -EINVAL;
	return hca_exec(sdev->hca, HCA_CMD_MODIFY_CQ, &in, sizeof(in),
			&out, sizeof(out));
}
