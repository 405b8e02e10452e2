/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: the "hardware" behind the verbs driver.
 *
 * The driver reaches the model only through this header: create/destroy an
 * HCA instance, execute a firmware command (hca_exec()) and find a UAR
 * page (hca_uar_pfn(), the "BAR"). The model knows nothing of ib_core;
 * every structure here is plain data, so a PCI backend with a command
 * mailbox could stand in for it.
 */
#ifndef HCA_HCA_H
#define HCA_HCA_H

#include <linux/bits.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <asm/page.h>
#include <linux/types.h>
#include <rdma/softhca-opcodes.h>
#include <rdma/softhca-queue.h>

struct net_device;
struct page;

/* Revision of the model: hw_ver, fw_ver major and model_rev of the ABI. */
#define HCA_MODEL_REV		1

/* Firmware command opcodes (numbered like their mlx5 counterparts). */
enum hca_cmd_op {
	HCA_CMD_QUERY_CAPS	= 0x100,
	HCA_CMD_ALLOC_PD	= 0x800,
	HCA_CMD_DEALLOC_PD	= 0x801,
	HCA_CMD_ALLOC_XRCD	= 0x80e,
	HCA_CMD_DEALLOC_XRCD	= 0x80f,
	HCA_CMD_ALLOC_UAR	= 0x802,
	HCA_CMD_FREE_UAR	= 0x803,
	HCA_CMD_ATTACH_TO_MCG	= 0x806,
	HCA_CMD_DETACH_FROM_MCG	= 0x807,
	HCA_CMD_CREATE_MKEY	= 0x200,
	HCA_CMD_QUERY_MKEY	= 0x201,
	HCA_CMD_DESTROY_MKEY	= 0x202,
	HCA_CMD_MODIFY_MKEY	= 0x203,
	HCA_CMD_CREATE_CQ	= 0x400,
	HCA_CMD_DESTROY_CQ	= 0x401,
	HCA_CMD_QUERY_CQ	= 0x402,
	HCA_CMD_MODIFY_CQ	= 0x403,
	HCA_CMD_CREATE_QP	= 0x500,
	HCA_CMD_DESTROY_QP	= 0x501,
	HCA_CMD_MODIFY_QP	= 0x502,
	HCA_CMD_QUERY_QP	= 0x50b,
	HCA_CMD_CREATE_SRQ	= 0x700,
	HCA_CMD_DESTROY_SRQ	= 0x701,
	HCA_CMD_QUERY_SRQ	= 0x702,
	HCA_CMD_ARM_RQ		= 0x703,	/* an SRQ's limit (mlx5's lwm) */
	HCA_CMD_SET_ROCE_ADDRESS = 0x782,
	/* Counters: see "Counters" below. */
	HCA_CMD_QUERY_HCA_COUNTERS = 0x76f,	/* mlx5's QUERY_VNIC_ENV */
	HCA_CMD_ALLOC_Q_COUNTER	= 0x771,
	HCA_CMD_DEALLOC_Q_COUNTER = 0x772,
	HCA_CMD_QUERY_Q_COUNTER	= 0x773,
	HCA_CMD_SET_QP_COUNTER	= 0x776,	/* mlx5: MODIFY_QP's counter_set_id */
};

/* hca_caps.flags */
#define HCA_CAP_RC		BIT_ULL(0)	/* RC transport service */
#define HCA_CAP_RNR_NAK_GEN	BIT_ULL(1)	/* responder sends RNR NAK */
#define HCA_CAP_ATOMIC		BIT_ULL(2)	/* CMP_SWP, FETCH_ADD (HCA-atomic) */
#define HCA_CAP_UD		BIT_ULL(3)	/* UD transport, address vectors, multicast */
#define HCA_CAP_XRC		BIT_ULL(4)	/* XRC domains, XRC SRQs, XRC QPs */
#define HCA_CAP_ODP		BIT_ULL(5)	/* on-demand paging MKeys */

/* QUERY_CAPS output: every limit of the HCA. No input. */
struct hca_caps {
	u32 model_rev;
	u32 fw_major;
	u32 fw_minor;
	u32 fw_subminor;
	u32 vendor_id;		/* 24 bits */
	u32 vendor_part_id;
	u32 hw_ver;
	u32 num_ports;

	/* port */
	u32 max_mtu;		/* bytes of payload per packet */
	u32 gid_tbl_len;
	u32 pkey_tbl_len;
	u32 max_msg_sz;
	u32 local_ca_ack_delay;	/* 4.096 us * 2^x */

	/* queue formats */
	u32 wqebb_size;		/* bytes per send WQE basic block */
	u32 max_wqe_size;	/* bytes of the largest send WQE */
	u32 cqe_size;
	u32 eqe_size;
	u32 bf_buf_size;	/* bytes of one BlueFlame buffer */

