// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: the device's interrupt vectors, real Linux IRQs
 * (design.md §6 and §9, Documentation/events.md).
 *
 * A module-local linear irq_domain per device, one hwirq per vector, each
 * mapped to a Linux IRQ with a small irq_chip and handle_edge_irq. The
 * chip behaves like an MSI-X table entry: .irq_mask / .irq_unmask set the
 * vector mask, and a message sent while the vector is masked is held in a
 * pending bit (the PBA) and sent on unmask. .irq_set_affinity picks the
 * one CPU the message goes to (the effective affinity), so writes to
 * /proc/irq/N/smp_affinity are honoured.
 *
 * Sending the message (shca_vec_raise(), the function the HCA model calls)
 * must end in generic_handle_irq() in hard-IRQ context on the target CPU.
 * irq_work_queue_on() is not exported in 6.1, and an IPI callback alone may
 * run outside hard-IRQ context (idle polling), so the message bounces:
 * IPI (smp_call_function_single_async) to the target CPU, whose callback
 * queues that CPU's ipi_work, whose callback calls generic_handle_irq().
 * On the target CPU itself the sender queues that CPU's local_work. Every
 * vector has, per CPU, one csd and the two irq_works. The csd belongs to
 * whoever set its busy bit; ipi_work clears the bit when it starts, i.e.
 * after the csd's callback returned and the smp code unlocked the csd, so
 * the next owner finds it free, and a sender that finds the bit set is
 * covered by the ipi_work still to start (barriers below).
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irq_work.h>
#include <linux/irqdomain.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/smp.h>

#include "eq.h"

#define SHCA_VEC_NAME_LEN	64

/* shca_vec_pcpu.busy */
#define SHCA_VEC_CSD_BUSY	0

/* shca_vec.flags */
#define SHCA_VEC_PBA		0	/* message held while masked */

struct shca_vec_pcpu {
	call_single_data_t csd;		/* IPI to this CPU */
	struct irq_work ipi_work;	/* queued by the csd's callback */
	struct irq_work local_work;	/* queued by senders on this CPU */
	unsigned long busy;		/* csd and ipi_work in flight */
	struct shca_vec *vec;
};

struct shca_vec {
	struct shca_vecs *vecs;
	unsigned int index;		/* hwirq */
	unsigned int irq;		/* Linux IRQ number, 0 if none */
	char name[SHCA_VEC_NAME_LEN];	/* /proc/interrupts */
	struct atomic_notifier_head nh;	/* the EQs of this vector */
	struct shca_vec_pcpu __percpu *pcpu;
	int cpu;			/* effective affinity */
	bool masked;			/* MSI-X vector mask */
	bool dead;			/* teardown: messages are dropped */
	bool requested;
	bool hint;			/* affinity hint set */
	bool test_disabled;		/* shca_vec_test_disable() */
	unsigned long flags;
};

struct shca_vecs {
	struct fwnode_handle *fwnode;
	struct irq_domain *domain;
	unsigned int nvec;
	struct shca_vec vec[];
};

/* On the target CPU, in hard-IRQ context. */
static void shca_vec_local_work(struct irq_work *work)
{
	struct shca_vec_pcpu *pc = container_of(work, struct shca_vec_pcpu,
						local_work);

	generic_handle_irq(pc->vec->irq);
}

static void shca_vec_ipi_work(struct irq_work *work)
{
	struct shca_vec_pcpu *pc = container_of(work, struct shca_vec_pcpu,
						ipi_work);

	/* The csd's callback has returned: the csd is free again. */
	clear_bit(SHCA_VEC_CSD_BUSY, &pc->busy);
	/*
	 * Free before the handler reads the EQ: a sender that still saw the
	 * bit set wrote its EQE before that (its smp_mb__before_atomic()).
	 */
	smp_mb__after_atomic();
	generic_handle_irq(pc->vec->irq);
}

/* IPI callback on the target CPU: interrupts are off. */
static void shca_vec_bounce(void *info)
{
	struct shca_vec_pcpu *pc = info;

	irq_work_queue(&pc->ipi_work);
}

/* Deliver one message to the vector's effective-affinity CPU. */
static void shca_vec_send(struct shca_vec *v)
{
	struct shca_vec_pcpu *pc;
	int cpu = READ_ONCE(v->cpu);
	int this = get_cpu();
	int err;

	if (cpu != this && cpu_online(cpu)) {
		pc = per_cpu_ptr(v->pcpu, cpu);
		/*
		 * Pairs with the barrier after clear_bit() in ipi_work: either
		 * we own the csd, or the ipi_work still to start sees our EQE.
		 */
		smp_mb__before_atomic();
		if (test_and_set_bit(SHCA_VEC_CSD_BUSY, &pc->busy))
			goto out;
		err = smp_call_function_single_async(cpu, &pc->csd);
		if (!err)
			goto out;
		/* The CPU went offline (-EBUSY cannot be: we own the csd). */
		WARN_ON_ONCE(err != -ENXIO);
		clear_bit(SHCA_VEC_CSD_BUSY, &pc->busy);
	}
	irq_work_queue(&per_cpu_ptr(v->pcpu, this)->local_work);
out:
	put_cpu();
}

