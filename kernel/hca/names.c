// SPDX-License-Identifier: GPL-2.0
/*
 * softhca HCA model: the names of the interface's numbers (firmware
 * commands, QP states, CQE syndromes, EQE types), for debug messages of
 * the model and the driver. Lookups only; nothing here is on a data path
 * unless a debug message is enabled. Unknown numbers are "UNKNOWN".
 *
 * The names never contain a word the test VM's dmesg check looks for
 * (scripts/vm-run: WARNING, BUG, Oops...): debug output is not a failure.
 */
#include <linux/kernel.h>

#include "model.h"

#define HCA_NAME_UNKNOWN	"UNKNOWN"

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
	[HCA_EVENT_TYPE_EQ_OVERFLOW]		= "EQ_OVERFLOW",
	[SOFTHCA_EVENT_TYPE_WQ_INVAL_REQ_ERROR]	= "WQ_INVAL_REQ_ERROR",
	[SOFTHCA_EVENT_TYPE_WQ_ACCESS_ERROR]	= "WQ_ACCESS_ERROR",
	[SOFTHCA_EVENT_TYPE_LAST_WQE_REACHED]	= "LAST_WQE_REACHED",
};

const char *hca_event_name(u8 type)
{
	return hca_name(hca_event_names, ARRAY_SIZE(hca_event_names), type);
}

/*
 * Firmware command names. Opcodes are sparse (mlx5 numbering), so a list
 * searched in order: only debug messages look names up.
 */
static const struct {
	u16 opcode;
	const char *name;
} hca_cmd_names[] = {
	{ HCA_CMD_QUERY_CAPS,		"QUERY_CAPS" },
	{ HCA_CMD_CREATE_MKEY,		"CREATE_MKEY" },
	{ HCA_CMD_DESTROY_MKEY,		"DESTROY_MKEY" },
	{ HCA_CMD_CREATE_EQ,		"CREATE_EQ" },
	{ HCA_CMD_DESTROY_EQ,		"DESTROY_EQ" },
	{ HCA_CMD_QUERY_EQ,		"QUERY_EQ" },
	{ HCA_CMD_GEN_EQE,		"GEN_EQE" },
	{ HCA_CMD_CREATE_CQ,		"CREATE_CQ" },
	{ HCA_CMD_DESTROY_CQ,		"DESTROY_CQ" },
	{ HCA_CMD_CREATE_QP,		"CREATE_QP" },
	{ HCA_CMD_DESTROY_QP,		"DESTROY_QP" },
	{ HCA_CMD_MODIFY_QP,		"MODIFY_QP" },
	{ HCA_CMD_QUERY_QP,		"QUERY_QP" },
	{ HCA_CMD_SET_PORT_STATE,	"SET_PORT_STATE" },
	{ HCA_CMD_SET_ROCE_ADDRESS,	"SET_ROCE_ADDRESS" },
	{ HCA_CMD_ALLOC_PD,		"ALLOC_PD" },
	{ HCA_CMD_DEALLOC_PD,		"DEALLOC_PD" },
	{ HCA_CMD_ALLOC_UAR,		"ALLOC_UAR" },
	{ HCA_CMD_FREE_UAR,		"FREE_UAR" },
};

const char *hca_cmd_name(u16 opcode)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(hca_cmd_names); i++)
		if (hca_cmd_names[i].opcode == opcode)
			return hca_cmd_names[i].name;
	return HCA_NAME_UNKNOWN;
}
