/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: the wire. RoCEv2 (IBTA Vol 1 and Annex A17) is how the
 * HCA's port reaches what is not a softhca device of this host: other
 * hosts, rdma_rxe, real RoCE NICs. This header is the seam between the
 * packet layer (wire_opcode.c: the opcode table; wire_pkt.c: headers and
 * ICRC; wire_net.c: the UDP tunnel socket of each network namespace, the
 * receive queue, transmit) and the transports that use it (wire_ud.c:
 * datagrams; wire_rc_*.c: reliable connection). Nothing outside
 * kernel/hca/ includes it.
 *
 * Packets are described by host-order fields (struct hca_wire_hdr); only
 * wire_pkt.c reads or writes the big-endian headers.
 */
#ifndef HCA_HCA_WIRE_H
#define HCA_HCA_WIRE_H

#include <linux/skbuff.h>
#include <linux/types.h>
#include <net/dst_cache.h>

#include "engine.h"

#define HCA_ROCE_UDP_PORT	4791

/* BTH opcode: transport in the top three bits, operation below. */
#define HCA_WIRE_TP_RC		0x00
#define HCA_WIRE_TP_UC		0x20
#define HCA_WIRE_TP_UD		0x60
#define HCA_WIRE_TP_XRC		0xa0
#define HCA_WIRE_TP_CNP		0x80	/* Annex A17.9.3: 0x81 only */
#define HCA_WIRE_TP_MASK	0xe0
#define HCA_WIRE_OP_CNP		0x81

/* Operations (the low five bits), as IBTA Vol 1 Table 38 numbers them. */
enum hca_wire_op {
	HCA_WOP_SEND_FIRST		= 0x00,
	HCA_WOP_SEND_MIDDLE		= 0x01,
	HCA_WOP_SEND_LAST		= 0x02,
	HCA_WOP_SEND_LAST_IMM		= 0x03,
	HCA_WOP_SEND_ONLY		= 0x04,
	HCA_WOP_SEND_ONLY_IMM		= 0x05,
	HCA_WOP_WRITE_FIRST		= 0x06,
	HCA_WOP_WRITE_MIDDLE		= 0x07,
	HCA_WOP_WRITE_LAST		= 0x08,
	HCA_WOP_WRITE_LAST_IMM		= 0x09,
	HCA_WOP_WRITE_ONLY		= 0x0a,
	HCA_WOP_WRITE_ONLY_IMM		= 0x0b,
	HCA_WOP_READ_REQ		= 0x0c,
	HCA_WOP_READ_RESP_FIRST		= 0x0d,
	HCA_WOP_READ_RESP_MIDDLE	= 0x0e,
	HCA_WOP_READ_RESP_LAST		= 0x0f,
	HCA_WOP_READ_RESP_ONLY		= 0x10,
	HCA_WOP_ACK			= 0x11,
	HCA_WOP_ATOMIC_ACK		= 0x12,
	HCA_WOP_CMP_SWAP		= 0x13,
	HCA_WOP_FETCH_ADD		= 0x14,
	HCA_WOP_SEND_LAST_INV		= 0x16,
	HCA_WOP_SEND_ONLY_INV		= 0x17,
};

/* Extension headers a packet carries (struct hca_wire_opcode.hdrs). */
enum {
	HCA_WH_RETH	= BIT(0),
	HCA_WH_AETH	= BIT(1),
	HCA_WH_ATOMIC	= BIT(2),	/* AtomicETH */
	HCA_WH_ATOMACK	= BIT(3),	/* AtomicAckETH */
	HCA_WH_IMM	= BIT(4),	/* ImmDt */
	HCA_WH_IETH	= BIT(5),
	HCA_WH_DETH	= BIT(6),
	HCA_WH_XRCETH	= BIT(7),	/* right after the BTH */
	HCA_WH_CNP	= BIT(8),	/* a CNP's 16 reserved bytes */
};

/* Where a packet sits in its message, and what it is. */
enum {
	HCA_WF_FIRST	= BIT(0),
	HCA_WF_MIDDLE	= BIT(1),
	HCA_WF_LAST	= BIT(2),
	HCA_WF_ONLY	= HCA_WF_FIRST | HCA_WF_LAST,
	HCA_WF_PAYLOAD	= BIT(3),	/* carries data (may be 0 bytes) */
	HCA_WF_REQUEST	= BIT(4),	/* requester to responder */
	HCA_WF_RESPONSE	= BIT(5),	/* responder to requester */
	HCA_WF_SEND	= BIT(6),	/* consumes a receive WQE */
	HCA_WF_WRITE	= BIT(7),
	HCA_WF_READ	= BIT(8),	/* READ request or response */
	HCA_WF_ATOMIC	= BIT(9),
	HCA_WF_CNP	= BIT(10),	/* congestion notification */
};

