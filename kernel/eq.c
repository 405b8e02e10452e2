// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: event queues, seed-map.md §5 step 3 (design.md §6). See
 * Documentation/events.md for the chain, the teardown order and numbers.
 *
 * Every device has one completion EQ per completion vector and one async
 * EQ with a vector of its own; the vectors are real IRQs (irq.c), named
 * "softhca-<dev>-comp<i>" and "softhca-<dev>-async". An EQ ring lives in
 * kernel memory the driver allocates; the HCA model writes the EQEs and
 * sends the vector's MSI-X message, i.e. calls shca_vec_raise().
 *
 * The chain: hard-IRQ handler (irq.c) -> the vector's atomic notifier chain
 * -> shca_eq_notify(): owner check, dma_rmb(), dispatch by type, then the
 * EQ doorbell (consumer index + re-arm). COMP: CQN lookup -> the CQ goes on
 * its EQ's tasklet list -> tasklet -> ibcq->comp_handler(). Async: CQ and
 * QP events are handed to an ordered workqueue (object event handlers may
 * sleep), port changes go to ib_dispatch_event().
 *
 * CQ and QP tables: xarrays by number. Lookups happen only in the EQ
 * handlers, under RCU, and take a reference; unregister erases the entry,
 * waits for the handlers of every vector (synchronize_irq()), drops the
 * registration's reference and waits for the completion, so a tasklet or
 * event work holding one is waited for too.
 */
#include <linux/debugfs.h>
#include <linux/interrupt.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "softhca.h"

#define SHCA_COMP_EQ_LOG_SIZE	10	/* 1024 EQEs, as mlx5 */
#define SHCA_ASYNC_EQ_LOG_SIZE	8
#define SHCA_EQ_POLL_BUDGET	128	/* EQEs per interrupt, < ring size */
#define SHCA_EQ_TASKLET_BUDGET	64	/* CQs per tasklet run */
#define SHCA_TEST_CQN		0	/* never a CQN of the model */

/* Async events the async EQ takes (everything but COMP). */
#define SHCA_ASYNC_EVENTS (BIT_ULL(SOFTHCA_EVENT_TYPE_COMM_EST) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_SQ_DRAINED) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_CQ_ERROR) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_PORT_CHANGE) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR) | \
			   BIT_ULL(SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR) | \
			   BIT_ULL(SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED) | \
			   BIT_ULL(SOFTHCA_EVENT_TYPE_SRQ_CATAS_ERROR) | \
			   BIT_ULL(SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT) |	\
			   BIT_ULL(SOFTHCA_EVENT_TYPE_PAGE_FAULT))

/* raise -> handler / tasklet latency of single injections (debugfs) */
struct shca_lat {
	u64 n;
	u64 sum;
	u64 min;
	u64 max;
};

struct shca_eq {
	struct shca_eqs *eqs;
	struct shca_vec *vec;
	struct notifier_block nb;
	char name[16];			/* "comp<i>" or "async" */
	u32 index;			/* vector index */
	u32 eqn;
	bool async;
	bool created;			/* the model has it */
	struct softhca_eqe *ring;
	u32 log_size;
	u32 ci;				/* consumer index (the handler's) */

	/* CQs with a completion to deliver, run by the tasklet */
	spinlock_t tl_lock;
	struct list_head tl_list;
	struct tasklet_struct tasklet;
	struct shca_cq_ev test_cq;	/* SHCA_TEST_CQN on this EQ */

	/* Written by the handler (one CPU at a time) or the tasklet. */
	u64 irqs;			/* handler runs */
	u64 eqes;			/* EQEs consumed */
	u64 unknown;			/* no such CQ / QP, unknown type */
	u64 overflows;			/* EQ_OVERFLOW reports */
	u64 lost;			/* event work allocation failed */
	u64 comps;			/* comp handler calls (tasklet) */
	u64 test_comps;			/* deliveries to the test CQ */
	u64 t_irq;			/* ns of a single injection, for */
	u64 t_tasklet;			/* the handler and the test CQ */
	struct shca_lat lat_irq;
	struct shca_lat lat_tasklet;
};

struct shca_eqs {
	struct shca_dev *sdev;
	unsigned int ncomp;
	struct shca_vecs *vecs;
	struct xarray cqs;		/* CQN -> shca_cq_ev */
	struct xarray qps;		/* QPN -> shca_qp_ev */
	struct xarray srqs;		/* SRQN -> shca_qp_ev of an SRQ */
	struct workqueue_struct *wq;	/* CQ and QP events, in order */
	struct mutex test_lock;		/* the inject file */
	unsigned long fatal;		/* DEVICE_FATAL dispatched */
	struct shca_eq eq[];		/* ncomp completion EQs, then async */
};

