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

/* Revision of the model: hw_ver, fw_ver major and model_rev of the ABI. */
#define SHCA_MODEL_REV		1

/* Firmware command opcodes (numbered like their mlx5 counterparts). */
enum shca_cmd_op {
	SHCA_CMD_QUERY_CAPS	= 0x100,
	SHCA_CMD_ALLOC_PD	= 0x800,
	SHCA_CMD_DEALLOC_PD	= 0x801,
	SHCA_CMD_ALLOC_UAR	= 0x802,
	SHCA_CMD_FREE_UAR	= 0x803,
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

#endif /* SHCA_HCA_H */
