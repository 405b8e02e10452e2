/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: the "hardware" behind the verbs driver.
 *
 * The driver reaches the model only through this header: create/destroy an
 * HCA instance, execute a firmware command (shca_hca_exec()) and find a UAR
 * page (shca_hca_uar_pfn(), the "BAR"). The model knows nothing of ib_core;
 * every structure here is plain data, so a PCI backend with a command
 * mailbox could stand in for it.
 */
#ifndef SHCA_HCA_H
#define SHCA_HCA_H

#include <linux/bits.h>
#include <linux/types.h>
#include <rdma/softhca-queue.h>

struct page;

/* Revision of the model: hw_ver, fw_ver major and model_rev of the ABI. */
#define SHCA_MODEL_REV		1

/* Firmware command opcodes (numbered like their mlx5 counterparts). */
enum shca_cmd_op {
	SHCA_CMD_QUERY_CAPS	= 0x100,
	SHCA_CMD_ALLOC_PD	= 0x800,
	SHCA_CMD_DEALLOC_PD	= 0x801,
	SHCA_CMD_ALLOC_UAR	= 0x802,
	SHCA_CMD_FREE_UAR	= 0x803,
	SHCA_CMD_CREATE_MKEY	= 0x200,
	SHCA_CMD_DESTROY_MKEY	= 0x202,
	SHCA_CMD_CREATE_CQ	= 0x400,
	SHCA_CMD_DESTROY_CQ	= 0x401,
	SHCA_CMD_CREATE_QP	= 0x500,
	SHCA_CMD_DESTROY_QP	= 0x501,
	SHCA_CMD_MODIFY_QP	= 0x502,
	SHCA_CMD_QUERY_QP	= 0x50b,
	SHCA_CMD_SET_ROCE_ADDRESS = 0x782,
};

/* shca_caps.flags */
#define SHCA_CAP_RC		BIT_ULL(0)	/* RC transport service */
#define SHCA_CAP_RNR_NAK_GEN	BIT_ULL(1)	/* responder sends RNR NAK */
#define SHCA_CAP_ATOMIC		BIT_ULL(2)	/* CMP_SWP, FETCH_ADD (HCA-atomic) */

/* QUERY_CAPS output: every limit of the HCA. No input. */
struct shca_caps {
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
	u32 max_mr;
	u32 max_pd;
	u32 max_uar;
	u32 max_comp_eqs;	/* completion event queues (vectors) */
	u32 reserved;
	u64 max_mr_size;
	u64 page_size_cap;	/* bitmap of supported MKey page sizes */
	u64 flags;		/* SHCA_CAP_* */
};

struct shca_cmd_alloc_pd_out {
	u32 pdn;
};

struct shca_cmd_dealloc_pd_in {
	u32 pdn;
};

struct shca_cmd_alloc_uar_out {
	u32 uar_index;
};

struct shca_cmd_free_uar_in {
	u32 uar_index;
};

/* ---- data path commands (the RC data path) ---- */

/* MKey access rights (CREATE_MKEY, QP access flags, engine checks). */
#define SHCA_ACCESS_LOCAL_WRITE		BIT(0)
#define SHCA_ACCESS_REMOTE_WRITE	BIT(1)
#define SHCA_ACCESS_REMOTE_READ		BIT(2)
#define SHCA_ACCESS_REMOTE_ATOMIC	BIT(3)
#define SHCA_ACCESS_LOCAL_READ		BIT(4)	/* implied for every MKey */

/*
 * CREATE_MKEY: memory the driver pinned. The model keeps @pages (it does not
 * copy the array) until DESTROY_MKEY returns; DESTROY_MKEY waits for every
 * engine access in flight to end.
 */
struct shca_cmd_create_mkey_in {
	u32 pdn;
	u32 access;			/* SHCA_ACCESS_* */
	u64 iova;			/* first byte the key covers */
	u64 length;
	u64 offset;			/* of iova in pages[0] */
	unsigned int page_shift;
	unsigned long npages;
	struct page **pages;
};

struct shca_cmd_create_mkey_out {
	u32 mkey;			/* index << 8 | variant: lkey and rkey */
};

struct shca_cmd_destroy_mkey_in {
	u32 mkey;
};

/*
 * CREATE_CQ: the driver allocated the ring (1 << log_size CQEs, every one
 * INVALID with owner 0) and the doorbell record; both stay mapped to the
 * user and alive until DESTROY_CQ returns.
 */
struct shca_cmd_create_cq_in {
	struct softhca_cqe *ring;
	struct softhca_cq_dbr *dbr;
	u32 log_size;
	u32 eqn;
};

struct shca_cmd_create_cq_out {
	u32 cqn;
};

struct shca_cmd_destroy_cq_in {
	u32 cqn;
};

enum shca_qp_state {
	SHCA_QPS_RESET, SHCA_QPS_INIT, SHCA_QPS_RTR, SHCA_QPS_RTS,
	SHCA_QPS_SQD, SHCA_QPS_SQE, SHCA_QPS_ERR,
};