	/* objects */
	u32 max_qp;
	u32 max_sq_wqebbs;
	u32 max_rq_wqes;
	u32 max_send_sge;
	u32 max_recv_sge;
	u32 max_sge_rd;
	u32 max_inline_data;
	u32 max_qp_rd_atom;	/* responder resources per QP */
	u32 max_qp_init_rd_atom; /* initiator depth per QP */
	u32 max_cq;
	u32 max_cqe;
	u32 max_cq_mod_count;	/* MODIFY_CQ moderation: CQEs per event */
	u32 max_cq_mod_period;	/* ... and microseconds */
	u32 core_clock_khz;	/* the device clock (hca_read_clock()) */
	u32 max_mr;
	u32 max_fast_reg_pages;	/* MTT entries of one REG_MR */
	u32 max_pd;
	u32 max_xrcds;		/* XRC domains (ALLOC_XRCD) */
	u32 max_uar;
	u32 max_comp_eqs;	/* completion event queues (vectors) */
	u32 max_q_counters;	/* ALLOC_Q_COUNTER sets (set 0 aside) */
	u32 max_ah;		/* address handles (AVs live in WQEs) */
	u32 max_srq;
	u32 max_srq_wqes;	/* WQEs of one SRQ ring (one is never posted) */
	u32 max_srq_sge;
	u32 max_mcast_grp;	/* multicast groups one HCA attaches QPs to */
	u32 max_mcast_qp_attach; /* QPs of one HCA in one group */
	u32 max_total_mcast_qp_attach; /* attachments of one HCA */
	u64 max_mr_size;
	u64 page_size_cap;	/* bitmap of supported MKey page sizes */
	u64 timestamp_mask;	/* the bits of the device clock that count */
	u64 flags;		/* HCA_CAP_* */
};

struct hca_cmd_alloc_pd_out {
	u32 pdn;
};

struct hca_cmd_dealloc_pd_in {
	u32 pdn;
};

/*
 * ALLOC_XRCD / DEALLOC_XRCD: an XRC domain number (1..max_xrcds). An XRC
 * SRQ and an XRC target QP each name one; a target QP takes a message
 * only into an SRQ of its own domain. DEALLOC_XRCD refuses (-EBUSY) while
 * an SRQ or QP names it.
 */
struct hca_cmd_alloc_xrcd_out {
	u32 xrcdn;
};

struct hca_cmd_dealloc_xrcd_in {
	u32 xrcdn;
};

/*
 * ALLOC_UAR: a UAR page and its doorbell area (struct softhca_db_area,
 * HCA_DB_AREA_PAGES pages), both zeroed, both for mapping into the context
 * that owns them. The QPs and CQs created on this UAR ring through it.
 */
struct hca_cmd_alloc_uar_out {
	u32 uar_index;
};

/* CREATE_QP / CREATE_CQ .uar_index of kernel objects: the HCA's own area. */
#define HCA_UAR_KERNEL			U32_MAX
#define HCA_DB_AREA_PAGES		DIV_ROUND_UP(SOFTHCA_DB_AREA_SIZE, PAGE_SIZE)

struct hca_cmd_free_uar_in {
	u32 uar_index;
};

/* ---- data path commands (the RC data path) ---- */

/*
 * MKey access rights (CREATE_MKEY, QP access flags, engine checks): the
 * rights the opcode table names (SOFTHCA_ACCESS_*, softhca-opcodes.h).
 */
#define HCA_ACCESS_LOCAL_WRITE		BIT(0)
#define HCA_ACCESS_REMOTE_WRITE	BIT(1)
#define HCA_ACCESS_REMOTE_READ		BIT(2)
#define HCA_ACCESS_REMOTE_ATOMIC	BIT(3)
#define HCA_ACCESS_LOCAL_READ		BIT(4)	/* implied for every MKey */
#define HCA_ACCESS_MW_BIND		BIT(5)	/* windows may bind to it */
#define HCA_MKEY_FAST_REG		BIT(31)	/* CREATE_MKEY only */
#define HCA_MKEY_MW_TYPE1		BIT(30)	/* CREATE_MKEY only */
#define HCA_MKEY_MW_TYPE2		BIT(29)	/* CREATE_MKEY only */
#define HCA_MKEY_ODP			BIT(28)	/* CREATE_MKEY only, with rights */
static_assert(HCA_ACCESS_LOCAL_WRITE == SOFTHCA_ACCESS_LOCAL_WRITE);
static_assert(HCA_ACCESS_REMOTE_WRITE == SOFTHCA_ACCESS_REMOTE_WRITE);
static_assert(HCA_ACCESS_REMOTE_READ == SOFTHCA_ACCESS_REMOTE_READ);
static_assert(HCA_ACCESS_REMOTE_ATOMIC == SOFTHCA_ACCESS_REMOTE_ATOMIC);
static_assert(HCA_ACCESS_LOCAL_READ == SOFTHCA_ACCESS_LOCAL_READ);
static_assert(HCA_ACCESS_MW_BIND == SOFTHCA_ACCESS_MW_BIND);

/*
 * The reserved lkey (mlx5's reserved lkey): local access to kernel virtual
 * addresses (the direct map: what ib_dma_map_*() returns without a DMA
 * device), in any PD, from QPs created with HCA_QP_PRIVILEGED only, never as
 * an rkey. No MKey has this number (variant bytes are never 0).
 */
#define HCA_RESERVED_LKEY		0

/*
 * CREATE_MKEY: memory the driver pinned. The model keeps @pages (it does not
 * copy the array) until DESTROY_MKEY returns; DESTROY_MKEY waits for every
 * engine access in flight to end.
 */
struct hca_cmd_create_mkey_in {
	u32 pdn;
	/*
	 * HCA_ACCESS_*; or HCA_MKEY_FAST_REG: an MKey of @pdn for REG_MR
	 * WQEs of kernel QPs, FREE until one registers it, whose MTT is
	 * @pages of @npages entries (the most a REG_MR may fill); iova,
	 * length, offset and page_shift are 0. Or HCA_MKEY_MW_TYPE1/2: a
	 * memory window of @pdn, FREE until a BIND_MW WQE binds it; every
	 * other field 0. Or rights | HCA_MKEY_ODP: an on-demand paging MKey
	 * over [iova, iova + length) whose MTT (@pages NULL, @npages 0) starts
	 * empty: the engine raises a PAGE_FAULT event for a page it needs
	 * and does not find, the driver fills entries with ODP_MAP and
	 * resumes the QP (PAGE_FAULT_RESUME), and clears them with ODP_UNMAP
	 * (mkey_odp.c). Its length is not bounded by max_mr_size: iova 0 and
	 * the length of the user address space make an implicit ODP MKey.
	 */
	u32 access;
	u64 iova;			/* first byte the key covers */
	u64 length;
	u64 offset;			/* of iova in pages[0] */
	unsigned int page_shift;
	unsigned long npages;
	struct page **pages;
};

