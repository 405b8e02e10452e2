// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: queue pairs (RC, UD and ib_mad's GSI QP) and
 * multicast attachment.
 *
 * The kernel sizes the queues from the requested caps (the provider
 * computes nothing) and allocates one zeroed, page-aligned area that the
 * provider maps (SHCA_MMAP_QUEUE): the RQ at offset 0, the SQ after it, the
 * doorbell record after the SQ, each 64-byte aligned. modify_qp validates
 * everything a ConnectX validates before the HCA model applies it. What
 * differs between QP types is a row of shca_qp_kinds[].
 */
#include <linux/log2.h>
#include <linux/minmax.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/softhca-abi.h>
#include <rdma/uverbs_ioctl.h>

#include "softhca.h"

/* softhca_create_qp_req.comp_mask bits / flags this driver understands. */
#define SHCA_QP_REQ_MASK	0
#define SHCA_QP_REQ_FLAGS	SOFTHCA_QP_FLAG_SIGNATURE

#define SHCA_WQE_CTRL_SIZE	sizeof(struct softhca_wqe_ctrl_seg)
#define SHCA_WQE_RADDR_SIZE	sizeof(struct softhca_wqe_raddr_seg)
#define SHCA_WQE_ATOMIC_SIZE	sizeof(struct softhca_wqe_atomic_seg)
#define SHCA_WQE_DATA_SIZE	sizeof(struct softhca_wqe_data_seg)
#define SHCA_WQE_INLINE_SIZE	sizeof(struct softhca_wqe_inline_seg)
#define SHCA_WQE_AV_SIZE	sizeof(struct softhca_wqe_av)
#define SHCA_WQE_XRC_SIZE	sizeof(struct softhca_wqe_xrc_seg)

/*
 * What one QP type is to the driver: the model's service type and
 * transport, the segment every send WQE has between ctrl and its data
 * (RC, UC: a remote address, UD: the datagram segment, XRC: the XRC
 * segment and a remote address), whether its WQEs may be atomics, the
 * creation flags it takes, and whether only the kernel may create it (the
 * GSI QP: ib_mad's, one per port) or only user space (an XRC initiator:
 * a kernel WR has no SRQ number to send to).
 */
struct shca_qp_kind {
	enum ib_qp_type type;
	u32 st;				/* enum hca_qp_st */
	u32 tp;				/* SOFTHCA_TP_* */
	u32 hdr;			/* bytes after ctrl, before the data */
	bool atomics;
	bool port_mtu;			/* its path MTU is its port's */
	bool kernel_only;
	bool user_only;
	u32 create_flags;		/* IB_QP_CREATE_* */
};

static const struct shca_qp_kind shca_qp_kinds[] = {
	{ .type = IB_QPT_RC, .st = HCA_QP_ST_RC, .tp = SOFTHCA_TP_RC,
	  .hdr = SHCA_WQE_RADDR_SIZE, .atomics = true },
	{ .type = IB_QPT_UC, .st = HCA_QP_ST_UC, .tp = SOFTHCA_TP_UC,
	  .hdr = SHCA_WQE_RADDR_SIZE },
	{ .type = IB_QPT_XRC_INI, .st = HCA_QP_ST_XRC_INI, .tp = SOFTHCA_TP_XRC,
	  .hdr = SHCA_WQE_XRC_SIZE + SHCA_WQE_RADDR_SIZE, .atomics = true,
	  .user_only = true },
	{ .type = IB_QPT_XRC_TGT, .st = HCA_QP_ST_XRC_TGT, .tp = SOFTHCA_TP_XRC,
	  .hdr = SHCA_WQE_XRC_SIZE + SHCA_WQE_RADDR_SIZE },
	{ .type = IB_QPT_UD, .st = HCA_QP_ST_UD, .tp = SOFTHCA_TP_UD,
	  .hdr = SHCA_WQE_AV_SIZE, .port_mtu = true,
	  .create_flags = IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK },
	{ .type = IB_QPT_GSI, .st = HCA_QP_ST_GSI, .tp = SOFTHCA_TP_UD,
	  .hdr = SHCA_WQE_AV_SIZE, .port_mtu = true, .kernel_only = true },
};

static const struct shca_qp_kind *shca_qp_kind(enum ib_qp_type type)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(shca_qp_kinds); i++)
		if (shca_qp_kinds[i].type == type)
			return &shca_qp_kinds[i];
	return NULL;
}