#define SHCA_QP_SIGNATURE		BIT(0)	/* check WQE signatures */
#define SHCA_QP_SQ_SIG_ALL		BIT(1)	/* every WQE signaled */

struct shca_cmd_create_qp_in {
	u32 pdn;
	u32 send_cqn;
	u32 recv_cqn;
	u32 flags;			/* SHCA_QP_* */
	void *sq_buf;
	u32 sq_wqebb_cnt;		/* power of two, >= 1 */
	u32 rq_wqe_cnt;			/* power of two, may be 0 */
	void *rq_buf;
	u32 rq_wqe_shift;		/* log2 of the RQ stride */
	u32 max_inline_data;
	struct softhca_qp_dbr *dbr;
};

struct shca_cmd_create_qp_out {
	u32 qpn;
};

struct shca_cmd_destroy_qp_in {
	u32 qpn;
};

/* MODIFY_QP attribute mask: which fields of shca_qp_attrs to apply. */
#define SHCA_QP_ATTR_ACCESS		BIT(0)	/* access_flags */
#define SHCA_QP_ATTR_PATH		BIT(1)	/* dgid, sgid_index, hop_limit... */
#define SHCA_QP_ATTR_PATH_MTU		BIT(2)
#define SHCA_QP_ATTR_DEST_QPN		BIT(3)
#define SHCA_QP_ATTR_RQ_PSN		BIT(4)
#define SHCA_QP_ATTR_SQ_PSN		BIT(5)
#define SHCA_QP_ATTR_MIN_RNR_TIMER	BIT(6)
#define SHCA_QP_ATTR_RNR_RETRY		BIT(7)
#define SHCA_QP_ATTR_RETRY_CNT		BIT(8)
#define SHCA_QP_ATTR_TIMEOUT		BIT(9)
#define SHCA_QP_ATTR_MAX_RD_ATOMIC	BIT(10)
#define SHCA_QP_ATTR_MAX_DEST_RD_ATOMIC	BIT(11)
#define SHCA_QP_ATTR_PORT		BIT(12)
#define SHCA_QP_ATTR_PKEY_INDEX		BIT(13)

struct shca_qp_attrs {
	u32 access_flags;		/* SHCA_ACCESS_REMOTE_* */
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
};

/*
 * The driver validated the transition (ib_modify_qp_is_ok) and every
 * attribute already. -EAGAIN if @cur_state is no longer the QP's state (the
 * engine moved it to ERR since the driver looked): query and decide again.
 */
struct shca_cmd_modify_qp_in {
	u32 qpn;
	u32 cur_state;			/* enum shca_qp_state the driver saw */
	u32 new_state;
	u32 attr_mask;			/* SHCA_QP_ATTR_* */
	struct shca_qp_attrs attrs;
};

struct shca_cmd_query_qp_in {
	u32 qpn;
};

struct shca_cmd_query_qp_out {
	u32 state;			/* enum shca_qp_state: may be ERR by now */
	u32 sq_draining;
	struct shca_qp_attrs attrs;
};

/*
 * SET_ROCE_ADDRESS: program GID table entry @index (valid = 0 clears it).
 * The local fabric delivers to the HCA that owns a destination GID.
 */
struct shca_gid_entry {
	u8 gid[16];
	u8 mac[6];
	u8 roce_version;		/* 2 */
	u8 valid;
};

struct shca_cmd_set_roce_address_in {
	u32 index;
	struct shca_gid_entry entry;
};

struct shca_hca;

/* Power on an HCA instance; ERR_PTR on failure. May sleep. */
struct shca_hca *shca_hca_create(void);
/* Power off. Every PD and UAR must have been returned. May sleep. */
void shca_hca_destroy(struct shca_hca *hca);

/*
 * Execute one firmware command. @in/@out must be exactly the command's
 * structures (or NULL/0 when it has none). Returns 0 or a negative errno:
 * -EOPNOTSUPP unknown opcode, -EINVAL bad length or bad resource number,
 * -ENOSPC resource exhausted, -ENOMEM. May sleep.
 */
int shca_hca_exec(struct shca_hca *hca, u16 opcode, const void *in,
		  size_t inlen, void *out, size_t outlen);

/*
 * The "BAR": page frame of an allocated UAR page, for mapping it into user
 * space, or 0 if @uar_index is not allocated. The frame stays valid until
 * FREE_UAR of that index.
 */
unsigned long shca_hca_uar_pfn(struct shca_hca *hca, u32 uar_index);

/* The engine page (struct softhca_engine_page), mapped read-only to users. */
unsigned long shca_hca_engine_pfn(struct shca_hca *hca);

/*
 * The wake-up doorbell: a provider found NEED_WAKEUP set after ringing. Runs
 * the pending doorbells of this HCA in the caller's context, then hands the
 * stream back to the engine thread. May sleep briefly (process context).
 */
void shca_hca_wake(struct shca_hca *hca);

#endif /* SHCA_HCA_H */