/* One row per BTH opcode softhca sends or takes (wire_opcode.c). */
struct hca_wire_opcode {
	const char *name;		/* as Wireshark prints it */
	u16 hdrs;			/* HCA_WH_* */
	u16 flags;			/* HCA_WF_* */
};

/* NULL: an opcode softhca neither sends nor takes (the packet is dropped). */
const struct hca_wire_opcode *hca_wire_opcode(u8 opcode);

/* AETH syndromes (IBTA 9.7.5.2.1): the top three bits say which kind. */
#define HCA_AETH_ACK		0x00	/* | credit count (0x1f: none) */
#define HCA_AETH_RNR_NAK	0x20	/* | RNR timer code */
#define HCA_AETH_NAK		0x60	/* | HCA_NAK_* */
#define HCA_AETH_KIND_MASK	0xe0
#define HCA_AETH_VALUE_MASK	0x1f
#define HCA_AETH_NO_CREDITS	0x1f

enum {
	HCA_NAK_PSN_SEQ_ERR		= 0,
	HCA_NAK_INVALID_REQUEST		= 1,
	HCA_NAK_REMOTE_ACCESS		= 2,
	HCA_NAK_REMOTE_OP_ERR		= 3,
	HCA_NAK_INVALID_RD_REQUEST	= 4,
};

#define HCA_PSN_MASK		0xffffff
/*
 * The P_Key every packet carries: the default one, full membership. One
 * whose low 15 bits are not the default's is dropped (a header drop).
 */
#define HCA_WIRE_PKEY		0xffff
#define HCA_WIRE_PKEY_BASE	0x7fff
#define HCA_BTH_SE		BIT(0)	/* solicited event */
#define HCA_BTH_MIG		BIT(1)
#define HCA_BTH_ACKREQ		BIT(2)
#define HCA_BTH_BECN		BIT(3)	/* a CNP's B bit */

/* A packet's headers in host order; the ones its opcode has are valid. */
struct hca_wire_hdr {
	u8 opcode;			/* full BTH opcode: transport | op */
	u8 flags;			/* HCA_BTH_* */
	u16 pkey;
	u32 dqpn;
	u32 psn;
	struct {
		u64 va;
		u32 rkey;
		u32 len;
	} reth;
	struct {
		u8 syndrome;
		u32 msn;
	} aeth;
	struct {
		u64 va;
		u32 rkey;
		u64 swap_add;
		u64 compare;
	} atomic;
	u64 atomic_orig;		/* AtomicAckETH */
	__be32 imm;			/* ImmDt, as the CQE carries it */
	u32 ieth_rkey;
	struct {
		u32 qkey;
		u32 sqpn;
	} deth;
	u32 xrc_srqn;			/* XRCETH: 24 bits */
};

/*
 * The IP/UDP envelope: GIDs as the GID table holds them (IPv4-mapped or
 * IPv6). On receive also the source MAC and VLAN (UD's work completion).
 */
struct hca_wire_addr {
	u8 sgid[16];
	u8 dgid[16];
	u16 udp_sport;
	u8 tclass;
	u8 hop_limit;
	u32 flow_label;
	u8 smac[6];
	u16 vlan_id;
	u8 vlan;			/* @vlan_id is valid */
	struct dst_cache *route;	/* an RC QP's; NULL: looked up per packet */
};

/* A received packet, its ICRC and headers checked (wire_pkt.c). */
struct hca_wire_pkt {
	struct sk_buff *skb;
	const struct hca_wire_opcode *op;
	struct hca_wire_hdr h;
	struct hca_wire_addr a;
	const u8 *payload;		/* linear, without pad and ICRC */
	u32 paylen;
};

/*
 * The UDP source port of a flow (Annex A17.5.3): from the flow label when
 * it is set, else from the QPN pair, in the dynamic range 0xc000..0xffff.
 */
u16 hca_wire_sport(u32 flow_label, u32 src_qpn, u32 dst_qpn);

/*
 * Transmit, in process or softirq context, no sleeping lock held needed:
 * hca_wire_alloc() builds an skb with BTH and the extension headers of
 * @h's opcode written (@h and @a are read there, not kept) and a linear
 * @paylen bytes at *@payload for the caller to fill, the pad zeroed;
 * hca_wire_send() adds the ICRC, UDP and IP and sends it out of the
 * port's netdev (it consumes @skb whatever it returns). NULL / -errno:
 * no memory, no route, no port; the caller treats it as a lost packet
 * (the transport's own recovery applies), counted by the packet layer.
 */
struct sk_buff *hca_wire_alloc(struct hca *hca, const struct hca_wire_addr *a,
			       const struct hca_wire_hdr *h, u32 paylen,
			       u8 **payload);
int hca_wire_send(struct hca *hca, struct sk_buff *skb);

/*
 * True when a transfer to @dgid must cross the wire: no softhca device of
 * this host owns @dgid, or the force_wire module parameter is set.
 */
bool hca_wire_needed(const u8 dgid[16]);

/* The HCA's source address for GID table index @sgid_index; false: none. */
bool hca_wire_src(struct hca *hca, u32 sgid_index, u8 sgid[16]);