struct hca_cmd_create_mkey_out {
	u32 mkey;			/* index << 8 | variant: lkey and rkey */
};

struct hca_cmd_destroy_mkey_in {
	u32 mkey;
};

/*
 * MODIFY_MKEY: new rights and PD for an MKey of pinned memory (not a
 * fast-registration MKey, a window or an ODP MKey), in place, its key
 * kept: ibv_rereg_mr without a new translation, as mlx5's UMR does it.
 * The engine's next check of the key sees them. -EBUSY while windows are
 * bound to it, -EINVAL for any other kind of MKey or a key that is not.
 */
struct hca_cmd_modify_mkey_in {
	u32 mkey;
	u32 pdn;
	u32 access;			/* HCA_ACCESS_* */
};

/*
 * On-demand paging (mkey_odp.c). MTT entry k of an ODP MKey maps the page
 * of iova (iova - offset) + k * PAGE_SIZE. These two stand for mlx5's UMR
 * WQEs that update an MTT.
 *
 * ODP_MAP: entries @first.. of @mkey from @mtt[0, @n): a struct page
 * pointer, | HCA_ODP_MTT_WRITE when the engine may write the page, or 0 to
 * leave the entry as it is. At most HCA_ODP_MAP_MAX entries, inside the
 * MKey. The driver keeps each page until it unmaps it. Allocates without
 * reclaim (the driver calls it under the lock its MMU notifier takes):
 * -ENOMEM, and the entries stored so far stay.
 *
 * ODP_UNMAP: entries @first.. (@n of them, clipped to the MKey) are
 * cleared. Returns once no engine access that may use them is in flight;
 * allocates nothing (an MMU notifier calls it, maybe from reclaim).
 */
#define HCA_CMD_ODP_MAP			0x20a
#define HCA_CMD_ODP_UNMAP		0x20b
#define HCA_ODP_MAP_MAX			512
#define HCA_ODP_MTT_WRITE		1UL

struct hca_cmd_odp_map_in {
	u32 mkey;
	u32 n;
	u64 first;
	const unsigned long *mtt;
};

struct hca_cmd_odp_unmap_in {
	u32 mkey;
	u32 rsvd;
	u64 first;
	u64 n;
};

/*
 * PAGE_FAULT_RESUME (mlx5's number): the fault @qpn's requester
 * (@responder 0) or responder raised is handled. A requester retries its
 * WQE now; a responder takes the request when it comes again (it answered
 * RNR). @error: the pages could not be mapped, so the next access that
 * misses fails (a local protection error at a requester, a remote access
 * error at a responder).
 */
#define HCA_CMD_PAGE_FAULT_RESUME	0x204

struct hca_cmd_page_fault_resume_in {
	u32 qpn;
	u8 responder;
	u8 error;
	u16 rsvd;
};

struct hca_cmd_query_mkey_in {
	u32 mkey;
};

struct hca_cmd_query_mkey_out {
	u32 pdn;
	u32 access;			/* HCA_ACCESS_*, LOCAL_READ included */
	u64 iova;
	u64 length;
	u64 npages;			/* MTT entries */
	u32 page_shift;
	u32 rsvd;
};

/*
 * CREATE_CQ: the driver allocated the ring (1 << log_size CQEs, every one
 * INVALID with owner 0) and the doorbell record; both stay mapped to the
 * user and alive until DESTROY_CQ returns.
 */
struct hca_cmd_create_cq_in {
	struct softhca_cqe *ring;
	struct softhca_cq_dbr *dbr;
	u32 log_size;
	u32 eqn;
	u32 uar_index;			/* its doorbell area, or HCA_UAR_KERNEL */
	u32 flags;			/* HCA_CQ_TS* */
};

/* CREATE_CQ flags: the clocks its CQEs are stamped with (cqe.c). */
#define HCA_CQ_TS		BIT(0)	/* the device clock */
#define HCA_CQ_TS_WALLCLOCK	BIT(1)	/* CLOCK_REALTIME of the same instant */

/* The CQ's doorbell slot and the engine thread serving it (queue.h). */
struct hca_cmd_create_cq_out {
	u32 cqn;
	u32 db_slot;
	u32 db_thread;
};

struct hca_cmd_destroy_cq_in {
	u32 cqn;
};

struct hca_cmd_query_cq_in {
	u32 cqn;
};

/* What the CQ's arm word asks for (QUERY_CQ): nothing, or an event. */
enum hca_cq_arm {
	HCA_CQ_ARM_NONE,		/* not armed, or its arm already fired */
	HCA_CQ_ARM_NEXT,		/* an event for the next CQE */
	HCA_CQ_ARM_SOLICITED,		/* ... for the next solicited one */
};

struct hca_cmd_query_cq_out {
	u32 log_size;
	u32 eqn;
	u32 pi;				/* CQEs written, free-running */
	u32 ci;				/* the doorbell record's set_ci (24 bits) */
	u32 arm;			/* enum hca_cq_arm */
	u32 overrun;			/* in error: no more CQEs */
	u16 mod_count;			/* MODIFY_CQ moderation */
	u16 mod_period;
};

