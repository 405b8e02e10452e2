// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: event queues. The firmware commands CREATE_EQ,
 * DESTROY_EQ, QUERY_EQ, GEN_EQE and SET_PORT_STATE (handlers in hca.c's
 * command table), the EQE writer with the owner bit and overflow
 * detection, the EQ doorbell (consumer index and arm) and the MSI-X
 * message. See Documentation/events.md.
 *
 * An EQ is a ring the driver allocated. The model writes EQE number pi into
 * slot pi & (nent - 1) with owner bit (pi >> log_size) & 1, and sends the
 * EQ's MSI-X message when it writes an EQE while the EQ is armed; sending
 * disarms it. The driver reports its consumer index, and re-arms, through
 * hca_eq_doorbell(). An EQ never overwrites an unconsumed entry: when
 * only one free slot is left, the next EQE is replaced by an EQ_OVERFLOW
 * report in that slot and the EQ drops (and counts) everything until the
 * consumer index catches up with the producer.
 *
 * Lifetime: EQs are found by EQN in an xarray under RCU. DESTROY_EQ erases
 * the EQN, marks the EQ dead under eq->lock (no write or doorbell after
 * that), waits until the MSI-X messages already due are sent (a counter:
 * the message goes out after eq->lock is dropped) and frees the context
 * after an RCU grace period, without waiting for one. So when DESTROY_EQ
 * returns nothing of the EQ is in flight. eq->lock (irqsave) protects the
 * producer and doorbell state and is the innermost model lock.
 */
#include <linux/bits.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "model.h"

#define HCA_EVENT_TYPES	64	/* event_mask bits */

struct hca_eq {
	u32 eqn;
	u32 log_size;
	u32 nent;
	struct softhca_eqe *ring;
	u64 event_mask;
	struct hca_msix_msg msix;

	struct rcu_head rcu;
	atomic_t senders;		/* MSI-X messages being sent */

	spinlock_t lock;		/* everything below */
	bool dead;			/* DESTROY_EQ: no more writes */
	u32 pi;				/* EQEs written, free-running */
	u32 ci;				/* consumer index of the last doorbell */
	bool armed;
	bool overflow;			/* dropping until ci == pi */
	u64 eqes;
	u64 msix_sent;
	u64 overflows;
	u64 dropped;
};

struct hca_eq_dev {
	struct mutex lock;		/* CREATE/DESTROY_EQ, SET_PORT_STATE */
	struct xarray eqs;		/* EQN -> hca_eq (RCU lookups) */
	/* async event type -> EQN + 1 (0: none); written under lock */
	u32 route[HCA_EVENT_TYPES];
	u32 port_state;			/* SOFTHCA_PORT_CHANGE_SUBTYPE_* */
	atomic64_t lost;		/* async events no EQ takes */
};

int hca_eq_init(struct hca *hca)
{
	struct hca_eq_dev *eqh;

	eqh = kzalloc(sizeof(*eqh), GFP_KERNEL);
	if (!eqh)
		return -ENOMEM;
	mutex_init(&eqh->lock);
	xa_init_flags(&eqh->eqs, XA_FLAGS_ALLOC);
	eqh->port_state = SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN;
	atomic64_set(&eqh->lost, 0);
	hca->eqh = eqh;
	return 0;
}

void hca_eq_fini(struct hca *hca)
{
	struct hca_eq_dev *eqh = hca->eqh;

	if (!eqh)
		return;
	/* A leaked EQ stays allocated: its ring may still be in use. */
	WARN_ONCE(!xa_empty(&eqh->eqs), "softhca: EQs leaked\n");
	xa_destroy(&eqh->eqs);
	mutex_destroy(&eqh->lock);
	kfree(eqh);
	hca->eqh = NULL;
}

/* A message is due: DESTROY_EQ waits for it (caller holds eq->lock). */
static void hca_eq_sending(struct hca_eq *eq)
{
	eq->msix_sent++;
	atomic_inc(&eq->senders);
}

/*
 * Send it, after eq->lock was dropped but with interrupts still off, so
 * the window DESTROY_EQ waits for is short. The EQ may be dying.
 */
static void hca_eq_send(struct hca_eq *eq)
{
	eq->msix.send(eq->msix.data);
	/* The message is out before DESTROY_EQ may see 0. */
	smp_mb__before_atomic();
	atomic_dec(&eq->senders);
}