/* The QP states of the model are the IB ones, in the same order. */
static_assert(HCA_QPS_RESET == (int)IB_QPS_RESET);
static_assert(HCA_QPS_INIT == (int)IB_QPS_INIT);
static_assert(HCA_QPS_RTR == (int)IB_QPS_RTR);
static_assert(HCA_QPS_RTS == (int)IB_QPS_RTS);
static_assert(HCA_QPS_SQD == (int)IB_QPS_SQD);
static_assert(HCA_QPS_SQE == (int)IB_QPS_SQE);
static_assert(HCA_QPS_ERR == (int)IB_QPS_ERR);

/* Where everything of one QP lives, and what it grants. */
struct shca_qp_layout {
	u32 wqe_size;			/* bytes of the largest send WQE */
	u32 sq_wqebb_cnt;
	u32 sq_max_post;
	u32 rq_wqe_cnt;
	u32 rq_wqe_shift;
	u32 rq_max_gs;
	u32 rq_offset;
	u32 sq_offset;
	u32 dbr_offset;
	size_t size;
};

/*
 * Size the SQ and RQ for @cap (mlx5's rules) and write the granted caps
 * back. A send WQE is a control segment and the largest body it may
 * carry: its kind's header (RC: RDMA address, UD: datagram segment) +
 * max_send_sge data segments, or the header + inline data, or (RC) RDMA
 * address + atomic + one data segment; rounded up to a 64-byte WQEBB. An
 * RQ WQE holds max_recv_sge data segments (+ the signature segment),
 * rounded up to a power of two of at least 16 bytes.
 */
static int shca_qp_layout(const struct hca_caps *caps,
			  const struct shca_qp_kind *k, struct ib_qp_cap *cap,
			  bool sig, struct shca_qp_layout *l)
{
	u32 max_qp_wr = min(caps->max_sq_wqebbs, caps->max_rq_wqes);
	u32 body, wqebbs, rq_stride, rq_bytes;

	if (cap->max_send_wr > max_qp_wr || cap->max_recv_wr > max_qp_wr ||
	    cap->max_send_sge > caps->max_send_sge ||
	    cap->max_recv_sge > caps->max_recv_sge ||
	    cap->max_inline_data > caps->max_inline_data)
		return -EINVAL;

	body = max3(k->atomics ? k->hdr + SHCA_WQE_ATOMIC_SIZE +
		    SHCA_WQE_DATA_SIZE : 0,
		    k->hdr + SHCA_WQE_DATA_SIZE * cap->max_send_sge,
		    k->hdr + ALIGN(SHCA_WQE_INLINE_SIZE + cap->max_inline_data,
				   SOFTHCA_DS_SIZE));
	l->wqe_size = ALIGN(SHCA_WQE_CTRL_SIZE + body, SOFTHCA_SEND_WQE_BB);
	if (l->wqe_size > caps->max_wqe_size)
		return -EINVAL;
	wqebbs = l->wqe_size / SOFTHCA_SEND_WQE_BB;
	/* An SQ always exists: max_send_wr 0 is granted 1. */
	l->sq_wqebb_cnt = roundup_pow_of_two(max(cap->max_send_wr, 1U) *
					     wqebbs);
	/*
	 * The WRs fit, their WQEs do not: EINVAL, what a ConnectX user sees
	 * (libmlx5 refuses it before the kernel, which would say ENOMEM).
	 */
	if (l->sq_wqebb_cnt > caps->max_sq_wqebbs)
		return -EINVAL;
	l->sq_max_post = l->sq_wqebb_cnt / wqebbs;

	rq_stride = SOFTHCA_DS_SIZE * (cap->max_recv_sge + (sig ? 1 : 0));
	rq_stride = rq_stride <= SOFTHCA_DS_SIZE ? SOFTHCA_DS_SIZE :
		    roundup_pow_of_two(rq_stride);
	l->rq_wqe_shift = ilog2(rq_stride);
	/* The stride may hold more than the HCA parses: grant what it parses. */
	l->rq_max_gs = min_t(u32, rq_stride / SOFTHCA_DS_SIZE - (sig ? 1 : 0),
			     caps->max_recv_sge);
	l->rq_wqe_cnt = cap->max_recv_wr ?
			roundup_pow_of_two(cap->max_recv_wr) : 0;
	if (l->rq_wqe_cnt > caps->max_rq_wqes)
		return -EINVAL;

	rq_bytes = l->rq_wqe_cnt << l->rq_wqe_shift;
	l->rq_offset = 0;
	l->sq_offset = ALIGN(rq_bytes, SOFTHCA_CQE_SIZE);
	l->dbr_offset = ALIGN(l->sq_offset +
			      l->sq_wqebb_cnt * SOFTHCA_SEND_WQE_BB, 64);
	l->size = PAGE_ALIGN(l->dbr_offset + sizeof(struct softhca_qp_dbr));

	cap->max_send_wr = l->sq_max_post;
	cap->max_send_sge = min_t(u32, caps->max_send_sge,
				  (l->wqe_size - SHCA_WQE_CTRL_SIZE - k->hdr) /
				  SHCA_WQE_DATA_SIZE);
	cap->max_inline_data = min_t(u32, caps->max_inline_data,
				     l->wqe_size - SHCA_WQE_CTRL_SIZE -
				     k->hdr - SHCA_WQE_INLINE_SIZE);
	cap->max_recv_wr = l->rq_wqe_cnt;
	cap->max_recv_sge = l->rq_max_gs;
	return 0;
}

