// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel survives any verbs arguments and any process killed at any
 * moment (brief: "any uverbs arguments, any process killed at any moment").
 * - random_arguments: thousands of random calls (create/destroy CQ and QP,
 *   modify/query QP with random masks and values, reg/dereg MR over valid,
 *   unmapped, read-only and kernel addresses, posts with garbage WRs (on
 *   UD QPs through a real AH, no AH or a random Q_Key; on XRC initiators
 *   naming any SRQ number), arms, polls). Every call either succeeds, and then does what it says (CQ at
 *   least as large as asked, QP caps at least as asked, the state reached
 *   is the one asked), or fails with an errno from the set that call may
 *   return; at the end every object goes and `rdma res` is at the baseline.
 * - killed_at_random_moments: a child that creates, connects, moves data,
 *   arms, waits for events and destroys in a loop is SIGKILLed after a
 *   random time, over and over; each time every object it had is freed.
 * vm-run fails the run on any WARN/BUG/Oops in dmesg. SOFTHCA_FUZZ_SEED,
 * SOFTHCA_FUZZ_CALLS (default 3000), SOFTHCA_FUZZ_KILLS (default 60).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rng.h"
#include "verbs_util.h"

#define NOBJ		8
#define BUF_SIZE	(1 << 20)

/* Mostly small, sometimes any value: where the edge cases are. */
static int rnd_count(void)
{
	static const int odd[] = { -1, 0, 1, 2, 3, 63, 64, 65, 4095, 4096,
				   4097, 32767, 32768, 65536, 1 << 22,
				   0x7fffffff };

	if (rnd_below(3))
		return odd[rnd_below(sizeof(odd) / sizeof(odd[0]))];
	return (int)rnd_below(1 << rnd_below(31));
}

static void seed_rng(struct __test_metadata *_metadata)
{
	TH_LOG("seed %#llx (SOFTHCA_FUZZ_SEED to replay)",
	       (unsigned long long)rnd_seed());
}

static bool errno_in(int err, const int *set)
{
	for (; *set; set++)
		if (err == *set)
			return true;
	return false;
}

static const int cq_errs[] = { EINVAL, ENOMEM, ENOSPC, 0 };
static const int qp_errs[] = { EINVAL, ENOMEM, ENOSPC, EOPNOTSUPP, 0 };
/* ENODATA: ib_core has no GID at that index; the others: address resolution. */
static const int modify_errs[] = { EINVAL, EOPNOTSUPP, ENOMEM, ENOENT,
				   ENODATA, EAGAIN, ETIMEDOUT, ENETUNREACH,
				   EHOSTUNREACH, EPERM, 0 };
static const int mr_errs[] = { EINVAL, EFAULT, EPERM, ENOMEM, EACCES,
			       EOPNOTSUPP, 0 };
static const int post_errs[] = { EINVAL, ENOMEM, EOPNOTSUPP, 0 };
static const int destroy_errs[] = { EBUSY, 0 };

struct world {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq[NOBJ];
	struct ibv_qp *qp[NOBJ];
	struct ibv_mr *mr[NOBJ];
	uint8_t *buf;			/* read-write, BUF_SIZE */
	uint8_t *ro;			/* read-only page */
	uint8_t *hole;			/* an unmapped page */
	int num_comp_vectors;
	int max_cqe;
	int gid_index;			/* RoCE v2 GID of 198.18.0.1 */
	union ibv_gid gid;
	struct ibv_ah *ah;		/* to gid, for UD posts */
	unsigned long calls, ok;
};

/* Anything wrong is reported with the call's name and arguments. */
#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		TH_LOG(__VA_ARGS__);					\
		_metadata->passed = 0;					\
	}								\
} while (0)

