/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Completion-channel and interrupt helpers for the event selftests
 * (cq_channel, event_stress, cq_arm, cq_modify, async_events): waiting
 * for a CQ event with a deadline and reading a vector's count from
 * /proc/interrupts.
 */
#ifndef SOFTHCA_SELFTEST_EVENTS_H
#define SOFTHCA_SELFTEST_EVENTS_H

#include <infiniband/verbs.h>

/*
 * Wait up to @ms for an event on @ch and read it with ibv_get_cq_event()
 * (not acked). 0 with *cq (and *cq_context if not NULL) set, -ETIMEDOUT if
 * none came, or -errno of poll() or of the read.
 */
int ev_get(struct ibv_comp_channel *ch, int ms, struct ibv_cq **cq,
	   void **cq_context);
/*
 * The next CQ event on @ch within @ms, acked: its CQ, or NULL if none came
 * (why in @why, of @why_len bytes, if @why is not NULL).
 */
struct ibv_cq *ev_next(struct ibv_comp_channel *ch, int ms, char *why,
		       size_t why_len);
/* 1 if the channel's fd is readable now (poll with timeout 0), 0 if not,
 * -errno.
 */
int ev_pending(struct ibv_comp_channel *ch);

/*
 * Interrupts of the vector whose action in /proc/interrupts is @action
 * (e.g. "softhca-shca0-comp1"), summed over the CPUs; -1 if absent.
 */
long irq_count(const char *action);

#endif
