// SPDX-License-Identifier: GPL-2.0
/*
 * cm_rate: the rdma_cm connection setup rate, for the cm section of `make
 * bench` (scripts/bench-guest, Documentation/bench.md). Any RDMA device
 * with an rdma_cm address: the same numbers are taken on softhca and on
 * rdma_rxe.
 *
 *   cm_rate server -a ADDR -p PORT -n N [-S] [-t SECONDS]
 *       listens on ADDR:PORT and accepts every connection with an RC QP on
 *       a small CQ of its own; with -S each connection must carry one SEND
 *       whose data is checked. Prints "cm_rate server listening ..." when
 *       ready; exits after N connections have come and gone, or after
 *       SECONDS (30) without an event. A connection must reach ESTABLISHED,
 *       or (with -S) carry its message before a DREQ that ib_cm took ahead
 *       of the RTU (counted as dreq_first).
 *   cm_rate client -a ADDR -p PORT -n N [-b SRC] [-c C] [-S] [-t SECONDS]
 *       N times: creates a cm_id, resolves the address (from SRC) and the
 *       route, creates a CQ and an RC QP, connects, waits for ESTABLISHED,
 *       with -S sends one message and waits for its completion, disconnects,
 *       waits for DISCONNECTED and destroys everything; C (1) connections
 *       at a time. A connection that does not move on within SECONDS (10)
 *       has timed out.
 *
 * The client prints one result line: "cm_rate connections=N errors=E
 * parallel=C seconds=.. rate_per_s=.. setup_median_us=.. setup_p99_us=..",
 * then the median of each step (addr, route, qp, connect, send,
 * disconnect, destroy: *_median_us). setup is create_id to ESTABLISHED;
 * the rate counts whole cycles, teardown included. Every REJECTED,
 * UNREACHABLE, ADDR_ERROR, ROUTE_ERROR, CONNECT_ERROR, failed verb, bad
 * completion, unchecked message or timeout is counted ("cm_rate errors:
 * ...") and makes the exit status 1, on either side.
 */
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define MSG_SIZE	64
#define MSG_MAGIC	0x43524d54u	/* "TMRC" */
#define SERVER_SLOTS	1024		/* connections a server holds at once */
#define MAX_PARALLEL	256
#define RESOLVE_MS	2000

enum err_kind {
	E_REJECTED, E_UNREACHABLE, E_ADDR, E_ROUTE, E_CONNECT, E_TIMEOUT,
	E_VERBS, E_WC, E_DATA, E_OTHER, E_N
};
static const char *const err_name[E_N] = {
	[E_REJECTED] = "rejected", [E_UNREACHABLE] = "unreachable",
	[E_ADDR] = "addr_error", [E_ROUTE] = "route_error",
	[E_CONNECT] = "connect_error", [E_TIMEOUT] = "timeout",
	[E_VERBS] = "verbs", [E_WC] = "wc_error", [E_DATA] = "data",
	[E_OTHER] = "other",
};

/* rdma_cm events that end a connection attempt, and what they count as. */
static const struct {
	enum rdma_cm_event_type ev;
	enum err_kind kind;
} fail_events[] = {
	{ RDMA_CM_EVENT_REJECTED, E_REJECTED },
	{ RDMA_CM_EVENT_UNREACHABLE, E_UNREACHABLE },
	{ RDMA_CM_EVENT_ADDR_ERROR, E_ADDR },
	{ RDMA_CM_EVENT_ROUTE_ERROR, E_ROUTE },
	{ RDMA_CM_EVENT_CONNECT_ERROR, E_CONNECT },
	{ RDMA_CM_EVENT_DEVICE_REMOVAL, E_OTHER },
};

/* A client connection's steps; t[] holds when each one ended. */
enum step { T_START, T_ADDR, T_ROUTE, T_QP, T_EST, T_SENT, T_DISC,
	    T_DONE, T_N };
