// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the datagram transport (UD), in two stages that do
 * not know how a datagram travels between them:
 *
 * - the send stage, hca_ud_step(): a datagram QP's send WQE after the
 *   requester copied it (requester.c): its datagram segment (the address
 *   vector, remote QPN and Q_Key), the payload segments, the checks a UD
 *   send makes locally (opcode, path MTU, source GID, local keys), then the
 *   datagram (struct hca_datagram, engine.h) handed to the fabric, and the
 *   sender's completion. Nobody answers a datagram: the sender completes
 *   whether or not a QP took it;
 * - the receive stage, hca_ud_receive(): called by the fabric (fabric.c)
 *   for every QP a datagram reaches: a datagram QP in a receiving state,
 *   the Q_Key, a receive WQE long enough for the 40-byte GRH area and the
 *   payload (a datagram that finds none of these is dropped and counted,
 *   UD has no RNR), the GRH area built from the datagram's addresses as a
 *   RoCE v2 packet carries them, the payload, the responder CQE.
 *
 * The fabric carries a datagram memory to memory between this host's
 * HCAs; to anyone else the wire does (wire_ud.c: one RoCEv2 packet), and a
 * packet taken from the wire reaches the receive stage as a datagram too.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/string.h>
#include <net/checksum.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "engine.h"

/* RoCE v2 headers after the IP header, for the GRH area's lengths. */
#define HCA_UDP_HDR		8
#define HCA_BTH			12
#define HCA_DETH		8
#define HCA_IMMDT		4
#define HCA_ICRC		4

/* The datagram segment of the WQE copy into @dg; the QP's own Q_Key for bit 31. */
static void hca_ud_parse_av(const struct softhca_wqe_av *av, u32 own_qkey,
			    struct hca_datagram *dg)
{
	u32 fl = be32_to_cpu(av->grh_gid_fl);
	u32 qkey = be32_to_cpu(av->qkey);

	dg->qkey = qkey & SOFTHCA_QKEY_PRIVILEGED ? own_qkey : qkey;
	dg->dqpn = be32_to_cpu(av->dqp_dct) & SOFTHCA_24BIT_MASK;
	dg->sl = (av->stat_rate_sl >> SOFTHCA_AV_SL_SHIFT) & SOFTHCA_AV_SL_MASK;
	dg->udp_sport = be16_to_cpu(av->rlid);
	memcpy(dg->dmac, av->rmac, sizeof(dg->dmac));
	dg->tclass = av->tclass;
	dg->hop_limit = av->hop_limit;
	dg->flow_label = fl & SOFTHCA_AV_FLOW_LABEL_MASK;
	memcpy(dg->dgid, av->rgid, sizeof(dg->dgid));
}

/*
 * The source of @dg: entry @index of the sending HCA's RoCE address
 * table (its GID, MAC and VLAN). An empty entry, or one of the other IP
 * family than the destination, makes no packet: -EINVAL.
 */
static int hca_ud_source(struct hca_qp *qp, u32 index,
			 struct hca_datagram *dg)
{
	struct hca_gid_entry e;

	if (!hca_fabric_gid(qp->hca, index, &e))
		return -EINVAL;
	if (ipv6_addr_v4mapped((const struct in6_addr *)e.gid) !=
	    ipv6_addr_v4mapped((const struct in6_addr *)dg->dgid))
		return -EINVAL;
	memcpy(dg->sgid, e.gid, sizeof(dg->sgid));
	memcpy(dg->smac, e.mac, sizeof(dg->smac));
	dg->vlan = e.vlan_valid;
	dg->vlan_id = e.vlan_id;
	return 0;
}

/*
 * The segments after ctrl of a datagram WQE: the datagram segment, then
 * the payload. -EINVAL for an opcode a datagram QP does not post or a
 * malformed WQE, -EMSGSIZE for inline data beyond max_inline_data.
 */
static int hca_ud_parse(struct hca_qp *qp, struct hca_wqe *w, const u8 *buf,
			struct hca_datagram *dg)
{
	const struct softhca_wqe_av *av = (const void *)(buf + SOFTHCA_DS_SIZE);
	const struct hca_path *p = hca_path_get(qp);
	int err;

	w->op = softhca_opcode_on(w->opcode, SOFTHCA_TP_UD);
	if (!w->op || w->ds < 1 + SOFTHCA_AV_DS)
		return -EINVAL;
	hca_ud_parse_av(av, p->qkey, dg);
	err = hca_wqe_parse_payload(qp, w, buf, 1 + SOFTHCA_AV_DS);
	if (err)
		return err;
	/* One packet: the port's MTU is the largest message (IBA 9.7.2). */
	if (w->local.len > p->path_mtu)
		return -EMSGSIZE;
	return hca_ud_source(qp, (be32_to_cpu(av->grh_gid_fl) >>
				  SOFTHCA_AV_SGID_SHIFT) & SOFTHCA_AV_SGID_MASK,
			     dg);
}

