// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the engine. It takes doorbells and executes send
 * queues (requester.c, responder.c), flushes QPs in ERR and retries WQEs
 * waiting for an RNR or ACK timer. See Documentation/engine.md.
 *
 * One engine thread serves every HCA of the module: requester and
 * responder of a local transfer may sit on two devices, and on a small
 * machine one polling thread is all the CPU the engine should take. While
 * work flows it polls the send doorbell records (the truth; a UAR store is
 * never looked at) of every QP, with no system call from the application.
 * When idle for engine_idle_us, or when another task has wanted its CPU
 * for engine_yield_us, it sets SOFTHCA_ENGINE_NEED_WAKEUP in every HCA's
 * engine page, issues a full barrier, re-checks every doorbell and only
 * then sleeps. A provider that rang a doorbell issues a full barrier, loads
 * the flag and, if set, makes the wake-up call (fsync on its wake fd, or
 * the ENGINE_WAKE method): hca_wakeup_call() runs
 * the pending work in the caller's context and, if the calls keep coming,
 * restarts the polling thread.
 *
 * Any executor (the thread, a wake-up caller, a firmware command) runs a QP
 * only with its exec_lock, which is trylocked: whoever holds it re-checks
 * the QP's doorbells after unlocking, so a doorbell seen by a caller that
 * failed the trylock is never left behind.
 */
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "engine.h"

/*
 * 1 ms: in the TCG test VM a busy-polling application often stops posting
 * for a few hundred microseconds (its vCPU stopped by the host, a timer
 * interrupt's emulation), and a window shorter than that put the thread to
 * sleep in the middle of steady traffic (rc_syscalls counts those pauses).
 */
static unsigned int engine_idle_us = 1000;
module_param(engine_idle_us, uint, 0644);
MODULE_PARM_DESC(engine_idle_us,
		 "Engine keeps polling this long after the last work, then sleeps (default 1000)");

static unsigned int engine_yield_us = 100;
module_param(engine_yield_us, uint, 0644);
MODULE_PARM_DESC(engine_yield_us,
		 "Engine backs off when another task has wanted its CPU this long (default 100)");

static unsigned int engine_backoff_us = 1000;
module_param(engine_backoff_us, uint, 0644);
MODULE_PARM_DESC(engine_backoff_us,
		 "Engine sleeps this long when it backs off; wake-up calls carry the work meanwhile (default 1000)");

static unsigned int engine_wake_window_us = 1000;
module_param(engine_wake_window_us, uint, 0644);
MODULE_PARM_DESC(engine_wake_window_us,
		 "Two wake-up calls within this time restart the polling thread (default 1000)");

static bool engine_poll = true;
module_param(engine_poll, bool, 0644);
MODULE_PARM_DESC(engine_poll,
		 "Poll doorbells while traffic flows (default 1); 0: every post goes through the wake-up call");

/*
 * Counters, read only (racy increments: statistics, not accounting). Each
 * wake-up call is counted once more by what the thread was doing when it
 * came, so that a test can tell a thread that chose to sleep while posts
 * kept coming (engine_wakeups_idle) from one kept off its CPU by other
 * tasks (engine_wakeups_backoff, engine_wakeups_waking); the calls made
 * while it was polling are the rest of engine_wakeups.
 */
#define HCA_COUNTER(name, desc)		\
	static unsigned long name;		\
	module_param(name, ulong, 0444);	\
	MODULE_PARM_DESC(name, desc)

/*
 * The wake-up call's counters are per CPU: two applications calling from
 * two CPUs would otherwise pass one cache line back and forth on every
 * post. Read as their sum.
 */
static int hca_pcpu_counter_get(char *buf, const struct kernel_param *kp)
{
	unsigned long __percpu *counter = (__force unsigned long __percpu *)kp->arg;
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(counter, cpu);
	return sysfs_emit(buf, "%lu\n", sum);
}

/* Read only, but module parameters at load time call .set all the same. */
static int hca_pcpu_counter_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops hca_pcpu_counter_ops = {
	.set = hca_pcpu_counter_set,
	.get = hca_pcpu_counter_get,
};

#define HCA_PCPU_COUNTER(name, desc)					\
	static DEFINE_PER_CPU(unsigned long, name);			\
	module_param_cb(name, &hca_pcpu_counter_ops,			\
			(void __force *)&(name), 0444);			\
	MODULE_PARM_DESC(name, desc)

HCA_PCPU_COUNTER(engine_wakeups,
		  "Wake-up calls (wake fd fsync or ENGINE_WAKE) so far");
HCA_PCPU_COUNTER(engine_wakeups_idle,
		  "Wake-up calls that found the thread idle by choice, not yet woken up");
HCA_PCPU_COUNTER(engine_wakeups_waking,
		  "Wake-up calls that found the thread woken back to polling but not yet running");
HCA_PCPU_COUNTER(engine_wakeups_backoff,
		  "Wake-up calls that found the thread backed off (its CPU wanted)");
