/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * provider-abi.h - the part of libibverbs' private provider interface that
 * softhca uses, declared by us.
 *
 * rdma-core builds its providers inside its own tree against
 * libibverbs/driver.h, which is not installed. We build out of tree against the
 * installed public headers (infiniband/verbs.h, rdma/ib_user_verbs.h) and the
 * installed libibverbs.so.1, so this file declares, in our own words, the
 * structures and functions of that interface we rely on. Member types and
 * order are the ABI and must match rdma-core exactly; names follow rdma-core so
 * the two can be compared.
 *
 * Matches rdma-core (verified against its git tags, see
 * Documentation/provider.md and tests/unit/pabi-layout.py):
 *   - struct verbs_match_ent, verbs_device_ops, verbs_device and
 *     verbs_context_ops (76 ops) are identical in every release v36.0 .. v58.x.
 *     v59.0 adds 3 ops to verbs_context_ops and grows struct verbs_context.
 *   - The private ABI version ("PABI", the _34 in verbs_register_driver_34,
 *     the symbol version IBVERBS_PRIVATE_34 and the -rdmav34.so file suffix)
 *     is 34 in v36 .. v56, 57 in v57 .. v58 and 59 from v59. A provider is
 *     only loaded by a libibverbs of its own PABI.
 *   - Of the functions below only ibv_cmd_get_context() changed in v36..v58:
 *     v57 inserted a `struct ibv_fd_arr *` argument.
 *
 * SOFTHCA_PABI selects the variant: 34 (default; rdma-core v36 .. v56, Debian
 * 12 ships v44) or 57 (rdma-core v57 .. v58; compile-checked only). The
 * provider file name must carry the same number (libsofthca-rdmav<PABI>.so).
 */
#ifndef SOFTHCA_PROVIDER_ABI_H
#define SOFTHCA_PROVIDER_ABI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#ifndef SOFTHCA_PABI
#define SOFTHCA_PABI 34
#endif

/* Opaque to us: libibverbs' record of the sysfs device it matched. */
struct verbs_sysfs_dev;
/* verbs_xrcd.comp_mask */
enum {
	VERBS_XRCD_HANDLE = 1 << 0,	/* handle is valid */
};

/* An XRC domain: ibv_cmd_open_xrcd() fills in everything. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/*
 * An SRQ created with ibv_cmd_create_srq_ex(), which fills in the type,
 * XRC domain, CQ and the SRQ number the kernel returned.
 */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* ---- device matching ---------------------------------------------------- */

/* verbs_match_ent.kind */
enum {
	VERBS_MATCH_SENTINEL = 0,	/* ends the table */
	VERBS_MATCH_PCI = 1,		/* vendor/device of a PCI parent */
	VERBS_MATCH_MODALIAS = 2,	/* fnmatch(u.modalias, device/modalias) */
	VERBS_MATCH_DRIVER_ID = 3,	/* netlink RDMA_NLDEV_ATTR_DEV_PROTOCOL id */
};

/* One row of a provider's match table (24 bytes on LP64). */
struct verbs_match_ent {
	void *driver_data;		/* handed back in sysfs_dev->match */
	union {
		const char *modalias;	/* VERBS_MATCH_MODALIAS: fnmatch pattern */
		uint64_t driver_id;	/* VERBS_MATCH_DRIVER_ID */
	} u;
	uint16_t vendor;		/* VERBS_MATCH_PCI */
	uint16_t device;		/* VERBS_MATCH_PCI */
	uint8_t kind;			/* VERBS_MATCH_* */
};

/* ---- provider and device ------------------------------------------------ */

struct verbs_device;

/*
 * What a provider registers (72 bytes on LP64). libibverbs matches every
 * uverbs device against match_table, checks the device's sysfs abi_version
 * against [match_min_abi_version, match_max_abi_version], then calls
 * alloc_device(); ibv_open_device() later calls alloc_context().
 */
struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	/* only for statically linked builds of rdma-core; NULL for us */
	const struct verbs_device_ops **static_providers;
	/* optional extra test, called after the table match */
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	/* owns cmd_fd: must close it (verbs_uninit_context does) on failure */
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	/* ibv_import_device(); NULL = EOPNOTSUPP */
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/*
 * The provider allocates this (embedded first in its own device struct) in
 * alloc_device(); libibverbs fills in every field after that and frees it
 * through uninit_device() when the last reference goes.
 */
struct verbs_device {
	struct ibv_device device;	/* first: what applications see */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct {			/* libibverbs' device list (ccan list_node) */
		void *next;
		void *prev;
	} entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;		/* from GET_CONTEXT */
};

/* ---- objects the provider embeds ---------------------------------------- */

/* verbs_mr.mr_type; ibv_cmd_reg_mr() sets IBV_MR_TYPE_MR. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/* An MR as libibverbs sees it: the provider allocates it (reg_mr) and frees
 * it (dereg_mr); ibv_cmd_reg_mr() fills in everything but addr/length/pd,
 * which ibv_reg_mr() sets on return. */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/* verbs_qp.comp_mask */
enum {
	VERBS_QP_XRCD = 1 << 0,		/* xrcd is valid */
	VERBS_QP_EX = 1 << 1,		/* qp_ex ops are valid: ibv_qp_to_qp_ex() */
};

/*
 * A QP created with ibv_cmd_create_qp_ex(), which sets comp_mask to 0.
 * Caution: its layout follows struct ibv_qp_ex of the verbs.h we compile
 * against, which grew in rdma-core v44 and again in v45 (wr_atomic_write,
 * wr_flush). libibverbs reads comp_mask only in ibv_qp_to_qp_ex(), so only
 * the extended post-send API depends on building against the verbs.h of the
 * libibverbs that loads us (Documentation/provider.md).
 */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

/* ---- context operations ------------------------------------------------- */

/*
 * Every op a provider can implement, in rdma-core's (alphabetical) order:
 * the order is the ABI. verbs_set_ops() copies the non-NULL ones into the
 * context; the rest keep libibverbs' stubs, which fail with EOPNOTSUPP.
 * 76 entries in rdma-core v36 .. v58.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(
		struct ibv_context *context,
		struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(
		struct ibv_context *context,
		struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

#define VERBS_CONTEXT_OPS_COUNT 76

/* ---- legacy command buffers (rdma-core kern-abi.h) ---------------------- */

/*
 * The ibv_cmd_* helpers take the old write() command layout: the 8-byte
 * ib_uverbs_cmd_hdr, then the core command (from rdma/ib_user_verbs.h), then
 * the driver's request. libibverbs sends everything past the core part as
 * the driver udata (and takes resp + sizeof(core response) as the driver's
 * output), by ioctl() or write(). Unchanged in rdma-core v36 .. v59.
 * Spelled out field by field: the kernel structs end in flexible arrays and
 * cannot be members.
 */
struct ibv_get_context {		/* + struct ib_uverbs_get_context */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};

struct ibv_alloc_pd {			/* + struct ib_uverbs_alloc_pd */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
};

struct ibv_query_port {			/* + struct ib_uverbs_query_port */
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u8 port_num;
	__u8 reserved[7];
};

/*
 * The data path's commands. Their helpers fill in every core field
 * themselves, so the core part is only sized here (as bytes, aligned like
 * the kernel struct) and the driver's udata follows it.
 */