static void op_create_cq(struct __test_metadata *_metadata, struct world *w)
{
	int i = rnd_below(NOBJ), cqe = rnd_count();
	int vec = rnd_below(4) ? (int)rnd_below(w->num_comp_vectors + 2) : -1;
	struct ibv_cq *cq;

	if (w->cq[i])
		return;
	cq = ibv_create_cq(w->ctx, cqe, NULL, rnd_below(2) ? w->ch : NULL, vec);
	if (!cq) {
		int err = errno;

		CHECK(errno_in(err, cq_errs), "create_cq(%d, vec %d): errno %d",
		      cqe, vec, err);
		/* A size and vector the device has fail only for memory. */
		CHECK(!(cqe >= 1 && cqe <= w->max_cqe && vec >= 0 &&
			vec < w->num_comp_vectors) || err == ENOMEM,
		      "create_cq(%d, vec %d) failed: %d", cqe, vec, err);
		return;
	}
	w->ok++;
	CHECK(cqe >= 0 && vec >= 0 && vec < w->num_comp_vectors,
	      "create_cq(%d, vec %d) succeeded", cqe, vec);
	CHECK(cq->cqe >= cqe, "create_cq(%d) gave %d entries", cqe, cq->cqe);
	w->cq[i] = cq;
}

static bool cq_in_use(struct world *w, struct ibv_cq *cq)
{
	for (int i = 0; i < NOBJ; i++)
		if (w->qp[i] && (w->qp[i]->send_cq == cq ||
				 w->qp[i]->recv_cq == cq))
			return true;
	return false;
}

static void op_destroy_cq(struct __test_metadata *_metadata, struct world *w)
{
	int i = rnd_below(NOBJ), ret;
	bool busy;

	if (!w->cq[i])
		return;
	busy = cq_in_use(w, w->cq[i]);
	ret = ibv_destroy_cq(w->cq[i]);
	if (ret) {
		CHECK(busy && errno_in(ret, destroy_errs),
		      "destroy_cq (busy %d): %d", busy, ret);
		return;
	}
	w->ok++;
	CHECK(!busy, "destroy_cq of a CQ a QP uses succeeded");
	w->cq[i] = NULL;
}

static struct ibv_cq *any_cq(struct world *w)
{
	for (int k = 0; k < NOBJ; k++) {
		struct ibv_cq *cq = w->cq[rnd_below(NOBJ)];

		if (cq)
			return cq;
	}
	return NULL;
}

static void op_create_qp(struct __test_metadata *_metadata, struct world *w)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
		IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_DRIVER,
	};
	struct ibv_qp_init_attr ia = {};
	int i = rnd_below(NOBJ);
	struct ibv_qp_cap asked;
	struct ibv_qp *qp;

	if (w->qp[i])
		return;
	ia.qp_type = types[rnd_below(sizeof(types) / sizeof(types[0]))];
	ia.send_cq = any_cq(w);
	ia.recv_cq = rnd_below(2) ? ia.send_cq : any_cq(w);
	if (!ia.send_cq || !ia.recv_cq)
		return;
	if (rnd_below(2)) {
		/* What programs ask for: mostly granted. */
		ia.qp_type = rnd_below(4) ? IBV_QPT_RC : IBV_QPT_UC;
		ia.cap.max_send_wr = 1 + rnd_below(256);
		ia.cap.max_recv_wr = rnd_below(256);
		ia.cap.max_send_sge = 1 + rnd_below(4);
		ia.cap.max_recv_sge = 1 + rnd_below(4);
		ia.cap.max_inline_data = rnd_below(256);
	} else {
		ia.cap.max_send_wr = rnd_count();
		ia.cap.max_recv_wr = rnd_count();
		ia.cap.max_send_sge = rnd_below(4) ? rnd_below(40) : rnd_count();
		ia.cap.max_recv_sge = rnd_below(4) ? rnd_below(40) : rnd_count();
		ia.cap.max_inline_data = rnd_below(2) ? rnd_below(1024) :
							 rnd_count();
	}
	ia.sq_sig_all = rnd_below(2);
	asked = ia.cap;
	qp = ibv_create_qp(w->pd, &ia);
	if (!qp) {
		CHECK(errno_in(errno, qp_errs), "create_qp(type %d, wr %u/%u sge %u/%u inl %u): errno %d",
		      ia.qp_type, ia.cap.max_send_wr, ia.cap.max_recv_wr,
		      ia.cap.max_send_sge, ia.cap.max_recv_sge,
		      ia.cap.max_inline_data, errno);
		return;
	}
	w->ok++;
	CHECK(ia.qp_type == IBV_QPT_RC || ia.qp_type == IBV_QPT_UC ||
	      ia.qp_type == IBV_QPT_UD || ia.qp_type == IBV_QPT_XRC_SEND,
	      "create_qp of type %d succeeded", ia.qp_type);
	/* An XRC initiator has no receive queue: libibverbs asks for none. */
	if (ia.qp_type == IBV_QPT_XRC_SEND) {
		CHECK(ia.cap.max_recv_wr == 0, "XRC_SEND granted %u receives",
		      ia.cap.max_recv_wr);
		asked.max_recv_wr = 0;
		asked.max_recv_sge = 0;
	}
	/* ibv_create_qp wrote back what was granted: at least the ask. */
	CHECK(ia.cap.max_send_wr >= asked.max_send_wr &&
	      ia.cap.max_recv_wr >= asked.max_recv_wr &&
	      ia.cap.max_send_sge >= asked.max_send_sge &&
	      ia.cap.max_recv_sge >= asked.max_recv_sge &&
	      ia.cap.max_inline_data >= asked.max_inline_data,
	      "create_qp granted less than asked");
	CHECK(rc_qp_state(qp) == IBV_QPS_RESET, "new QP not in RESET");
	w->qp[i] = qp;
}

