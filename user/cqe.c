// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cqe.c - CQE ownership, CQE -> ibv_wc, CQ arm word. See cqe.h and
 * Documentation/queue-formats.md.
 */
#include <errno.h>
#include <string.h>

#include <rdma/softhca-enc.h>

#include "cqe.h"
#include "mmio.h"

/* The shared encoders use the IBA numbers, which are libibverbs' too. */
_Static_assert((int)SOFTHCA_WC_LOC_LEN_ERR == (int)IBV_WC_LOC_LEN_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_QP_OP_ERR == (int)IBV_WC_LOC_QP_OP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_PROT_ERR == (int)IBV_WC_LOC_PROT_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_WR_FLUSH_ERR == (int)IBV_WC_WR_FLUSH_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_MW_BIND_ERR == (int)IBV_WC_MW_BIND_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_BAD_RESP_ERR == (int)IBV_WC_BAD_RESP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_LOC_ACCESS_ERR == (int)IBV_WC_LOC_ACCESS_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_INV_REQ_ERR == (int)IBV_WC_REM_INV_REQ_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_ACCESS_ERR == (int)IBV_WC_REM_ACCESS_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_OP_ERR == (int)IBV_WC_REM_OP_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_RETRY_EXC_ERR == (int)IBV_WC_RETRY_EXC_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_RNR_RETRY_EXC_ERR == (int)IBV_WC_RNR_RETRY_EXC_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_REM_ABORT_ERR == (int)IBV_WC_REM_ABORT_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_GENERAL_ERR == (int)IBV_WC_GENERAL_ERR, "wc status");
_Static_assert((int)SOFTHCA_WC_SEND == (int)IBV_WC_SEND, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RDMA_WRITE == (int)IBV_WC_RDMA_WRITE, "wc opcode");
_Static_assert((int)SOFTHCA_WC_RDMA_READ == (int)IBV_WC_RDMA_READ, "wc opcode");
_Static_assert((int)SOFTHCA_WC_COMP_SWAP == (int)IBV_WC_COMP_SWAP, "wc opcode");
_Static_assert((int)SOFTHCA_WC_FETCH_ADD == (int)IBV_WC_FETCH_ADD, "wc opcode");

bool softhca_cqe_owned_by_sw(const struct softhca_cqe *cqe, uint32_t ci,
			     uint32_t cqe_cnt)
{
	/* One load: the HCA may be rewriting this CQE right now. */
	uint8_t op_own = *(const volatile uint8_t *)&cqe->op_own;

	return softhca_cqe_is_sw(op_own, ci, cqe_cnt);
}

const struct softhca_cqe *softhca_cqe_get_sw(const void *ring, uint32_t ci,
					     uint32_t cqe_cnt)
{
	const struct softhca_cqe *cqe =
		(const struct softhca_cqe *)ring + softhca_ring_slot(ci, cqe_cnt);

	return softhca_cqe_owned_by_sw(cqe, ci, cqe_cnt) ? cqe : NULL;
}

enum ibv_wc_status softhca_cqe_syndrome_status(uint8_t syndrome)
{
	return (enum ibv_wc_status)softhca_syndrome_wc_status(syndrome);
}

int softhca_wc_opcode_of_wqe(uint8_t wqe_opcode, enum ibv_wc_opcode *opcode,
			     bool *with_imm)
{
	int imm, op = softhca_wqe_wc_opcode(wqe_opcode, &imm);

	*with_imm = imm;
	if (op < 0)
		return -1;
	*opcode = (enum ibv_wc_opcode)op;
	return 0;
}

static void wc_clear(struct ibv_wc *wc, const struct softhca_cqe *cqe)
{
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_SEND;
	wc->vendor_err = 0;
	wc->byte_len = 0;
	wc->imm_data = 0;
	wc->qp_num = softhca_cqe_qpn(cqe);
	wc->src_qp = 0;
	wc->wc_flags = 0;
	wc->pkey_index = 0;
	wc->slid = 0;
	wc->sl = 0;
	wc->dlid_path_bits = 0;
}

int softhca_cqe_to_wc(const struct softhca_cqe *cqe, struct ibv_wc *wc)
{
	uint8_t opcode = softhca_cqe_opcode(cqe);
	uint32_t rqpn = be32toh(cqe->flags_rqpn);
	bool with_imm;

	wc_clear(wc, cqe);
	switch (opcode) {
	case SOFTHCA_CQE_REQ:
		if (softhca_wc_opcode_of_wqe(softhca_cqe_wqe_opcode(cqe),
					     &wc->opcode, &with_imm))
			return -EPROTO;
		/* The HCA echoes the immediate of SEND_IMM and WRITE_IMM. */
		if (with_imm) {
			wc->wc_flags |= IBV_WC_WITH_IMM;
			wc->imm_data = cqe->imm_inval_pkey;
		}
		if (wc->opcode == IBV_WC_COMP_SWAP || wc->opcode == IBV_WC_FETCH_ADD)
			wc->byte_len = SOFTHCA_ATOMIC_SIZE;
		else
			wc->byte_len = be32toh(cqe->byte_cnt);
		return 0;

	case SOFTHCA_CQE_RESP_WR_IMM:
	case SOFTHCA_CQE_RESP_SEND:
	case SOFTHCA_CQE_RESP_SEND_IMM:
		wc->opcode = opcode == SOFTHCA_CQE_RESP_WR_IMM ?
			     IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
		if (opcode != SOFTHCA_CQE_RESP_SEND) {
			wc->wc_flags |= IBV_WC_WITH_IMM;
			wc->imm_data = cqe->imm_inval_pkey;
		}
		wc->byte_len = be32toh(cqe->byte_cnt);
		wc->src_qp = rqpn & SOFTHCA_24BIT_MASK;
		wc->sl = (rqpn >> SOFTHCA_CQE_SL_SHIFT) & SOFTHCA_CQE_SL_MASK;
		return 0;

	case SOFTHCA_CQE_REQ_ERR:
	case SOFTHCA_CQE_RESP_ERR:
		wc->status = softhca_cqe_syndrome_status(cqe->syndrome);
		wc->vendor_err = cqe->vendor_err_synd;
		/* Best effort only: not meaningful when status != SUCCESS. */
		if (opcode == SOFTHCA_CQE_RESP_ERR)
			wc->opcode = IBV_WC_RECV;
		else if (softhca_wc_opcode_of_wqe(softhca_cqe_wqe_opcode(cqe),
						  &wc->opcode, &with_imm))
			wc->opcode = IBV_WC_SEND;
		return 0;

	default:
		return -EPROTO;
	}
}

uint32_t softhca_cq_compact(struct softhca_cqe *ring, uint32_t cqe_cnt,
			    uint32_t ci, uint32_t qpn)
{
	uint32_t end = ci;

	while (end - ci < cqe_cnt && softhca_cqe_get_sw(ring, end, cqe_cnt))
		end++;
	/* Ownership of [ci, end) seen: only now read the contents. */
	udma_from_device_barrier();
	return softhca_cq_compact_run(ring, cqe_cnt, ci, end,
				      htobe32(qpn & SOFTHCA_24BIT_MASK),
				      htobe32(SOFTHCA_24BIT_MASK));
}

uint32_t softhca_cq_arm_word(uint32_t arm_sn, bool solicited_only, uint32_t ci)
{
	return softhca_enc_cq_arm(arm_sn, solicited_only, ci);
}

uint64_t softhca_cq_doorbell(uint32_t arm_word, uint32_t cqn)
{
	return softhca_enc_cq_doorbell(arm_word, cqn);
}