static int shca_qp_check_init_attr(struct ib_qp_init_attr *init_attr,
				   const struct shca_qp_kind *k, bool user)
{
	/* RoCE has no SMI; raw packet QPs are not in the caps. */
	if (!k || (k->user_only && !user))
		return -EOPNOTSUPP;
	/* ib_uverbs refuses a GSI QP first; EINVAL as it says. */
	if (k->kernel_only && user)
		return -EINVAL;

	/* No RSS table; an SRQ replaces the RQ (no receive caps then). */
	if (init_attr->rwq_ind_tbl)
		return -EINVAL;
	if (init_attr->srq && (init_attr->srq->srq_type != IB_SRQT_BASIC ||
			       (!user && !to_shca_srq(init_attr->srq)->wrs.wrid)))
		return -EINVAL;
	if (init_attr->create_flags & ~k->create_flags)
		return -EOPNOTSUPP;
	if (init_attr->sq_sig_type != IB_SIGNAL_ALL_WR &&
	    init_attr->sq_sig_type != IB_SIGNAL_REQ_WR)
		return -EINVAL;
	/* An XRC initiator only sends: no receive CQ, RQ or SRQ. */
	if (init_attr->qp_type == IB_QPT_XRC_INI)
		return init_attr->send_cq && !init_attr->recv_cq &&
		       !init_attr->srq && !init_attr->cap.max_recv_wr ?
		       0 : -EINVAL;
	if (!init_attr->send_cq || !init_attr->recv_cq)
		return -EINVAL;
	return 0;
}

static void shca_qp_destroy_cmd(struct shca_dev *sdev, u32 qpn)
{
	struct hca_cmd_destroy_qp_in in = { .qpn = qpn };

	WARN_ON(hca_exec(sdev->hca, HCA_CMD_DESTROY_QP, &in, sizeof(in),
			      NULL, 0));
}

/* CREATE_QP's queue fields: where layout @l put them in @qp's area. */
static void shca_qp_in_queues(struct hca_cmd_create_qp_in *in,
			      const struct shca_qp *qp,
			      const struct shca_qp_layout *l)
{
	in->sq_buf = qp->queue->buf + l->sq_offset;
	in->sq_wqebb_cnt = l->sq_wqebb_cnt;
	in->rq_buf = l->rq_wqe_cnt ? qp->queue->buf + l->rq_offset : NULL;
	in->rq_wqe_cnt = l->rq_wqe_cnt;
	in->rq_wqe_shift = l->rq_wqe_shift;
	in->sq_max_wqebbs = l->wqe_size / SOFTHCA_SEND_WQE_BB;
	in->dbr = qp->queue->buf + l->dbr_offset;
}

/*
 * An XRC target QP. ib_core creates it for the user with no udata, PD or
 * CQ (and shares it: ib_open_qp()); it has no queue to post to. The model
 * still keeps a doorbell record and a one-WQEBB SQ for it, which nobody
 * rings: a kernel-side area, mapped by no one.
 */
static int shca_create_xrc_tgt(struct shca_dev *sdev, struct shca_qp *qp,
			       const struct shca_qp_kind *k,
			       struct ib_qp_init_attr *init_attr)
{
	struct hca_cmd_create_qp_in in = {};
	struct hca_cmd_create_qp_out out;
	struct shca_qp_layout l;
	struct ib_qp_cap cap = {};
	int err;

