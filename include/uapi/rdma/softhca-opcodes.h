/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca send WQE opcodes: the one table of what each opcode is and does.
 * The provider's and the kernel's WQE builder (<rdma/softhca-wqe.h>), the
 * CQE decoder (<rdma/softhca-cqe.h>) and the HCA model's requester,
 * responder and CQE writer read it instead of switching on opcodes.
 *
 * SOFTHCA_OPCODE_LIST below is the only list of opcodes. It expands, in
 * this header only, into the SOFTHCA_OPCODE_* numbers, the table
 * softhca_opcodes[] indexed by opcode, the verbs WR opcode -> WQE opcode
 * map and static assertions on every row (checked wherever the header is
 * compiled). A new opcode is one row; a new property is one column (a
 * packet opcode, a transport) the macros below pass on.
 */
#ifndef SOFTHCA_OPCODES_H
#define SOFTHCA_OPCODES_H

#include <linux/types.h>
#include <rdma/softhca-enc.h>
#include <rdma/softhca-queue.h>

/*
 * Memory access rights: what an MKey grants, a QP allows remote requests
 * to do, and an opcode needs. kernel/hca/hca.h's HCA_ACCESS_* are these
 * (asserted there).
 */
#define SOFTHCA_ACCESS_NONE		0
#define SOFTHCA_ACCESS_LOCAL_WRITE	(1U << 0)
#define SOFTHCA_ACCESS_REMOTE_WRITE	(1U << 1)
#define SOFTHCA_ACCESS_REMOTE_READ	(1U << 2)
#define SOFTHCA_ACCESS_REMOTE_ATOMIC	(1U << 3)
#define SOFTHCA_ACCESS_LOCAL_READ	(1U << 4)	/* every MKey grants it */
#define SOFTHCA_ACCESS_MW_BIND		(1U << 5)	/* an MR windows bind to */

/*
 * Verbs WR opcodes: ibv_wr_opcode and ib_wr_opcode have these values
 * (each side asserts it where it converts).
 */
enum {
	SOFTHCA_WR_NONE			= -1,	/* no WR posts the opcode */
	SOFTHCA_WR_RDMA_WRITE		= 0,
	SOFTHCA_WR_RDMA_WRITE_WITH_IMM	= 1,
	SOFTHCA_WR_SEND			= 2,
	SOFTHCA_WR_SEND_WITH_IMM	= 3,
	SOFTHCA_WR_RDMA_READ		= 4,
	SOFTHCA_WR_ATOMIC_CMP_AND_SWP	= 5,
	SOFTHCA_WR_ATOMIC_FETCH_AND_ADD	= 6,
	SOFTHCA_WR_LOCAL_INV		= 7,
	SOFTHCA_WR_BIND_MW		= 8,
	SOFTHCA_WR_SEND_WITH_INV	= 9,
	SOFTHCA_WR_REG_MR		= 0x20,	/* kernel only (IB_WR_REG_MR) */
	SOFTHCA_WR_CNT			= 0x21,	/* above every WR opcode */
};

/* The WR opcodes that have a row (checked below). */
#define SOFTHCA_WR_ROWS	(((1ULL << SOFTHCA_WR_LOCAL_INV) - 1) |	\
			 1ULL << SOFTHCA_WR_LOCAL_INV |			\
			 1ULL << SOFTHCA_WR_BIND_MW |			\
			 1ULL << SOFTHCA_WR_SEND_WITH_INV |		\
			 1ULL << SOFTHCA_WR_REG_MR)

/*
 * What an opcode does to an MKey (the opcode table's mk column): register
 * the one its UMR segment names (kernel QPs only: fast registration),
 * invalidate the key its ctrl.imm carries at the requester (LOCAL_INV),
 * have the responder invalidate it after the SEND (SEND_WITH_INV), or bind
 * the memory window its bind segment names to a range of an MR (BIND_MW).
 */
#define SOFTHCA_MKOP_NONE		0
#define SOFTHCA_MKOP_REG		1
#define SOFTHCA_MKOP_LINV		2
#define SOFTHCA_MKOP_RINV		3
#define SOFTHCA_MKOP_BIND		4

/*
 * Transports (QP service types) of the opcode table's rc / uc / ud
 * columns: the opcodes a QP of that transport may post. The GSI QP is a
 * datagram QP. An XRC initiator posts what RC posts (IBA 9.8.x): the rc
 * column is both; its WQEs carry the XRC segment after ctrl.
 */
#define SOFTHCA_TP_RC			(1U << 0)
#define SOFTHCA_TP_UD			(1U << 1)
#define SOFTHCA_TP_UC			(1U << 2)
#define SOFTHCA_TP_XRC			(1U << 3)

