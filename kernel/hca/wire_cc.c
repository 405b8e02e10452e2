// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: congestion on the wire, RoCEv2's ECN and CNP (IBTA
 * Annex A17.9). What a ConnectX's notification point does, softhca does:
 *
 * - packets leave ECN-capable (ECT(0)) unless the QP's traffic class says
 *   otherwise or wire_ecn is off, so a congested switch (or tc netem's
 *   ecn) marks them CE instead of dropping them;
 * - a packet that arrives marked CE is counted (np_ecn_marked_roce_packets)
 *   and answered with a CNP to the QP that sent it (a connected QP's peer,
 *   a datagram's source QP at its source address): at most one per
 *   receiving QP per HCA_WIRE_CNP_GAP_NS (np_cnp_sent);
 * - a CNP that arrives for an RC or XRC QP from its peer goes to the
 *   QP's reaction point (wire_rp.c: DCQCN cuts its rate; rp_cnp_handled);
 *   one for a UC or UD QP, or with wire_rp off, is counted in
 *   rp_cnp_ignored: the rate is not cut, as a ConnectX whose RP is
 *   disabled.
 *
 * A CNP: BTH opcode 0x81, the B (BECN) bit set, the default P_Key, the
 * sending QP's number, PSN 0, 16 reserved bytes, the ICRC; not ECN-capable,
 * on the marked packet's flow (its addresses, the UDP source port of the
 * QPN pair).
 */
#include <linux/module.h>
#include <net/inet_ecn.h>

#include "wire_rc.h"

static bool wire_ecn = true;
module_param(wire_ecn, bool, 0644);
MODULE_PARM_DESC(wire_ecn,
		 "RoCEv2 packets ECN-capable, CE marks answered with CNPs (default 1)");

/* DCQCN's CNP interval: one CNP per QP per this, whatever is marked. */
#define HCA_WIRE_CNP_GAP_NS	(50 * NSEC_PER_USEC)

u8 hca_wire_cc_tclass(u8 tclass, const struct hca_wire_opcode *op)
{
	if (!READ_ONCE(wire_ecn) || (op->flags & HCA_WF_CNP) ||
	    (tclass & INET_ECN_MASK))
		return tclass;
	return tclass | INET_ECN_ECT_0;
}

bool hca_wire_cc_marked(struct hca *hca, const struct hca_wire_pkt *pkt)
{
	if (!INET_ECN_is_ce(pkt->a.tclass))
		return false;
	hca_wire_count(hca, HCA_HCNT_NP_ECN_MARKED, 1);
	return true;
}

/* The way back to a datagram's sender: its flow, from the receiver. */
static void hca_wire_cc_ud_addr(struct hca_qp *qp,
				const struct hca_wire_pkt *pkt,
				struct hca_wire_addr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->sgid, pkt->a.dgid, sizeof(a->sgid));
	memcpy(a->dgid, pkt->a.sgid, sizeof(a->dgid));
	a->tclass = pkt->a.tclass & ~INET_ECN_MASK;
	a->flow_label = pkt->a.flow_label;
	a->udp_sport = hca_wire_sport(a->flow_label, qp->qpn,
				      pkt->h.deth.sqpn);
}

void hca_wire_cc_notify(struct hca_qp *qp, const struct hca_wire_pkt *pkt)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_qp *wq = READ_ONCE(e->wire);
	struct hca_wire_hdr h = {
		.opcode = HCA_WIRE_OP_CNP,
		.flags = HCA_BTH_BECN,
		.pkey = HCA_WIRE_PKEY,
	};
	struct hca_wire_addr ud;
	struct sk_buff *skb;
	u8 *payload;
	u64 now;

	if (!READ_ONCE(wire_ecn))
		return;
	now = ktime_get_ns();
	/* Racy between a QP's receive paths: at worst one CNP more. */
	if (now < READ_ONCE(e->cnp_next))
		return;
	WRITE_ONCE(e->cnp_next, now + HCA_WIRE_CNP_GAP_NS);
	if (wq) {
		h.dqpn = wq->dest_qpn;
		skb = hca_wire_alloc(qp->hca, &wq->addr, &h, 0, &payload);
	} else {
		h.dqpn = pkt->h.deth.sqpn;
		hca_wire_cc_ud_addr(qp, pkt, &ud);
		skb = hca_wire_alloc(qp->hca, &ud, &h, 0, &payload);
	}
	if (skb && !hca_wire_send(qp->hca, skb))
		hca_wire_count(qp->hca, HCA_HCNT_NP_CNP_SENT, 1);
}

void hca_wire_cc_cnp_recv(struct hca *hca, const struct hca_wire_pkt *pkt)
{
	struct hca_qp *qp = hca_qp_get(hca, pkt->h.dqpn);
	struct hca_wire_qp *wq;
	int why = HCA_HCNT_RP_CNP_IGNORED;

	if (!qp) {
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
		return;
	}
	/* e->wire, once set, is freed only with the QP (wire_qp.c). */
	wq = READ_ONCE(qp->eng->wire);
	if (wq && !hca_wire_from_peer(wq, pkt))
		why = HCA_HCNT_WIRE_RX_NOT_PEER;
	else if (!wq && qp->type->tp != SOFTHCA_TP_UD)
		why = HCA_HCNT_WIRE_RX_UNKNOWN_QPN;	/* not on the wire */
	else if (wq && !qp->type->unreliable && hca_wire_rp_cnp(wq))
		why = HCA_HCNT_RP_CNP_HANDLED;		/* wire_rp.c */
	hca_wire_count(hca, why, 1);
	hca_qp_put(qp);
}
