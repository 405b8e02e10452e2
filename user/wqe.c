// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wqe.c - WQE and segment encoding. See wqe.h for the contract of each
 * function and Documentation/queue-formats.md for the layouts.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <rdma/softhca-enc.h>

#include "wqe.h"

int softhca_wr_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return SOFTHCA_OPCODE_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return SOFTHCA_OPCODE_RDMA_WRITE_IMM;
	case IBV_WR_SEND:
		return SOFTHCA_OPCODE_SEND;
	case IBV_WR_SEND_WITH_IMM:
		return SOFTHCA_OPCODE_SEND_IMM;
	case IBV_WR_RDMA_READ:
		return SOFTHCA_OPCODE_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return SOFTHCA_OPCODE_ATOMIC_CS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return SOFTHCA_OPCODE_ATOMIC_FA;
	default:
		return -1;
	}
}

uint8_t softhca_fm_ce_se(unsigned int send_flags, bool sig_all)
{
	return softhca_enc_fm_ce_se(sig_all || (send_flags & IBV_SEND_SIGNALED),
				    send_flags & IBV_SEND_SOLICITED,
				    send_flags & IBV_SEND_FENCE);
}

void softhca_set_ctrl_seg(struct softhca_wqe_ctrl_seg *ctrl, uint8_t opcode,
			  uint8_t opmod, uint16_t idx, uint32_t qpn, uint8_t ds,
			  uint8_t fm_ce_se, __be32 imm)
{
	ctrl->opmod_idx_opcode = htobe32(softhca_enc_ctrl_opcode(opmod, idx, opcode));
	ctrl->qpn_ds = htobe32(softhca_enc_ctrl_qpn_ds(qpn, ds));
	ctrl->signature = 0;
	ctrl->rsvd9[0] = 0;
	ctrl->rsvd9[1] = 0;
	ctrl->fm_ce_se = fm_ce_se;
	ctrl->imm = imm;
}

void softhca_set_raddr_seg(struct softhca_wqe_raddr_seg *seg, uint64_t raddr,
			   uint32_t rkey)
{
	seg->raddr = htobe64(raddr);
	seg->rkey = htobe32(rkey);
	seg->reserved = 0;
}

void softhca_set_atomic_seg(struct softhca_wqe_atomic_seg *seg,
			    uint64_t swap_add, uint64_t compare)
{
	seg->swap_add = htobe64(swap_add);
	seg->compare = htobe64(compare);
}

void softhca_set_data_seg(struct softhca_wqe_data_seg *seg, uint32_t byte_count,
			  uint32_t lkey, uint64_t addr)
{
	seg->byte_count = htobe32(byte_count);
	seg->lkey = htobe32(lkey);
	seg->addr = htobe64(addr);
}

void softhca_set_sentinel_seg(struct softhca_wqe_data_seg *seg)
{
	softhca_set_data_seg(seg, 0, SOFTHCA_INVALID_LKEY, 0);
}

uint32_t softhca_set_data_segs(const struct softhca_ring *sq, uint32_t off,
			       const struct ibv_sge *sg, int num_sge)
{
	uint32_t ds = 0;

	off &= sq->size - 1;
	for (int i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		/* 16-byte segments at 16-aligned offsets never straddle the end. */
		softhca_set_data_seg((struct softhca_wqe_data_seg *)(sq->buf + off),
				     sg[i].length, sg[i].lkey, sg[i].addr);
		off = softhca_ring_advance(sq, off, SOFTHCA_DS_SIZE);
		ds++;
	}
	return ds;
}

/* Copy len bytes (src, or zeros if src is NULL) to the ring at off, split
 * at the end; returns the offset after them.
 */
static uint32_t ring_put(const struct softhca_ring *sq, uint32_t off,
			 const void *src, uint32_t len)
{
	while (len) {
		uint32_t n = softhca_ring_to_end(sq, off);

		if (n > len)
			n = len;
		if (src) {
			memcpy(sq->buf + off, src, n);
			src = (const uint8_t *)src + n;
		} else {
			memset(sq->buf + off, 0, n);
		}
		off = softhca_ring_advance(sq, off, n);
		len -= n;
	}
	return off;
}

