// SPDX-License-Identifier: GPL-2.0
/*
 * softhca_kcm: a kernel rdma_cm consumer, connecting the way kernel ULPs
 * (NVMe-oF, RDS, NFS/RDMA) do; run once at load (selftests/kcm.sh, in the
 * VM only). A listening cm_id (RDMA_PS_TCP, init_net) bound to @saddr:@port
 * and a client cm_id from @caddr resolve, create their RC QPs with
 * rdma_create_qp() on PDs and CQs of their own, connect with private data
 * both ways and move data: a SEND each way (the server's carries its MR's
 * address and rkey, as a ULP advertises a buffer), an RDMA WRITE into and
 * an RDMA READ from that MR. The client disconnects, both sides see
 * DISCONNECTED, the receives left posted flush, and everything is
 * destroyed. Then a connection the server rejects with private data, and
 * one to a port nobody listens on.
 *
 * Events arrive through one handler into a small queue per endpoint that
 * the test thread takes them from, in order, each within KCM_WAIT (a
 * timeout is a FAIL naming the event that never came). The handler never
 * calls the CM; accept and reject run under rdma_lock_handler(), as ucma
 * does. Each check prints "softhca_kcm TAG: ok NAME" or "softhca_kcm TAG:
 * # why" and "softhca_kcm TAG: FAIL NAME", which kcm.sh turns into TAP
 * lines; the read-only parameters passed, failed and done (1 once
 * everything was destroyed) sum them up.
 */
#include <linux/inet.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *tag = "kcm";
module_param(tag, charp, 0444);
MODULE_PARM_DESC(tag, "prefix of this run's lines in the kernel log");
static char *saddr = "198.18.0.1";
module_param(saddr, charp, 0444);
MODULE_PARM_DESC(saddr, "IPv4 address the server listens on");
static char *caddr = "198.18.0.1";
module_param(caddr, charp, 0444);
MODULE_PARM_DESC(caddr, "IPv4 source address of the client (empty: none)");
static char *sdev = "shca0";
module_param(sdev, charp, 0444);
MODULE_PARM_DESC(sdev, "RDMA device expected to hold saddr");
static char *cdev = "shca0";
module_param(cdev, charp, 0444);
MODULE_PARM_DESC(cdev, "RDMA device expected to hold caddr");
static int port = 19900;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "port of the listener; port + 1 has none");
static bool rxe;
module_param(rxe, bool, 0444);
MODULE_PARM_DESC(rxe, "rdma_rxe devices: RC src_qp and KCM_RXE_WC_FLAGS not compared");
static int passed;
module_param(passed, int, 0444);
static int failed;
module_param(failed, int, 0444);
static int done;
module_param(done, int, 0444);

#define KCM_WAIT	(10 * HZ)	/* for any one CM event or completion */
#define KCM_TIMEOUT_MS	5000		/* address and route resolution */
#define KCM_EVENTS	8
#define KCM_PDATA	IB_CM_REP_PRIVATE_DATA_SIZE	/* the largest */
#define KCM_WRS		8
#define KCM_BUF		8192
#define KCM_UMEM	8192
#define KCM_RD_ATOM	2		/* responder resources, initiator depth */
#define KCM_IMM		0x6b636d31	/* "kcm1" */
/* What rdma_rxe sets on every RC receive, and leaves src_qp 0. */
#define KCM_RXE_WC_FLAGS (IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE)

/*
 * An endpoint's kernel buffer: a receive area, a receive left posted to
 * flush at the disconnect, the outgoing message (SEND payload, WRITE
 * source), the READ's destination. The server's MR: a WRITE lands at
 * KCM_MR_WRITE_OFF, the READ reads KCM_MR_READ_OFF.
 */
#define KCM_RECV_OFF	0
#define KCM_RECV_LEN	1024
#define KCM_SPARE_OFF	2048
#define KCM_MSG_OFF	4096
#define KCM_READ_OFF	6144
#define KCM_SEND_LEN	300
#define KCM_WRITE_LEN	1000
#define KCM_READ_LEN	512
#define KCM_MR_WRITE_OFF 100
#define KCM_MR_READ_OFF	4096
#define KCM_MR_FILL	0x5a

static const char kcm_req_data[] = "softhca_kcm: connect request";
static const char kcm_rep_data[] = "softhca_kcm: accepted";
static const char kcm_rej_data[] = "softhca_kcm: no, thank you";

/* One CM event as the handler saw it; the private data copied. */
struct kcm_event {
	enum rdma_cm_event_type event;
	int status;
	struct rdma_cm_id *id;
	u32 qp_num;
	u8 responder_resources;
	u8 initiator_depth;
	u8 pdata_len;
	u8 pdata[KCM_PDATA];
};

/* One WR's completion (ib_cqe done callback). */
struct kcm_wr {
	struct ib_cqe cqe;
	struct completion done;
	struct ib_wc wc;
};

