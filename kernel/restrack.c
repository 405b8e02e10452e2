// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: driver details of `rdma res show qp|cq|mr -d`.
 *
 * ib_core prints what it knows of an object; these add the HCA's view,
 * read with QUERY_QP, QUERY_CQ and QUERY_MKEY: the queues' producer and
 * consumer indexes, what the engine waits for, the CQs, EQ, arm state and
 * counter set, the MKey's translation. The numbers are the HCA's (QPN,
 * CQN, PD number), not ib_core's restrack ids, hence the "hw_" names
 * where ib_core prints a field of the same name.
 */
#include <rdma/restrack.h>
#include <uapi/rdma/rdma_netlink.h>

#include "softhca.h"

static const char * const shca_qp_waits[] = {
	[HCA_QP_WAIT_NONE] = "none",
	[HCA_QP_WAIT_RNR] = "rnr",
	[HCA_QP_WAIT_ACK] = "ack_timeout",
};

static const char * const shca_cq_arms[] = {
	[HCA_CQ_ARM_NONE] = "none",
	[HCA_CQ_ARM_NEXT] = "next",
	[HCA_CQ_ARM_SOLICITED] = "solicited",
};

/* One named unsigned value; the table ends at a NULL name. */
struct shca_nl_u32 {
	const char *name;
	u32 value;
};

static int shca_nl_put(struct sk_buff *msg, const struct shca_nl_u32 *v)
{
	for (; v->name; v++)
		if (rdma_nl_put_driver_u32(msg, v->name, v->value))
			return -EMSGSIZE;
	return 0;
}

static const char *shca_name(const char * const *names, size_t n, u32 i)
{
	return i < n && names[i] ? names[i] : "unknown";
}

static int shca_put_qp(struct sk_buff *msg,
		       const struct hca_cmd_query_qp_out *out)
{
	const struct shca_nl_u32 v[] = {
		{ "sq_pi", out->sq_pi },
		{ "sq_ci", out->sq_ci },
		{ "rq_pi", out->rq_pi },
		{ "rq_ci", out->rq_ci },
		{ "hw_send_cqn", out->send_cqn },
		{ "hw_recv_cqn", out->recv_cqn },
		{ "q_counter", out->q_counter },
		{ "rnr_retry_left", out->rnr_retry_left },
		{ "retry_left", out->retry_left },
		{ }
	};

	if (shca_nl_put(msg, v))
		return -EMSGSIZE;
	return rdma_nl_put_driver_string(msg, "wait",
					 shca_name(shca_qp_waits,
						   ARRAY_SIZE(shca_qp_waits),
						   out->wait));
}

static int shca_fill_qp(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct hca_cmd_query_qp_in in = { .qpn = to_shca_qp(ibqp)->qpn };
	struct hca_cmd_query_qp_out out;
	int err;

	err = hca_exec(to_shca_dev(ibqp->device)->hca, HCA_CMD_QUERY_QP,
		       &in, sizeof(in), &out, sizeof(out));
	return err ?: shca_put_qp(msg, &out);
}

static int shca_put_cq(struct sk_buff *msg, u32 cqn,
		       const struct hca_cmd_query_cq_out *out)
{
	const struct shca_nl_u32 v[] = {
		{ "hw_cqn", cqn },
		{ "eqn", out->eqn },
		{ "pi", out->pi },
		{ "ci", out->ci },
		{ "overrun", out->overrun },
		{ }
	};

	if (shca_nl_put(msg, v))
		return -EMSGSIZE;
	return rdma_nl_put_driver_string(msg, "arm",
					 shca_name(shca_cq_arms,
						   ARRAY_SIZE(shca_cq_arms),
						   out->arm));
}

static int shca_fill_cq(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct hca_cmd_query_cq_in in = { .cqn = to_shca_cq(ibcq)->cqn };
	struct hca_cmd_query_cq_out out;
	int err;

	err = hca_exec(to_shca_dev(ibcq->device)->hca, HCA_CMD_QUERY_CQ,
		       &in, sizeof(in), &out, sizeof(out));
	return err ?: shca_put_cq(msg, in.cqn, &out);
}

static int shca_fill_mr(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct hca_cmd_query_mkey_in in = { .mkey = ibmr->lkey };
	struct hca_cmd_query_mkey_out out;
	int err;

	err = hca_exec(to_shca_dev(ibmr->device)->hca, HCA_CMD_QUERY_MKEY,
		       &in, sizeof(in), &out, sizeof(out));
	if (err)
		return err;
	if (rdma_nl_put_driver_u32_hex(msg, "mkey", in.mkey) ||
	    rdma_nl_put_driver_u32(msg, "hw_pdn", out.pdn) ||
	    rdma_nl_put_driver_u64_hex(msg, "iova", out.iova) ||
	    rdma_nl_put_driver_u64(msg, "npages", out.npages) ||
	    rdma_nl_put_driver_u32(msg, "page_shift", out.page_shift) ||
	    rdma_nl_put_driver_u32_hex(msg, "access", out.access))
		return -EMSGSIZE;
	return 0;
}

/* The attributes of one object go in one RDMA_NLDEV_ATTR_DRIVER table. */
static struct nlattr *shca_nl_table(struct sk_buff *msg)
{
	return nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
}

static int shca_nl_table_end(struct sk_buff *msg, struct nlattr *table,
			     int err)
{
	if (err)
		nla_nest_cancel(msg, table);
	else
		nla_nest_end(msg, table);
	return err;
}

int shca_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct nlattr *table = shca_nl_table(msg);

	if (!table)
		return -EMSGSIZE;
	return shca_nl_table_end(msg, table, shca_fill_qp(msg, ibqp));
}

int shca_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq)
{
	struct nlattr *table = shca_nl_table(msg);

	if (!table)
		return -EMSGSIZE;
	return shca_nl_table_end(msg, table, shca_fill_cq(msg, ibcq));
}

int shca_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr)
{
	struct nlattr *table = shca_nl_table(msg);

	if (!table)
		return -EMSGSIZE;
	return shca_nl_table_end(msg, table, shca_fill_mr(msg, ibmr));
}
