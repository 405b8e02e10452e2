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
 *
 * Multicast: the fabric keeps the groups (ATTACH_TO_MCG / DETACH_FROM_MCG
 * of any instance) as a switch keeps its forwarding table: a datagram to a
 * group's GID, from any instance, reaches every QP attached to it on every
 * instance, under a read lock that attaching, detaching and DESTROY_QP take
 * for writing (so a member is alive while a datagram is handed to it).
 * An HCA whose port is on the wire also sends a datagram to a group there
 * (IP multicast out of its netdev), and its first QP in a group joins the
 * IP group on that netdev, its last one leaves it, so that the group's
 * datagrams from other hosts reach it (wire_net.c). With force_wire the
 * fabric hands a group's datagram only to the sender's own HCA: the other
 * instances take it from the wire.
 */
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/ipv6.h>

#include "engine.h"
#include "wire.h"

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

	if (in->index >= hca->caps->gid_tbl_len || e->valid > 1 ||
	    e->vlan_valid > 1 || e->vlan_id >= 4096)
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

bool hca_fabric_owns_gid(struct hca *hca, const u8 gid[16])
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

bool hca_fabric_gid(struct hca *hca, u32 index, struct hca_gid_entry *out)
{
	unsigned long flags;
	bool valid = false;

	if (index >= hca->caps->gid_tbl_len)
		return false;
	spin_lock_irqsave(&hca->gid_lock, flags);
	if (hca->gids[index].valid) {
		*out = hca->gids[index];
		valid = true;
	}
	spin_unlock_irqrestore(&hca->gid_lock, flags);
	return valid;
}

struct hca_qp *hca_fabric_find_qp(const u8 dgid[16], u32 dqpn)
{
	struct hca_qp *qp = NULL;
	struct hca *hca;