	if (!init_attr->xrcd || init_attr->send_cq || init_attr->recv_cq ||
	    init_attr->srq || init_attr->create_flags ||
	    init_attr->rwq_ind_tbl)
		return -EINVAL;
	err = shca_qp_layout(&sdev->caps, k, &cap, false, &l);
	if (err)
		return err;
	qp->queue = shca_queue_alloc(NULL, l.size);
	if (IS_ERR(qp->queue))
		return PTR_ERR(qp->queue);
	in.st = k->st;
	in.xrcdn = to_shca_xrcd(init_attr->xrcd)->xrcdn;
	shca_qp_in_queues(&in, qp, &l);
	in.uar_index = shca_udata_uar(NULL);
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_QP, &in, sizeof(in),
		       &out, sizeof(out));
	if (err)
		goto err_queue;
	qp->qpn = out.qpn;
	qp->db_slot = out.db_slot;
	qp->ibqp.qp_num = out.qpn;
	qp->kind = k;
	mutex_init(&qp->mutex);
	err = shca_qp_ev_register(sdev, &qp->ev, &qp->ibqp, qp->qpn);
	if (err)
		goto err_qp;
	memset(&qp->cap, 0, sizeof(qp->cap));
	memset(&init_attr->cap, 0, sizeof(init_attr->cap));
	return 0;

err_qp:
	mutex_destroy(&qp->mutex);
	shca_qp_destroy_cmd(sdev, qp->qpn);
err_queue:
	shca_queue_free(qp->queue);
	return err;
}

int shca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init_attr,
		   struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibqp->device);
	const struct shca_qp_kind *k = shca_qp_kind(init_attr->qp_type);
	struct shca_qp *qp = to_shca_qp(ibqp);
	struct softhca_create_qp_req req = {};
	struct softhca_create_qp_resp resp = {};
	struct hca_cmd_create_qp_in in = {};
	struct hca_cmd_create_qp_out out;
	struct shca_qp_layout l;
	struct ib_qp_cap cap;
	bool sig;
	int err;

	if (init_attr->qp_type == IB_QPT_XRC_TGT)
		return shca_create_xrc_tgt(sdev, qp, k, init_attr);
	err = shca_qp_check_init_attr(init_attr, k, udata != NULL);
	if (err) {
		shca_dbg(sdev, "refused: QP type %d, create_flags 0x%x: %pe\n",
			 init_attr->qp_type, init_attr->create_flags,
			 ERR_PTR(err));
		return err;
	}
	if (udata) {
		err = shca_udata_req(udata, &req, sizeof(req));
		if (err)
			return err;
		if ((req.comp_mask & ~SHCA_QP_REQ_MASK) ||
		    (req.flags & ~SHCA_QP_REQ_FLAGS))
			return -EINVAL;
	} else if (!to_shca_cq(init_attr->send_cq)->kcq ||
		   !init_attr->recv_cq || !to_shca_cq(init_attr->recv_cq)->kcq) {
		/* A kernel QP completes on kernel CQs (kverbs.c polls). */
		return -EINVAL;
	}
	sig = req.flags & SOFTHCA_QP_FLAG_SIGNATURE;

	cap = init_attr->cap;
	if (init_attr->srq) {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	err = shca_qp_layout(&sdev->caps, k, &cap, sig, &l);
	if (err) {
		shca_dbg(sdev, "refused: caps send %u x %u SGEs, recv %u x %u, inline %u beyond the device\n",
			 cap.max_send_wr, cap.max_send_sge, cap.max_recv_wr,
			 cap.max_recv_sge, cap.max_inline_data);
		return err;
	}

	qp->queue = shca_queue_alloc(udata, l.size);
	if (IS_ERR(qp->queue))
		return PTR_ERR(qp->queue);

	in.pdn = to_shca_pd(ibqp->pd)->pdn;
	in.send_cqn = to_shca_cq(init_attr->send_cq)->cqn;
	if (init_attr->recv_cq)
		in.recv_cqn = to_shca_cq(init_attr->recv_cq)->cqn;
	if (sig)
		in.flags |= HCA_QP_SIGNATURE;
	if (init_attr->sq_sig_type == IB_SIGNAL_ALL_WR)
		in.flags |= HCA_QP_SQ_SIG_ALL;
	if (init_attr->create_flags & IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK)
		in.flags |= HCA_QP_BLOCK_MCAST_LOOPBACK;
	/*
	 * Kernel QPs may use the reserved lkey (local_dma_lkey) and own a
	 * privileged Q_Key; no user QP ever does.
	 */
	if (!udata)
		in.flags |= HCA_QP_PRIVILEGED;
	in.st = k->st;
	shca_qp_in_queues(&in, qp, &l);
	in.max_send_sge = cap.max_send_sge;
	in.max_inline_data = cap.max_inline_data;
	in.uar_index = shca_udata_uar(udata);
	if (init_attr->srq)
		in.srqn = to_shca_srq(init_attr->srq)->srqn;
	err = hca_exec(sdev->hca, HCA_CMD_CREATE_QP, &in, sizeof(in),
			    &out, sizeof(out));
	if (err)
		goto err_queue;
	qp->qpn = out.qpn;
	qp->db_slot = out.db_slot;
	ibqp->qp_num = out.qpn;
	qp->cap = cap;
	qp->sig_all = init_attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->kind = k;
	qp->create_flags = init_attr->create_flags;
	mutex_init(&qp->mutex);
	/* Issue 4: the EQ handler finds the QP by its QPN (eq.h). */
	err = shca_qp_ev_register(sdev, &qp->ev, ibqp, qp->qpn);
	if (err)
		goto err_qp_cmd;

	if (!udata) {
		err = shca_kqp_create(qp, qp->queue->buf + l.rq_offset,
				      l.rq_wqe_cnt, l.rq_wqe_shift,
				      l.rq_max_gs, qp->queue->buf + l.sq_offset,
				      l.sq_wqebb_cnt, l.sq_max_post,
				      in.sq_max_wqebbs, cap.max_send_sge,
				      cap.max_inline_data, in.dbr, k->tp,
				      in.pdn);
		if (err)
			goto err_qp;
		init_attr->cap = cap;
		return 0;
	}

	resp.flags = req.flags;
	resp.sq_wqebb_cnt = l.sq_wqebb_cnt;
	resp.sq_offset = l.sq_offset;
	resp.sq_max_post = l.sq_max_post;
	resp.sq_max_wqebbs = l.wqe_size / SOFTHCA_SEND_WQE_BB;
	resp.rq_wqe_cnt = l.rq_wqe_cnt;
	resp.rq_wqe_shift = l.rq_wqe_shift;
	resp.rq_offset = l.rq_offset;
	resp.rq_max_gs = l.rq_max_gs;
	resp.dbr_offset = l.dbr_offset;
	resp.max_inline_data = cap.max_inline_data;
	resp.mmap_offset = rdma_user_mmap_get_offset(&qp->queue->rdma_entry);
	resp.mmap_size = l.size;
	resp.db_slot = out.db_slot;
	resp.db_thread = out.db_thread;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_qp;

	init_attr->cap = cap;
	return 0;

err_qp:
	shca_qp_ev_unregister(sdev, &qp->ev);
err_qp_cmd:
	mutex_destroy(&qp->mutex);
	shca_qp_destroy_cmd(sdev, qp->qpn);
err_queue:
	shca_queue_free(qp->queue);
	return err;
}

