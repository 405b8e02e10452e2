// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cqe.c - CQE ownership, CQE -> ibv_wc, CQ arm word. See cqe.h and
 * Documentation/queue-formats.md.
 */
#include <errno.h>
#include <string.h>

#include "cqe.h"
#include "mmio.h"

bool softhca_cqe_owned_by_sw(const struct softhca_cqe *cqe, uint32_t ci,
			     uint32_t cqe_cnt)
{
	/* One load: the HCA may be rewriting this CQE right now. */
	uint8_t op_own = *(const volatile uint8_t *)&cqe->op_own;

	if ((op_own >> SOFTHCA_CQE_OPCODE_SHIFT) == SOFTHCA_CQE_INVALID)
		return false;
	return (op_own & SOFTHCA_CQE_OWNER_MASK) == softhca_owner_of(ci, cqe_cnt);
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
	switch (syndrome) {
	case SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR:
		return IBV_WC_LOC_QP_OP_ERR;
	case SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case SOFTHCA_CQE_SYNDROME_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	case SOFTHCA_CQE_SYNDROME_BAD_RESP_ERR:
		return IBV_WC_BAD_RESP_ERR;
	case SOFTHCA_CQE_SYNDROME_LOCAL_ACCESS_ERR:
		return IBV_WC_LOC_ACCESS_ERR;
	case SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR:
		return IBV_WC_REM_INV_REQ_ERR;
	case SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR:
		return IBV_WC_RETRY_EXC_ERR;
	case SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR:
		return IBV_WC_RNR_RETRY_EXC_ERR;
	case SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR:
		return IBV_WC_REM_ABORT_ERR;
	default:
		return IBV_WC_GENERAL_ERR;
	}
}

int softhca_wc_opcode_of_wqe(uint8_t wqe_opcode, enum ibv_wc_opcode *opcode,
			     bool *with_imm)
{
	*with_imm = false;
	switch (wqe_opcode) {
	case SOFTHCA_OPCODE_RDMA_WRITE_IMM:
		*with_imm = true;
		/* fall through */
	case SOFTHCA_OPCODE_RDMA_WRITE:
		*opcode = IBV_WC_RDMA_WRITE;
		return 0;
	case SOFTHCA_OPCODE_SEND_IMM:
		*with_imm = true;
		/* fall through */
	case SOFTHCA_OPCODE_SEND:
		*opcode = IBV_WC_SEND;
		return 0;
	case SOFTHCA_OPCODE_RDMA_READ:
		*opcode = IBV_WC_RDMA_READ;
		return 0;
	case SOFTHCA_OPCODE_ATOMIC_CS:
		*opcode = IBV_WC_COMP_SWAP;
		return 0;
	case SOFTHCA_OPCODE_ATOMIC_FA:
		*opcode = IBV_WC_FETCH_ADD;
		return 0;
	default:
		return -1;
	}
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
	uint32_t end = ci, removed = 0;

	while (end - ci < cqe_cnt && softhca_cqe_get_sw(ring, end, cqe_cnt))
		end++;
	/* Ownership of [ci, end) seen: only now read the contents. */
	udma_from_device_barrier();

	for (uint32_t i = end; i != ci;) {
		struct softhca_cqe *cqe = &ring[softhca_ring_slot(--i, cqe_cnt)];
		struct softhca_cqe *to;
		uint8_t owner;

		if (softhca_cqe_qpn(cqe) == (qpn & SOFTHCA_24BIT_MASK)) {
			removed++;
			continue;
		}
		if (!removed)
			continue;
		to = &ring[softhca_ring_slot(i + removed, cqe_cnt)];
		owner = to->op_own & SOFTHCA_CQE_OWNER_MASK;
		memcpy(to, cqe, sizeof(*to));
		to->op_own = (to->op_own & ~SOFTHCA_CQE_OWNER_MASK) | owner;
	}
	return removed;
}

uint32_t softhca_cq_arm_word(uint32_t arm_sn, bool solicited_only, uint32_t ci)
{
	return (arm_sn & SOFTHCA_CQ_DB_SN_MASK) << SOFTHCA_CQ_DB_SN_SHIFT |
	       (solicited_only ? SOFTHCA_CQ_DB_REQ_NOT_SOL : SOFTHCA_CQ_DB_REQ_NOT) |
	       (ci & SOFTHCA_CQ_DB_CI_MASK);
}

uint64_t softhca_cq_doorbell(uint32_t arm_word, uint32_t cqn)
{
	return (uint64_t)arm_word << 32 | (cqn & SOFTHCA_24BIT_MASK);
}
