// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * qp.c - RC and UD queue pairs: create (the kernel sizes both queues and
 * returns the geometry; the provider maps it and keeps its software state:
 * wrid[], wqe_head[], counters), modify, query, destroy, and the context's
 * QP table that poll_cq uses to find a QP by the QPN of a CQE. A UD QP's
 * send queue is the builder's datagram transport (SOFTHCA_TP_UD): every WQE
 * carries the datagram segment of its WR's address handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "softhca.h"

struct softhca_create_qp_cmd {
	struct ibv_create_qp ibv_cmd;
	struct softhca_create_qp_req drv;
};

struct softhca_create_qp_resp_buf {
	_Alignas(8) __u8 core[sizeof(struct ib_uverbs_create_qp_resp)];
	struct softhca_create_qp_resp drv;
};

_Static_assert(offsetof(struct softhca_create_qp_cmd, drv) ==
		       sizeof(struct ibv_create_qp),
	       "udata must follow the core command");
_Static_assert(offsetof(struct softhca_create_qp_resp_buf, drv) ==
		       sizeof(struct ib_uverbs_create_qp_resp),
	       "udata must follow the core response");

/* ---- the QP table ---------------------------------------------------- */

static int qp_table_insert(struct softhca_context *ctx, struct softhca_qp *qp)
{
	int ret;

	pthread_mutex_lock(&ctx->qp_table_mutex);
	ret = softhca_table_insert(&ctx->qp_table, qp->qpn, qp);
	/* A second QP shares the UAR: BlueFlame needs its lock from now on. */
	if (!ret && ++ctx->qp_count > 1 && !ctx->single_threaded)
		__atomic_store_n(&ctx->bf_lock.need_lock, true,
				 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctx->qp_table_mutex);
	return ret;
}

static void qp_table_remove(struct softhca_context *ctx, struct softhca_qp *qp)
{
	pthread_mutex_lock(&ctx->qp_table_mutex);
	if (softhca_find_qp(ctx, qp->qpn) == qp) {
		softhca_table_remove(&ctx->qp_table, qp->qpn, qp);
		ctx->qp_count--;
	}
	pthread_mutex_unlock(&ctx->qp_table_mutex);
}

void softhca_qp_table_free(struct softhca_context *ctx)
{
	softhca_table_free(&ctx->qp_table);
	softhca_table_free(&ctx->xsrq_table);
}

/* ---- the CQs of a QP ------------------------------------------------- */

/* Lock the QP's CQs (one or two) in a fixed order: by address. */
static void lock_cqs(struct softhca_cq *a, struct softhca_cq *b)
{
	if (a == b || !b) {
		softhca_lock(&a->lock);
	} else if (a < b) {
		softhca_lock(&a->lock);
		softhca_lock(&b->lock);
	} else {
		softhca_lock(&b->lock);
		softhca_lock(&a->lock);
	}
}

static void unlock_cqs(struct softhca_cq *a, struct softhca_cq *b)
{
	softhca_unlock(&a->lock);
	if (b && b != a)
		softhca_unlock(&b->lock);
}

/* Forget every CQE of this QP not polled yet, on both of its CQs. */
static void clean_cqs(struct softhca_qp *qp)
{
	struct softhca_cq *scq = to_scq(qp->vqp.qp.send_cq);
	struct softhca_cq *rcq = to_scq(qp->vqp.qp.recv_cq);

	struct ibv_srq *srq = qp->vqp.qp.srq;

	softhca_cq_clean_locked(scq, qp->qpn,
				srq && rcq == scq ? to_ssrq(srq) : NULL);
	if (rcq && rcq != scq)
		softhca_cq_clean_locked(rcq, qp->qpn,
					srq ? to_ssrq(srq) : NULL);
}

/* ---- create ---------------------------------------------------------- */

/*
 * The geometry the kernel returned: every queue inside the mapping, rings
 * of a power-of-two count, and an SQ that holds max_post WQEs of the
 * largest size this QP can build.
 */