/*
 * MODIFY_CQ: as mlx5's, one command whose field_select says what changes.
 * MODERATION: an armed CQ's event waits until mod_count CQEs are pending
 * or mod_period microseconds have passed since the first of them was
 * written, whichever comes first; a bound of 0 is off, both 0 is none.
 * RESIZE: the driver allocated a new ring of 1 << log_size CQEs (every
 * one INVALID, owner 0) and a zeroed doorbell record. The CQEs not yet
 * consumed (from the old record's set_ci) move to the start of the new
 * ring, every index is rebased so that set_ci is 0, and the arm word
 * moves along; -EINVAL if they do not fit. The old ring is untouched
 * once the command returns (the driver frees it).
 */
enum hca_cq_modify_field {
	HCA_CQ_MODIFY_MODERATION	= 1U << 0,
	HCA_CQ_MODIFY_RESIZE		= 1U << 1,
};

struct hca_cmd_modify_cq_in {
	u32 cqn;
	u32 field_select;		/* enum hca_cq_modify_field */
	u16 mod_count;
	u16 mod_period;			/* microseconds */
	u32 log_size;
	struct softhca_cqe *ring;
	struct softhca_cq_dbr *dbr;
};

struct hca_cmd_modify_cq_out {
	u32 moved;			/* RESIZE: CQEs carried over */
};

enum hca_qp_state {
	HCA_QPS_RESET, HCA_QPS_INIT, HCA_QPS_RTR, HCA_QPS_RTS,
	HCA_QPS_SQD, HCA_QPS_SQE, HCA_QPS_ERR,
};

#define HCA_QP_SIGNATURE		BIT(0)	/* check WQE signatures */
#define HCA_QP_SQ_SIG_ALL		BIT(1)	/* every WQE signaled */
/* A kernel QP: the reserved lkey, privileged Q_Keys (SOFTHCA_QKEY_PRIVILEGED). */
#define HCA_QP_PRIVILEGED		BIT(2)
/* Datagram QPs: its own multicast sends are not delivered to it. */
#define HCA_QP_BLOCK_MCAST_LOOPBACK	BIT(3)

/*
 * QP service types (CREATE_QP .st, mlx5's QPC st numbers). What each one
 * does (its transport, the attributes MODIFY_QP takes, where an error
 * leaves it) is a row of the model's QP type table (qp_ctx.c).
 */
enum hca_qp_st {
	HCA_QP_ST_RC = 0x0,
	HCA_QP_ST_UC = 0x1,
	HCA_QP_ST_UD = 0x2,
	HCA_QP_ST_XRC_INI = 0x3,	/* XRC initiator: sends only */
	HCA_QP_ST_XRC_TGT = 0x4,	/* XRC target: receives into XRC SRQs */
	HCA_QP_ST_GSI = 0x8,		/* QP1: one per HCA, HCA_QP_PRIVILEGED */
	HCA_QP_ST_CNT,
};

struct hca_cmd_create_qp_in {
	u32 pdn;
	u32 send_cqn;
	u32 recv_cqn;
	u32 flags;			/* HCA_QP_* */
	void *sq_buf;
	u32 sq_wqebb_cnt;		/* power of two, >= 1 */
	u32 rq_wqe_cnt;			/* power of two, may be 0 */
	void *rq_buf;
	u32 rq_wqe_shift;		/* log2 of the RQ stride */
	/* The caps granted to the QP; the engine fails a send WQE beyond them. */
	u32 sq_max_wqebbs;		/* WQEBBs of its largest send WQE */
	u32 max_send_sge;
	u32 max_inline_data;
	struct softhca_qp_dbr *dbr;
	u32 uar_index;			/* its doorbell area, or HCA_UAR_KERNEL */
	u32 st;				/* enum hca_qp_st */
	u32 srqn;			/* its SRQ (rq_wqe_cnt 0), or 0: none */
	u32 xrcdn;			/* XRC_TGT: its XRC domain */
};

struct hca_cmd_create_qp_out {
	u32 qpn;
	u32 db_slot;			/* as CREATE_CQ's */
	u32 db_thread;
};

/*
 * CREATE_SRQ: the driver allocated the ring (wqe_cnt WQEs of 1 << wqe_shift
 * bytes, the free list linked in ring order: softhca_srq_init()) and the
 * doorbell record; both live until DESTROY_SRQ returns. SRQNs start at 1.
 * @limit armed as ARM_RQ would. The HCA takes WQEs from WQE 0 on.
 */
/* Largest SRQ stride: the engine's copy buffer (HCA_ENG_RWQE_MAX). */
#define HCA_SRQ_STRIDE_MAX		1024

struct hca_cmd_create_srq_in {
	u32 pdn;
	u32 flags;			/* HCA_QP_PRIVILEGED: a kernel SRQ */
	void *buf;
	u32 wqe_cnt;			/* power of two, 2..max_srq_wqes */
	u32 wqe_shift;			/* 5..log2(HCA_SRQ_STRIDE_MAX) */
	struct softhca_srq_dbr *dbr;
	u32 limit;			/* < wqe_cnt; 0: not armed */
	/*
	 * An XRC SRQ: its domain, and the CQ its receive completions go to
	 * (the target QP that took the message has none); 0: a basic SRQ.
	 */
	u32 xrcdn;
	u32 cqn;
};

struct hca_cmd_create_srq_out {
	u32 srqn;
};

/* DESTROY_SRQ: -EBUSY while a QP is attached to it. */
struct hca_cmd_srq_in {
	u32 srqn;
	u32 limit;			/* ARM_RQ only: < wqe_cnt, 0 disarms */
};

