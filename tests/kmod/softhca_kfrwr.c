// SPDX-License-Identifier: GPL-2.0
/*
 * softhca_kfrwr: fast registration as kernel ULPs use it (NVMe-oF, NFS
 * over RDMA, iSER), run once at load (selftests/kfrwr.sh, in the VM
 * only). On device @dev, RC QPs A and B connected through the RoCE v2 GID
 * of 198.18.0.1, IB_POLL_DIRECT CQs polled here:
 * - ib_alloc_mr(IB_MR_TYPE_MEM_REG) within and past the caps, SG_GAPS
 *   refused; ib_map_mr_sg() of three pages that are not contiguous, with
 *   an offset into the first, and of more pages than the MR holds;
 * - IB_WR_REG_MR under a new key byte (IB_WC_REG_MR), then RDMA WRITE and
 *   READ through it across page boundaries, every byte checked, the bytes
 *   around untouched; the old key byte refused (REM_ACCESS_ERR);
 * - a REG_MR of a valid MR, of a foreign PD's MR: LOC_QP_OP_ERR;
 * - rights: a READ-only registration refuses WRITE, a WRITE past the
 *   registered length is refused;
 * - IB_WR_LOCAL_INV (IB_WC_LOCAL_INV): the rkey refused afterwards; a
 *   foreign or unknown key: LOC_QP_OP_ERR; registration again after it;
 * - IB_WR_SEND_WITH_INV: the receiver's WC has IB_WC_WITH_INVALIDATE and
 *   the rkey, which is refused afterwards; one naming a key that cannot
 *   be invalidated: REM_INV_REQ_ERR at the sender, an error at the
 *   receiver.
 * Results: read-only parameters passed, failed, done, as softhca_ktest.
 */
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "ktest_common.h"

static char *dev = "shca0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default shca0)");
static int passed;
module_param(passed, int, 0444);
static int failed;
module_param(failed, int, 0444);
static int done;
module_param(done, int, 0444);