/*
 * A WQ's doorbell record holds 16 bits of its counter: with 0x10000
 * entries a full ring would read as an empty one.
 */
#define SOFTHCA_WQ_MAX_CNT	0x8000

static bool qp_resp_ok(const struct softhca_context *ctx,
		       const struct softhca_create_qp_resp *r, bool sig)
{
	uint64_t sq_end = (uint64_t)r->sq_offset +
			  (uint64_t)r->sq_wqebb_cnt * SOFTHCA_SEND_WQE_BB;
	uint64_t rq_end;

	if (!r->mmap_size || r->mmap_size % ctx->page_size ||
	    r->mmap_offset % ctx->page_size)
		return false;
	if (!softhca_is_pow2(r->sq_wqebb_cnt) ||
	    r->sq_offset % SOFTHCA_SEND_WQE_BB || sq_end > r->mmap_size ||
	    r->sq_wqebb_cnt > SOFTHCA_WQ_MAX_CNT)
		return false;
	if (!r->sq_max_post || !r->sq_max_wqebbs ||
	    r->sq_max_wqebbs > softhca_ds_to_wqebbs(SOFTHCA_WQE_MAX_DS) ||
	    (uint64_t)r->sq_max_post * r->sq_max_wqebbs > r->sq_wqebb_cnt)
		return false;
	if (r->rq_wqe_cnt) {
		if (!softhca_is_pow2(r->rq_wqe_cnt) || r->rq_wqe_cnt > SOFTHCA_WQ_MAX_CNT ||
		    r->rq_wqe_shift < SOFTHCA_DS_SHIFT || r->rq_wqe_shift > 16)
			return false;
		rq_end = (uint64_t)r->rq_offset +
			 ((uint64_t)r->rq_wqe_cnt << r->rq_wqe_shift);
		if (r->rq_offset % SOFTHCA_DS_SIZE || rq_end > r->mmap_size ||
		    r->rq_max_gs > softhca_recv_max_gs(1U << r->rq_wqe_shift,
						       sig))
			return false;
	}
	return r->dbr_offset % sizeof(struct softhca_qp_dbr) == 0 &&
	       r->dbr_offset + sizeof(struct softhca_qp_dbr) <= r->mmap_size;
}

static void qp_free_sw(struct softhca_qp *qp)
{
	softhca_wr_api_free(qp);
	free(qp->sq.wrs.wrid);
	free(qp->sq.wrs.wqe_head);
	free(qp->rq.wrs.wrid);
	softhca_lock_destroy(&qp->sq.lock);
	softhca_lock_destroy(&qp->rq.lock);
	free(qp);
}

/* The transport (SOFTHCA_TP_*) of a QP type the provider creates. */
static uint32_t qp_tp(enum ibv_qp_type type)
{
	return type == IBV_QPT_UD ? SOFTHCA_TP_UD :
	       type == IBV_QPT_UC ? SOFTHCA_TP_UC :
	       type == IBV_QPT_XRC_SEND ? SOFTHCA_TP_XRC : SOFTHCA_TP_RC;
}

/* The send ops a QP of @type offers, or 0 for a type we do not create. */
static uint64_t qp_send_ops(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return SOFTHCA_SEND_OPS_FLAGS;
	case IBV_QPT_UC:
		return SOFTHCA_UC_SEND_OPS_FLAGS;
	case IBV_QPT_UD:
		return SOFTHCA_UD_SEND_OPS_FLAGS;
	case IBV_QPT_XRC_SEND:
		return SOFTHCA_XRC_SEND_OPS_FLAGS;
	default:
		return 0;
	}
}