/*
 * Write @src into the next slot, or the overflow report into the last free
 * one. Caller holds eq->lock. Returns 0 or -ENOSPC; sets *@raise when the
 * MSI-X message is due.
 */
static int hca_eq_write_locked(struct hca_eq *eq,
				const struct softhca_eqe *src, bool *raise,
				bool soft)
{
	struct softhca_eqe report;
	struct softhca_eqe *dst;
	int ret = 0;

	if (eq->dead)
		return -EINVAL;
	/* A soft event keeps out of the EQ's second half (-EBUSY). */
	if (soft && eq->pi - eq->ci >= eq->nent / 2)
		return -EBUSY;
	if (eq->overflow) {
		eq->dropped++;
		return -ENOSPC;
	}
	if (eq->pi - eq->ci >= eq->nent - 1) {
		memset(&report, 0, sizeof(report));
		report.type = HCA_EVENT_TYPE_EQ_OVERFLOW;
		report.data.raw[0] = cpu_to_be32(eq->eqn);
		src = &report;
		eq->overflow = true;
		eq->overflows++;
		eq->dropped++;
		ret = -ENOSPC;
	}

	dst = &eq->ring[eq->pi & (eq->nent - 1)];
	memcpy(dst, src, offsetof(struct softhca_eqe, owner));
	/* The entry, then its owner byte (queue-formats.md). */
	dma_wmb();
	WRITE_ONCE(dst->owner, (eq->pi >> eq->log_size) & SOFTHCA_EQE_OWNER_MASK);
	eq->pi++;
	eq->eqes++;
	if (eq->armed) {
		eq->armed = false;
		hca_eq_sending(eq);
		*raise = true;
	}
	return ret;
}

/*
 * Post @eqe to EQ @eqn; if the EQ drops it (-ENOSPC), *@lost is set under
 * the EQ's lock, so the resend that follows the overflow's end sees it.
 */
static int hca_eq_post_lost(struct hca *hca, u32 eqn,
			     const struct softhca_eqe *eqe, bool *lost,
			     bool soft)
{
	struct hca_eq *eq;
	unsigned long flags;
	bool raise = false;
	int ret;

	rcu_read_lock();
	eq = xa_load(&hca->eqh->eqs, eqn);
	if (!eq) {
		rcu_read_unlock();
		return -EINVAL;
	}
	spin_lock_irqsave(&eq->lock, flags);
	ret = hca_eq_write_locked(eq, eqe, &raise, soft);
	if (ret == -ENOSPC && lost)
		WRITE_ONCE(*lost, true);
	spin_unlock(&eq->lock);
	/* With interrupts still off: DESTROY_EQ spins on the counter. */
	if (raise)
		hca_eq_send(eq);
	local_irq_restore(flags);
	rcu_read_unlock();
	return ret;
}

int hca_eq_post(struct hca *hca, u32 eqn, const struct softhca_eqe *eqe)
{
	return hca_eq_post_lost(hca, eqn, eqe, NULL, false);
}

static int hca_eq_post_routed(struct hca *hca, const struct softhca_eqe *eqe,
			      bool soft)
{
	u32 eqn1 = 0;

	if (eqe->type < HCA_EVENT_TYPES)
		eqn1 = READ_ONCE(hca->eqh->route[eqe->type]);
	if (!eqn1) {
		atomic64_inc(&hca->eqh->lost);
		return -EINVAL;
	}
	return hca_eq_post_lost(hca, eqn1 - 1, eqe, NULL, soft);
}

int hca_eq_post_async(struct hca *hca, const struct softhca_eqe *eqe)
{
	return hca_eq_post_routed(hca, eqe, false);
}

int hca_eq_post_soft(struct hca *hca, const struct softhca_eqe *eqe)
{
	return hca_eq_post_routed(hca, eqe, true);
}

int hca_eq_comp(struct hca *hca, u32 eqn, u32 cqn, bool *lost)
{
	struct softhca_eqe eqe = { .type = SOFTHCA_EVENT_TYPE_COMP };

	eqe.data.comp.cqn = cpu_to_be32(cqn & 0xffffff);
	return hca_eq_post_lost(hca, eqn, &eqe, lost, false);
}

/* What became of an async event the model raised (debug messages). */
static const char *hca_eq_post_result(int err)
{
	switch (err) {
	case 0:		return "raised";
	case -ENOSPC:	return "dropped: async EQ full";
	case -EINVAL:	return "dropped: no EQ takes it";
	default:	return "dropped";
	}
}