HCA_COUNTER(engine_idle_sleeps,
	     "Times the engine thread went idle (no work for its idle window)");
HCA_COUNTER(engine_backoffs, "Times the engine thread backed off (CPU wanted)");
HCA_COUNTER(engine_moves, "Times the engine thread left a CPU another task wanted");
HCA_COUNTER(engine_yields, "Times the engine thread yielded its CPU with the flag up");

#define HCA_QP_BUDGET		64	/* WQEs of one QP per turn */
#define HCA_FLUSH_BUDGET	1024	/* flush CQEs of one queue per turn */
#define HCA_RECHECK_TRIES	4	/* re-runs of a QP by a non-engine executor */
#define HCA_ERR_POLL_NS	(10 * NSEC_PER_MSEC)
#define HCA_SLEEP_SLACK_NS	(5 * NSEC_PER_USEC)
#define HCA_STUCK_NS		(50 * NSEC_PER_USEC)
#define HCA_BACKOFF_MAX_SHIFT	4	/* up to 16 x engine_backoff_us */
#define HCA_IDLE_MAX_SHIFT	4	/* up to 16 x engine_idle_us */
#define HCA_MOVE_INTERVAL_NS	NSEC_PER_MSEC	/* at most one move per ms */
#define HCA_BACKOFF_RESET_NS	NSEC_PER_MSEC	/* polled this long: reset */
/*
 * The idle and contention windows count only time the thread watched: a
 * step between two passes counts at most this much. Wall time also passes
 * while the host keeps our vCPU stopped (the TCG VM has no steal time),
 * and the thread must not sleep on the strength of a pause it did not see.
 * A pass takes about a microsecond there.
 */
#define HCA_WATCH_STEP_NS	(20 * NSEC_PER_USEC)

DEFINE_SRCU(hca_engine_srcu);

enum hca_engine_state {
	HCA_ENG_POLLING,
	HCA_ENG_IDLE,		/* asleep until a wake-up call or a timer */
	HCA_ENG_BACKOFF,	/* asleep for engine_backoff_us: CPU wanted */
};

static struct {
	struct mutex lock;		/* start/stop; writers of @hcas */
	struct list_head hcas;		/* struct hca_engine_dev, SRCU */
	unsigned int nr_hcas;
	struct task_struct *task;
	struct hca_exec_ctx *ctx;	/* the thread's */
	int state;			/* enum hca_engine_state, by the thread */
	atomic_t poll_req;		/* "go back to polling" */
	unsigned int backoff_shift;	/* period = engine_backoff_us << it */
	unsigned int idle_shift;	/* window = engine_idle_us << it */
	cpumask_var_t away;		/* scratch mask of hca_engine_move() */
	s64 moved_at;			/* local_clock() of the last move */
	s64 polling_since;		/* when the thread last resumed polling */
	atomic64_t last_wake;		/* ktime ns of the last wake-up call */
} hca_eng = {
	.lock = __MUTEX_INITIALIZER(hca_eng.lock),
	.hcas = LIST_HEAD_INIT(hca_eng.hcas),
};

/* What a look over the QPs found besides work to do. */
struct hca_scan {
	s64 now;		/* ktime, read when first needed (0: not yet) */
	s64 next;		/* earliest retry deadline ahead, or S64_MAX */
	bool err_qps;		/* some QP is in ERR: its RQ may be posted to */
};

static void hca_scan_init(struct hca_scan *scan)
{
	scan->now = 0;
	scan->next = S64_MAX;
	scan->err_qps = false;
}

/*
 * The clock of retry deadlines and sleeps. Read only when a deadline is
 * involved: in the TCG test VM the clocksource is the emulated HPET, and a
 * read costs more than a whole pass over the doorbells.
 */
static s64 hca_scan_now(struct hca_scan *scan)
{
	if (!scan->now)
		scan->now = ktime_get_ns();
	return scan->now;
}

/*
 * Would running @qp make progress now? Lockless: reads the doorbell records
 * and the engine's consumer counters.
 */
static __always_inline bool hca_qp_has_work(struct hca_qp *qp,
					     struct hca_scan *scan)
{
	enum hca_qp_state state = READ_ONCE(qp->state);
	struct hca_engine_qp *e = qp->eng;
	s64 until;

	switch (state) {
	case HCA_QPS_RTS:
	case HCA_QPS_SQD:
		if (hca_sq_posted(qp) == READ_ONCE(qp->sq_ci))
			return false;
		until = READ_ONCE(e->wait_until);
		if (until) {
			if (hca_scan_now(scan) < until) {
				scan->next = min(scan->next, until);
				return false;
			}
			return true;
		}
		/* SQD: a WQE not started yet is not started. */
		return state == HCA_QPS_RTS;
	case HCA_QPS_ERR:
		scan->err_qps = true;
		return hca_sq_posted(qp) != READ_ONCE(qp->sq_ci) ||
		       (qp->rq_wqe_cnt &&
			hca_rq_posted(qp) != READ_ONCE(qp->rq_ci));
	default:
		return false;
	}
}

