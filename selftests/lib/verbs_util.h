/* SPDX-License-Identifier: GPL-2.0 */
/* libibverbs helpers shared by the softhca selftests. */
#ifndef SOFTHCA_SELFTEST_VERBS_UTIL_H
#define SOFTHCA_SELFTEST_VERBS_UTIL_H

#include <infiniband/verbs.h>

/* Open the RDMA device named @name, NULL (errno set) if absent. */
struct ibv_context *open_dev(const char *name);
/* Resource count of @res on @dev via RDMA netlink, or -1 on error. */
long res_count(const char *dev, const char *res);
/*
 * The next async event of @ctx within @ms, acked, its copy in *@ev: its
 * event_type, or -1 if none came.
 */
int next_async_event(struct ibv_context *ctx, int ms,
		     struct ibv_async_event *ev);

/*
 * The driver method ENGINE_WAKE on @ctx's command fd (runs the HCA's
 * pending doorbells in this thread): 0, or -errno.
 */
int engine_wake_method(struct ibv_context *ctx);

/*
 * The driver method WAKE_FD_OPEN on @ctx's command fd, its out attribute
 * @len bytes long: the new wake fd, or -errno.
 */
int wake_fd_open_len(struct ibv_context *ctx, uint16_t len);
#define WAKE_FD_NAME	"anon_inode:[softhca-wake]"

/*
 * The driver's debugfs EQ files of device @dev (root, debugfs mounted): a
 * key=value of the line of EQ @eq_name ("comp0", "async") in eqs ("eqn"
 * too), or -1; and one command written to inject (0 or -errno).
 */
long eq_dbg_field(const char *dev, const char *eq_name, const char *key);
int eq_dbg_inject(const char *dev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