/*
 * Receive: the engine drains the HCA's receive queue and hands each packet
 * to its transport, with the engine's exec context, in process context:
 * wire_ud.c for UD (datagrams to hca_ud_receive()), wire_rc_*.c for RC.
 * The transport consumes @pkt (frees pkt->skb) before it returns.
 */
void hca_wire_ud_recv(struct hca_exec_ctx *ctx, struct hca *hca,
		      struct hca_wire_pkt *pkt);
/*
 * wire_cc.c: the ECN bits a packet of @op leaves with; is @pkt marked CE
 * (counted); a marked packet to @qp answered with a CNP (for a connected
 * QP from its peer); a CNP taken.
 */
u8 hca_wire_cc_tclass(u8 tclass, const struct hca_wire_opcode *op);
bool hca_wire_cc_marked(struct hca *hca, const struct hca_wire_pkt *pkt);
void hca_wire_cc_notify(struct hca_qp *qp, const struct hca_wire_pkt *pkt);
void hca_wire_cc_cnp_recv(struct hca *hca, const struct hca_wire_pkt *pkt);
void hca_wire_rc_recv(struct hca_exec_ctx *ctx, struct hca *hca,
		      struct hca_wire_pkt *pkt);

/* ---- inside the packet layer (wire_*.c, engine.c, hca.c) ---------------- */

struct hca_engine_thread;
struct hca_datagram;
struct net_device;

/* wire_opcode.c: does the table have every row it should? (module init) */
bool hca_wire_opcodes_ok(void);

/* The force_wire module parameter (wire_net.c). */
extern bool hca_wire_force;

/*
 * wire_pkt.c, receive: in softirq, the whole packet checked (skb->data at
 * its UDP header, IP header before it): 0, or the HCA_HCNT_WIRE_* drop
 * counter that says why not. Then, in the engine, its fields into @pkt
 * (pkt->skb is @skb).
 */
int hca_wire_check(struct sk_buff *skb);
void hca_wire_parse(struct sk_buff *skb, struct hca_wire_pkt *pkt);
/* The destination GID of a packet whose IP header the stack checked. */
void hca_wire_dgid(const struct sk_buff *skb, u8 dgid[16]);

/* wire_net.c: count @n into HCA_HCNT_WIRE_* counter @i of @hca. Any context. */
void hca_wire_count(struct hca *hca, unsigned int i, u64 n);
/* The HCA's per-CPU wire counters (hca_create / hca_free), and their sums. */
int hca_wire_init(struct hca *hca);
void hca_wire_fini(struct hca *hca);
void hca_wire_counters(struct hca *hca, u64 *value);
/* The port's netdev (SET_PORT_NETDEV), and its end (hca_destroy, first). */
int hca_cmd_set_port_netdev(struct hca *hca, const void *inbox, void *outbox);
void hca_wire_unbind(struct hca *hca);
/*
 * Under rcu_read_lock(): the netdev of @hca's port (NULL: not bound) and
 * the tunnel socket of its namespace for IPv4 or IPv6 (NULL: none).
 */
struct net_device *hca_wire_netdev(struct hca *hca);
struct sock *hca_wire_sock(struct hca *hca, bool v4);
/*
 * Under rcu_read_lock(): an empty skb for @size bytes, from the port's
 * page pool when it fits a page, else a page fragment. NULL: no memory.
 */
struct sk_buff *hca_wire_tx_skb(struct hca *hca, unsigned int size);
/*
 * Engine thread @thr's share of the receive queues, under its watch_lock:
 * is there any (one load), and drain them (budgeted). engine.c.
 */
bool hca_wire_rx_pending(struct hca_engine_thread *thr);
bool hca_wire_receiving(void);
bool hca_wire_run_rx(struct hca_exec_ctx *ctx, struct hca_engine_thread *thr);
void hca_wire_acks_flush(struct hca_exec_ctx *ctx);
/* Module init / exit: the pernet operations of the tunnel sockets. */
int hca_wire_module_init(void);
void hca_wire_module_exit(void);

/* wire_ud.c: a datagram the local fabric does not deliver, onto the wire. */
void hca_wire_ud_send(struct hca_exec_ctx *ctx, const struct hca_datagram *dg);

/*
 * Multicast (wire_net.c). Does @hca's port take part in the wire's
 * multicast (a netdev with a tunnel socket)? RCU or process context.
 * @hca's first QP in group @gid joins the IP group on the port's netdev,
 * its last one leaves it (process context; fabric.c serialises them).
 */
bool hca_wire_mcast_port(struct hca *hca);
void hca_wire_mcast_member(struct hca *hca, const u8 gid[16], bool join);
/* fabric.c: a datagram to a group from the wire, to @hca's members. */
void hca_fabric_mcast_from_wire(struct hca_exec_ctx *ctx, struct hca *hca,
				const struct hca_datagram *dg);

#endif
