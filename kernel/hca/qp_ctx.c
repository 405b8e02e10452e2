// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: QP contexts (CREATE_QP, DESTROY_QP, MODIFY_QP,
 * QUERY_QP), QP numbers, the QP type table and the application of state
 * changes. Execution is the engine's (engine.c); this file tells it about
 * every state change.
 *
 * QPNs are 24 bits, handed out cyclically from 2 (0 and 1 are the special
 * QPs of InfiniBand), at most caps->max_qp at a time. The GSI QP is QPN 1,
 * one per HCA, and only a kernel (privileged) QP. Lookups are RCU plus
 * refcount_inc_not_zero(); see model.h for the DESTROY_QP sequence.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "engine.h"

#define HCA_QPN_GSI		1
#define HCA_QPN_MIN		2
#define HCA_QP_FLAGS_ALL	(HCA_QP_SIGNATURE | HCA_QP_SQ_SIG_ALL | \
				 HCA_QP_PRIVILEGED | HCA_QP_BLOCK_MCAST_LOOPBACK)
/* Every HCA_QP_ATTR_* bit: QKEY is the highest. */
#define HCA_QP_ATTR_ALL	((HCA_QP_ATTR_QKEY << 1) - 1)

/* What every QP type has: its port, P_Key, state notification. */
#define HCA_QP_ATTR_COMMON	(HCA_QP_ATTR_PORT | HCA_QP_ATTR_PKEY_INDEX | \
				 HCA_QP_ATTR_SQD_NOTIFY | HCA_QP_ATTR_SQ_PSN)

/*
 * The QP types (model.h): a connected QP has a path and a peer, and if it
 * is reliable (RC, not UC) the retry and RDMA READ/atomic attributes; a
 * datagram QP a Q_Key and the path MTU of its
 * port, which the driver gives it. The GSI QP is a datagram QP at QPN 1
 * that sends and receives the MADs (IBA 13.5.1); it joins no group. XRC
 * splits a reliable connection in two (IBA 9.8.x): the initiator sends
 * RC's opcodes, each WQE naming the target's SRQ; the target receives.
 */
static const struct hca_qp_type hca_qp_types[HCA_QP_ST_CNT];

#define HCA_QP_ATTR_RELIABLE	(HCA_QP_ATTR_COMMON | HCA_QP_ATTR_ACCESS | \
				 HCA_QP_ATTR_PATH | HCA_QP_ATTR_PATH_MTU | \
				 HCA_QP_ATTR_DEST_QPN | HCA_QP_ATTR_RQ_PSN | \
				 HCA_QP_ATTR_MIN_RNR_TIMER | \
				 HCA_QP_ATTR_RNR_RETRY | \
				 HCA_QP_ATTR_RETRY_CNT | HCA_QP_ATTR_TIMEOUT | \
				 HCA_QP_ATTR_MAX_RD_ATOMIC | \
				 HCA_QP_ATTR_MAX_DEST_RD_ATOMIC)

