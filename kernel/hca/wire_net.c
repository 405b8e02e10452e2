// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the port's PHY on the wire. The driver hands the
 * model its netdev (SET_PORT_NETDEV); the HCA then sends and takes RoCEv2
 * packets through the UDP 4791 tunnel socket of the netdev's network
 * namespace: one per namespace (an IPv4 and an IPv6 one), made when the
 * first HCA of that namespace is bound, closed when the last one goes or
 * the namespace does (pernet exit), whichever comes first.
 *
 * In the initial namespace a socket is made only with wire_init_net set:
 * rdma_rxe (Linux 6.1) holds UDP 4791 there from its module load on, and
 * taking it first makes a later modprobe of rdma_rxe fail. Without it an
 * HCA bound there works on the local fabric only, as one info line says.
 *
 * Receive: the socket's encap_rcv (softirq) finds the HCA owning the
 * destination IP among the HCAs of the namespace, checks the packet
 * (wire_pkt.c) and queues it on that HCA's receive queue (bounded by
 * wire_rx_queue_len: beyond it the packet is dropped and counted), then
 * pokes the engine thread that drains it. The thread counts a queued
 * packet as work (hca_wire_rx_pending()), so none waits for an unrelated
 * wake-up, and hands each to its transport in process context.
 *
 * Multicast: a packet to an IP multicast group goes to the HCAs of the
 * namespace bound to the netdev it came in on. An HCA's first QP in a
 * group joins the IP group on its netdev (the interface's membership, as
 * rdma_cm's join does it), its last one leaves it. The sockets do not loop
 * their own multicast back: the fabric gave it to this host's members.
 */
#include <linux/delay.h>
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/rtnetlink.h>
#include <linux/rculist.h>
#include <linux/skbuff.h>
#include <net/addrconf.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/page_pool.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "engine.h"
#include "wire.h"

bool hca_wire_force;
module_param_named(force_wire, hca_wire_force, bool, 0644);
MODULE_PARM_DESC(force_wire,
		 "Send every datagram over the wire, also to local devices (default 0)");

static bool wire_init_net;
module_param(wire_init_net, bool, 0644);
MODULE_PARM_DESC(wire_init_net,
		 "Devices bound in the initial namespace take UDP 4791 there, so rdma_rxe cannot load while they exist (default 0: local fabric only)");

static unsigned int wire_rx_queue_len = 1024;
module_param(wire_rx_queue_len, uint, 0644);
MODULE_PARM_DESC(wire_rx_queue_len,
		 "Packets an HCA's wire receive queue holds before it drops (default 1024)");

static atomic_long_t hca_wire_no_hca = ATOMIC_LONG_INIT(0);

static int hca_wire_no_hca_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&hca_wire_no_hca));
}

static const struct kernel_param_ops hca_wire_no_hca_ops = {
	.get = hca_wire_no_hca_get,
};

module_param_cb(wire_rx_no_hca, &hca_wire_no_hca_ops, NULL, 0444);
MODULE_PARM_DESC(wire_rx_no_hca,
		 "RoCEv2 packets to an address no HCA of their namespace owns");

/* Packets one pass of the engine takes from one receive queue. */
#define HCA_WIRE_RX_BUDGET	1024

/* The tunnel sockets of one namespace and the HCAs bound in it. */
struct hca_wire_net {
	struct net *net;		/* NULL once the namespace went */
	unsigned int users;		/* ports, under hca_wire_lock */
	struct socket *sock4, *sock6;
	struct sock __rcu *sk4, *sk6;	/* for transmit */
	struct list_head ports;		/* RCU; written under hca_wire_lock */
};

/* An HCA's port on its netdev (hca->wire). */
#define HCA_WIRE_TX_ORDERS	2

struct hca_wire_port {
	struct hca *hca;
	struct net_device *ndev;	/* held by the driver until hca_destroy */
	struct hca_wire_net *wn;	/* NULL: no socket, local fabric only */
	struct list_head node;		/* on wn->ports */
	struct sk_buff_head rxq;
	struct hca_engine_thread *thr;	/* drains rxq */
	struct list_head rx_node;	/* on thr->wire_rx, under thr->lock */
	bool on_rx;
	/* Of 1 and 2 pages (path MTU 4096); NULL: from page fragments. */
	struct page_pool *tx_pool[HCA_WIRE_TX_ORDERS];
	spinlock_t tx_pool_lock;	/* their allocation side */
	/*
	 * Bit HCA_WIRE_DRAINING: an executor (the thread or a wake-up call)
	 * takes rxq; one at a time, so a QP's packets are taken in order.
	 */
	unsigned long flags;
};