#define KF_CHECK(cond, fmt, ...)						\
	KTEST_CHECK("softhca_kfrwr", passed, failed, cond, fmt, ##__VA_ARGS__)

#define KF_PAGES	3
#define KF_MAX_SG	8
#define KF_SRC		(8 * PAGE_SIZE)
#define KF_RD		(4 * PAGE_SIZE)	/* READ lands here in src */
#define KF_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

struct kf_ctx {
	struct ib_device *ibdev;
	struct ib_pd *pd, *pd2;
	struct ib_cq *cqa, *cqb;
	struct ib_qp *qpa, *qpb;
	union ib_gid gid;
	u8 sgid_index;
	u8 *src;			/* A's buffer (local DMA lkey) */
	u64 src_dma;
	struct page *pages[KF_PAGES];	/* B's memory behind the MR */
	struct scatterlist sg[KF_PAGES];
	int sg_nents;
	struct ib_mr *mr;
};

static int kf_connect(struct kf_ctx *c, struct ib_qp *qp, u32 dqpn)
{
	return ktest_rc_connect(qp, dqpn, &c->gid, c->sgid_index,
				IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ);
}

/* One WC of @cq within 5 s: 1, or 0 if none came. */
static int kf_poll(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + 5 * HZ;

	do {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 1;
		usleep_range(20, 50);
	} while (time_before(jiffies, end));
	return 0;
}

static void kf_drain(struct ib_cq *cq)
{
	struct ib_wc wc;

	msleep(20);
	while (ib_poll_cq(cq, 1, &wc) == 1)
		;
}

/* After an error: both QPs reconnected, both CQs empty. */
static void kf_recover(struct kf_ctx *c)
{
	kf_drain(c->cqa);
	kf_drain(c->cqb);
	KF_CHECK(!kf_connect(c, c->qpa, c->qpb->qp_num) &&
		 !kf_connect(c, c->qpb, c->qpa->qp_num), "reconnect");
}

/* Post @wr on @qp, signaled; the status of its completion or -1. */
static int kf_post(struct ib_qp *qp, struct ib_cq *cq, struct ib_send_wr *wr,
		   enum ib_wc_opcode op)
{
	struct ib_wc wc;

	wr->send_flags |= IB_SEND_SIGNALED;
	wr->wr_id = 0x1234;
	if (ib_post_send(qp, wr, NULL) || !kf_poll(cq, &wc))
		return -1;
	if (wc.status == IB_WC_SUCCESS && (wc.opcode != op ||
					   wc.wr_id != 0x1234))
		return -2;
	return wc.status;
}

/* A's RDMA @op of @len bytes at src + @loff with [raddr, rkey]. */
static int kf_rdma(struct kf_ctx *c, enum ib_wr_opcode op, u32 loff, u32 len,
		   u64 raddr, u32 rkey)
{
	struct ib_sge sge = { .addr = c->src_dma + loff, .length = len,
			      .lkey = c->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {
		.wr = { .opcode = op, .sg_list = &sge, .num_sge = 1 },
		.remote_addr = raddr, .rkey = rkey,
	};

	return kf_post(c->qpa, c->cqa, &wr.wr, op == IB_WR_RDMA_READ ?
		       IB_WC_RDMA_READ : IB_WC_RDMA_WRITE);
}

/* B registers @mr with @access under the next key byte: the status. */
static int kf_reg(struct kf_ctx *c, struct ib_qp *qp, struct ib_mr *mr,
		  int access)
{
	struct ib_reg_wr wr = {
		.wr = { .opcode = IB_WR_REG_MR },
		.mr = mr, .access = access,
	};

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	wr.key = mr->rkey;
	return kf_post(qp, qp == c->qpa ? c->cqa : c->cqb, &wr.wr,
		       IB_WC_REG_MR);
}

static int kf_local_inv(struct kf_ctx *c, u32 key)
{
	struct ib_send_wr wr = { .opcode = IB_WR_LOCAL_INV,
				 .ex.invalidate_rkey = key };

	return kf_post(c->qpb, c->cqb, &wr, IB_WC_LOCAL_INV);
}

/* Byte @off of the registered memory (sg layout: offset 256 into page 0). */
static u8 *kf_mem(struct kf_ctx *c, u32 off)
{
	off += c->sg[0].offset;
	return page_address(c->pages[off / PAGE_SIZE]) + off % PAGE_SIZE;
}

static void kf_fill(u8 *p, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(seed + i * 7);
}

static bool kf_mem_is(struct kf_ctx *c, u32 off, const u8 *want, u32 len)
{
	u32 i;

	for (i = 0; i < len; i++)
		if (*kf_mem(c, off + i) != want[i])
			return false;
	return true;
}

static void kf_alloc_and_map(struct kf_ctx *c)
{
	struct scatterlist big[KF_MAX_SG + 1];
	struct ib_mr *mr;
	int i, n;

	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG,
			 c->ibdev->attrs.max_fast_reg_page_list_len + 1);
	KF_CHECK(IS_ERR(mr), "past max_fast_reg_page_list_len");
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_SG_GAPS, KF_MAX_SG);
	KF_CHECK(IS_ERR(mr), "SG_GAPS is not offered");
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
	KF_CHECK(c->ibdev->attrs.device_cap_flags &
		 IB_DEVICE_MEM_MGT_EXTENSIONS, "MEM_MGT_EXTENSIONS");

	/* A page list longer than the MR: only what fits is mapped. */
	sg_init_table(big, KF_MAX_SG + 1);
	for (i = 0; i <= KF_MAX_SG; i++)
		sg_set_page(&big[i], c->pages[i % KF_PAGES], PAGE_SIZE, 0);
	n = ib_dma_map_sg(c->ibdev, big, KF_MAX_SG + 1, DMA_BIDIRECTIONAL);
	KF_CHECK(n == KF_MAX_SG + 1, "map_sg %d", n);
	n = ib_map_mr_sg(c->mr, big, KF_MAX_SG + 1, NULL, PAGE_SIZE);
	KF_CHECK(n == KF_MAX_SG, "a list past max mapped %d", n);
	ib_dma_unmap_sg(c->ibdev, big, KF_MAX_SG + 1, DMA_BIDIRECTIONAL);

	/* The real layout: 256 bytes into page 0, all of 1, 1000 of 2. */
	n = ib_map_mr_sg(c->mr, c->sg, c->sg_nents, NULL, PAGE_SIZE);
	KF_CHECK(n == KF_PAGES, "mapped %d", n);
	KF_CHECK(c->mr->length == 2 * PAGE_SIZE - 256 + 1000, "length %llu",
		 c->mr->length);
	KF_CHECK(c->mr->iova == sg_dma_address(&c->sg[0]), "iova");
}