void shca_vec_raise(void *data)
{
	struct shca_vec *v = data;

	if (READ_ONCE(v->dead))
		return;
	if (READ_ONCE(v->masked)) {
		/* Held in the PBA; unmask sends it. Re-check after. */
		set_bit(SHCA_VEC_PBA, &v->flags);
		/* The PBA bit before the mask re-check; pairs with unmask. */
		smp_mb__after_atomic();
		if (READ_ONCE(v->masked) ||
		    !test_and_clear_bit(SHCA_VEC_PBA, &v->flags))
			return;
	}
	shca_vec_send(v);
}

static void shca_vec_ack(struct irq_data *d)
{
	/* An edge message: nothing to acknowledge (the EQ is re-armed). */
}

static void shca_vec_mask(struct irq_data *d)
{
	struct shca_vec *v = irq_data_get_irq_chip_data(d);

	WRITE_ONCE(v->masked, true);
}

static void shca_vec_unmask(struct irq_data *d)
{
	struct shca_vec *v = irq_data_get_irq_chip_data(d);

	WRITE_ONCE(v->masked, false);
	/* The mask cleared before the PBA check; pairs with raise. */
	smp_mb();
	if (test_and_clear_bit(SHCA_VEC_PBA, &v->flags) &&
	    !READ_ONCE(v->dead))
		shca_vec_send(v);
}

/*
 * genirq's resend (enable_irq() of an interrupt that came while disabled).
 * Always "done", also when dead: the software resend tasklet must never
 * run for these IRQs.
 */
static int shca_vec_retrigger(struct irq_data *d)
{
	struct shca_vec *v = irq_data_get_irq_chip_data(d);

	if (!READ_ONCE(v->dead))
		shca_vec_send(v);
	return 1;
}

static int shca_vec_set_affinity(struct irq_data *d,
				 const struct cpumask *mask, bool force)
{
	struct shca_vec *v = irq_data_get_irq_chip_data(d);
	unsigned int cpu;

	if (force)
		cpu = cpumask_first(mask);
	else
		cpu = cpumask_first_and(mask, cpu_online_mask);
	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	WRITE_ONCE(v->cpu, cpu);
	irq_data_update_effective_affinity(d, cpumask_of(cpu));
	return IRQ_SET_MASK_OK;
}

static struct irq_chip shca_vec_chip = {
	.name			= "softhca",
	.irq_ack		= shca_vec_ack,
	.irq_mask		= shca_vec_mask,
	.irq_unmask		= shca_vec_unmask,
	.irq_retrigger		= shca_vec_retrigger,
	.irq_set_affinity	= shca_vec_set_affinity,
	.flags			= IRQCHIP_SKIP_SET_WAKE,
};

static int shca_vec_map(struct irq_domain *domain, unsigned int virq,
			irq_hw_number_t hwirq)
{
	struct shca_vecs *vecs = domain->host_data;

	if (hwirq >= vecs->nvec)
		return -EINVAL;
	irq_set_chip_and_handler_name(virq, &shca_vec_chip, handle_edge_irq,
				      "edge");
	irq_set_chip_data(virq, &vecs->vec[hwirq]);
	/* Affinity applies at once (no pending move at the next ack). */
	irq_set_status_flags(virq, IRQ_MOVE_PCNTXT);
	return 0;
}

static const struct irq_domain_ops shca_vec_domain_ops = {
	.map = shca_vec_map,
};

static irqreturn_t shca_vec_handler(int irq, void *data)
{
	struct shca_vec *v = data;

	atomic_notifier_call_chain(&v->nh, 0, NULL);
	return IRQ_HANDLED;
}

/*
 * A domain named @name with @nvec vectors, each mapped to a Linux IRQ (not
 * requested yet). May sleep.
 */
struct shca_vecs *shca_vecs_create(const char *name, unsigned int nvec)
{
	struct shca_vecs *vecs;
	unsigned int i;
	int cpu;

	vecs = kzalloc(struct_size(vecs, vec, nvec), GFP_KERNEL);
	if (!vecs)
		return ERR_PTR(-ENOMEM);
	vecs->nvec = nvec;
	for (i = 0; i < nvec; i++) {
		struct shca_vec *v = &vecs->vec[i];

		v->vecs = vecs;
		v->index = i;
		/* genirq starts every descriptor masked, so does the chip. */
		v->masked = true;
		v->cpu = cpumask_first(cpu_online_mask);
		ATOMIC_INIT_NOTIFIER_HEAD(&v->nh);
		v->pcpu = alloc_percpu(struct shca_vec_pcpu);
		if (!v->pcpu)
			goto err;
		for_each_possible_cpu(cpu) {
			struct shca_vec_pcpu *pc = per_cpu_ptr(v->pcpu, cpu);

			pc->vec = v;
			INIT_CSD(&pc->csd, shca_vec_bounce, pc);
			pc->ipi_work = IRQ_WORK_INIT_HARD(shca_vec_ipi_work);
			pc->local_work = IRQ_WORK_INIT_HARD(shca_vec_local_work);
		}
	}

