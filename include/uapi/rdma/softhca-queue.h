/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * softhca queue formats: what the provider writes and the HCA model reads
 * (and the reverse) in mmapped memory. mlx5 layouts, big-endian fields.
 */
#ifndef SOFTHCA_QUEUE_H
#define SOFTHCA_QUEUE_H

#include <linux/types.h>

/* UAR page layout (one page per user context). */
#define SOFTHCA_UAR_CQ_DB_OFFSET	0x20	/* 64-bit CQ arm doorbell */
#define SOFTHCA_UAR_BF_OFFSET		0x800	/* first BlueFlame buffer */
#define SOFTHCA_UAR_BF_SIZE		0x100	/* each of the two buffers */

#endif /* SOFTHCA_QUEUE_H */