#define SOFTHCA_DECLARE_CMD(_name, _core)				\
	struct _name {							\
		struct ib_uverbs_cmd_hdr hdr;				\
		_Alignas(8) __u8 core_payload[sizeof(struct _core)];	\
	};								\
	_Static_assert(sizeof(struct _name) ==				\
			       sizeof(struct ib_uverbs_cmd_hdr) +	\
				       sizeof(struct _core),		\
		       #_name " size")

SOFTHCA_DECLARE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
SOFTHCA_DECLARE_CMD(ibv_create_cq, ib_uverbs_create_cq);
SOFTHCA_DECLARE_CMD(ibv_create_qp, ib_uverbs_create_qp);
SOFTHCA_DECLARE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
SOFTHCA_DECLARE_CMD(ibv_query_qp, ib_uverbs_query_qp);
SOFTHCA_DECLARE_CMD(ibv_resize_cq, ib_uverbs_resize_cq);
SOFTHCA_DECLARE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
SOFTHCA_DECLARE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
SOFTHCA_DECLARE_CMD(ibv_create_srq, ib_uverbs_create_srq);
SOFTHCA_DECLARE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
SOFTHCA_DECLARE_CMD(ibv_query_srq, ib_uverbs_query_srq);
SOFTHCA_DECLARE_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
SOFTHCA_DECLARE_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd);
SOFTHCA_DECLARE_CMD(ibv_open_qp, ib_uverbs_open_qp);

/* Extended commands: the two headers (rdma-core's struct ex_hdr). */
#define SOFTHCA_DECLARE_CMD_EX(_name, _core)				\
	struct _name {							\
		struct ib_uverbs_cmd_hdr hdr;				\
		struct ib_uverbs_ex_cmd_hdr ex_hdr;			\
		_Alignas(8) __u8 core_payload[sizeof(struct _core)];	\
	};								\
	_Static_assert(sizeof(struct _name) ==				\
			       sizeof(struct ib_uverbs_cmd_hdr) +	\
				       sizeof(struct ib_uverbs_ex_cmd_hdr) + \
				       sizeof(struct _core),		\
		       #_name " size")

SOFTHCA_DECLARE_CMD_EX(ibv_modify_cq, ib_uverbs_ex_modify_cq);
SOFTHCA_DECLARE_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq);

/* A CQ as libibverbs sees it: ibv_create_cq_ex() returns the cq_ex. */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* ---- functions exported by libibverbs.so.1 as IBVERBS_PRIVATE_<PABI> ---- */

/*
 * Allocate alloc_size zeroed bytes with a struct verbs_context at byte
 * context_offset (passed as a pointer value) and initialise it. Closes
 * cmd_fd and returns NULL on failure.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
/* Undo verbs_init_context: frees libibverbs' part, closes cmd_fd/async_fd. */
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* GET_CONTEXT (alloc_ucontext). Returns 0 or an errno value. */
#if SOFTHCA_PABI == 34
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define softhca_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size) \
	ibv_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size)
#elif SOFTHCA_PABI == 57
struct ibv_fd_arr;	/* public verbs.h from v57 on; we pass none */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define softhca_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size) \
	ibv_cmd_get_context(ctx, cmd, cmd_size, NULL, resp, resp_size)
#else
#error "SOFTHCA_PABI: only 34 (rdma-core v36-v56) and 57 (v57-v58) are known"
#endif

/*
 * QUERY_DEVICE (extended if attr_size asks for more than the base attrs).
 * resp may be NULL; else *resp_size is its size in and the valid length out.
 */
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
/* Fills pd->handle and pd->context. */
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);

/* REG_MR: fills vmr->ibv_mr handle, lkey, rkey, context, and vmr->mr_type,
 * vmr->access. DEREG_MR: the provider frees vmr afterwards. */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access,
		   struct verbs_mr *vmr, struct ibv_reg_mr *cmd,
		   size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
/* ADVISE_MR (an ioctl method): the kernel checks the list and acts on it. */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
/* ALLOC_MW: fills mw->context, pd, rkey, handle, type. DEALLOC_MW: the
 * provider frees mw afterwards. */
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
/* REREG_MR: new lkey/rkey from the response (pd only with CHANGE_PD). */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);

/* CREATE_CQ: fills cq->handle, cq->cqe, cq->context; ibv_create_cq() does
 * the rest (channel, cq_context, event counters) on return. */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel,
		      int comp_vector, struct ibv_cq *cq,
		      struct ibv_create_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_create_cq_resp *resp, size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
