// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: which QP runs next, and running it. Work is found in
 * proportion to what rang (design.md §10), from three sources:
 *
 * - hints: a claim in a doorbell area (doorbell.c) names QPs and CQs whose
 *   doorbell records may have moved; the record is then read, as before;
 * - the run list of each engine thread: QPs the model itself knows have
 *   work (over their budget, a retry timer that expired, a trylock that
 *   found another executor, an error to flush). Trusted and kernel-only;
 * - the ERR list: QPs in ERR, whose receive queue may be posted to without
 *   a doorbell, polled every 10 ms.
 * Retry deadlines (RNR, local ACK timeout) are one hrtimer per QP, kept in
 * order by the kernel's timer queue; expiry puts the QP on the run list.
 *
 * An executor runs a QP only with its exec_lock, which it only trylocks.
 * One that fails puts the QP on the run list instead, so the doorbell it
 * saw is handled after the holder lets go: no doorbell is left behind and
 * nobody waits for another executor.
 */
#include <linux/sched.h>

#include "debug.h"
#include "engine.h"
#include "wire_rc.h"

#define HCA_QP_BUDGET		64	/* WQEs of one QP per turn */
#define HCA_FLUSH_BUDGET	1024	/* flush CQEs of one queue per turn */
#define HCA_CLAIM_BATCH		16	/* hints looked up at a time */
#define HCA_ERR_POLL_NS		(10 * NSEC_PER_MSEC)

/*
 * Would running @qp make progress now? Lockless: reads the doorbell records
 * and the engine's consumer counters, and the clock only for a QP that
 * waits for a deadline.
 */
static bool hca_qp_has_work(struct hca_qp *qp)
{
	enum hca_qp_state state = READ_ONCE(qp->state);
	struct hca_engine_qp *e = qp->eng;
	s64 until;

	switch (state) {
	case HCA_QPS_RTS:
	case HCA_QPS_SQD:
		if (hca_sq_posted(qp) == READ_ONCE(qp->sq_ci))
			return false;
		if (unlikely(READ_ONCE(e->wire)))
			return hca_wire_has_work(qp);
		until = READ_ONCE(e->wait_until);
		if (until)
			return ktime_get_ns() >= until ||
			       test_bit(HCA_ODP_REQ_RESUMED, &e->odp_flags);
		/* SQD: a WQE not started yet is not started. */
		return state == HCA_QPS_RTS;
	case HCA_QPS_SQE:
		/* A datagram QP's SQ flushes; its RQ goes on receiving. */
		return hca_sq_posted(qp) != READ_ONCE(qp->sq_ci);
	case HCA_QPS_ERR:
		return hca_sq_posted(qp) != READ_ONCE(qp->sq_ci) ||
		       hca_rq_flush_pending(qp);
	default:
		return false;
	}
}

/* Wake @qp's thread if it sleeps: it has something to look at. */
static void hca_run_list_add(struct hca_engine_thread *thr,
			     struct hca_engine_qp *e)
{
	unsigned long flags;
	bool added = false;

