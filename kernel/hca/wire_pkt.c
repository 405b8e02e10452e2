// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: RoCEv2 packets (IBTA Vol 1 ch. 9, Annex A17). The
 * only code that reads or writes the big-endian headers: BTH and the
 * extension headers its opcode has (in the order of the spec: XRCETH,
 * DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, one row each in
 * hca_wire_exts[]), the pad to 4 bytes, the ICRC (CRC-32 over the IP, UDP
 * and BTH headers with their variant fields masked to ones, then the rest
 * of the packet), UDP to port 4791 and the IPv4 or IPv6 header, routed in
 * the namespace of the port's tunnel socket.
 *
 * Receive is in two steps: hca_wire_check() in softirq decides whether a
 * packet is one at all (lengths, opcode, headers, pad, ICRC; anything else
 * is counted by reason and dropped; nothing is read past the packet), and
 * hca_wire_parse() in the engine reads the checked packet's fields.
 */
#include <linux/crc32.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <asm/unaligned.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/dsfield.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/udp.h>

#include "wire.h"

/* Header layouts, for their sizes: fields are read with get_unaligned. */
struct hca_bth {
	u8 opcode;
	u8 se_m_pad_tver;		/* SE, MigReq, PadCnt (2), TVer (4) */
	__be16 pkey;
	__be32 fb_dqpn;			/* FECN, BECN, 6 reserved, DestQP */
	__be32 a_psn;			/* AckReq, 7 reserved, PSN */
} __packed;

struct hca_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

struct hca_atomic_eth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

struct hca_deth {
	__be32 qkey;
	__be32 sqpn;			/* 8 reserved, SrcQP */
} __packed;

#define HCA_BTH_LEN		sizeof(struct hca_bth)
#define HCA_ICRC_LEN		4
#define HCA_BTH_B1_SE		0x80	/* in byte 1 */
#define HCA_BTH_B1_MIG		0x40
#define HCA_BTH_PAD_SHIFT	4
#define HCA_BTH_PAD_MASK	0x3
#define HCA_BTH_TVER_MASK	0xf
#define HCA_BTH_APSN_ACKREQ	BIT(31)	/* in the last word */
#define HCA_QPN_MASK		0xffffff
/* BTH byte 4 (FECN, BECN, reserved): masked in the ICRC. */
#define HCA_BTH_VARIANT_BYTE	4
#define HCA_BTH_B4_BECN		0x40
#define HCA_CNP_RSVD_LEN	16

/* ---- extension headers: one row each, in the order a packet has them ---- */

struct hca_wire_ext {
	u16 hdr;			/* HCA_WH_* */
	u8 len;
	void (*put)(u8 *p, const struct hca_wire_hdr *h);
	void (*get)(const u8 *p, struct hca_wire_hdr *h);
};

static void hca_deth_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be32(h->deth.qkey, p);
	put_unaligned_be32(h->deth.sqpn & HCA_QPN_MASK, p + 4);
}

static void hca_deth_get(const u8 *p, struct hca_wire_hdr *h)
{
	h->deth.qkey = get_unaligned_be32(p);
	h->deth.sqpn = get_unaligned_be32(p + 4) & HCA_QPN_MASK;
}

static void hca_reth_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be64(h->reth.va, p);
	put_unaligned_be32(h->reth.rkey, p + 8);
	put_unaligned_be32(h->reth.len, p + 12);
}

static void hca_reth_get(const u8 *p, struct hca_wire_hdr *h)
{
	h->reth.va = get_unaligned_be64(p);
	h->reth.rkey = get_unaligned_be32(p + 8);
	h->reth.len = get_unaligned_be32(p + 12);
}

static void hca_atomic_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be64(h->atomic.va, p);
	put_unaligned_be32(h->atomic.rkey, p + 8);
	put_unaligned_be64(h->atomic.swap_add, p + 12);
	put_unaligned_be64(h->atomic.compare, p + 20);
}

