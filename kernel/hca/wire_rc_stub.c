// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the RC transport's receive side on the wire, until
 * wire_rc_*.c lands: no RC QP takes a packet from the wire yet, so every
 * RC packet is dropped and counted as one no QP took.
 */
#include "wire.h"

void hca_wire_rc_recv(struct hca_exec_ctx *ctx, struct hca *hca,
		      struct hca_wire_pkt *pkt)
{
	hca_wire_count(hca, HCA_HCNT_WIRE_RX_UNKNOWN_QPN, 1);
	kfree_skb(pkt->skb);
}