#define HCA_WIRE_DRAINING	0

struct hca_wire_stats {
	u64 v[HCA_HCNT_ODP_FIRST - HCA_HCNT_WIRE_FIRST];
};

/* Ports with a socket: packets may come (hca_wire_receiving()). */
static atomic_t hca_wire_receivers = ATOMIC_INIT(0);

bool hca_wire_receiving(void)
{
	return atomic_read(&hca_wire_receivers);
}

/* Binds, unbinds and namespace exits, one at a time. */
static DEFINE_MUTEX(hca_wire_lock);
static unsigned int hca_wire_net_id;

/* ---- counters ---------------------------------------------------------------- */

void hca_wire_count(struct hca *hca, unsigned int i, u64 n)
{
	this_cpu_add(hca->wire_stats->v[i - HCA_HCNT_WIRE_FIRST], n);
}

int hca_wire_init(struct hca *hca)
{
	hca->wire_stats = alloc_percpu(struct hca_wire_stats);
	return hca->wire_stats ? 0 : -ENOMEM;
}

void hca_wire_fini(struct hca *hca)
{
	free_percpu(hca->wire_stats);
}

void hca_wire_counters(struct hca *hca, u64 *value)
{
	unsigned int i;
	int cpu;

	for (i = 0; i < HCA_HCNT_ODP_FIRST - HCA_HCNT_WIRE_FIRST; i++) {
		value[i] = 0;
		for_each_possible_cpu(cpu)
			value[i] += per_cpu_ptr(hca->wire_stats, cpu)->v[i];
	}
}

/* ---- the port's view ------------------------------------------------------------ */

struct net_device *hca_wire_netdev(struct hca *hca)
{
	struct hca_wire_port *port = rcu_dereference(hca->wire);

	return port ? port->ndev : NULL;
}

struct sock *hca_wire_sock(struct hca *hca, bool v4)
{
	struct hca_wire_port *port = rcu_dereference(hca->wire);

	if (!port || !port->wn)
		return NULL;
	return v4 ? rcu_dereference(port->wn->sk4) :
		    rcu_dereference(port->wn->sk6);
}

/*
 * The transmit buffers: a page each (two for a packet of path MTU 4096)
 * from one of the port's page pools, which the skb gives back when it is
 * freed, by the peer's receive path or the
 * NIC's driver, whoever and wherever that is. Pages from the allocator
 * are zeroed on every allocation (init_on_alloc, Debian's default), and
 * the page fragment cache gets new pages, as zeroed, whenever the packets
 * of its current page are still in flight when it is used up: a seventh
 * of the engine's time in a 64 KiB ib_write_bw went to clear_page(). A
 * recycled page is not zeroed again.
 */
#define HCA_WIRE_TX_POOL	1024	/* pages recycled in a pool's ring */

static void hca_wire_tx_pool_init(struct hca_wire_port *port)
{
	struct page_pool_params pp = {
		.pool_size = HCA_WIRE_TX_POOL,
		.nid = NUMA_NO_NODE,
	};
	struct page_pool *pool;
	unsigned int order;

	spin_lock_init(&port->tx_pool_lock);
	for (order = 0; order < HCA_WIRE_TX_ORDERS; order++) {
		pp.order = order;
		pool = page_pool_create(&pp);
		/* None: the page fragment cache, as before. */
		port->tx_pool[order] = IS_ERR(pool) ? NULL : pool;
	}
}

static void hca_wire_tx_pool_fini(struct hca_wire_port *port)
{
	unsigned int order;

	/* Pages still in flight come back to it; it goes after the last. */
	for (order = 0; order < HCA_WIRE_TX_ORDERS; order++)
		if (port->tx_pool[order])
			page_pool_destroy(port->tx_pool[order]);
}

struct sk_buff *hca_wire_tx_skb(struct hca *hca, unsigned int size)
{
	struct hca_wire_port *port = rcu_dereference(hca->wire);
	struct page_pool *pool = NULL;
	unsigned int order;
	struct sk_buff *skb;
	struct page *page;