static void kf_reg_and_rdma(struct kf_ctx *c)
{
	u32 old = c->mr->rkey, len = c->mr->length;
	u64 iova = c->mr->iova;
	int st;

	st = kf_reg(c, c->qpb, c->mr, KF_ACCESS);
	KF_CHECK(st == IB_WC_SUCCESS, "REG_MR status %d", st);
	KF_CHECK((c->mr->rkey & ~0xff) == (old & ~0xff) &&
		 c->mr->rkey != old, "key byte %#x -> %#x", old, c->mr->rkey);

	/* WRITE 8000 bytes at +200: over both page boundaries. */
	kf_fill(c->src, KF_SRC, 3);
	/* Guard bytes on each side of the WRITE's range. */
	*kf_mem(c, 199) = 0xee;
	*kf_mem(c, 8200) = 0xee;
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 8000, iova + 200, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "WRITE status %d", st);
	KF_CHECK(kf_mem_is(c, 200, c->src, 8000), "WRITE bytes");
	KF_CHECK(*kf_mem(c, 199) == 0xee && *kf_mem(c, 8200) == 0xee,
		 "WRITE touched bytes around its range");

	/* READ all of it back. */
	memset(c->src + KF_RD, 0, len);
	st = kf_rdma(c, IB_WR_RDMA_READ, KF_RD, len, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "READ status %d", st);
	KF_CHECK(!memcmp(c->src + KF_RD + 200, c->src, 8000) &&
		 c->src[KF_RD + 199] == 0xee && c->src[KF_RD + 8200] == 0xee,
		 "READ bytes");

	/* The old key byte, and one byte past the length. */
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 8, iova, old);
	KF_CHECK(st == IB_WC_REM_ACCESS_ERR, "old key: status %d", st);
	kf_recover(c);
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 8, iova + len - 7, c->mr->rkey);
	KF_CHECK(st == IB_WC_REM_ACCESS_ERR, "past the end: status %d", st);
	kf_recover(c);

	/* Registering a VALID MR is an error. */
	st = kf_reg(c, c->qpb, c->mr, KF_ACCESS);
	KF_CHECK(st == IB_WC_LOC_QP_OP_ERR, "REG of a valid MR: status %d", st);
	kf_recover(c);
}

static void kf_local_inv_and_rights(struct kf_ctx *c)
{
	struct ib_mr *foreign;
	u64 iova = c->mr->iova;
	u32 rkey;
	int st;

	/* The REG of a valid MR failed: the MR is still valid. */
	rkey = c->mr->rkey;
	ib_update_fast_reg_key(c->mr, (u8)(rkey - 1));
	st = kf_local_inv(c, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "LOCAL_INV status %d", st);
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 8, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_REM_ACCESS_ERR, "after LOCAL_INV: status %d", st);
	kf_recover(c);

	/* READ-only this time: WRITE refused, READ fine. */
	st = kf_reg(c, c->qpb, c->mr, IB_ACCESS_REMOTE_READ);
	KF_CHECK(st == IB_WC_SUCCESS, "REG (read only) status %d", st);
	st = kf_rdma(c, IB_WR_RDMA_READ, 0, 64, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "READ status %d", st);
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 64, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_REM_ACCESS_ERR, "WRITE, read only: status %d", st);
	kf_recover(c);

	/* Another PD's MR: neither invalidated nor registered by B. */
	foreign = ib_alloc_mr(c->pd2, IB_MR_TYPE_MEM_REG, KF_MAX_SG);
	KF_CHECK(!IS_ERR(foreign), "alloc_mr pd2");
	if (IS_ERR(foreign))
		return;
	st = kf_local_inv(c, foreign->rkey);
	KF_CHECK(st == IB_WC_LOC_QP_OP_ERR, "foreign LOCAL_INV: status %d", st);
	kf_recover(c);
	KF_CHECK(ib_map_mr_sg(foreign, c->sg, c->sg_nents, NULL,
			      PAGE_SIZE) == KF_PAGES, "map foreign");
	st = kf_reg(c, c->qpb, foreign, KF_ACCESS);
	KF_CHECK(st == IB_WC_LOC_QP_OP_ERR, "foreign REG_MR: status %d", st);
	kf_recover(c);
	st = kf_local_inv(c, 0x00fffe00);
	KF_CHECK(st == IB_WC_LOC_QP_OP_ERR, "unknown key: status %d", st);
	kf_recover(c);
	ib_dereg_mr(foreign);
}

