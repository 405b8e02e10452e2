// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: an RC, UC or XRC QP's wire context (wire_rc.h). MODIFY_QP to RTR
 * decides, from the destination GID, whether the QP's peer is a softhca
 * device of this host (the local fabric) or on the wire; a wire QP gets
 * its context, the address it sends to and from, its receive PSN, and at
 * RTS its send PSN. The memory stays with the QP until DESTROY_QP, so the
 * lockless readers (the receive path, hca_qp_has_work()) never see it
 * freed; qp->eng->wire says whether it is in use.
 */
#include <linux/slab.h>
#include <linux/string.h>

#include "wire_rc.h"

/* The QP's path as the wire needs it, from its attributes. */
static int hca_wire_qp_path(struct hca_qp *qp, struct hca_wire_qp *wq)
{
	struct hca_qp_attrs a;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	a = qp->attrs;
	spin_unlock_irqrestore(&qp->lock, flags);
	if (!hca_wire_src(qp->hca, a.sgid_index, wq->addr.sgid))
		return -EINVAL;
	memcpy(wq->addr.dgid, a.dgid, sizeof(wq->addr.dgid));
	wq->addr.tclass = a.traffic_class;
	wq->addr.hop_limit = a.hop_limit;
	wq->addr.flow_label = a.flow_label;
	wq->addr.udp_sport = hca_wire_sport(a.flow_label, qp->qpn, a.dest_qpn);
	/* A route of the last connection is looked up again. */
	dst_cache_reset(&wq->route);
	wq->addr.route = &wq->route;
	wq->dest_qpn = a.dest_qpn;
	wq->mtu = a.path_mtu;
	memset(&wq->resp, 0, sizeof(wq->resp));
	wq->resp.epsn = a.rq_psn;
	memset(&wq->req, 0, sizeof(wq->req));
	memset(&wq->rp, 0, sizeof(wq->rp));
	wq->req.next_psn = a.sq_psn;
	return 0;
}

int hca_wire_qp_rtr(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	struct hca_wire_qp *wq = e->wire_mem;
	u8 dgid[16];
	unsigned long flags;
	int err = 0;

	if (qp->type->tp == SOFTHCA_TP_UD)
		return 0;
	spin_lock_irqsave(&qp->lock, flags);
	memcpy(dgid, qp->attrs.dgid, sizeof(dgid));
	spin_unlock_irqrestore(&qp->lock, flags);
	if (!hca_wire_needed(dgid)) {
		WRITE_ONCE(e->wire, NULL);
		return 0;
	}
	if (!wq) {
		wq = kzalloc(sizeof(*wq), GFP_KERNEL);
		if (!wq)
			return -ENOMEM;
		if (dst_cache_init(&wq->route, GFP_KERNEL)) {
			kfree(wq);
			return -ENOMEM;
		}
		spin_lock_init(&wq->ack_lock);
		e->wire_mem = wq;
	}
	mutex_lock(&e->exec_lock);
	mutex_lock(&e->resp_lock);
	err = hca_wire_qp_path(qp, wq);
	WRITE_ONCE(e->wire, err ? NULL : wq);
	mutex_unlock(&e->resp_lock);
	mutex_unlock(&e->exec_lock);
	return err;
}

/* RTR -> RTS: the send PSN is set now. */
void hca_wire_qp_rts(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;
	unsigned long flags;
	u32 sq_psn;

	if (!e->wire)
		return;
	spin_lock_irqsave(&qp->lock, flags);
	sq_psn = qp->attrs.sq_psn;
	spin_unlock_irqrestore(&qp->lock, flags);
	mutex_lock(&e->exec_lock);
	if (!e->wire->req.nfl) {
		e->wire->req.next_psn = sq_psn;
		e->wire->req.sq_sent = qp->sq_ci;
	}
	mutex_unlock(&e->exec_lock);
}

/* RESET, both locks held: nothing in flight, nothing queued. */
void hca_wire_qp_reset(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	skb_queue_purge(&e->wire_rsp);
	WRITE_ONCE(e->wire, NULL);
}

void hca_wire_qp_fini(struct hca_qp *qp)
{
	struct hca_engine_qp *e = qp->eng;

	skb_queue_purge(&e->wire_rsp);
	e->wire = NULL;
	if (e->wire_mem)
		dst_cache_destroy(&e->wire_mem->route);
	kfree(e->wire_mem);
	e->wire_mem = NULL;
}