static int qp_map(struct softhca_context *ctx, struct softhca_qp *qp,
		  const struct softhca_create_qp_resp *r,
		  const struct ibv_qp_cap *cap)
{
	uint8_t *map;
	int ret;

	ret = softhca_db_hint_init(ctx, &qp->db, r->db_slot, r->db_thread);
	if (ret)
		return ret;
	qp->map_size = r->mmap_size;
	map = mmap(NULL, qp->map_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ctx->vctx.context.cmd_fd, (off_t)r->mmap_offset);
	if (map == MAP_FAILED)
		return errno;
	qp->map = map;
	qp->dbr = (struct softhca_qp_dbr *)(map + r->dbr_offset);

	qp->sq.fmt.ring.buf = map + r->sq_offset;
	qp->sq.fmt.ring.size = r->sq_wqebb_cnt * SOFTHCA_SEND_WQE_BB;
	qp->sq.fmt.qpn = qp->qpn;
	qp->sq.fmt.max_wqebbs = r->sq_max_wqebbs;
	qp->sq.fmt.max_inline = r->max_inline_data;
	qp->sq.fmt.sign = qp->wqe_sig;
	qp->sq.fmt.tp = qp_tp(qp->vqp.qp.qp_type);
	qp->sq.fmt.pdn = to_spd(qp->vqp.qp.pd)->pdn;
	qp->sq.wqebb_cnt = r->sq_wqebb_cnt;
	qp->sq.max_post = r->sq_max_post;
	qp->sq.max_gs = cap->max_send_sge;

	qp->rq.buf = map + r->rq_offset;
	qp->rq.wqe_cnt = r->rq_wqe_cnt;
	qp->rq.wqe_shift = r->rq_wqe_shift;
	qp->rq.max_gs = r->rq_max_gs;

	qp->sq.wrs.cnt = qp->sq.wqebb_cnt;
	qp->sq.wrs.wrid = calloc(qp->sq.wqebb_cnt, sizeof(*qp->sq.wrs.wrid));
	qp->sq.wrs.wqe_head = calloc(qp->sq.wqebb_cnt,
				     sizeof(*qp->sq.wrs.wqe_head));
	qp->rq.wrs.cnt = qp->rq.wqe_cnt;
	qp->rq.wrs.wrid = calloc(qp->rq.wqe_cnt ? qp->rq.wqe_cnt : 1,
				 sizeof(*qp->rq.wrs.wrid));
	if (!qp->sq.wrs.wrid || !qp->sq.wrs.wqe_head || !qp->rq.wrs.wrid)
		return ENOMEM;
	return 0;
}

/* A parent domain counts its QPs (td.c); a PD's are the kernel's. */
static void pd_hold(struct ibv_pd *ibpd, int n)
{
	struct softhca_pd *pd = to_spd(ibpd);

	if (pd->protection)
		__atomic_fetch_add(&pd->users, n, __ATOMIC_ACQ_REL);
}

/*
 * An XRC target: the kernel creates it (with no driver data: the core
 * drops ours) and it has no queue here, only its QPN. Not in the QP
 * table: its receive CQEs name the XRC SRQ (poll.c).
 */
static struct ibv_qp *xrc_tgt_new(void)
{
	struct softhca_qp *qp = calloc(1, sizeof(*qp));

	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->xrc_tgt = true;
	return &qp->vqp.qp;
}

/* The kernel answered @ret for the target handle @ibqp: keep it or not. */
static struct ibv_qp *xrc_tgt_done(struct ibv_qp *ibqp, int ret)
{
	if (ret) {
		free(to_sqp(ibqp));
		errno = ret;
		return NULL;
	}
	to_sqp(ibqp)->qpn = ibqp->qp_num;
	return ibqp;
}

static struct ibv_qp *create_xrc_tgt(struct ibv_context *ibctx,
				     struct ibv_qp_init_attr_ex *attr)
{
	struct softhca_create_qp_resp_buf resp;
	struct softhca_create_qp_cmd cmd;
	struct ibv_qp *ibqp;
	int ret;

