// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the engine threads. They find work through the
 * doorbell areas they watch and their run lists (exec.c, design.md §10),
 * execute send queues (requester.c, responder.c), flush QPs in ERR and
 * retry WQEs whose timers expired. See Documentation/engine.md.
 *
 * engine_threads threads (one on a small machine) share every HCA of the
 * module: each serves its own range of every doorbell area's slots, so a
 * QP always has the same thread, and a requester and responder on two
 * devices need nothing else. While work flows a thread polls the areas it
 * watches, with no system call from the application. An area whose hints
 * stop for the idle window is let go: the thread raises that area's
 * NEED_WAKEUP flag for itself, issues a full barrier and looks at the
 * area once more. When the thread has had no work for engine_idle_us, or
 * another task has wanted its CPU for engine_yield_us, it raises the flag
 * of every area it still watches the same way and sleeps. A provider that
 * rang a doorbell issues a full barrier, loads its area's flag for the
 * QP's thread and, if set, makes the wake-up call (fsync on its wake fd,
 * or the ENGINE_WAKE method): hca_wakeup_call() runs that area's pending
 * work in the caller's context, hands the area to the thread and, if the
 * calls keep coming, restarts its polling.
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "debug.h"
#include "engine.h"
#include "wire_rc.h"

static unsigned int engine_threads;
module_param(engine_threads, uint, 0444);
MODULE_PARM_DESC(engine_threads,
		 "Engine threads sharing the doorbell slots of every device (default 0: one per 4 online CPUs at load, at least 1, at most 8)");

unsigned int hca_engine_nr_threads = 1;
struct hca_engine_thread *hca_engine_threads;


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

/*
 * A sleeping thread is woken for work that waits for it alone: packets
 * from the wire no wake-up call takes, kernel QPs' doorbells, expired
 * retries. At nice 0 a woken thread often waited for the next scheduler
 * tick (4 ms) behind a task busy-polling its CQ, since its polling had
 * used up the vruntime credit a wake-up preempts with; at -20 it runs at
 * once.
 */
static int engine_sleep_nice = MIN_NICE;
module_param(engine_sleep_nice, int, 0644);
MODULE_PARM_DESC(engine_sleep_nice,
		 "Nice value of a sleeping engine thread, which it runs its wake-ups at (default -20)");

/*
 * Polling at nice 0 shares the CPUs with the applications. Below 0 the
 * load balancer gives the thread a CPU of its own and packs every other
 * task onto the rest, where they cannot make it back off: more message
 * rate when the applications only wait for the engine (8 perftest pairs
 * on 2 vCPUs), half the CPU for an application that computes beside one
 * that posts (engine.md, "Priority").
 */
static int engine_poll_nice;
module_param(engine_poll_nice, int, 0644);
MODULE_PARM_DESC(engine_poll_nice,
		 "Nice value of a polling engine thread (default 0)");

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


#define HCA_ERR_POLL_NS	(10 * NSEC_PER_MSEC)
/* Hints of one area per pass: a flood of them waits its turn. */
#define HCA_AREA_BUDGET		16
#define HCA_SLEEP_SLACK_NS	(5 * NSEC_PER_USEC)
#define HCA_STUCK_NS		(50 * NSEC_PER_USEC)
#define HCA_BACKOFF_MAX_SHIFT	4	/* up to 16 x engine_backoff_us */
#define HCA_IDLE_MAX_SHIFT	4	/* up to 16 x engine_idle_us */
#define HCA_MOVE_INTERVAL_NS	NSEC_PER_MSEC	/* at most one move per ms */
#define HCA_BACKOFF_RESET_NS	NSEC_PER_MSEC	/* polled this long: reset */
#define HCA_SEND_RUNG_NS	(100 * NSEC_PER_MSEC)	/* DESTROY_QP waits at most */
/*
 * The idle and contention windows count only time the thread watched: a
 * step between two passes counts at most this much. Wall time also passes
 * while the host keeps our vCPU stopped (the TCG VM has no steal time),
 * and the thread must not sleep on the strength of a pause it did not see.
 * A pass takes about a microsecond there.
 */
#define HCA_WATCH_STEP_NS	(20 * NSEC_PER_USEC)

static const char * const hca_engine_state_names[] = {
	[HCA_ENG_POLLING]	= "POLLING",
	[HCA_ENG_IDLE]		= "IDLE",
	[HCA_ENG_BACKOFF]	= "BACKOFF",
};

static struct {
	struct mutex lock;		/* start/stop */
	unsigned int nr_hcas;
} hca_eng = {
	.lock = __MUTEX_INITIALIZER(hca_eng.lock),
};