struct hca_cmd_query_srq_out {
	u32 limit;			/* armed limit, 0 once it fired */
	u32 wqe_cnt;
	u32 error;			/* a bad ring: takes nothing any more */
	u32 qps;			/* QPs attached */
	u16 posted;			/* the doorbell record's counter */
	u16 taken;			/* WQEs the HCA took so far */
	u32 head;			/* the next WQE it takes */
};

struct hca_cmd_destroy_qp_in {
	u32 qpn;
};

/* MODIFY_QP attribute mask: which fields of hca_qp_attrs to apply. */
#define HCA_QP_ATTR_ACCESS		BIT(0)	/* access_flags */
#define HCA_QP_ATTR_PATH		BIT(1)	/* dgid, sgid_index, hop_limit... */
#define HCA_QP_ATTR_PATH_MTU		BIT(2)
#define HCA_QP_ATTR_DEST_QPN		BIT(3)
#define HCA_QP_ATTR_RQ_PSN		BIT(4)
#define HCA_QP_ATTR_SQ_PSN		BIT(5)
#define HCA_QP_ATTR_MIN_RNR_TIMER	BIT(6)
#define HCA_QP_ATTR_RNR_RETRY		BIT(7)
#define HCA_QP_ATTR_RETRY_CNT		BIT(8)
#define HCA_QP_ATTR_TIMEOUT		BIT(9)
#define HCA_QP_ATTR_MAX_RD_ATOMIC	BIT(10)
#define HCA_QP_ATTR_MAX_DEST_RD_ATOMIC	BIT(11)
#define HCA_QP_ATTR_PORT		BIT(12)
#define HCA_QP_ATTR_PKEY_INDEX		BIT(13)
#define HCA_QP_ATTR_SQD_NOTIFY		BIT(14)	/* sqd_notify */
#define HCA_QP_ATTR_QKEY		BIT(15)	/* datagram QPs */

struct hca_qp_attrs {
	u32 access_flags;		/* HCA_ACCESS_REMOTE_* */
	u8 dgid[16];
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 port;
	u32 flow_label;
	u32 path_mtu;			/* bytes */
	u32 dest_qpn;
	u32 rq_psn;
	u32 sq_psn;
	u8 min_rnr_timer;		/* IB encoding 0..31 */
	u8 rnr_retry;			/* 7: forever */
	u8 retry_cnt;
	u8 timeout;			/* 4.096 us * 2^timeout, 0: infinite */
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u16 pkey_index;
	u8 sqd_notify;			/* SQD: SQ_DRAINED event when drained */
	/* A datagram QP's Q_Key: privileged ones only for HCA_QP_PRIVILEGED. */
	u32 qkey;
};

/*
 * The driver validated the transition (ib_modify_qp_is_ok) and every
 * attribute already. -EAGAIN if @cur_state is no longer the QP's state (the
 * engine moved it to ERR since the driver looked): query and decide again.
 * -EINVAL for an attribute the QP's type does not have, -EPERM for a
 * privileged Q_Key given to a QP that is not privileged.
 */
struct hca_cmd_modify_qp_in {
	u32 qpn;
	u32 cur_state;			/* enum hca_qp_state the driver saw */
	u32 new_state;
	u32 attr_mask;			/* HCA_QP_ATTR_* */
	struct hca_qp_attrs attrs;
};

struct hca_cmd_query_qp_in {
	u32 qpn;
};

/* What the WQE at sq_ci waits for (QUERY_QP). */
enum hca_qp_wait {
	HCA_QP_WAIT_NONE,
	HCA_QP_WAIT_RNR,		/* an RNR NAK: the responder's timer */
	HCA_QP_WAIT_ACK,		/* no answer: the local ACK timeout */
};

struct hca_cmd_query_qp_out {
	u32 state;			/* enum hca_qp_state: may be ERR by now */
	u32 sq_draining;
	struct hca_qp_attrs attrs;
	/* The engine's side, as it is now (diagnostics). */
	u32 send_cqn;
	u32 recv_cqn;
	u32 q_counter;			/* the counter set it counts in */
	u16 sq_pi;			/* WQEBBs posted (doorbell record) */
	u16 sq_ci;			/* WQEBBs executed */
	u16 rq_pi;			/* receive WQEs posted (doorbell record) */
	u16 rq_ci;			/* receive WQEs consumed */
	u8 wait;			/* enum hca_qp_wait */
	u8 rnr_retry_left;		/* retries the waiting WQE has left */
	u8 retry_left;
	u8 rsvd;
};

/*
 * SET_ROCE_ADDRESS: program GID table entry @index (valid = 0 clears it).
 * The local fabric delivers to the HCA that owns a destination GID.
 */
struct hca_gid_entry {
	u8 gid[16];
	u8 mac[6];
	u8 roce_version;		/* 2 */
	u8 valid;
	u16 vlan_id;			/* with vlan_valid: the netdev's VLAN */
	u8 vlan_valid;
	u8 rsvd;
};

struct hca_cmd_set_roce_address_in {
	u32 index;
	struct hca_gid_entry entry;
};

/*
 * ATTACH_TO_MCG / DETACH_FROM_MCG: datagram QP @qpn joins or leaves the
 * multicast group @gid on the local fabric: a datagram sent to @gid from
 * any HCA of this host reaches every QP attached to it (fabric.c).
 * Attach: -EINVAL not a datagram QP or not a multicast GID, -EEXIST
 * attached already, -ENOSPC beyond max_mcast_grp / max_mcast_qp_attach /
 * max_total_mcast_qp_attach. Detach: -ENOENT not attached. DESTROY_QP
 * detaches the QP from every group.
 */
