/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by the softhca selftests. */
#ifndef SOFTHCA_SELFTEST_UTIL_H
#define SOFTHCA_SELFTEST_UTIL_H

#include <stddef.h>

/* Run a shell command quietly; return its exit status (or -1). */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Read a sysfs-style file into buf without the trailing newline; 0 or -errno. */
int read_line(const char *path, char *buf, size_t len);
/* Poll fn(arg) every 10 ms until it returns true or ms elapse. */
int wait_until(int (*fn)(void *arg), void *arg, int ms);
/* Path of the softhca.ko under test ($SOFTHCA_KO or ./softhca.ko). */
const char *softhca_ko(void);
/* How many of this process's fds link to @target ("anon_inode:[x]"), or -1. */
int count_fds(const char *target);
/* Lines of dmesg, or -1. */
long dmesg_lines(void);
/*
 * Does dmesg after its first @lines lines report a kernel problem (WARNING,
 * BUG, Oops, Call Trace, ...)? 1 (the lines are printed to stderr) or 0.
 */
int dmesg_dirty_since(long lines);

#endif