/* Hints each thread claimed in its passes, "n0,n1,...": where work went. */
static int hca_engine_claims_get(char *buf, const struct kernel_param *kp)
{
	unsigned int t;
	int len = 0;

	mutex_lock(&hca_eng.lock);
	for (t = 0; hca_engine_threads && t < hca_engine_nr_threads; t++)
		len += sysfs_emit_at(buf, len, "%s%lu", t ? "," : "",
				     READ_ONCE(hca_engine_threads[t].claims));
	mutex_unlock(&hca_eng.lock);
	return len + sysfs_emit_at(buf, len, "\n");
}

static const struct kernel_param_ops hca_engine_claims_ops = {
	.set = hca_pcpu_counter_set,
	.get = hca_engine_claims_get,
};
module_param_cb(engine_claims, &hca_engine_claims_ops, NULL, 0444);
MODULE_PARM_DESC(engine_claims,
		 "Doorbell hints each engine thread claimed, comma separated");

/* ---- waking a thread ------------------------------------------------------ */

/* Back to polling: a wake-up call found traffic, or a kernel doorbell. */
void hca_engine_thread_wake(struct hca_engine_thread *thr)
{
	struct task_struct *task;

	atomic_set(&thr->poll_req, 1);
	/* hca_engine_stop() clears task, then waits for RCU readers. */
	rcu_read_lock();
	task = READ_ONCE(thr->task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/*
 * Something was put on @thr's run or ERR list: a sleeping thread looks at
 * it (and recomputes its timeout). The caller's list store before our load
 * of the state; pairs with the barrier between the thread's state store
 * and its look at the lists in hca_engine_sleep(). Any context.
 */
void hca_engine_thread_poke(struct hca_engine_thread *thr)
{
	struct task_struct *task;

	/* The caller's list store before our load of the thread's state. */
	smp_mb();
	if (READ_ONCE(thr->state) == HCA_ENG_POLLING)
		return;
	rcu_read_lock();
	task = READ_ONCE(thr->task);
	if (task)
		wake_up_process(task);
	rcu_read_unlock();
}

/* ---- watching doorbell areas --------------------------------------------- */

/*
 * Hand @a to @thr (a wake-up call or the kernel found it unwatched and
 * rang it): the thread watches it from its next pass. Any context.
 */
static void hca_area_join(struct hca_engine_thread *thr, struct hca_db_area *a)
{
	struct hca_db_watch *w = &a->watch[thr->index];
	unsigned long flags;

	if (READ_ONCE(w->state) != HCA_DB_UNWATCHED)
		return;
	spin_lock_irqsave(&thr->lock, flags);
	if (w->state == HCA_DB_UNWATCHED) {
		list_add_tail(&w->node, &thr->join);
		WRITE_ONCE(w->state, HCA_DB_JOINING);
	}
	spin_unlock_irqrestore(&thr->lock, flags);
}

/*
 * The areas handed over since the last pass become watched; their flag
 * follows the thread's state (up while it sleeps). Thread only, under
 * watch_lock.
 */
static void hca_area_take_joins(struct hca_engine_thread *thr, s64 now)
{
	struct hca_db_watch *w, *tmp;
	unsigned long flags;
	LIST_HEAD(joined);

	if (list_empty(&thr->join))
		return;
	spin_lock_irqsave(&thr->lock, flags);
	list_splice_init(&thr->join, &joined);
	list_for_each_entry(w, &joined, node)
		WRITE_ONCE(w->state, HCA_DB_WATCHED);
	spin_unlock_irqrestore(&thr->lock, flags);
	list_for_each_entry_safe(w, tmp, &joined, node) {
		struct hca_db_area *a = container_of(w, struct hca_db_area,
						     watch[thr->index]);

		w->last_hint = now;
		hca_db_set_need_wakeup(a, thr->index,
				       thr->state != HCA_ENG_POLLING);
	}
	list_splice_tail(&joined, &thr->watched);
}

/*
 * Stop watching @a: its flag goes up, then (full barrier, the mirror of the
 * provider's) a last look. Returns false, still watching, if a hint came.
 * A hint that lands while the area leaves the list rejoins it.
 */
static bool hca_area_unwatch(struct hca_engine_thread *thr,
			     struct hca_db_area *a)
{
	struct hca_db_watch *w = &a->watch[thr->index];
	unsigned long flags;

	hca_db_set_need_wakeup(a, thr->index, true);
	/* The flag before the last look; the provider: hint, mb, flag. */
	smp_mb();
	if (hca_db_pending(a, thr->index)) {
		hca_db_set_need_wakeup(a, thr->index,
				       thr->state != HCA_ENG_POLLING);
		return false;
	}
	spin_lock_irqsave(&thr->lock, flags);
	list_del_init(&w->node);
	WRITE_ONCE(w->state, HCA_DB_UNWATCHED);
	spin_unlock_irqrestore(&thr->lock, flags);
	/*
	 * The state before a second look; pairs with hca_kernel_doorbell()'s
	 * hint, barrier, state. A kernel doorbell that saw the flag up but
	 * the area still watched joined nothing: take it back ourselves.
	 */
	smp_mb();
	if (hca_db_pending(a, thr->index))
		hca_area_join(thr, a);
	return true;
}

/* The flag of every watched area, up (going to sleep) or down. */
static void hca_area_flags(struct hca_engine_thread *thr, bool on)
{
	struct hca_db_watch *w;

	list_for_each_entry(w, &thr->watched, node)
		hca_db_set_need_wakeup(container_of(w, struct hca_db_area,
						    watch[thr->index]),
				       thr->index, on);
}

void hca_engine_area_fini(struct hca_db_area *a)
{
	unsigned int t;

	for (t = 0; t < hca_engine_nr_threads && hca_engine_threads; t++) {
		struct hca_engine_thread *thr = &hca_engine_threads[t];
		struct hca_db_watch *w = &a->watch[t];
		unsigned long flags;

		/* The thread holds it for a whole pass over its areas. */
		mutex_lock(&thr->watch_lock);
		spin_lock_irqsave(&thr->lock, flags);
		if (w->state != HCA_DB_UNWATCHED)
			list_del_init(&w->node);
		WRITE_ONCE(w->state, HCA_DB_UNWATCHED);
		spin_unlock_irqrestore(&thr->lock, flags);
		mutex_unlock(&thr->watch_lock);
	}
}

/* ---- a pass ---------------------------------------------------------------- */

static s64 hca_idle_window(struct hca_engine_thread *thr)
{
	return (s64)READ_ONCE(engine_idle_us) * NSEC_PER_USEC <<
	       thr->idle_shift;
}

/*
 * One turn: the run list, then every watched area's hints (a budget each,
 * round robin), then the ERR list if its poll is due. Areas quiet for the
 * idle window are let go. Under watch_lock.
 */
static bool hca_engine_pass(struct hca_engine_thread *thr, s64 now)
{
	struct hca_exec_ctx *ctx = thr->ctx;
	struct hca_db_watch *w, *tmp;
	bool progress;

	hca_area_take_joins(thr, now);
	/*
	 * What arrived first: the packets are answers that free requesters'
	 * windows, and a receive queue left to fill drops what the peers
	 * then send again.
	 */
	progress = hca_wire_rx_pending(thr) && hca_wire_run_rx(ctx, thr);
	progress |= hca_run_list(ctx, thr);
	list_for_each_entry_safe(w, tmp, &thr->watched, node) {
		struct hca_db_area *a = container_of(w, struct hca_db_area,
						     watch[thr->index]);

		unsigned int n = hca_run_area(ctx, a, thr->index,
					      HCA_AREA_BUDGET);

		if (n) {
			thr->claims += n;
			w->last_hint = now;
			progress = true;
		} else if (now - w->last_hint > hca_idle_window(thr)) {
			hca_area_unwatch(thr, a);
		}
	}
	if (hca_poll_err_list(thr, now))
		progress |= hca_run_list(ctx, thr);
	return progress;
}

/*
 * Is there work nobody is doing? Executes nothing: a hint in a watched area,
 * an area handed over, or the run list. Under watch_lock, after the barrier
 * that follows the flags going up.
 */
static bool hca_engine_scan(struct hca_engine_thread *thr)
{
	struct hca_db_watch *w;

	if (hca_thread_has_work(thr) || !list_empty(&thr->join))
		return true;
	list_for_each_entry(w, &thr->watched, node)
		if (hca_db_pending(container_of(w, struct hca_db_area,
						watch[thr->index]),
				   thr->index))
			return true;
	return false;
}

static bool hca_engine_stop_sleeping(struct hca_engine_thread *thr)
{
	return kthread_should_stop() || atomic_read(&thr->poll_req);
}

/* Set the thread's nice value to @nice (a parameter), if not already. */
static void hca_engine_renice(int nice)
{
	nice = clamp(nice, MIN_NICE, MAX_NICE);

	if (task_nice(current) != nice)
		set_user_nice(current, nice);
}

/*
 * Sleep with NEED_WAKEUP up on every watched area until a wake-up call
 * asks for polling again (IDLE), or for the back-off period (BACKOFF).
 * The run list (expired retries, errors to flush) and the ERR list are
 * served on the way, with the flags still up.
 *
 * A back-off ends with polling again whatever the CPU looks like at that
 * instant: while the flag is up every post makes a call, and the calls
 * themselves wake tasks (a seccomp supervisor, a tracer) that would keep an
 * instant check "contended" for ever. Polling finds out within
 * engine_yield_us whether the CPU is really wanted; if it is, the next
 * period is twice as long (up to 16 x), and it is reset once polling lasts.
 */
static void hca_engine_sleep(struct hca_engine_thread *thr,
			     enum hca_engine_state why)
{
	s64 next, backoff_until = 0, start = ktime_get_ns();
	bool first = true, stuck, woken = false, work;
	ktime_t until;

	if (why == HCA_ENG_BACKOFF) {
		s64 now = start;

		engine_backoffs++;
		if (now - thr->polling_since < HCA_BACKOFF_RESET_NS) {
			if (thr->backoff_shift < HCA_BACKOFF_MAX_SHIFT)
				thr->backoff_shift++;
		} else {
			thr->backoff_shift = 0;
		}
		backoff_until = now + ((s64)READ_ONCE(engine_backoff_us) *
				       NSEC_PER_USEC << thr->backoff_shift);
	}
	hca_dbg_engine("POLLING -> %s (thread %u, idle window %u us, back-off %u us)\n",
		       hca_engine_state_names[why], thr->index,
		       READ_ONCE(engine_idle_us) << thr->idle_shift,
		       READ_ONCE(engine_backoff_us) << thr->backoff_shift);
	mutex_lock(&thr->watch_lock);
	WRITE_ONCE(thr->state, why);
	hca_area_flags(thr, true);
	mutex_unlock(&thr->watch_lock);
	hca_engine_renice(READ_ONCE(engine_sleep_nice));
	for (;;) {
		mutex_lock(&thr->watch_lock);
		set_current_state(TASK_INTERRUPTIBLE);
		/*
		 * The flags (and our state) before the loads of the re-check;
		 * pairs with the provider's full barrier between its hint
		 * store and its load of the flag: either the provider sees
		 * the flag and calls, or the re-check sees its hint. Likewise
		 * with hca_engine_thread_poke() for the run list.
		 */
		smp_mb();
		if (hca_engine_stop_sleeping(thr)) {
			mutex_unlock(&thr->watch_lock);
			woken = true;
			break;
		}
		stuck = false;
		work = hca_engine_scan(thr);
		if (!work && !list_empty(&thr->err) &&
		    local_clock() >= thr->err_next)
			work = true;	/* the ERR poll is due */
		if (work) {
			__set_current_state(TASK_RUNNING);
			/* Rung before the flags were up: back to polling. */
			if (first && why == HCA_ENG_IDLE) {
				mutex_unlock(&thr->watch_lock);
				break;	/* not counted as an idle sleep */
			}
			first = false;
			/* Expired retries, ERR queues, stragglers: run them. */
			if (hca_engine_pass(thr, local_clock())) {
				mutex_unlock(&thr->watch_lock);
				if (why == HCA_ENG_IDLE && READ_ONCE(engine_poll))
					break;	/* traffic again */
				continue;
			}
			/* Nothing moved: never spin here, sleep a little. */
			stuck = true;
			set_current_state(TASK_INTERRUPTIBLE);
			if (hca_engine_stop_sleeping(thr)) {
				mutex_unlock(&thr->watch_lock);
				woken = true;
				break;
			}
		}
		mutex_unlock(&thr->watch_lock);
		if (first && why == HCA_ENG_IDLE)
			engine_idle_sleeps++;
		first = false;
		next = S64_MAX;
		if (stuck)
			next = ktime_get_ns() + HCA_STUCK_NS;
		if (!list_empty(&thr->err))
			next = min_t(s64, next, ktime_get_ns() + HCA_ERR_POLL_NS);
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
	hca_engine_renice(READ_ONCE(engine_poll_nice));
	/*
	 * Woken by wake-up calls soon after going idle: the pause in the
	 * traffic was shorter than the idle window (a descheduled vCPU, an
	 * application's think time), so the window grows; a long sleep
	 * shrinks it back.
	 */
	if (why == HCA_ENG_IDLE && woken) {
		if (ktime_get_ns() - start < (s64)READ_ONCE(engine_wake_window_us) *
					      NSEC_PER_USEC) {
			if (thr->idle_shift < HCA_IDLE_MAX_SHIFT)
				thr->idle_shift++;
		} else {
			thr->idle_shift = 0;
		}
	}
	mutex_lock(&thr->watch_lock);
	WRITE_ONCE(thr->state, HCA_ENG_POLLING);
	hca_area_flags(thr, false);
	mutex_unlock(&thr->watch_lock);
	thr->polling_since = ktime_get_ns();
	hca_dbg_engine("%s -> POLLING after %lld us (thread %u, %s)\n",
		       hca_engine_state_names[why],
		       (thr->polling_since - start) / NSEC_PER_USEC, thr->index,
		       woken ? "woken" : why == HCA_ENG_IDLE ? "work found" :
		       "back-off over");
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
static bool hca_engine_move(struct hca_engine_thread *thr, s64 now)
{
	int cpu = raw_smp_processor_id();

	if (num_online_cpus() < 2 ||
	    now - thr->moved_at < HCA_MOVE_INTERVAL_NS)
		return false;
	thr->moved_at = now;
	cpumask_copy(thr->away, cpu_online_mask);
	cpumask_clear_cpu(cpu, thr->away);
	/* Flag down, as in a yield: posts wait the moment it takes. */
	if (!set_cpus_allowed_ptr(current, thr->away)) {
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
static void hca_engine_yield(struct hca_engine_thread *thr, s64 now)
{
	engine_yields++;
	mutex_lock(&thr->watch_lock);
	hca_engine_pass(thr, now);
	mutex_unlock(&thr->watch_lock);
	cond_resched();
}

/* Time this thread has spent runnable but waiting for a CPU (sched_info). */
static u64 hca_run_delay(void)
{
#ifdef CONFIG_SCHED_INFO
	return current->sched_info.run_delay;
#else
	return 0;
#endif
}

/*
 * Did the thread wait for its CPU for engine_yield_us or more since *@seen?
 * Then a task that does not go away holds the CPU between our passes (more
 * busy tasks than CPUs): the scheduler preempts us at every might_sleep()
 * while the posts queue up behind a thread that is not running, and
 * back-off (NEED_WAKEUP up, the posters run their own work) serves them
 * better. A task woken for a moment runs for less than that.
 */
static bool hca_waited_for_cpu(u64 *seen)
{
	u64 now = hca_run_delay(), before = *seen;

	*seen = now;
	return now - before > (u64)READ_ONCE(engine_yield_us) * NSEC_PER_USEC;
}

/*
 * An engine thread. While it polls, posts make no system call. When the
 * scheduler wants its CPU for a moment (need_resched) it yields; when
 * another task is runnable on its CPU it first moves to another CPU, and
 * if the task stays for engine_yield_us it backs off (sleeps) with
 * NEED_WAKEUP up, and the wake-up calls carry the work.
 */
static int hca_engine_thread(void *data)
{
	struct hca_engine_thread *thr = data;
	s64 prev, now, step, idle = 0, contended = -1;
	u64 waited = hca_run_delay();
	bool progress;

	hca_engine_renice(READ_ONCE(engine_poll_nice));
	/* The thread's own timing: local_clock(), cheap on every machine. */
	prev = local_clock();
	while (!kthread_should_stop()) {
		now = local_clock();
		if (atomic_xchg(&thr->poll_req, 0)) {
			mutex_lock(&thr->watch_lock);
			hca_area_flags(thr, false);
			mutex_unlock(&thr->watch_lock);
		}
		mutex_lock(&thr->watch_lock);
		progress = hca_engine_pass(thr, now);
		mutex_unlock(&thr->watch_lock);
		step = clamp_t(s64, now - prev, 0, HCA_WATCH_STEP_NS);
		prev = now;
		idle = progress ? 0 : idle + step;

		if (!READ_ONCE(engine_poll) || idle > hca_idle_window(thr)) {
			hca_engine_sleep(thr, HCA_ENG_IDLE);
			goto slept;
		}
		if (hca_waited_for_cpu(&waited)) {
			hca_engine_sleep(thr, HCA_ENG_BACKOFF);
			goto slept;
		}
		if (need_resched()) {
			if (!hca_engine_move(thr, now))
				hca_engine_yield(thr, now);
			continue;
		}
		if (!single_task_running()) {
			if (contended >= 0)
				contended += step;
			else if (!hca_engine_move(thr, now))
				contended = 0;
			if (contended > (s64)READ_ONCE(engine_yield_us) *
					NSEC_PER_USEC) {
				hca_engine_sleep(thr, HCA_ENG_BACKOFF);
				goto slept;
			}
		} else {
			contended = -1;
		}
		/*
		 * A quiescent state for RCU-tasks. Its cond_resched() seldom
		 * has work: need_resched() was looked at above.
		 */
		cond_resched_tasks_rcu_qs();
		continue;
slept:
		prev = local_clock();
		idle = 0;
		contended = -1;
		thr->moved_at = prev - HCA_MOVE_INTERVAL_NS;
		waited = hca_run_delay();
	}
	return 0;
}

/* ---- wake-up call (ENGINE_WAKE) ----------------------------------------- */

struct hca_exec_ctx *hca_ctx_get(struct hca_engine_dev *eh)
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
		ctx->resp_held = NULL;
		ctx->nr_acks = 0;
		ctx->acks_open = false;
	}
	return ctx;
}

void hca_ctx_put(struct hca_engine_dev *eh, struct hca_exec_ctx *ctx)
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
static bool hca_engine_runnable(struct hca_engine_thread *thr)
{
	struct task_struct *task;
	unsigned int state = TASK_INTERRUPTIBLE;

	rcu_read_lock();
	task = READ_ONCE(thr->task);
	if (task)
		state = READ_ONCE(task->__state);
	rcu_read_unlock();
	/* TASK_WAKING: queued to a remote CPU's wake list, not yet enqueued. */
	return state == TASK_RUNNING || state == TASK_WAKING;
}

static void hca_wakeup_count(struct hca_engine_thread *thr)
{
	switch (READ_ONCE(thr->state)) {
	case HCA_ENG_IDLE:
		if (atomic_read(&thr->poll_req) && hca_engine_runnable(thr))
			this_cpu_inc(engine_wakeups_waking);
		else
			this_cpu_inc(engine_wakeups_idle);
		break;
	case HCA_ENG_BACKOFF:
		this_cpu_inc(engine_wakeups_backoff);
		break;
	}
}

/*
 * After a wake-up call ran hints of thread @thr in @a: the thread watches
 * the area from now on, and if it sleeps idle while the calls keep coming,
 * it polls again.
 */
static void hca_wakeup_hand_back(struct hca_engine_thread *thr,
				 struct hca_db_area *a)
{
	s64 now, prev;

	hca_area_join(thr, a);
	if (READ_ONCE(thr->state) != HCA_ENG_IDLE || !READ_ONCE(engine_poll))
		return;
	now = ktime_get_ns();
	prev = atomic64_xchg(&thr->last_wake, now);
	if (now - prev < (s64)READ_ONCE(engine_wake_window_us) * NSEC_PER_USEC)
		hca_engine_thread_wake(thr);
}

/*
 * Packets from the wire queued for threads that do not poll: the caller
 * takes them. Those its own sends caused to a local peer (a softhca
 * device or rdma_rxe behind a veth) are already queued when its transmit
 * returns, and so are the answers to them: a ping-pong over the wire then
 * needs no thread to wake, as rdma_rxe needs none.
 */
static void hca_wakeup_wire_rx(struct hca_exec_ctx *ctx)
{
	unsigned int t;

	for (t = 0; t < hca_engine_nr_threads; t++) {
		struct hca_engine_thread *thr = &hca_engine_threads[t];
		unsigned int rounds = 2;	/* the packets, then their answers */

		while (rounds-- && READ_ONCE(thr->state) != HCA_ENG_POLLING &&
		       hca_wire_rx_pending(thr) && hca_wire_run_rx(ctx, thr))
			;
	}
}

/*
 * The task in a wake-up call on each CPU. The receive softirq that its own
 * transmits run (on its CPU, before the transmit returns) queues packets
 * without waking their thread: the caller takes them (hca_wakeup_wire_rx)
 * or, before it returns, wakes the thread for what it left.
 */
static DEFINE_PER_CPU(struct task_struct *, hca_wakeup_caller);

bool hca_wakeup_caller_here(void)
{
	return in_serving_softirq() &&
	       this_cpu_read(hca_wakeup_caller) == current;
}

static int hca_wakeup_caller_begin(void)
{
	int cpu = get_cpu();

	per_cpu(hca_wakeup_caller, cpu) = current;
	put_cpu();
	return cpu;
}

static void hca_wakeup_caller_end(int cpu)
{
	unsigned int t;

	/* Still ours unless another call on that CPU took the slot since. */
	cmpxchg(per_cpu_ptr(&hca_wakeup_caller, cpu), current, NULL);
	/* The slot cleared before the look: a packet queued after it pokes. */
	smp_mb();
	for (t = 0; t < hca_engine_nr_threads; t++)
		if (hca_wire_rx_pending(&hca_engine_threads[t]))
			hca_engine_thread_poke(&hca_engine_threads[t]);
}

void hca_wakeup_call(struct hca_uar *uar)
{
	struct hca_db_area *a = uar->db;
	struct hca_engine_dev *eh = a->hca->eng;
	unsigned int t, counted = 0;
	struct hca_exec_ctx *ctx;
	int cpu = 0;
	bool wire;

	this_cpu_inc(engine_wakeups);
	this_cpu_inc(*eh->wakeups);
	ctx = hca_ctx_get(eh);
	if (!ctx) {
		for (t = 0; t < hca_engine_nr_threads; t++) {
			hca_area_join(&hca_engine_threads[t], a);
			hca_engine_thread_wake(&hca_engine_threads[t]);
		}
		return;
	}
	/* No port on the wire: none of it costs a call anything. */
	wire = hca_wire_receiving();
	if (wire)
		cpu = hca_wakeup_caller_begin();
	/* The doorbells the caller (or anyone) stored before calling. */
	smp_mb();
	for (t = 0; t < hca_engine_nr_threads; t++) {
		struct hca_engine_thread *thr = &hca_engine_threads[t];

		if (!hca_db_pending(a, t))
			continue;
		if (!counted++)
			hca_wakeup_count(thr);
		/* The caller pays for everything its area rang. */
		if (hca_run_area(ctx, a, t, UINT_MAX))
			hca_wakeup_hand_back(thr, a);
	}
	if (!counted)
		hca_wakeup_count(&hca_engine_threads[0]);
	if (wire) {
		hca_wakeup_wire_rx(ctx);
		hca_wakeup_caller_end(cpu);
	}
	hca_ctx_put(eh, ctx);
}

void hca_kernel_doorbell(struct hca *hca, u32 db_slot)
{
	hca_area_doorbell(hca->kernel_db, db_slot);
}

void hca_area_doorbell(struct hca_db_area *a, u32 db_slot)
{
	struct hca_engine_thread *thr;
	u32 t;

	if (WARN_ON_ONCE(db_slot >= SOFTHCA_DB_SLOTS))
		return;
	t = hca_db_slot_thread(db_slot);
	hca_db_ring(a, db_slot);
	/*
	 * The hint before the flag; pairs with the barrier between a thread
	 * raising the flag and its last look at the area (as the provider's).
	 */
	smp_mb();
	if (!(READ_ONCE(a->hint->thread[t].flags) & SOFTHCA_ENGINE_NEED_WAKEUP))
		return;
	thr = &hca_engine_threads[t];
	hca_area_join(thr, a);
	hca_engine_thread_wake(thr);
}

/* ---- threads, HCAs and QPs ------------------------------------------------ */

static unsigned int hca_engine_pick_threads(void)
{
	unsigned int n = engine_threads;

	if (!n)
		n = num_online_cpus() / 4;
	return clamp(n, 1U, (unsigned int)SOFTHCA_DB_MAX_THREADS);
}

static void hca_engine_stop(void)
{
	unsigned int t;

	for (t = 0; t < hca_engine_nr_threads; t++) {
		struct hca_engine_thread *thr = &hca_engine_threads[t];
		struct task_struct *task = thr->task;

		WRITE_ONCE(thr->task, NULL);
		synchronize_rcu();
		if (task)
			kthread_stop(task);
		WARN_ON_ONCE(!list_empty(&thr->watched) ||
			     !list_empty(&thr->join) || !list_empty(&thr->run) ||
			     !list_empty(&thr->err));
		free_cpumask_var(thr->away);
		kfree(thr->ctx);
		mutex_destroy(&thr->watch_lock);
	}
	kfree(hca_engine_threads);
	hca_engine_threads = NULL;
}

static int hca_engine_start_one(struct hca_engine_thread *thr, unsigned int t)
{
	struct task_struct *task;

	thr->index = t;
	mutex_init(&thr->watch_lock);
	spin_lock_init(&thr->lock);
	INIT_LIST_HEAD(&thr->watched);
	INIT_LIST_HEAD(&thr->join);
	INIT_LIST_HEAD(&thr->run);
	INIT_LIST_HEAD(&thr->err);
	INIT_LIST_HEAD(&thr->wire_rx);
	atomic_set(&thr->poll_req, 0);
	WRITE_ONCE(thr->state, HCA_ENG_POLLING);
	if (!zalloc_cpumask_var(&thr->away, GFP_KERNEL))
		return -ENOMEM;
	thr->ctx = kzalloc(sizeof(*thr->ctx), GFP_KERNEL);
	if (!thr->ctx)
		return -ENOMEM;
	thr->ctx->is_thread = true;
	task = kthread_run(hca_engine_thread, thr, "softhca_engine%u", t);
	if (IS_ERR(task))
		return PTR_ERR(task);
	WRITE_ONCE(thr->task, task);
	return 0;
}

static int hca_engine_start(void)
{
	unsigned int t;
	int err = 0;

	hca_engine_nr_threads = hca_engine_pick_threads();
	hca_engine_threads = kcalloc(hca_engine_nr_threads,
				     sizeof(*hca_engine_threads), GFP_KERNEL);
	if (!hca_engine_threads)
		return -ENOMEM;
	for (t = 0; t < hca_engine_nr_threads && !err; t++)
		err = hca_engine_start_one(&hca_engine_threads[t], t);
	if (err)
		hca_engine_stop();
	return err;
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

	mutex_lock(&hca_eng.lock);
	if (!hca_eng.nr_hcas)
		err = hca_engine_start();
	if (!err) {
		hca_eng.nr_hcas++;
		/* It sees every back-off from now on (all HCAs back off). */
		eh->backoffs_base = READ_ONCE(engine_backoffs);
		hca->eng = eh;
	}
	mutex_unlock(&hca_eng.lock);
	if (err) {
		free_percpu(eh->wakeups);
		kfree(eh);
		return err;
	}
	return 0;
}

/* After every area of @hca left the engine (hca_engine_area_fini()). */
void hca_engine_fini(struct hca *hca)
{
	struct hca_engine_dev *eh = hca->eng;
	unsigned int i;

	if (!eh)
		return;
	mutex_lock(&hca_eng.lock);
	if (!--hca_eng.nr_hcas)
		hca_engine_stop();
	mutex_unlock(&hca_eng.lock);

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
	INIT_LIST_HEAD(&e->run_node);
	INIT_LIST_HEAD(&e->err_node);
	skb_queue_head_init(&e->wire_rsp);
	hca_wait_timer_init(e);
	qp->eng = e;
	qp->sq_ci = 0;
	hca_rq_reset(qp);
	return 0;
}

/*
 * DESTROY_QP of a datagram QP: run the sends its doorbell record covers
 * now, in the command's context. Bounded in time (HCA_SEND_RUNG_NS), so a
 * process that keeps posting, or rings a bogus counter, cannot hold the
 * command; what is left then is dropped with the QP, as before.
 */
void hca_engine_qp_send_rung(struct hca_qp *qp)
{
	struct hca_engine_dev *eh = qp->hca->eng;
	u64 until = ktime_get_ns() + HCA_SEND_RUNG_NS;
	u16 rung = hca_sq_posted(qp);
	struct hca_exec_ctx *ctx;

	/* The counter, then the WQEs it covers (as hca_qp_exec()). */
	smp_rmb();
	if (READ_ONCE(qp->state) != HCA_QPS_RTS || READ_ONCE(qp->sq_ci) == rung)
		return;
	/* Its engine thread sends a wire QP's packets (hca_run_qp()). */
	if (READ_ONCE(qp->eng->wire)) {
		hca_qp_run_later(qp);
		return;
	}
	ctx = hca_ctx_get(eh);
	if (!ctx)
		return;
	while (READ_ONCE(qp->state) == HCA_QPS_RTS &&
	       (s16)(READ_ONCE(qp->sq_ci) - rung) < 0 &&
	       ktime_get_ns() < until) {
		/* Another executor has it: let that one finish its turn. */
		if (!hca_run_qp(ctx, qp))
			usleep_range(20, 50);
	}
	hca_ctx_put(eh, ctx);
}

/* DESTROY_QP, after every reference was put: nothing runs it any more. */
void hca_engine_qp_fini(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	if (!e)
		return;
	/* Off every list and no timer since the RESET of DESTROY_QP. */
	WARN_ON_ONCE(e->on_run || e->on_err || hrtimer_active(&e->wait_timer) ||
		     hrtimer_active(&e->pace_timer));
	hca_wire_qp_fini(qp);
	mutex_destroy(&e->resp_lock);
	mutex_destroy(&e->exec_lock);
	qp->eng = NULL;
	kfree(e);
}

/* Run @qp in the caller's context (a firmware command). */
static void hca_engine_run_now(struct hca_qp *qp)
{
	struct hca_engine_dev *eh = qp->hca->eng;
	struct hca_exec_ctx *ctx;

	ctx = hca_ctx_get(eh);
	if (!ctx) {
		hca_qp_run_later(qp);
		return;
	}
	hca_run_qp(ctx, qp);
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
		hca_rq_reset(qp);
		e->comm_est = false;
		hca_wire_qp_reset(qp);
		hca_wait_clear(qp);
		/* Faults of the last connection are nothing to this one. */
		e->odp_flags = 0;
		e->odp_stall_until = 0;
		hca_engine_qp_forget(qp);
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
		break;
	case HCA_QPS_ERR:
		/* Its RQ may be posted to without a doorbell from now on. */
		hca_qp_watch_err(qp);
		fallthrough;
	case HCA_QPS_RTS:
		if (old_state == HCA_QPS_RTR)
			hca_wire_qp_rts(qp);
		/* WQEs posted before RTS start now; ERR flushes. */
		hca_engine_run_now(qp);
		break;
	case HCA_QPS_RTR:
		/* A peer off this host: the wire (wire_qp.c). */
		if (hca_wire_qp_rtr(qp))
			hca_dbg_qp(qp, "no wire context: no source GID or memory\n");
		break;
	default:
		break;
	}
}