int shca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibqp->device);
	struct shca_qp *qp = to_shca_qp(ibqp);

	/*
	 * Events first (waits for EQ handlers and event work: eq.h; a later
	 * event of this QP is dropped), then the model, which moves it to
	 * RESET, waits for the engine to let go and frees the QPN for reuse.
	 */
	shca_qp_ev_unregister(sdev, &qp->ev);
	shca_qp_destroy_cmd(sdev, qp->qpn);
	if (qp->kqp)
		shca_kqp_destroy(qp);
	shca_queue_free(qp->queue);
	mutex_destroy(&qp->mutex);
	return 0;
}

static int hca_qp_state(struct shca_dev *sdev, struct shca_qp *qp,
			 struct hca_cmd_query_qp_out *out)
{
	struct hca_cmd_query_qp_in in = { .qpn = qp->qpn };

	return hca_exec(sdev->hca, HCA_CMD_QUERY_QP, &in, sizeof(in),
			     out, sizeof(*out));
}

/*
 * The rights a QP's access flags take; only the remote ones mean anything
 * for a QP. ON_DEMAND is taken too, as mlx5 takes it: rdma-core's ODP
 * tests give a QP the flags of their MRs.
 */
#define SHCA_QP_ACCESS	(IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_LOCAL_WRITE | \
			 IB_ACCESS_MW_BIND | IB_ACCESS_ON_DEMAND)

/* The primary path: RoCE v2, a GRH, a source GID of this port. */
static int shca_qp_path(struct shca_dev *sdev, const struct rdma_ah_attr *ah,
			struct hca_qp_attrs *a)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    rdma_ah_get_port_num(ah) != SHCA_PORT)
		return -EINVAL;
	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	/* ib_core resolved sgid_index into sgid_attr (a reference). */
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->index != grh->sgid_index ||
	    sgid_attr->port_num != SHCA_PORT ||
	    sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	if (grh->sgid_index >= sdev->caps.gid_tbl_len)
		return -EINVAL;
	/* RC has one destination; a multicast GID is none. */
	if (rdma_is_multicast_addr((struct in6_addr *)grh->dgid.raw))
		return -EINVAL;

	memcpy(a->dgid, grh->dgid.raw, sizeof(a->dgid));
	a->sgid_index = grh->sgid_index;
	a->hop_limit = grh->hop_limit;
	a->traffic_class = grh->traffic_class;
	/* Its 20 bits: the rest is ignored, as by the AH (ah.c). */
	a->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	return 0;
}