static void hca_atomic_get(const u8 *p, struct hca_wire_hdr *h)
{
	h->atomic.va = get_unaligned_be64(p);
	h->atomic.rkey = get_unaligned_be32(p + 8);
	h->atomic.swap_add = get_unaligned_be64(p + 12);
	h->atomic.compare = get_unaligned_be64(p + 20);
}

static void hca_aeth_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be32((u32)h->aeth.syndrome << 24 |
			   (h->aeth.msn & HCA_QPN_MASK), p);
}

static void hca_aeth_get(const u8 *p, struct hca_wire_hdr *h)
{
	u32 v = get_unaligned_be32(p);

	h->aeth.syndrome = v >> 24;
	h->aeth.msn = v & HCA_QPN_MASK;
}

static void hca_atomack_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be64(h->atomic_orig, p);
}

static void hca_atomack_get(const u8 *p, struct hca_wire_hdr *h)
{
	h->atomic_orig = get_unaligned_be64(p);
}

static void hca_imm_put(u8 *p, const struct hca_wire_hdr *h)
{
	memcpy(p, &h->imm, sizeof(h->imm));
}

static void hca_imm_get(const u8 *p, struct hca_wire_hdr *h)
{
	memcpy(&h->imm, p, sizeof(h->imm));
}

static void hca_ieth_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be32(h->ieth_rkey, p);
}

static void hca_ieth_get(const u8 *p, struct hca_wire_hdr *h)
{
	h->ieth_rkey = get_unaligned_be32(p);
}

static void hca_xrceth_put(u8 *p, const struct hca_wire_hdr *h)
{
	put_unaligned_be32(h->xrc_srqn & HCA_PSN_MASK, p);
}

static void hca_xrceth_get(const u8 *p, struct hca_wire_hdr *h)
{
	/* The first byte is reserved: ignored, as IBTA asks. */
	h->xrc_srqn = get_unaligned_be32(p) & HCA_PSN_MASK;
}

/* A CNP's 16 bytes after the BTH: reserved, sent 0, ignored. */
static void hca_cnp_put(u8 *p, const struct hca_wire_hdr *h)
{
	memset(p, 0, HCA_CNP_RSVD_LEN);
}

static void hca_cnp_get(const u8 *p, struct hca_wire_hdr *h)
{
}

/* In the order they follow the BTH. */
static const struct hca_wire_ext hca_wire_exts[] = {
	{ HCA_WH_XRCETH, sizeof(__be32), hca_xrceth_put, hca_xrceth_get },
	{ HCA_WH_DETH, sizeof(struct hca_deth), hca_deth_put, hca_deth_get },
	{ HCA_WH_RETH, sizeof(struct hca_reth), hca_reth_put, hca_reth_get },
	{ HCA_WH_ATOMIC, sizeof(struct hca_atomic_eth), hca_atomic_put,
	  hca_atomic_get },
	{ HCA_WH_AETH, sizeof(__be32), hca_aeth_put, hca_aeth_get },
	{ HCA_WH_ATOMACK, sizeof(__be64), hca_atomack_put, hca_atomack_get },
	{ HCA_WH_IMM, sizeof(__be32), hca_imm_put, hca_imm_get },
	{ HCA_WH_IETH, sizeof(__be32), hca_ieth_put, hca_ieth_get },
	{ HCA_WH_CNP, HCA_CNP_RSVD_LEN, hca_cnp_put, hca_cnp_get },
};

/* Bytes of BTH and every extension header of @op. */
static u32 hca_wire_hdr_len(const struct hca_wire_opcode *op)
{
	u32 i, len = HCA_BTH_LEN;

	BUILD_BUG_ON(sizeof(struct hca_bth) != 12);
	BUILD_BUG_ON(sizeof(struct hca_reth) != 16);
	BUILD_BUG_ON(sizeof(struct hca_atomic_eth) != 28);
	BUILD_BUG_ON(sizeof(struct hca_deth) != 8);
	for (i = 0; i < ARRAY_SIZE(hca_wire_exts); i++)
		if (op->hdrs & hca_wire_exts[i].hdr)
			len += hca_wire_exts[i].len;
	return len;
}