enum hca_step hca_ud_step(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			  int err)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wqe *w = &ctx->wqe;
	struct hca_datagram dg;

	if (!err)
		err = hca_ud_parse(qp, w, ctx->wqe_buf, &dg);
	if (err) {
		hca_sq_fail(qp, w, err == -EMSGSIZE ?
			    SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR :
			    SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		return HCA_STEP_DONE;
	}
	err = hca_sq_local_get(qp, w);
	if (err == -EAGAIN)
		return HCA_STEP_WAIT;
	if (err) {
		hca_sq_fail(qp, w, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		return HCA_STEP_DONE;
	}
	dg.src = qp;
	dg.sqpn = qp->qpn;
	dg.op = w->op;
	dg.solicited = !!(w->fm_ce_se & SOFTHCA_WQE_CTRL_SOLICITED);
	dg.imm = w->imm;
	dg.payload = &w->local;
	dg.len = w->local.len;
	hca_count(e->req_cnt, HCA_QCNT_TX_REQUESTS, 1);
	hca_count(e->req_cnt, HCA_QCNT_TX_BYTES, dg.len);
	hca_fabric_send_datagram(ctx, &dg, &e->route);
	hca_sgl_put(&w->local);
	hca_sq_complete(qp, w);
	return HCA_STEP_DONE;
}

/* ---- the receive stage --------------------------------------------------- */

/*
 * The GRH area of @dg as its RoCE v2 packet would carry it: over IPv4 the
 * IPv4 header (no options, DF, checksum) in its last 20 bytes, over IPv6
 * the IPv6 header; the lengths count UDP, BTH, DETH, the immediate, the
 * payload padded to 4 bytes and the ICRC.
 */
static void hca_ud_grh(const struct hca_datagram *dg, u8 *grh)
{
	u32 rest = HCA_UDP_HDR + HCA_BTH + HCA_DETH +
		   (dg->op->flags & SOFTHCA_OPF_IMM ? HCA_IMMDT : 0) +
		   ALIGN(dg->len, 4) + HCA_ICRC;

	memset(grh, 0, SOFTHCA_GRH_SIZE);
	if (ipv6_addr_v4mapped((const struct in6_addr *)dg->sgid)) {
		struct iphdr *ip = (void *)(grh + SOFTHCA_GRH_IPV4_OFFSET);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = dg->tclass;
		ip->tot_len = htons(sizeof(*ip) + rest);
		ip->frag_off = htons(IP_DF);
		ip->ttl = dg->hop_limit;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, dg->sgid + 12, sizeof(ip->saddr));
		memcpy(&ip->daddr, dg->dgid + 12, sizeof(ip->daddr));
		ip->check = ip_fast_csum(ip, ip->ihl);
	} else {
		struct ipv6hdr *ip6 = (void *)grh;

		*(__be32 *)ip6 = htonl(6 << 28 | (u32)dg->tclass << 20 |
				       dg->flow_label);
		ip6->payload_len = htons(rest);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = dg->hop_limit;
		memcpy(&ip6->saddr, dg->sgid, sizeof(ip6->saddr));
		memcpy(&ip6->daddr, dg->dgid, sizeof(ip6->daddr));
	}
}

/* Bytes of the GRH area into the start of @dst, whose MKeys are held. */
static void hca_ud_put_grh(struct hca_sgl *dst, const u8 *grh)
{
	u32 done = 0, i;

	for (i = 0; i < dst->n && done < SOFTHCA_GRH_SIZE; i++) {
		u32 n = min_t(u32, dst->sge[i].len, SOFTHCA_GRH_SIZE - done);

		hca_mkey_write(dst->sge[i].mkey, dst->sge[i].va, grh + done, n);
		done += n;
	}
}

