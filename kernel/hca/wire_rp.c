// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the reaction point of RoCEv2 congestion control
 * (DCQCN, as a ConnectX's firmware runs it). wire_cc.c is the notification
 * point: it answers ECN-marked packets with CNPs. A CNP that comes back to
 * an RC or XRC requester cuts that QP's sending rate here, and the rate
 * climbs back while no CNP comes:
 *
 * - the first CNP starts limiting at rp_rate_to_set_on_first_cnp, or if
 *   that is 0 at the rate the QP was sending at (its bytes over the last
 *   millisecond), with alpha, the congestion estimate, at
 *   rp_initial_alpha_value;
 * - a cut (at most one per rp_rate_reduce_monitor_period, however many
 *   CNPs): the target rate becomes the current one, which loses
 *   alpha / 2^(rp_gd - 10) of itself, but keeps rp_min_dec_fac % of
 *   itself and rp_min_rate at least; the increase counters start again;
 * - alpha is updated every rp_dce_tcp_rtt: towards 1 by
 *   (1024 - rp_dce_tcp_g) / 1024 if a CNP came in the period, else
 *   multiplied by rp_dce_tcp_g / 1024;
 * - an increase event every rp_time_reset (T) and every rp_byte_reset
 *   bytes sent (BC): fast recovery (the current rate half way to the
 *   target) while both are below rp_threshold, hyper increase (the target
 *   up by rp_hai_rate per event past the threshold) when both are above
 *   it, additive increase (rp_ai_rate) between; back at rp_max_rate the
 *   QP is no longer limited.
 *
 * The rate is kept by pacing the requester: after each packet the next may
 * leave once the bytes sent, at the current rate, are paid for, with a
 * burst of HCA_RP_BURST bytes of credit. A held requester stops, and a
 * timer of its QP (pace_timer, apart from the retry deadline's) brings it
 * back at the time it may send. Time-driven updates are worked out when the
 * requester next looks, not by timers of their own, and the n CNPs taken
 * since its last look count as n cuts (one per reduce period at most) and
 * n alpha periods with a CNP, spread over the periods elapsed. UC and UD
 * QPs send unpaced: their CNPs are counted in rp_cnp_ignored.
 *
 * CNPs arrive in the receive path and are only counted into the QP
 * (rp.cnps); everything else runs in the requester, under exec_lock.
 */
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/sched/clock.h>

#include "wire_rc.h"

static bool wire_rp = true;
module_param(wire_rp, bool, 0644);
MODULE_PARM_DESC(wire_rp, "Cut an RC QP's rate on CNPs (DCQCN reaction point, default 1)");

/*
 * DCQCN's parameters, by the names of mlx5's cc_params and with its
 * firmware's defaults: rates in Mbit/s, times in us, alpha and g of 1024.
 */
static unsigned int rp_max_rate = 100000;
module_param(rp_max_rate, uint, 0644);
MODULE_PARM_DESC(rp_max_rate, "Rate at which a QP is no longer limited, Mbit/s (100000)");
static unsigned int rp_min_rate = 1;
module_param(rp_min_rate, uint, 0644);
MODULE_PARM_DESC(rp_min_rate, "Lowest rate a cut leaves, Mbit/s (1)");
static unsigned int rp_ai_rate = 5;
module_param(rp_ai_rate, uint, 0644);
MODULE_PARM_DESC(rp_ai_rate, "Additive increase of the target rate, Mbit/s (5)");
static unsigned int rp_hai_rate = 50;
module_param(rp_hai_rate, uint, 0644);
MODULE_PARM_DESC(rp_hai_rate, "Hyper increase of the target rate, Mbit/s (50)");
static unsigned int rp_time_reset = 300;
module_param(rp_time_reset, uint, 0644);
MODULE_PARM_DESC(rp_time_reset, "Time between increase events, us (300)");
static unsigned int rp_byte_reset = 32767;
module_param(rp_byte_reset, uint, 0644);
MODULE_PARM_DESC(rp_byte_reset, "Bytes sent between increase events (32767)");
static unsigned int rp_threshold = 1;
module_param(rp_threshold, uint, 0644);
MODULE_PARM_DESC(rp_threshold, "Increase events before additive increase (1)");
static unsigned int rp_gd = 11;
module_param(rp_gd, uint, 0644);
MODULE_PARM_DESC(rp_gd, "A cut takes alpha / 2^(rp_gd - 10) of the rate (11)");
static unsigned int rp_min_dec_fac = 50;
module_param(rp_min_dec_fac, uint, 0644);
MODULE_PARM_DESC(rp_min_dec_fac, "Share of the rate one cut keeps at least, % (50)");
static unsigned int rp_rate_reduce_monitor_period = 4;
module_param(rp_rate_reduce_monitor_period, uint, 0644);
MODULE_PARM_DESC(rp_rate_reduce_monitor_period, "Time between cuts at most, us (4)");
static unsigned int rp_dce_tcp_g = 1019;
module_param(rp_dce_tcp_g, uint, 0644);
MODULE_PARM_DESC(rp_dce_tcp_g, "Alpha's gain, of 1024 (1019)");
static unsigned int rp_dce_tcp_rtt = 1;
module_param(rp_dce_tcp_rtt, uint, 0644);
MODULE_PARM_DESC(rp_dce_tcp_rtt, "Time between alpha updates, us (1)");
static unsigned int rp_rate_to_set_on_first_cnp;
module_param(rp_rate_to_set_on_first_cnp, uint, 0644);
MODULE_PARM_DESC(rp_rate_to_set_on_first_cnp, "Rate the first CNP sets, Mbit/s (0: the QP's own)");
static unsigned int rp_initial_alpha_value = 1023;
module_param(rp_initial_alpha_value, uint, 0644);
MODULE_PARM_DESC(rp_initial_alpha_value, "Alpha at the first CNP, of 1024 (1023)");

#define HCA_RP_ONE		1024		/* alpha's 1.0 */
#define HCA_RP_BURST		(16 * 1024)	/* bytes sent ahead of the rate */
#define HCA_RP_WIN_NS		NSEC_PER_MSEC	/* rate measurement window */
#define HCA_RP_HDR_BYTES	58	/* Ethernet, IP, UDP, BTH, ICRC */
#define HCA_RP_MAX_EVENTS	64	/* increase events worked out per look */

/* The receive path: a CNP for @wq's requester (lockless). */
bool hca_wire_rp_cnp(struct hca_wire_qp *wq)
{
	if (!READ_ONCE(wire_rp))
		return false;
	atomic_inc(&wq->rp.cnps);
	return true;
}

/* @alpha after @k periods without a CNP: times (g / 1024)^k. */
static u32 hca_rp_alpha_decay(u32 alpha, u64 k)
{
	u32 g = min(READ_ONCE(rp_dce_tcp_g), HCA_RP_ONE);

	while (k && alpha) {
		if (k & 1)
			alpha = alpha * g / HCA_RP_ONE;
		g = g * g / HCA_RP_ONE;
		k >>= 1;
	}
	return alpha;
}

/* One alpha period with a CNP: towards 1 by (1024 - g) / 1024. */
static u32 hca_rp_alpha_up(u32 alpha, u32 g)
{
	return (alpha * g + (HCA_RP_ONE - g) * HCA_RP_ONE) / HCA_RP_ONE;
}

/*
 * The alpha periods since the last look. The CNPs taken meanwhile are
 * spread over them, one per period at most (a ConnectX updates alpha
 * every period; here it is worked out when the requester looks).
 */
static void hca_rp_alpha(struct hca_wire_rp *rp, s64 now)
{
	u64 period = max(READ_ONCE(rp_dce_tcp_rtt), 1U) * NSEC_PER_USEC;
	u32 g = min(READ_ONCE(rp_dce_tcp_g), HCA_RP_ONE);
	u64 k = div64_u64(now - rp->alpha_at, period), up, gap, i;

	if (!k)
		return;
	rp->alpha_at += k * period;
	up = min_t(u64, rp->cnp_periods, k);
	rp->cnp_periods = 0;
	if (!up) {
		rp->alpha = hca_rp_alpha_decay(rp->alpha, k);
		return;
	}
	gap = div64_u64(k - up, up);
	for (i = 0; i < min_t(u64, up, HCA_RP_MAX_EVENTS); i++)
		rp->alpha = hca_rp_alpha_up(hca_rp_alpha_decay(rp->alpha, gap),
					    g);
}

/* One increase event (T or BC counted already). */
static void hca_rp_increase(struct hca_wire_rp *rp)
{
	u32 f = READ_ONCE(rp_threshold), lo = min(rp->t, rp->bc);
	u32 line = max(READ_ONCE(rp_max_rate), 1U);

	if (max(rp->t, rp->bc) < f)
		;				/* fast recovery */
	else if (lo > f)
		rp->rt += (lo - f) * READ_ONCE(rp_hai_rate);
	else
		rp->rt += READ_ONCE(rp_ai_rate);
	rp->rt = min(rp->rt, line);
	rp->rc = (rp->rt + rp->rc) / 2;
	if (rp->rc >= line - 1) {
		rp->rc = 0;			/* back at line rate */
		WRITE_ONCE(rp->next_ok, 0);
	}
}

static void hca_rp_cut(struct hca_wire_rp *rp, s64 now)
{
	u32 gd = clamp(READ_ONCE(rp_gd), 10U, 16U);
	u64 keep = (u64)rp->rc * min(READ_ONCE(rp_min_dec_fac), 100U) / 100;
	u64 cut = (u64)rp->rc * rp->alpha >> gd;

	rp->rt = rp->rc;
	rp->rc = max3((u64)rp->rc - min_t(u64, cut, rp->rc), keep,
		      (u64)max(READ_ONCE(rp_min_rate), 1U));
	rp->t = 0;
	rp->bc = 0;
	rp->inc_at = now;
	rp->inc_bytes = 0;
	rp->cut_at = now;
}

/* The rate limiting starts from: the QP's own over the last window. */
static u32 hca_rp_start_mbps(const struct hca_wire_rp *rp, u32 line)
{
	s64 span = local_clock() - rp->win_at;
	u64 mbps = rp->win_mbps;

	if (span >= HCA_RP_WIN_NS / 10)
		mbps = max(mbps, div64_u64(rp->win_bytes * 8 * NSEC_PER_USEC,
					   span));
	return mbps ? min_t(u64, mbps, line) : line;
}

/* The first CNP: limiting starts. */
static void hca_rp_start(struct hca_wire_rp *rp, s64 now)
{
	u32 line = max(READ_ONCE(rp_max_rate), 1U);
	u32 first = READ_ONCE(rp_rate_to_set_on_first_cnp);

	rp->rc = max(first ? min(first, line) : hca_rp_start_mbps(rp, line),
		     max(READ_ONCE(rp_min_rate), 1U));
	rp->alpha = min(READ_ONCE(rp_initial_alpha_value), HCA_RP_ONE);
	rp->alpha_at = now;
	rp->cut_at = 0;
	WRITE_ONCE(rp->next_ok, now);
}

/* @n CNPs since the last look: a cut each, one per reduce period at most. */
static void hca_rp_cuts(struct hca_wire_rp *rp, u32 n, s64 now)
{
	u64 period = (u64)READ_ONCE(rp_rate_reduce_monitor_period) * NSEC_PER_USEC;
	u64 cuts = n;

	if (period)
		cuts = min_t(u64, n, div64_u64(now - rp->cut_at, period));
	for (cuts = min_t(u64, cuts, HCA_RP_MAX_EVENTS); cuts; cuts--)
		hca_rp_cut(rp, now);
}

/* Increase events of the time since the last look. */
static void hca_rp_timer_events(struct hca_wire_rp *rp, s64 now)
{
	u64 period = max(READ_ONCE(rp_time_reset), 1U) * NSEC_PER_USEC;
	unsigned int n = 0;

	while (rp->rc && now - rp->inc_at >= period) {
		rp->inc_at += period;
		rp->t++;
		hca_rp_increase(rp);
		if (++n == HCA_RP_MAX_EVENTS)
			rp->inc_at = now;
	}
}

/*
 * Before the requester sends a packet of @qp: must it wait for its rate?
 * Works out the CNPs and the time-driven updates first.
 */
bool hca_wire_rp_hold(struct hca_qp *qp, struct hca_wire_qp *wq)
{
	struct hca_wire_rp *rp = &wq->rp;
	s64 now;
	u32 n;

	if (likely(!rp->rc && !atomic_read(&rp->cnps)))
		return false;
	now = ktime_get_ns();
	n = atomic_xchg(&rp->cnps, 0);
	if (n && !rp->rc) {
		hca_rp_start(rp, now);
		hca_dbg_qp(qp, "CNP: rate limited from %u Mbit/s\n", rp->rc);
	}
	if (!rp->rc)
		return false;
	rp->cnp_periods = min(rp->cnp_periods + n, 1U << 20);
	hca_rp_alpha(rp, now);
	if (n)
		hca_rp_cuts(rp, n, now);
	hca_rp_timer_events(rp, now);
	if (!rp->rc) {
		hca_dbg_qp(qp, "back at %u Mbit/s: not limited\n", rp->rt);
		return false;
	}
	if (now >= rp->next_ok)
		return false;
	hca_wire_count(qp->hca, HCA_HCNT_RP_HOLDS, 1);
	rp->held = true;
	return true;
}

/* The requester sent a packet of @paylen bytes of payload. */
void hca_wire_rp_sent(struct hca_wire_qp *wq, u32 paylen)
{
	struct hca_wire_rp *rp = &wq->rp;
	u32 bytes = paylen + HCA_RP_HDR_BYTES;
	s64 now, burst;

	if (!READ_ONCE(wire_rp))
		return;
	/*
	 * The rate the first CNP starts from; a gap of idle is not one. On
	 * local_clock(), read for every packet: ktime_get_ns() is a read of
	 * the clocksource, in a VM often the HPET, an exit to the hypervisor
	 * (a tenth of the engine's time in a 64 KiB ib_write_bw under TCG).
	 */
	now = local_clock();
	if (now - rp->win_at >= HCA_RP_WIN_NS) {
		rp->win_mbps = now - rp->win_at < 2 * HCA_RP_WIN_NS ?
			div64_u64(rp->win_bytes * 8 * NSEC_PER_USEC,
				  now - rp->win_at) : 0;
		rp->win_at = now;
		rp->win_bytes = 0;
	}
	rp->win_bytes += bytes;
	if (!rp->rc)
		return;
	rp->inc_bytes += bytes;
	while (rp->rc && rp->inc_bytes >= max(READ_ONCE(rp_byte_reset), 1U)) {
		rp->inc_bytes -= max(READ_ONCE(rp_byte_reset), 1U);
		rp->bc++;
		hca_rp_increase(rp);
	}
	if (!rp->rc)
		return;
	/*
	 * A virtual clock: each packet costs its bits at the current rate
	 * (bits / Mbit/s = us), and an idle QP has at most HCA_RP_BURST
	 * bytes of credit. The next packet may leave when it is not ahead.
	 */
	/* Limited: the pace on the clock of its timer. */
	now = ktime_get_ns();
	burst = div_u64((u64)HCA_RP_BURST * 8 * NSEC_PER_USEC, rp->rc);
	WRITE_ONCE(rp->next_ok, max(rp->next_ok, now - burst) +
		   (s64)div_u64((u64)bytes * 8 * NSEC_PER_USEC, rp->rc));
}

/*
 * The requester of @qp stops (its step returns WAIT or STOP): if its rate
 * held it, it runs again when it may send, by a timer of its own.
 */
void hca_wire_rp_timer(struct hca_qp *qp)
{
	struct hca_wire_rp *rp = &qp->eng->wire->rp;
	s64 wait;

	if (!rp->held)
		return;
	rp->held = false;
	wait = READ_ONCE(rp->next_ok) - ktime_get_ns();
	hca_pace_start(qp, max_t(s64, wait, 0));
}