static const struct hca_qp_type hca_qp_types[HCA_QP_ST_CNT] = {
	[HCA_QP_ST_RC] = {
		.name = "RC", .tp = SOFTHCA_TP_RC, .sq_err_state = HCA_QPS_ERR,
		.peer = &hca_qp_types[HCA_QP_ST_RC],
		.attrs = HCA_QP_ATTR_RELIABLE,
	},
	[HCA_QP_ST_UC] = {
		.name = "UC", .tp = SOFTHCA_TP_UC, .sq_err_state = HCA_QPS_ERR,
		.unreliable = true, .peer = &hca_qp_types[HCA_QP_ST_UC],
		.attrs = HCA_QP_ATTR_COMMON | HCA_QP_ATTR_ACCESS |
			 HCA_QP_ATTR_PATH | HCA_QP_ATTR_PATH_MTU |
			 HCA_QP_ATTR_DEST_QPN | HCA_QP_ATTR_RQ_PSN,
	},
	[HCA_QP_ST_XRC_INI] = {
		.name = "XRC_INI", .tp = SOFTHCA_TP_XRC,
		.sq_err_state = HCA_QPS_ERR, .send_only = true,
		.peer = &hca_qp_types[HCA_QP_ST_XRC_TGT],
		.attrs = HCA_QP_ATTR_RELIABLE,
	},
	[HCA_QP_ST_XRC_TGT] = {
		.name = "XRC_TGT", .tp = SOFTHCA_TP_XRC,
		.sq_err_state = HCA_QPS_ERR, .xrc_tgt = true,
		.peer = &hca_qp_types[HCA_QP_ST_XRC_INI],
		.attrs = HCA_QP_ATTR_RELIABLE,
	},
	[HCA_QP_ST_UD] = {
		.name = "UD", .tp = SOFTHCA_TP_UD, .sq_err_state = HCA_QPS_SQE,
		.mcast = true, .sends_rung_at_destroy = true,
		.attrs = HCA_QP_ATTR_COMMON | HCA_QP_ATTR_QKEY |
			 HCA_QP_ATTR_PATH_MTU,
	},
	[HCA_QP_ST_GSI] = {
		.name = "GSI", .tp = SOFTHCA_TP_UD, .sq_err_state = HCA_QPS_SQE,
		.privileged = true, .qpn = HCA_QPN_GSI,
		.sends_rung_at_destroy = true,
		.attrs = HCA_QP_ATTR_COMMON | HCA_QP_ATTR_QKEY |
			 HCA_QP_ATTR_PATH_MTU,
	},
};

/* The row of @st, or NULL. */
static const struct hca_qp_type *hca_qp_type_of(u32 st)
{
	return st < HCA_QP_ST_CNT && hca_qp_types[st].name ?
	       &hca_qp_types[st] : NULL;
}

static bool hca_qp_in_valid(struct hca *hca,
			     const struct hca_cmd_create_qp_in *in)
{
	const struct hca_caps *caps = hca->caps;
	const struct hca_qp_type *type = hca_qp_type_of(in->st);
	u32 max_stride = roundup_pow_of_two(SOFTHCA_DS_SIZE *
					    (caps->max_recv_sge + 1));

	if ((in->flags & ~HCA_QP_FLAGS_ALL) || !type)
		return false;
	/* An XRC target has no PD: each SRQ it takes into has one. */
	if (type->xrc_tgt ? in->pdn : !hca_pd_valid(hca, in->pdn))
		return false;
	if (type->privileged && !(in->flags & HCA_QP_PRIVILEGED))
		return false;
	/* Only a multicast QP receives multicast, its own included. */
	if ((in->flags & HCA_QP_BLOCK_MCAST_LOOPBACK) && !type->mcast)
		return false;
	if (!in->sq_buf || !in->dbr || !is_power_of_2(in->sq_wqebb_cnt) ||
	    in->sq_wqebb_cnt > caps->max_sq_wqebbs)
		return false;
	if (in->rq_wqe_cnt &&
	    (!in->rq_buf || !is_power_of_2(in->rq_wqe_cnt) ||
	     in->rq_wqe_cnt > caps->max_rq_wqes))
		return false;
	/* An SRQ is the QP's receive queue: it has none of its own. */
	if (in->srqn && in->rq_wqe_cnt)
		return false;
	/* XRC: no receive queue; a target no CQ and a domain (model.h). */
	if ((type->send_only || type->xrc_tgt) &&
	    (in->rq_wqe_cnt || in->srqn || in->recv_cqn))
		return false;
	if (type->xrc_tgt ? in->send_cqn || !in->xrcdn : in->xrcdn)
		return false;
	if (in->rq_wqe_shift < SOFTHCA_DS_SHIFT || in->rq_wqe_shift > 31 ||
	    BIT(in->rq_wqe_shift) > max_stride)
		return false;
	if (!in->sq_max_wqebbs ||
	    in->sq_max_wqebbs > caps->max_wqe_size / SOFTHCA_SEND_WQE_BB ||
	    in->sq_max_wqebbs > in->sq_wqebb_cnt)
		return false;
	return in->max_send_sge <= caps->max_send_sge &&
	       in->max_inline_data <= caps->max_inline_data;
}