struct hca_cmd_mcg_in {
	u32 qpn;
	u8 gid[16];
};

/* ==== Counters (kernel/hca/counters.c) ==================================== */

/*
 * What a Q counter set counts (mlx5's q counters): per QP, by the side of
 * the QP that runs it (requester or responder), summed over the QPs in the
 * set. Every message is one request (the local fabric has no packets).
 */
enum hca_q_counter {
	HCA_QCNT_TX_REQUESTS,		/* requests sent, retries included */
	/* payload out: SEND/WRITE requests (each try), READ/atomic responses */
	HCA_QCNT_TX_BYTES,
	HCA_QCNT_RX_REQUESTS,		/* requests taken by a receiving QP */
	/* payload in: SEND/WRITE placed, READ/atomic responses */
	HCA_QCNT_RX_BYTES,
	HCA_QCNT_TX_RETRIES,		/* requests sent again (RNR NAK, timeout) */
	HCA_QCNT_RNR_NAKS_SENT,
	HCA_QCNT_RNR_NAKS_RCVD,
	HCA_QCNT_LOCAL_ACK_TIMEOUTS,	/* requests nobody answered */
	/* Error completions the QP generated, by syndrome. */
	HCA_QCNT_CQE_LOC_LEN_ERR,
	HCA_QCNT_CQE_LOC_QP_OP_ERR,
	HCA_QCNT_CQE_LOC_PROT_ERR,
	HCA_QCNT_CQE_WR_FLUSH_ERR,
	HCA_QCNT_CQE_REM_INV_REQ_ERR,
	HCA_QCNT_CQE_REM_ACCESS_ERR,
	HCA_QCNT_CQE_REM_OP_ERR,
	HCA_QCNT_CQE_RETRY_EXC_ERR,
	HCA_QCNT_CQE_RNR_RETRY_EXC_ERR,
	/* Messages a receiving QP dropped (UD, UC: no error, no RNR). */
	HCA_QCNT_OUT_OF_BUFFER,		/* no receive WQE (mlx5's out_of_buffer) */
	HCA_QCNT_RX_QKEY_DROPS,		/* a Q_Key that is not the QP's */
	HCA_QCNT_RX_LEN_DROPS,		/* longer than the receive WQE */
	/* UC: a WRITE the QP's access or the rkey does not grant, dropped */
	HCA_QCNT_RX_ACCESS_DROPS,
	/* XRC target: a request naming no SRQ of its domain (NAKed) */
	HCA_QCNT_RX_XRC_SRQ_ERRORS,
	/* RC on the wire: NAKs by kind (sent: responder, received: requester). */
	HCA_QCNT_SEQ_NAKS_SENT,		/* PSN sequence error */
	HCA_QCNT_SEQ_NAKS_RCVD,
	HCA_QCNT_INV_REQ_NAKS_SENT,	/* invalid (RD) request */
	HCA_QCNT_INV_REQ_NAKS_RCVD,
	HCA_QCNT_REM_ACCESS_NAKS_SENT,
	HCA_QCNT_REM_ACCESS_NAKS_RCVD,
	HCA_QCNT_REM_OP_NAKS_SENT,
	HCA_QCNT_REM_OP_NAKS_RCVD,
	HCA_QCNT_OUT_OF_SEQUENCE,	/* responder: packets past the ePSN */
	HCA_QCNT_DUPLICATE_REQUEST,	/* responder: packets behind the ePSN */
	/* requester: a READ/atomic response skipped (IBTA 9.7.5.1.4) */
	HCA_QCNT_IMPLIED_NAK_SEQ_ERR,
	HCA_QCNT_NUM
};

/* What the HCA counts as a whole (QUERY_HCA_COUNTERS). */
enum hca_hca_counter {
	HCA_HCNT_CQ_OVERRUNS,		/* CQs that overran (entered error) */
	HCA_HCNT_WAKEUP_CALLS,		/* hca_wakeup_call()s */
	HCA_HCNT_ENGINE_BACKOFFS,	/* engine back-offs since creation */
	/* Datagrams to a QPN here that names no datagram QP (or none at all). */
	HCA_HCNT_RX_NO_QP_DROPS,
	/*
	 * The wire (RoCEv2, Documentation/wire.md): packets and their bytes
	 * (UDP payload: BTH to ICRC) sent and taken, and what was not.
	 */
	HCA_HCNT_WIRE_TX_PACKETS,
	HCA_HCNT_WIRE_FIRST = HCA_HCNT_WIRE_TX_PACKETS,
	HCA_HCNT_WIRE_TX_BYTES,
	HCA_HCNT_WIRE_RX_PACKETS,
	HCA_HCNT_WIRE_RX_BYTES,
	HCA_HCNT_WIRE_TX_NO_ROUTE,	/* no netdev, socket or IP route */
	HCA_HCNT_WIRE_TX_DROPS,		/* IP refused it after routing */
	HCA_HCNT_WIRE_RX_HEADER_DROPS,	/* short, unknown opcode, bad header */
	HCA_HCNT_WIRE_RX_ICRC_DROPS,
	HCA_HCNT_WIRE_RX_UNKNOWN_QPN,	/* no QP of that number takes it */
	HCA_HCNT_WIRE_RX_QUEUE_FULL,	/* a receive or response queue was full */
	HCA_HCNT_WIRE_RX_NOT_PEER,	/* RC/UC/XRC: IP addresses not the path's */
	HCA_HCNT_WIRE_RX_QP_STATE,	/* to a QP whose state does not take it */
	HCA_HCNT_WIRE_RX_UNSOLICITED,	/* a response with no request outstanding */
	HCA_HCNT_WIRE_RX_STALE_RSP,	/* a response no outstanding PSN awaits */
	/* Congestion (wire_cc.c), by ConnectX's names. */
	HCA_HCNT_NP_ECN_MARKED,		/* packets that came with ECN CE */
	HCA_HCNT_NP_CNP_SENT,		/* CNPs sent for them */
	HCA_HCNT_RP_CNP_IGNORED,	/* CNPs taken, the rate not cut */
	HCA_HCNT_RP_CNP_HANDLED,	/* CNPs taken by a reaction point */
	HCA_HCNT_RP_HOLDS,		/* times a requester waited for its rate */
	/* On-demand paging (mkey_odp.c). */
	HCA_HCNT_ODP_FAULTS_REQ,	/* PAGE_FAULT events of requesters */
	HCA_HCNT_ODP_FIRST = HCA_HCNT_ODP_FAULTS_REQ,
	HCA_HCNT_ODP_FAULTS_RESP,	/* ... of responders */
	HCA_HCNT_ODP_PAGES_MAPPED,	/* MTT entries ODP_MAP filled */
	HCA_HCNT_ODP_PAGES_INVALIDATED,	/* present entries ODP_UNMAP cleared */
	HCA_HCNT_NUM
};