/* A SENDs 100 bytes to B naming @key; B's receive completion in @rwc. */
static int kf_send_inv(struct kf_ctx *c, u32 key, struct ib_wc *rwc)
{
	struct ib_sge sge = { .addr = c->src_dma + 2 * PAGE_SIZE,
			      .length = 100, .lkey = c->pd->local_dma_lkey };
	struct ib_sge rsge = { .addr = c->src_dma + 3 * PAGE_SIZE,
			       .length = 256, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 77, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_send_wr wr = { .opcode = IB_WR_SEND_WITH_INV,
				 .sg_list = &sge, .num_sge = 1,
				 .ex.invalidate_rkey = key };
	int st;

	if (ib_post_recv(c->qpb, &rwr, NULL))
		return -1;
	st = kf_post(c->qpa, c->cqa, &wr, IB_WC_SEND);
	if (!kf_poll(c->cqb, rwc))
		return -1;
	return st;
}

static void kf_remote_inv(struct kf_ctx *c)
{
	u64 iova = c->mr->iova;
	struct ib_wc wc;
	int st;

	/* Still VALID (read only): invalidated, then registered again. */
	st = kf_local_inv(c, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "LOCAL_INV status %d", st);
	st = kf_reg(c, c->qpb, c->mr, KF_ACCESS);
	KF_CHECK(st == IB_WC_SUCCESS, "REG again: status %d", st);
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 64, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_SUCCESS, "WRITE after REG again: status %d", st);

	st = kf_send_inv(c, c->mr->rkey, &wc);
	KF_CHECK(st == IB_WC_SUCCESS, "SEND_WITH_INV status %d", st);
	KF_CHECK(wc.status == IB_WC_SUCCESS && wc.opcode == IB_WC_RECV &&
		 wc.byte_len == 100 && wc.wr_id == 77, "receive %d %d %u",
		 wc.status, wc.opcode, wc.byte_len);
	KF_CHECK((wc.wc_flags & IB_WC_WITH_INVALIDATE) &&
		 !(wc.wc_flags & IB_WC_WITH_IMM) &&
		 wc.ex.invalidate_rkey == c->mr->rkey, "flags %#x rkey %#x",
		 wc.wc_flags, wc.ex.invalidate_rkey);
	KF_CHECK(!memcmp(c->src + 3 * PAGE_SIZE, c->src + 2 * PAGE_SIZE, 100),
		 "SEND_WITH_INV bytes");
	st = kf_rdma(c, IB_WR_RDMA_WRITE, 0, 8, iova, c->mr->rkey);
	KF_CHECK(st == IB_WC_REM_ACCESS_ERR, "after remote inv: status %d", st);
	kf_recover(c);

	/* A key that is no fast-registration MKey of B's PD. */
	st = kf_send_inv(c, c->pd->local_dma_lkey, &wc);
	KF_CHECK(st == IB_WC_REM_INV_REQ_ERR, "bad SEND_WITH_INV: %d", st);
	KF_CHECK(wc.status != IB_WC_SUCCESS, "its receive: %d", wc.status);
	kf_recover(c);
}

