// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the RoCE address table (SET_ROCE_ADDRESS) and the
 * local fabric, the "wire" between every HCA instance of this host.
 *
 * A packet is delivered to the HCA that has its destination GID in its
 * table, then to the QP of that HCA with the destination QPN. The fabric is
 * a list of instances: writers (instance power on/off) serialise on a
 * mutex, the engine walks it under RCU; each table is read under its
 * spinlock, so both work in atomic context.
 */
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/string.h>

#include "model.h"

static LIST_HEAD(hca_fabric);
static DEFINE_MUTEX(hca_fabric_lock);
/* Routes cached before the last change are stale (struct hca_route). */
/* 64 bits: a wrapped counter could match a route to a freed QP. */
atomic64_t hca_fabric_gen = ATOMIC64_INIT(1);

void hca_fabric_changed(void)
{
	/* The change (QP erased, GID written), then the count a route
	 * reader checks: pairs with the acquire in hca_fabric_route().
	 */
	smp_mb__before_atomic();
	atomic64_inc(&hca_fabric_gen);
}

void hca_fabric_add(struct hca *hca)
{
	mutex_lock(&hca_fabric_lock);
	list_add_tail_rcu(&hca->fabric_node, &hca_fabric);
	hca_fabric_changed();
	mutex_unlock(&hca_fabric_lock);
}

void hca_fabric_del(struct hca *hca)
{
	mutex_lock(&hca_fabric_lock);
	list_del_rcu(&hca->fabric_node);
	hca_fabric_changed();
	mutex_unlock(&hca_fabric_lock);
	/* No lookup walks this instance any more. */
	synchronize_rcu();
}

int hca_cmd_set_roce_address(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_set_roce_address_in *in = inbox;
	const struct hca_gid_entry *e = &in->entry;
	unsigned long flags;
	u32 end;

	if (in->index >= hca->caps->gid_tbl_len || e->valid > 1)
		return -EINVAL;
	/* RoCE v2 only: the port claims ROCE_UDP_ENCAP alone. */
	if (e->valid && e->roce_version != 2)
		return -EINVAL;

	spin_lock_irqsave(&hca->gid_lock, flags);
	if (e->valid)
		hca->gids[in->index] = *e;
	else
		memset(&hca->gids[in->index], 0, sizeof(*e));
	for (end = hca->caps->gid_tbl_len; end; end--)
		if (hca->gids[end - 1].valid)
			break;
	hca->gid_end = end;
	spin_unlock_irqrestore(&hca->gid_lock, flags);
	hca_fabric_changed();
	return 0;
}

static bool hca_owns_gid(struct hca *hca, const u8 gid[16])
{
	unsigned long flags;
	bool found = false;
	u32 i;

	spin_lock_irqsave(&hca->gid_lock, flags);
	for (i = 0; i < hca->gid_end; i++) {
		if (hca->gids[i].valid &&
		    !memcmp(hca->gids[i].gid, gid, sizeof(hca->gids[i].gid))) {
			found = true;
			break;
		}
	}
	spin_unlock_irqrestore(&hca->gid_lock, flags);
	return found;
}

struct hca_qp *hca_fabric_find_qp(const u8 dgid[16], u32 dqpn)
{
	struct hca_qp *qp = NULL;
	struct hca *hca;

	rcu_read_lock();
	list_for_each_entry_rcu(hca, &hca_fabric, fabric_node) {
		if (hca_owns_gid(hca, dgid)) {
			qp = hca_qp_get(hca, dqpn);
			break;
		}
	}
	rcu_read_unlock();
	return qp;
}

struct hca_qp *hca_fabric_route_miss(struct hca_route *rt,
					   const u8 dgid[16], u32 dqpn, u64 gen)
{
	struct hca_qp *qp;

	/* The generation read before the lookup: a change meanwhile makes
	 * the next use look again.
	 */
	qp = hca_fabric_find_qp(dgid, dqpn);
	rt->qp = qp;
	rt->gen = gen;
	rt->dqpn = dqpn;
	memcpy(rt->dgid, dgid, sizeof(rt->dgid));
	return qp;
}