/* A CQ or QP event, delivered in process context. */
struct shca_event_work {
	struct work_struct work;
	struct ib_event event;
	struct shca_cq_ev *cq;
	struct shca_qp_ev *qp;
};

static void shca_lat_add(struct shca_lat *lat, u64 ns)
{
	if (!lat->n || ns < lat->min)
		lat->min = ns;
	if (ns > lat->max)
		lat->max = ns;
	lat->sum += ns;
	lat->n++;
}

/* ---- CQ and QP tables -------------------------------------------------- */

static void shca_cq_ev_put(struct shca_cq_ev *ev)
{
	if (refcount_dec_and_test(&ev->ref))
		complete(&ev->free);
}

static void shca_qp_ev_put(struct shca_qp_ev *ev)
{
	if (refcount_dec_and_test(&ev->ref))
		complete(&ev->free);
}

/* In an EQ handler: the CQ with a reference, or NULL. */
static struct shca_cq_ev *shca_cq_ev_get(struct shca_eqs *eqs, u32 cqn)
{
	struct shca_cq_ev *ev;

	rcu_read_lock();
	ev = xa_load(&eqs->cqs, cqn);
	if (ev && !refcount_inc_not_zero(&ev->ref))
		ev = NULL;
	rcu_read_unlock();
	return ev;
}

static struct shca_qp_ev *shca_qp_ev_get(struct xarray *xa, u32 qpn)
{
	struct shca_qp_ev *ev;

	rcu_read_lock();
	ev = xa_load(xa, qpn);
	if (ev && !refcount_inc_not_zero(&ev->ref))
		ev = NULL;
	rcu_read_unlock();
	return ev;
}

/* Every lookup in flight (they run only in EQ handlers) has finished. */
static void shca_eqs_sync_handlers(struct shca_eqs *eqs)
{
	unsigned int i;

	for (i = 0; i <= eqs->ncomp; i++)
		synchronize_irq(shca_vec_irq(eqs->eq[i].vec));
}