static int kf_setup(struct kf_ctx *c)
{
	const struct ib_gid_attr *ga;
	int i;

	c->pd = ib_alloc_pd(c->ibdev, 0);
	c->pd2 = ib_alloc_pd(c->ibdev, 0);
	if (IS_ERR(c->pd) || IS_ERR(c->pd2))
		return -ENOMEM;
	c->cqa = ib_alloc_cq(c->ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	c->cqb = ib_alloc_cq(c->ibdev, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(c->cqa) || IS_ERR(c->cqb))
		return -ENOMEM;
	{
		struct ib_qp_init_attr ia = {
			.send_cq = c->cqa, .recv_cq = c->cqa,
			.cap = { .max_send_wr = 32, .max_recv_wr = 32,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.sq_sig_type = IB_SIGNAL_REQ_WR, .qp_type = IB_QPT_RC,
		};

		c->qpa = ib_create_qp(c->pd, &ia);
		ia.send_cq = c->cqb;
		ia.recv_cq = c->cqb;
		c->qpb = ib_create_qp(c->pd, &ia);
	}
	if (IS_ERR(c->qpa) || IS_ERR(c->qpb))
		return -ENOMEM;
	ipv6_addr_set_v4mapped(htonl(0xc6120001), (struct in6_addr *)c->gid.raw);
	ga = rdma_find_gid(c->ibdev, &c->gid, IB_GID_TYPE_ROCE_UDP_ENCAP, NULL);
	if (IS_ERR(ga))
		return PTR_ERR(ga);
	c->sgid_index = ga->index;
	rdma_put_gid_attr(ga);
	if (kf_connect(c, c->qpa, c->qpb->qp_num) ||
	    kf_connect(c, c->qpb, c->qpa->qp_num))
		return -EINVAL;

	c->src = kzalloc(KF_SRC, GFP_KERNEL);
	if (!c->src)
		return -ENOMEM;
	c->src_dma = ib_dma_map_single(c->ibdev, c->src, KF_SRC,
				       DMA_BIDIRECTIONAL);
	sg_init_table(c->sg, KF_PAGES);
	for (i = 0; i < KF_PAGES; i++) {
		/* Separate allocations: not contiguous in general. */
		c->pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!c->pages[i])
			return -ENOMEM;
	}
	sg_set_page(&c->sg[0], c->pages[0], PAGE_SIZE - 256, 256);
	sg_set_page(&c->sg[1], c->pages[1], PAGE_SIZE, 0);
	sg_set_page(&c->sg[2], c->pages[2], 1000, 0);
	c->sg_nents = ib_dma_map_sg(c->ibdev, c->sg, KF_PAGES,
				    DMA_BIDIRECTIONAL);
	if (c->sg_nents != KF_PAGES)
		return -EINVAL;
	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, KF_MAX_SG);
	if (IS_ERR(c->mr)) {
		c->mr = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void kf_teardown(struct kf_ctx *c)
{
	int i;

	if (c->mr)
		KF_CHECK(!ib_dereg_mr(c->mr), "dereg_mr");
	if (c->sg_nents)
		ib_dma_unmap_sg(c->ibdev, c->sg, KF_PAGES, DMA_BIDIRECTIONAL);
	for (i = 0; i < KF_PAGES; i++)
		if (c->pages[i])
			__free_page(c->pages[i]);
	if (c->src) {
		ib_dma_unmap_single(c->ibdev, c->src_dma, KF_SRC,
				    DMA_BIDIRECTIONAL);
		kfree(c->src);
	}
	if (!IS_ERR_OR_NULL(c->qpa))
		ib_destroy_qp(c->qpa);
	if (!IS_ERR_OR_NULL(c->qpb))
		ib_destroy_qp(c->qpb);
	if (!IS_ERR_OR_NULL(c->cqa))
		ib_free_cq(c->cqa);
	if (!IS_ERR_OR_NULL(c->cqb))
		ib_free_cq(c->cqb);
	if (!IS_ERR_OR_NULL(c->pd2))
		ib_dealloc_pd(c->pd2);
	if (!IS_ERR_OR_NULL(c->pd))
		ib_dealloc_pd(c->pd);
}

static int __init kf_init(void)
{
	struct kf_ctx c = {};
	int err;

	c.ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!c.ibdev) {
		pr_info("softhca_kfrwr: no device %s\n", dev);
		return -ENODEV;
	}
	err = kf_setup(&c);
	KF_CHECK(!err, "setup: %d", err);
	if (!err) {
		kf_alloc_and_map(&c);
		kf_reg_and_rdma(&c);
		kf_local_inv_and_rights(&c);
		kf_remote_inv(&c);
	}
	kf_teardown(&c);
	ib_device_put(c.ibdev);
	done = 1;
	pr_info("softhca_kfrwr: passed %d failed %d\n", passed, failed);
	return 0;
}

static void __exit kf_exit(void)
{
}

module_init(kf_init);
module_exit(kf_exit);
MODULE_DESCRIPTION("softhca fast registration test (VM only)");
MODULE_LICENSE("GPL");