/* An opcode without a work completion (NOP), or without a responder CQE. */
#define SOFTHCA_WC_NONE			(-1)
#define SOFTHCA_CQE_NONE		SOFTHCA_CQE_INVALID

/*
 * The table. Columns:
 *   opcode  ctrl opmod_idx_opcode 7:0 (mlx5 numbering)
 *   wr      the SOFTHCA_WR_* that posts it
 *   rc, uc, ud  posted by QPs of that transport (1: yes); a datagram WQE
 *           has the datagram segment right after ctrl, before the segments
 *           below; UC has no READ, atomics or SEND_WITH_INV (IBA 9.2: no
 *           such packets on UC), and no fast registration (kernel ULPs
 *           register on RC)
 *   segments after the control segment, in this order (1: present):
 *     ra    remote address segment
 *     at    atomic segment (then exactly one 8-byte data pointer)
 *     da    data pointer segments: the message's local SGEs
 *     in    or one inline segment instead (IBV_SEND_INLINE allowed)
 *   imm     carries ctrl.imm: to the responder's CQE, echoed in the
 *           requester's
 *   rv      consumes a receive WQE at the responder (and completes it there)
 *   cmp     compare-and-swap: the atomic segment's compare is used
 *   mk      SOFTHCA_MKOP_*: what it does to an MKey (ctrl.imm names the
 *           key of LINV and RINV; REG has a UMR segment and the page list
 *           pointer, BIND a bind segment, instead of the segments above)
 *   local   SOFTHCA_ACCESS_* the requester's SGEs need
 *   remote  SOFTHCA_ACCESS_* the responder checks on the QP and the rkey;
 *           also what the responder does: NONE a SEND (or nothing, if it
 *           consumes no receive WQE either: it completes at the requester),
 *           REMOTE_WRITE places, REMOTE_READ returns, REMOTE_ATOMIC
 *           operates on memory
 *   wc      the requester's SOFTHCA_WC_* opcode
 *   cqe     the responder's CQE opcode (SOFTHCA_CQE_RESP_*)
 */
#define SOFTHCA_OPCODE_LIST(X)						\
/*	name            opcode wr                    rc uc ud ra at da in imm rv cmp mk    local        remote         wc          cqe */ \
	X(NOP,            0x00, NONE,                  1, 1, 0, 0, 0, 0, 0, 0,  0, 0,  NONE, NONE,        NONE,          NONE,       NONE)          \
	X(SEND_INV,       0x01, SEND_WITH_INV,         1, 0, 0, 0, 0, 1, 1, 0,  1, 0,  RINV, LOCAL_READ,  NONE,          SEND,       RESP_SEND_INV) \
	X(RDMA_WRITE,     0x08, RDMA_WRITE,            1, 1, 0, 1, 0, 1, 1, 0,  0, 0,  NONE, LOCAL_READ,  REMOTE_WRITE,  RDMA_WRITE, NONE)          \
	X(RDMA_WRITE_IMM, 0x09, RDMA_WRITE_WITH_IMM,   1, 1, 0, 1, 0, 1, 1, 1,  1, 0,  NONE, LOCAL_READ,  REMOTE_WRITE,  RDMA_WRITE, RESP_WR_IMM)   \
	X(SEND,           0x0a, SEND,                  1, 1, 1, 0, 0, 1, 1, 0,  1, 0,  NONE, LOCAL_READ,  NONE,          SEND,       RESP_SEND)     \
	X(SEND_IMM,       0x0b, SEND_WITH_IMM,         1, 1, 1, 0, 0, 1, 1, 1,  1, 0,  NONE, LOCAL_READ,  NONE,          SEND,       RESP_SEND_IMM) \
	X(RDMA_READ,      0x10, RDMA_READ,             1, 0, 0, 1, 0, 1, 0, 0,  0, 0,  NONE, LOCAL_WRITE, REMOTE_READ,   RDMA_READ,  NONE)          \
	X(ATOMIC_CS,      0x11, ATOMIC_CMP_AND_SWP,    1, 0, 0, 1, 1, 1, 0, 0,  0, 1,  NONE, LOCAL_WRITE, REMOTE_ATOMIC, COMP_SWAP,  NONE)          \
	X(ATOMIC_FA,      0x12, ATOMIC_FETCH_AND_ADD,  1, 0, 0, 1, 1, 1, 0, 0,  0, 0,  NONE, LOCAL_WRITE, REMOTE_ATOMIC, FETCH_ADD,  NONE)          \
	X(BIND_MW,        0x18, BIND_MW,               1, 1, 0, 0, 0, 0, 0, 0,  0, 0,  BIND, NONE,        NONE,          BIND_MW,    NONE)          \
	X(LOCAL_INV,      0x1b, LOCAL_INV,             1, 1, 0, 0, 0, 0, 0, 0,  0, 0,  LINV, NONE,        NONE,          LOCAL_INV,  NONE)          \
	X(UMR,            0x25, REG_MR,                1, 0, 0, 0, 0, 0, 0, 0,  0, 0,  REG,  NONE,        NONE,          REG_MR,     NONE)