/*
 * Reserve the QPN of a new QP of @type: hca_qp_get() does not find it
 * before it is stored. A special QP has its own (-EEXIST when it is
 * taken), the others the next free one from HCA_QPN_MIN.
 */
static int hca_qpn_reserve(struct hca *hca, const struct hca_qp_type *type,
			   u32 *qpn)
{
	int err;

	if (type->qpn) {
		*qpn = type->qpn;
		err = xa_insert(&hca->qps, type->qpn, NULL, GFP_KERNEL);
		return err == -EBUSY ? -EEXIST : err;
	}
	err = xa_alloc_cyclic(&hca->qps, qpn, NULL,
			      XA_LIMIT(HCA_QPN_MIN, SOFTHCA_24BIT_MASK),
			      &hca->qp_next, GFP_KERNEL);
	if (err == -EBUSY)
		return -ENOSPC;
	return err < 0 ? err : 0;
}

/*
 * CREATE_QP on SRQ @srqn: a reference, and one more QP attached, under the
 * SRQ index's lock so that DESTROY_SRQ either sees it or finds no SRQ.
 */
static int hca_qp_srq_attach(struct hca *hca, struct hca_qp *qp, u32 srqn)
{
	struct hca_srq *srq;

	xa_lock(&hca->srqs);
	srq = xa_load(&hca->srqs, srqn);
	if (srq && refcount_inc_not_zero(&srq->users))
		atomic_inc(&srq->qps);
	else
		srq = NULL;
	xa_unlock(&hca->srqs);
	qp->srq = srq;
	return srq ? 0 : -EINVAL;
}

static void hca_qp_srq_detach(struct hca_qp *qp)
{
	if (!qp->srq)
		return;
	atomic_dec(&qp->srq->qps);
	hca_srq_put(qp->srq);
	qp->srq = NULL;
}

/* A QP's CQs: its send CQ, and a receive CQ unless it only sends. */
static int hca_qp_cqs_get(struct hca *hca, struct hca_qp *qp,
			  const struct hca_cmd_create_qp_in *in)
{
	qp->send_cq = hca_cq_get(hca, in->send_cqn);
	if (!qp->send_cq)
		return -EINVAL;
	if (qp->type->send_only)
		return 0;
	qp->recv_cq = hca_cq_get(hca, in->recv_cqn);
	return qp->recv_cq ? 0 : -EINVAL;
}

/* The CQ references, or an XRC target's domain. */
static void hca_qp_cqs_put(struct hca_qp *qp)
{
	if (qp->recv_cq)
		hca_cq_put(qp->recv_cq);
	if (qp->send_cq)
		hca_cq_put(qp->send_cq);
	if (qp->xrcdn)
		hca_xrcd_release(qp->hca, qp->xrcdn);
}