static void op_destroy_qp(struct __test_metadata *_metadata, struct world *w)
{
	int i = rnd_below(NOBJ), ret;

	if (!w->qp[i])
		return;
	ret = ibv_destroy_qp(w->qp[i]);
	CHECK(!ret, "destroy_qp: %d", ret);
	if (!ret) {
		w->ok++;
		w->qp[i] = NULL;
	}
}

/*
 * The transition a program would make next (the QP connects to itself),
 * sometimes with one mask bit flipped; success must mean the new state.
 */
static void op_modify_next(struct __test_metadata *_metadata, struct world *w,
			   struct ibv_qp *qp)
{
	int state = rc_qp_state(qp), mask, ret, flip = -1;
	struct ibv_qp_attr a = {};

	if (qp->qp_type == IBV_QPT_UD && state <= IBV_QPS_RTR) {
		/* A datagram QP's path: a Q_Key, then just the states. */
		a.qp_state = state + 1;
		a.port_num = 1;
		a.qkey = (uint32_t)rnd() & 0x7fffffff;
		a.sq_psn = 1;
		mask = IBV_QP_STATE | (state == IBV_QPS_RESET ?
			IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY : 0) |
			(state == IBV_QPS_RTR ? IBV_QP_SQ_PSN : 0);
	} else switch (state) {
	case IBV_QPS_RESET:
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_INIT:
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.rq_psn = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.sgid_index = w->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.dgid = w->gid;
		mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		break;
	case IBV_QPS_RTR:
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		a.timeout = 10;
		a.retry_cnt = 1;
		a.rnr_retry = 1;
		a.max_rd_atomic = 1;
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
		       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	case IBV_QPS_RTS:
		a.qp_state = rnd_below(2) ? IBV_QPS_SQD : IBV_QPS_ERR;
		mask = IBV_QP_STATE;
		break;
	case IBV_QPS_SQD:
		a.qp_state = IBV_QPS_RTS;
		mask = IBV_QP_STATE;
		break;
	default:
		a.qp_state = IBV_QPS_RESET;
		mask = IBV_QP_STATE;
		break;
	}
	/* UC has none of RC's retry, RNR and RDMA-read attributes. */
	if (qp->qp_type == IBV_QPT_UC)
		mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
			  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC);
	if (!rnd_below(4)) {
		flip = rnd_below(21);
		mask ^= 1 << flip;
	}
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret) {
		CHECK(errno_in(ret, modify_errs) && flip >= 0,
		      "modify_qp %d -> %d (flipped bit %d): %d", state,
		      a.qp_state, flip, ret);
		return;
	}
	w->ok++;
	if (mask & IBV_QP_STATE) {
		int now = rc_qp_state(qp);

		CHECK(now == (int)a.qp_state || now == IBV_QPS_ERR,
		      "modify_qp to %d succeeded, state %d", a.qp_state, now);
	}
}