/* Opcodes the table has room for (the highest mlx5 send opcode is 0x2f). */
#define SOFTHCA_OPCODE_CNT		0x30

/* softhca_opcode_info.segs */
#define SOFTHCA_SEG_RADDR		(1U << 0)
#define SOFTHCA_SEG_ATOMIC		(1U << 1)
#define SOFTHCA_SEG_DATA		(1U << 2)
#define SOFTHCA_SEG_INLINE		(1U << 3)

/* softhca_opcode_info.flags */
#define SOFTHCA_OPF_IMM			(1U << 0)
#define SOFTHCA_OPF_RECV		(1U << 1)
#define SOFTHCA_OPF_COMPARE		(1U << 2)

/* The SOFTHCA_OPCODE_* numbers. */
#define SOFTHCA_OPCODE_ENUM(name_, op_, ...)	SOFTHCA_OPCODE_##name_ = (op_),
enum { SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_ENUM) };
#undef SOFTHCA_OPCODE_ENUM

/* One row of the table. */
struct softhca_opcode_info {
	const char *name;	/* "SEND_IMM"; NULL: no such opcode */
	__u8 opcode;		/* SOFTHCA_OPCODE_*: its own index */
	__s8 wr;		/* SOFTHCA_WR_* */
	__u8 tp;		/* SOFTHCA_TP_*: transports that post it */
	__u8 segs;		/* SOFTHCA_SEG_* */
	__u8 flags;		/* SOFTHCA_OPF_* */
	__u8 mkop;		/* SOFTHCA_MKOP_* */
	__u8 local_access;	/* SOFTHCA_ACCESS_* */
	__u8 remote_access;	/* SOFTHCA_ACCESS_* */
	__u8 resp_cqe;		/* SOFTHCA_CQE_RESP_*, SOFTHCA_CQE_NONE */
	__s16 wc_opcode;	/* SOFTHCA_WC_*, SOFTHCA_WC_NONE */
};

#define SOFTHCA_OPCODE_ROW(name_, op_, wr_, rc, uc, ud, ra, at, da, in, \
			   imm, rv, cmp, mk, local, remote, wc, cqe)	\
	[op_] = {							\
		.name = #name_,						\
		.opcode = (op_),					\
		.wr = SOFTHCA_WR_##wr_,					\
		.tp = (rc) * (SOFTHCA_TP_RC | SOFTHCA_TP_XRC) |	\
		      (uc) * SOFTHCA_TP_UC | (ud) * SOFTHCA_TP_UD,	\
		.segs = (ra) * SOFTHCA_SEG_RADDR |			\
			(at) * SOFTHCA_SEG_ATOMIC |			\
			(da) * SOFTHCA_SEG_DATA |			\
			(in) * SOFTHCA_SEG_INLINE,			\
		.flags = (imm) * SOFTHCA_OPF_IMM |			\
			 (rv) * SOFTHCA_OPF_RECV |			\
			 (cmp) * SOFTHCA_OPF_COMPARE,			\
		.mkop = SOFTHCA_MKOP_##mk,				\
		.local_access = SOFTHCA_ACCESS_##local,			\
		.remote_access = SOFTHCA_ACCESS_##remote,		\
		.resp_cqe = SOFTHCA_CQE_##cqe,				\
		.wc_opcode = SOFTHCA_WC_##wc,				\
	},
static const struct softhca_opcode_info softhca_opcodes[SOFTHCA_OPCODE_CNT] = {
	SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_ROW)
};
#undef SOFTHCA_OPCODE_ROW

/*
 * Build-time checks of every row: the layout the WQE builder writes and
 * the HCA parses, and the combinations the requester and responder take.
 */
