// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: hardware counters (`rdma statistic`).
 *
 * The HCA counts; this file reads it. The port's counters are the HCA's
 * default Q counter set (every QP not bound to an rdma_counter) followed
 * by the HCA-wide counts; ib_core adds what the bound counters and the
 * ones already freed counted to the first part, so `rdma statistic show`
 * is the whole device. A bound rdma_counter is a Q counter set of its own
 * (ALLOC_Q_COUNTER, SET_QP_COUNTER), with the same descriptors: its
 * HCA-wide part stays 0 and is hidden (is_disabled), which is what
 * ib_core's sums by index need. Auto mode and manual binding both come
 * through counter_bind_qp.
 */
#include <rdma/ib_verbs.h>
#include <rdma/rdma_counter.h>

#include "softhca.h"

/* Indexes: enum hca_q_counter, then HCA_QCNT_NUM + enum hca_hca_counter. */
static const struct rdma_stat_desc shca_stat_descs[] = {
	[HCA_QCNT_TX_REQUESTS].name = "tx_requests",
	[HCA_QCNT_TX_BYTES].name = "tx_bytes",
	[HCA_QCNT_RX_REQUESTS].name = "rx_requests",
	[HCA_QCNT_RX_BYTES].name = "rx_bytes",
	[HCA_QCNT_TX_RETRIES].name = "tx_retries",
	[HCA_QCNT_RNR_NAKS_SENT].name = "rnr_naks_sent",
	[HCA_QCNT_RNR_NAKS_RCVD].name = "rnr_naks_rcvd",
	[HCA_QCNT_LOCAL_ACK_TIMEOUTS].name = "local_ack_timeouts",
	[HCA_QCNT_CQE_LOC_LEN_ERR].name = "cqe_loc_len_err",
	[HCA_QCNT_CQE_LOC_QP_OP_ERR].name = "cqe_loc_qp_op_err",
	[HCA_QCNT_CQE_LOC_PROT_ERR].name = "cqe_loc_prot_err",
	[HCA_QCNT_CQE_WR_FLUSH_ERR].name = "cqe_wr_flush_err",
	[HCA_QCNT_CQE_REM_INV_REQ_ERR].name = "cqe_rem_inv_req_err",
	[HCA_QCNT_CQE_REM_ACCESS_ERR].name = "cqe_rem_access_err",
	[HCA_QCNT_CQE_REM_OP_ERR].name = "cqe_rem_op_err",
	[HCA_QCNT_CQE_RETRY_EXC_ERR].name = "cqe_retry_exc_err",
	[HCA_QCNT_CQE_RNR_RETRY_EXC_ERR].name = "cqe_rnr_retry_exc_err",
	[HCA_QCNT_OUT_OF_BUFFER].name = "out_of_buffer",
	[HCA_QCNT_RX_QKEY_DROPS].name = "rx_qkey_drops",
	[HCA_QCNT_RX_LEN_DROPS].name = "rx_len_drops",
	[HCA_QCNT_RX_ACCESS_DROPS].name = "rx_access_drops",
	[HCA_QCNT_RX_XRC_SRQ_ERRORS].name = "rx_xrc_srq_errors",
	[HCA_QCNT_SEQ_NAKS_SENT].name = "seq_naks_sent",
	[HCA_QCNT_SEQ_NAKS_RCVD].name = "seq_naks_rcvd",
	[HCA_QCNT_INV_REQ_NAKS_SENT].name = "inv_req_naks_sent",
	[HCA_QCNT_INV_REQ_NAKS_RCVD].name = "inv_req_naks_rcvd",
	[HCA_QCNT_REM_ACCESS_NAKS_SENT].name = "rem_access_naks_sent",
	[HCA_QCNT_REM_ACCESS_NAKS_RCVD].name = "rem_access_naks_rcvd",
	[HCA_QCNT_REM_OP_NAKS_SENT].name = "rem_op_naks_sent",
	[HCA_QCNT_REM_OP_NAKS_RCVD].name = "rem_op_naks_rcvd",
	[HCA_QCNT_OUT_OF_SEQUENCE].name = "out_of_sequence",
	[HCA_QCNT_DUPLICATE_REQUEST].name = "duplicate_request",
	[HCA_QCNT_IMPLIED_NAK_SEQ_ERR].name = "implied_nak_seq_err",
	[HCA_QCNT_NUM + HCA_HCNT_CQ_OVERRUNS].name = "cq_overruns",
	[HCA_QCNT_NUM + HCA_HCNT_WAKEUP_CALLS].name = "wakeup_calls",
	[HCA_QCNT_NUM + HCA_HCNT_ENGINE_BACKOFFS].name = "engine_backoffs",
	[HCA_QCNT_NUM + HCA_HCNT_RX_NO_QP_DROPS].name = "rx_no_qp_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_TX_PACKETS].name = "wire_tx_packets",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_TX_BYTES].name = "wire_tx_bytes",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_PACKETS].name = "wire_rx_packets",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_BYTES].name = "wire_rx_bytes",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_TX_NO_ROUTE].name = "wire_tx_no_route",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_TX_DROPS].name = "wire_tx_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_HEADER_DROPS].name =
		"wire_rx_header_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_ICRC_DROPS].name = "wire_rx_icrc_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_UNKNOWN_QPN].name =
		"wire_rx_unknown_qpn_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_QUEUE_FULL].name =
		"wire_rx_queue_full_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_NOT_PEER].name =
		"wire_rx_not_peer_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_QP_STATE].name =
		"wire_rx_qp_state_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_UNSOLICITED].name =
		"wire_rx_unsolicited_drops",
	[HCA_QCNT_NUM + HCA_HCNT_WIRE_RX_STALE_RSP].name =
		"wire_rx_stale_rsp_drops",
	[HCA_QCNT_NUM + HCA_HCNT_NP_ECN_MARKED].name =
		"np_ecn_marked_roce_packets",
	[HCA_QCNT_NUM + HCA_HCNT_NP_CNP_SENT].name = "np_cnp_sent",
	[HCA_QCNT_NUM + HCA_HCNT_RP_CNP_IGNORED].name = "rp_cnp_ignored",
	[HCA_QCNT_NUM + HCA_HCNT_RP_CNP_HANDLED].name = "rp_cnp_handled",
	[HCA_QCNT_NUM + HCA_HCNT_RP_HOLDS].name = "wire_rp_holds",
	[HCA_QCNT_NUM + HCA_HCNT_ODP_FAULTS_REQ].name = "odp_faults_req",
	[HCA_QCNT_NUM + HCA_HCNT_ODP_FAULTS_RESP].name = "odp_faults_resp",
	[HCA_QCNT_NUM + HCA_HCNT_ODP_PAGES_MAPPED].name = "odp_pages_mapped",
	[HCA_QCNT_NUM + HCA_HCNT_ODP_PAGES_INVALIDATED].name =
		"odp_pages_invalidated",
};