/*
 * Check every attribute in @mask and translate it for MODIFY_QP. The
 * transition itself was checked by ib_modify_qp_is_ok().
 */
static int hca_qp_attrs(struct shca_dev *sdev, const struct shca_qp *qp,
			const struct ib_qp_attr *attr, int mask,
			struct hca_cmd_modify_qp_in *in)
{
	const struct hca_caps *caps = &sdev->caps;
	struct hca_qp_attrs *a = &in->attrs;
	int err;

	if ((mask & IB_QP_PORT) && attr->port_num != SHCA_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= caps->pkey_tbl_len)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~SHCA_QP_ACCESS))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096 ||
	     ib_mtu_enum_to_int(attr->path_mtu) > caps->max_mtu))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > caps->max_qp_init_rd_atom)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > caps->max_qp_rd_atom)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SOFTHCA_24BIT_MASK)
		return -EINVAL;
	/* No alternate path on RoCE (ib_core refuses it first). */
	if (mask & IB_QP_ALT_PATH)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    attr->path_mig_state != IB_MIG_MIGRATED)
		return -EINVAL;

	if (mask & IB_QP_AV) {
		err = shca_qp_path(sdev, &attr->ah_attr, a);
		if (err)
			return err;
		in->attr_mask |= HCA_QP_ATTR_PATH;
	}
	if (mask & IB_QP_ACCESS_FLAGS) {
		if (attr->qp_access_flags & IB_ACCESS_REMOTE_WRITE)
			a->access_flags |= HCA_ACCESS_REMOTE_WRITE;
		if (attr->qp_access_flags & IB_ACCESS_REMOTE_READ)
			a->access_flags |= HCA_ACCESS_REMOTE_READ;
		if (attr->qp_access_flags & IB_ACCESS_REMOTE_ATOMIC)
			a->access_flags |= HCA_ACCESS_REMOTE_ATOMIC;
		in->attr_mask |= HCA_QP_ATTR_ACCESS;
	}
	if (mask & IB_QP_PATH_MTU) {
		a->path_mtu = ib_mtu_enum_to_int(attr->path_mtu);
		in->attr_mask |= HCA_QP_ATTR_PATH_MTU;
	}
	if (mask & IB_QP_DEST_QPN) {
		a->dest_qpn = attr->dest_qp_num;
		in->attr_mask |= HCA_QP_ATTR_DEST_QPN;
	}
	/* ib_core masked the PSNs to 24 bits already. */
	if (mask & IB_QP_RQ_PSN) {
		a->rq_psn = attr->rq_psn & SOFTHCA_24BIT_MASK;
		in->attr_mask |= HCA_QP_ATTR_RQ_PSN;
	}
	if (mask & IB_QP_SQ_PSN) {
		a->sq_psn = attr->sq_psn & SOFTHCA_24BIT_MASK;
		in->attr_mask |= HCA_QP_ATTR_SQ_PSN;
	}
	if (mask & IB_QP_MIN_RNR_TIMER) {
		a->min_rnr_timer = attr->min_rnr_timer;
		in->attr_mask |= HCA_QP_ATTR_MIN_RNR_TIMER;
	}
	if (mask & IB_QP_RNR_RETRY) {
		a->rnr_retry = attr->rnr_retry;
		in->attr_mask |= HCA_QP_ATTR_RNR_RETRY;
	}
	if (mask & IB_QP_RETRY_CNT) {
		a->retry_cnt = attr->retry_cnt;
		in->attr_mask |= HCA_QP_ATTR_RETRY_CNT;
	}
	if (mask & IB_QP_TIMEOUT) {
		a->timeout = attr->timeout;
		in->attr_mask |= HCA_QP_ATTR_TIMEOUT;
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC) {
		a->max_rd_atomic = attr->max_rd_atomic;
		in->attr_mask |= HCA_QP_ATTR_MAX_RD_ATOMIC;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
		in->attr_mask |= HCA_QP_ATTR_MAX_DEST_RD_ATOMIC;
	}
	if (mask & IB_QP_PORT) {
		a->port = attr->port_num;
		in->attr_mask |= HCA_QP_ATTR_PORT;
	}
	if (mask & IB_QP_PKEY_INDEX) {
		a->pkey_index = attr->pkey_index;
		in->attr_mask |= HCA_QP_ATTR_PKEY_INDEX;
	}
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) {
		a->sqd_notify = !!attr->en_sqd_async_notify;
		in->attr_mask |= HCA_QP_ATTR_SQD_NOTIFY;
	}
	if (mask & IB_QP_QKEY) {
		/*
		 * A controlled Q_Key (the GSI QP's kind) belongs to kernel
		 * QPs only: with one, a process could forge MADs. Stricter
		 * than ib_core, which lets CAP_NET_RAW set one.
		 */
		if ((attr->qkey & SOFTHCA_QKEY_PRIVILEGED) && !qp->kqp)
			return -EPERM;
		a->qkey = attr->qkey;
		in->attr_mask |= HCA_QP_ATTR_QKEY;
	}
	return 0;
}

