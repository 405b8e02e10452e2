// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the names of the interface's numbers (QP states, CQE
 * syndromes, EQE types; firmware commands are named in their table,
 * hca.c), for debug messages of the model and the driver. Lookups only; nothing here is on a data path
 * unless a debug message is enabled. Unknown numbers are "UNKNOWN".
 *
 * The names never contain a word the test VM's dmesg check looks for
 * (scripts/vm-run: WARNING, BUG, Oops...): debug output is not a failure.
 */
#include <linux/kernel.h>

#include "model.h"

/* @names[@n], or "UNKNOWN" for a gap or a number beyond the table. */
static const char *hca_name(const char * const *names, size_t n, u32 i)
{
	return i < n && names[i] ? names[i] : HCA_NAME_UNKNOWN;
}

static const char * const hca_qp_state_names[] = {
	[HCA_QPS_RESET]	= "RESET",
	[HCA_QPS_INIT]	= "INIT",
	[HCA_QPS_RTR]	= "RTR",
	[HCA_QPS_RTS]	= "RTS",
	[HCA_QPS_SQD]	= "SQD",
	[HCA_QPS_SQE]	= "SQE",
	[HCA_QPS_ERR]	= "ERR",
};

const char *hca_qp_state_name(u32 state)
{
	return hca_name(hca_qp_state_names, ARRAY_SIZE(hca_qp_state_names),
			state);
}

static const char * const hca_syndrome_names[] = {
	[SOFTHCA_CQE_SYNDROME_LOCAL_LENGTH_ERR]		= "LOC_LEN_ERR",
	[SOFTHCA_CQE_SYNDROME_LOCAL_QP_OP_ERR]		= "LOC_QP_OP_ERR",
	[SOFTHCA_CQE_SYNDROME_LOCAL_PROT_ERR]		= "LOC_PROT_ERR",
	[SOFTHCA_CQE_SYNDROME_WR_FLUSH_ERR]		= "WR_FLUSH_ERR",
	[SOFTHCA_CQE_SYNDROME_MW_BIND_ERR]		= "MW_BIND_ERR",
	[SOFTHCA_CQE_SYNDROME_BAD_RESP_ERR]		= "BAD_RESP_ERR",
	[SOFTHCA_CQE_SYNDROME_LOCAL_ACCESS_ERR]		= "LOC_ACCESS_ERR",
	[SOFTHCA_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR]	= "REM_INV_REQ_ERR",
	[SOFTHCA_CQE_SYNDROME_REMOTE_ACCESS_ERR]	= "REM_ACCESS_ERR",
	[SOFTHCA_CQE_SYNDROME_REMOTE_OP_ERR]		= "REM_OP_ERR",
	[SOFTHCA_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR]	= "RETRY_EXC_ERR",
	[SOFTHCA_CQE_SYNDROME_RNR_RETRY_EXC_ERR]	= "RNR_RETRY_EXC_ERR",
	[SOFTHCA_CQE_SYNDROME_REMOTE_ABORTED_ERR]	= "REM_ABORT_ERR",
};

/* A CQE syndrome by the name of the ibv_wc_status it becomes. */
const char *hca_syndrome_name(u8 syndrome)
{
	return hca_name(hca_syndrome_names, ARRAY_SIZE(hca_syndrome_names),
			syndrome);
}

static const char * const hca_event_names[] = {
	[SOFTHCA_EVENT_TYPE_COMP]		= "COMP",
	[SOFTHCA_EVENT_TYPE_COMM_EST]		= "COMM_EST",
	[SOFTHCA_EVENT_TYPE_SQ_DRAINED]		= "SQ_DRAINED",
	[SOFTHCA_EVENT_TYPE_CQ_ERROR]		= "CQ_ERROR",
	[SOFTHCA_EVENT_TYPE_WQ_CATAS_ERROR]	= "WQ_CATAS_ERROR",
	[SOFTHCA_EVENT_TYPE_PORT_CHANGE]	= "PORT_CHANGE",
	[SOFTHCA_EVENT_TYPE_PAGE_FAULT]		= "PAGE_FAULT",
	[HCA_EVENT_TYPE_EQ_OVERFLOW]		= "EQ_OVERFLOW",
	[SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR]	= "WQ_INVAL_REQ_ERROR",
	[SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR]	= "WQ_ACCESS_ERROR",
	[SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED]	= "LAST_WQE_REACHED",
	[SOFTHCA_EVENT_TYPE_SRQ_CATAS_ERROR]	= "SRQ_CATAS_ERROR",
	[SOFTHCA_EVENT_TYPE_SRQ_RQ_LIMIT]	= "SRQ_RQ_LIMIT",
};

const char *hca_event_name(u8 type)
{
	return hca_name(hca_event_names, ARRAY_SIZE(hca_event_names), type);
}