/* What a server tells its client about a buffer (network order). */
struct kcm_mr_desc {
	__be64 addr;
	__be32 rkey;
	__be32 len;
};

/* One side of a connection, or the listener (which has only id and queue). */
struct kcm_ep {
	const char *name;
	struct rdma_cm_id *id;
	spinlock_t lock;		/* the event queue */
	wait_queue_head_t wq;
	struct kcm_event ev[KCM_EVENTS];
	unsigned int head, tail;	/* ev[tail % KCM_EVENTS] is next */
	struct ib_device *ibdev;	/* of pd, cq, buf (the id's) */
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf;
	u64 dma;
	unsigned long uaddr;		/* the server's MR: insmod's memory */
	struct ib_mr *mr;
	struct kcm_wr wr[KCM_WRS];
	int nwr;
};

/* Static: the endpoints outlive no callback (one run, at module init). */
static struct kcm_ep kcm_listen, kcm_srv, kcm_cli;
static struct sockaddr_in kcm_saddr, kcm_caddr;

static __printf(3, 4) bool kcm_check(bool ok, const char *name,
				     const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (ok) {
		passed++;
		pr_info("softhca_kcm %s: ok %s\n", tag, name);
		return true;
	}
	failed++;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("softhca_kcm %s: # %pV\n", tag, &vaf);
	va_end(args);
	pr_info("softhca_kcm %s: FAIL %s\n", tag, name);
	return false;
}

static int kcm_handler(struct rdma_cm_id *id, struct rdma_cm_event *e)
{
	struct kcm_ep *ep = id->context;
	struct kcm_event *k;

	spin_lock(&ep->lock);
	if (ep->head - ep->tail == KCM_EVENTS) {
		spin_unlock(&ep->lock);
		pr_info("softhca_kcm %s: # %s: event queue full, %s dropped\n",
			tag, ep->name, rdma_event_msg(e->event));
		/* Non-zero destroys a new connection's id: nothing leaks. */
		return e->event == RDMA_CM_EVENT_CONNECT_REQUEST;
	}
	k = &ep->ev[ep->head % KCM_EVENTS];
	memset(k, 0, sizeof(*k));
	k->event = e->event;
	k->status = e->status;
	k->id = id;
	if (e->param.conn.private_data) {
		k->pdata_len = min_t(u8, e->param.conn.private_data_len,
				     KCM_PDATA);
		memcpy(k->pdata, e->param.conn.private_data, k->pdata_len);
		k->qp_num = e->param.conn.qp_num;
		k->responder_resources = e->param.conn.responder_resources;
		k->initiator_depth = e->param.conn.initiator_depth;
	}
	ep->head++;
	spin_unlock(&ep->lock);
	wake_up(&ep->wq);
	return 0;
}

static bool kcm_take(struct kcm_ep *ep, struct kcm_event *out)
{
	bool got = false;

	spin_lock(&ep->lock);
	if (ep->head != ep->tail) {
		*out = ep->ev[ep->tail++ % KCM_EVENTS];
		got = true;
	}
	spin_unlock(&ep->lock);
	return got;
}

/*
 * The next event of @ep is @want with @status, within KCM_WAIT. A
 * connection request taken instead is refused (its id destroyed).
 */