/* ---- the flow's UDP source port ------------------------------------------ */

u16 hca_wire_sport(u32 flow_label, u32 src_qpn, u32 dst_qpn)
{
	u32 fl = flow_label & 0xfffff;

	/* A17.5.3: no flow label, then one from the QPN pair. */
	if (!fl) {
		u64 v = (u64)src_qpn * dst_qpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = v & 0xfffff;
	}
	/* 20 bits into 14: the high 6 folded onto the low 14. */
	return 0xc000 | ((fl & 0x3fff) ^ (fl >> 14));
}

/* ---- ICRC ------------------------------------------------------------------ */

/*
 * The ICRC of the packet whose IP header is at @ip (@v4: IPv4 without
 * options, else IPv6 with UDP next), UDP right after, up to @end (where
 * the ICRC goes). The variant fields (IPv4 TOS, TTL, checksum; IPv6 traffic
 * class, flow label, hop limit; UDP checksum; BTH byte 4) count as ones,
 * and the 8 bytes of the LRH RoCE does not have come first, all ones.
 */
static u32 hca_wire_icrc(const u8 *ip, bool v4, const u8 *end)
{
	static const u8 lrh[8] = { 0xff, 0xff, 0xff, 0xff,
				   0xff, 0xff, 0xff, 0xff };
	u8 ph[sizeof(struct ipv6hdr) + sizeof(struct udphdr) + HCA_BTH_LEN];
	u32 iplen = v4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	u32 phlen = iplen + sizeof(struct udphdr) + HCA_BTH_LEN;
	struct udphdr *uh = (void *)(ph + iplen);
	u32 crc;

	memcpy(ph, ip, phlen);
	if (v4) {
		struct iphdr *iph = (void *)ph;

		iph->tos = 0xff;
		iph->ttl = 0xff;
		iph->check = htons(0xffff);
	} else {
		/* Version stays; traffic class and flow label all ones. */
		ph[0] |= 0x0f;
		ph[1] = 0xff;
		ph[2] = 0xff;
		ph[3] = 0xff;
		((struct ipv6hdr *)ph)->hop_limit = 0xff;
	}
	uh->check = htons(0xffff);
	ph[iplen + sizeof(struct udphdr) + HCA_BTH_VARIANT_BYTE] = 0xff;
	crc = crc32_le(~0U, lrh, sizeof(lrh));
	crc = crc32_le(crc, ph, phlen);
	crc = crc32_le(crc, ip + phlen, end - (ip + phlen));
	return ~crc;
}

/* ---- transmit ---------------------------------------------------------------- */

/* What hca_wire_send() needs of the envelope, in skb->cb until then. */
struct hca_wire_txcb {
	u8 sgid[16];
	u8 dgid[16];
	u32 flow_label;
	u16 udp_sport;
	u8 tclass;
	u8 hop_limit;
	struct dst_cache *route;	/* the sender holds its QP meanwhile */
};

#define HCA_WIRE_HEADROOM	(sizeof(struct ipv6hdr) + sizeof(struct udphdr))

