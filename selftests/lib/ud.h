/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UD data-path helpers for the softhca selftests: datagram endpoints (a
 * UD QP in RTS with its CQs and a registered buffer) on shca0 or shca1,
 * address handles to a GID, posting, the device's counters from sysfs,
 * and checks of a receive: its work completion field by field and its
 * 40-byte GRH area as the RoCE v2 IPv4 header it must hold.
 *
 * Functions that can fail return 0 or a negative errno and leave a
 * description in rc_err (rc.h), for TH_LOG.
 */
#ifndef SOFTHCA_SELFTEST_UD_H
#define SOFTHCA_SELFTEST_UD_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "rc.h"

#define UD_GRH		40		/* the GRH area of every receive */
#define UD_QKEY		0x11111111u
#define UD_MTU		1024		/* the veths' 1500: IB MTU 1024 */
#define UD_BUF		(1 << 20)
#define UD_RECV_OFF	(UD_BUF / 2)	/* receive buffers from here on */

struct ud_end {
	const char *dev;		/* shca0 or shca1 */
	const char *ip;			/* the address of its GID */
	const char *netdev;		/* veth0 or veth1 */
	struct ibv_context *ctx;
	bool own_ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
	struct ibv_qp_cap cap;		/* granted */
	uint32_t qkey;
};

/*
 * Open a UD endpoint on @dev (its GID of @ip), in @ctx if not NULL (not
 * closed by ud_end_close()), its QP in RTS with Q_Key @qkey.
 */
int ud_end_open(struct ud_end *e, const char *dev, struct ibv_context *ctx,
		uint32_t qkey);
/* The kind of CQs ud_end_open() makes (default: ibv_create_cq). */
extern struct rc_cq_kind ud_cq_kind;
void ud_end_close(struct ud_end *e);

/*
 * Two endpoints in topology @topo (rc.h: one context, two contexts, shca0
 * and shca1 with shca1 added if needed) and end i's AH to end !i in ah[i].
 */
struct ud_pair {
	enum rc_topo topo;
	struct ud_end e[2];
	struct ibv_ah *ah[2];
	int shca1_added;
};

int ud_pair_open(struct ud_pair *p, enum rc_topo topo);
void ud_pair_close(struct ud_pair *p);

/* RESET -> INIT -> RTR -> RTS with @qkey. */
int ud_qp_rts(struct ibv_qp *qp, uint32_t qkey);
/* An AH on @e's PD to @dgid from @e's GID (hop limit 64, @tclass, @sl). */
struct ibv_ah *ud_ah(struct ud_end *e, const union ibv_gid *dgid,
		     uint8_t tclass, uint8_t sl);

/*
 * One datagram of @len bytes of @e's buffer at @off to @dqpn through @ah,
 * signaled; imm if @op is SEND_WITH_IMM. ibv_post_send's return value.
 */
int ud_send(struct ud_end *e, struct ibv_ah *ah, uint32_t dqpn, uint32_t qkey,
	    enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
	    unsigned int flags, uint32_t imm_host);
/* One receive of @len bytes at @off of @e's buffer. */
int ud_recv(struct ud_end *e, uint64_t wr_id, uint32_t off, uint32_t len);

/* Counter @name of @dev's port 1 (sysfs hw_counters, 20 ms after the call), or -1. */
long long ud_counter(const char *dev, const char *name);

/*
 * The GRH area at @grh of a datagram of @len payload bytes (@imm: with an
 * immediate) from @src to @dst (IPv4 GIDs) with traffic class @tclass and
 * hop limit @ttl: 20 zero bytes, then the IPv4 header (version 4, IHL 5,
 * DF, protocol UDP, the lengths of a RoCE v2 packet, a valid checksum).
 * 0, or 1 with the first mismatch in rc_err.
 */
int ud_grh_check(const uint8_t *grh, const union ibv_gid *src,
		 const union ibv_gid *dst, uint32_t len, bool imm,
		 uint8_t tclass, uint8_t ttl);

/* What a UD receive from @from of @len bytes must say (rc_wc_check()). */
struct rc_wc_want ud_want_recv(uint64_t wr_id, uint32_t len,
			       const struct ud_end *e,
			       const struct ud_end *from);

#endif
