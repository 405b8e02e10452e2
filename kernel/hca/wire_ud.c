// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: UD and GSI on the wire. A datagram the local fabric
 * does not deliver (no HCA of this host owns its destination GID, or the
 * force_wire parameter), or is addressed to a multicast group, leaves
 * as one RoCEv2 packet, SEND_ONLY or
 * SEND_ONLY_IMM with a DETH (Q_Key, source QPN), its UDP source port from
 * the flow label or the QPN pair; ud.c already bounded it by the path MTU.
 * A UD packet taken from the wire becomes the same struct hca_datagram
 * the local fabric hands to the receive stage (ud.c: the Q_Key check, the
 * GRH area from the IP header, the CQE with the source MAC), to the QP its
 * BTH names, QP1 for GSI: so ib_mad's MADs cross hosts too. One to the
 * multicast QPN and a group's GID goes to the HCA's members of the group
 * (fabric.c).
 */

#include "wire.h"

/* The destination QPN of a datagram to a multicast group (IBTA 10.5). */
#define HCA_WIRE_MCAST_QPN	0xffffff

void hca_wire_ud_send(struct hca_exec_ctx *ctx, const struct hca_datagram *dg)
{
	struct hca *hca = dg->src->hca;
	struct hca_wire_addr a = {
		.tclass = dg->tclass,
		.hop_limit = dg->hop_limit,
		.flow_label = dg->flow_label,
		.udp_sport = hca_wire_sport(dg->flow_label, dg->sqpn, dg->dqpn),
	};
	struct hca_wire_hdr h = {
		.opcode = HCA_WIRE_TP_UD |
			  (dg->op->flags & SOFTHCA_OPF_IMM ?
			   HCA_WOP_SEND_ONLY_IMM : HCA_WOP_SEND_ONLY),
		.flags = dg->solicited ? HCA_BTH_SE : 0,
		.pkey = HCA_WIRE_PKEY,
		.dqpn = dg->dqpn,
		/* The executor's own counter: one PSN per datagram. */
		.psn = READ_ONCE(dg->src->sq_ci) & HCA_PSN_MASK,
		.imm = dg->imm,
		.deth = { .qkey = dg->qkey, .sqpn = dg->sqpn },
	};
	struct sk_buff *skb;
	u8 *payload;

	memcpy(a.sgid, dg->sgid, sizeof(a.sgid));
	memcpy(a.dgid, dg->dgid, sizeof(a.dgid));
	skb = hca_wire_alloc(hca, &a, &h, dg->len, &payload);
	if (!skb)
		return;
	hca_sgl_read(dg->payload, 0, payload, dg->len);
	hca_wire_send(hca, skb);
}

/* The datagram @pkt carries, for the receive stage. */
static void hca_wire_datagram(const struct hca_wire_pkt *pkt,
			      struct hca_sgl *payload, struct hca_datagram *dg)
{
	const struct hca_wire_addr *a = &pkt->a;
	bool imm = pkt->op->hdrs & HCA_WH_IMM;

	memset(dg, 0, sizeof(*dg));
	dg->op = softhca_opcode_on(imm ? SOFTHCA_OPCODE_SEND_IMM :
				   SOFTHCA_OPCODE_SEND, SOFTHCA_TP_UD);
	dg->sqpn = pkt->h.deth.sqpn;
	dg->dqpn = pkt->h.dqpn;
	dg->qkey = pkt->h.deth.qkey;
	memcpy(dg->dgid, a->dgid, sizeof(dg->dgid));
	memcpy(dg->sgid, a->sgid, sizeof(dg->sgid));
	memcpy(dg->smac, a->smac, sizeof(dg->smac));
	dg->vlan = a->vlan;
	dg->vlan_id = a->vlan_id;
	dg->tclass = a->tclass;
	dg->hop_limit = a->hop_limit;
	dg->flow_label = a->flow_label;
	dg->udp_sport = a->udp_sport;
	dg->solicited = !!(pkt->h.flags & HCA_BTH_SE);
	dg->imm = pkt->h.imm;
	payload->n = 0;
	payload->inl = pkt->payload;
	payload->len = pkt->paylen;
	dg->payload = payload;
	dg->len = pkt->paylen;
}

void hca_wire_ud_recv(struct hca_exec_ctx *ctx, struct hca *hca,
		      struct hca_wire_pkt *pkt)
{
	bool marked = hca_wire_cc_marked(hca, pkt);
	struct hca_datagram dg;
	struct hca_sgl payload;
	struct hca_qp *qp;

	/* One packet is the whole message: never beyond the port's MTU. */
	if (pkt->paylen > hca->caps->max_mtu) {
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_HEADER_DROPS, 1);
		goto out;
	}
	if (pkt->h.dqpn == HCA_WIRE_MCAST_QPN && hca_gid_is_mcast(pkt->a.dgid)) {
		hca_wire_datagram(pkt, &payload, &dg);
		hca_fabric_mcast_from_wire(ctx, hca, &dg);
		goto out;
	}
	qp = hca_qp_get(hca, pkt->h.dqpn);
	if (!qp || qp->type->tp != SOFTHCA_TP_UD) {
		hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
		if (qp)
			hca_qp_put(qp);
		goto out;
	}
	if (marked)
		hca_wire_cc_notify(qp, pkt);
	hca_wire_datagram(pkt, &payload, &dg);
	hca_ud_receive(ctx, &dg, qp);
	hca_qp_put(qp);
out:
	consume_skb(pkt->skb);
}