	if (attr->comp_mask & ~(IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd) {
		errno = EINVAL;
		return NULL;
	}
	ibqp = xrc_tgt_new();
	if (!ibqp)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_create_qp_ex(ibctx, &to_sqp(ibqp)->vqp, attr,
				   &cmd.ibv_cmd, sizeof(cmd),
				   (struct ib_uverbs_create_qp_resp *)(void *)&resp,
				   sizeof(resp));
	return xrc_tgt_done(ibqp, ret);
}

/* ibv_open_qp: another handle of an XRC target, by its domain and QPN. */
struct ibv_qp *softhca_open_qp(struct ibv_context *ibctx,
			       struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;
	struct ibv_qp *ibqp;
	int ret;

	ibqp = xrc_tgt_new();
	if (!ibqp)
		return NULL;
	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	ret = ibv_cmd_open_qp(ibctx, &to_sqp(ibqp)->vqp,
			      sizeof(to_sqp(ibqp)->vqp), attr, &cmd,
			      sizeof(cmd), &resp, sizeof(resp));
	return xrc_tgt_done(ibqp, ret);
}

static struct ibv_qp *create_qp(struct ibv_context *ibctx,
				struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops = qp_send_ops(attr->qp_type);
	struct softhca_context *ctx = to_sctx(ibctx);
	struct softhca_create_qp_resp_buf resp;
	struct softhca_create_qp_cmd cmd;
	struct softhca_qp *qp;
	bool single;
	int ret;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return create_xrc_tgt(ibctx, attr);
	/* The kernel refuses an XRC SRQ for any QP but an XRC target. */
	if (!ops ||
	    (attr->comp_mask &
	     ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	     (attr->send_ops_flags & ~ops))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* An XRC initiator only sends: no receive CQ is its. */
	if (!attr->send_cq || !attr->pd ||
	    (!attr->recv_cq && attr->qp_type != IBV_QPT_XRC_SEND)) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	/* A thread domain's promise, or the environment's (softhca.h). */
	single = ctx->single_threaded || softhca_pd_single_thread(attr->pd);
	ret = softhca_lock_init(&qp->sq.lock, !single);
	if (!ret) {
		ret = softhca_lock_init(&qp->rq.lock, !single);
		if (ret)
			softhca_lock_destroy(&qp->sq.lock);
	}
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}

	memset(&cmd, 0, sizeof(cmd));
	memset(&resp, 0, sizeof(resp));
	cmd.drv.flags = ctx->wqe_sig ? SOFTHCA_QP_FLAG_SIGNATURE : 0;
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				   sizeof(cmd),
				   (struct ib_uverbs_create_qp_resp *)(void *)&resp,
				   sizeof(resp));
	if (ret) {
		qp_free_sw(qp);
		errno = ret;
		return NULL;
	}

