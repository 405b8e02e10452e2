/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca_wakefd.ko: revocable wake-up files for softhca's wake fd.
 *
 * A wake-up file is an anonymous file whose fsync() calls a function of
 * softhca's until softhca revokes it; from then on fsync() fails with EIO.
 * The file operations live in this small module, not in softhca.ko, so an
 * open wake fd pins only this module and softhca can be unloaded with live
 * users (their contexts are disassociated, which revokes their files), as
 * ib_uverbs owns the command fds of every RDMA driver.
 */
#ifndef SHCA_WAKEFD_H
#define SHCA_WAKEFD_H

struct file;
struct shca_wakefd;

typedef void (*shca_wakefd_call_t)(void *arg);

struct file *shca_wakefd_create(shca_wakefd_call_t call, void *arg,
				struct shca_wakefd **wakefd);
void shca_wakefd_revoke(struct shca_wakefd *wakefd);

#endif /* SHCA_WAKEFD_H */
