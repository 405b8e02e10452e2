// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: module init/exit, the "softhca" RDMA link type,
 * the netdevice notifier and the driver's own list of devices.
 *
 * Every device the driver creates is on shca_devs from just before
 * ib_register_device() until it is reaped, and the list holds a reference
 * on its struct device. A device taken off the list goes through
 * shca_finish_unlisted(): ib_unregister_device() there either removes
 * the device or, if someone else (`rdma link del`) is already removing it,
 * waits until that has finished, including our dealloc_driver. So once the
 * list is empty no ib_core path can still be running driver code, which is
 * what module exit needs, without ib_unregister_driver().
 */
#include <linux/if_arp.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>
#include <linux/rtnetlink.h>
#include <linux/workqueue.h>
#include <rdma/rdma_netlink.h>

#include "softhca.h"

unsigned int shca_max_comp_vectors = 64;
module_param_named(max_comp_vectors, shca_max_comp_vectors, uint, 0444);
MODULE_PARM_DESC(max_comp_vectors,
		 "Completion vectors per device at most (default 64; also capped by online CPUs and the HCA)");

/* Parent of every ib_device: its modalias is SOFTHCA_MODALIAS. */
static struct platform_device *shca_pdev;

/*
 * Lock order: RTNL, then shca_devs_lock. Neither is held across an ib_core
 * call that may unregister a device or call back into dealloc_driver.
 */
static DEFINE_MUTEX(shca_devs_lock);
static LIST_HEAD(shca_devs);

static void shca_reap_work_fn(struct work_struct *work);
static DECLARE_WORK(shca_reap_work, shca_reap_work_fn);

/*
 * @sdev was just taken off the list: make sure it is fully unregistered
 * (or wait for whoever is unregistering it) and drop the list's reference.
 */
static void shca_finish_unlisted(struct shca_dev *sdev)
{
	ib_unregister_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);	/* the list's reference */
}

static bool shca_reapable(struct shca_dev *sdev)
{
	return sdev->state == SHCA_DEV_DEAD ||
	       (sdev->state == SHCA_DEV_LIVE && sdev->unplug);
}

/*
 * Unregister devices whose netdev went away and release dead ones, outside
 * of RTNL and of any ib_core lock.
 */
static void shca_reap_work_fn(struct work_struct *work)
{
	struct shca_dev *sdev, *found;

	for (;;) {
		found = NULL;
		mutex_lock(&shca_devs_lock);
		list_for_each_entry(sdev, &shca_devs, list) {
			if (shca_reapable(sdev)) {
				found = sdev;
				list_del_init(&sdev->list);
				break;
			}
		}
		mutex_unlock(&shca_devs_lock);
		if (!found)
			return;
		shca_finish_unlisted(found);
	}
}

/* From dealloc_driver: the device is unregistered (or never was). */
void shca_dev_dead(struct shca_dev *sdev)
{
	mutex_lock(&shca_devs_lock);
	sdev->state = SHCA_DEV_DEAD;
	shca_debugfs_del_dev(sdev);
	if (!list_empty(&sdev->list))
		queue_work(system_unbound_wq, &shca_reap_work);
	mutex_unlock(&shca_devs_lock);
}

static struct shca_dev *shca_find_by_netdev(struct net_device *ndev)
{
	struct shca_dev *sdev;

	lockdep_assert_held(&shca_devs_lock);
	list_for_each_entry(sdev, &shca_devs, list)
		if (sdev->ndev == ndev && sdev->state != SHCA_DEV_DEAD)
			return sdev;
	return NULL;
}

/* `rdma link add NAME type softhca netdev IF`; ib_core holds @ndev. */
static bool shca_name_taken(const char *name)
{
	struct ib_device *ibdev;

	/* RDMA_DRIVER_UNKNOWN: a device of any driver holds the name. */
	ibdev = ib_device_get_by_name(name, RDMA_DRIVER_UNKNOWN);
	if (!ibdev)
		return false;
	ib_device_put(ibdev);
	return true;
}

