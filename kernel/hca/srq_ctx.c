// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: SRQ contexts (CREATE_SRQ, DESTROY_SRQ, QUERY_SRQ,
 * ARM_RQ) and their lookup. What the HCA takes from an SRQ, for which QP,
 * is rq_src.c's; this file owns the contexts' lifetime and the limit.
 *
 * SRQNs come from an xarray (1..max_srq, cyclic); lookups are RCU plus
 * refcount_inc_not_zero(), as CQs'. A QP created on an SRQ holds a
 * reference until DESTROY_QP, so DESTROY_SRQ refuses (-EBUSY) while one
 * is attached (ib_core refuses it first). The ring and the doorbell record
 * belong to the driver, which keeps them until DESTROY_SRQ returns.
 *
 * XRC domains live here too: a number each, whose xarray value counts the
 * XRC SRQs and target QPs that name it. An XRC SRQ names its domain and
 * the CQ its completions go to; no QP is attached to it (a target QP
 * finds it per message, by the request's XRCETH, and holds it only while
 * it handles the message), so DESTROY_SRQ waits for such a message at
 * most.
 */
#include <linux/log2.h>
#include <linux/slab.h>

#include "model.h"

struct hca_srq *hca_srq_get(struct hca *hca, u32 srqn)
{
	struct hca_srq *srq;

	rcu_read_lock();
	srq = xa_load(&hca->srqs, srqn);
	if (srq && !refcount_inc_not_zero(&srq->users))
		srq = NULL;
	rcu_read_unlock();
	return srq;
}

void hca_srq_put(struct hca_srq *srq)
{
	if (refcount_dec_and_test(&srq->users))
		complete(&srq->free);
}

/* ---- XRC domains ---- */

int hca_cmd_alloc_xrcd(struct hca *hca, const void *inbox, void *outbox)
{
	struct hca_cmd_alloc_xrcd_out *out = outbox;
	u32 xrcdn;
	int err;

	err = xa_alloc(&hca->xrcds, &xrcdn, xa_mk_value(0),
		       XA_LIMIT(1, hca->caps->max_xrcds), GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOSPC : err;
	out->xrcdn = xrcdn;
	return 0;
}

int hca_cmd_dealloc_xrcd(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_dealloc_xrcd_in *in = inbox;
	void *v;
	int err = 0;

	xa_lock(&hca->xrcds);
	v = xa_load(&hca->xrcds, in->xrcdn);
	if (!v)
		err = -EINVAL;
	else if (xa_to_value(v))
		err = -EBUSY;
	else
		__xa_erase(&hca->xrcds, in->xrcdn);
	xa_unlock(&hca->xrcds);
	return err;
}

/* Replacing a present entry allocates nothing: no failure under the lock. */
static int hca_xrcd_add(struct hca *hca, u32 xrcdn, long n)
{
	void *v;
	int err = 0;

	xa_lock(&hca->xrcds);
	v = xrcdn ? xa_load(&hca->xrcds, xrcdn) : NULL;
	if (v)
		__xa_store(&hca->xrcds, xrcdn,
			   xa_mk_value(xa_to_value(v) + n), GFP_ATOMIC);
	else
		err = -EINVAL;
	xa_unlock(&hca->xrcds);
	return err;
}

int hca_xrcd_hold(struct hca *hca, u32 xrcdn)
{
	return hca_xrcd_add(hca, xrcdn, 1);
}

void hca_xrcd_release(struct hca *hca, u32 xrcdn)
{
	WARN_ON_ONCE(hca_xrcd_add(hca, xrcdn, -1));
}

/* ---- SRQs ---- */

static bool hca_srq_in_valid(struct hca *hca,
			     const struct hca_cmd_create_srq_in *in)
{
	const struct hca_caps *caps = hca->caps;

	if (!hca_pd_valid(hca, in->pdn) || (in->flags & ~HCA_QP_PRIVILEGED))
		return false;
	/* An XRC SRQ has a domain and a CQ; a basic one neither. */
	if (!in->xrcdn != !in->cqn)
		return false;
	if (!in->buf || !in->dbr || in->wqe_cnt < 2 ||
	    !is_power_of_2(in->wqe_cnt) || in->wqe_cnt > caps->max_srq_wqes)
		return false;
	/* The next segment and one data segment at least. */
	if (in->wqe_shift < SOFTHCA_DS_SHIFT + 1 ||
	    BIT_ULL(in->wqe_shift) > HCA_SRQ_STRIDE_MAX)
		return false;
	return in->limit < in->wqe_cnt;
}

int hca_cmd_create_srq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_create_srq_in *in = inbox;
	struct hca_cmd_create_srq_out *out = outbox;
	struct hca_srq *srq;
	void *old;
	u32 srqn;
	int err;

	if (!hca_srq_in_valid(hca, in))
		return -EINVAL;
	srq = kzalloc(sizeof(*srq), GFP_KERNEL);
	if (!srq)
		return -ENOMEM;
	if (in->xrcdn) {
		srq->cq = hca_cq_get(hca, in->cqn);
		err = srq->cq ? hca_xrcd_hold(hca, in->xrcdn) : -EINVAL;
		if (err)
			goto err_free;
		srq->xrcdn = in->xrcdn;
	}
	srq->hca = hca;
	srq->pdn = in->pdn |
		   (in->flags & HCA_QP_PRIVILEGED ? HCA_PDN_RLKEY : 0);
	srq->buf = in->buf;
	srq->wqe_cnt = in->wqe_cnt;
	srq->wqe_shift = in->wqe_shift;
	srq->dbr = in->dbr;
	srq->limit = in->limit;
	refcount_set(&srq->users, 1);
	init_completion(&srq->free);
	atomic_set(&srq->qps, 0);
	spin_lock_init(&srq->lock);

	err = xa_alloc_cyclic(&hca->srqs, &srqn, NULL,
			      XA_LIMIT(1, hca->caps->max_srq), &hca->srq_next,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOSPC : err;
		goto err_xrc;
	}
	srq->srqn = srqn;
	srq->id = atomic64_inc_return(&hca->srq_ids);
	old = xa_store(&hca->srqs, srqn, srq, GFP_KERNEL);
	if (xa_is_err(old)) {
		xa_erase(&hca->srqs, srqn);
		err = xa_err(old);
		goto err_xrc;
	}
	out->srqn = srqn;
	return 0;

err_xrc:
	if (srq->xrcdn)
		hca_xrcd_release(hca, srq->xrcdn);
err_free:
	if (srq->cq)
		hca_cq_put(srq->cq);
	kfree(srq);
	return err;
}

