// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: counters. Q counter sets (ALLOC_Q_COUNTER,
 * DEALLOC_Q_COUNTER, QUERY_Q_COUNTER, SET_QP_COUNTER, as mlx5's q counters)
 * and the HCA-wide counts (QUERY_HCA_COUNTERS).
 *
 * The engine counts per QP, each side of a QP in its own array written
 * only under that side's lock (engine.h: req_cnt under exec_lock, resp_cnt
 * under resp_lock), so counting costs the transfer path no atomic and no
 * shared cache line. A set adds up its QPs' arrays when it is queried; the
 * QPs that joined or left it are accounted for in its @left (model.h), so
 * a QP can move between sets while its engine counts. Every set and every
 * QP's membership is under hca->qcnt_lock.
 */
#include <linux/slab.h>

#include "engine.h"
#include "wire.h"

void hca_qcnt_init(struct hca *hca)
{
	mutex_init(&hca->qcnt_lock);
	xa_init_flags(&hca->qcnts, XA_FLAGS_ALLOC1);
	hca->qcnt_default.id = HCA_Q_COUNTER_DEFAULT;
	INIT_LIST_HEAD(&hca->qcnt_default.qps);
}

void hca_qcnt_fini(struct hca *hca)
{
	struct hca_qcnt_set *set;
	unsigned long id;

	WARN_ONCE(!list_empty(&hca->qcnt_default.qps),
		  "softhca: QPs left in the default Q counter\n");
	WARN_ONCE(!xa_empty(&hca->qcnts), "softhca: Q counters leaked\n");
	xa_for_each(&hca->qcnts, id, set)
		kfree(set);
	xa_destroy(&hca->qcnts);
	mutex_destroy(&hca->qcnt_lock);
}

/* The set @id, or NULL; under qcnt_lock. */
static struct hca_qcnt_set *hca_qcnt_find(struct hca *hca, u32 id)
{
	if (id == HCA_Q_COUNTER_DEFAULT)
		return &hca->qcnt_default;
	return xa_load(&hca->qcnts, id);
}

/* What @qp's engine counted so far, both sides, added into @sum. */
static void hca_qcnt_qp_sum(struct hca_qp *qp, u64 *sum)
{
	const struct hca_engine_qp *e = qp->eng;
	unsigned int i;

	for (i = 0; i < HCA_QCNT_NUM; i++)
		sum[i] += READ_ONCE(e->req_cnt[i]) + READ_ONCE(e->resp_cnt[i]);
}

/*
 * Move @qp from its set (NULL: none yet) into @to (NULL: none any more);
 * under qcnt_lock. One reading of its counts serves both sets: what the
 * engine counts after it belongs to @to.
 */
static void hca_qcnt_move(struct hca_qp *qp, struct hca_qcnt_set *to)
{
	u64 now[HCA_QCNT_NUM] = {};
	unsigned int i;

	hca_qcnt_qp_sum(qp, now);
	for (i = 0; i < HCA_QCNT_NUM; i++) {
		if (qp->qcnt)
			qp->qcnt->left[i] += now[i];
		if (to)
			to->left[i] -= now[i];
	}
	if (qp->qcnt)
		list_del(&qp->qcnt_node);
	if (to)
		list_add_tail(&qp->qcnt_node, &to->qps);
	qp->qcnt = to;
}

void hca_qcnt_qp_join(struct hca_qp *qp)
{
	struct hca *hca = qp->hca;

	mutex_lock(&hca->qcnt_lock);
	hca_qcnt_move(qp, &hca->qcnt_default);
	mutex_unlock(&hca->qcnt_lock);
}

void hca_qcnt_qp_leave(struct hca_qp *qp)
{
	struct hca *hca = qp->hca;

	mutex_lock(&hca->qcnt_lock);
	hca_qcnt_move(qp, NULL);
	mutex_unlock(&hca->qcnt_lock);
}