static void hca_wire_put_hdrs(u8 *p, const struct hca_wire_opcode *op,
			      const struct hca_wire_hdr *h, u32 pad)
{
	u32 i;

	p[0] = h->opcode;
	p[1] = (h->flags & HCA_BTH_SE ? HCA_BTH_B1_SE : 0) |
	       (h->flags & HCA_BTH_MIG ? HCA_BTH_B1_MIG : 0) |
	       pad << HCA_BTH_PAD_SHIFT;
	put_unaligned_be16(h->pkey, p + 2);
	put_unaligned_be32(h->dqpn & HCA_QPN_MASK, p + 4);
	if (h->flags & HCA_BTH_BECN)
		p[HCA_BTH_VARIANT_BYTE] = HCA_BTH_B4_BECN;
	put_unaligned_be32((h->flags & HCA_BTH_ACKREQ ? HCA_BTH_APSN_ACKREQ : 0) |
			   (h->psn & HCA_PSN_MASK), p + 8);
	p += HCA_BTH_LEN;
	for (i = 0; i < ARRAY_SIZE(hca_wire_exts); i++) {
		if (op->hdrs & hca_wire_exts[i].hdr) {
			hca_wire_exts[i].put(p, h);
			p += hca_wire_exts[i].len;
		}
	}
}

struct sk_buff *hca_wire_alloc(struct hca *hca, const struct hca_wire_addr *a,
			       const struct hca_wire_hdr *h, u32 paylen,
			       u8 **payload)
{
	const struct hca_wire_opcode *op = hca_wire_opcode(h->opcode);
	struct hca_wire_txcb *cb;
	struct net_device *ndev;
	u32 hlen, pad, room;
	struct sk_buff *skb;
	u8 *p;

	BUILD_BUG_ON(sizeof(struct hca_wire_txcb) > sizeof(skb->cb));
	/* A transport asking for a packet the table has not: its bug. */
	if (WARN_ON_ONCE(!op || (paylen && !(op->flags & HCA_WF_PAYLOAD))))
		return NULL;
	hlen = hca_wire_hdr_len(op);
	pad = -paylen & 3;
	rcu_read_lock();
	ndev = hca_wire_netdev(hca);
	/* No socket (the initial namespace): no copy for nothing. */
	if (!hca_wire_sock(hca, ipv6_addr_v4mapped((const void *)a->dgid)))
		ndev = NULL;
	if (!ndev) {
		rcu_read_unlock();
		hca_wire_count(hca, HCA_HCNT_WIRE_TX_NO_ROUTE, 1);
		return NULL;
	}
	room = LL_RESERVED_SPACE(ndev) + ndev->needed_tailroom;
	/* Not kmalloc()ed: that head would be zeroed for every packet. */
	skb = hca_wire_tx_skb(hca, room + HCA_WIRE_HEADROOM + hlen + paylen +
			      pad + HCA_ICRC_LEN);
	rcu_read_unlock();
	if (!skb)
		return NULL;
	skb_reserve(skb, room + HCA_WIRE_HEADROOM);
	p = skb_put(skb, hlen + paylen + pad);
	hca_wire_put_hdrs(p, op, h, pad);
	memset(p + hlen + paylen, 0, pad);
	*payload = p + hlen;

	cb = (struct hca_wire_txcb *)skb->cb;
	memcpy(cb->sgid, a->sgid, sizeof(cb->sgid));
	memcpy(cb->dgid, a->dgid, sizeof(cb->dgid));
	cb->flow_label = a->flow_label;
	cb->udp_sport = a->udp_sport;
	cb->tclass = hca_wire_cc_tclass(a->tclass, op);
	cb->hop_limit = a->hop_limit;
	cb->route = a->route;
	return skb;
}

static struct dst_entry *hca_wire_route4(struct net *net,
					 struct net_device *ndev,
					 const struct hca_wire_txcb *cb)
{
	struct flowi4 fl = {
		.flowi4_oif = ndev->ifindex,
		.flowi4_tos = cb->tclass & IPTOS_TOS_MASK,
		.flowi4_proto = IPPROTO_UDP,
	};
	struct rtable *rt;

	memcpy(&fl.saddr, cb->sgid + 12, sizeof(fl.saddr));
	memcpy(&fl.daddr, cb->dgid + 12, sizeof(fl.daddr));
	rt = ip_route_output_key(net, &fl);
	return IS_ERR(rt) ? NULL : &rt->dst;
}