static bool kcm_expect(struct kcm_ep *ep, enum rdma_cm_event_type want,
		       int status, struct kcm_event *out, const char *name)
{
	if (!wait_event_timeout(ep->wq, kcm_take(ep, out), KCM_WAIT))
		return kcm_check(false, name, "%s: %s never came (%d s)",
				 ep->name, rdma_event_msg(want),
				 KCM_WAIT / HZ);
	if (out->event != want && out->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		rdma_destroy_id(out->id);
	return kcm_check(out->event == want && out->status == status, name,
			 "%s: %s status %d, not %s status %d", ep->name,
			 rdma_event_msg(out->event), out->status,
			 rdma_event_msg(want), status);
}

/* The first @len bytes of @e's private data are @want, the rest zero. */
static bool kcm_pdata_is(const struct kcm_event *e, const void *want,
			 size_t len, const char *name)
{
	return kcm_check(e->pdata_len >= len && !memcmp(e->pdata, want, len) &&
			 !memchr_inv(e->pdata + len, 0, e->pdata_len - len),
			 name, "%u bytes: %*ph", e->pdata_len,
			 min_t(int, e->pdata_len, 64), e->pdata);
}

static void kcm_ep_init(struct kcm_ep *ep, const char *name)
{
	memset(ep, 0, sizeof(*ep));
	ep->name = name;
	spin_lock_init(&ep->lock);
	init_waitqueue_head(&ep->wq);
}

static int kcm_create_id(struct kcm_ep *ep)
{
	struct rdma_cm_id *id;

	id = rdma_create_id(&init_net, kcm_handler, ep, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ep->id = id;
	return 0;
}

/* The id's device is the one named @want. */
static bool kcm_on_dev(struct kcm_ep *ep, const char *want, const char *name)
{
	const char *got = ep->id->device ? dev_name(&ep->id->device->dev) : "";

	return kcm_check(!strcmp(got, want), name, "on '%s'", got);
}

static void kcm_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kcm_wr *w = container_of(wc->wr_cqe, struct kcm_wr, cqe);

	w->wc = *wc;
	complete(&w->done);
}

static struct kcm_wr *kcm_wr_new(struct kcm_ep *ep)
{
	struct kcm_wr *w;

	if (WARN_ON(ep->nwr >= KCM_WRS))
		return NULL;
	w = &ep->wr[ep->nwr++];
	w->cqe.done = kcm_done;
	init_completion(&w->done);
	return w;
}

/*
 * A PD, a CQ (@poll), a mapped buffer and an RC QP on the device the
 * cm_id was bound to (rdma_create_qp()).
 */
static int kcm_ep_open(struct kcm_ep *ep, enum ib_poll_context poll)
{
	struct ib_qp_init_attr ia = {};

	ep->ibdev = ep->id->device;
	ep->pd = ib_alloc_pd(ep->ibdev, 0);
	if (IS_ERR(ep->pd))
		return PTR_ERR(ep->pd);
	ep->cq = ib_alloc_cq(ep->ibdev, ep, 32, 0, poll);
	if (IS_ERR(ep->cq))
		return PTR_ERR(ep->cq);
	ep->buf = kzalloc(KCM_BUF, GFP_KERNEL);
	if (!ep->buf)
		return -ENOMEM;
	ep->dma = ib_dma_map_single(ep->ibdev, ep->buf, KCM_BUF,
				    DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ep->ibdev, ep->dma)) {
		kfree(ep->buf);
		ep->buf = NULL;
		return -ENOMEM;
	}
	ia.send_cq = ep->cq;
	ia.recv_cq = ep->cq;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_type = IB_SIGNAL_REQ_WR;
	ia.qp_type = IB_QPT_RC;
	return rdma_create_qp(ep->id, ep->pd, &ia);
}

/* Everything of @ep, in the order ib_core needs; then queued requests. */
static void kcm_ep_close(struct kcm_ep *ep)
{
	struct kcm_event e;

	if (ep->id && ep->id->qp)
		rdma_destroy_qp(ep->id);
	if (!IS_ERR_OR_NULL(ep->cq))
		ib_free_cq(ep->cq);
	if (ep->mr)
		kcm_check(!ib_dereg_mr(ep->mr), "server: ib_dereg_mr", "failed");
	if (ep->uaddr)
		vm_munmap(ep->uaddr, KCM_UMEM);
	if (ep->buf) {
		ib_dma_unmap_single(ep->ibdev, ep->dma, KCM_BUF,
				    DMA_BIDIRECTIONAL);
		kfree(ep->buf);
	}
	if (!IS_ERR_OR_NULL(ep->pd))
		ib_dealloc_pd(ep->pd);
	if (ep->id)
		rdma_destroy_id(ep->id);
	/* No more events now: refuse requests nobody took. */
	while (kcm_take(ep, &e))
		if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST)
			rdma_destroy_id(e.id);
	ep->id = NULL;
}

static int kcm_post_recv(struct kcm_ep *ep, u32 off, u32 len,
			 struct kcm_wr **wp)
{
	struct ib_sge sge = { .addr = ep->dma + off, .length = len,
			      .lkey = ep->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .sg_list = &sge, .num_sge = 1 };
	struct kcm_wr *w = kcm_wr_new(ep);

	if (!w)
		return -ENOMEM;
	wr.wr_cqe = &w->cqe;
	*wp = w;
	return ib_post_recv(ep->id->qp, &wr, NULL);
}