	qp->qpn = qp->vqp.qp.qp_num;
	if (attr->qp_type == IBV_QPT_XRC_SEND)
		qp->vqp.qp.recv_cq = NULL;	/* libibverbs copied the attr's */
	qp->sig_all = attr->sq_sig_all;
	qp->wqe_sig = resp.drv.flags & SOFTHCA_QP_FLAG_SIGNATURE;
	/* CQEs and the QP table know 24-bit QPNs only. */
	if ((qp->qpn & ~SOFTHCA_24BIT_MASK) ||
	    !qp_resp_ok(ctx, &resp.drv, qp->wqe_sig)) {
		ret = EPROTO;
		goto err_destroy;
	}
	ret = qp_map(ctx, qp, &resp.drv, &attr->cap);
	if (ret)
		goto err_destroy;
	/* After the command, which sets vqp.comp_mask to 0. */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = softhca_wr_api_init(qp);
		if (ret)
			goto err_destroy;
	}
	ret = qp_table_insert(ctx, qp);
	if (ret)
		goto err_destroy;
	pd_hold(attr->pd, 1);
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
	if (qp->map)
		munmap(qp->map, qp->map_size);
	qp_free_sw(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *softhca_create_qp_ex(struct ibv_context *ibctx,
				    struct ibv_qp_init_attr_ex *attr)
{
	return create_qp(ibctx, attr);
}

struct ibv_qp *softhca_create_qp(struct ibv_pd *ibpd,
				 struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;

	memset(&ex, 0, sizeof(ex));
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = ibpd;
	qp = create_qp(ibpd->context, &ex);
	if (qp)
		attr->cap = ex.cap;		/* what the kernel granted */
	return qp;
}

/* ---- modify, query, destroy ------------------------------------------ */

/* Back to RESET: the queues start over at 0, as the HCA's do. */
static void qp_reset_queues(struct softhca_qp *qp)
{
	struct softhca_cq *scq = to_scq(qp->vqp.qp.send_cq);
	struct softhca_cq *rcq = to_scq(qp->vqp.qp.recv_cq);

	lock_cqs(scq, rcq);
	clean_cqs(qp);
	unlock_cqs(scq, rcq);

	softhca_lock(&qp->sq.lock);
	softhca_lock(&qp->rq.lock);
	qp->sq.cur_post = 0;
	__atomic_store_n(&qp->sq.wrs.head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->sq.wrs.tail, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->rq.wrs.head, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->rq.wrs.tail, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->dbr->rcv_counter, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&qp->dbr->snd_counter, 0, __ATOMIC_RELAXED);
	softhca_unlock(&qp->rq.lock);
	softhca_unlock(&qp->sq.lock);
}

/*
 * The states in which work may be posted, as mlx5 keeps them: a QP in
 * RESET takes no WR, one in INIT or RTR no send (IB C10-22, C10-25,
 * C10-29); the post returns EINVAL. Receives are allowed from INIT on,
 * sends from RTS on, both until the next RESET. A QP the HCA moved to
 * ERR still takes WRs, which flush.
 */
static void qp_note_state(struct softhca_qp *qp, enum ibv_qp_state state)
{
	switch (state) {
	case IBV_QPS_RESET:
		__atomic_store_n(&qp->sq.post_ok, false, __ATOMIC_RELAXED);
		__atomic_store_n(&qp->rq.post_ok, false, __ATOMIC_RELAXED);
		break;
	case IBV_QPS_INIT:
		__atomic_store_n(&qp->rq.post_ok, true, __ATOMIC_RELAXED);
		break;
	case IBV_QPS_RTS:
		__atomic_store_n(&qp->sq.post_ok, true, __ATOMIC_RELAXED);
		break;
	default:
		break;
	}
}

int softhca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		      int attr_mask)
{
	struct softhca_qp *qp = to_sqp(ibqp);
	struct ibv_modify_qp cmd;
	int ret;

	memset(&cmd, 0, sizeof(cmd));
	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (ret || !(attr_mask & IBV_QP_STATE) || qp->xrc_tgt)
		return ret;
	if (attr->qp_state == IBV_QPS_RESET)
		qp_reset_queues(qp);
	qp_note_state(qp, attr->qp_state);
	return 0;
}

int softhca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	memset(&cmd, 0, sizeof(cmd));
	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

/*
 * Destroy in the kernel first (after that no CQE of this QP is written),
 * then, under both CQ locks so that no poll_cq is between a lookup and its
 * use, drop its CQEs and its table entry.
 */
int softhca_destroy_qp(struct ibv_qp *ibqp)
{
	struct softhca_context *ctx = to_sctx(ibqp->context);
	struct softhca_qp *qp = to_sqp(ibqp);
	struct softhca_cq *scq = to_scq(ibqp->send_cq);
	struct softhca_cq *rcq = to_scq(ibqp->recv_cq);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	if (qp->xrc_tgt) {
		free(qp);
		return 0;
	}

	lock_cqs(scq, rcq);
	clean_cqs(qp);
	qp_table_remove(ctx, qp);
	unlock_cqs(scq, rcq);

	munmap(qp->map, qp->map_size);
	pd_hold(ibqp->pd, -1);
	qp_free_sw(qp);
	return 0;
}