/*
 * An error the QP reports with an error CQE moves it to ERR; that is all a
 * ConnectX does for those (no async event; a responder that refuses an RDMA
 * request consumes no receive and raises one: hca_resp_nak_rdma()). Returns whether this call moved
 * it there.
 */
bool hca_qp_set_err(struct hca_qp *qp)
{
	unsigned long flags;
	bool moved = false;

	spin_lock_irqsave(&qp->lock, flags);
	if (qp->state != HCA_QPS_RESET && qp->state != HCA_QPS_ERR) {
		qp->state = HCA_QPS_ERR;
		moved = true;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	hca_engine_timer_changed();
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

void hca_engine_thread_wake(void)
{
	struct task_struct *task;

	atomic_set(&hca_eng.poll_req, 1);
	/* hca_engine_stop() clears task, then waits for RCU readers. */
	rcu_read_lock();
	task = READ_ONCE(hca_eng.task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/*
 * A QP started waiting for a timer, or went to ERR (its RQ is then watched
 * on a slow timer): a sleeping engine thread must recompute its timeout.
 * The caller's store (wait_until, state) before our load of the engine's
 * state; pairs with the barrier between the thread's state store and its
 * scan in hca_engine_sleep(), so one of the two sees the other.
 */
void hca_engine_timer_changed(void)
{
	struct task_struct *task;

	/* The caller's wait_until or state store, then the engine's state. */
	smp_mb();
	if (READ_ONCE(hca_eng.state) == HCA_ENG_POLLING)
		return;
	rcu_read_lock();
	task = READ_ONCE(hca_eng.task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/* An error moved @qp (not the one executing) to ERR: flush it soon. */
void hca_engine_defer(struct hca_exec_ctx *ctx, struct hca_qp *qp)
{
	if (!ctx->deferred) {
		refcount_inc(&qp->users);	/* the caller holds one */
		ctx->deferred = qp;
	} else if (ctx->deferred != qp) {
		hca_engine_thread_wake();
	}
}

/* Execute (or flush) @qp's queues; under exec_lock. */
static bool hca_qp_exec(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			 bool *flush)
{
	struct hca_engine_qp *e = qp->eng;
	unsigned int budget = HCA_QP_BUDGET;
	bool progress = false;

	while (budget--) {
		enum hca_qp_state state = READ_ONCE(qp->state);
		u16 posted = hca_sq_posted(qp);

		if (state == HCA_QPS_ERR) {
			*flush = true;
			if (posted != qp->sq_ci) {
				hca_sq_flush(qp, posted, HCA_FLUSH_BUDGET);
				progress = true;
			}
			break;
		}
		if (posted == qp->sq_ci)
			break;
		if (state != HCA_QPS_RTS &&
		    !(state == HCA_QPS_SQD && e->wait_kind != HCA_WAIT_NONE))
			break;
		/* The doorbell record, then the WQEs it covers. */
		smp_rmb();
		if (hca_sq_step(ctx, qp, posted, e->wait_kind ?
				 ktime_get_ns() : 0) != HCA_STEP_DONE)
			break;
		progress = true;
		/*
		 * A preemption point per WQE, once its CQEs are out: the
		 * responder trylocks resp_lock, so mutex_lock()'s might_sleep()
		 * is no longer one.
		 */
		cond_resched();
	}
	return progress;
}

static bool hca_run_qp(struct hca_exec_ctx *ctx, struct hca_qp *qp);

static void hca_run_deferred(struct hca_exec_ctx *ctx)
{
	struct hca_qp *qp;

	while ((qp = ctx->deferred)) {
		ctx->deferred = NULL;
		hca_run_qp(ctx, qp);
		hca_qp_put(qp);
	}
}

/*
 * Run @qp if no other executor is running it. The engine thread polls, so
 * it comes back on its own; any other executor re-checks after unlocking,
 * and leaves a QP with endless traffic to the engine thread.
 */
static bool hca_run_qp(struct hca_exec_ctx *ctx, struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	unsigned int tries = HCA_RECHECK_TRIES;
	struct hca_scan scan;
	bool progress = false;

	for (;;) {
		bool flush = false;

		/*
		 * Our doorbell loads vs. the holder's unlock and re-check: one
		 * of the two sees the other (both sides have a full barrier).
		 */
		smp_mb();
		if (!mutex_trylock(&e->exec_lock))
			break;
		progress |= hca_qp_exec(ctx, qp, &flush);
		mutex_unlock(&e->exec_lock);
		if (flush && qp->rq_wqe_cnt &&
		    hca_rq_posted(qp) != READ_ONCE(qp->rq_ci)) {
			hca_rq_flush(qp, HCA_FLUSH_BUDGET);
			progress = true;
		}
		hca_run_deferred(ctx);
		if (ctx->is_thread)
			break;
		/* Our unlock before the doorbell loads of the re-check. */
		smp_mb();
		hca_scan_init(&scan);
		if (!hca_qp_has_work(qp, &scan))
			break;
		if (!--tries) {
			hca_engine_thread_wake();
			break;
		}
	}
	return progress;
}

/* One turn over every QP of @eh, then over its CQs' arm words. */
static __always_inline bool
hca_engine_pass_hca(struct hca_exec_ctx *ctx, struct hca_engine_dev *eh,
		     struct hca_scan *scan)
{
	struct hca_qp *qp;
	struct hca_cq *cq;
	bool progress = false;

	list_for_each_entry_srcu(qp, &eh->qps, eng_node,
				 srcu_read_lock_held(&hca_engine_srcu)) {
		if (!hca_qp_has_work(qp, scan))
			continue;
		if (!refcount_inc_not_zero(&qp->users))
			continue;		/* being destroyed */
		progress |= hca_run_qp(ctx, qp);
		hca_qp_put(qp);
	}
	list_for_each_entry_srcu(cq, &eh->cqs, eng_node,
				 srcu_read_lock_held(&hca_engine_srcu)) {
		if (!hca_cq_arm_changed(cq))
			continue;
		hca_cq_arm_poll(cq);
		progress = true;
	}
	return progress;
}

/* One turn over every QP of every HCA. */
static bool hca_engine_pass(struct hca_exec_ctx *ctx, struct hca_scan *scan)
{
	struct hca_engine_dev *eh;
	bool progress = false;
	int idx;

	hca_scan_init(scan);
	idx = srcu_read_lock(&hca_engine_srcu);
	list_for_each_entry_srcu(eh, &hca_eng.hcas, node,
				 srcu_read_lock_held(&hca_engine_srcu))
		progress |= hca_engine_pass_hca(ctx, eh, scan);
	srcu_read_unlock(&hca_engine_srcu, idx);
	return progress;
}

/*
 * Is there work anywhere that nobody is doing? Executes nothing. A QP
 * whose exec_lock is held does not count: its holder re-checks after
 * unlocking (provider: DBR store, mb, flag load; here: flag store, mb, lock
 * load; holder: unlock, mb, DBR load: one of the three sees the other).
 * Counting it would make a sleeping thread spin on a holder that yielded
 * its CPU to it.
 */
static bool hca_engine_scan(struct hca_scan *scan)
{
	struct hca_engine_dev *eh;
	struct hca_qp *qp;
	struct hca_cq *cq;
	bool work = false;
	int idx;

	hca_scan_init(scan);
	idx = srcu_read_lock(&hca_engine_srcu);
	list_for_each_entry_srcu(eh, &hca_eng.hcas, node,
				 srcu_read_lock_held(&hca_engine_srcu)) {
		list_for_each_entry_srcu(qp, &eh->qps, eng_node,
					 srcu_read_lock_held(&hca_engine_srcu))
			if (hca_qp_has_work(qp, scan) &&
			    !mutex_is_locked(&qp->eng->exec_lock))
				work = true;
		list_for_each_entry_srcu(cq, &eh->cqs, eng_node,
					 srcu_read_lock_held(&hca_engine_srcu))
			if (hca_cq_arm_changed(cq))
				work = true;
	}
	srcu_read_unlock(&hca_engine_srcu, idx);
	return work;
}

static void hca_engine_set_need_wakeup(bool on)
{
	struct hca_engine_dev *eh;
	int idx;

	idx = srcu_read_lock(&hca_engine_srcu);
	list_for_each_entry_srcu(eh, &hca_eng.hcas, node,
				 srcu_read_lock_held(&hca_engine_srcu))
		WRITE_ONCE(eh->page->flags,
			   on ? SOFTHCA_ENGINE_NEED_WAKEUP : 0);
	srcu_read_unlock(&hca_engine_srcu, idx);
}

static bool hca_engine_stop_sleeping(void)
{
	return kthread_should_stop() || atomic_read(&hca_eng.poll_req);
}

/*
 * Sleep with NEED_WAKEUP set until a wake-up call asks for polling again
 * (IDLE), or for the back-off period (BACKOFF). Timers (retries, ERR
 * queues) are served on the way, with the flag still set.
 *
 * A back-off ends with polling again whatever the CPU looks like at that
 * instant: while the flag is up every post makes a call, and the calls
 * themselves wake tasks (a seccomp supervisor, a tracer) that would keep an
 * instant check "contended" for ever. Polling finds out within
 * engine_yield_us whether the CPU is really wanted; if it is, the next
 * period is twice as long (up to 16 x), and it is reset once polling lasts.
 */
static void hca_engine_sleep(struct hca_exec_ctx *ctx,
			      enum hca_engine_state why)
{
	s64 next, backoff_until = 0, start = ktime_get_ns();
	bool first = true, stuck, woken = false;
	struct hca_scan scan;
	ktime_t until;

	if (why == HCA_ENG_BACKOFF) {
		s64 now = start;

		engine_backoffs++;
		if (now - hca_eng.polling_since < HCA_BACKOFF_RESET_NS) {
			if (hca_eng.backoff_shift < HCA_BACKOFF_MAX_SHIFT)
				hca_eng.backoff_shift++;
		} else {
			hca_eng.backoff_shift = 0;
		}
		backoff_until = now + ((s64)READ_ONCE(engine_backoff_us) *
				       NSEC_PER_USEC << hca_eng.backoff_shift);
	}
	WRITE_ONCE(hca_eng.state, why);
	hca_engine_set_need_wakeup(true);
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		/*
		 * NEED_WAKEUP (and our state) before the doorbell loads of the
		 * re-check; pairs with the provider's full barrier between its
		 * doorbell store and its load of the flag: either the provider
		 * sees the flag and calls, or the re-check sees its doorbell.
		 * Likewise with hca_engine_timer_changed() for deadlines.
		 */
		smp_mb();
		if (hca_engine_stop_sleeping()) {
			woken = true;
			break;
		}
		stuck = false;
		if (hca_engine_scan(&scan)) {
			__set_current_state(TASK_RUNNING);
			/* Rung before the flag was up: back to polling. */
			if (first && why == HCA_ENG_IDLE)
				break;	/* not counted as an idle sleep */
			first = false;
			/* Expired retries, ERR queues, stragglers: run them. */
			if (hca_engine_pass(ctx, &scan)) {
				if (why == HCA_ENG_IDLE && READ_ONCE(engine_poll))
					break;	/* traffic again */
				continue;
			}
			/* Nothing moved: never spin here, sleep a little. */
			stuck = true;
			set_current_state(TASK_INTERRUPTIBLE);
			if (hca_engine_stop_sleeping()) {
				woken = true;
				break;
			}
		}
		if (first && why == HCA_ENG_IDLE)
			engine_idle_sleeps++;
		first = false;
		next = scan.next;
		if (stuck)
			next = min_t(s64, next,
				     hca_scan_now(&scan) + HCA_STUCK_NS);
		if (scan.err_qps)
			next = min_t(s64, next,
				     hca_scan_now(&scan) + HCA_ERR_POLL_NS);
		if (why == HCA_ENG_BACKOFF)
			next = min_t(s64, next, backoff_until);
		if (next == S64_MAX) {
			schedule();
		} else {
			until = ns_to_ktime(next);
			schedule_hrtimeout_range(&until, HCA_SLEEP_SLACK_NS,
						 HRTIMER_MODE_ABS);
		}
		__set_current_state(TASK_RUNNING);
		if (why == HCA_ENG_BACKOFF && ktime_get_ns() >= backoff_until)
			break;
	}
	__set_current_state(TASK_RUNNING);
	/*
	 * Woken by wake-up calls soon after going idle: the pause in the
	 * traffic was shorter than the idle window (a descheduled vCPU, an
	 * application's think time), so the window grows; a long sleep
	 * shrinks it back.
	 */
	if (why == HCA_ENG_IDLE && woken) {
		if (ktime_get_ns() - start < (s64)READ_ONCE(engine_wake_window_us) *
					      NSEC_PER_USEC) {
			if (hca_eng.idle_shift < HCA_IDLE_MAX_SHIFT)
				hca_eng.idle_shift++;
		} else {
			hca_eng.idle_shift = 0;
		}
	}
	hca_engine_set_need_wakeup(false);
	hca_eng.polling_since = ktime_get_ns();
	WRITE_ONCE(hca_eng.state, HCA_ENG_POLLING);
}

/*
 * Another task wants this CPU: leave it for another one. The scheduler's
 * wake-up placement often puts the thread on its waker's CPU (the
 * application that just made a wake-up call) even when another CPU is
 * idle, and a polling kthread (no kernel preemption) would then keep that
 * application off its CPU until it went idle. Excluding this CPU from our
 * mask migrates us at once; the full mask is restored right after (no move
 * back). If the new CPU is wanted too, yield and back-off take over. At
 * most once per HCA_MOVE_INTERVAL_NS while polling; the first one after a
 * sleep is always allowed (a woken thread lands next to its waker).
 * Returns true if we moved.
 */
static bool hca_engine_move(s64 now)
{
	int cpu = raw_smp_processor_id();

	if (num_online_cpus() < 2 ||
	    now - hca_eng.moved_at < HCA_MOVE_INTERVAL_NS)
		return false;
	hca_eng.moved_at = now;
	cpumask_copy(hca_eng.away, cpu_online_mask);
	cpumask_clear_cpu(cpu, hca_eng.away);
	/* Flag down, as in a yield: posts wait the moment it takes. */
	if (!set_cpus_allowed_ptr(current, hca_eng.away)) {
		set_cpus_allowed_ptr(current, cpu_possible_mask);
		engine_moves++;
	}
	return raw_smp_processor_id() != cpu;
}

/*
 * The scheduler wants this CPU for someone else (need_resched), usually
 * for a moment (a task just woken). Run the pass once more and give the
 * CPU up with NEED_WAKEUP down: a post made meanwhile waits until we are
 * back, instead of making a system call. Raising the flag here fed a loop:
 * each call wakes whatever watches the caller (a seccomp supervisor, a
 * tracer), that task lands on this CPU, we yield again, the next post calls
 * again. A competitor that stays is caught by the !single_task_running()
 * check within engine_yield_us of our return, and then we back off with
 * the flag up.
 */
static void hca_engine_yield(struct hca_exec_ctx *ctx)
{
	struct hca_scan scan;

	engine_yields++;
	hca_engine_pass(ctx, &scan);
	cond_resched();
}

/*
 * The engine thread. While it polls, posts make no system call. When the
 * scheduler wants its CPU for a moment (need_resched) it yields; when
 * another task is runnable on its CPU it first moves to another CPU, and
 * if the task stays for engine_yield_us it backs off (sleeps) with
 * NEED_WAKEUP up, and the wake-up calls carry the work.
 */
static int hca_engine_thread(void *data)
{
	struct hca_exec_ctx *ctx = data;
	s64 prev, now, step, idle = 0, contended = -1;
	struct hca_scan scan;
	bool progress;

	/* The thread's own timing: local_clock(), cheap on every machine. */
	prev = local_clock();
	while (!kthread_should_stop()) {
		if (atomic_xchg(&hca_eng.poll_req, 0))
			hca_engine_set_need_wakeup(false);
		progress = hca_engine_pass(ctx, &scan);
		now = local_clock();
		step = clamp_t(s64, now - prev, 0, HCA_WATCH_STEP_NS);
		prev = now;
		idle = progress ? 0 : idle + step;

		if (!READ_ONCE(engine_poll) ||
		    idle > ((s64)READ_ONCE(engine_idle_us) * NSEC_PER_USEC <<
			    hca_eng.idle_shift)) {
			hca_engine_sleep(ctx, HCA_ENG_IDLE);
			goto slept;
		}
		if (need_resched()) {
			if (!hca_engine_move(now))
				hca_engine_yield(ctx);
			continue;
		}
		if (!single_task_running()) {
			if (contended >= 0)
				contended += step;
			else if (!hca_engine_move(now))
				contended = 0;
			if (contended > (s64)READ_ONCE(engine_yield_us) *
					NSEC_PER_USEC) {
				hca_engine_sleep(ctx, HCA_ENG_BACKOFF);
				goto slept;
			}
		} else {
			contended = -1;
		}
		/* A quiescent state for RCU-tasks; reschedules nothing here. */
		cond_resched_tasks_rcu_qs();
		continue;
slept:
		prev = local_clock();
		idle = 0;
		contended = -1;
		hca_eng.moved_at = prev - HCA_MOVE_INTERVAL_NS;
	}
	return 0;
}

/* ---- wake-up call (ENGINE_WAKE) ----------------------------------------- */

static __always_inline struct hca_exec_ctx *
hca_ctx_get(struct hca_engine_dev *eh)
{
	unsigned int i, start = raw_smp_processor_id();
	struct hca_exec_ctx *ctx = NULL;

	for (i = 0; i < HCA_SPARE_CTX && !ctx; i++)
		ctx = xchg(&eh->spare[(start + i) % HCA_SPARE_CTX].ctx, NULL);
	if (!ctx)
		ctx = kmalloc(sizeof(*ctx), GFP_KERNEL);
	if (ctx) {
		ctx->is_thread = false;
		ctx->deferred = NULL;
	}
	return ctx;
}

static __always_inline void hca_ctx_put(struct hca_engine_dev *eh,
					 struct hca_exec_ctx *ctx)
{
	unsigned int i, start = raw_smp_processor_id();

	for (i = 0; i < HCA_SPARE_CTX; i++)
		if (!cmpxchg(&eh->spare[(start + i) % HCA_SPARE_CTX].ctx,
			     NULL, ctx))
			return;
	kfree(ctx);
}

/*
 * Is the thread runnable (woken, waiting for a CPU or running)? A woken
 * thread that is still asleep did not honour the wake-up: its calls count as
 * idle ones, not as waiting for the scheduler. Statistics only.
 */
static bool hca_engine_runnable(void)
{
	struct task_struct *task;
	unsigned int state = TASK_INTERRUPTIBLE;

	rcu_read_lock();
	task = READ_ONCE(hca_eng.task);
	if (task)
		state = READ_ONCE(task->__state);
	rcu_read_unlock();
	/* TASK_WAKING: queued to a remote CPU's wake list, not yet enqueued. */
	return state == TASK_RUNNING || state == TASK_WAKING;
}

void hca_wakeup_call(struct hca *hca)
{
	struct hca_engine_dev *eh = hca->eng;
	struct hca_exec_ctx *ctx;
	struct hca_scan scan;
	s64 prev;
	int idx;

	this_cpu_inc(engine_wakeups);
	this_cpu_inc(*eh->wakeups);
	switch (READ_ONCE(hca_eng.state)) {
	case HCA_ENG_IDLE:
		if (atomic_read(&hca_eng.poll_req) && hca_engine_runnable())
			this_cpu_inc(engine_wakeups_waking);
		else
			this_cpu_inc(engine_wakeups_idle);
		break;
	case HCA_ENG_BACKOFF:
		this_cpu_inc(engine_wakeups_backoff);
		break;
	}
	ctx = hca_ctx_get(eh);
	if (!ctx) {
		hca_engine_thread_wake();
		return;
	}
	/* The doorbells the caller (or anyone) stored before calling. */
	smp_mb();
	hca_scan_init(&scan);
	idx = srcu_read_lock(&hca_engine_srcu);
	hca_engine_pass_hca(ctx, eh, &scan);
	srcu_read_unlock(&hca_engine_srcu, idx);
	hca_ctx_put(eh, ctx);

	/* Traffic continues: hand the stream back to the polling thread. */
	if (READ_ONCE(hca_eng.state) == HCA_ENG_IDLE &&
	    READ_ONCE(engine_poll)) {
		s64 now = hca_scan_now(&scan);

		prev = atomic64_xchg(&hca_eng.last_wake, now);
		if (now - prev <
		    (s64)READ_ONCE(engine_wake_window_us) * NSEC_PER_USEC)
			hca_engine_thread_wake();
	}
}

/* ---- HCA and QP bookkeeping --------------------------------------------- */

static int hca_engine_start(void)
{
	struct task_struct *task;
	struct hca_exec_ctx *ctx;

	if (!zalloc_cpumask_var(&hca_eng.away, GFP_KERNEL))
		return -ENOMEM;
	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);
	if (!ctx) {
		free_cpumask_var(hca_eng.away);
		return -ENOMEM;
	}
	ctx->is_thread = true;
	atomic_set(&hca_eng.poll_req, 0);
	WRITE_ONCE(hca_eng.state, HCA_ENG_POLLING);
	task = kthread_run(hca_engine_thread, ctx, "softhca_engine");
	if (IS_ERR(task)) {
		kfree(ctx);
		free_cpumask_var(hca_eng.away);
		return PTR_ERR(task);
	}
	hca_eng.ctx = ctx;
	WRITE_ONCE(hca_eng.task, task);
	return 0;
}

static void hca_engine_stop(void)
{
	struct task_struct *task = hca_eng.task;

	WRITE_ONCE(hca_eng.task, NULL);
	synchronize_rcu();
	kthread_stop(task);
	free_cpumask_var(hca_eng.away);
	kfree(hca_eng.ctx);
	hca_eng.ctx = NULL;
}

int hca_engine_init(struct hca *hca)
{
	struct hca_engine_dev *eh;
	int err = 0;

	if (hca->caps->max_wqe_size > HCA_ENG_WQE_MAX ||
	    hca->caps->max_send_sge > HCA_ENG_SGE_MAX ||
	    hca->caps->max_recv_sge > HCA_ENG_SGE_MAX ||
	    hca->caps->max_sge_rd > HCA_ENG_SGE_MAX)
		return -EINVAL;

	eh = kzalloc(sizeof(*eh), GFP_KERNEL);
	if (!eh)
		return -ENOMEM;
	eh->wakeups = alloc_percpu(unsigned long);
	if (!eh->wakeups) {
		kfree(eh);
		return -ENOMEM;
	}
	eh->hca = hca;
	spin_lock_init(&eh->qps_lock);
	INIT_LIST_HEAD(&eh->qps);
	INIT_LIST_HEAD(&eh->cqs);
	if (!hca->engine_page) {
		free_percpu(eh->wakeups);
		kfree(eh);
		return -EINVAL;
	}
	eh->page = page_address(hca->engine_page);
	/* Until the thread says otherwise, every doorbell calls. */
	WRITE_ONCE(eh->page->flags, SOFTHCA_ENGINE_NEED_WAKEUP);

	mutex_lock(&hca_eng.lock);
	if (!hca_eng.nr_hcas)
		err = hca_engine_start();
	if (!err) {
		hca_eng.nr_hcas++;
		/* It sees every back-off from now on (all HCAs back off). */
		eh->backoffs_base = READ_ONCE(engine_backoffs);
		hca->eng = eh;
		list_add_tail_rcu(&eh->node, &hca_eng.hcas);
	}
	mutex_unlock(&hca_eng.lock);
	if (err) {
		free_percpu(eh->wakeups);
		kfree(eh);
		return err;
	}
	hca_engine_thread_wake();
	return 0;
}

void hca_engine_fini(struct hca *hca)
{
	struct hca_engine_dev *eh = hca->eng;
	unsigned int i;

	if (!eh)
		return;
	mutex_lock(&hca_eng.lock);
	list_del_rcu(&eh->node);
	synchronize_srcu(&hca_engine_srcu);
	if (!--hca_eng.nr_hcas)
		hca_engine_stop();
	mutex_unlock(&hca_eng.lock);

	WARN_ON_ONCE(!list_empty(&eh->qps));
	WARN_ON_ONCE(!list_empty(&eh->cqs));
	for (i = 0; i < HCA_SPARE_CTX; i++)
		kfree(eh->spare[i].ctx);
	hca->eng = NULL;
	free_percpu(eh->wakeups);
	kfree(eh);
}

void hca_engine_counters(struct hca *hca, u64 *wakeups, u64 *backoffs)
{
	struct hca_engine_dev *eh = hca->eng;
	int cpu;

	*wakeups = 0;
	for_each_possible_cpu(cpu)
		*wakeups += *per_cpu_ptr(eh->wakeups, cpu);
	*backoffs = READ_ONCE(engine_backoffs) - eh->backoffs_base;
}

int hca_engine_qp_init(struct hca_qp *qp)
{
	struct hca_engine_dev *eh = qp->hca->eng;
	struct hca_engine_qp *e;

	if (qp->rq_wqe_cnt &&
	    (qp->rq_wqe_shift < SOFTHCA_DS_SHIFT ||
	     (1U << qp->rq_wqe_shift) > HCA_ENG_RWQE_MAX))
		return -EINVAL;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->qp = qp;
	mutex_init(&e->exec_lock);
	mutex_init(&e->resp_lock);
	qp->eng = e;
	qp->sq_ci = 0;
	qp->rq_ci = 0;

	spin_lock(&eh->qps_lock);
	list_add_tail_rcu(&qp->eng_node, &eh->qps);
	spin_unlock(&eh->qps_lock);
	return 0;
}

void hca_engine_qp_fini(struct hca_qp *qp)
{
	struct hca_engine_dev *eh = qp->hca->eng;
	struct hca_engine_qp *e = qp->eng;

	if (!e)
		return;
	spin_lock(&eh->qps_lock);
	list_del_rcu(&qp->eng_node);
	spin_unlock(&eh->qps_lock);
	/* Every executor runs inside the SRCU read side. */
	synchronize_srcu_expedited(&hca_engine_srcu);
	mutex_destroy(&e->resp_lock);
	mutex_destroy(&e->exec_lock);
	qp->eng = NULL;
	kfree(e);
}

void hca_engine_cq_init(struct hca_cq *cq)
{
	struct hca_engine_dev *eh = cq->hca->eng;

	spin_lock(&eh->qps_lock);
	list_add_tail_rcu(&cq->eng_node, &eh->cqs);
	spin_unlock(&eh->qps_lock);
}

void hca_engine_cq_fini(struct hca_cq *cq)
{
	struct hca_engine_dev *eh = cq->hca->eng;

	spin_lock(&eh->qps_lock);
	list_del_rcu(&cq->eng_node);
	spin_unlock(&eh->qps_lock);
	synchronize_srcu_expedited(&hca_engine_srcu);
}

/* Run @qp in the caller's context (a firmware command). */
static void hca_engine_run_now(struct hca_qp *qp)
{
	struct hca_engine_dev *eh = qp->hca->eng;
	struct hca_exec_ctx *ctx;
	int idx;

	ctx = hca_ctx_get(eh);
	if (!ctx) {
		hca_engine_thread_wake();
		return;
	}
	idx = srcu_read_lock(&hca_engine_srcu);
	hca_run_qp(ctx, qp);
	srcu_read_unlock(&hca_engine_srcu, idx);
	hca_ctx_put(eh, ctx);
}

void hca_engine_qp_state_changed(struct hca_qp *qp,
				  enum hca_qp_state old_state)
{
	struct hca_engine_qp *e = qp->eng;

	switch (READ_ONCE(qp->state)) {
	case HCA_QPS_RESET:
		/* Forget both queues; the provider starts over from 0. */
		mutex_lock(&e->exec_lock);
		mutex_lock(&e->resp_lock);
		qp->sq_ci = 0;
		qp->rq_ci = 0;
		e->comm_est = false;
		hca_wait_clear(qp);
		WRITE_ONCE(qp->dbr->rcv_counter, 0);
		WRITE_ONCE(qp->dbr->snd_counter, 0);
		mutex_unlock(&e->resp_lock);
		mutex_unlock(&e->exec_lock);
		break;
	case HCA_QPS_SQD:
		/* Drained already unless a WQE executes or waits. */
		mutex_lock(&e->exec_lock);
		hca_sq_drained_check(qp);
		mutex_unlock(&e->exec_lock);
		/*
		 * A holder of exec_lock re-checks after unlocking: a sleeping
		 * engine that scanned meanwhile left this QP's retry deadline
		 * to us (it went to sleep without a timer for it).
		 */
		hca_engine_timer_changed();
		break;
	case HCA_QPS_RTS:
		/* WQEs posted before RTS start now. */
	case HCA_QPS_ERR:
		/* Flush what is outstanding. */
		hca_engine_run_now(qp);
		break;
	default:
		break;
	}
}