/*
 * Set 0 is the default set: a QP counts there from CREATE_QP until
 * SET_QP_COUNTER moves it into a set of ALLOC_Q_COUNTER (1..max_q_counters)
 * or back. A set keeps what its QPs counted while they were in it, also
 * after they left or were destroyed; DEALLOC_Q_COUNTER of a set that still
 * has QPs is -EBUSY.
 */
#define HCA_Q_COUNTER_DEFAULT		0

struct hca_cmd_alloc_q_counter_out {
	u32 counter_id;
};

struct hca_cmd_dealloc_q_counter_in {
	u32 counter_id;
};

struct hca_cmd_query_q_counter_in {
	u32 counter_id;
};

struct hca_cmd_query_q_counter_out {
	u64 value[HCA_QCNT_NUM];
};

struct hca_cmd_set_qp_counter_in {
	u32 qpn;
	u32 counter_id;
};

struct hca_cmd_query_hca_counters_out {
	u64 value[HCA_HCNT_NUM];
};

struct hca;

/* Longest instance name kept (IB_DEVICE_NAME_MAX of ib_core), with its NUL. */
#define HCA_NAME_MAX		64

/*
 * Power on an HCA instance; ERR_PTR on failure. May sleep. @name (copied,
 * cut to HCA_NAME_MAX - 1 bytes) opens every debug message of the
 * instance: the driver passes its device's name at creation.
 */
struct hca *hca_create(const char *name);
/* Power off. Every PD and UAR must have been returned. May sleep. */
void hca_destroy(struct hca *hca);

/* Module load / unload: what every instance shares (the wire's sockets). */
int hca_model_init(void);
void hca_model_exit(void);

/*
 * Execute one firmware command. @in/@out must be exactly the command's
 * structures (or NULL/0 when it has none). Returns 0 or a negative errno:
 * -EOPNOTSUPP unknown opcode, -EINVAL bad length or bad resource number,
 * -ENOSPC resource exhausted, -ENOMEM (MODIFY_QP: -EAGAIN, see there).
 * Every refusal is a debug message: command, errno and reason. May sleep.
 */
int hca_exec(struct hca *hca, u16 opcode, const void *in,
		  size_t inlen, void *out, size_t outlen);

/*
 * Names of the interface's numbers, for debug messages (names.c):
 * "UNKNOWN" for a number that has none.
 */
#define HCA_NAME_UNKNOWN	"UNKNOWN"
const char *hca_cmd_name(u16 opcode);
const char *hca_qp_state_name(u32 state);	/* enum hca_qp_state */
const char *hca_syndrome_name(u8 syndrome);	/* SOFTHCA_CQE_SYNDROME_* */
const char *hca_event_name(u8 type);		/* SOFTHCA_EVENT_TYPE_* */

/*
 * The "BAR": page frame of an allocated UAR page, for mapping it into user
 * space, or 0 if @uar_index is not allocated. The frame stays valid until
 * FREE_UAR of that index.
 */
unsigned long hca_uar_pfn(struct hca *hca, u32 uar_index);

/* The device page (struct softhca_device_page), mapped read-only to users. */
unsigned long hca_device_pfn(struct hca *hca);

/* Page @pgoff of the UAR's doorbell area, or 0 (same lifetime). */
unsigned long hca_uar_db_pfn(struct hca *hca, u32 uar_index,
			     unsigned long pgoff);

/*
 * The UAR of @uar_index as a handle for hca_wakeup_call(), or NULL. Valid
 * until FREE_UAR of that index; the caller makes sure no call uses it then.
 */
struct hca_uar;
struct hca_uar *hca_uar_find(struct hca *hca, u32 uar_index);

/*
 * The wake-up call: a provider found NEED_WAKEUP set in its doorbell area
 * after ringing. Runs the pending doorbells of that area in the caller's
 * context, then hands the stream back to the engine thread(s). May sleep
 * briefly (process context).
 */
void hca_wakeup_call(struct hca_uar *uar);

/*
 * The kernel's doorbell (kernel QPs and CQs): after storing a doorbell
 * record, the hint for @db_slot in the HCA's own doorbell area, a full
 * barrier and, if its engine thread does not watch the area, a wake-up of
 * that thread. Any context (no sleeping): the work runs in the thread.
 */
