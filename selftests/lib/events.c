// SPDX-License-Identifier: GPL-2.0
/* Completion-channel and interrupt helpers; see events.h. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

int ev_get(struct ibv_comp_channel *ch, int ms, struct ibv_cq **cq,
	   void **cq_context)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	void *ctx;
	int r;

	do
		r = poll(&pfd, 1, ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	if (ibv_get_cq_event(ch, cq, &ctx))
		return errno ? -errno : -EIO;
	if (cq_context)
		*cq_context = ctx;
	return 0;
}

struct ibv_cq *ev_next(struct ibv_comp_channel *ch, int ms, char *why,
		       size_t why_len)
{
	struct ibv_cq *cq;
	int r = ev_get(ch, ms, &cq, NULL);

	if (r) {
		if (why)
			snprintf(why, why_len, "no CQ event in %d ms: %s", ms,
				 strerror(-r));
		return NULL;
	}
	ibv_ack_cq_events(cq, 1);
	return cq;
}

int ev_pending(struct ibv_comp_channel *ch)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int r = poll(&pfd, 1, 0);

	if (r < 0)
		return -errno;
	return r == 1 && (pfd.revents & POLLIN);
}

/*
 * A line of /proc/interrupts: "IRQ:  count_cpu0 count_cpu1 ...  chip
 * hwirq-edge  action". The counts are the numeric fields after the colon;
 * the action is the last field.
 */
long irq_count(const char *action)
{
	char line[1024];
	long found = -1;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *end, *last;
		size_t len = strlen(line);
		long sum = 0;

		while (len && isspace((unsigned char)line[len - 1]))
			line[--len] = 0;
		last = strrchr(line, ' ');
		if (!p || !last || strcmp(last + 1, action))
			continue;
		p++;
		for (;;) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
		found = sum;
	}
	fclose(f);
	return found;
}