static const char *const step_name[T_N] = {
	[T_ADDR] = "addr", [T_ROUTE] = "route", [T_QP] = "qp",
	[T_EST] = "connect", [T_SENT] = "send", [T_DISC] = "disconnect",
	[T_DONE] = "destroy",
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	int slot;		/* message buffer slot */
	uint32_t idx;		/* connection number (client) */
	bool active, got_data, established;
	double deadline;
	double t[T_N];
};

struct run {
	bool server, send;
	int n, parallel;
	double timeout_s;
	struct sockaddr_storage dst, src;
	bool have_src;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *listen_id;
	/* per device, made at the first connection */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_mr *mr;
	uint8_t *buf;
	int nslots;
	/* client */
	struct conn *conns;
	int started, done, ok;
	double *step_us[T_N];	/* per good connection, per step */
	double *setup_us;
	/* server */
	int *free_slot, nfree;
	uint8_t *seen;
	int accepted, established, dreq_first, verified, closed;
	unsigned int errors[E_N];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count_error(struct run *r, enum err_kind kind, const char *what,
			int idx)
{
	r->errors[kind]++;
	/* the first few say why; the counts say how many */
	if (r->errors[kind] <= 3)
		fprintf(stderr, "cm_rate: connection %d: %s (%s)\n", idx, what,
			err_name[kind]);
}

static int total_errors(const struct run *r)
{
	int e = 0;

	for (int k = 0; k < E_N; k++)
		e += (int)r->errors[k];
	return e;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The PD, completion channel and message buffer of the device the first
 * connection resolved to; every later one must resolve to the same.
 */
static int use_device(struct run *r, struct ibv_context *verbs)
{
	size_t len;

	if (r->verbs)
		return r->verbs == verbs && r->mr ? 0 : -1;
	r->verbs = verbs;	/* a failure here fails every connection */
	r->nslots = r->server ? SERVER_SLOTS : r->parallel;
	len = (size_t)r->nslots * MSG_SIZE;
	r->buf = calloc(1, len);
	r->pd = ibv_alloc_pd(verbs);
	r->cch = ibv_create_comp_channel(verbs);
	if (!r->buf || !r->pd || !r->cch || set_nonblock(r->cch->fd))
		return -1;
	r->mr = ibv_reg_mr(r->pd, r->buf, len, IBV_ACCESS_LOCAL_WRITE);
	return r->mr ? 0 : -1;
}

static uint8_t *slot_buf(struct run *r, int slot)
{
	return r->buf + (size_t)slot * MSG_SIZE;
}

/* The message of connection IDX: magic, IDX, then bytes that depend on
 * IDX, so a message landing in another connection's buffer shows.
 */
static void fill_msg(uint8_t *m, uint32_t idx)
{
	uint32_t magic = MSG_MAGIC;

	memcpy(m, &magic, 4);
	memcpy(m + 4, &idx, 4);
	for (int k = 8; k < MSG_SIZE; k++)
		m[k] = (uint8_t)(idx * 7 + (uint32_t)k);
}

/* IDX of a good message, -1 if it is not one */
static long check_msg(const uint8_t *m, uint32_t len)
{
	uint8_t want[MSG_SIZE];
	uint32_t idx;

	if (len != MSG_SIZE)
		return -1;
	memcpy(&idx, m + 4, 4);
	fill_msg(want, idx);
	return memcmp(m, want, MSG_SIZE) ? -1 : (long)idx;
}

static int post_buf(struct run *r, struct conn *c, bool recv)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot_buf(r, c->slot), .length = MSG_SIZE,
		.lkey = r->mr->lkey,
	};
	struct ibv_send_wr swr = {
		.wr_id = (uintptr_t)c, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad_s;
	struct ibv_recv_wr rwr = {
		.wr_id = (uintptr_t)c, .sg_list = &sge, .num_sge = 1,
	}, *bad_r;

