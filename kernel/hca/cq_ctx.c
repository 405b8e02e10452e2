// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: CQ contexts (CREATE_CQ, DESTROY_CQ, QUERY_CQ) and their
 * lookup.
 * The CQE writer is cqe.c; this file only owns the contexts' lifetime.
 *
 * CQNs come from an xarray (1..max_cq, cyclic). Lookups are RCU plus
 * refcount_inc_not_zero(); DESTROY_CQ erases the CQN, waits until every
 * reference (lookups in flight, QPs) is put and frees the context after an
 * RCU grace period. The ring and the doorbell record belong to the driver,
 * which keeps them alive until DESTROY_CQ has returned. Every CQ has a
 * doorbell slot in its UAR's area: an arm that finds CQEs waiting rings it,
 * and the engine then evaluates the arm word (cqe.c).
 */
#include <linux/log2.h>
#include <linux/slab.h>

#include "model.h"

int hca_cmd_create_cq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_create_cq_in *in = inbox;
	struct hca_cmd_create_cq_out *out = outbox;
	const struct hca_caps *caps = hca->caps;
	struct hca_db_area *db;
	struct hca_cq *cq;
	void *old;
	u32 cqn;
	int err;

	/* Completion events go to a completion EQ, never the async one. */
	if (!in->ring || !in->dbr || !hca_eq_is_comp(hca, in->eqn))
		return -EINVAL;
	db = hca_uar_db(hca, in->uar_index);
	if (!db)
		return -EINVAL;
	/* At most max_cqe + 1 entries (one slot is never filled). */
	if (in->log_size > 31 ||
	    BIT_ULL(in->log_size) > (u64)caps->max_cqe + 1)
		return -EINVAL;

	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	if (!cq)
		return -ENOMEM;
	cq->log_size = in->log_size;
	cq->ring = in->ring;
	cq->dbr = in->dbr;
	cq->eqn = in->eqn;
	cq->hca = hca;
	/* Not armed until the provider writes an arm word. */
	WRITE_ONCE(cq->dbr->arm, cpu_to_be32(SOFTHCA_CQ_DB_CMD_NONE));
	cq->arm_seen = cpu_to_be32(SOFTHCA_CQ_DB_CMD_NONE);
	refcount_set(&cq->users, 1);
	init_completion(&cq->free);
	spin_lock_init(&cq->lock);

	err = hca_db_slot_alloc(db, &cq->db, HCA_DB_CQ);
	if (err) {
		kfree(cq);
		return err;
	}
	/* Reserve the CQN, fill it in, then publish the context. */
	err = xa_alloc_cyclic(&hca->cqs, &cqn, NULL,
			      XA_LIMIT(1, caps->max_cq), &hca->cq_next,
			      GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOSPC : err;
		goto err_slot;
	}
	cq->cqn = cqn;
	old = xa_store(&hca->cqs, cqn, cq, GFP_KERNEL);
	if (xa_is_err(old)) {
		xa_erase(&hca->cqs, cqn);
		err = xa_err(old);
		goto err_slot;
	}
	hca_db_publish(&cq->db);
	out->cqn = cqn;
	out->db_slot = cq->db.slot;
	out->db_thread = cq->db.thread;
	return 0;

err_slot:
	hca_db_slot_free(&cq->db);
	kfree(cq);
	return err;
}

int hca_cmd_destroy_cq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_destroy_cq_in *in = inbox;
	struct hca_cq *cq;

	/* A reserved CQN (CREATE_CQ still running) loads as NULL. */
	xa_lock(&hca->cqs);
	cq = xa_load(&hca->cqs, in->cqn);
	if (!cq) {
		xa_unlock(&hca->cqs);
		return -EINVAL;
	}
	__xa_erase(&hca->cqs, in->cqn);
	xa_unlock(&hca->cqs);
	/* No claim finds it now; one that did holds a reference. */
	hca_db_slot_free(&cq->db);

	if (!refcount_dec_and_test(&cq->users))
		wait_for_completion(&cq->free);
	kfree_rcu(cq, rcu);
	return 0;
}

int hca_cmd_query_cq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_query_cq_in *in = inbox;
	struct hca_cmd_query_cq_out *out = outbox;
	struct hca_cq *cq;

	cq = hca_cq_get(hca, in->cqn);
	if (!cq)
		return -EINVAL;
	out->log_size = cq->log_size;
	out->eqn = cq->eqn;
	out->ci = be32_to_cpu(READ_ONCE(cq->dbr->set_ci)) &
		  SOFTHCA_CQ_DB_CI_MASK;
	spin_lock(&cq->lock);
	out->pi = cq->pi;
	out->arm = hca_cq_arm_state(cq);
	out->overrun = cq->overrun;
	spin_unlock(&cq->lock);
	hca_cq_put(cq);
	return 0;
}

struct hca_cq *hca_cq_get(struct hca *hca, u32 cqn)
{
	struct hca_cq *cq;

	rcu_read_lock();
	cq = xa_load(&hca->cqs, cqn);
	if (cq && !refcount_inc_not_zero(&cq->users))
		cq = NULL;
	rcu_read_unlock();
	return cq;
}

void hca_cq_put(struct hca_cq *cq)
{
	if (refcount_dec_and_test(&cq->users))
		complete(&cq->free);
}