#define SOFTHCA_OPCODE_ROW_CHECK(name_, op_, wr_, rc, uc, ud, ra, at, da, \
				 in, imm, rv, cmp, mk, local, remote, wc, cqe) \
	_Static_assert((op_) < SOFTHCA_OPCODE_CNT,			\
		       #name_ ": opcode beyond the table");		\
	_Static_assert((rc),						\
		       #name_ ": every opcode runs on RC (the WQE builder " \
		       "checks the transport of datagram QPs only)");	\
	_Static_assert(!(ud) || (!(ra) && !(at) && (rv)),		\
		       #name_ ": a datagram is a SEND: no remote memory"); \
	_Static_assert(!(uc) || (SOFTHCA_ACCESS_##remote ==		\
				 SOFTHCA_ACCESS_NONE ||			\
				 SOFTHCA_ACCESS_##remote ==		\
				 SOFTHCA_ACCESS_REMOTE_WRITE),		\
		       #name_ ": UC has no READ and no atomics");	\
	_Static_assert(!(uc) || (SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_RINV && \
				 SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_REG), \
		       #name_ ": UC has no SEND_WITH_INV, no UMR");	\
	_Static_assert(SOFTHCA_WR_##wr_ == SOFTHCA_WR_NONE ||		\
		       (SOFTHCA_WR_##wr_ >= 0 &&			\
			SOFTHCA_WR_##wr_ < SOFTHCA_WR_CNT),		\
		       #name_ ": WR opcode out of range");		\
	_Static_assert(!(at) || ((ra) && (da) && !(in) &&		\
		       SOFTHCA_ACCESS_##remote == SOFTHCA_ACCESS_REMOTE_ATOMIC), \
		       #name_ ": an atomic is raddr, atomic, one pointer"); \
	_Static_assert((SOFTHCA_ACCESS_##remote ==			\
			SOFTHCA_ACCESS_REMOTE_ATOMIC) == (!!(at)),	\
		       #name_ ": remote atomics carry an atomic segment"); \
	_Static_assert(!(in) || (da), #name_ ": inline replaces data"); \
	_Static_assert(!(cmp) || (at), #name_ ": compare is atomic");	\
	_Static_assert(!(imm) || (rv),					\
		       #name_ ": an immediate needs a receive WQE");	\
	_Static_assert((!!(rv)) == (SOFTHCA_CQE_##cqe != SOFTHCA_CQE_NONE), \
		       #name_ ": a responder CQE iff a receive WQE");	\
	_Static_assert(!(rv) ||						\
		       SOFTHCA_ACCESS_##remote == SOFTHCA_ACCESS_NONE ||	\
		       SOFTHCA_ACCESS_##remote == SOFTHCA_ACCESS_REMOTE_WRITE, \
		       #name_ ": only SENDs and WRITEs consume receives"); \
	_Static_assert((!!(ra)) ==					\
		       (SOFTHCA_ACCESS_##remote != SOFTHCA_ACCESS_NONE),	\
		       #name_ ": remote access iff a remote address");	\
	_Static_assert((SOFTHCA_ACCESS_##remote &			\
			(SOFTHCA_ACCESS_##remote - 1)) == 0 &&		\
		       (SOFTHCA_ACCESS_##remote &			\
			~(SOFTHCA_ACCESS_REMOTE_WRITE |			\
			  SOFTHCA_ACCESS_REMOTE_READ |			\
			  SOFTHCA_ACCESS_REMOTE_ATOMIC)) == 0,		\
		       #name_ ": at most one remote right");		\
	_Static_assert((!!(da)) ==					\
		       (SOFTHCA_ACCESS_##local != SOFTHCA_ACCESS_NONE),	\
		       #name_ ": local access iff local SGEs");		\
	_Static_assert(!(da) ||						\
		       (SOFTHCA_ACCESS_##local ==			\
			SOFTHCA_ACCESS_LOCAL_WRITE) ==			\
		       (SOFTHCA_ACCESS_##remote ==			\
			SOFTHCA_ACCESS_REMOTE_READ ||			\
			SOFTHCA_ACCESS_##remote ==			\
			SOFTHCA_ACCESS_REMOTE_ATOMIC),			\
		       #name_ ": local SGEs are written iff data returns"); \
	_Static_assert(SOFTHCA_WR_##wr_ == SOFTHCA_WR_NONE ||		\
		       SOFTHCA_WC_##wc != SOFTHCA_WC_NONE,		\
		       #name_ ": a WR completes with a work completion");	\
	_Static_assert(SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_RINV ||	\
		       ((rv) && !(imm) &&				\
			SOFTHCA_ACCESS_##remote == SOFTHCA_ACCESS_NONE),	\
		       #name_ ": the key to invalidate comes with a SEND"); \
	_Static_assert((SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_LINV &&	\
			SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_REG &&	\
			SOFTHCA_MKOP_##mk != SOFTHCA_MKOP_BIND) ||	\
		       (!(rv) && !(da) && !(ud) &&			\
			SOFTHCA_ACCESS_##remote == SOFTHCA_ACCESS_NONE),	\
		       #name_ ": a local MKey operation, on RC's SQ");
SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_ROW_CHECK)
#undef SOFTHCA_OPCODE_ROW_CHECK

/* No opcode twice, no WR twice, and every WR below SOFTHCA_WR_CNT. */
#define SOFTHCA_OPCODE_SUM(name_, op_, ...)	+ (1ULL << (op_))
#define SOFTHCA_OPCODE_OR(name_, op_, ...)	| (1ULL << (op_))
#define SOFTHCA_WR_BIT(wr_)						\
	(SOFTHCA_WR_##wr_ >= 0 ? 1ULL << (SOFTHCA_WR_##wr_ & 63) : 0)
#define SOFTHCA_WR_SUM(name_, op_, wr_, ...)	+ SOFTHCA_WR_BIT(wr_)
#define SOFTHCA_WR_OR(name_, op_, wr_, ...)	| SOFTHCA_WR_BIT(wr_)
_Static_assert(SOFTHCA_OPCODE_CNT <= 64, "opcodes fit the checks' mask");
_Static_assert((0 SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_SUM)) ==
	       (0 SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_OR)),
	       "an opcode has two rows");
_Static_assert((0 SOFTHCA_OPCODE_LIST(SOFTHCA_WR_SUM)) ==
	       (0 SOFTHCA_OPCODE_LIST(SOFTHCA_WR_OR)),
	       "a WR opcode posts two opcodes");
_Static_assert((0 SOFTHCA_OPCODE_LIST(SOFTHCA_WR_OR)) == SOFTHCA_WR_ROWS,
	       "a WR opcode of SOFTHCA_WR_ROWS has no row, or one more has");
_Static_assert(SOFTHCA_WR_CNT <= 64, "WR opcodes fit the checks' mask");
#undef SOFTHCA_OPCODE_SUM
#undef SOFTHCA_OPCODE_OR
#undef SOFTHCA_WR_BIT
#undef SOFTHCA_WR_SUM
#undef SOFTHCA_WR_OR

/* The row of @opcode, or NULL if softhca has no such opcode. */
static inline const struct softhca_opcode_info *softhca_opcode_info(__u32 opcode)
{
	const struct softhca_opcode_info *op;

	if (opcode >= SOFTHCA_OPCODE_CNT)
		return 0;
	op = &softhca_opcodes[opcode];
	return op->name ? op : 0;
}

/* The row of @opcode if a QP of transport @tp (SOFTHCA_TP_*) may post it. */
static inline const struct softhca_opcode_info *
softhca_opcode_on(__u32 opcode, __u32 tp)
{
	const struct softhca_opcode_info *op;

	if (opcode >= SOFTHCA_OPCODE_CNT)
		return 0;
	op = &softhca_opcodes[opcode];
	return op->tp & tp ? op : 0;
}

/* The name of @opcode for debug output. */
static inline const char *softhca_opcode_name(__u32 opcode)
{
	const struct softhca_opcode_info *op = softhca_opcode_info(opcode);

	return op ? op->name : "unknown";
}

/* The WQE opcode a verbs WR opcode posts, or -1 if softhca runs no such WR. */
#define SOFTHCA_OPCODE_OF_WR(name_, op_, wr_, ...)			\
	wr == SOFTHCA_WR_##wr_ ? (op_) :
static inline int softhca_wr_opcode(int wr)
{
	if (wr < 0 || wr >= SOFTHCA_WR_CNT)
		return -1;
	return SOFTHCA_OPCODE_LIST(SOFTHCA_OPCODE_OF_WR) (-1);
}
#undef SOFTHCA_OPCODE_OF_WR

/*
 * Does @op run at the requester alone? (It neither touches remote memory
 * nor consumes a receive: NOP, BIND_MW, LOCAL_INV, UMR.)
 */
static inline int softhca_opcode_is_local(const struct softhca_opcode_info *op)
{
	return !op->remote_access && !(op->flags & SOFTHCA_OPF_RECV);
}

/*
 * Does @op's ctrl.imm carry something: an immediate, or the key a
 * LOCAL_INV or SEND_WITH_INV invalidates?
 */
static inline int softhca_opcode_has_imm(const struct softhca_opcode_info *op)
{
	return (op->flags & SOFTHCA_OPF_IMM) ||
	       op->mkop == SOFTHCA_MKOP_LINV || op->mkop == SOFTHCA_MKOP_RINV;
}

#endif /* SOFTHCA_OPCODES_H */