/*
 * A datagram QP's path MTU is its port's active MTU (the netdev's) as of
 * each modify that brings it towards RTS: UD has no path attribute.
 */
static void shca_qp_port_mtu(struct shca_dev *sdev, const struct shca_qp *qp,
			     enum ib_qp_state new_state,
			     struct hca_cmd_modify_qp_in *in)
{
	if (!qp->kind->port_mtu || new_state < IB_QPS_INIT ||
	    new_state > IB_QPS_RTS)
		return;
	in->attrs.path_mtu = ib_mtu_enum_to_int(shca_port_active_mtu(sdev));
	in->attr_mask |= HCA_QP_ATTR_PATH_MTU;
}

/*
 * One attempt at a modify_qp: decide from the model's current state.
 * -EAGAIN: the engine moved the QP (to ERR) between the query and the
 * command, decide again.
 */
static int shca_modify_qp_once(struct shca_dev *sdev, struct shca_qp *qp,
			       const struct ib_qp_attr *attr, int attr_mask)
{
	struct hca_cmd_modify_qp_in in = { .qpn = qp->qpn };
	struct hca_cmd_query_qp_out cur;
	enum ib_qp_state cur_state, new_state;
	int err;

	err = hca_qp_state(sdev, qp, &cur);
	if (err)
		return err;
	cur_state = attr_mask & IB_QP_CUR_STATE ? attr->cur_qp_state :
		    (enum ib_qp_state)cur.state;
	new_state = attr_mask & IB_QP_STATE ? attr->qp_state : cur_state;
	if (cur_state > IB_QPS_ERR || new_state > IB_QPS_ERR) {
		shca_dbg_qp(qp, "refused: state %u -> %u out of range\n",
			    cur_state, new_state);
		return -EINVAL;
	}
	/* IB_QP_CUR_STATE states a fact; it cannot change one. */
	if (cur_state != (enum ib_qp_state)cur.state) {
		shca_dbg_qp(qp, "refused: cur_qp_state %s, the QP is in %s\n",
			    hca_qp_state_name(cur_state),
			    hca_qp_state_name(cur.state));
		return -EINVAL;
	}
	if (!ib_modify_qp_is_ok(cur_state, new_state, qp->ibqp.qp_type,
				attr_mask)) {
		shca_dbg_qp(qp, "refused: %s -> %s with mask 0x%x: not in the IB table (state or attributes)\n",
			    hca_qp_state_name(cur_state),
			    hca_qp_state_name(new_state), attr_mask);
		return -EINVAL;
	}
	err = hca_qp_attrs(sdev, qp, attr, attr_mask, &in);
	if (err) {
		shca_dbg_qp(qp, "refused: %s -> %s, an attribute of mask 0x%x: %pe\n",
			    hca_qp_state_name(cur_state),
			    hca_qp_state_name(new_state), attr_mask,
			    ERR_PTR(err));
		return err;
	}

	shca_qp_port_mtu(sdev, qp, new_state, &in);
	in.cur_state = cur_state;
	in.new_state = new_state;
	err = hca_exec(sdev->hca, HCA_CMD_MODIFY_QP, &in, sizeof(in), NULL, 0);
	if (!err)
		shca_dbg_qp(qp, "%s -> %s (mask 0x%x)\n",
			    hca_qp_state_name(cur_state),
			    hca_qp_state_name(new_state), attr_mask);
	return err;
}