/* @len bytes at @off of the buffer, as @op (to @raddr/@rkey for RDMA). */
static int kcm_post_send(struct kcm_ep *ep, enum ib_wr_opcode op, u32 off,
			 u32 len, u64 raddr, u32 rkey, struct kcm_wr **wp)
{
	struct ib_sge sge = { .addr = ep->dma + off, .length = len,
			      .lkey = ep->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {};
	struct kcm_wr *w = kcm_wr_new(ep);

	if (!w)
		return -ENOMEM;
	wr.wr.wr_cqe = &w->cqe;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = op;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.ex.imm_data = cpu_to_be32(KCM_IMM);
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	*wp = w;
	return ib_post_send(ep->id->qp, &wr.wr, NULL);
}

/*
 * @w completed on @ep's QP as @op: status, opcode, qp, byte_len (@len;
 * U32_MAX: not compared, as for a WRITE's requester), wc_flags (@flags),
 * and for receives the immediate value and the sender's QPN (@src_qp).
 */
static bool kcm_wc_is(struct kcm_ep *ep, struct kcm_wr *w,
		      enum ib_wc_opcode op, u32 len, int flags, u32 src_qp,
		      const char *name)
{
	const struct ib_wc *wc = &w->wc;
	bool recv = op & IB_WC_RECV;
	bool imm = recv && (flags & IB_WC_WITH_IMM);

	if (!wait_for_completion_timeout(&w->done, KCM_WAIT))
		return kcm_check(false, name, "%s: no completion in %d s",
				 ep->name, KCM_WAIT / HZ);
	return kcm_check(wc->status == IB_WC_SUCCESS && wc->opcode == op &&
			 wc->qp == ep->id->qp &&
			 (len == U32_MAX || wc->byte_len == len) &&
			 (wc->wc_flags & ~(rxe ? KCM_RXE_WC_FLAGS : 0)) == flags &&
			 (!imm || wc->ex.imm_data == cpu_to_be32(KCM_IMM)) &&
			 (!recv || rxe || wc->src_qp == src_qp),
			 name, "status %d opcode %d qp %s byte_len %u wc_flags %#x imm %#x src_qp %u",
			 wc->status, wc->opcode,
			 wc->qp == ep->id->qp ? "ok" : "other", wc->byte_len,
			 wc->wc_flags, be32_to_cpu(wc->ex.imm_data),
			 wc->src_qp);
}

static void kcm_fill(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = seed + i * 7;
}

static bool kcm_is_filled(const u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (u8)(seed + i * 7))
			return false;
	return true;
}

/* The listener: bound to saddr:port on sdev, listening. */
static bool kcm_listen_start(void)
{
	struct sockaddr *sa = (struct sockaddr *)&kcm_saddr;
	int err;

	kcm_ep_init(&kcm_listen, "listener");
	err = kcm_create_id(&kcm_listen);
	if (!kcm_check(!err, "listener: rdma_create_id(RDMA_PS_TCP)", "%d", err))
		return false;
	err = rdma_bind_addr(kcm_listen.id, sa);
	if (!kcm_check(!err, "listener: rdma_bind_addr", "%pISpc: %d", sa, err) ||
	    !kcm_on_dev(&kcm_listen, sdev, "listener: bound to the device of saddr"))
		return false;
	err = rdma_listen(kcm_listen.id, 4);
	return kcm_check(!err, "listener: rdma_listen", "%d", err);
}

/*
 * A client cm_id from caddr to saddr:@dport: address and route
 * resolved, its PD, CQ and QP on the device of caddr.
 */
static bool kcm_client_open(u16 dport, const char *what)
{
	struct sockaddr_in dst = kcm_saddr;
	struct kcm_event e;
	char name[96];
	int err;

	kcm_ep_init(&kcm_cli, "client");
	dst.sin_port = htons(dport);
	snprintf(name, sizeof(name), "%s: client rdma_create_id", what);
	err = kcm_create_id(&kcm_cli);
	if (!kcm_check(!err, name, "%d", err))
		return false;
	snprintf(name, sizeof(name), "%s: client ADDR_RESOLVED", what);
	err = rdma_resolve_addr(kcm_cli.id,
				*caddr ? (struct sockaddr *)&kcm_caddr : NULL,
				(struct sockaddr *)&dst, KCM_TIMEOUT_MS);
	if (err)
		return kcm_check(false, name, "rdma_resolve_addr: %d", err);
	if (!kcm_expect(&kcm_cli, RDMA_CM_EVENT_ADDR_RESOLVED, 0, &e, name))
		return false;
	snprintf(name, sizeof(name), "%s: client on the device of caddr", what);
	if (!kcm_on_dev(&kcm_cli, cdev, name))
		return false;
	snprintf(name, sizeof(name), "%s: client ROUTE_RESOLVED", what);
	err = rdma_resolve_route(kcm_cli.id, KCM_TIMEOUT_MS);
	if (err)
		return kcm_check(false, name, "rdma_resolve_route: %d", err);
	if (!kcm_expect(&kcm_cli, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, &e, name))
		return false;
	snprintf(name, sizeof(name),
		 "%s: client PD, CQ (ib_alloc_cq) and rdma_create_qp", what);
	err = kcm_ep_open(&kcm_cli, IB_POLL_SOFTIRQ);
	return kcm_check(!err && kcm_cli.id->qp &&
			 kcm_cli.id->qp->qp_type == IB_QPT_RC, name, "%d", err);
}