	if (recv)
		return ibv_post_recv(c->id->qp, &rwr, &bad_r);
	return ibv_post_send(c->id->qp, &swr, &bad_s);
}

/* A small CQ of the connection's own, armed, and an RC QP on it. */
static int create_qp(struct run *r, struct conn *c)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	c->cq = ibv_create_cq(r->verbs, 4, c, r->cch, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0))
		return -1;
	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	return rdma_create_qp(c->id, r->pd, &ia);
}

static void destroy_conn(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->id)
		rdma_destroy_id(c->id);
	c->id = NULL;
	c->cq = NULL;
}

/* what both sides ask of a connection: no RDMA READ, retries as usual */
static struct rdma_conn_param conn_param(void)
{
	return (struct rdma_conn_param){ .retry_count = 7, .rnr_retry_count = 7 };
}

/* ---- client ---- */

static void client_end(struct run *r, struct conn *c, bool good)
{
	destroy_conn(c);
	c->t[T_DONE] = now_s();
	c->active = false;
	r->done++;
	if (!good)
		return;
	for (int s = T_ADDR; s < T_N; s++)
		r->step_us[s][r->ok] = (c->t[s] - c->t[s - 1]) * 1e6;
	r->setup_us[r->ok] = (c->t[T_EST] - c->t[T_START]) * 1e6;
	r->ok++;
}

static void client_fail(struct run *r, struct conn *c, enum err_kind kind,
			const char *what)
{
	count_error(r, kind, what, (int)c->idx);
	client_end(r, c, false);
}

static void client_step(struct conn *c, struct run *r, enum step s)
{
	c->t[s] = now_s();
	c->deadline = c->t[s] + r->timeout_s;
}

static void client_start(struct run *r, struct conn *c)
{
	struct sockaddr *src = r->have_src ? (struct sockaddr *)&r->src : NULL;
	int slot = c->slot;

	memset(c, 0, sizeof(*c));
	c->slot = slot;
	c->idx = (uint32_t)r->started++;
	c->active = true;
	client_step(c, r, T_START);
	if (rdma_create_id(r->ech, &c->id, c, RDMA_PS_TCP)) {
		c->id = NULL;
		client_fail(r, c, E_VERBS, "rdma_create_id");
	} else if (rdma_resolve_addr(c->id, src, (struct sockaddr *)&r->dst,
				     RESOLVE_MS)) {
		client_fail(r, c, E_ADDR, "rdma_resolve_addr");
	}
}

static void client_disconnect(struct run *r, struct conn *c)
{
	if (rdma_disconnect(c->id))
		client_fail(r, c, E_VERBS, "rdma_disconnect");
}

/* The connection's next step after the rdma_cm event EV. */
static void client_event(struct run *r, struct conn *c,
			 enum rdma_cm_event_type ev)
{
	struct rdma_conn_param p = conn_param();

	switch (ev) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		client_step(c, r, T_ADDR);
		if (use_device(r, c->id->verbs))
			client_fail(r, c, E_VERBS, "PD, channel or MR");
		else if (rdma_resolve_route(c->id, RESOLVE_MS))
			client_fail(r, c, E_ROUTE, "rdma_resolve_route");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		client_step(c, r, T_ROUTE);
		if (create_qp(r, c)) {
			client_fail(r, c, E_VERBS, "CQ or QP");
			break;
		}
		client_step(c, r, T_QP);
		if (rdma_connect(c->id, &p))
			client_fail(r, c, E_CONNECT, "rdma_connect");
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		client_step(c, r, T_EST);
		if (!r->send) {
			c->t[T_SENT] = c->t[T_EST];
			client_disconnect(r, c);
			break;
		}
		fill_msg(slot_buf(r, c->slot), c->idx);
		if (post_buf(r, c, false))
			client_fail(r, c, E_VERBS, "post_send");
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		client_step(c, r, T_DISC);
		if (r->send && !c->got_data)
			client_fail(r, c, E_DATA, "disconnected before the SEND completed");
		else
			client_end(r, c, true);
		break;
	default:
		break;
	}
}