static int shca_newlink(const char *name, struct net_device *ndev)
{
	struct shca_dev *sdev;
	int err;

	if (ndev->type != ARPHRD_ETHER)
		return -EINVAL;
	/* Cheap early answer; the check that counts is made again below. */
	mutex_lock(&shca_devs_lock);
	sdev = shca_find_by_netdev(ndev);
	mutex_unlock(&shca_devs_lock);
	if (sdev)
		return -EEXIST;
	/*
	 * ib_core answers a taken name with -ENFILE from deep inside
	 * registration; say EEXIST up front. A racing add still gets ENFILE.
	 */
	if (shca_name_taken(name))
		return -EEXIST;

	sdev = shca_dev_alloc(name, ndev, &shca_pdev->dev);
	if (IS_ERR(sdev))
		return PTR_ERR(sdev);

	rtnl_lock();
	mutex_lock(&shca_devs_lock);
	if (ndev->reg_state != NETREG_REGISTERED) {
		err = -ENODEV;
	} else if (shca_find_by_netdev(ndev)) {
		err = -EEXIST;
	} else {
		err = 0;
		sdev->state = SHCA_DEV_REGISTERING;
		list_add_tail(&sdev->list, &shca_devs);
		get_device(&sdev->ibdev.dev);	/* the list's */
		get_device(&sdev->ibdev.dev);	/* ours, until we return */
	}
	mutex_unlock(&shca_devs_lock);
	rtnl_unlock();
	if (err) {
		ib_dealloc_device(&sdev->ibdev);
		return err;
	}

	err = ib_register_device(&sdev->ibdev, name, NULL);

	rtnl_lock();
	mutex_lock(&shca_devs_lock);
	if (err) {
		/* Nobody else takes a REGISTERING device off the list. */
		list_del_init(&sdev->list);
	} else if (sdev->state == SHCA_DEV_REGISTERING) {
		/* Not yet removed again by `rdma link del`. */
		sdev->state = SHCA_DEV_LIVE;
		shca_port_init(sdev);
		shca_debugfs_add_dev(sdev);
		/* The netdev may have left while we were registering. */
		if (sdev->unplug || ndev->reg_state != NETREG_REGISTERED) {
			sdev->unplug = true;
			queue_work(system_unbound_wq, &shca_reap_work);
		}
	}
	mutex_unlock(&shca_devs_lock);
	rtnl_unlock();

	if (err) {
		ib_dealloc_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);	/* the list's */
	}
	put_device(&sdev->ibdev.dev);
	return err;
}

static struct rdma_link_ops shca_link_ops = {
	.type = "softhca",
	.newlink = shca_newlink,
};

static int shca_netdev_event(struct notifier_block *nb, unsigned long event,
			     void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct shca_dev *sdev;

	switch (event) {
	case NETDEV_UNREGISTER:
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		break;
	default:
		return NOTIFY_DONE;
	}

	mutex_lock(&shca_devs_lock);
	sdev = shca_find_by_netdev(ndev);
	if (!sdev)
		goto out;
	if (event == NETDEV_UNREGISTER) {
		/* ib_core holds the netdev until the device is unregistered. */
		sdev->unplug = true;
		if (sdev->state == SHCA_DEV_LIVE)
			queue_work(system_unbound_wq, &shca_reap_work);
	} else if (sdev->state == SHCA_DEV_LIVE && !sdev->unplug) {
		shca_port_update(sdev);
	}
out:
	mutex_unlock(&shca_devs_lock);
	return NOTIFY_DONE;
}

static struct notifier_block shca_netdev_nb = {
	.notifier_call = shca_netdev_event,
};

static int __init shca_init(void)
{
	int err;

	shca_pdev = platform_device_register_simple("softhca",
						    PLATFORM_DEVID_NONE,
						    NULL, 0);
	if (IS_ERR(shca_pdev))
		return PTR_ERR(shca_pdev);

	shca_debugfs_init();

	err = hca_model_init();
	if (err)
		goto err_pdev;
	err = register_netdevice_notifier(&shca_netdev_nb);
	if (err)
		goto err_model;

	rdma_link_register(&shca_link_ops);
	return 0;

err_model:
	hca_model_exit();
err_pdev:
	shca_debugfs_exit();
	platform_device_unregister(shca_pdev);
	return err;
}

static void __exit shca_exit(void)
{
	struct shca_dev *sdev;

	/* No new device after this (it waits for a running newlink). */
	rdma_link_unregister(&shca_link_ops);
	unregister_netdevice_notifier(&shca_netdev_nb);

	for (;;) {
		mutex_lock(&shca_devs_lock);
		sdev = list_first_entry_or_null(&shca_devs, struct shca_dev,
						list);
		if (sdev)
			list_del_init(&sdev->list);
		mutex_unlock(&shca_devs_lock);
		if (!sdev)
			break;
		shca_finish_unlisted(sdev);
	}
	/* A reaper that already took a device off the list finishes it. */
	cancel_work_sync(&shca_reap_work);

	hca_model_exit();
	shca_debugfs_exit();
	platform_device_unregister(shca_pdev);
}

module_init(shca_init);
module_exit(shca_exit);

MODULE_DESCRIPTION("softhca: software model of an mlx5-style RoCE HCA");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RDMA_LINK("softhca");