static struct dst_entry *hca_wire_route6(struct net *net, struct sock *sk,
					 struct net_device *ndev,
					 const struct hca_wire_txcb *cb)
{
	struct flowi6 fl = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst;

	memcpy(&fl.saddr, cb->sgid, sizeof(fl.saddr));
	memcpy(&fl.daddr, cb->dgid, sizeof(fl.daddr));
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, sk, &fl, NULL);
	return IS_ERR(dst) ? NULL : dst;
}

/*
 * The route of a packet: an RC QP's is kept in its per-CPU cache (the
 * FIB lookup was a few per cent of a 64 KiB ib_write_bw's profile) until the
 * routing tables change or the QP connects again; a datagram's is looked
 * up for it.
 */
static struct dst_entry *hca_wire_route(struct net *net, struct sock *sk,
					struct net_device *ndev,
					const struct hca_wire_txcb *cb, bool v4)
{
	struct in6_addr saddr6;
	struct dst_entry *dst;
	__be32 saddr4;

	if (cb->route) {
		dst = v4 ? (struct dst_entry *)dst_cache_get_ip4(cb->route, &saddr4) :
			   dst_cache_get_ip6(cb->route, &saddr6);
		if (dst)
			return dst;
	}
	dst = v4 ? hca_wire_route4(net, ndev, cb) :
		   hca_wire_route6(net, sk, ndev, cb);
	if (!dst || !cb->route)
		return dst;
	if (v4) {
		memcpy(&saddr4, cb->sgid + 12, sizeof(saddr4));
		dst_cache_set_ip4(cb->route, dst, saddr4);
	} else {
		memcpy(&saddr6, cb->sgid, sizeof(saddr6));
		dst_cache_set_ip6(cb->route, dst, &saddr6);
	}
	return dst;
}

static void hca_wire_push_udp(struct sk_buff *skb, u16 sport)
{
	struct udphdr *uh;

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = htons(sport);
	uh->dest = htons(HCA_ROCE_UDP_PORT);
	uh->len = htons(skb->len);
	uh->check = 0;		/* RoCEv2: the ICRC protects it */
}

/* IPv4 with DF set, as RoCE NICs send it. */
static void hca_wire_push_ip4(struct net *net, struct sk_buff *skb,
			      struct dst_entry *dst,
			      const struct hca_wire_txcb *cb)
{
	struct iphdr *iph;

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = cb->tclass;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = cb->hop_limit ?: ip4_dst_hoplimit(dst);
	iph->protocol = IPPROTO_UDP;
	memcpy(&iph->saddr, cb->sgid + 12, sizeof(iph->saddr));
	memcpy(&iph->daddr, cb->dgid + 12, sizeof(iph->daddr));
	__ip_select_ident(net, iph, 1);
	ip_send_check(iph);
	skb->protocol = htons(ETH_P_IP);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
}

static void hca_wire_push_ip6(struct sk_buff *skb, struct dst_entry *dst,
			      const struct hca_wire_txcb *cb)
{
	struct ipv6hdr *ip6h;

	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, cb->tclass, htonl(cb->flow_label & 0xfffff));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = cb->hop_limit ?: ip6_dst_hoplimit(dst);
	memcpy(&ip6h->saddr, cb->sgid, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, cb->dgid, sizeof(ip6h->daddr));
	skb->protocol = htons(ETH_P_IPV6);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
}

