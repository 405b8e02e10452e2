/* SPDX-License-Identifier: GPL-2.0 */
/* RDMA netlink (NLDEV) helpers for the softhca selftests, built on libmnl. */
#ifndef SOFTHCA_SELFTEST_RDMANL_H
#define SOFTHCA_SELFTEST_RDMANL_H

#include <stdint.h>

/* All return 0 (or a value >= 0) on success and -errno from the kernel. */
int rdmanl_link_add(const char *name, const char *type, const char *netdev);
int rdmanl_link_del(const char *name);
int rdmanl_dev_index(const char *name);
int rdmanl_dev_rename(const char *name, const char *new_name);
/* Current count of resource @res ("pd", "cq", "qp", "mr", "ctx"...) on @dev. */
int rdmanl_res_count(const char *dev, const char *res, uint64_t *count);

#endif