int hca_eq_cq_error(struct hca *hca, u32 cqn, u8 syndrome)
{
	struct softhca_eqe eqe = { .type = SOFTHCA_EVENT_TYPE_CQ_ERROR };
	int err;

	eqe.data.cq_err.cqn = cpu_to_be32(cqn & 0xffffff);
	eqe.data.cq_err.syndrome = syndrome;
	err = hca_eq_post_async(hca, &eqe);
	hca_dbg_cqn(hca, cqn, "CQ_ERROR (syndrome 0x%x) %s\n", syndrome,
		     hca_eq_post_result(err));
	return err;
}

int hca_eq_qp_event(struct hca *hca, u8 type, u32 qpn, u8 queue_type)
{
	struct softhca_eqe eqe = { .type = type };
	int err;

	eqe.data.qp.type = queue_type;
	eqe.data.qp.qpn = cpu_to_be32(qpn & 0xffffff);
	err = hca_eq_post_async(hca, &eqe);
	hca_dbg_qpn(hca, qpn, "%s (0x%02x) %s\n", hca_event_name(type), type,
		     hca_eq_post_result(err));
	return err;
}

bool hca_eq_is_comp(struct hca *hca, u32 eqn)
{
	struct hca_eq *eq;
	bool ret;

	rcu_read_lock();
	eq = xa_load(&hca->eqh->eqs, eqn);
	ret = eq && !eq->event_mask;
	rcu_read_unlock();
	return ret;
}

void hca_eq_doorbell(struct hca *hca, u32 eqn, u32 ci, bool arm)
{
	struct hca_eq *eq;
	unsigned long flags;
	bool raise = false, drained = false;
	u32 behind;

	rcu_read_lock();
	eq = xa_load(&hca->eqh->eqs, eqn);
	if (!eq)
		goto out;
	spin_lock_irqsave(&eq->lock, flags);
	if (eq->dead)
		goto unlock;
	/* A hint: only forward, never past what was written. */
	behind = (eq->pi - ci) & HCA_EQ_CI_MASK;
	if (behind <= eq->pi - eq->ci)
		eq->ci = eq->pi - behind;
	if (eq->overflow && eq->ci == eq->pi) {
		eq->overflow = false;
		drained = !eq->event_mask;
	}
	if (arm) {
		if (eq->ci != eq->pi) {
			/* Unconsumed EQEs: no lost interrupt. */
			eq->armed = false;
			hca_eq_sending(eq);
			raise = true;
		} else {
			eq->armed = true;
		}
	}
unlock:
	spin_unlock(&eq->lock);
	if (raise)
		hca_eq_send(eq);
	local_irq_restore(flags);
	/* The completion events the overflow dropped, now that there is room. */
	if (drained)
		hca_cq_resend_lost(hca, eqn);
out:
	rcu_read_unlock();
}

int hca_cmd_create_eq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_create_eq_in *in = inbox;
	struct hca_cmd_create_eq_out *out = outbox;
	struct hca_eq_dev *eqh = hca->eqh;
	struct hca_eq *eq;
	unsigned int type;
	void *old;
	u32 eqn;
	int err;

	if (!in->ring || !in->msix.send || in->rsvd ||
	    in->log_size < HCA_EQ_LOG_SIZE_MIN ||
	    in->log_size > HCA_EQ_LOG_SIZE_MAX ||
	    (in->event_mask & BIT_ULL(SOFTHCA_EVENT_TYPE_COMP)))
		return -EINVAL;

	eq = kzalloc(sizeof(*eq), GFP_KERNEL);
	if (!eq)
		return -ENOMEM;
	eq->log_size = in->log_size;
	eq->nent = 1U << in->log_size;
	eq->ring = in->ring;
	eq->event_mask = in->event_mask;
	eq->msix = in->msix;
	spin_lock_init(&eq->lock);

	mutex_lock(&eqh->lock);
	for (type = 0; type < HCA_EVENT_TYPES; type++) {
		/* Another EQ takes this type already. */
		if ((eq->event_mask & BIT_ULL(type)) && eqh->route[type]) {
			err = -EINVAL;
			goto err_unlock;
		}
	}
	/* The completion EQs and one async EQ. */
	err = xa_alloc(&eqh->eqs, &eqn, NULL,
		       XA_LIMIT(0, hca->caps->max_comp_eqs), GFP_KERNEL);
	if (err) {
		if (err == -EBUSY)
			err = -ENOSPC;
		goto err_unlock;
	}
	eq->eqn = eqn;
	old = xa_store(&eqh->eqs, eqn, eq, GFP_KERNEL);
	if (xa_is_err(old)) {
		xa_erase(&eqh->eqs, eqn);
		err = xa_err(old);
		goto err_unlock;
	}
	for (type = 0; type < HCA_EVENT_TYPES; type++)
		if (eq->event_mask & BIT_ULL(type))
			WRITE_ONCE(eqh->route[type], eqn + 1);
	mutex_unlock(&eqh->lock);
	out->eqn = eqn;
	return 0;