#define SHCA_NUM_STATS	(HCA_QCNT_NUM + HCA_HCNT_NUM)
static_assert(ARRAY_SIZE(shca_stat_descs) == SHCA_NUM_STATS);

struct rdma_hw_stats *shca_alloc_hw_port_stats(struct ib_device *ibdev,
					       u32 port)
{
	return rdma_alloc_hw_stats_struct(shca_stat_descs, SHCA_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* Q counter set @id into value[0, HCA_QCNT_NUM) of @stats. */
static int shca_query_q_counter(struct shca_dev *sdev, u32 id,
				struct rdma_hw_stats *stats)
{
	struct hca_cmd_query_q_counter_in in = { .counter_id = id };
	struct hca_cmd_query_q_counter_out out;
	int err;

	err = hca_exec(sdev->hca, HCA_CMD_QUERY_Q_COUNTER, &in, sizeof(in),
		       &out, sizeof(out));
	if (!err)
		memcpy(stats->value, out.value, sizeof(out.value));
	return err;
}

int shca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		      u32 port, int index)
{
	struct shca_dev *sdev = to_shca_dev(ibdev);
	struct hca_cmd_query_hca_counters_out hcnt;
	int err;

	/* Every counter, whichever @index was asked for. */
	err = shca_query_q_counter(sdev, HCA_Q_COUNTER_DEFAULT, stats);
	if (err)
		return err;
	err = hca_exec(sdev->hca, HCA_CMD_QUERY_HCA_COUNTERS, NULL, 0,
		       &hcnt, sizeof(hcnt));
	if (err)
		return err;
	memcpy(&stats->value[HCA_QCNT_NUM], hcnt.value, sizeof(hcnt.value));
	return SHCA_NUM_STATS;
}

struct rdma_hw_stats *shca_counter_alloc_stats(struct rdma_counter *counter)
{
	struct rdma_hw_stats *stats;
	unsigned int i;

	stats = shca_alloc_hw_port_stats(counter->device, counter->port);
	if (!stats)
		return NULL;
	/* A Q counter set has no HCA-wide part. */
	for (i = HCA_QCNT_NUM; i < SHCA_NUM_STATS; i++)
		set_bit(i, stats->is_disabled);
	return stats;
}

int shca_counter_update_stats(struct rdma_counter *counter)
{
	return shca_query_q_counter(to_shca_dev(counter->device), counter->id,
				    counter->stats);
}

static int shca_set_qp_counter(struct ib_qp *ibqp, u32 id)
{
	struct hca_cmd_set_qp_counter_in in = {
		.qpn = to_shca_qp(ibqp)->qpn,
		.counter_id = id,
	};

	return hca_exec(to_shca_dev(ibqp->device)->hca, HCA_CMD_SET_QP_COUNTER,
			&in, sizeof(in), NULL, 0);
}

int shca_counter_dealloc(struct rdma_counter *counter)
{
	struct hca_cmd_dealloc_q_counter_in in = { .counter_id = counter->id };

	if (!counter->id)
		return 0;
	return hca_exec(to_shca_dev(counter->device)->hca,
			HCA_CMD_DEALLOC_Q_COUNTER, &in, sizeof(in), NULL, 0);
}

/* A counter without an id is new: it gets its set here (ib_core's rule). */
int shca_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct shca_dev *sdev = to_shca_dev(counter->device);
	struct hca_cmd_alloc_q_counter_out out;
	bool new = !counter->id;
	int err;

	if (new) {
		err = hca_exec(sdev->hca, HCA_CMD_ALLOC_Q_COUNTER, NULL, 0,
			       &out, sizeof(out));
		if (err)
			return err;
		counter->id = out.counter_id;
	}
	err = shca_set_qp_counter(ibqp, counter->id);
	if (err) {
		if (new) {
			shca_counter_dealloc(counter);
			counter->id = 0;
		}
		return err;
	}
	/* ib_core lists a counter's QPs (and unbinds them) by this. */
	ibqp->counter = counter;
	return 0;
}

int shca_counter_unbind_qp(struct ib_qp *ibqp)
{
	int err = shca_set_qp_counter(ibqp, HCA_Q_COUNTER_DEFAULT);

	if (!err)
		ibqp->counter = NULL;
	return err;
}