/* The responder CQE of a datagram for the RQ WQE at rq_ci. */
static void hca_ud_cqe(struct hca_exec_ctx *ctx, const struct hca_datagram *dg,
		       struct hca_qp *qp, u32 byte_cnt)
{
	const struct softhca_opcode_info *op = dg->op;
	u8 l3 = ipv6_addr_v4mapped((const struct in6_addr *)dg->sgid) ?
		SOFTHCA_CQE_L3_IPV4 : SOFTHCA_CQE_L3_IPV6;
	struct softhca_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	memcpy(cqe.smac, dg->smac, sizeof(cqe.smac));
	cqe.flags_rqpn = cpu_to_be32(SOFTHCA_CQE_GRH_IN_BUFFER <<
				     SOFTHCA_CQE_GRH_SHIFT |
				     (u32)SOFTHCA_CQE_PKT_UDP <<
				     SOFTHCA_CQE_PKT_SHIFT |
				     (u32)l3 << SOFTHCA_CQE_L3_SHIFT |
				     (dg->sqpn & SOFTHCA_24BIT_MASK));
	if (dg->vlan) {
		cqe.l4_l3_hdr_type = SOFTHCA_CQE_VLAN_PRESENT;
		cqe.vlan_info = cpu_to_be16(dg->sl << SOFTHCA_CQE_VLAN_PCP_SHIFT |
					    (dg->vlan_id &
					     SOFTHCA_CQE_VLAN_VID_MASK));
	}
	if (op->flags & SOFTHCA_OPF_IMM)
		cqe.imm_inval_pkey = dg->imm;
	cqe.byte_cnt = cpu_to_be32(byte_cnt);
	cqe.sop_drop_qpn = cpu_to_be32(qp->qpn & SOFTHCA_24BIT_MASK);
	cqe.wqe_counter = cpu_to_be16(hca_rq_wqe_counter(qp));
	cqe.op_own = op->resp_cqe << SOFTHCA_CQE_OPCODE_SHIFT;
	if (dg->solicited)
		cqe.op_own |= SOFTHCA_CQE_SE;
	hca_resp_cqe_put(ctx, qp, &cqe);
}

/* A receive WQE that fails on its own (malformed, keys): error CQE, ERR. */
static void hca_ud_rq_fail(struct hca_exec_ctx *ctx, struct hca_qp *qp,
			   u8 syndrome)
{
	hca_resp_cqe_err(ctx, qp, syndrome);
	if (hca_qp_set_err(qp))
		hca_engine_defer(ctx, qp);
}

/* Under @qp's resp_lock. */
static void hca_ud_take(struct hca_exec_ctx *ctx,
			const struct hca_datagram *dg, struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_sgl *dst = &ctx->remote;
	u64 need = SOFTHCA_GRH_SIZE + (u64)dg->len;
	u8 grh[SOFTHCA_GRH_SIZE];
	int err;

	if (!hca_qp_state_receives(READ_ONCE(qp->state))) {
		atomic64_inc(&qp->hca->rx_no_qp_drops);
		return;
	}
	if (hca_resp_attrs_get(qp)->qkey != dg->qkey) {
		hca_count(e->resp_cnt, HCA_QCNT_RX_QKEY_DROPS, 1);
		return;
	}
	if (hca_rq_is_empty(qp)) {
		hca_count(e->resp_cnt, HCA_QCNT_OUT_OF_BUFFER, 1);
		return;
	}
	if (hca_rq_fetch(ctx, qp, dst)) {
		hca_ud_rq_fail(ctx, qp, SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR);
		return;
	}
	/* The WQE stays posted for a datagram that fits (IBA class D). */
	if (need > dst->len) {
		hca_count(e->resp_cnt, HCA_QCNT_RX_LEN_DROPS, 1);
		return;
	}
	err = hca_sgl_get(qp->hca, hca_rq_pdn(qp), HCA_ACCESS_LOCAL_WRITE, dst,
			  need, &e->keys);
	/* A page fault: the datagram is lost, the next one finds the pages. */
	if (err == -EAGAIN && hca_odp_fault(qp, true, &dst->miss) == -EAGAIN) {
		hca_count(e->resp_cnt, HCA_QCNT_OUT_OF_BUFFER, 1);
		return;
	}
	if (err) {
		hca_ud_rq_fail(ctx, qp, SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR);
		return;
	}
	hca_ud_grh(dg, grh);
	hca_ud_put_grh(dst, grh);
	hca_sgl_copy_at(ctx, dst, SOFTHCA_GRH_SIZE, dg->payload, dg->len);
	hca_sgl_put(dst);
	hca_count(e->resp_cnt, HCA_QCNT_RX_REQUESTS, 1);
	hca_count(e->resp_cnt, HCA_QCNT_RX_BYTES, dg->len);
	hca_ud_cqe(ctx, dg, qp, need);
}

void hca_ud_receive(struct hca_exec_ctx *ctx, const struct hca_datagram *dg,
		    struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	/* An RC QP takes no datagram: nobody is there for it. */
	if (qp->type->tp != SOFTHCA_TP_UD) {
		atomic64_inc(&qp->hca->rx_no_qp_drops);
		return;
	}
	if (!mutex_trylock(&e->resp_lock))
		mutex_lock(&e->resp_lock);
	hca_ud_take(ctx, dg, qp);
	mutex_unlock(&e->resp_lock);
}