static void shca_cq_comp_handler(struct shca_cq_ev *ev)
{
	struct ib_cq *ibcq = ev->ibcq;

	if (ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

u32 shca_comp_eqn(struct shca_dev *sdev, u32 comp_vector)
{
	struct shca_eqs *eqs = sdev->eqs;

	return eqs->eq[comp_vector % eqs->ncomp].eqn;
}

int shca_cq_ev_register(struct shca_dev *sdev, struct shca_cq_ev *ev,
			struct ib_cq *ibcq, u32 cqn, u32 comp_vector)
{
	struct shca_eqs *eqs = sdev->eqs;

	if (comp_vector >= eqs->ncomp || cqn == SHCA_TEST_CQN)
		return -EINVAL;
	ev->ibcq = ibcq;
	ev->cqn = cqn;
	ev->eq = &eqs->eq[comp_vector];
	ev->comp = shca_cq_comp_handler;
	refcount_set(&ev->ref, 1);
	init_completion(&ev->free);
	INIT_LIST_HEAD(&ev->tl_node);
	return xa_insert(&eqs->cqs, cqn, ev, GFP_KERNEL);
}

void shca_cq_ev_unregister(struct shca_dev *sdev, struct shca_cq_ev *ev)
{
	struct shca_eqs *eqs = sdev->eqs;

	xa_erase(&eqs->cqs, ev->cqn);
	shca_eqs_sync_handlers(eqs);
	shca_cq_ev_put(ev);
	wait_for_completion(&ev->free);
}

int shca_qp_ev_register(struct shca_dev *sdev, struct shca_qp_ev *ev,
			struct ib_qp *ibqp, u32 qpn)
{
	ev->ibqp = ibqp;
	ev->ibsrq = NULL;
	ev->qpn = qpn;
	refcount_set(&ev->ref, 1);
	init_completion(&ev->free);
	return xa_insert(&sdev->eqs->qps, qpn, ev, GFP_KERNEL);
}

int shca_srq_ev_register(struct shca_dev *sdev, struct shca_qp_ev *ev,
			 struct ib_srq *ibsrq, u32 srqn)
{
	ev->ibqp = NULL;
	ev->ibsrq = ibsrq;
	ev->qpn = srqn;
	refcount_set(&ev->ref, 1);
	init_completion(&ev->free);
	return xa_insert(&sdev->eqs->srqs, srqn, ev, GFP_KERNEL);
}

void shca_qp_ev_unregister(struct shca_dev *sdev, struct shca_qp_ev *ev)
{
	struct shca_eqs *eqs = sdev->eqs;

	xa_erase(ev->ibsrq ? &eqs->srqs : &eqs->qps, ev->qpn);
	shca_eqs_sync_handlers(eqs);
	shca_qp_ev_put(ev);
	wait_for_completion(&ev->free);
}

/* ---- tasklet ------------------------------------------------------------ */

/* Queue @ev (a reference held, which this takes over) on its EQ's tasklet. */
static void shca_cq_ev_schedule(struct shca_cq_ev *ev)
{
	struct shca_eq *eq = ev->eq;
	unsigned long flags;
	bool queued = false;

	spin_lock_irqsave(&eq->tl_lock, flags);
	if (list_empty(&ev->tl_node)) {
		list_add_tail(&ev->tl_node, &eq->tl_list);
		queued = true;
	}
	spin_unlock_irqrestore(&eq->tl_lock, flags);
	if (!queued)
		shca_cq_ev_put(ev);	/* already on the list */
	tasklet_schedule(&eq->tasklet);
}

static void shca_eq_tasklet(struct tasklet_struct *t)
{
	struct shca_eq *eq = from_tasklet(eq, t, tasklet);
	unsigned int budget = SHCA_EQ_TASKLET_BUDGET;
	struct shca_cq_ev *ev;
	unsigned long flags;

	while (budget--) {
		spin_lock_irqsave(&eq->tl_lock, flags);
		ev = list_first_entry_or_null(&eq->tl_list, struct shca_cq_ev,
					      tl_node);
		if (ev)
			list_del_init(&ev->tl_node);
		spin_unlock_irqrestore(&eq->tl_lock, flags);
		if (!ev)
			return;
		ev->comp(ev);
		eq->comps++;
		shca_cq_ev_put(ev);
	}
	tasklet_schedule(&eq->tasklet);	/* more than the budget */
}

/* The test CQ (CQN 0, injections only): count and time the delivery. */
static void shca_test_comp(struct shca_cq_ev *ev)
{
	struct shca_eq *eq = container_of(ev, struct shca_eq, test_cq);
	u64 t0 = xchg(&eq->t_tasklet, 0);

	eq->test_comps++;
	if (t0)
		shca_lat_add(&eq->lat_tasklet, ktime_get_ns() - t0);
}

/* ---- async events ------------------------------------------------------- */

static void shca_event_work_fn(struct work_struct *work)
{
	struct shca_event_work *ew = container_of(work, struct shca_event_work,
						  work);

	if (ew->cq) {
		struct ib_cq *ibcq = ew->cq->ibcq;

		if (ibcq->event_handler)
			ibcq->event_handler(&ew->event, ibcq->cq_context);
		shca_cq_ev_put(ew->cq);
	} else if (ew->qp && ew->qp->ibsrq) {
		struct ib_srq *ibsrq = ew->qp->ibsrq;

		if (ibsrq->event_handler)
			ibsrq->event_handler(&ew->event, ibsrq->srq_context);
		shca_qp_ev_put(ew->qp);
	} else if (ew->qp) {
		struct ib_qp *ibqp = ew->qp->ibqp;

		if (ibqp->event_handler)
			ibqp->event_handler(&ew->event, ibqp->qp_context);
		shca_qp_ev_put(ew->qp);
	}
	kfree(ew);
}

static enum ib_event_type shca_qp_event_type(u8 type)
{
	switch (type) {
	case SOFTHCA_EVENT_TYPE_COMM_EST:
		return IB_EVENT_COMM_EST;
	case SOFTHCA_EVENT_TYPE_SQ_DRAINED:
		return IB_EVENT_SQ_DRAINED;
	case SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR:
		return IB_EVENT_QP_REQ_ERR;
	case SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR:
		return IB_EVENT_QP_ACCESS_ERR;
	case SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED:
		return IB_EVENT_QP_LAST_WQE_REACHED;
	case SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR:
	default:
		return IB_EVENT_QP_FATAL;
	}
}

/* Hand a CQ or QP event (a reference held, taken over) to the workqueue. */
static void shca_eq_queue_event(struct shca_eq *eq, struct shca_cq_ev *cq,
				struct shca_qp_ev *qp, enum ib_event_type type)
{
	struct shca_event_work *ew;

	ew = kzalloc(sizeof(*ew), GFP_ATOMIC);
	if (!ew) {
		eq->lost++;
		dev_err_ratelimited(&eq->eqs->sdev->ibdev.dev,
				    "async event %d lost: no memory\n", type);
		if (cq)
			shca_cq_ev_put(cq);
		if (qp)
			shca_qp_ev_put(qp);
		return;
	}
	INIT_WORK(&ew->work, shca_event_work_fn);
	ew->event.device = &eq->eqs->sdev->ibdev;
	ew->event.event = type;
	ew->cq = cq;
	ew->qp = qp;
	if (cq) {
		ew->event.element.cq = cq->ibcq;
		shca_dbg_cqn(ew->event.device, cq->cqn, "%s\n",
			     ib_event_msg(type));
	} else if (qp->ibsrq) {
		ew->event.element.srq = qp->ibsrq;
		shca_dbg(to_shca_dev(ew->event.device), "SRQ 0x%x: %s\n",
			 qp->qpn, ib_event_msg(type));
	} else {
		ew->event.element.qp = qp->ibqp;
		shca_dbg_qpn(ew->event.device, qp->qpn, "%s\n",
			     ib_event_msg(type));
	}
	queue_work(eq->eqs->wq, &ew->work);
}

static void shca_dispatch_port(struct shca_eqs *eqs, u32 port, bool active)
{
	struct ib_event event = {
		.device = &eqs->sdev->ibdev,
		.element.port_num = port,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	shca_dbg(eqs->sdev, "port %u: %s\n", port, ib_event_msg(event.event));
	/* Atomic-safe: ib_core queues the work itself. */
	ib_dispatch_event(&event);
}

/*
 * The async EQ overflowed: CQ, QP or port events were dropped and cannot
 * be rebuilt. Device-level error path: tell every consumer the device is
 * no longer trustworthy (IB_EVENT_DEVICE_FATAL, once), and re-announce the
 * port state, which is known.
 */
static void shca_async_overflow(struct shca_eq *eq)
{
	struct shca_eqs *eqs = eq->eqs;
	struct ib_event event = {
		.device = &eqs->sdev->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
	};

	dev_err_ratelimited(&eqs->sdev->ibdev.dev,
			    "async EQ %u overflowed: events lost, device fatal\n",
			    eq->eqn);
	if (!test_and_set_bit(0, &eqs->fatal))
		ib_dispatch_event(&event);
	shca_dispatch_port(eqs, SHCA_PORT,
			   shca_netdev_active(eqs->sdev->ndev));
}

/* ---- the EQ handler ----------------------------------------------------- */

static struct softhca_eqe *shca_next_eqe(struct shca_eq *eq)
{
	struct softhca_eqe *eqe = &eq->ring[eq->ci & ((1U << eq->log_size) - 1)];
	u8 owner = READ_ONCE(eqe->owner);

	/* Software owns it when its owner bit is the lap of ci. */
	if ((owner ^ (eq->ci >> eq->log_size)) & SOFTHCA_EQE_OWNER_MASK)
		return NULL;
	return eqe;
}

static void shca_eq_handle(struct shca_eq *eq, const struct softhca_eqe *eqe)
{
	struct shca_eqs *eqs = eq->eqs;
	struct shca_cq_ev *cq;
	struct shca_qp_ev *qp;
	u32 num;

	switch (eqe->type) {
	case SOFTHCA_EVENT_TYPE_COMP:
		num = be32_to_cpu(eqe->data.comp.cqn) & 0xffffff;
		if (num == SHCA_TEST_CQN) {
			cq = &eq->test_cq;
			refcount_inc(&cq->ref);
		} else {
			cq = shca_cq_ev_get(eqs, num);
		}
		if (!cq) {
			eq->unknown++;
			dev_dbg_ratelimited(&eqs->sdev->ibdev.dev,
					    "completion event for unknown CQ 0x%x\n",
					    num);
			break;
		}
		shca_cq_ev_schedule(cq);
		break;
	case SOFTHCA_EVENT_TYPE_CQ_ERROR:
		num = be32_to_cpu(eqe->data.cq_err.cqn) & 0xffffff;
		cq = shca_cq_ev_get(eqs, num);
		if (!cq) {
			eq->unknown++;
			shca_dbg_cqn(&eqs->sdev->ibdev, num,
				     "CQ_ERROR for no CQ of ours: dropped\n");
			break;
		}
		shca_eq_queue_event(eq, cq, NULL, IB_EVENT_CQ_ERR);
		break;
	case SOFTHCA_EVENT_TYPE_COMM_EST:
	case SOFTHCA_EVENT_TYPE_SQ_DRAINED:
	case SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR:
	case SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR:
	case SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR:
	case SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED:
		num = be32_to_cpu(eqe->data.qp.qpn) & 0xffffff;
		qp = shca_qp_ev_get(&eqs->qps, num);
		if (!qp) {
			eq->unknown++;
			shca_dbg_qpn(&eqs->sdev->ibdev, num,
				     "%s for no QP of ours: dropped\n",
				     hca_event_name(eqe->type));
			break;
		}
		shca_eq_queue_event(eq, NULL, qp,
				    shca_qp_event_type(eqe->type));
		break;
	case SOFTHCA_EVENT_TYPE_SRQ_CATAS_ERROR:
	case SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT:
		num = be32_to_cpu(eqe->data.qp.qpn) & 0xffffff;
		qp = shca_qp_ev_get(&eqs->srqs, num);
		if (!qp) {
			eq->unknown++;
			break;
		}
		shca_eq_queue_event(eq, NULL, qp,
				    eqe->type == SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT ?
				    IB_EVENT_SRQ_LIMIT_REACHED :
				    IB_EVENT_SRQ_ERR);
		break;
	case SOFTHCA_EVENT_TYPE_PORT_CHANGE:
		num = eqe->data.port.port >> SOFTHCA_EQE_PORT_SHIFT;
		if (num != SHCA_PORT) {
			eq->unknown++;
			break;
		}
		shca_dispatch_port(eqs, num, eqe->sub_type ==
				   SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE);
		break;
	case SOFTHCA_EVENT_TYPE_PAGE_FAULT:
		/* On-demand paging: resolved in process context (odp.c). */
		shca_odp_fault_event(eqs->sdev, eqe);
		break;
	case HCA_EVENT_TYPE_EQ_OVERFLOW:
		eq->overflows++;
		if (eq->async)
			shca_async_overflow(eq);
		else
			dev_warn_ratelimited(&eq->eqs->sdev->ibdev.dev,
					     "completion EQ %u overflowed: the HCA resends the events it dropped once the EQ is drained\n",
					     eq->eqn);
		break;
	default:
		eq->unknown++;
		break;
	}
}

/* The vector's notifier: poll the EQ (seed-map.md §5 step 3.1). Hard-IRQ context,
 * never concurrently with itself (handle_edge_irq).
 */
static int shca_eq_notify(struct notifier_block *nb, unsigned long action,
			  void *data)
{
	struct shca_eq *eq = container_of(nb, struct shca_eq, nb);
	u64 t0 = xchg(&eq->t_irq, 0);
	struct softhca_eqe *eqe;
	unsigned int n = 0;

	if (t0)
		shca_lat_add(&eq->lat_irq, ktime_get_ns() - t0);
	eq->irqs++;
	while (n < SHCA_EQ_POLL_BUDGET && (eqe = shca_next_eqe(eq))) {
		/* The entry only after its owner bit. */
		dma_rmb();
		shca_eq_handle(eq, eqe);
		eq->ci++;
		n++;
	}
	eq->eqes += n;
	/* Consumer index and re-arm: unconsumed EQEs raise again at once. */
	hca_eq_doorbell(eq->eqs->sdev->hca, eq->eqn, eq->ci, true);
	return NOTIFY_OK;
}

/* ---- creation and teardown --------------------------------------------- */

static int shca_eq_create(struct shca_eqs *eqs, struct shca_eq *eq)
{
	struct shca_dev *sdev = eqs->sdev;
	struct hca_cmd_create_eq_in in = {};
	struct hca_cmd_create_eq_out out;
	u32 i, nent = 1U << eq->log_size;
	int err;

	eq->ring = kvcalloc(nent, sizeof(*eq->ring), GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;
	/* First-lap readers reject owner 1 (queue-formats.md). */
	for (i = 0; i < nent; i++)
		eq->ring[i].owner = SOFTHCA_EQE_OWNER_INIT;

	in.ring = eq->ring;
	in.log_size = eq->log_size;
	in.event_mask = eq->async ? SHCA_ASYNC_EVENTS : 0;
	in.msix.send = shca_vec_raise;
	in.msix.data = eq->vec;
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_EQ, &in, sizeof(in),
			    &out, sizeof(out));
	if (err)
		return err;
	eq->eqn = out.eqn;
	eq->created = true;

	eq->nb.notifier_call = shca_eq_notify;
	err = shca_vec_notifier_register(eq->vec, &eq->nb);
	if (err)
		return err;
	/* Armed, ready for the first EQE. */
	hca_eq_doorbell(sdev->hca, eq->eqn, eq->ci, true);
	return 0;
}

static void shca_eq_destroy_model(struct shca_eqs *eqs, struct shca_eq *eq)
{
	struct hca_cmd_destroy_eq_in in = { .eqn = eq->eqn };

	if (!eq->created)
		return;
	WARN_ON(hca_exec(eqs->sdev->hca, HCA_CMD_DESTROY_EQ, &in,
			      sizeof(in), NULL, 0));
	eq->created = false;
}

/*
 * Teardown (design.md §9): stop the raisers (DESTROY_EQ: the model sends no
 * message after it returns) -> vectors quiesced (late messages dropped,
 * csd callbacks and irq_work waited for) -> free_irq() (waits for a running
 * handler: no EQ poll runs after it) -> tasklet_kill(), the event work and
 * ib_wq flushed -> irq_dispose_mapping() and irq_domain_remove() -> rings
 * freed. Every CQ and QP is gone already (ib_core destroyed them).
 */
static void shca_eqs_free(struct shca_eqs *eqs)
{
	unsigned int i, n = eqs->ncomp + 1;

	for (i = 0; i < n; i++)
		shca_eq_destroy_model(eqs, &eqs->eq[i]);
	if (!IS_ERR_OR_NULL(eqs->vecs)) {
		shca_vecs_quiesce(eqs->vecs);
		/*
		 * free_irq() waits for a handler still running; after it
		 * nothing calls the notifiers, which go with the vectors.
		 */
		shca_vecs_free_irqs(eqs->vecs);
	}
	for (i = 0; i < n; i++)
		tasklet_kill(&eqs->eq[i].tasklet);
	if (eqs->wq)
		destroy_workqueue(eqs->wq);
	/*
	 * Port and fatal events the handlers dispatched late (ib_core's own
	 * flush at unregistration may have passed) run before the netdev
	 * and the device go.
	 */
	flush_workqueue(ib_wq);
	shca_vecs_destroy(eqs->vecs);
	for (i = 0; i < n; i++)
		kvfree(eqs->eq[i].ring);
	WARN_ON(!xa_empty(&eqs->cqs) || !xa_empty(&eqs->qps));
	xa_destroy(&eqs->cqs);
	xa_destroy(&eqs->qps);
	xa_destroy(&eqs->srqs);
	mutex_destroy(&eqs->test_lock);
	kfree(eqs);
}

/*
 * From enable_driver: the device has its name, no client and no user has
 * it yet. One completion EQ per completion vector, then the async EQ.
 */
int shca_eqs_create(struct shca_dev *sdev)
{
	unsigned int ncomp = sdev->ibdev.num_comp_vectors, i, cpu;
	const char *dev = dev_name(&sdev->ibdev.dev);
	char name[64];
	struct shca_eqs *eqs;
	int err;

	eqs = kzalloc(struct_size(eqs, eq, ncomp + 1), GFP_KERNEL);
	if (!eqs)
		return -ENOMEM;
	eqs->sdev = sdev;
	eqs->ncomp = ncomp;
	xa_init(&eqs->cqs);
	xa_init(&eqs->qps);
	xa_init(&eqs->srqs);
	mutex_init(&eqs->test_lock);
	for (i = 0; i <= ncomp; i++) {
		struct shca_eq *eq = &eqs->eq[i];

		eq->eqs = eqs;
		eq->index = i;
		eq->async = i == ncomp;
		eq->log_size = eq->async ? SHCA_ASYNC_EQ_LOG_SIZE :
					   SHCA_COMP_EQ_LOG_SIZE;
		if (eq->async)
			strscpy(eq->name, "async", sizeof(eq->name));
		else
			snprintf(eq->name, sizeof(eq->name), "comp%u", i);
		spin_lock_init(&eq->tl_lock);
		INIT_LIST_HEAD(&eq->tl_list);
		tasklet_setup(&eq->tasklet, shca_eq_tasklet);
		eq->test_cq.cqn = SHCA_TEST_CQN;
		eq->test_cq.eq = eq;
		eq->test_cq.comp = shca_test_comp;
		refcount_set(&eq->test_cq.ref, 1);
		init_completion(&eq->test_cq.free);
		INIT_LIST_HEAD(&eq->test_cq.tl_node);
	}

	snprintf(name, sizeof(name), "softhca-%s-events", dev);
	eqs->wq = alloc_ordered_workqueue("%s", 0, name);
	snprintf(name, sizeof(name), "softhca-%s", dev);
	eqs->vecs = shca_vecs_create(name, ncomp + 1);
	if (!eqs->wq || IS_ERR(eqs->vecs)) {
		err = -ENOMEM;
		goto err;
	}

	/* Completion vector i on the i-th online CPU, as mlx5 spreads them. */
	cpu = cpumask_first(cpu_online_mask);
	for (i = 0; i <= ncomp; i++) {
		struct shca_eq *eq = &eqs->eq[i];

		eq->vec = shca_vec(eqs->vecs, i);
		snprintf(name, sizeof(name), "softhca-%s-%s", dev, eq->name);
		err = shca_vec_request(eq->vec, name, eq->async ? -1 : cpu);
		if (err)
			goto err;
		if (!eq->async) {
			cpu = cpumask_next(cpu, cpu_online_mask);
			if (cpu >= nr_cpu_ids)
				cpu = cpumask_first(cpu_online_mask);
		}
	}
	/* Completion EQs first: their EQNs are 0..ncomp-1. */
	for (i = 0; i <= ncomp; i++) {
		err = shca_eq_create(eqs, &eqs->eq[i]);
		if (err)
			goto err;
	}
	sdev->eqs = eqs;
	return 0;

err:
	shca_eqs_free(eqs);
	return err;
}

/* From dealloc_driver, after debugfs is gone. */
void shca_eqs_destroy(struct shca_dev *sdev)
{
	if (!sdev->eqs)
		return;
	shca_eqs_free(sdev->eqs);
	sdev->eqs = NULL;
}

/* ---- debugfs: eqs and inject -------------------------------------------- */

static void shca_lat_show(struct seq_file *m, const char *name,
			  const struct shca_lat *lat)
{
	seq_printf(m, " %s_n=%llu", name, lat->n);
	if (lat->n)
		seq_printf(m, " %s_min_ns=%llu %s_avg_ns=%llu %s_max_ns=%llu",
			   name, lat->min, name, div64_u64(lat->sum, lat->n),
			   name, lat->max);
}

static int shca_eqs_show(struct seq_file *m, void *unused)
{
	struct shca_dev *sdev = m->private;
	struct shca_eqs *eqs = sdev->eqs;
	unsigned int i;

	for (i = 0; i <= eqs->ncomp; i++) {
		struct shca_eq *eq = &eqs->eq[i];
		struct hca_cmd_query_eq_in in = { .eqn = eq->eqn };
		struct hca_cmd_query_eq_out out = {};

		hca_exec(sdev->hca, HCA_CMD_QUERY_EQ, &in, sizeof(in),
			      &out, sizeof(out));
		seq_printf(m, "eqn=%u name=%s vector=%u irq=%u cpu=%d size=%u ci=%u pi=%u armed=%u",
			   eq->eqn, eq->name, eq->index, shca_vec_irq(eq->vec),
			   shca_vec_cpu(eq->vec), 1U << eq->log_size,
			   READ_ONCE(eq->ci), out.pi, out.armed);
		seq_printf(m, " irqs=%llu eqes=%llu comps=%llu test_comps=%llu unknown=%llu lost=%llu",
			   READ_ONCE(eq->irqs), READ_ONCE(eq->eqes),
			   READ_ONCE(eq->comps), READ_ONCE(eq->test_comps),
			   READ_ONCE(eq->unknown), READ_ONCE(eq->lost));
		seq_printf(m, " overflows=%llu hca_overflows=%llu hca_dropped=%llu hca_msix=%llu",
			   READ_ONCE(eq->overflows), out.overflows, out.dropped,
			   out.msix);
		shca_lat_show(m, "lat_irq", &eq->lat_irq);
		shca_lat_show(m, "lat_tasklet", &eq->lat_tasklet);
		seq_putc(m, '\n');
	}
	seq_printf(m, "device_fatal=%u\n", test_bit(0, &eqs->fatal) ? 1 : 0);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(shca_eqs);

static struct shca_eq *shca_eq_by_eqn(struct shca_eqs *eqs, u32 eqn)
{
	unsigned int i;

	for (i = 0; i <= eqs->ncomp; i++)
		if (eqs->eq[i].eqn == eqn)
			return &eqs->eq[i];
	return NULL;
}

/*
 * Test only. "EQN TYPE NUM [COUNT]": GEN_EQE of type TYPE (the mlx5
 * numbers of softhca-queue.h) carrying NUM as its CQN or QPN (PORT_CHANGE:
 * NUM is the sub_type, port 1), COUNT times (default 1; a single one is
 * timed). "disable EQN" / "enable EQN": disable_irq() / enable_irq() of
 * the EQ's vector. "reset": forget the latency samples. "time EQN N":
 * N timed single events to EQN's test CQ (shca_inject_timed()).
 */
/*
 * "time EQN N": N completion events for EQ EQN's test CQ, one at a time,
 * each waited for until its tasklet ran: N latency samples.
 */
static int shca_inject_timed(struct shca_eqs *eqs, struct shca_eq *eq,
			     u32 count)
{
	struct hca_cmd_gen_eqe_in in = { .eqn = eq->eqn };
	u64 now, deadline;
	u32 i;
	int err;

	in.eqe.type = SOFTHCA_EVENT_TYPE_COMP;
	in.eqe.data.comp.cqn = cpu_to_be32(SHCA_TEST_CQN);
	for (i = 0; i < count; i++) {
		now = ktime_get_ns();
		deadline = now + NSEC_PER_SEC;
		WRITE_ONCE(eq->t_tasklet, now);
		WRITE_ONCE(eq->t_irq, now);
		err = hca_exec(eqs->sdev->hca, HCA_CMD_GEN_EQE, &in,
				    sizeof(in), NULL, 0);
		if (err)
			return err;
		/* The tasklet takes the stamp. */
		while (READ_ONCE(eq->t_tasklet)) {
			if (ktime_get_ns() > deadline)
				return -ETIMEDOUT;
			cond_resched();
		}
	}
	return 0;
}

static int shca_inject(struct shca_eqs *eqs, const char *cmd)
{
	struct shca_dev *sdev = eqs->sdev;
	struct hca_cmd_gen_eqe_in in = {};
	struct softhca_eqe *e = &in.eqe;
	u32 eqn, count = 1, i;
	int type, num;
	struct shca_eq *eq;
	char word[8];
	int n, err = 0;

	if (sysfs_streq(cmd, "reset")) {
		for (i = 0; i <= eqs->ncomp; i++) {
			eq = &eqs->eq[i];
			WRITE_ONCE(eq->t_irq, 0);
			WRITE_ONCE(eq->t_tasklet, 0);
			/* Racy with a handler in flight; good enough for a test. */
			memset(&eq->lat_irq, 0, sizeof(eq->lat_irq));
			memset(&eq->lat_tasklet, 0, sizeof(eq->lat_tasklet));
		}
		return 0;
	}
	if (sscanf(cmd, "%7s %u", word, &eqn) == 2 &&
	    (!strcmp(word, "disable") || !strcmp(word, "enable"))) {
		eq = shca_eq_by_eqn(eqs, eqn);
		if (!eq)
			return -EINVAL;
		return shca_vec_test_disable(eq->vec, word[0] == 'd');
	}
	if (sscanf(cmd, "time %u %u", &eqn, &count) == 2) {
		eq = shca_eq_by_eqn(eqs, eqn);
		if (!eq || !count || count > 100000)
			return -EINVAL;
		return shca_inject_timed(eqs, eq, count);
	}

	n = sscanf(cmd, "%u %i %i %u", &eqn, &type, &num, &count);
	if (n < 3 || type < 0 || type > 0xff || num < 0 || num > 0xffffff ||
	    !count ||
	    count > 10000000)
		return -EINVAL;
	eq = shca_eq_by_eqn(eqs, eqn);
	if (!eq)
		return -EINVAL;
	in.eqn = eqn;
	e->type = type;
	switch (type) {
	case SOFTHCA_EVENT_TYPE_COMP:
		e->data.comp.cqn = cpu_to_be32(num);
		break;
	case SOFTHCA_EVENT_TYPE_CQ_ERROR:
		e->data.cq_err.cqn = cpu_to_be32(num);
		e->data.cq_err.syndrome = SOFTHCA_CQ_ERROR_SYNDROME_OVERRUN;
		break;
	case SOFTHCA_EVENT_TYPE_PORT_CHANGE:
		e->sub_type = num;
		e->data.port.port = SHCA_PORT << SOFTHCA_EQE_PORT_SHIFT;
		break;
	default:
		e->data.qp.qpn = cpu_to_be32(num);
		break;
	}
	for (i = 0; i < count; i++) {
		if (count == 1) {
			u64 now = ktime_get_ns();

			WRITE_ONCE(eq->t_tasklet, now);
			WRITE_ONCE(eq->t_irq, now);
		}
		err = hca_exec(sdev->hca, HCA_CMD_GEN_EQE, &in,
				    sizeof(in), NULL, 0);
		/* A full EQ is what a storm may want to provoke. */
		if (err && err != -ENOSPC)
			break;
		if (!(i & 1023))
			cond_resched();
	}
	return err == -ENOSPC ? 0 : err;
}

static ssize_t shca_inject_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	struct shca_dev *sdev = file->private_data;
	char buf[64];
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	mutex_lock(&sdev->eqs->test_lock);
	err = shca_inject(sdev->eqs, buf);
	mutex_unlock(&sdev->eqs->test_lock);
	return err ? err : len;
}

static const struct file_operations shca_inject_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.write	= shca_inject_write,
	.llseek	= noop_llseek,
};

/* The debugfs hook (debugfs.c), with the device's directory. */
void shca_eqs_debugfs_add(struct shca_dev *sdev, struct dentry *dir)
{
	if (!sdev->eqs)
		return;
	debugfs_create_file("eqs", 0400, dir, sdev, &shca_eqs_fops);
	debugfs_create_file("inject", 0200, dir, sdev, &shca_inject_fops);
}