void hca_kernel_doorbell(struct hca *hca, u32 db_slot);

/*
 * The device clock, as a ConnectX's internal timer register: nanoseconds
 * (core_clock_khz 1 GHz) of CLOCK_MONOTONIC, the clock CQE timestamps
 * come from. Any context.
 */
u64 hca_read_clock(struct hca *hca);

/* ==== Event queues and interrupt vectors (kernel/hca/eq_ctx.c) =================== */

/*
 * Opcodes, numbered as mlx5's CREATE_EQ, DESTROY_EQ, QUERY_EQ and GEN_EQE.
 * SET_PORT_STATE stands for the PHY: the driver reports its netdev's state
 * and the HCA raises PORT_CHANGE events (mlx5 has MODIFY_VPORT_STATE).
 */
#define HCA_CMD_CREATE_EQ		0x301
#define HCA_CMD_DESTROY_EQ		0x302
#define HCA_CMD_QUERY_EQ		0x303
#define HCA_CMD_GEN_EQE		0x304
#define HCA_CMD_SET_PORT_STATE		0x751
#define HCA_CMD_SET_PORT_NETDEV	0x752

/*
 * The EQE a full EQ gets in its last free slot (mlx4's EQ_OVERFLOW number;
 * EQs are kernel-only, so it is not in the uapi header). After it the EQ
 * drops (and counts) every EQE until the driver's consumer index catches
 * up with the producer; it never overwrites an unconsumed entry.
 * data.raw[0] = eqn.
 */
#define HCA_EVENT_TYPE_EQ_OVERFLOW	0x0f

#define HCA_EQ_LOG_SIZE_MIN		1
#define HCA_EQ_LOG_SIZE_MAX		16
#define HCA_EQ_CI_MASK			0xffffff	/* doorbell field width */

/*
 * The MSI-X message of an EQ, as the driver programmed it: the HCA raises
 * the EQ's interrupt vector by calling @send(@data). Called from any
 * context (engine threads, firmware commands, the EQ doorbell in hard-IRQ
 * context), never with a model lock held; must not sleep. The model calls
 * it only between CREATE_EQ and the return of DESTROY_EQ.
 */
struct hca_msix_msg {
	void (*send)(void *data);
	void *data;
};

/*
 * CREATE_EQ: the driver allocated the ring (1 << log_size EQEs, every owner
 * byte SOFTHCA_EQE_OWNER_INIT) and keeps it until DESTROY_EQ returns.
 * @event_mask: BIT_ULL(SOFTHCA_EVENT_TYPE_*) of the asynchronous events
 * this EQ takes (each type at most one EQ; never COMP): 0 makes a
 * completion EQ, which CREATE_CQ may name. The EQ starts disarmed: the
 * driver arms it with hca_eq_doorbell(). EQNs are the lowest free
 * number in 0..max_comp_eqs.
 */
struct hca_cmd_create_eq_in {
	struct softhca_eqe *ring;
	u32 log_size;
	u32 rsvd;
	u64 event_mask;
	struct hca_msix_msg msix;
};

struct hca_cmd_create_eq_out {
	u32 eqn;
};

/* DESTROY_EQ: when it returns no EQE write and no MSI-X message of this EQ
 * is in flight any more. May sleep (an RCU grace period).
 */
struct hca_cmd_destroy_eq_in {
	u32 eqn;
};

struct hca_cmd_query_eq_in {
	u32 eqn;
};

struct hca_cmd_query_eq_out {
	u32 log_size;
	u32 pi;				/* EQEs written, free-running */
	u32 ci;				/* from the last doorbell */
	u32 armed;
	u32 overflow;			/* dropping until ci == pi */
	u32 rsvd;
	u64 event_mask;
	u64 eqes;			/* EQEs written */
	u64 msix;			/* MSI-X messages sent */
	u64 overflows;			/* times the EQ filled up */
	u64 dropped;			/* EQEs not written (EQ full) */
};

/* GEN_EQE: write @eqe (its owner byte is the model's) into EQ @eqn and
 * raise the vector if the EQ is armed; -ENOSPC if the EQ is full.
 */
struct hca_cmd_gen_eqe_in {
	u32 eqn;
	u32 rsvd;
	struct softhca_eqe eqe;
};

/* SET_PORT_STATE: state is SOFTHCA_PORT_CHANGE_SUBTYPE_DOWN or _ACTIVE. */
#define HCA_PORT_STATE_QUIET		BIT(0)	/* no PORT_CHANGE event */

struct hca_cmd_set_port_state_in {
	u32 port;
	u32 state;
	u32 flags;			/* HCA_PORT_STATE_* */
};

/*
 * SET_PORT_NETDEV: the port's PHY is @ndev (once per HCA; -EBUSY after):
 * what is not a softhca device of this host is reached through it with
 * RoCEv2 packets (Documentation/wire.md). The driver keeps @ndev held
 * until hca_destroy() returns. Outside the initial network namespace the
 * HCA takes UDP 4791 of @ndev's namespace (shared by the HCAs there).
 */
struct hca_cmd_set_port_netdev_in {
	u32 port;
	u32 rsvd;
	struct net_device *ndev;
};

/*
 * The EQ doorbell (mlx5: the EQ's UAR word): the driver consumed EQEs up to
 * @ci (free-running; the model uses its low 24 bits, bounded by what it
 * wrote) and, if @arm, wants one MSI-X message for the next EQE. An arm
 * that finds unconsumed EQEs raises the vector at once. Any context.
 */
void hca_eq_doorbell(struct hca *hca, u32 eqn, u32 ci, bool arm);

#endif /* HCA_HCA_H */