	for (order = 0; port && order < HCA_WIRE_TX_ORDERS; order++) {
		if (size <= SKB_WITH_OVERHEAD(PAGE_SIZE << order)) {
			pool = port->tx_pool[order];
			break;
		}
	}
	if (!pool)
		return __netdev_alloc_skb(NULL, size, GFP_ATOMIC);
	/* The pool's allocation side is not for two contexts at once. */
	spin_lock_bh(&port->tx_pool_lock);
	page = page_pool_dev_alloc_pages(pool);
	spin_unlock_bh(&port->tx_pool_lock);
	if (!page)
		return __netdev_alloc_skb(NULL, size, GFP_ATOMIC);
	skb = build_skb(page_address(page), PAGE_SIZE << order);
	if (!skb) {
		page_pool_put_full_page(pool, page, false);
		return NULL;
	}
	skb_mark_for_recycle(skb);
	return skb;
}

bool hca_wire_needed(const u8 dgid[16])
{
	return READ_ONCE(hca_wire_force) || !hca_fabric_owned(dgid);
}

bool hca_wire_src(struct hca *hca, u32 sgid_index, u8 sgid[16])
{
	struct hca_gid_entry e;

	if (!hca_fabric_gid(hca, sgid_index, &e))
		return false;
	memcpy(sgid, e.gid, sizeof(e.gid));
	return true;
}

/* ---- receive: softirq ------------------------------------------------------------ */

/* The port of the namespace whose HCA owns @dgid; RCU. */
static struct hca_wire_port *hca_wire_port_of(struct hca_wire_net *wn,
					      const u8 dgid[16])
{
	struct hca_wire_port *port;

	list_for_each_entry_rcu(port, &wn->ports, node)
		if (hca_fabric_owns_gid(port->hca, dgid))
			return port;
	return NULL;
}

/* @port has packets: on its thread's list, which it wakes if it sleeps. */
static void hca_wire_rx_list(struct hca_wire_port *port)
{
	struct hca_engine_thread *thr = port->thr;
	unsigned long flags;
	bool added = false;

	spin_lock_irqsave(&thr->lock, flags);
	if (!port->on_rx) {
		list_add_tail(&port->rx_node, &thr->wire_rx);
		port->on_rx = true;
		thr->nr_wire_rx++;
		added = true;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	/* A wake-up call that sent the packet here takes it before it returns. */
	if (added && !hca_wakeup_caller_here())
		hca_engine_thread_poke(thr);
}

static void hca_wire_queue(struct hca_wire_port *port, struct sk_buff *skb)
{
	if (skb_queue_len(&port->rxq) >= READ_ONCE(wire_rx_queue_len)) {
		hca_wire_count(port->hca, HCA_HCNT_WIRE_RX_QUEUE_FULL, 1);
		kfree_skb(skb);
		return;
	}
	/* Held for a while: nothing of the route is needed any more. */
	skb_dst_drop(skb);
	skb_queue_tail(&port->rxq, skb);
	hca_wire_rx_list(port);
}

/* The packet checked and queued for @port, or dropped and counted. */
static void hca_wire_take(struct hca_wire_port *port, struct sk_buff *skb)
{
	int why = hca_wire_check(skb);

	if (why) {
		hca_wire_count(port->hca, why, 1);
		kfree_skb(skb);
		return;
	}
	hca_wire_queue(port, skb);
}

/* To a multicast group: every port on the netdev it came in on; RCU. */
static void hca_wire_mcast_rcv(struct hca_wire_net *wn, struct sk_buff *skb)
{
	struct hca_wire_port *port, *to = NULL;
	struct sk_buff *copy;

	list_for_each_entry_rcu(port, &wn->ports, node) {
		if (port->ndev != skb->dev)
			continue;
		if (to) {
			copy = skb_clone(skb, GFP_ATOMIC);
			if (copy)
				hca_wire_take(to, copy);
		}
		to = port;
	}
	if (!to) {
		atomic_long_inc(&hca_wire_no_hca);
		kfree_skb(skb);
		return;
	}
	hca_wire_take(to, skb);
}

static int hca_wire_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct hca_wire_net *wn = rcu_dereference_sk_user_data(sk);
	struct hca_wire_port *port;
	u8 dgid[16];

	if (!wn)
		goto drop;
	hca_wire_dgid(skb, dgid);
	if (unlikely(hca_gid_is_mcast(dgid))) {
		hca_wire_mcast_rcv(wn, skb);
		return 0;
	}
	port = hca_wire_port_of(wn, dgid);
	if (!port) {
		atomic_long_inc(&hca_wire_no_hca);
		goto drop;
	}
	hca_wire_take(port, skb);
	return 0;
drop:
	kfree_skb(skb);
	return 0;
}