int softhca_set_inline_data(const struct softhca_ring *sq, uint32_t off,
			    const struct ibv_sge *sg, int num_sge,
			    uint32_t max_inline)
{
	struct softhca_wqe_inline_seg *hdr;
	uint64_t total = 0;
	uint32_t used;

	for (int i = 0; i < num_sge; i++)
		total += sg[i].length;
	if (total > max_inline)
		return -ENOMEM;
	if (!total)
		return 0;

	off &= sq->size - 1;
	hdr = (struct softhca_wqe_inline_seg *)(sq->buf + off);
	hdr->byte_count = htobe32((uint32_t)total | SOFTHCA_INLINE_SEG);
	off = softhca_ring_advance(sq, off, sizeof(*hdr));
	for (int i = 0; i < num_sge; i++)
		off = ring_put(sq, off, (const void *)(uintptr_t)sg[i].addr,
			       sg[i].length);

	used = sizeof(*hdr) + (uint32_t)total;
	ring_put(sq, off, NULL, -used & (SOFTHCA_DS_SIZE - 1));
	return (used + SOFTHCA_DS_SIZE - 1) / SOFTHCA_DS_SIZE;
}

static uint8_t xor_bytes(const uint8_t *p, size_t len)
{
	uint8_t x = 0;

	while (len--)
		x ^= *p++;
	return x;
}

uint8_t softhca_calc_sig(const void *p, size_t len)
{
	return (uint8_t)~xor_bytes(p, len);
}

uint8_t softhca_sign_send_wqe(const struct softhca_ring *sq, uint32_t off)
{
	struct softhca_wqe_ctrl_seg *ctrl;
	uint32_t len, first;
	uint8_t x;

	off &= sq->size - 1;
	ctrl = (struct softhca_wqe_ctrl_seg *)(sq->buf + off);
	ctrl->signature = 0;
	len = (be32toh(ctrl->qpn_ds) & SOFTHCA_WQE_CTRL_DS_MASK) * SOFTHCA_DS_SIZE;
	first = softhca_ring_to_end(sq, off);
	if (first > len)
		first = len;
	x = xor_bytes(sq->buf + off, first);
	x ^= xor_bytes(sq->buf, len - first);
	ctrl->signature = (uint8_t)~x;
	return ctrl->signature;
}

uint32_t softhca_recv_max_gs(uint32_t stride, bool with_sig)
{
	uint32_t n = stride / sizeof(struct softhca_wqe_data_seg);

	return with_sig ? (n ? n - 1 : 0) : n;
}

int softhca_set_recv_wqe(void *wqe, uint32_t stride, bool with_sig,
			 const struct ibv_sge *sg, int num_sge,
			 uint32_t qpn, uint16_t idx)
{
	uint32_t max_gs = softhca_recv_max_gs(stride, with_sig);
	struct softhca_wqe_data_seg *dseg = wqe;
	uint32_t j = 0;

	if (num_sge < 0 || (uint32_t)num_sge > max_gs)
		return -EINVAL;

	if (with_sig) {
		memset(wqe, 0, stride);
		dseg++;
	}
	for (int i = 0; i < num_sge; i++) {
		if (!sg[i].length)
			continue;
		softhca_set_data_seg(&dseg[j++], sg[i].length, sg[i].lkey, sg[i].addr);
	}
	if (j < max_gs)
		softhca_set_sentinel_seg(&dseg[j]);

	if (with_sig) {
		struct softhca_rwqe_sig *sig = wqe;
		__be32 qpn_be = htobe32(qpn);
		__be16 idx_be = htobe16(idx);
		uint8_t x;

		x = xor_bytes(wqe, stride);
		x ^= xor_bytes((const uint8_t *)&qpn_be, sizeof(qpn_be));
		x ^= xor_bytes((const uint8_t *)&idx_be, sizeof(idx_be));
		sig->signature = (uint8_t)~x;
	}
	return (int)j;
}

bool softhca_wq_overflow(uint32_t head, uint32_t tail, uint32_t nreq,
			 uint32_t max_post)
{
	uint64_t outstanding = (uint32_t)(head - tail);

	return outstanding + nreq >= max_post;
}