err_unlock:
	mutex_unlock(&eqh->lock);
	kfree(eq);
	return err;
}

int hca_cmd_destroy_eq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_destroy_eq_in *in = inbox;
	struct hca_eq_dev *eqh = hca->eqh;
	struct hca_eq *eq;
	unsigned long flags;
	unsigned int type;

	mutex_lock(&eqh->lock);
	/* A reserved EQN (CREATE_EQ still running) loads as NULL. */
	eq = xa_load(&eqh->eqs, in->eqn);
	if (!eq) {
		mutex_unlock(&eqh->lock);
		return -EINVAL;
	}
	xa_erase(&eqh->eqs, in->eqn);
	for (type = 0; type < HCA_EVENT_TYPES; type++)
		if (eq->event_mask & BIT_ULL(type))
			WRITE_ONCE(eqh->route[type], 0);
	mutex_unlock(&eqh->lock);

	/* Writers and doorbells that found it write nothing any more... */
	spin_lock_irqsave(&eq->lock, flags);
	eq->dead = true;
	spin_unlock_irqrestore(&eq->lock, flags);
	/* ...and the messages they owed are out. */
	while (atomic_read(&eq->senders))
		cpu_relax();
	smp_mb__after_atomic();	/* pairs with hca_eq_send() */
	/* Lookups in flight (RCU) may still read the dead context. */
	kfree_rcu(eq, rcu);
	return 0;
}

int hca_cmd_query_eq(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_query_eq_in *in = inbox;
	struct hca_cmd_query_eq_out *out = outbox;
	struct hca_eq *eq;
	unsigned long flags;

	rcu_read_lock();
	eq = xa_load(&hca->eqh->eqs, in->eqn);
	if (!eq) {
		rcu_read_unlock();
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out));
	spin_lock_irqsave(&eq->lock, flags);
	out->log_size = eq->log_size;
	out->pi = eq->pi;
	out->ci = eq->ci;
	out->armed = eq->armed;
	out->overflow = eq->overflow;
	out->event_mask = eq->event_mask;
	out->eqes = eq->eqes;
	out->msix = eq->msix_sent;
	out->overflows = eq->overflows;
	out->dropped = eq->dropped;
	spin_unlock_irqrestore(&eq->lock, flags);
	rcu_read_unlock();
	return 0;
}

int hca_cmd_set_port_state(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_set_port_state_in *in = inbox;
	struct hca_eq_dev *eqh = hca->eqh;
	struct softhca_eqe eqe = {
		.type = SOFTHCA_EVENT_TYPE_PORT_CHANGE,
	};
	bool changed;
	int err;

	if (in->port < 1 || in->port > hca->caps->num_ports ||
	    (in->flags & ~HCA_PORT_STATE_QUIET) ||
	    (in->state != SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN &&
	     in->state != SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE))
		return -EINVAL;

	mutex_lock(&eqh->lock);
	changed = eqh->port_state != in->state;
	eqh->port_state = in->state;
	if (changed && !(in->flags & HCA_PORT_STATE_QUIET)) {
		eqe.sub_type = in->state;
		eqe.data.port.port = in->port << SOFTHCA_EQE_PORT_SHIFT;
		/* A full or missing async EQ counts the loss itself. */
		err = hca_eq_post_async(hca, &eqe);
		hca_dbg(hca, "port %u PORT_CHANGE to %s %s\n", in->port,
			in->state == SOFTHCA_PORT_CHANGE_SUBTYPE_ACTIVE ?
			"ACTIVE" : "DOWN", hca_eq_post_result(err));
	}
	mutex_unlock(&eqh->lock);
	return 0;
}

/* GEN_EQE: the EQE as given, into the EQ named (eq.sh injects events). */
int hca_cmd_gen_eqe(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_gen_eqe_in *in = inbox;

	if (in->rsvd)
		return -EINVAL;
	return hca_eq_post(hca, in->eqn, &in->eqe);
}