/* ---- receive: the engine thread ---------------------------------------------------- */

bool hca_wire_rx_pending(struct hca_engine_thread *thr)
{
	return READ_ONCE(thr->nr_wire_rx);
}

static void hca_wire_deliver(struct hca_exec_ctx *ctx, struct hca *hca,
			     struct sk_buff *skb)
{
	struct hca_wire_pkt pkt;

	hca_wire_parse(skb, &pkt);
	hca_wire_count(hca, HCA_HCNT_WIRE_RX_PACKETS, 1);
	hca_wire_count(hca, HCA_HCNT_WIRE_RX_BYTES, ntohs(udp_hdr(skb)->len) -
		       sizeof(struct udphdr));
	if ((pkt.h.opcode & HCA_WIRE_TP_MASK) == HCA_WIRE_TP_UD) {
		hca_wire_ud_recv(ctx, hca, &pkt);
	} else if (pkt.op->flags & HCA_WF_CNP) {
		hca_wire_cc_cnp_recv(hca, &pkt);
		consume_skb(skb);
	} else {
		hca_wire_rc_recv(ctx, hca, &pkt);
	}
	hca_run_deferred(ctx);
}

/*
 * The next port of @thr with packets queued that no other executor is
 * draining: taken off the list, its DRAINING bit ours; or NULL. A port
 * leaves the list only so; one being drained stays on it.
 */
static struct hca_wire_port *hca_wire_rx_next(struct hca_engine_thread *thr)
{
	struct hca_wire_port *port;
	unsigned long flags;

	spin_lock_irqsave(&thr->lock, flags);
	list_for_each_entry(port, &thr->wire_rx, rx_node) {
		if (test_and_set_bit_lock(HCA_WIRE_DRAINING, &port->flags))
			continue;
		list_del(&port->rx_node);
		port->on_rx = false;
		thr->nr_wire_rx--;
		spin_unlock_irqrestore(&thr->lock, flags);
		return port;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	return NULL;
}

/*
 * Take what @thr's ports have queued, a budget per port; from the thread's
 * passes, and from a wake-up call while the thread does not poll (a post's
 * packets to a local peer come back through the stack before the call
 * returns: the call takes them, and the replies they cause, at once).
 */
bool hca_wire_run_rx(struct hca_exec_ctx *ctx, struct hca_engine_thread *thr)
{
	unsigned int todo = READ_ONCE(thr->nr_wire_rx), n;
	struct hca_wire_port *port;
	struct sk_buff *skb;
	bool progress = false;

	while (todo-- && (port = hca_wire_rx_next(thr))) {
		ctx->acks_open = true;	/* ACKs coalesce over the batch */
		for (n = 0; n < HCA_WIRE_RX_BUDGET; n++) {
			skb = skb_dequeue(&port->rxq);
			if (!skb)
				break;
			hca_wire_deliver(ctx, port->hca, skb);
			progress = true;
		}
		hca_wire_acks_flush(ctx);
		/*
		 * Over budget: back at the tail, after the other ports. Before
		 * the bit goes: hca_wire_unbind() waits for it, then delists.
		 */
		if (!skb_queue_empty(&port->rxq))
			hca_wire_rx_list(port);
		clear_bit_unlock(HCA_WIRE_DRAINING, &port->flags);
	}
	return progress;
}

/* ---- the tunnel sockets of a namespace ---------------------------------------------- */

static struct socket *hca_wire_sock_open(struct net *net, bool v6,
					 struct hca_wire_net *wn)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = wn,
		.encap_type = 1,
		.encap_rcv = hca_wire_encap_rcv,
	};
	struct udp_port_cfg cfg = {
		.family = v6 ? AF_INET6 : AF_INET,
		.local_udp_port = htons(HCA_ROCE_UDP_PORT),
		.ipv6_v6only = v6,
		/* RoCEv2 leaves the UDP checksum 0: the ICRC covers it. */
		.use_udp6_rx_checksums = false,
	};
	struct socket *sock;

	if (udp_sock_create(net, &cfg, &sock))
		return NULL;
	setup_udp_tunnel_sock(net, sock, &tcfg);
	/* Our multicast is this host's members' already (fabric.c). */
	if (v6)
		inet6_sk(sock->sk)->mc_loop = 0;
	else
		inet_sk(sock->sk)->mc_loop = 0;
	return sock;
}