int hca_cmd_create_qp(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_create_qp_in *in = inbox;
	struct hca_cmd_create_qp_out *out = outbox;
	struct hca_db_area *db;
	struct hca_qp *qp;
	void *old;
	u32 qpn;
	int err;

	if (!hca_qp_in_valid(hca, in))
		return -EINVAL;
	if (atomic_inc_return(&hca->num_qps) > hca->caps->max_qp) {
		err = -ENOSPC;
		goto err_count;
	}

	qp = kzalloc(sizeof(*qp), GFP_KERNEL);
	if (!qp) {
		err = -ENOMEM;
		goto err_count;
	}
	qp->hca = hca;
	qp->type = hca_qp_type_of(in->st);
	/* The PD number the engine checks keys against (model.h). */
	qp->pdn = in->pdn |
		  (in->flags & HCA_QP_PRIVILEGED ? HCA_PDN_RLKEY : 0);
	qp->sq_buf = in->sq_buf;
	qp->sq_wqebb_cnt = in->sq_wqebb_cnt;
	qp->rq_buf = in->rq_wqe_cnt ? in->rq_buf : NULL;
	qp->rq_wqe_cnt = in->rq_wqe_cnt;
	qp->rq_wqe_shift = in->rq_wqe_shift;
	qp->sq_max_wqebbs = in->sq_max_wqebbs;
	qp->max_send_sge = in->max_send_sge;
	qp->max_inline_data = in->max_inline_data;
	qp->dbr = in->dbr;
	qp->flags = in->flags;
	refcount_set(&qp->users, 1);
	init_completion(&qp->free);
	spin_lock_init(&qp->lock);
	qp->state = HCA_QPS_RESET;
	qp->attrs_gen = 1;

	err = -EINVAL;
	db = hca_uar_db(hca, in->uar_index);
	if (!db)
		goto err_free;
	if (in->xrcdn) {
		err = hca_xrcd_hold(hca, in->xrcdn);
		if (err)
			goto err_free;
		qp->xrcdn = in->xrcdn;
	} else {
		err = hca_qp_cqs_get(hca, qp, in);
		if (err)
			goto err_free;
	}
	if (in->srqn) {
		err = hca_qp_srq_attach(hca, qp, in->srqn);
		if (err)
			goto err_free;
	}

	err = hca_qpn_reserve(hca, qp->type, &qpn);
	if (err)
		goto err_free;
	qp->qpn = qpn;

	err = hca_engine_qp_init(qp);
	if (err)
		goto err_erase;
	err = hca_db_slot_alloc(db, &qp->db, HCA_DB_QP);
	if (err)
		goto err_engine;
	hca_qcnt_qp_join(qp);

	old = xa_store(&hca->qps, qpn, qp, GFP_KERNEL);
	if (xa_is_err(old)) {
		err = xa_err(old);
		goto err_slot;
	}
	hca_db_publish(&qp->db);
	out->qpn = qpn;
	out->db_slot = qp->db.slot;
	out->db_thread = qp->db.thread;
	return 0;

err_slot:
	hca_qcnt_qp_leave(qp);
	hca_db_slot_free(&qp->db);
err_engine:
	hca_engine_qp_fini(qp);
err_erase:
	xa_erase(&hca->qps, qpn);
err_free:
	hca_qp_srq_detach(qp);
	hca_qp_cqs_put(qp);
	kfree(qp);
err_count:
	atomic_dec(&hca->num_qps);
	return err;
}

/* Move @qp to RESET (DESTROY_QP); the engine forgets it. */
static void hca_qp_reset(struct hca_qp *qp)
{
	enum hca_qp_state old;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	old = qp->state;
	qp->state = HCA_QPS_RESET;
	memset(&qp->attrs, 0, sizeof(qp->attrs));
	/* The attributes, then the generation the engine's copies check. */
	smp_store_release(&qp->attrs_gen, qp->attrs_gen + 1);
	spin_unlock_irqrestore(&qp->lock, flags);
	if (old != HCA_QPS_RESET) {
		hca_dbg_qp(qp, "%s -> RESET (destroy)\n",
			    hca_qp_state_name(old));
		hca_engine_qp_state_changed(qp, old);
	}
}