u32 hca_qcnt_qp_id(struct hca_qp *qp)
{
	struct hca *hca = qp->hca;
	u32 id;

	mutex_lock(&hca->qcnt_lock);
	id = qp->qcnt ? qp->qcnt->id : HCA_Q_COUNTER_DEFAULT;
	mutex_unlock(&hca->qcnt_lock);
	return id;
}

int hca_cmd_alloc_q_counter(struct hca *hca, const void *inbox, void *outbox)
{
	struct hca_cmd_alloc_q_counter_out *out = outbox;
	struct hca_qcnt_set *set;
	u32 id;
	int err;

	set = kzalloc(sizeof(*set), GFP_KERNEL);
	if (!set)
		return -ENOMEM;
	INIT_LIST_HEAD(&set->qps);
	mutex_lock(&hca->qcnt_lock);
	err = xa_alloc(&hca->qcnts, &id, set,
		       XA_LIMIT(1, hca->caps->max_q_counters), GFP_KERNEL);
	if (!err)
		set->id = id;
	mutex_unlock(&hca->qcnt_lock);
	if (err) {
		kfree(set);
		return err == -EBUSY ? -ENOSPC : err;
	}
	out->counter_id = id;
	return 0;
}

int hca_cmd_dealloc_q_counter(struct hca *hca, const void *inbox,
			      void *outbox)
{
	const struct hca_cmd_dealloc_q_counter_in *in = inbox;
	struct hca_qcnt_set *set;
	int err = 0;

	if (in->counter_id == HCA_Q_COUNTER_DEFAULT)
		return -EINVAL;
	mutex_lock(&hca->qcnt_lock);
	set = xa_load(&hca->qcnts, in->counter_id);
	if (!set)
		err = -EINVAL;
	else if (!list_empty(&set->qps))
		err = -EBUSY;
	else
		xa_erase(&hca->qcnts, in->counter_id);
	mutex_unlock(&hca->qcnt_lock);
	if (!err)
		kfree(set);
	return err;
}

int hca_cmd_query_q_counter(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_query_q_counter_in *in = inbox;
	struct hca_cmd_query_q_counter_out *out = outbox;
	struct hca_qcnt_set *set;
	struct hca_qp *qp;
	int err = 0;

	mutex_lock(&hca->qcnt_lock);
	set = hca_qcnt_find(hca, in->counter_id);
	if (set) {
		memcpy(out->value, set->left, sizeof(out->value));
		list_for_each_entry(qp, &set->qps, qcnt_node)
			hca_qcnt_qp_sum(qp, out->value);
	} else {
		err = -EINVAL;
	}
	mutex_unlock(&hca->qcnt_lock);
	return err;
}

int hca_cmd_set_qp_counter(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_set_qp_counter_in *in = inbox;
	struct hca_qcnt_set *set;
	struct hca_qp *qp;
	int err = 0;

	qp = hca_qp_get(hca, in->qpn);
	if (!qp)
		return -EINVAL;
	mutex_lock(&hca->qcnt_lock);
	set = hca_qcnt_find(hca, in->counter_id);
	if (!set)
		err = -EINVAL;
	else if (qp->qcnt != set)
		hca_qcnt_move(qp, set);
	mutex_unlock(&hca->qcnt_lock);
	hca_qp_put(qp);
	return err;
}

int hca_cmd_query_hca_counters(struct hca *hca, const void *inbox,
			       void *outbox)
{
	struct hca_cmd_query_hca_counters_out *out = outbox;

	out->value[HCA_HCNT_CQ_OVERRUNS] = atomic64_read(&hca->cq_overruns);
	out->value[HCA_HCNT_RX_NO_QP_DROPS] =
		atomic64_read(&hca->rx_no_qp_drops);
	hca_engine_counters(hca, &out->value[HCA_HCNT_WAKEUP_CALLS],
			     &out->value[HCA_HCNT_ENGINE_BACKOFFS]);
	hca_wire_counters(hca, &out->value[HCA_HCNT_WIRE_FIRST]);
	hca_odp_counters(hca, &out->value[HCA_HCNT_ODP_FIRST]);
	return 0;
}
