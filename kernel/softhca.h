/* SPDX-License-Identifier: GPL-2.0 */
/*
 * softhca verbs driver: objects shared by the files of kernel/.
 * The HCA model (kernel/hca/) is reached only through hca/hca.h.
 */
#ifndef SOFTHCA_H
#define SOFTHCA_H

#include <linux/list.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>

#include "hca/hca.h"

#define SHCA_PORT	1	/* the one port of every device */

/* Lifecycle of a device on the driver's list (main.c). */
enum shca_dev_state {
	SHCA_DEV_REGISTERING,	/* on the list, ib_register_device() running */
	SHCA_DEV_LIVE,		/* registered */
	SHCA_DEV_DEAD,		/* dealloc_driver ran; waiting to be reaped */
};

struct shca_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct shca_hca *hca;
	struct shca_caps caps;		/* QUERY_CAPS, read once at creation */
	struct net_device *ndev;	/* held until dealloc_driver */
	netdevice_tracker ndev_tracker;

	/* Protected by shca_devs_lock (main.c). */
	struct list_head list;
	enum shca_dev_state state;
	bool unplug;			/* the netdev is going away */
	struct dentry *dbg_dir;

	/* Protected by RTNL. */
	bool port_active;		/* last state reported by an event */
};

struct shca_ucontext {
	struct ib_ucontext ibucontext;
	struct rdma_user_mmap_entry *uar_entry;
};

struct shca_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

enum shca_mmap_type {
	SHCA_MMAP_UAR,
};

struct shca_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	enum shca_mmap_type type;
	u32 uar_index;
};

static inline struct shca_dev *to_shca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct shca_dev, ibdev);
}

static inline struct shca_ucontext *to_shca_uctx(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct shca_ucontext, ibucontext);
}

static inline struct shca_pd *to_shca_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct shca_pd, ibpd);
}

static inline struct shca_mmap_entry *
to_shca_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct shca_mmap_entry, rdma_entry);
}

/* main.c */
extern unsigned int shca_max_comp_vectors;
void shca_dev_dead(struct shca_dev *sdev);

/* device.c */
struct shca_dev *shca_dev_alloc(struct net_device *ndev,
				struct device *parent);
bool shca_netdev_active(struct net_device *ndev);
void shca_port_update(struct shca_dev *sdev);

/* ucontext.c */
int shca_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata);
void shca_dealloc_ucontext(struct ib_ucontext *ibuctx);
void shca_disassociate_ucontext(struct ib_ucontext *ibuctx);
int shca_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void shca_mmap_free(struct rdma_user_mmap_entry *entry);

/* pd.c */
int shca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int shca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* debugfs.c */
void shca_debugfs_init(void);
void shca_debugfs_exit(void);
void shca_debugfs_add_dev(struct shca_dev *sdev);
void shca_debugfs_del_dev(struct shca_dev *sdev);

#endif /* SOFTHCA_H */