	vecs->fwnode = irq_domain_alloc_named_fwnode(name);
	if (!vecs->fwnode)
		goto err;
	vecs->domain = irq_domain_create_linear(vecs->fwnode, nvec,
						&shca_vec_domain_ops, vecs);
	if (!vecs->domain)
		goto err;
	for (i = 0; i < nvec; i++) {
		vecs->vec[i].irq = irq_create_mapping(vecs->domain, i);
		if (!vecs->vec[i].irq)
			goto err;
	}
	return vecs;

err:
	shca_vecs_destroy(vecs);
	return ERR_PTR(-ENOMEM);
}

struct shca_vec *shca_vec(struct shca_vecs *vecs, unsigned int index)
{
	return &vecs->vec[index];
}

unsigned int shca_vec_irq(struct shca_vec *vec)
{
	return vec->irq;
}

int shca_vec_cpu(struct shca_vec *vec)
{
	return READ_ONCE(vec->cpu);
}

int shca_vec_request(struct shca_vec *v, const char *name, int cpu)
{
	int err;

	strscpy(v->name, name, sizeof(v->name));
	err = request_irq(v->irq, shca_vec_handler, 0, v->name, v);
	if (err)
		return err;
	v->requested = true;
	if (cpu >= 0 && !irq_set_affinity_and_hint(v->irq, cpumask_of(cpu)))
		v->hint = true;
	return 0;
}

int shca_vec_notifier_register(struct shca_vec *v, struct notifier_block *nb)
{
	return atomic_notifier_chain_register(&v->nh, nb);
}

/* Called with the debugfs file's lock held: balanced, one level deep. */
int shca_vec_test_disable(struct shca_vec *v, bool disable)
{
	if (!v->requested || v->test_disabled == disable)
		return -EALREADY;
	v->test_disabled = disable;
	if (disable)
		disable_irq(v->irq);
	else
		enable_irq(v->irq);
	return 0;
}

/*
 * Teardown step 2: the model sends no message any more (every EQ was
 * destroyed). Drop late messages, wait for every csd callback and irq_work
 * in flight. May sleep.
 */
void shca_vecs_quiesce(struct shca_vecs *vecs)
{
	unsigned int i;
	int cpu;

	for (i = 0; i < vecs->nvec; i++)
		WRITE_ONCE(vecs->vec[i].dead, true);
	/* dead before the busy bits are read: no new csd after this. */
	smp_mb();
	for (i = 0; i < vecs->nvec; i++) {
		struct shca_vec *v = &vecs->vec[i];

		if (!v->pcpu)
			continue;
		for_each_possible_cpu(cpu) {
			struct shca_vec_pcpu *pc = per_cpu_ptr(v->pcpu, cpu);

			/* Cleared when the ipi_work starts: then sync it. */
			while (test_bit(SHCA_VEC_CSD_BUSY, &pc->busy))
				usleep_range(10, 50);
			irq_work_sync(&pc->ipi_work);
			irq_work_sync(&pc->local_work);
		}
		/* A test left it disabled: balance it (retrigger is dead). */
		if (v->test_disabled)
			shca_vec_test_disable(v, false);
	}
}

/* Teardown step 4 (after the notifiers are gone): free_irq() each. */
void shca_vecs_free_irqs(struct shca_vecs *vecs)
{
	unsigned int i;

	for (i = 0; i < vecs->nvec; i++) {
		struct shca_vec *v = &vecs->vec[i];

		if (!v->requested)
			continue;
		if (v->hint)
			irq_update_affinity_hint(v->irq, NULL);
		free_irq(v->irq, v);
		v->requested = false;
	}
}

/* Last step: dispose of the mappings and the domain. May sleep. */
void shca_vecs_destroy(struct shca_vecs *vecs)
{
	unsigned int i;

	if (IS_ERR_OR_NULL(vecs))
		return;
	shca_vecs_free_irqs(vecs);
	for (i = 0; i < vecs->nvec; i++)
		if (vecs->vec[i].irq)
			irq_dispose_mapping(vecs->vec[i].irq);
	if (vecs->domain)
		irq_domain_remove(vecs->domain);
	if (vecs->fwnode)
		irq_domain_free_fwnode(vecs->fwnode);
	for (i = 0; i < vecs->nvec; i++)
		free_percpu(vecs->vec[i].pcpu);
	kfree(vecs);
}
