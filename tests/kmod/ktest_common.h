/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kernel test modules (softhca_ktest, softhca_kfrwr) share: the
 * counted check that reports through the modules' read-only "passed" and
 * "failed" parameters, and the RESET -> INIT -> RTR -> RTS walk that
 * connects an RC QP to a peer QP on the same GID.
 */
#ifndef SOFTHCA_KTEST_COMMON_H
#define SOFTHCA_KTEST_COMMON_H

#include <rdma/ib_verbs.h>

/* Counts into @pass or @fail; a failure prints one "@name: FAIL" line. */
#define KTEST_CHECK(name, pass, fail, cond, fmt, ...)			\
	do {								\
		if (cond) {						\
			(pass)++;					\
		} else {						\
			(fail)++;					\
			pr_info(name ": FAIL line %d: %s: " fmt "\n",	\
				__LINE__, #cond, ##__VA_ARGS__);	\
		}							\
	} while (0)

/*
 * Connect RC @qp on port 1 to QP @dqpn reached through @gid (index
 * @sgid_index), PSNs 0, MTU 1024, 4 reads or atomics in flight each way
 * and the retry counts at their maximum. The walk starts at RESET so that
 * a QP in any state can be connected again.
 */
static inline int ktest_rc_connect(struct ib_qp *qp, u32 dqpn,
				   union ib_gid *gid, u8 sgid_index,
				   int access)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_RESET;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	if (err)
		return err;
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.type = rdma_ah_find_type(qp->device, 1);
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, gid, 0, sgid_index, 64, 0);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

#endif