/* No transmit or receive uses @wn's sockets once this returns. */
static void hca_wire_net_close(struct hca_wire_net *wn)
{
	RCU_INIT_POINTER(wn->sk4, NULL);
	RCU_INIT_POINTER(wn->sk6, NULL);
	synchronize_net();
	if (wn->sock4)
		udp_tunnel_sock_release(wn->sock4);
	if (wn->sock6)
		udp_tunnel_sock_release(wn->sock6);
	wn->sock4 = NULL;
	wn->sock6 = NULL;
	/* An encap_rcv that read the user data before it was cleared. */
	synchronize_net();
}

static struct hca_wire_net **hca_wire_net_slot(struct net *net)
{
	return net_generic(net, hca_wire_net_id);
}

/* The sockets of @net with one more user, made if needed; NULL: none. */
static struct hca_wire_net *hca_wire_net_get(struct hca *hca, struct net *net)
{
	struct hca_wire_net **slot = hca_wire_net_slot(net);
	struct hca_wire_net *wn = *slot;

	lockdep_assert_held(&hca_wire_lock);
	if (!wn) {
		/* A namespace on its way out gets no new socket. */
		if (!check_net(net))
			return NULL;
		wn = kzalloc(sizeof(*wn), GFP_KERNEL);
		if (!wn)
			return NULL;
		wn->net = net;
		INIT_LIST_HEAD(&wn->ports);
		wn->sock4 = hca_wire_sock_open(net, false, wn);
		wn->sock6 = hca_wire_sock_open(net, true, wn);
		if (!wn->sock4 && !wn->sock6) {
			pr_info("softhca %s: UDP port %u is taken in its network namespace: local fabric only\n",
				hca->name, HCA_ROCE_UDP_PORT);
			kfree(wn);
			return NULL;
		}
		if (wn->sock4)
			rcu_assign_pointer(wn->sk4, wn->sock4->sk);
		if (wn->sock6)
			rcu_assign_pointer(wn->sk6, wn->sock6->sk);
		*slot = wn;
	}
	wn->users++;
	return wn;
}

static void hca_wire_net_put(struct hca_wire_net *wn)
{
	lockdep_assert_held(&hca_wire_lock);
	if (--wn->users)
		return;
	if (wn->net) {
		*hca_wire_net_slot(wn->net) = NULL;
		hca_wire_net_close(wn);
	}
	kfree(wn);
}

/* The namespace goes: its sockets with it, whoever is still bound. */
static void __net_exit hca_wire_net_exit(struct net *net)
{
	struct hca_wire_net **slot = hca_wire_net_slot(net);
	struct hca_wire_net *wn;

	mutex_lock(&hca_wire_lock);
	wn = *slot;
	if (wn) {
		*slot = NULL;
		wn->net = NULL;
		hca_wire_net_close(wn);
	}
	mutex_unlock(&hca_wire_lock);
}

static struct pernet_operations hca_wire_net_ops = {
	.exit = hca_wire_net_exit,
	.id = &hca_wire_net_id,
	.size = sizeof(struct hca_wire_net *),
};

/* ---- binding --------------------------------------------------------------------------- */

static int hca_wire_bind(struct hca *hca, struct net_device *ndev)
{
	struct net *net = dev_net(ndev);
	struct hca_wire_port *port;

	port = kzalloc(sizeof(*port), GFP_KERNEL);
	if (!port)
		return -ENOMEM;
	port->hca = hca;
	port->ndev = ndev;
	skb_queue_head_init(&port->rxq);
	INIT_LIST_HEAD(&port->rx_node);
	hca_wire_tx_pool_init(port);
	/* Every HCA's queue on the first thread: it serves the wire. */
	port->thr = &hca_engine_threads[0];

	mutex_lock(&hca_wire_lock);
	if (rcu_access_pointer(hca->wire)) {
		mutex_unlock(&hca_wire_lock);
		hca_wire_tx_pool_fini(port);
		kfree(port);
		return -EBUSY;
	}
	if (net_eq(net, &init_net) && !READ_ONCE(wire_init_net))
		pr_info("softhca %s: no RoCEv2 wire in the initial network namespace without wire_init_net (UDP %u there would keep rdma_rxe from loading): local fabric only\n",
			hca->name, HCA_ROCE_UDP_PORT);
	else
		port->wn = hca_wire_net_get(hca, net);
	if (port->wn) {
		list_add_tail_rcu(&port->node, &port->wn->ports);
		atomic_inc(&hca_wire_receivers);
	}
	rcu_assign_pointer(hca->wire, port);
	mutex_unlock(&hca_wire_lock);
	return 0;
}