/*
 * CREATE_CQ for ibv_create_cq_ex(): fills cq->cq's handle, cqe, context;
 * libibverbs then runs verbs_init_cq() itself (the provider must not).
 * The wc_flags timestamps set IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
 * comp_mask past FLAGS and PD is EOPNOTSUPP. cmd_flags: 0 (the
 * ex command, ioctl or write, carries the flag to the kernel).
 */
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq,
			 struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size,
			 uint32_t cmd_flags);
/* RESIZE_CQ: sets cq->cqe from the core response. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
/* EX_MODIFY_CQ: EINVAL for an attr_mask past IBV_CQ_ATTR_MODERATE. */
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);

/* CREATE_QP: fills handle, qp_num, context, pd, cqs, srq, qp_type, state
 * RESET, and attr_ex->cap with what the kernel granted; comp_mask may hold
 * only PD, XRCD and SEND_OPS_FLAGS (else EINVAL). */
int ibv_cmd_create_qp_ex(struct ibv_context *context,
			 struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
/* ibv_modify_qp() sets qp->state itself once the op returns 0. */
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

/* CREATE_SRQ: fills srq->handle, srq->context and attr->attr's max_wr,
 * max_sge from the core response; ibv_create_srq() sets pd, srq_context,
 * the event counters on return. */
/* XRC: domains (shared through a file), XRC SRQs, opening a target QP. */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask,
		       struct ibv_modify_srq *cmd, size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);

/* CREATE_AH: fills ah->handle and ah->context; the driver's response
 * follows resp's core part. ibv_create_ah() sets ah->pd on return. */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
/* ATTACH_MCAST / DETACH_MCAST of a UD QP (the LID is ignored on RoCE). */
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/*
 * Read <ibdev sysfs dir>/<fnfmt...> into buf (trailing newline removed).
 * Returns the length or -1.
 */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Registration. libibverbs dlopen()s lib<name>-rdmav<PABI>.so; the provider's
 * constructor hands over its verbs_device_ops. The PABI number is part of the
 * symbol name so a provider can never bind to a libibverbs of another PABI.
 */
#if SOFTHCA_PABI == 34
void verbs_register_driver_34(const struct verbs_device_ops *ops);
#define softhca_register_driver verbs_register_driver_34
#else
void verbs_register_driver_57(const struct verbs_device_ops *ops);
#define softhca_register_driver verbs_register_driver_57
#endif

/* ---- layout checks (LP64: x86_64 and aarch64) --------------------------- */

_Static_assert(sizeof(void *) == 8, "provider-abi.h assumes LP64");
_Static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
_Static_assert(offsetof(struct verbs_match_ent, kind) == 20,
	       "verbs_match_ent.kind");
_Static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
_Static_assert(offsetof(struct verbs_device_ops, uninit_device) == 64,
	       "verbs_device_ops.uninit_device");
_Static_assert(offsetof(struct verbs_device, device) == 0,
	       "verbs_device.device must be first");
_Static_assert(sizeof(struct verbs_device) == sizeof(struct ibv_device) + 48,
	       "verbs_device");
_Static_assert(sizeof(struct verbs_context_ops) ==
		       VERBS_CONTEXT_OPS_COUNT * sizeof(void (*)(void)),
	       "verbs_context_ops");
_Static_assert(sizeof(struct ibv_get_context) == 16, "ibv_get_context");
_Static_assert(sizeof(struct ibv_alloc_pd) == 16, "ibv_alloc_pd");
_Static_assert(sizeof(struct ibv_query_port) == 24, "ibv_query_port");
_Static_assert(sizeof(struct verbs_mr) == sizeof(struct ibv_mr) + 8,
	       "verbs_mr");
_Static_assert(offsetof(struct verbs_qp, comp_mask) ==
		       sizeof(struct ibv_qp_ex),
	       "verbs_qp.comp_mask follows the union");

#endif /* SOFTHCA_PROVIDER_ABI_H */
