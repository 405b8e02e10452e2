// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: doorbell areas (design.md §10). Every UAR, and the
 * HCA itself for kernel objects, has one: a shared region the provider
 * writes hints into (struct softhca_db_area, softhca-queue.h) and the
 * model's trusted view of it. A hint says "look at slot s"; what is there
 * to do is still read from the slot's doorbell record, so the cost of
 * finding work follows the slots that rang, not the objects that exist.
 *
 * Slots: every QP and CQ takes one at creation. The slot space is cut
 * into one range per engine thread (whole group words of 8 groups of 64
 * slots), and new slots go round robin over the threads, lowest free first,
 * so a thread's claims scan only the groups its live slots reach.
 *
 * Everything in the shared region is untrusted: a hint naming no object
 * is dropped, a hint beyond the groups in use is never looked at, hints
 * that stay cleared stall only the area's own objects. A claim takes at
 * most @max hints; the rest stay (or are put back) for the next one, which
 * is what lets the engine share itself fairly between areas.
 */
#include <linux/idr.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "model.h"

/* Groups of one thread's range: a whole number of 8-group words. */
static u32 hca_db_thread_groups(void)
{
	return (SOFTHCA_DB_GROUPS / hca_engine_nr_threads) & ~7U;
}

struct hca_db_area *hca_db_area_create(struct hca *hca)
{
	struct hca_db_area *a;
	unsigned int t;

	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return NULL;
	/* Pages of their own: the driver maps them into user space. */
	a->hint = vmalloc_user(PAGE_ALIGN(SOFTHCA_DB_AREA_SIZE));
	if (!a->hint) {
		kfree(a);
		return NULL;
	}
	a->hca = hca;
	mutex_init(&a->slot_lock);
	for (t = 0; t < SOFTHCA_DB_MAX_THREADS; t++) {
		ida_init(&a->ida[t]);
		INIT_LIST_HEAD(&a->watch[t].node);
		/* Nobody watches it yet: the first doorbell calls. */
		hca_db_set_need_wakeup(a, t, true);
	}
	return a;
}

void hca_db_area_destroy(struct hca_db_area *a)
{
	unsigned int i;

	for (i = 0; i < SOFTHCA_DB_MAX_THREADS; i++) {
		WARN_ON_ONCE(!ida_is_empty(&a->ida[i]));
		ida_destroy(&a->ida[i]);
	}
	for (i = 0; i < SOFTHCA_DB_GROUPS; i++)
		kfree(rcu_access_pointer(a->chunk[i]));
	mutex_destroy(&a->slot_lock);
	vfree(a->hint);
	kfree(a);
}

/* The chunk of group @g, allocated on first use; under slot_lock. */
static struct hca_db_target __rcu **hca_db_chunk(struct hca_db_area *a, u32 g)
{
	struct hca_db_target __rcu **chunk;

	chunk = rcu_dereference_protected(a->chunk[g],
					  lockdep_is_held(&a->slot_lock));
	if (chunk)
		return chunk;
	chunk = kcalloc(1U << SOFTHCA_DB_GROUP_SHIFT, sizeof(*chunk),
			GFP_KERNEL);
	if (chunk)
		rcu_assign_pointer(a->chunk[g], chunk);
	return chunk;
}

int hca_db_slot_alloc(struct hca_db_area *a, struct hca_db_target *tgt,
		      enum hca_db_type type)
{
	u32 per_thread = hca_db_thread_groups() << SOFTHCA_DB_GROUP_SHIFT;
	unsigned int t, tries;
	int local = -ENOSPC;
	u32 slot, g;

	mutex_lock(&a->slot_lock);
	/* Round robin, or the next thread that still has room. */
	for (tries = 0; tries < hca_engine_nr_threads; tries++) {
		t = a->next_thread++ % hca_engine_nr_threads;
		local = ida_alloc_max(&a->ida[t], per_thread - 1, GFP_KERNEL);
		if (local != -ENOSPC)
			break;
	}
	if (local < 0)
		goto out;
	slot = t * per_thread + local;
	g = slot >> SOFTHCA_DB_GROUP_SHIFT;
	if (!hca_db_chunk(a, g)) {
		ida_free(&a->ida[t], local);
		local = -ENOMEM;
		goto out;
	}
	tgt->type = type;
	tgt->thread = t;
	tgt->slot = slot;
	tgt->area = a;
	/* Claims of thread t scan its groups up to here from now on. */
	g -= t * hca_db_thread_groups();
	if (g + 1 > a->groups[t])
		WRITE_ONCE(a->groups[t], g + 1);
	local = 0;
out:
	mutex_unlock(&a->slot_lock);
	return local;
}

void hca_db_publish(struct hca_db_target *tgt)
{
	struct hca_db_area *a = tgt->area;
	struct hca_db_target __rcu **chunk;

	mutex_lock(&a->slot_lock);
	chunk = rcu_dereference_protected(a->chunk[tgt->slot >>
						   SOFTHCA_DB_GROUP_SHIFT],
					  lockdep_is_held(&a->slot_lock));
	rcu_assign_pointer(chunk[tgt->slot & (BIT(SOFTHCA_DB_GROUP_SHIFT) - 1)],
			   tgt);
	mutex_unlock(&a->slot_lock);
}