static void op_modify_qp(struct __test_metadata *_metadata, struct world *w)
{
	struct ibv_qp *qp = w->qp[rnd_below(NOBJ)];
	struct ibv_qp_attr a;
	int mask, ret, before;

	if (!qp)
		return;
	if (rnd_below(2)) {
		op_modify_next(_metadata, w, qp);
		return;
	}
	rnd_fill_attr:
	memset(&a, 0, sizeof(a));
	/* Random bytes, then values that are sometimes right. */
	for (size_t k = 0; k < sizeof(a); k++)
		((uint8_t *)&a)[k] = (uint8_t)rnd();
	if (rnd_below(2)) {
		a.qp_state = rnd_below(IBV_QPS_ERR + 1);
		a.path_mtu = 1 + rnd_below(5);
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.sgid_index = rnd_below(4);
		a.ah_attr.grh.hop_limit = 64;
		a.port_num = 1;
		a.pkey_index = 0;
		a.max_rd_atomic = rnd_below(20);
		a.max_dest_rd_atomic = rnd_below(20);
		a.timeout = rnd_below(32);
		a.retry_cnt = rnd_below(8);
		a.rnr_retry = rnd_below(8);
		a.min_rnr_timer = rnd_below(32);
		a.qp_access_flags = rnd_below(16);
	}
	if (a.qp_state > IBV_QPS_ERR + 2 && rnd_below(2))
		goto rnd_fill_attr;
	mask = (int)(rnd() & ((1u << 21) - 1));
	if (rnd_below(2))
		mask |= IBV_QP_STATE;
	before = rc_qp_state(qp);
	ret = ibv_modify_qp(qp, &a, mask);
	if (ret) {
		CHECK(errno_in(ret, modify_errs), "modify_qp(mask %#x, state %d from %d): %d",
		      mask, a.qp_state, before, ret);
		/* A failed modify changes nothing (the engine may error it). */
		CHECK(rc_qp_state(qp) == before || rc_qp_state(qp) == IBV_QPS_ERR,
		      "failed modify_qp moved the QP from %d to %d", before,
		      rc_qp_state(qp));
		return;
	}
	w->ok++;
	if ((mask & IBV_QP_STATE) && a.qp_state != IBV_QPS_SQD) {
		int now = rc_qp_state(qp);

		CHECK(now == (int)a.qp_state || now == IBV_QPS_ERR,
		      "modify_qp to %d succeeded, state %d", a.qp_state, now);
	}
}

static void op_query_qp(struct __test_metadata *_metadata, struct world *w)
{
	struct ibv_qp *qp = w->qp[rnd_below(NOBJ)];
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	if (!qp)
		return;
	ret = ibv_query_qp(qp, &a, (int)(rnd() & ((1u << 21) - 1)), &ia);
	CHECK(!ret, "query_qp: %d", ret);
	w->ok += !ret;
}

static void op_reg_mr(struct __test_metadata *_metadata, struct world *w)
{
	int i = rnd_below(NOBJ), access = (int)rnd_below(1 << 6);
	uint64_t len = rnd_below(2) ? rnd_below(BUF_SIZE) + 1 :
				      (uint64_t)rnd_count();
	bool writes = access & (IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_ATOMIC);
	void *addr;
	int where = rnd_below(6);
	struct ibv_mr *mr;

	if (w->mr[i])
		return;
	switch (where) {
	case 0:
		addr = w->ro;
		len = 4096;
		break;
	case 1:
		addr = w->hole;
		len = 4096;
		break;
	case 2:
		addr = (void *)0xffff888000000000ull;
		break;
	case 3:
		addr = NULL;
		break;
	default:
		addr = w->buf + rnd_below(BUF_SIZE);
		if (len > (uint64_t)(w->buf + BUF_SIZE - (uint8_t *)addr))
			len = w->buf + BUF_SIZE - (uint8_t *)addr;
		break;
	}
	mr = ibv_reg_mr(w->pd, addr, len, access);
	if (!mr) {
		CHECK(errno_in(errno, mr_errs), "reg_mr(where %d len %llu access %#x): errno %d",
		      where, (unsigned long long)len, access, errno);
		return;
	}
	w->ok++;
	/* Never over memory that is not there, nor writable over RO memory. */
	CHECK(where >= 4 || (where == 0 && !writes),
	      "reg_mr(where %d, access %#x) succeeded", where, access);
	CHECK(mr->length == len, "reg_mr length %zu, asked %llu", mr->length,
	      (unsigned long long)len);
	w->mr[i] = mr;
}

