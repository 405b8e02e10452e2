// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: CQ contexts (CREATE_CQ, DESTROY_CQ, QUERY_CQ,
 * MODIFY_CQ) and their lookup.
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
#include <linux/hrtimer.h>
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
	if (!in->ring || !in->dbr || !hca_eq_is_comp(hca, in->eqn) ||
	    (in->flags & ~(HCA_CQ_TS | HCA_CQ_TS_WALLCLOCK)))
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
	cq->ts = in->flags;
	cq->hca = hca;
	/* Not armed until the provider writes an arm word. */
	WRITE_ONCE(cq->dbr->arm, cpu_to_be32(SOFTHCA_CQ_DB_CMD_NONE));
	cq->arm_seen = cpu_to_be32(SOFTHCA_CQ_DB_CMD_NONE);
	refcount_set(&cq->users, 1);
	init_completion(&cq->free);
	spin_lock_init(&cq->lock);
	hrtimer_init(&cq->mod_timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	cq->mod_timer.function = hca_cq_mod_timer;

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
	/* No moderation timer rings the slot once it is free. */
	spin_lock(&cq->lock);
	cq->dying = true;
	spin_unlock(&cq->lock);
	hrtimer_cancel(&cq->mod_timer);
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
	out->eqn = cq->eqn;
	/* RESIZE changes the ring and the record under the lock. */
	spin_lock(&cq->lock);
	out->log_size = cq->log_size;
	out->ci = be32_to_cpu(READ_ONCE(cq->dbr->set_ci)) &
		  SOFTHCA_CQ_DB_CI_MASK;
	out->mod_count = cq->mod_count;
	out->mod_period = cq->mod_period;
	out->pi = cq->pi;
	out->arm = hca_cq_arm_state(cq);
	out->overrun = cq->overrun;
	spin_unlock(&cq->lock);
	hca_cq_put(cq);
	return 0;
}

/* Checks what it can before taking the CQ's lock. */
static int hca_modify_cq_check(struct hca *hca,
			       const struct hca_cmd_modify_cq_in *in)
{
	const struct hca_caps *caps = hca->caps;

	if (!in->field_select ||
	    (in->field_select & ~(HCA_CQ_MODIFY_MODERATION |
				  HCA_CQ_MODIFY_RESIZE)))
		return -EINVAL;
	if ((in->field_select & HCA_CQ_MODIFY_MODERATION) &&
	    (in->mod_count > caps->max_cq_mod_count ||
	     in->mod_period > caps->max_cq_mod_period))
		return -EINVAL;
	if ((in->field_select & HCA_CQ_MODIFY_RESIZE) &&
	    (!in->ring || !in->dbr || in->log_size > 31 ||
	     BIT_ULL(in->log_size) > (u64)caps->max_cqe + 1))
		return -EINVAL;
	return 0;
}

int hca_cmd_modify_cq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_modify_cq_in *in = inbox;
	struct hca_cmd_modify_cq_out *out = outbox;
	struct hca_cq *cq;
	int err;

	err = hca_modify_cq_check(hca, in);
	if (err)
		return err;
	cq = hca_cq_get(hca, in->cqn);
	if (!cq)
		return -EINVAL;
	out->moved = 0;
	spin_lock(&cq->lock);
	if (in->field_select & HCA_CQ_MODIFY_RESIZE)
		err = hca_cq_resize(cq, in, &out->moved);
	if (!err && (in->field_select & HCA_CQ_MODIFY_MODERATION)) {
		cq->mod_count = in->mod_count;
		cq->mod_period = in->mod_period;
		/* The current batch's period starts now. */
		cq->ev_first_ns = ktime_get_ns();
	}
	spin_unlock(&cq->lock);
	/* An arm waiting on the old bounds is looked at under the new. */
	if (!err)
		hca_cq_arm_poll(cq);
	hca_cq_put(cq);
	return err;
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