int hca_wire_send(struct hca *hca, struct sk_buff *skb)
{
	struct hca_wire_txcb cb = *(struct hca_wire_txcb *)skb->cb;
	bool v4 = ipv6_addr_v4mapped((const struct in6_addr *)cb.dgid);
	u32 bytes = skb->len + HCA_ICRC_LEN;	/* BTH to ICRC */
	struct net_device *ndev;
	struct dst_entry *dst = NULL;
	struct sock *sk;
	struct net *net;
	int err;

	rcu_read_lock();
	ndev = hca_wire_netdev(hca);
	sk = hca_wire_sock(hca, v4);
	if (ndev && sk && ipv6_addr_v4mapped((const struct in6_addr *)cb.sgid) == v4) {
		net = sock_net(sk);
		dst = hca_wire_route(net, sk, ndev, &cb, v4);
	}
	if (!dst) {
		rcu_read_unlock();
		hca_wire_count(hca, HCA_HCNT_WIRE_TX_NO_ROUTE, 1);
		kfree_skb(skb);
		return -EHOSTUNREACH;
	}
	memset(skb_put(skb, HCA_ICRC_LEN), 0, HCA_ICRC_LEN);
	hca_wire_push_udp(skb, cb.udp_sport);
	skb_dst_set(skb, dst);
	skb->dev = dst->dev;
	skb->ip_summed = CHECKSUM_NONE;
	if (v4)
		hca_wire_push_ip4(net, skb, dst, &cb);
	else
		hca_wire_push_ip6(skb, dst, &cb);
	put_unaligned_le32(hca_wire_icrc(skb_network_header(skb), v4,
					 skb_tail_pointer(skb) - HCA_ICRC_LEN),
			   skb_tail_pointer(skb) - HCA_ICRC_LEN);
	err = v4 ? ip_local_out(net, sk, skb) : ip6_local_out(net, sk, skb);
	rcu_read_unlock();
	err = net_xmit_eval(err);
	if (!err) {
		hca_wire_count(hca, HCA_HCNT_WIRE_TX_PACKETS, 1);
		hca_wire_count(hca, HCA_HCNT_WIRE_TX_BYTES, bytes);
	} else {
		/* Larger than the link with DF, a qdisc's drop, a filter. */
		hca_wire_count(hca, HCA_HCNT_WIRE_TX_DROPS, 1);
	}
	return err;
}

/* ---- receive ------------------------------------------------------------------ */

void hca_wire_dgid(const struct sk_buff *skb, u8 dgid[16])
{
	if (skb->protocol == htons(ETH_P_IP))
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)dgid);
	else
		memcpy(dgid, &ipv6_hdr(skb)->daddr, 16);
}

/* Is the IP header one the ICRC is defined for, right before UDP? */
static bool hca_wire_ip_ok(const struct sk_buff *skb, bool *v4)
{
	int off = skb_network_offset(skb);

	*v4 = skb->protocol == htons(ETH_P_IP);
	if (*v4)
		return off == -(int)sizeof(struct iphdr) &&
		       ip_hdr(skb)->ihl == sizeof(struct iphdr) >> 2;
	return skb->protocol == htons(ETH_P_IPV6) &&
	       off == -(int)sizeof(struct ipv6hdr) &&
	       ipv6_hdr(skb)->nexthdr == IPPROTO_UDP;
}

int hca_wire_check(struct sk_buff *skb)
{
	const struct hca_wire_opcode *op;
	const u8 *bth, *end;
	u32 ulen, hlen, pad;
	bool v4;

	/* Everything in the head from here: pointers cannot run off it. */
	if (skb_linearize(skb) || skb->len < sizeof(struct udphdr) ||
	    !hca_wire_ip_ok(skb, &v4))
		return HCA_HCNT_WIRE_RX_HEADER_DROPS;
	ulen = ntohs(udp_hdr(skb)->len);
	if (ulen > skb->len ||
	    ulen < sizeof(struct udphdr) + HCA_BTH_LEN + HCA_ICRC_LEN)
		return HCA_HCNT_WIRE_RX_HEADER_DROPS;
	bth = skb->data + sizeof(struct udphdr);
	op = hca_wire_opcode(bth[0]);
	if (!op || (bth[1] & HCA_BTH_TVER_MASK) ||
	    (get_unaligned_be16(bth + 2) & HCA_WIRE_PKEY_BASE) !=
	    HCA_WIRE_PKEY_BASE)
		return HCA_HCNT_WIRE_RX_HEADER_DROPS;
	hlen = hca_wire_hdr_len(op);
	pad = bth[1] >> HCA_BTH_PAD_SHIFT & HCA_BTH_PAD_MASK;
	if (sizeof(struct udphdr) + hlen + pad + HCA_ICRC_LEN > ulen)
		return HCA_HCNT_WIRE_RX_HEADER_DROPS;
	if (!(op->flags & HCA_WF_PAYLOAD) &&
	    ulen != sizeof(struct udphdr) + hlen + HCA_ICRC_LEN)
		return HCA_HCNT_WIRE_RX_HEADER_DROPS;
	end = skb->data + ulen - HCA_ICRC_LEN;
	if (get_unaligned_le32(end) !=
	    hca_wire_icrc(skb_network_header(skb), v4, end))
		return HCA_HCNT_WIRE_RX_ICRC_DROPS;
	return 0;
}