static void op_dereg_mr(struct __test_metadata *_metadata, struct world *w)
{
	int i = rnd_below(NOBJ), ret;

	if (!w->mr[i])
		return;
	ret = ibv_dereg_mr(w->mr[i]);
	CHECK(!ret, "dereg_mr: %d", ret);
	if (!ret) {
		w->ok++;
		w->mr[i] = NULL;
	}
}

static uint32_t any_key(struct world *w, bool remote)
{
	struct ibv_mr *mr = w->mr[rnd_below(NOBJ)];

	if (mr && rnd_below(2))
		return remote ? mr->rkey : mr->lkey;
	return (uint32_t)rnd();
}

static void op_post(struct __test_metadata *_metadata, struct world *w)
{
	struct ibv_qp *qp = w->qp[rnd_below(NOBJ)];
	struct ibv_sge sge[64];
	int nsge = rnd_below(2) ? (int)rnd_below(5) : (int)rnd_below(64);
	int ret;

	if (!qp)
		return;
	for (int k = 0; k < nsge; k++) {
		sge[k].addr = rnd_below(2) ? (uintptr_t)w->buf + rnd_below(BUF_SIZE / 2) :
					     rnd();
		sge[k].length = rnd_below(2) ? rnd_below(4096) : (uint32_t)rnd();
		sge[k].lkey = any_key(w, false);
	}
	if (rnd_below(2)) {
		struct ibv_send_wr wr = {}, *bad = NULL;

		wr.wr_id = rnd();
		wr.opcode = rnd_below(16);
		wr.send_flags = rnd_below(32);
		wr.sg_list = sge;
		wr.num_sge = nsge;
		wr.wr.rdma.remote_addr = rnd();
		wr.wr.rdma.rkey = any_key(w, true);
		/* Inline copies from our memory: keep it ours. */
		if (wr.send_flags & IBV_SEND_INLINE)
			for (int k = 0; k < nsge; k++) {
				sge[k].addr = (uintptr_t)w->buf;
				sge[k].length = rnd_below(2048);
			}
		if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = rnd();
			wr.wr.atomic.rkey = any_key(w, true);
		}
		/* An XRC initiator names an SRQ the peer may not have. */
		if (qp->qp_type == IBV_QPT_XRC_SEND)
			wr.qp_type.xrc.remote_srqn = rnd_below(2) ?
						     rnd_below(16) : (uint32_t)rnd();
		if (qp->qp_type == IBV_QPT_UD) {
			struct ibv_qp *to = w->qp[rnd_below(NOBJ)];

			/* The provider follows the AH pointer: a real one or none. */
			wr.wr.ud.ah = rnd_below(4) ? w->ah : NULL;
			wr.wr.ud.remote_qpn = to && rnd_below(2) ? to->qp_num :
								   (uint32_t)rnd();
			wr.wr.ud.remote_qkey = (uint32_t)rnd();
		}
		ret = ibv_post_send(qp, &wr, &bad);
		if (ret)
			CHECK(errno_in(ret, post_errs) && bad == &wr,
			      "post_send(op %d flags %#x nsge %d): %d", wr.opcode,
			      wr.send_flags, nsge, ret);
	} else {
		struct ibv_recv_wr wr = {}, *bad = NULL;

		wr.wr_id = rnd();
		wr.sg_list = sge;
		wr.num_sge = nsge;
		ret = ibv_post_recv(qp, &wr, &bad);
		if (ret)
			CHECK(errno_in(ret, post_errs) && bad == &wr,
			      "post_recv(nsge %d): %d", nsge, ret);
	}
	w->ok += !ret;
}