int hca_cmd_destroy_qp(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_destroy_qp_in *in = inbox;
	struct hca_qp *qp;

	/* A reserved QPN (CREATE_QP still running) loads as NULL. */
	xa_lock(&hca->qps);
	qp = xa_load(&hca->qps, in->qpn);
	if (!qp) {
		xa_unlock(&hca->qps);
		return -EINVAL;
	}
	refcount_inc(&qp->users);
	xa_unlock(&hca->qps);

	/*
	 * A NIC has sent a datagram long before a later command reaches
	 * it; ours may not have run yet, and a sender that destroys its QP
	 * right after posting (mckey) would lose them.
	 */
	if (qp->type->sends_rung_at_destroy)
		hca_engine_qp_send_rung(qp);
	/* As mlx5: a QP is taken to RESET before it is destroyed. */
	hca_qp_reset(qp);

	xa_lock(&hca->qps);
	if (xa_load(&hca->qps, in->qpn) != qp) {
		/* A concurrent DESTROY_QP of the same QPN won. */
		xa_unlock(&hca->qps);
		hca_qp_put(qp);
		return -EINVAL;
	}
	__xa_erase(&hca->qps, in->qpn);
	xa_unlock(&hca->qps);
	/*
	 * No datagram reaches it through a multicast group from here, and
	 * no attach can add it again (it is no longer found).
	 */
	hca_fabric_mcast_detach_all(qp);
	/* No claim finds it now; one that did holds a reference. */
	hca_db_slot_free(&qp->db);
	/* Before kfree_rcu(): cached routes to it are stale from here. */
	hca_fabric_changed();

	hca_qp_put(qp);
	if (!refcount_dec_and_test(&qp->users))
		wait_for_completion(&qp->free);

	/* No executor counts for it any more: its set keeps the counts. */
	hca_qcnt_qp_leave(qp);
	hca_engine_qp_fini(qp);
	hca_qp_srq_detach(qp);
	hca_qp_cqs_put(qp);
	atomic_dec(&hca->num_qps);
	kfree_rcu(qp, rcu);
	return 0;
}

/* Copy the attributes selected by @mask from @src to @dst. */
static void hca_qp_apply(struct hca_qp_attrs *dst,
			  const struct hca_qp_attrs *src, u32 mask)
{
	if (mask & HCA_QP_ATTR_ACCESS)
		dst->access_flags = src->access_flags;
	if (mask & HCA_QP_ATTR_PATH) {
		memcpy(dst->dgid, src->dgid, sizeof(dst->dgid));
		dst->sgid_index = src->sgid_index;
		dst->hop_limit = src->hop_limit;
		dst->traffic_class = src->traffic_class;
		dst->flow_label = src->flow_label;
	}
	if (mask & HCA_QP_ATTR_PATH_MTU)
		dst->path_mtu = src->path_mtu;
	if (mask & HCA_QP_ATTR_DEST_QPN)
		dst->dest_qpn = src->dest_qpn;
	if (mask & HCA_QP_ATTR_RQ_PSN)
		dst->rq_psn = src->rq_psn;
	if (mask & HCA_QP_ATTR_SQ_PSN)
		dst->sq_psn = src->sq_psn;
	if (mask & HCA_QP_ATTR_MIN_RNR_TIMER)
		dst->min_rnr_timer = src->min_rnr_timer;
	if (mask & HCA_QP_ATTR_RNR_RETRY)
		dst->rnr_retry = src->rnr_retry;
	if (mask & HCA_QP_ATTR_RETRY_CNT)
		dst->retry_cnt = src->retry_cnt;
	if (mask & HCA_QP_ATTR_TIMEOUT)
		dst->timeout = src->timeout;
	if (mask & HCA_QP_ATTR_MAX_RD_ATOMIC)
		dst->max_rd_atomic = src->max_rd_atomic;
	if (mask & HCA_QP_ATTR_MAX_DEST_RD_ATOMIC)
		dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	if (mask & HCA_QP_ATTR_PORT)
		dst->port = src->port;
	if (mask & HCA_QP_ATTR_PKEY_INDEX)
		dst->pkey_index = src->pkey_index;
	if (mask & HCA_QP_ATTR_SQD_NOTIFY)
		dst->sqd_notify = src->sqd_notify;
	if (mask & HCA_QP_ATTR_QKEY)
		dst->qkey = src->qkey;
}

