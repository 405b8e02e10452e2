/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca HCA model: debug messages, on dynamic debug (pr_debug), so each
 * call site is a static branch that stays off, and formats nothing, until
 * enabled (echo 'module softhca +p' > /sys/kernel/debug/dynamic_debug/control).
 * The model knows no ib_device: its lines name the instance by the name
 * the driver gave hca_create(), then the object and the function:
 *
 *   softhca shca0: QP[5] hca_qp_set_err: RTS -> ERR (hca_sq_step)
 *   softhca shca0: CQ[3] hca_cqe_write: error CQE: QP[5] ...
 *   softhca shca0: hca_exec: MODIFY_QP (0x502) refused: -EINVAL (...)
 *   softhca engine: hca_engine_sleep: POLLING -> IDLE (...)
 *
 * The verbs driver's lines (shca_dbg*, kernel/softhca.h) use the same
 * object notation. Documentation/kernel.md, "Debugging".
 */
#ifndef HCA_HCA_DEBUG_H
#define HCA_HCA_DEBUG_H

#include <linux/printk.h>

#define hca_dbg(hca, fmt, ...)						\
	pr_debug("softhca %s: %s: " fmt, (hca)->name, __func__,	\
		 ##__VA_ARGS__)

/* Objects by number: QPN, CQN, EQN (the caller may hold only a number). */
#define hca_dbg_qpn(hca, qpn, fmt, ...)					\
	pr_debug("softhca %s: QP[%u] %s: " fmt, (hca)->name, (qpn),	\
		 __func__, ##__VA_ARGS__)
#define hca_dbg_cqn(hca, cqn, fmt, ...)					\
	pr_debug("softhca %s: CQ[%u] %s: " fmt, (hca)->name, (cqn),	\
		 __func__, ##__VA_ARGS__)
#define hca_dbg_eqn(hca, eqn, fmt, ...)					\
	pr_debug("softhca %s: EQ[%u] %s: " fmt, (hca)->name, (eqn),	\
		 __func__, ##__VA_ARGS__)

#define hca_dbg_qp(qp, fmt, ...)					\
	hca_dbg_qpn((qp)->hca, (qp)->qpn, fmt, ##__VA_ARGS__)
#define hca_dbg_cq(cq, fmt, ...)					\
	hca_dbg_cqn((cq)->hca, (cq)->cqn, fmt, ##__VA_ARGS__)

/* The engine thread serves every instance: its lines name no instance. */
#define hca_dbg_engine(fmt, ...)					\
	pr_debug("softhca engine: %s: " fmt, __func__, ##__VA_ARGS__)

#endif /* HCA_HCA_DEBUG_H */