static bool kcm_connect(const char *what)
{
	struct rdma_conn_param p = {
		.private_data = kcm_req_data,
		.private_data_len = sizeof(kcm_req_data),
		.responder_resources = KCM_RD_ATOM,
		.initiator_depth = KCM_RD_ATOM,
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	char name[96];
	int err;

	snprintf(name, sizeof(name), "%s: rdma_connect with private data", what);
	err = rdma_connect(kcm_cli.id, &p);
	return kcm_check(!err, name, "%d", err);
}

/*
 * The server side of a request: the listener's CONNECT_REQUEST carries
 * the client's private data, its QPN and RDMA depths, on a new cm_id
 * whose addresses are the connection's. True if the request came (the
 * caller then owns its id), whatever the checks of it found.
 */
static bool kcm_take_request(const char *what, struct kcm_event *e)
{
	const struct sockaddr_in *csrc = (void *)&kcm_cli.id->route.addr.src_addr;
	const struct sockaddr_in *src, *dst;
	char name[96];

	snprintf(name, sizeof(name), "%s: server CONNECT_REQUEST", what);
	if (!kcm_expect(&kcm_listen, RDMA_CM_EVENT_CONNECT_REQUEST, 0, e, name))
		return false;
	snprintf(name, sizeof(name), "%s: the request's private data arrived",
		 what);
	kcm_pdata_is(e, kcm_req_data, sizeof(kcm_req_data), name);
	snprintf(name, sizeof(name),
		 "%s: the request names the client's QPN and RDMA depths", what);
	kcm_check(e->qp_num == kcm_cli.id->qp->qp_num &&
		  e->responder_resources == KCM_RD_ATOM &&
		  e->initiator_depth == KCM_RD_ATOM, name,
		  "qp_num %u (client's %u) responder_resources %u initiator_depth %u",
		  e->qp_num, kcm_cli.id->qp->qp_num, e->responder_resources,
		  e->initiator_depth);
	src = (void *)&e->id->route.addr.src_addr;
	dst = (void *)&e->id->route.addr.dst_addr;
	snprintf(name, sizeof(name),
		 "%s: a new cm_id from the client's address to saddr:port", what);
	kcm_check(e->id != kcm_listen.id && src->sin_family == AF_INET &&
		  src->sin_addr.s_addr == kcm_saddr.sin_addr.s_addr &&
		  src->sin_port == kcm_saddr.sin_port &&
		  dst->sin_addr.s_addr == csrc->sin_addr.s_addr &&
		  dst->sin_port == csrc->sin_port,
		  name, "%pISpc -> %pISpc (client %pISpc)", src, dst, csrc);
	return true;
}

/*
 * The server's MR: memory of the insmod process (ib_reg_user_mr(): the
 * device has no fast registration and no DMA MR), KCM_MR_FILL with a
 * pattern at KCM_MR_READ_OFF.
 */
static int kcm_srv_mr(struct kcm_ep *ep)
{
	u8 *tmp;
	int err = 0;

	ep->uaddr = vm_mmap(NULL, 0, KCM_UMEM, PROT_READ | PROT_WRITE,
			    MAP_ANONYMOUS | MAP_PRIVATE, 0);
	if (IS_ERR_VALUE(ep->uaddr)) {
		ep->uaddr = 0;
		return -ENOMEM;
	}
	tmp = kmalloc(KCM_UMEM, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	memset(tmp, KCM_MR_FILL, KCM_UMEM);
	kcm_fill(tmp + KCM_MR_READ_OFF, KCM_READ_LEN, 77);
	if (copy_to_user((void __user *)ep->uaddr, tmp, KCM_UMEM))
		err = -EFAULT;
	kfree(tmp);
	if (err)
		return err;
	ep->mr = ib_reg_user_mr(ep->pd, ep->uaddr, KCM_UMEM, ep->uaddr,
				IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_REMOTE_READ);
	if (IS_ERR(ep->mr)) {
		err = PTR_ERR(ep->mr);
		ep->mr = NULL;
	}
	return err;
}

/*
 * The server's endpoint on the request's cm_id: PD, CQ, QP, its MR and
 * two receives (the client's SEND, one to flush at the end); then
 * rdma_accept() with private data, under the id's handler lock.
 */
static bool kcm_accept(struct kcm_event *req, struct kcm_wr **recv,
		       struct kcm_wr **spare)
{
	struct rdma_conn_param p = {
		.private_data = kcm_rep_data,
		.private_data_len = sizeof(kcm_rep_data),
		.responder_resources = req->initiator_depth,
		.initiator_depth = req->responder_resources,
		.rnr_retry_count = 7,
	};
	int err;

	kcm_ep_init(&kcm_srv, "server");
	kcm_srv.id = req->id;
	err = kcm_ep_open(&kcm_srv, IB_POLL_WORKQUEUE);
	if (!err)
		err = kcm_srv_mr(&kcm_srv);
	if (!err) {
		memset(kcm_srv.buf, 0xee, KCM_BUF);
		err = kcm_post_recv(&kcm_srv, KCM_RECV_OFF, KCM_RECV_LEN, recv);
	}
	if (!err)
		err = kcm_post_recv(&kcm_srv, KCM_SPARE_OFF, 64, spare);
	if (!kcm_check(!err, "connect: server PD, CQ, QP, MR and receives",
		       "%d", err))
		return false;
	/* From now on the new id's events are the server endpoint's. */
	rdma_lock_handler(kcm_srv.id);
	kcm_srv.id->context = &kcm_srv;
	err = rdma_accept(kcm_srv.id, &p);
	rdma_unlock_handler(kcm_srv.id);
	return kcm_check(!err, "connect: rdma_accept with private data", "%d",
			 err);
}

/* @ep's QP is in RTS, to @peer_qpn, with KCM_RD_ATOM reads both ways. */
static void kcm_qp_is_connected(struct kcm_ep *ep, u32 peer_qpn,
				const char *name)
{
	struct ib_qp_init_attr ia;
	struct ib_qp_attr a = {};
	int err;

	err = ib_query_qp(ep->id->qp, &a, IB_QP_STATE | IB_QP_DEST_QPN |
			  IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC,
			  &ia);
	kcm_check(!err && a.qp_state == IB_QPS_RTS &&
		  a.dest_qp_num == peer_qpn &&
		  a.max_rd_atomic == KCM_RD_ATOM &&
		  a.max_dest_rd_atomic == KCM_RD_ATOM, name,
		  "query %d: state %d dest_qp_num %u (want %u) max_rd_atomic %u max_dest_rd_atomic %u",
		  err, a.qp_state, a.dest_qp_num, peer_qpn, a.max_rd_atomic,
		  a.max_dest_rd_atomic);
}

/* Both sides ESTABLISHED; the client got the accept's private data. */
static bool kcm_established(void)
{
	struct kcm_event e;
	bool ok;

	ok = kcm_expect(&kcm_srv, RDMA_CM_EVENT_ESTABLISHED, 0, &e,
			"connect: server ESTABLISHED");
	if (!kcm_expect(&kcm_cli, RDMA_CM_EVENT_ESTABLISHED, 0, &e,
			"connect: client ESTABLISHED") || !ok)
		return false;
	kcm_pdata_is(&e, kcm_rep_data, sizeof(kcm_rep_data),
		     "connect: the accept's private data arrived");
	kcm_check(e.qp_num == kcm_srv.id->qp->qp_num,
		  "connect: the accept names the server's QPN", "%u, not %u",
		  e.qp_num, kcm_srv.id->qp->qp_num);
	kcm_qp_is_connected(&kcm_cli, kcm_srv.id->qp->qp_num,
			    "connect: client QP in RTS to the server's QP");
	kcm_qp_is_connected(&kcm_srv, kcm_cli.id->qp->qp_num,
			    "connect: server QP in RTS to the client's QP");
	return true;
}

/* A SEND from the client into the server's receive @recv. */
static void kcm_send_to_server(struct kcm_wr *recv)
{
	u8 *got = kcm_srv.buf + KCM_RECV_OFF;
	struct kcm_wr *s;
	int err;

	kcm_fill(kcm_cli.buf + KCM_MSG_OFF, KCM_SEND_LEN, 1);
	err = kcm_post_send(&kcm_cli, IB_WR_SEND, KCM_MSG_OFF, KCM_SEND_LEN,
			    0, 0, &s);
	if (!kcm_check(!err, "data: client post SEND", "%d", err))
		return;
	kcm_wc_is(&kcm_cli, s, IB_WC_SEND, U32_MAX, 0, 0,
		  "data: client SEND completion");
	if (!kcm_wc_is(&kcm_srv, recv, IB_WC_RECV, KCM_SEND_LEN, 0,
		       kcm_cli.id->qp->qp_num, "data: server receive completion"))
		return;
	kcm_check(kcm_is_filled(got, KCM_SEND_LEN, 1) &&
		  got[KCM_SEND_LEN] == 0xee, "data: the SEND's bytes at the server",
		  "%*ph", 32, got);
}

/*
 * The server advertises its MR (address, rkey, length) in a SEND with
 * immediate into the client's receive @recv; the client's copy of it.
 */
static bool kcm_advertise_mr(struct kcm_wr *recv, struct kcm_mr_desc *d)
{
	struct kcm_mr_desc *out = (void *)(kcm_srv.buf + KCM_MSG_OFF);
	struct kcm_wr *s;
	int err;

	out->addr = cpu_to_be64(kcm_srv.uaddr);
	out->rkey = cpu_to_be32(kcm_srv.mr->rkey);
	out->len = cpu_to_be32(KCM_UMEM);
	err = kcm_post_send(&kcm_srv, IB_WR_SEND_WITH_IMM, KCM_MSG_OFF,
			    sizeof(*out), 0, 0, &s);
	if (!kcm_check(!err, "data: server post SEND_WITH_IMM", "%d", err))
		return false;
	kcm_wc_is(&kcm_srv, s, IB_WC_SEND, U32_MAX, IB_WC_WITH_IMM, 0,
		  "data: server SEND_WITH_IMM completion");
	if (!kcm_wc_is(&kcm_cli, recv, IB_WC_RECV, sizeof(*out), IB_WC_WITH_IMM,
		       kcm_srv.id->qp->qp_num,
		       "data: client receive completion with immediate"))
		return false;
	memcpy(d, kcm_cli.buf + KCM_RECV_OFF, sizeof(*d));
	return kcm_check(be64_to_cpu(d->addr) == kcm_srv.uaddr &&
			 be32_to_cpu(d->rkey) == kcm_srv.mr->rkey &&
			 be32_to_cpu(d->len) == KCM_UMEM,
			 "data: the server's MR address, rkey and length at the client",
			 "%*ph", (int)sizeof(*d), d);
}

/* An RDMA WRITE from the client into the server's MR. */
static void kcm_write(const struct kcm_mr_desc *d)
{
	u8 *tmp = kmalloc(KCM_UMEM, GFP_KERNEL);
	struct kcm_wr *s;
	int err;
	u8 *w;

	if (!tmp) {
		kcm_check(false, "data: the WRITE's bytes in the server's MR, none around",
			  "no memory");
		return;
	}
	w = tmp + KCM_MR_WRITE_OFF;
	kcm_fill(kcm_cli.buf + KCM_MSG_OFF, KCM_WRITE_LEN, 2);
	err = kcm_post_send(&kcm_cli, IB_WR_RDMA_WRITE, KCM_MSG_OFF,
			    KCM_WRITE_LEN, be64_to_cpu(d->addr) + KCM_MR_WRITE_OFF,
			    be32_to_cpu(d->rkey), &s);
	if (kcm_check(!err, "data: client post RDMA WRITE", "%d", err) &&
	    kcm_wc_is(&kcm_cli, s, IB_WC_RDMA_WRITE, U32_MAX, 0, 0,
		      "data: client RDMA WRITE completion")) {
		err = copy_from_user(tmp, (void __user *)kcm_srv.uaddr,
				     KCM_UMEM);
		kcm_check(!err && kcm_is_filled(w, KCM_WRITE_LEN, 2) &&
			  w[-1] == KCM_MR_FILL && w[KCM_WRITE_LEN] == KCM_MR_FILL,
			  "data: the WRITE's bytes in the server's MR, none around",
			  "%d: %*ph", err, 32, w - 1);
	}
	kfree(tmp);
}

/* An RDMA READ by the client from the server's MR. */
static void kcm_read(const struct kcm_mr_desc *d)
{
	u8 *got = kcm_cli.buf + KCM_READ_OFF;
	struct kcm_wr *s;
	int err;

	memset(got, 0, KCM_READ_LEN + 1);
	err = kcm_post_send(&kcm_cli, IB_WR_RDMA_READ, KCM_READ_OFF,
			    KCM_READ_LEN, be64_to_cpu(d->addr) + KCM_MR_READ_OFF,
			    be32_to_cpu(d->rkey), &s);
	if (!kcm_check(!err, "data: client post RDMA READ", "%d", err) ||
	    !kcm_wc_is(&kcm_cli, s, IB_WC_RDMA_READ, KCM_READ_LEN, 0, 0,
		       "data: client RDMA READ completion"))
		return;
	kcm_check(kcm_is_filled(got, KCM_READ_LEN, 77) && !got[KCM_READ_LEN],
		  "data: the READ's bytes from the server's MR", "%*ph", 32, got);
}

/* @w, a receive left posted, flushed when its QP went to ERR. */
static void kcm_flushed(struct kcm_ep *ep, struct kcm_wr *w, const char *name)
{
	kcm_check(completion_done(&w->done) &&
		  w->wc.status == IB_WC_WR_FLUSH_ERR, name, "%s: status %d",
		  completion_done(&w->done) ? "done" : "pending",
		  w->wc.status);
}

/*
 * The client disconnects: the server sees DISCONNECTED and disconnects
 * too (its DREP), then the client sees DISCONNECTED; the QPs are in ERR,
 * ib_drain_qp() returns, and the receives left posted flushed.
 */
static void kcm_disconnect(struct kcm_wr *cspare, struct kcm_wr *sspare)
{
	struct kcm_event e;
	int err;

	err = rdma_disconnect(kcm_cli.id);
	if (!kcm_check(!err, "disconnect: client rdma_disconnect", "%d", err))
		return;
	kcm_expect(&kcm_srv, RDMA_CM_EVENT_DISCONNECTED, 0, &e,
		   "disconnect: server DISCONNECTED");
	err = rdma_disconnect(kcm_srv.id);
	kcm_check(!err, "disconnect: server rdma_disconnect", "%d", err);
	kcm_expect(&kcm_cli, RDMA_CM_EVENT_DISCONNECTED, 0, &e,
		   "disconnect: client DISCONNECTED");
	ib_drain_qp(kcm_cli.id->qp);
	ib_drain_qp(kcm_srv.id->qp);
	kcm_flushed(&kcm_cli, cspare, "disconnect: the client's last receive flushed");
	kcm_flushed(&kcm_srv, sspare, "disconnect: the server's last receive flushed");
}

/* Connect, move data both ways, disconnect; destroy both endpoints. */
static void kcm_connection(void)
{
	struct kcm_wr *crecv, *cspare, *srecv = NULL, *sspare = NULL;
	struct kcm_mr_desc d;
	struct kcm_event req;
	int err;

	kcm_ep_init(&kcm_srv, "server");
	if (!kcm_client_open(port, "connect"))
		goto out;
	memset(kcm_cli.buf, 0xee, KCM_BUF);
	/* Receives first: the peer may send as soon as it is connected. */
	err = kcm_post_recv(&kcm_cli, KCM_RECV_OFF, KCM_RECV_LEN, &crecv);
	if (!err)
		err = kcm_post_recv(&kcm_cli, KCM_SPARE_OFF, 64, &cspare);
	if (!kcm_check(!err, "connect: client receives posted", "%d", err) ||
	    !kcm_connect("connect") || !kcm_take_request("connect", &req) ||
	    !kcm_accept(&req, &srecv, &sspare) || !kcm_established())
		goto out;
	kcm_send_to_server(srecv);
	if (kcm_advertise_mr(crecv, &d)) {
		kcm_write(&d);
		kcm_read(&d);
	}
	kcm_disconnect(cspare, sspare);
out:
	kcm_ep_close(&kcm_cli);
	kcm_ep_close(&kcm_srv);
}

/*
 * The server rejects with private data: the client gets REJECTED with
 * the consumer's reason and that data.
 */
static void kcm_rejected(void)
{
	struct rdma_cm_event ev = {};
	struct kcm_event req, e;
	const void *data;
	u8 len = 0;
	int err;

	if (!kcm_client_open(port, "reject") || !kcm_connect("reject") ||
	    !kcm_take_request("reject", &req))
		goto out;
	rdma_lock_handler(req.id);
	err = rdma_reject(req.id, kcm_rej_data, sizeof(kcm_rej_data),
			  IB_CM_REJ_CONSUMER_DEFINED);
	rdma_unlock_handler(req.id);
	rdma_destroy_id(req.id);
	if (!kcm_check(!err, "reject: rdma_reject with private data", "%d", err) ||
	    !kcm_expect(&kcm_cli, RDMA_CM_EVENT_REJECTED,
			IB_CM_REJ_CONSUMER_DEFINED, &e,
			"reject: client REJECTED, consumer defined"))
		goto out;
	ev.event = e.event;
	ev.status = e.status;
	ev.param.conn.private_data = e.pdata;
	ev.param.conn.private_data_len = e.pdata_len;
	data = rdma_consumer_reject_data(kcm_cli.id, &ev, &len);
	kcm_check(data == e.pdata && len == e.pdata_len,
		  "reject: rdma_consumer_reject_data() gives the data",
		  "%s: %u bytes", rdma_reject_msg(kcm_cli.id, e.status), len);
	kcm_pdata_is(&e, kcm_rej_data, sizeof(kcm_rej_data),
		     "reject: the reject's private data arrived");
out:
	kcm_ep_close(&kcm_cli);
}

/* Nobody listens on port + 1: the peer's CM rejects the request. */
static void kcm_no_listener(void)
{
	struct kcm_event e;

	if (kcm_client_open(port + 1, "no listener") &&
	    kcm_connect("no listener"))
		kcm_expect(&kcm_cli, RDMA_CM_EVENT_REJECTED,
			   IB_CM_REJ_INVALID_SERVICE_ID, &e,
			   "no listener: client REJECTED, invalid service ID");
	kcm_ep_close(&kcm_cli);
}

static bool kcm_parse(const char *s, struct sockaddr_in *sin, u16 p)
{
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	return in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL);
}

static int __init kcm_init(void)
{
	if (!kcm_parse(saddr, &kcm_saddr, port) ||
	    (*caddr && !kcm_parse(caddr, &kcm_caddr, 0)) ||
	    port <= 0 || port >= 65535) {
		pr_info("softhca_kcm %s: # bad saddr, caddr or port\n", tag);
		return -EINVAL;
	}
	if (kcm_listen_start()) {
		kcm_connection();
		kcm_rejected();
	}
	kcm_ep_close(&kcm_listen);
	kcm_no_listener();
	done = 1;
	pr_info("softhca_kcm %s: # passed %d failed %d\n", tag, passed, failed);
	return 0;
}

static void __exit kcm_exit(void)
{
}

module_init(kcm_init);
module_exit(kcm_exit);
MODULE_DESCRIPTION("softhca kernel rdma_cm consumer test (VM only)");
MODULE_LICENSE("GPL");