int hca_cmd_set_port_netdev(struct hca *hca, const void *inbox, void *outbox)
{
	const struct hca_cmd_set_port_netdev_in *in = inbox;

	if (in->port < 1 || in->port > hca->caps->num_ports || !in->ndev ||
	    in->rsvd)
		return -EINVAL;
	return hca_wire_bind(hca, in->ndev);
}

void hca_wire_unbind(struct hca *hca)
{
	struct hca_wire_port *port;
	struct hca_engine_thread *thr;
	unsigned long flags;

	mutex_lock(&hca_wire_lock);
	port = rcu_dereference_protected(hca->wire,
					 lockdep_is_held(&hca_wire_lock));
	if (port) {
		RCU_INIT_POINTER(hca->wire, NULL);
		if (port->wn) {
			list_del_rcu(&port->node);
			atomic_dec(&hca_wire_receivers);
		}
	}
	mutex_unlock(&hca_wire_lock);
	if (!port)
		return;
	/* No encap_rcv queues to it and no transmit looks at it now. */
	synchronize_net();
	thr = port->thr;
	/* Ours for good once no executor drains it: none lists it again. */
	while (test_and_set_bit_lock(HCA_WIRE_DRAINING, &port->flags))
		usleep_range(50, 100);
	spin_lock_irqsave(&thr->lock, flags);
	if (port->on_rx) {
		list_del(&port->rx_node);
		thr->nr_wire_rx--;
	}
	spin_unlock_irqrestore(&thr->lock, flags);
	skb_queue_purge(&port->rxq);
	if (port->wn) {
		mutex_lock(&hca_wire_lock);
		hca_wire_net_put(port->wn);
		mutex_unlock(&hca_wire_lock);
	}
	hca_wire_tx_pool_fini(port);
	kfree(port);
}

/* ---- multicast groups ------------------------------------------------------------------ */

bool hca_wire_mcast_port(struct hca *hca)
{
	struct hca_wire_port *port;
	bool on;

	rcu_read_lock();
	port = rcu_dereference(hca->wire);
	on = port && port->wn;
	rcu_read_unlock();
	return on;
}

void hca_wire_mcast_member(struct hca *hca, const u8 gid[16], bool join)
{
	const struct in6_addr *a = (const struct in6_addr *)gid;
	struct hca_wire_port *port;
	struct in_device *in_dev;
	struct net_device *ndev;
	int err = 0;

	rtnl_lock();
	/* The port lives as long as the HCA, whose QP is attaching. */
	port = rcu_dereference_protected(hca->wire, true);
	if (!port || !port->wn)
		goto out;
	ndev = port->ndev;
	if (ipv6_addr_v4mapped(a)) {
		/* Gone with its device (unregistered, or moved): nothing to do. */
		in_dev = __in_dev_get_rtnl(ndev);
		if (in_dev && join)
			__ip_mc_inc_group(in_dev, a->s6_addr32[3], GFP_KERNEL);
		else if (in_dev)
			__ip_mc_dec_group(in_dev, a->s6_addr32[3], GFP_KERNEL);
	} else {
		err = join ? ipv6_dev_mc_inc(ndev, a) : ipv6_dev_mc_dec(ndev, a);
	}
out:
	rtnl_unlock();
	hca_dbg(hca, "%s %pI6 on the wire: %d\n", join ? "join" : "leave", gid, err);
}

int hca_wire_module_init(void)
{
	if (!hca_wire_opcodes_ok()) {
		pr_err("softhca: the wire's opcode table is not what wire.h says\n");
		return -EINVAL;
	}
	return register_pernet_subsys(&hca_wire_net_ops);
}

void hca_wire_module_exit(void)
{
	unregister_pernet_subsys(&hca_wire_net_ops);
}