static void client_wc(struct run *r, struct conn *c, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_SEND ||
	    c->got_data) {
		client_fail(r, c, E_WC, ibv_wc_status_str(wc->status));
		return;
	}
	c->got_data = true;
	client_step(c, r, T_SENT);
	client_disconnect(r, c);
}

/* ---- server ---- */

static void server_close(struct run *r, struct conn *c)
{
	destroy_conn(c);
	if (c->slot >= 0)
		r->free_slot[r->nfree++] = c->slot;
	r->closed++;
	free(c);
}

static void server_fail(struct run *r, struct conn *c, enum err_kind kind,
			const char *what)
{
	count_error(r, kind, what, r->closed);
	server_close(r, c);
}

static void server_request(struct run *r, struct rdma_cm_id *id)
{
	struct conn *c = calloc(1, sizeof(*c));
	struct rdma_conn_param p = conn_param();

	if (!c) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		count_error(r, E_OTHER, "out of memory", r->closed++);
		return;
	}
	c->id = id;
	c->slot = -1;
	id->context = c;
	r->accepted++;
	if (use_device(r, id->verbs) || !r->nfree || create_qp(r, c)) {
		rdma_reject(id, NULL, 0);
		server_fail(r, c, E_VERBS, "device, slot, CQ or QP");
		return;
	}
	c->slot = r->free_slot[--r->nfree];
	memset(slot_buf(r, c->slot), 0, MSG_SIZE);
	if (r->send && post_buf(r, c, true)) {
		rdma_reject(id, NULL, 0);
		server_fail(r, c, E_VERBS, "post_recv");
		return;
	}
	if (rdma_accept(id, &p))
		server_fail(r, c, E_CONNECT, "rdma_accept");
}

static void server_wc(struct run *r, struct conn *c, const struct ibv_wc *wc)
{
	long idx;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
		count_error(r, E_WC, ibv_wc_status_str(wc->status), r->closed);
		return;
	}
	idx = check_msg(slot_buf(r, c->slot), wc->byte_len);
	if (idx < 0 || idx >= r->n || r->seen[idx] || c->got_data) {
		count_error(r, E_DATA, "bad, repeated or unknown message", r->closed);
		return;
	}
	r->seen[idx] = 1;
	c->got_data = true;
	r->verified++;
}

static void poll_conn_cq(struct run *r, struct conn *c);

static void server_event(struct run *r, struct conn *c,
			 enum rdma_cm_event_type ev)
{
	switch (ev) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = true;
		r->established++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* the message's CQE may not have been polled yet */
		poll_conn_cq(r, c);
		if (r->send && !c->got_data) {
			server_fail(r, c, E_DATA, "disconnected without its message");
			break;
		}
		/*
		 * ib_cm may take the DREQ before the RTU that preceded it (two
		 * work items on two CPUs); it accepts a DREQ in REP_SENT and
		 * counts the RTU as a duplicate (cm_rx_duplicates/rtu). The
		 * connection did work when its message arrived.
		 */
		if (!c->established && !c->got_data) {
			server_fail(r, c, E_CONNECT, "disconnected before ESTABLISHED");
			break;
		}
		if (!c->established)
			r->dreq_first++;
		server_close(r, c);
		break;
	default:
		break;
	}
}

/* ---- events, both sides ---- */

static void poll_conn_cq(struct run *r, struct conn *c)
{
	struct ibv_wc wc;

	while (c->cq && ibv_poll_cq(c->cq, 1, &wc) == 1) {
		if (r->server)
			server_wc(r, c, &wc);
		else if (c->active)
			client_wc(r, c, &wc);
	}
}

static void cq_events(struct run *r)
{
	struct ibv_cq *cq;
	void *ctx;

	while (r->cch && !ibv_get_cq_event(r->cch, &cq, &ctx)) {
		struct conn *c = ctx;

		ibv_ack_cq_events(cq, 1);
		if (c->cq != cq)
			continue;
		if (ibv_req_notify_cq(cq, 0)) {
			count_error(r, E_VERBS, "req_notify_cq", (int)c->idx);
			continue;
		}
		poll_conn_cq(r, c);
	}
}