void hca_db_slot_free(struct hca_db_target *tgt)
{
	struct hca_db_area *a = tgt->area;
	u32 per_thread = hca_db_thread_groups() << SOFTHCA_DB_GROUP_SHIFT;
	struct hca_db_target __rcu **chunk;

	if (!a)
		return;
	mutex_lock(&a->slot_lock);
	chunk = rcu_dereference_protected(a->chunk[tgt->slot >>
						   SOFTHCA_DB_GROUP_SHIFT],
					  lockdep_is_held(&a->slot_lock));
	RCU_INIT_POINTER(chunk[tgt->slot & (BIT(SOFTHCA_DB_GROUP_SHIFT) - 1)],
			 NULL);
	/*
	 * The slot may be handed out again at once: a claim that still finds
	 * this target took its reference under RCU before we cleared it, and
	 * the owner's destroy waits for those; a late hint just looks at the
	 * next owner for nothing.
	 */
	ida_free(&a->ida[tgt->thread], tgt->slot - tgt->thread * per_thread);
	mutex_unlock(&a->slot_lock);
	tgt->area = NULL;
}

u32 hca_db_slot_thread(u32 slot)
{
	return slot / (hca_db_thread_groups() << SOFTHCA_DB_GROUP_SHIFT);
}

void hca_db_ring(struct hca_db_area *a, u32 slot)
{
	struct softhca_db_area *h = a->hint;
	u32 t = hca_db_slot_thread(slot);

	/*
	 * In the provider's order, each a release after what came before it:
	 * the doorbell record, then slot, group, thread (coarser last).
	 */
	smp_store_release(&h->slot[slot], 1);
	/* After the slot. */
	smp_store_release(&h->group[slot >> SOFTHCA_DB_GROUP_SHIFT], 1);
	/* After the group. */
	smp_store_release(&h->thread[t].pending, 1);
}

void hca_db_target_put(struct hca_db_target *tgt)
{
	if (tgt->type == HCA_DB_QP)
		hca_qp_put(container_of(tgt, struct hca_qp, db));
	else
		hca_cq_put(container_of(tgt, struct hca_cq, db));
}

/* The target of @slot with a reference, or NULL. */
static struct hca_db_target *hca_db_lookup(struct hca_db_area *a, u32 slot)
{
	struct hca_db_target __rcu **chunk;
	struct hca_db_target *tgt = NULL;
	refcount_t *users;

	rcu_read_lock();
	chunk = rcu_dereference(a->chunk[slot >> SOFTHCA_DB_GROUP_SHIFT]);
	if (chunk)
		tgt = rcu_dereference(chunk[slot &
					    (BIT(SOFTHCA_DB_GROUP_SHIFT) - 1)]);
	if (tgt) {
		users = tgt->type == HCA_DB_QP ?
			&container_of(tgt, struct hca_qp, db)->users :
			&container_of(tgt, struct hca_cq, db)->users;
		if (!refcount_inc_not_zero(users))
			tgt = NULL;
	}
	rcu_read_unlock();
	return tgt;
}

/*
 * The next byte set in @v, a word claimed from the shared region, read as
 * the bytes are laid out in memory; cleared from @v. -1 when none is left.
 */
static inline int hca_db_next_byte(u64 *v)
{
	int b;

	if (!*v)
		return -1;
	b = __ffs64(*v) / 8;
	*v &= ~(0xffULL << (b * 8));
	return b;
}

static inline u64 hca_db_take(u64 *word)
{
	return le64_to_cpu((__force __le64)xchg(word, 0));
}

/*
 * The hints of one claimed group (whole slot words taken by exchange):
 * look each one up until @max targets are stored, then give the rest back.
 */
static unsigned int hca_db_claim_group(struct hca_db_area *a, u32 g,
				       struct hca_db_target **out,
				       unsigned int n, unsigned int max,
				       unsigned int *claimed)
{
	u32 base = g << SOFTHCA_DB_GROUP_SHIFT;
	u64 *words = (u64 *)&a->hint->slot[base];
	unsigned int w;
	u64 bytes;
	int b;

	for (w = 0; w < BIT(SOFTHCA_DB_GROUP_SHIFT) / 8; w++) {
		if (!READ_ONCE(words[w]))
			continue;
		bytes = hca_db_take(&words[w]);
		while ((b = hca_db_next_byte(&bytes)) >= 0) {
			u32 slot = base + w * 8 + b;

			if (n == max) {
				hca_db_ring(a, slot);
				continue;
			}
			(*claimed)++;
			out[n] = hca_db_lookup(a, slot);
			if (out[n])
				n++;
		}
	}
	return n;
}

unsigned int hca_db_claim(struct hca_db_area *a, unsigned int t,
			  struct hca_db_target **out, unsigned int max,
			  unsigned int *claimed)
{
	struct softhca_db_area *h = a->hint;
	u32 first = t * hca_db_thread_groups();
	u32 end = first + READ_ONCE(a->groups[t]);
	unsigned int n = 0;
	u64 groups;
	u32 g;
	int b;

	*claimed = 0;
	/* The exchange orders it before our loads of the groups and slots. */
	if (!READ_ONCE(h->thread[t].pending) || !xchg(&h->thread[t].pending, 0))
		return 0;
	for (g = first; g < end; g += 8) {
		u64 *gw = (u64 *)&h->group[g];

		if (!READ_ONCE(*gw))
			continue;
		groups = hca_db_take(gw);
		while ((b = hca_db_next_byte(&groups)) >= 0) {
			if (g + b >= end)
				break;	/* beyond every live slot: dropped */
			if (n == max) {
				/* Out of budget: the rest waits for the next claim. */
				WRITE_ONCE(h->group[g + b], 1);
				/* The group byte before the thread's. */
				smp_store_release(&h->thread[t].pending, 1);
				continue;
			}
			n = hca_db_claim_group(a, g + b, out, n, max, claimed);
		}
	}
	return n;
}