int shca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata)
{
	struct shca_dev *sdev = to_shca_dev(ibqp->device);
	struct shca_qp *qp = to_shca_qp(ibqp);
	int tries = 3;
	int err;

	if (attr_mask & ~IB_QP_ATTR_STANDARD_BITS) {
		shca_dbg_qp(qp, "refused: mask bits 0x%x not supported\n",
			    attr_mask & ~IB_QP_ATTR_STANDARD_BITS);
		return -EOPNOTSUPP;
	}
	/* No driver data is defined for this command. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;

	mutex_lock(&qp->mutex);
	/* Only the engine changes the state meanwhile, and only to ERR. */
	do {
		err = shca_modify_qp_once(sdev, qp, attr, attr_mask);
	} while (err == -EAGAIN && --tries);
	if (err == -EAGAIN)
		err = -EINVAL;
	if (!err && qp->kqp && (attr_mask & IB_QP_STATE) &&
	    attr->qp_state == IB_QPS_RESET)
		shca_kqp_reset(qp);
	mutex_unlock(&qp->mutex);
	return err;
}

static void shca_qp_to_ah(const struct hca_qp_attrs *a,
			  struct rdma_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah, a->port ? a->port : SHCA_PORT);
	rdma_ah_set_grh(ah, NULL, a->flow_label, a->sgid_index, a->hop_limit,
			a->traffic_class);
	memcpy(ah->grh.dgid.raw, a->dgid, sizeof(ah->grh.dgid.raw));
}

int shca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init_attr)
{
	struct shca_dev *sdev = to_shca_dev(ibqp->device);
	struct shca_qp *qp = to_shca_qp(ibqp);
	struct hca_cmd_query_qp_out out;
	const struct hca_qp_attrs *a = &out.attrs;
	int err;

	mutex_lock(&qp->mutex);
	err = hca_qp_state(sdev, qp, &out);
	if (err)
		goto out;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = out.state;
	attr->cur_qp_state = out.state;
	attr->path_mtu = a->path_mtu ? ib_mtu_int_to_enum(a->path_mtu) : 0;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->rq_psn = a->rq_psn;
	attr->sq_psn = a->sq_psn;
	attr->dest_qp_num = a->dest_qpn;
	if (a->access_flags & HCA_ACCESS_REMOTE_WRITE)
		attr->qp_access_flags |= IB_ACCESS_REMOTE_WRITE;
	if (a->access_flags & HCA_ACCESS_REMOTE_READ)
		attr->qp_access_flags |= IB_ACCESS_REMOTE_READ;
	if (a->access_flags & HCA_ACCESS_REMOTE_ATOMIC)
		attr->qp_access_flags |= IB_ACCESS_REMOTE_ATOMIC;
	attr->cap = qp->cap;
	shca_qp_to_ah(a, &attr->ah_attr);
	attr->pkey_index = a->pkey_index;
	/* The model's copy: a modify to RESET clears it there. */
	attr->en_sqd_async_notify = a->sqd_notify;
	attr->sq_draining = out.sq_draining;
	attr->max_rd_atomic = a->max_rd_atomic;
	attr->max_dest_rd_atomic = a->max_dest_rd_atomic;
	attr->min_rnr_timer = a->min_rnr_timer;
	attr->port_num = a->port ? a->port : SHCA_PORT;
	attr->timeout = a->timeout;
	attr->retry_cnt = a->retry_cnt;
	attr->rnr_retry = a->rnr_retry;
	attr->qkey = a->qkey;

	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->cap = qp->cap;
	init_attr->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR :
			       IB_SIGNAL_REQ_WR;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->create_flags = qp->create_flags;
	init_attr->port_num = SHCA_PORT;
out:
	mutex_unlock(&qp->mutex);
	return err;
}

/* Multicast (datagram QPs; ib_core checked the GID and the QP type). */
static int shca_mcg(struct ib_qp *ibqp, union ib_gid *gid, u16 op)
{
	struct shca_dev *sdev = to_shca_dev(ibqp->device);
	struct shca_qp *qp = to_shca_qp(ibqp);
	struct hca_cmd_mcg_in in = { .qpn = qp->qpn };
	int err;

	memcpy(in.gid, gid->raw, sizeof(in.gid));
	err = hca_exec(sdev->hca, op, &in, sizeof(in), NULL, 0);
	shca_dbg_qp(qp, "%s %pI6: %pe\n", hca_cmd_name(op), gid->raw,
		    ERR_PTR(err));
	return err;
}

int shca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return shca_mcg(ibqp, gid, HCA_CMD_ATTACH_TO_MCG);
}

int shca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return shca_mcg(ibqp, gid, HCA_CMD_DETACH_FROM_MCG);
}