static void hca_wire_parse_addr(struct sk_buff *skb, struct hca_wire_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->udp_sport = ntohs(udp_hdr(skb)->source);
	if (skb->protocol == htons(ETH_P_IP)) {
		const struct iphdr *iph = ip_hdr(skb);

		ipv6_addr_set_v4mapped(iph->saddr, (struct in6_addr *)a->sgid);
		ipv6_addr_set_v4mapped(iph->daddr, (struct in6_addr *)a->dgid);
		a->tclass = iph->tos;
		a->hop_limit = iph->ttl;
	} else {
		const struct ipv6hdr *ip6h = ipv6_hdr(skb);

		memcpy(a->sgid, &ip6h->saddr, sizeof(a->sgid));
		memcpy(a->dgid, &ip6h->daddr, sizeof(a->dgid));
		a->tclass = ipv6_get_dsfield(ip6h);
		a->hop_limit = ip6h->hop_limit;
		a->flow_label = ntohl(ip6_flowlabel(ip6h));
	}
	if (skb_mac_header_was_set(skb) &&
	    skb_mac_header_len(skb) >= ETH_HLEN)
		ether_addr_copy(a->smac, eth_hdr(skb)->h_source);
	if (skb_vlan_tag_present(skb)) {
		a->vlan = 1;
		a->vlan_id = skb_vlan_tag_get_id(skb);
	}
}

void hca_wire_parse(struct sk_buff *skb, struct hca_wire_pkt *pkt)
{
	const u8 *p = skb->data + sizeof(struct udphdr);
	u32 ulen = ntohs(udp_hdr(skb)->len), a_psn, i;
	struct hca_wire_hdr *h = &pkt->h;
	u32 pad = p[1] >> HCA_BTH_PAD_SHIFT & HCA_BTH_PAD_MASK;

	pkt->skb = skb;
	pkt->op = hca_wire_opcode(p[0]);
	memset(h, 0, sizeof(*h));
	h->opcode = p[0];
	h->flags = (p[1] & HCA_BTH_B1_SE ? HCA_BTH_SE : 0) |
		   (p[1] & HCA_BTH_B1_MIG ? HCA_BTH_MIG : 0);
	h->pkey = get_unaligned_be16(p + 2);
	h->dqpn = get_unaligned_be32(p + 4) & HCA_QPN_MASK;
	a_psn = get_unaligned_be32(p + 8);
	h->psn = a_psn & HCA_PSN_MASK;
	if (a_psn & HCA_BTH_APSN_ACKREQ)
		h->flags |= HCA_BTH_ACKREQ;
	p += HCA_BTH_LEN;
	for (i = 0; i < ARRAY_SIZE(hca_wire_exts); i++) {
		if (pkt->op->hdrs & hca_wire_exts[i].hdr) {
			hca_wire_exts[i].get(p, h);
			p += hca_wire_exts[i].len;
		}
	}
	pkt->payload = p;
	pkt->paylen = skb->data + ulen - HCA_ICRC_LEN - pad - p;
	hca_wire_parse_addr(skb, &pkt->a);
}
