/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca verbs driver: interrupt vectors (irq.c) and event queues (eq.c),
 * seed-map.md §5, design.md §6. See Documentation/events.md.
 *
 * For the CQ and QP code: embed a struct shca_cq_ev / shca_qp_ev in the
 * driver's CQ / QP and register it once the model has given the number:
 *
 *   create_cq:  CREATE_CQ with .eqn = shca_comp_eqn(sdev, comp_vector),
 *               then shca_cq_ev_register(sdev, &cq->ev, ibcq, cqn, vector)
 *   destroy_cq: DESTROY_CQ, then shca_cq_ev_unregister(sdev, &cq->ev)
 *   create_qp:  CREATE_QP, then shca_qp_ev_register(sdev, &qp->ev, ibqp, qpn)
 *   destroy_qp: DESTROY_QP, then shca_qp_ev_unregister(sdev, &qp->ev)
 *
 * Unregister waits until no interrupt handler, tasklet or event work uses
 * the object any more; after it no comp_handler / event_handler call for
 * it can start. It may sleep.
 */
#ifndef SHCA_EQ_H
#define SHCA_EQ_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/notifier.h>
#include <linux/refcount.h>
#include <linux/types.h>

struct dentry;
struct ib_cq;
struct ib_qp;
struct ib_srq;
struct shca_dev;
struct shca_eq;

/* The event side of a CQ: found by CQN in the EQ interrupt handler. */
struct shca_cq_ev {
	struct ib_cq *ibcq;
	u32 cqn;
	struct shca_eq *eq;		/* its completion EQ: runs its tasklet */
	refcount_t ref;			/* registration + handlers in flight */
	struct completion free;
	struct list_head tl_node;	/* on eq->tl_list, under eq->tl_lock */
	void (*comp)(struct shca_cq_ev *ev);	/* from the tasklet */
};

/* The event side of a QP, or of an SRQ (ibsrq set, qpn its SRQN). */
struct shca_qp_ev {
	struct ib_qp *ibqp;
	struct ib_srq *ibsrq;
	u32 qpn;
	refcount_t ref;
	struct completion free;
};

int shca_cq_ev_register(struct shca_dev *sdev, struct shca_cq_ev *ev,
			struct ib_cq *ibcq, u32 cqn, u32 comp_vector);
void shca_cq_ev_unregister(struct shca_dev *sdev, struct shca_cq_ev *ev);
int shca_qp_ev_register(struct shca_dev *sdev, struct shca_qp_ev *ev,
			struct ib_qp *ibqp, u32 qpn);
int shca_srq_ev_register(struct shca_dev *sdev, struct shca_qp_ev *ev,
			 struct ib_srq *ibsrq, u32 srqn);
/* Unregisters a QP's or an SRQ's. */
void shca_qp_ev_unregister(struct shca_dev *sdev, struct shca_qp_ev *ev);
/* The model's EQN of completion vector @comp_vector (for CREATE_CQ). */
u32 shca_comp_eqn(struct shca_dev *sdev, u32 comp_vector);

/* eq.c: the device's EQs (device.c, main.c, debugfs.c) */
int shca_eqs_create(struct shca_dev *sdev);
void shca_eqs_destroy(struct shca_dev *sdev);
void shca_eqs_debugfs_add(struct shca_dev *sdev, struct dentry *dir);

/* ---- irq.c: the "MSI-X" vectors of one device ------------------------ */

struct shca_vec;
struct shca_vecs;

struct shca_vecs *shca_vecs_create(const char *name, unsigned int nvec);
struct shca_vec *shca_vec(struct shca_vecs *vecs, unsigned int index);
unsigned int shca_vec_irq(struct shca_vec *vec);
int shca_vec_cpu(struct shca_vec *vec);
/* request_irq() as @name (copied); @cpu >= 0: affinity and hint. */
int shca_vec_request(struct shca_vec *vec, const char *name, int cpu);
int shca_vec_notifier_register(struct shca_vec *vec,
			       struct notifier_block *nb);
/* The MSI-X message: raise @vec (a struct shca_vec). Any context. */
void shca_vec_raise(void *vec);
/* Test knob: disable_irq() / enable_irq(), balanced. */
int shca_vec_test_disable(struct shca_vec *vec, bool disable);
/* Teardown, in this order (Documentation/events.md). */
void shca_vecs_quiesce(struct shca_vecs *vecs);
void shca_vecs_free_irqs(struct shca_vecs *vecs);
void shca_vecs_destroy(struct shca_vecs *vecs);

#endif /* SHCA_EQ_H */