static void op_poll_arm(struct __test_metadata *_metadata, struct world *w)
{
	struct ibv_cq *cq = any_cq(w);
	struct ibv_wc wc[16];
	int n;

	if (!cq)
		return;
	n = ibv_poll_cq(cq, rnd_below(17), wc);
	CHECK(n >= 0, "poll_cq: %d", n);
	for (int k = 0; k < n; k++)
		CHECK(wc[k].status <= IBV_WC_TM_RNDV_INCOMPLETE,
		      "poll_cq: status %d", wc[k].status);
	if (rnd_below(2)) {
		CHECK(!ibv_req_notify_cq(cq, rnd_below(2)), "req_notify_cq");
	}
	/* Drain what the channel has (events of CQs armed above). */
	for (;;) {
		struct pollfd pfd = { .fd = w->ch->fd, .events = POLLIN };
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (poll(&pfd, 1, 0) != 1 ||
		    ibv_get_cq_event(w->ch, &ev_cq, &ev_ctx))
			break;
		ibv_ack_cq_events(ev_cq, 1);
	}
	w->ok++;
}

static const char *const res_names[] = { "qp", "cq", "mr", "pd" };
#define NRES (sizeof(res_names) / sizeof(res_names[0]))

static void res_snapshot(long *v)
{
	for (size_t i = 0; i < NRES; i++)
		v[i] = res_count("shca0", res_names[i]);
}

static bool res_equal(const long *a, const long *b)
{
	return !memcmp(a, b, NRES * sizeof(*a));
}

/*
 * The baseline: the counts once they stop moving (a process killed by the
 * previous test may still be releasing its objects).
 */
static void res_baseline(long *v)
{
	long prev[NRES];

	res_snapshot(prev);
	for (int t = 0; t < 50; t++) {
		usleep(100000);
		res_snapshot(v);
		if (res_equal(prev, v))
			return;
		memcpy(prev, v, sizeof(prev));
	}
}

FIXTURE(fz) {
};

FIXTURE_SETUP(fz)
{
}

FIXTURE_TEARDOWN(fz)
{
}

TEST_F_TIMEOUT(fz, random_arguments, 1800)
{
	void (*const ops[])(struct __test_metadata *, struct world *) = {
		op_create_cq, op_destroy_cq, op_create_qp, op_destroy_qp,
		op_modify_qp, op_modify_qp, op_modify_qp, op_query_qp,
		op_reg_mr, op_dereg_mr, op_post, op_post, op_poll_arm,
	};
#define NOPS (sizeof(ops) / sizeof(ops[0]))
	const char *env = getenv("SOFTHCA_FUZZ_CALLS");
	long calls = env ? atol(env) : 3000, res0[NRES], res[NRES];
	unsigned long ok_by[NOPS] = {};
	struct ibv_device_attr_ex da;
	struct world w = {};

	seed_rng(_metadata);
	res_baseline(res0);
	w.ctx = open_dev("shca0");
	ASSERT_NE(NULL, w.ctx);
	ASSERT_EQ(0, ibv_query_device_ex(w.ctx, NULL, &da));
	w.num_comp_vectors = w.ctx->num_comp_vectors;
	w.max_cqe = da.orig_attr.max_cqe;
	w.gid_index = rc_find_gid(w.ctx, RC_IP0);
	ASSERT_LE(0, w.gid_index);
	ASSERT_EQ(0, ibv_query_gid(w.ctx, 1, w.gid_index, &w.gid));
	w.pd = ibv_alloc_pd(w.ctx);
	ASSERT_NE(NULL, w.pd);
	w.ch = ibv_create_comp_channel(w.ctx);
	ASSERT_NE(NULL, w.ch);
	w.buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w.ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w.hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, w.buf);
	ASSERT_NE(MAP_FAILED, w.ro);
	ASSERT_NE(MAP_FAILED, w.hole);
	munmap(w.hole, 4096);
	w.ah = ibv_create_ah(w.pd, &(struct ibv_ah_attr){
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = w.gid, .sgid_index = w.gid_index,
			 .hop_limit = 64 } });
	ASSERT_NE(NULL, w.ah);

	for (long k = 0; k < calls && _metadata->passed; k++) {
		unsigned long ok = w.ok;
		int op = rnd_below(NOPS);

		ops[op](_metadata, &w);
		ok_by[op] += w.ok != ok;
		w.calls++;
	}
	TH_LOG("%lu calls, %lu succeeded", w.calls, w.ok);
	/* Each kind of call succeeded sometimes: the run reached the device. */
	for (size_t op = 0; op < NOPS; op++) {
		EXPECT_LT(0, ok_by[op]) TH_LOG("call kind %zu never succeeded", op);
	}

	for (int i = 0; i < NOBJ; i++)
		if (w.qp[i])
			EXPECT_EQ(0, ibv_destroy_qp(w.qp[i]));
	/* Events read are acked as they are read: destroy never waits. */
	for (int i = 0; i < NOBJ; i++) {
		if (w.cq[i]) {
			op_poll_arm(_metadata, &w);
			EXPECT_EQ(0, ibv_destroy_cq(w.cq[i]));
			w.cq[i] = NULL;
		}
		if (w.mr[i])
			EXPECT_EQ(0, ibv_dereg_mr(w.mr[i]));
	}
	EXPECT_EQ(0, ibv_destroy_comp_channel(w.ch));
	EXPECT_EQ(0, ibv_destroy_ah(w.ah));
	EXPECT_EQ(0, ibv_dealloc_pd(w.pd));
	EXPECT_EQ(0, ibv_close_device(w.ctx));
	res_snapshot(res);
	EXPECT_TRUE(res_equal(res0, res));
}