static bool fail_kind(enum rdma_cm_event_type ev, enum err_kind *kind)
{
	for (size_t i = 0; i < sizeof(fail_events) / sizeof(fail_events[0]); i++) {
		if (fail_events[i].ev == ev) {
			*kind = fail_events[i].kind;
			return true;
		}
	}
	return false;
}

/* Every pending rdma_cm event; 1 if there was one. Each is acked before
 * it is acted on, so its cm_id can be destroyed at once.
 */
static int cm_events(struct run *r)
{
	struct rdma_cm_event *e;
	int any = 0;

	while (!rdma_get_cm_event(r->ech, &e)) {
		enum rdma_cm_event_type ev = e->event;
		struct rdma_cm_id *id = e->id;
		struct conn *c = id->context;
		enum err_kind kind;

		rdma_ack_cm_event(e);
		any = 1;
		if (r->server && ev == RDMA_CM_EVENT_CONNECT_REQUEST) {
			server_request(r, id);
		} else if (!c || c->id != id || (!r->server && !c->active)) {
			continue;
		} else if (fail_kind(ev, &kind)) {
			if (r->server)
				server_fail(r, c, kind, rdma_event_str(ev));
			else
				client_fail(r, c, kind, rdma_event_str(ev));
		} else if (r->server) {
			server_event(r, c, ev);
		} else {
			client_event(r, c, ev);
		}
	}
	return any;
}

/* Waits up to MS for events and handles them; 1 if there was one. */
static int wait_events(struct run *r, int ms)
{
	struct pollfd p[2] = {
		{ .fd = r->ech->fd, .events = POLLIN },
		{ .fd = r->cch ? r->cch->fd : -1, .events = POLLIN },
	};

	if (poll(p, 2, ms) <= 0)
		return 0;
	cq_events(r);
	return cm_events(r) || p[1].revents;
}

/* ---- results ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* the nearest-rank percentile P of the N values V (sorted here) */
static double percentile(double *v, int n, int p)
{
	int k;

	if (!n)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	k = (p * n + 99) / 100 - 1;
	return v[k < 0 ? 0 : k];
}

static void print_errors(const struct run *r)
{
	printf("cm_rate errors:");
	for (int k = 0; k < E_N; k++)
		printf(" %s=%u", err_name[k], r->errors[k]);
	printf("\n");
}

static void client_report(struct run *r, double secs)
{
	printf("cm_rate connections=%d errors=%d parallel=%d seconds=%.3f rate_per_s=%.1f setup_median_us=%.0f setup_p99_us=%.0f",
	       r->ok, total_errors(r), r->parallel, secs,
	       secs > 0 ? r->ok / secs : 0, percentile(r->setup_us, r->ok, 50),
	       percentile(r->setup_us, r->ok, 99));
	for (int s = T_ADDR; s < T_N; s++) {
		if (s == T_SENT && !r->send)
			continue;
		printf(" %s_median_us=%.0f", step_name[s],
		       percentile(r->step_us[s], r->ok, 50));
	}
	printf("\n");
	print_errors(r);
}

static int client(struct run *r)
{
	double t0, now;

	r->conns = calloc((size_t)r->parallel, sizeof(*r->conns));
	r->setup_us = calloc((size_t)r->n, sizeof(double));
	if (!r->conns || !r->setup_us)
		return 1;
	for (int s = T_ADDR; s < T_N; s++) {
		r->step_us[s] = calloc((size_t)r->n, sizeof(double));
		if (!r->step_us[s])
			return 1;
	}
	for (int i = 0; i < r->parallel; i++)
		r->conns[i].slot = i;
	t0 = now_s();
	while (r->done < r->n) {
		for (int i = 0; i < r->parallel && r->started < r->n; i++)
			if (!r->conns[i].active)
				client_start(r, &r->conns[i]);
		wait_events(r, 100);
		now = now_s();
		for (int i = 0; i < r->parallel; i++)
			if (r->conns[i].active && now > r->conns[i].deadline)
				client_fail(r, &r->conns[i], E_TIMEOUT,
					    "no progress");
	}
	client_report(r, now_s() - t0);
	return total_errors(r) || r->ok != r->n;
}