/* What firmware checks itself; the driver checked the IB rules before. */
static bool hca_qp_attrs_valid(struct hca *hca,
				const struct hca_cmd_modify_qp_in *in)
{
	const struct hca_caps *caps = hca->caps;
	const struct hca_qp_attrs *a = &in->attrs;
	u32 mask = in->attr_mask;

	if (in->cur_state > HCA_QPS_ERR || in->new_state > HCA_QPS_ERR ||
	    (mask & ~HCA_QP_ATTR_ALL))
		return false;
	if ((mask & HCA_QP_ATTR_ACCESS) &&
	    (a->access_flags & ~(HCA_ACCESS_REMOTE_WRITE |
				 HCA_ACCESS_REMOTE_READ |
				 HCA_ACCESS_REMOTE_ATOMIC)))
		return false;
	if ((mask & HCA_QP_ATTR_PATH) && a->sgid_index >= caps->gid_tbl_len)
		return false;
	if ((mask & HCA_QP_ATTR_PATH_MTU) &&
	    (a->path_mtu < 256 || a->path_mtu > caps->max_mtu ||
	     !is_power_of_2(a->path_mtu)))
		return false;
	if ((mask & HCA_QP_ATTR_DEST_QPN) && a->dest_qpn > SOFTHCA_24BIT_MASK)
		return false;
	if ((mask & HCA_QP_ATTR_RQ_PSN) && a->rq_psn > SOFTHCA_24BIT_MASK)
		return false;
	if ((mask & HCA_QP_ATTR_SQ_PSN) && a->sq_psn > SOFTHCA_24BIT_MASK)
		return false;
	if ((mask & HCA_QP_ATTR_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return false;
	if ((mask & HCA_QP_ATTR_RNR_RETRY) && a->rnr_retry > 7)
		return false;
	if ((mask & HCA_QP_ATTR_RETRY_CNT) && a->retry_cnt > 7)
		return false;
	if ((mask & HCA_QP_ATTR_TIMEOUT) && a->timeout > 31)
		return false;
	if ((mask & HCA_QP_ATTR_MAX_RD_ATOMIC) &&
	    a->max_rd_atomic > caps->max_qp_init_rd_atom)
		return false;
	if ((mask & HCA_QP_ATTR_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > caps->max_qp_rd_atom)
		return false;
	if ((mask & HCA_QP_ATTR_PORT) && a->port != 1)
		return false;
	if ((mask & HCA_QP_ATTR_PKEY_INDEX) &&
	    a->pkey_index >= caps->pkey_tbl_len)
		return false;
	return true;
}

/*
 * What the QP's type allows: only its attributes (-EINVAL), and a
 * privileged Q_Key only for a privileged QP (-EPERM): the WQE path uses
 * the QP's own Q_Key for any with bit 31 set, so a user QP never sends
 * one (ud.c).
 */
static int hca_qp_attrs_allowed(const struct hca_qp *qp,
				const struct hca_cmd_modify_qp_in *in)
{
	if (in->new_state == HCA_QPS_RESET)
		return 0;
	if (in->attr_mask & ~qp->type->attrs)
		return -EINVAL;
	if ((in->attr_mask & HCA_QP_ATTR_QKEY) &&
	    (in->attrs.qkey & SOFTHCA_QKEY_PRIVILEGED) &&
	    !(qp->flags & HCA_QP_PRIVILEGED))
		return -EPERM;
	return 0;
}

int hca_cmd_modify_qp(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_modify_qp_in *in = inbox;
	enum hca_qp_state old;
	struct hca_qp *qp;
	unsigned long flags;
	int err = 0;

	if (!hca_qp_attrs_valid(hca, in)) {
		hca_dbg_qpn(hca, in->qpn, "%s -> %s: attribute out of range (mask 0x%x)\n",
			     hca_qp_state_name(in->cur_state),
			     hca_qp_state_name(in->new_state), in->attr_mask);
		return -EINVAL;
	}
	qp = hca_qp_get(hca, in->qpn);
	if (!qp) {
		hca_dbg_qpn(hca, in->qpn, "no such QP\n");
		return -EINVAL;
	}
	err = hca_qp_attrs_allowed(qp, in);
	if (err) {
		hca_dbg_qp(qp, "%s QP: attribute mask 0x%x, Q_Key 0x%x: %pe\n",
			   qp->type->name, in->attr_mask, in->attrs.qkey,
			   ERR_PTR(err));
		hca_qp_put(qp);
		return err;
	}

	spin_lock_irqsave(&qp->lock, flags);
	old = qp->state;
	if (old != in->cur_state) {
		/* The engine moved it (to ERR) since the driver looked. */
		err = -EAGAIN;
	} else if (in->new_state == HCA_QPS_RESET) {
		/* A QP in RESET keeps no context. */
		qp->state = HCA_QPS_RESET;
		memset(&qp->attrs, 0, sizeof(qp->attrs));
	} else {
		hca_qp_apply(&qp->attrs, &in->attrs, in->attr_mask);
		qp->state = in->new_state;
		/* Each entry into SQD asks for at most one SQ_DRAINED. */
		if (in->new_state == HCA_QPS_SQD && old != HCA_QPS_SQD)
			WRITE_ONCE(qp->sqd_event, qp->attrs.sqd_notify);
	}
	if (!err) /* The attributes, then the generation the copies check. */
		smp_store_release(&qp->attrs_gen, qp->attrs_gen + 1);
	spin_unlock_irqrestore(&qp->lock, flags);

	if (err) {
		hca_dbg_qp(qp, "%s -> %s: the QP is in %s\n",
			   hca_qp_state_name(in->cur_state),
			   hca_qp_state_name(in->new_state),
			   hca_qp_state_name(old));
	} else if (old != in->new_state) {
		hca_dbg_qp(qp, "%s -> %s\n", hca_qp_state_name(old),
			   hca_qp_state_name(in->new_state));
		hca_engine_qp_state_changed(qp, old);
	}
	hca_qp_put(qp);
	return err;
}

static_assert(HCA_WAIT_NONE == (int)HCA_QP_WAIT_NONE);
static_assert(HCA_WAIT_RNR == (int)HCA_QP_WAIT_RNR);
static_assert(HCA_WAIT_TRANSPORT == (int)HCA_QP_WAIT_ACK);

/*
 * The engine's side of QUERY_QP, read without its locks (an executor may
 * be running the QP): a snapshot for diagnostics, each field as it was
 * at some moment.
 */
static void hca_qp_query_engine(struct hca_qp *qp,
				 struct hca_cmd_query_qp_out *out)
{
	struct hca_engine_qp *e = qp->eng;
	bool waiting = READ_ONCE(e->wait_until);

	out->send_cqn = qp->send_cq ? qp->send_cq->cqn : 0;
	out->recv_cqn = qp->recv_cq ? qp->recv_cq->cqn : 0;
	out->q_counter = hca_qcnt_qp_id(qp);
	out->sq_pi = hca_sq_posted(qp);
	out->sq_ci = READ_ONCE(qp->sq_ci);
	out->rq_pi = qp->rq_wqe_cnt ? hca_rq_posted(qp) : 0;
	out->rq_ci = READ_ONCE(qp->rq_ci);
	out->wait = waiting ? READ_ONCE(e->wait_kind) : HCA_QP_WAIT_NONE;
	out->rnr_retry_left = waiting ? READ_ONCE(e->rnr_left) : 0;
	out->retry_left = waiting ? READ_ONCE(e->retry_left) : 0;
	out->rsvd = 0;
}

int hca_cmd_query_qp(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_query_qp_in *in = inbox;
	struct hca_cmd_query_qp_out *out = outbox;
	struct hca_qp *qp;
	unsigned long flags;

	qp = hca_qp_get(hca, in->qpn);
	if (!qp)
		return -EINVAL;
	spin_lock_irqsave(&qp->lock, flags);
	out->state = qp->state;
	out->sq_draining = qp->state == HCA_QPS_SQD && qp->sq_draining;
	out->attrs = qp->attrs;
	spin_unlock_irqrestore(&qp->lock, flags);
	hca_qp_query_engine(qp, out);
	hca_qp_put(qp);
	return 0;
}

struct hca_qp *hca_qp_get(struct hca *hca, u32 qpn)
{
	struct hca_qp *qp;

	rcu_read_lock();
	qp = xa_load(&hca->qps, qpn);
	if (qp && !refcount_inc_not_zero(&qp->users))
		qp = NULL;
	rcu_read_unlock();
	return qp;
}