/* The child: everything a program does, in a loop, until killed. */
static void busy_child(void)
{
	for (;;) {
		struct rc_pair p;
		struct rc_cfg c;
		struct ibv_wc wc;

		rc_cfg_default(&c, RC_SAME_CTX);
		c.channels = rnd_below(2);
		if (rc_pair_open(&p, &c))
			_exit(2);
		for (int k = 0; k < 20; k++) {
			if (c.channels)
				ibv_req_notify_cq(p.e[1].rcq, 0);
			rc_post_recv(p.e[1].qp, k, p.e[1].buf, 4096,
				     p.e[1].mr->lkey);
			rc_post_send(p.e[0].qp, IBV_WR_SEND, k, p.e[0].buf,
				     4096, p.e[0].mr->lkey, 0, 0,
				     IBV_SEND_SIGNALED, 0);
			rc_post_send(p.e[0].qp, IBV_WR_RDMA_WRITE, k,
				     p.e[0].buf, 65536, p.e[0].mr->lkey,
				     (uintptr_t)p.e[1].buf, p.e[1].mr->rkey, 0,
				     0);
			rc_poll(p.e[1].rcq, &wc, 1, 100);
			rc_poll(p.e[0].scq, &wc, 1, 100);
		}
		/* Sometimes leave it all to the exit path. */
		if (rnd_below(3))
			rc_pair_destroy(&p);
	}
}

TEST_F_TIMEOUT(fz, killed_at_random_moments, 1800)
{
	const char *env = getenv("SOFTHCA_FUZZ_KILLS");
	int kills = env ? atoi(env) : 60;
	long res0[NRES], res[NRES];

	seed_rng(_metadata);
	res_baseline(res0);
	for (int k = 0; k < kills; k++) {
		uint64_t delay_us = rnd_below(80000);
		pid_t pid;
		int status;

		rnd();
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			rnd_mix((uint64_t)getpid() << 20);
			busy_child();
		}
		usleep(delay_us);
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status))
			TH_LOG("child exited %d before the kill", WEXITSTATUS(status));
		/* The file's release frees everything; it may lag the exit. */
		for (int t = 0; t < 300; t++) {
			res_snapshot(res);
			if (res_equal(res0, res))
				break;
			usleep(10000);
		}
		ASSERT_TRUE(res_equal(res0, res))
			TH_LOG("kill %d after %llu us: qp %ld cq %ld mr %ld pd %ld left",
			       k, (unsigned long long)delay_us, res[0] - res0[0],
			       res[1] - res0[1], res[2] - res0[2], res[3] - res0[3]);
	}
}

TEST_HARNESS_MAIN