static int server(struct run *r)
{
	double last;

	r->free_slot = calloc(SERVER_SLOTS, sizeof(int));
	r->seen = calloc((size_t)r->n, 1);
	if (!r->free_slot || !r->seen)
		return 1;
	for (int i = SERVER_SLOTS - 1; i >= 0; i--)
		r->free_slot[r->nfree++] = i;
	if (rdma_create_id(r->ech, &r->listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(r->listen_id, (struct sockaddr *)&r->dst) ||
	    rdma_listen(r->listen_id, 64)) {
		perror("cm_rate: listen");
		return 1;
	}
	printf("cm_rate server listening\n");
	fflush(stdout);
	last = now_s();
	while (r->closed < r->n) {
		if (wait_events(r, 100))
			last = now_s();
		else if (now_s() - last > r->timeout_s)
			break;
	}
	printf("cm_rate server connections=%d accepted=%d established=%d dreq_first=%d verified=%d errors=%d\n",
	       r->closed, r->accepted, r->established, r->dreq_first,
	       r->verified, total_errors(r));
	if (r->closed < r->n)
		printf("cm_rate server: timed out after %.0f s without an event\n",
		       r->timeout_s);
	print_errors(r);
	rdma_destroy_id(r->listen_id);
	return total_errors(r) || r->closed != r->n ||
	       r->established + r->dreq_first != r->n ||
	       (r->send && r->verified != r->n);
}

static int get_addr(const char *host, const char *port,
		    struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

static void release(struct run *r)
{
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cch)
		ibv_destroy_comp_channel(r->cch);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	rdma_destroy_event_channel(r->ech);
	for (int s = 0; s < T_N; s++)
		free(r->step_us[s]);
	free(r->setup_us);
	free(r->conns);
	free(r->free_slot);
	free(r->seen);
	free(r->buf);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *addr = NULL,
		   *port = NULL, *src = NULL;
	struct run r = { .n = 1000, .parallel = 1, .timeout_s = 0 };
	int opt, ret;

	optind = 2;
	while ((opt = getopt(argc, argv, "a:b:c:n:p:St:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'b': src = optarg; break;
		case 'c': r.parallel = atoi(optarg); break;
		case 'n': r.n = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'S': r.send = true; break;
		case 't': r.timeout_s = atof(optarg); break;
		default: goto usage;
		}
	}
	r.server = !strcmp(mode, "server");
	if ((!r.server && strcmp(mode, "client")) || !addr || !port ||
	    r.n < 1 || r.parallel < 1 || r.parallel > MAX_PARALLEL ||
	    r.timeout_s < 0)
		goto usage;
	if (!r.timeout_s)
		r.timeout_s = r.server ? 30 : 10;
	if (get_addr(addr, port, &r.dst) ||
	    (src && get_addr(src, "0", &r.src))) {
		fprintf(stderr, "cm_rate: bad address\n");
		return 2;
	}
	r.have_src = src != NULL;
	r.ech = rdma_create_event_channel();
	if (!r.ech || set_nonblock(r.ech->fd)) {
		perror("cm_rate: event channel");
		return 1;
	}
	ret = r.server ? server(&r) : client(&r);
	release(&r);
	return ret;
usage:
	fprintf(stderr,
		"usage: cm_rate server -a ADDR -p PORT -n N [-S] [-t IDLE_S]\n"
		"       cm_rate client -a ADDR -p PORT -n N [-b SRC] [-c PARALLEL] [-S] [-t TIMEOUT_S]\n");
	return 2;
}