int hca_cmd_destroy_srq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_srq_in *in = inbox;
	struct hca_srq *srq;

	xa_lock(&hca->srqs);
	srq = xa_load(&hca->srqs, in->srqn);
	if (!srq) {
		xa_unlock(&hca->srqs);
		return -EINVAL;
	}
	/* CREATE_QP takes its reference under this lock too. */
	if (atomic_read(&srq->qps)) {
		xa_unlock(&hca->srqs);
		return -EBUSY;
	}
	__xa_erase(&hca->srqs, in->srqn);
	xa_unlock(&hca->srqs);
	if (!refcount_dec_and_test(&srq->users))
		wait_for_completion(&srq->free);
	if (srq->xrcdn) {
		hca_xrcd_release(hca, srq->xrcdn);
		hca_cq_put(srq->cq);
	}
	kfree_rcu(srq, rcu);
	return 0;
}

int hca_cmd_query_srq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_srq_in *in = inbox;
	struct hca_cmd_query_srq_out *out = outbox;
	struct hca_srq *srq = hca_srq_get(hca, in->srqn);
	unsigned long flags;

	if (!srq)
		return -EINVAL;
	out->wqe_cnt = srq->wqe_cnt;
	out->qps = atomic_read(&srq->qps);
	out->posted = be32_to_cpu(READ_ONCE(srq->dbr->counter)) &
		      SOFTHCA_WQ_DBR_MASK;
	spin_lock_irqsave(&srq->lock, flags);
	out->limit = srq->limit;
	out->error = srq->error;
	out->taken = srq->taken;
	out->head = srq->head;
	spin_unlock_irqrestore(&srq->lock, flags);
	hca_srq_put(srq);
	return 0;
}

/*
 * ARM_RQ: arm (or disarm, 0) the limit. One shot: the first take that
 * leaves fewer than @limit WQEs posted raises SRQ_RQ_LIMIT and disarms.
 */
int hca_cmd_arm_rq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_srq_in *in = inbox;
	struct hca_srq *srq = hca_srq_get(hca, in->srqn);
	unsigned long flags;
	int err = 0;

	if (!srq)
		return -EINVAL;
	if (in->limit >= srq->wqe_cnt) {
		err = -EINVAL;
	} else {
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = in->limit;
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	hca_srq_put(srq);
	return err;
}