	rcu_read_lock();
	list_for_each_entry_rcu(hca, &hca_fabric, fabric_node) {
		if (hca_fabric_owns_gid(hca, dgid)) {
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

/* The HCA owning @dgid, under rcu_read_lock(); NULL: no local one. */
static struct hca *hca_fabric_owner(const u8 dgid[16])
{
	struct hca *hca;

	list_for_each_entry_rcu(hca, &hca_fabric, fabric_node)
		if (hca_fabric_owns_gid(hca, dgid))
			return hca;
	return NULL;
}

bool hca_fabric_no_qp(const u8 dgid[16])
{
	struct hca *hca;

	rcu_read_lock();
	hca = hca_fabric_owner(dgid);
	if (hca)
		atomic64_inc(&hca->rx_no_qp_drops);
	rcu_read_unlock();
	return hca;
}

bool hca_fabric_owned(const u8 dgid[16])
{
	bool owned;

	rcu_read_lock();
	owned = hca_fabric_owner(dgid);
	rcu_read_unlock();
	return owned;
}

/* ---- multicast ------------------------------------------------------------ */

/* A multicast group of the local fabric and the QPs attached to it. */
struct hca_mcg {
	struct list_head node;		/* on hca_mcgs */
	u8 gid[16];
	struct list_head members;	/* struct hca_mcg_member */
};

struct hca_mcg_member {
	struct list_head node;
	struct hca_qp *qp;		/* no reference: DESTROY_QP detaches */
};

static DECLARE_RWSEM(hca_mcast_lock);
static LIST_HEAD(hca_mcgs);
/*
 * Attach, detach and DESTROY_QP's detach one at a time, with the IP group
 * joins and leaves they cause (RTNL, not under hca_mcast_lock): so that
 * those happen in the order of the memberships.
 */
static DEFINE_MUTEX(hca_mcast_member_lock);

bool hca_gid_is_mcast(const u8 gid[16])
{
	const struct in6_addr *a = (const struct in6_addr *)gid;

	/* As ib_core's rdma_is_multicast_addr(): IPv6, or IPv4 mapped. */
	if (ipv6_addr_v4mapped(a))
		return ipv4_is_multicast(a->s6_addr32[3]);
	return ipv6_addr_is_multicast(a);
}

/* The group of @gid, or NULL; under hca_mcast_lock. */
static struct hca_mcg *hca_mcg_find(const u8 gid[16])
{
	struct hca_mcg *g;

	list_for_each_entry(g, &hca_mcgs, node)
		if (!memcmp(g->gid, gid, sizeof(g->gid)))
			return g;
	return NULL;
}

/* @qp's membership of @g, and how many of @hca's QPs are in @g. */
static struct hca_mcg_member *hca_mcg_member(struct hca_mcg *g,
					     struct hca_qp *qp, u32 *of_hca)
{
	struct hca_mcg_member *m, *found = NULL;

	*of_hca = 0;
	list_for_each_entry(m, &g->members, node) {
		if (m->qp == qp)
			found = m;
		*of_hca += m->qp->hca == qp->hca;
	}
	return found;
}

/*
 * @m leaves its group (freed, and the group with its last member); true
 * if it was the last of its HCA's QPs there.
 */
static bool hca_mcg_leave(struct hca_mcg *g, struct hca_mcg_member *m,
			  u32 of_hca)
{
	struct hca *hca = m->qp->hca;

	list_del(&m->node);
	m->qp->mcast_attached--;
	hca->mcast_attached--;
	if (of_hca == 1)
		hca->mcast_groups--;
	kfree(m);
	if (list_empty(&g->members)) {
		list_del(&g->node);
		kfree(g);
	}
	return of_hca == 1;
}

/* The UD QP @qpn of @hca (a type that joins groups), referenced; @gid multicast. */
static struct hca_qp *hca_mcg_qp(struct hca *hca,
				 const struct hca_cmd_mcg_in *in)
{
	struct hca_qp *qp;

	if (!hca_gid_is_mcast(in->gid))
		return NULL;
	qp = hca_qp_get(hca, in->qpn);
	if (qp && !qp->type->mcast) {
		hca_qp_put(qp);
		qp = NULL;
	}
	return qp;
}

/* *@first: the first of @hca's QPs in the group. */
static int hca_mcg_attach(struct hca *hca, struct hca_qp *qp,
			  const u8 gid[16], struct hca_mcg_member *m,
			  struct hca_mcg **newg, bool *first)
{
	const struct hca_caps *caps = hca->caps;
	struct hca_mcg *g = hca_mcg_find(gid);
	u32 of_hca = 0;

	/* Not if DESTROY_QP erased it: its detach may have run already. */
	if (xa_load(&hca->qps, qp->qpn) != qp)
		return -EINVAL;
	if (g && hca_mcg_member(g, qp, &of_hca))
		return -EEXIST;
	if (hca->mcast_attached >= caps->max_total_mcast_qp_attach ||
	    of_hca >= caps->max_mcast_qp_attach ||
	    (!of_hca && hca->mcast_groups >= caps->max_mcast_grp))
		return -ENOSPC;
	if (!g) {
		g = *newg;
		*newg = NULL;
		memcpy(g->gid, gid, sizeof(g->gid));
		INIT_LIST_HEAD(&g->members);
		list_add_tail(&g->node, &hca_mcgs);
	}
	m->qp = qp;
	list_add_tail(&m->node, &g->members);
	qp->mcast_attached++;
	hca->mcast_attached++;
	if (!of_hca)
		hca->mcast_groups++;
	*first = !of_hca;
	return 0;
}

int hca_cmd_attach_to_mcg(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_mcg_in *in = inbox;
	struct hca_mcg_member *m;
	bool first = false;
	struct hca_mcg *g;
	struct hca_qp *qp;
	int err = -ENOMEM;

	qp = hca_mcg_qp(hca, in);
	if (!qp)
		return -EINVAL;
	/* Allocated first: the lock is one the engine reads under. */
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	mutex_lock(&hca_mcast_member_lock);
	if (m && g) {
		down_write(&hca_mcast_lock);
		err = hca_mcg_attach(hca, qp, in->gid, m, &g, &first);
		up_write(&hca_mcast_lock);
		if (!err)
			m = NULL;
	}
	if (first)
		hca_wire_mcast_member(hca, in->gid, true);
	mutex_unlock(&hca_mcast_member_lock);
	kfree(g);
	kfree(m);
	hca_dbg_qp(qp, "attach to %pI6: %d\n", in->gid, err);
	hca_qp_put(qp);
	return err;
}

int hca_cmd_detach_from_mcg(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_mcg_in *in = inbox;
	struct hca_mcg_member *m = NULL;
	bool last = false;
	struct hca_mcg *g;
	struct hca_qp *qp;
	u32 of_hca;

	qp = hca_mcg_qp(hca, in);
	if (!qp)
		return -EINVAL;
	mutex_lock(&hca_mcast_member_lock);
	down_write(&hca_mcast_lock);
	g = hca_mcg_find(in->gid);
	if (g)
		m = hca_mcg_member(g, qp, &of_hca);
	if (m)
		last = hca_mcg_leave(g, m, of_hca);
	up_write(&hca_mcast_lock);
	if (last)
		hca_wire_mcast_member(hca, in->gid, false);
	mutex_unlock(&hca_mcast_member_lock);
	hca_qp_put(qp);
	return m ? 0 : -ENOENT;
}

/*
 * @qp leaves one of its groups; false if it has none left. *@last: it was
 * the last of its HCA's QPs there, whose GID is in @gid.
 */
static bool hca_mcg_leave_one(struct hca_qp *qp, u8 gid[16], bool *last)
{
	struct hca_mcg *g;

	list_for_each_entry(g, &hca_mcgs, node) {
		struct hca_mcg_member *m;
		u32 of_hca;

		m = hca_mcg_member(g, qp, &of_hca);
		if (m) {
			memcpy(gid, g->gid, sizeof(g->gid));
			*last = hca_mcg_leave(g, m, of_hca);
			return true;
		}
	}
	return false;
}

void hca_fabric_mcast_detach_all(struct hca_qp *qp)
{
	bool left, last = false;
	u8 gid[16];

	if (!qp->type->mcast)
		return;
	mutex_lock(&hca_mcast_member_lock);
	do {
		down_write(&hca_mcast_lock);
		left = qp->mcast_attached && hca_mcg_leave_one(qp, gid, &last);
		up_write(&hca_mcast_lock);
		if (left && last)
			hca_wire_mcast_member(qp->hca, gid, false);
	} while (left);
	mutex_unlock(&hca_mcast_member_lock);
}

/*
 * To every member of the group @dg is addressed to, on @only (NULL: any
 * instance); the sender's own QP too unless it blocks its multicast
 * loopback. Returns how many members took it.
 */
static unsigned int hca_fabric_mcast(struct hca_exec_ctx *ctx,
				     const struct hca_datagram *dg,
				     const struct hca *only)
{
	struct hca_mcg_member *m;
	unsigned int n = 0;
	struct hca_mcg *g;

	down_read(&hca_mcast_lock);
	g = hca_mcg_find(dg->dgid);
	if (g) {
		list_for_each_entry(m, &g->members, node) {
			if (only && m->qp->hca != only)
				continue;
			if (m->qp == dg->src &&
			    (dg->src->flags & HCA_QP_BLOCK_MCAST_LOOPBACK))
				continue;
			hca_ud_receive(ctx, dg, m->qp);
			n++;
		}
	}
	up_read(&hca_mcast_lock);
	return n;
}

void hca_fabric_mcast_from_wire(struct hca_exec_ctx *ctx, struct hca *hca,
				const struct hca_datagram *dg)
{
	/* From an instance of this host: the fabric handed it over already. */
	if (!READ_ONCE(hca_wire_force) && hca_fabric_owned(dg->sgid))
		return;
	if (!hca_fabric_mcast(ctx, dg, hca))
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
}

void hca_fabric_send_datagram(struct hca_exec_ctx *ctx,
			      const struct hca_datagram *dg,
			      struct hca_route *rt)
{
	struct hca_qp *qp;

	if (hca_gid_is_mcast(dg->dgid)) {
		hca_fabric_mcast(ctx, dg, READ_ONCE(hca_wire_force) ?
				 dg->src->hca : NULL);
		if (hca_wire_mcast_port(dg->src->hca))
			hca_wire_ud_send(ctx, dg);
		return;
	}
	if (unlikely(READ_ONCE(hca_wire_force))) {
		hca_wire_ud_send(ctx, dg);
		return;
	}
	qp = hca_fabric_route(rt, dg->dgid, dg->dqpn);
	if (!qp) {
		/* No HCA of this host has the GID: it is on the wire. */
		if (!hca_fabric_no_qp(dg->dgid))
			hca_wire_ud_send(ctx, dg);
		return;
	}
	hca_ud_receive(ctx, dg, qp);
	hca_qp_put(qp);
}