	spin_lock_irqsave(&thr->lock, flags);
	/* A QP being reset or destroyed is taken off and not put back. */
	if (!e->on_run && READ_ONCE(e->qp->state) != HCA_QPS_RESET) {
		list_add_tail(&e->run_node, &thr->run);
		e->on_run = true;
		thr->nr_run++;
		added = true;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	if (added)
		hca_engine_thread_poke(thr);
}

void hca_qp_run_later(struct hca_qp *qp)
{
	hca_run_list_add(hca_qp_thread(qp), qp->eng);
}

/* The ERR list: a QP in ERR until it is reset (qp->lock not held). */
void hca_qp_watch_err(struct hca_qp *qp)
{
	struct hca_engine_thread *thr = hca_qp_thread(qp);
	struct hca_engine_qp *e = qp->eng;
	unsigned long flags;
	bool added = false;

	if (!qp->rq_wqe_cnt)
		return;		/* its SQ posts ring doorbells */
	spin_lock_irqsave(&thr->lock, flags);
	if (!e->on_err && READ_ONCE(qp->state) == HCA_QPS_ERR) {
		list_add_tail(&e->err_node, &thr->err);
		e->on_err = true;
		added = true;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	/* A sleeping thread starts its 10 ms ERR poll. */
	if (added)
		hca_engine_thread_poke(thr);
}

/*
 * An error the QP reports with an error CQE moves it to ERR; that is all a
 * ConnectX does for those (no async event; a responder that refuses an RDMA
 * request consumes no receive and raises one: hca_resp_nak_rdma()). Returns
 * whether this call moved it there.
 */
bool hca_qp_set_err(struct hca_qp *qp)
{
	enum hca_qp_state old;
	unsigned long flags;
	bool moved = false;

	spin_lock_irqsave(&qp->lock, flags);
	old = qp->state;
	if (qp->state != HCA_QPS_RESET && qp->state != HCA_QPS_ERR) {
		qp->state = HCA_QPS_ERR;
		moved = true;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (moved) {
		hca_dbg_qp(qp, "%s -> ERR (%ps)\n", hca_qp_state_name(old),
			   __builtin_return_address(0));
		hca_qp_watch_err(qp);
	}
	return moved;
}

/*
 * A send queue error (the WQE's error CQE is written): the QP goes to its
 * type's error state, ERR, or SQE for a datagram QP, whose receive queue
 * goes on (IBA 10.3.1) while its send queue is flushed. Returns whether
 * this call moved it.
 */
bool hca_qp_set_sq_err(struct hca_qp *qp)
{
	enum hca_qp_state old;
	unsigned long flags;
	bool moved = false;

	if (qp->type->sq_err_state == HCA_QPS_ERR)
		return hca_qp_set_err(qp);
	spin_lock_irqsave(&qp->lock, flags);
	old = qp->state;
	if (old == HCA_QPS_RTS || old == HCA_QPS_SQD) {
		qp->state = HCA_QPS_SQE;
		moved = true;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (moved) {
		hca_dbg_qp(qp, "%s -> SQE (%ps)\n", hca_qp_state_name(old),
			   __builtin_return_address(0));
		/* The WQEs behind the failed one are flushed next. */
		hca_qp_run_later(qp);
	}
	return moved;
}

/*
 * An error no CQE can report (its CQ overran): the QP goes to ERR and the
 * owner learns it from the affiliated async event IBV_EVENT_QP_FATAL.
 */
void hca_qp_fatal(struct hca_qp *qp)
{
	if (hca_qp_set_err(qp))
		hca_eq_qp_event(qp->hca, SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR,
				qp->qpn, SOFTHCA_EVENT_QUEUE_TYPE_QP);
}

/* An error moved @qp (not the one executing) to ERR: flush it soon. */
void hca_engine_defer(struct hca_exec_ctx *ctx, struct hca_qp *qp)
{
	if (!ctx->deferred) {
		refcount_inc(&qp->users);	/* the caller holds one */
		ctx->deferred = qp;
	} else if (ctx->deferred != qp) {
		hca_qp_run_later(qp);
	}
}

/* ---- retry timers ------------------------------------------------------- */

static enum hrtimer_restart hca_wait_expired(struct hrtimer *timer)
{
	struct hca_engine_qp *e = container_of(timer, struct hca_engine_qp,
					       wait_timer);

	hca_qp_run_later(e->qp);
	return HRTIMER_NORESTART;
}

static enum hrtimer_restart hca_pace_expired(struct hrtimer *timer)
{
	struct hca_engine_qp *e = container_of(timer, struct hca_engine_qp,
					       pace_timer);

	hca_qp_run_later(e->qp);
	return HRTIMER_NORESTART;
}

void hca_wait_timer_init(struct hca_engine_qp *e)
{
	hrtimer_init(&e->wait_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	e->wait_timer.function = hca_wait_expired;
	hrtimer_init(&e->pace_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	e->pace_timer.function = hca_pace_expired;
}

/*
 * Under exec_lock: run @qp again in @delay_ns, when its rate lets it send
 * (wire_rp.c). A timer of its own: the wait timer keeps the retry deadline.
 */
void hca_pace_start(struct hca_qp *qp, u64 delay_ns)
{
	hrtimer_start(&qp->eng->pace_timer, ns_to_ktime(delay_ns),
		      HRTIMER_MODE_REL);
}

/* Under exec_lock: the WQE at sq_ci is retried @delay_ns from now. */
void hca_wait_start(struct hca_qp *qp, u64 delay_ns)
{
	hrtimer_start(&qp->eng->wait_timer, ns_to_ktime(delay_ns),
		      HRTIMER_MODE_REL);
}

/* ---- one QP --------------------------------------------------------------- */

/* Execute (or flush) @qp's queues; under exec_lock. */
static bool hca_qp_exec(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			bool *flush, bool *more)
{
	struct hca_engine_qp *e = qp->eng;
	unsigned int budget = HCA_QP_BUDGET;
	bool progress = false;

	while (budget--) {
		enum hca_qp_state state = READ_ONCE(qp->state);
		u16 posted = hca_sq_posted(qp);

		if (state == HCA_QPS_ERR || state == HCA_QPS_SQE) {
			/* ERR flushes both queues, SQE the send queue. */
			*flush = state == HCA_QPS_ERR;
			if (posted != qp->sq_ci) {
				hca_sq_flush(qp, posted, HCA_FLUSH_BUDGET);
				progress = true;
				*more = qp->sq_ci != posted;
			}
			return progress;
		}
		if (posted == qp->sq_ci)
			return progress;
		if (state != HCA_QPS_RTS &&
		    !(state == HCA_QPS_SQD && e->wait_kind != HCA_WAIT_NONE))
			return progress;
		/* The doorbell record, then the WQEs it covers. */
		smp_rmb();
		if (hca_sq_step(ctx, qp, posted, e->wait_kind ?
				ktime_get_ns() : 0) != HCA_STEP_DONE)
			return progress;
		progress = true;
		/*
		 * A preemption point per WQE, once its CQEs are out: the
		 * responder trylocks resp_lock, so mutex_lock()'s might_sleep()
		 * is no longer one.
		 */
		cond_resched();
	}
	*more = true;		/* over budget: the run list brings it back */
	return progress;
}

void hca_run_deferred(struct hca_exec_ctx *ctx)
{
	struct hca_qp *qp;

	while ((qp = ctx->deferred)) {
		ctx->deferred = NULL;
		hca_run_qp(ctx, qp);
		hca_qp_put(qp);
	}
}

/*
 * Run @qp (the caller holds a reference) unless another executor is
 * running it; then it goes on the run list, for after the holder.
 */
bool hca_run_qp(struct hca_exec_ctx *ctx, struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	bool flush = false, more = false, progress;

	/*
	 * A wire QP's packets leave from its engine thread while it polls:
	 * sent from two CPUs at once they may overtake each other in the
	 * stack (veth queues each on the sending CPU's backlog) and every
	 * overtaking costs a sequence NAK and a go-back-N. A thread that
	 * sleeps or backs off sends nothing, and a wake-up call sends at
	 * once instead of waking it (the stack's receive softirq runs before
	 * the caller's transmit returns).
	 */
	if (unlikely(READ_ONCE(e->wire)) && !ctx->is_thread &&
	    READ_ONCE(hca_qp_thread(qp)->state) == HCA_ENG_POLLING) {
		hca_qp_run_later(qp);
		return false;
	}
	if (!mutex_trylock(&e->exec_lock)) {
		hca_qp_run_later(qp);
		return false;
	}
	progress = hca_qp_exec(ctx, qp, &flush, &more);
	mutex_unlock(&e->exec_lock);
	if (flush && hca_rq_flush_pending(qp)) {
		more |= hca_rq_flush(qp, HCA_FLUSH_BUDGET);
		progress = true;
	}
	if (more)
		hca_qp_run_later(qp);
	hca_run_deferred(ctx);
	return progress;
}

/* What a claimed hint names: a QP to run, or a CQ whose arm came late. */
bool hca_run_target(struct hca_exec_ctx *ctx, struct hca_db_target *tgt)
{
	bool progress = false;

	if (tgt->type == HCA_DB_QP) {
		struct hca_qp *qp = container_of(tgt, struct hca_qp, db);

		if (hca_qp_has_work(qp))
			progress = hca_run_qp(ctx, qp);
	} else {
		hca_cq_arm_poll(container_of(tgt, struct hca_cq, db));
		progress = true;
	}
	hca_db_target_put(tgt);
	return progress;
}

/*
 * Claim and run up to @budget hints of thread @t in @a. Returns the hints
 * claimed (those naming nothing included): a flood of them costs its area
 * its own share of the engine, no more.
 */
unsigned int hca_run_area(struct hca_exec_ctx *ctx, struct hca_db_area *a,
			  unsigned int t, unsigned int budget)
{
	struct hca_db_target *batch[HCA_CLAIM_BATCH];
	unsigned int n, i, claimed, total = 0;

	while (total < budget) {
		n = hca_db_claim(a, t, batch,
				 min_t(unsigned int, budget - total,
				       HCA_CLAIM_BATCH), &claimed);
		for (i = 0; i < n; i++)
			hca_run_target(ctx, batch[i]);
		total += claimed;
		if (!claimed)
			break;
		/*
		 * A wake-up call working through a flood of its own hints
		 * gives its CPU up between batches (PREEMPT_VOLUNTARY): the
		 * flood costs the caller, not the task queued behind it.
		 */
		if (claimed >= HCA_CLAIM_BATCH && !ctx->is_thread)
			cond_resched();
	}
	return total;
}

/* Run the QPs that were on @thr's run list when we started. */
bool hca_run_list(struct hca_exec_ctx *ctx, struct hca_engine_thread *thr)
{
	unsigned int todo = READ_ONCE(thr->nr_run);
	struct hca_engine_qp *e;
	unsigned long flags;
	bool progress = false;

	while (todo--) {
		struct hca_qp *qp = NULL;

		spin_lock_irqsave(&thr->lock, flags);
		e = list_first_entry_or_null(&thr->run, struct hca_engine_qp,
					     run_node);
		if (e) {
			list_del(&e->run_node);
			e->on_run = false;
			thr->nr_run--;
			/* Off the list first: a destroy waits for this one. */
			if (refcount_inc_not_zero(&e->qp->users))
				qp = e->qp;
		}
		spin_unlock_irqrestore(&thr->lock, flags);
		if (!e)
			break;
		if (!qp)
			continue;
		if (hca_qp_has_work(qp))
			progress |= hca_run_qp(ctx, qp);
		hca_qp_put(qp);
	}
	return progress;
}

/* Every 10 ms: ERR QPs whose queues were posted to go on the run list. */
bool hca_poll_err_list(struct hca_engine_thread *thr, s64 now)
{
	struct hca_engine_qp *e;
	unsigned long flags;
	bool found = false;

	if (list_empty(&thr->err) || now < thr->err_next)
		return false;
	thr->err_next = now + HCA_ERR_POLL_NS;
	spin_lock_irqsave(&thr->lock, flags);
	list_for_each_entry(e, &thr->err, err_node) {
		if (!e->on_run && hca_qp_has_work(e->qp)) {
			list_add_tail(&e->run_node, &thr->run);
			e->on_run = true;
			thr->nr_run++;
			found = true;
		}
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	return found;
}

/* Is there trusted work for @thr (run list), or an ERR poll due? */
bool hca_thread_has_work(struct hca_engine_thread *thr)
{
	return READ_ONCE(thr->nr_run) || hca_wire_rx_pending(thr);
}

/*
 * @qp went to RESET (or is being destroyed): no timer, no list keeps it.
 * Under its exec_lock, so no executor is half-way through it.
 */
void hca_engine_qp_forget(struct hca_qp *qp)
{
	struct hca_engine_thread *thr = hca_qp_thread(qp);
	struct hca_engine_qp *e = qp->eng;
	unsigned long flags;

	/* Waits for a running callback, which may add it to the run list. */
	hrtimer_cancel(&e->wait_timer);
	hrtimer_cancel(&e->pace_timer);
	spin_lock_irqsave(&thr->lock, flags);
	if (e->on_run) {
		list_del(&e->run_node);
		e->on_run = false;
		thr->nr_run--;
	}
	if (e->on_err) {
		list_del(&e->err_node);
		e->on_err = false;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
}
