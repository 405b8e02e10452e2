// SPDX-License-Identifier: GPL-2.0
/*
 * softhca verbs driver: debugfs. /sys/kernel/debug/softhca/<ibdev>/caps
 * lists, one "key value" a line, the device attributes the driver reported
 * to ib_core (named as ibv_devinfo names them) and the raw QUERY_CAPS answer
 * (hca_*). The directory is named when the device registers; a later
 * `rdma dev set ... name` does not rename it. eq.c adds its EQ files.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "softhca.h"

static struct dentry *shca_debugfs_root;

static int shca_caps_show(struct seq_file *m, void *unused)
{
	struct shca_dev *sdev = m->private;
	const struct ib_device_attr *a = &sdev->ibdev.attrs;
	const struct hca_caps *c = &sdev->caps;

	seq_printf(m, "vendor_id 0x%x\n", a->vendor_id);
	seq_printf(m, "vendor_part_id %u\n", a->vendor_part_id);
	seq_printf(m, "hw_ver 0x%x\n", a->hw_ver);
	seq_printf(m, "fw_ver 0x%llx\n", a->fw_ver);
	seq_printf(m, "max_mr_size 0x%llx\n", a->max_mr_size);
	seq_printf(m, "page_size_cap 0x%llx\n", a->page_size_cap);
	seq_printf(m, "max_qp %d\n", a->max_qp);
	seq_printf(m, "max_qp_wr %d\n", a->max_qp_wr);
	seq_printf(m, "device_cap_flags 0x%08x\n",
		   lower_32_bits(a->device_cap_flags));
	seq_printf(m, "device_cap_flags_ex 0x%llx\n", a->device_cap_flags);
	seq_printf(m, "max_sge %d\n", min(a->max_send_sge, a->max_recv_sge));
	seq_printf(m, "max_send_sge %d\n", a->max_send_sge);
	seq_printf(m, "max_recv_sge %d\n", a->max_recv_sge);
	seq_printf(m, "max_sge_rd %d\n", a->max_sge_rd);
	seq_printf(m, "max_cq %d\n", a->max_cq);
	seq_printf(m, "max_cqe %d\n", a->max_cqe);
	seq_printf(m, "max_mr %d\n", a->max_mr);
	seq_printf(m, "max_pd %d\n", a->max_pd);
	seq_printf(m, "max_qp_rd_atom %d\n", a->max_qp_rd_atom);
	seq_printf(m, "max_ee_rd_atom %d\n", a->max_ee_rd_atom);
	seq_printf(m, "max_res_rd_atom %d\n", a->max_res_rd_atom);
	seq_printf(m, "max_qp_init_rd_atom %d\n", a->max_qp_init_rd_atom);
	seq_printf(m, "max_ee_init_rd_atom %d\n", a->max_ee_init_rd_atom);
	seq_printf(m, "atomic_cap %d\n", a->atomic_cap);
	seq_printf(m, "max_ee %d\n", a->max_ee);
	seq_printf(m, "max_rdd %d\n", a->max_rdd);
	seq_printf(m, "max_mw %d\n", a->max_mw);
	seq_printf(m, "max_raw_ipv6_qp %d\n", a->max_raw_ipv6_qp);
	seq_printf(m, "max_raw_ethy_qp %d\n", a->max_raw_ethy_qp);
	seq_printf(m, "max_mcast_grp %d\n", a->max_mcast_grp);
	seq_printf(m, "max_mcast_qp_attach %d\n", a->max_mcast_qp_attach);
	seq_printf(m, "max_total_mcast_qp_attach %d\n",
		   a->max_total_mcast_qp_attach);
	seq_printf(m, "max_ah %d\n", a->max_ah);
	seq_puts(m, "max_fmr 0\n");
	seq_printf(m, "max_srq %d\n", a->max_srq);
	seq_printf(m, "max_srq_wr %d\n", a->max_srq_wr);
	seq_printf(m, "max_srq_sge %d\n", a->max_srq_sge);
	seq_printf(m, "max_pkeys %u\n", a->max_pkeys);
	seq_printf(m, "local_ca_ack_delay %u\n", a->local_ca_ack_delay);
	seq_printf(m, "num_comp_vectors %d\n", sdev->ibdev.num_comp_vectors);

	seq_printf(m, "hca_model_rev %u\n", c->model_rev);
	seq_printf(m, "hca_max_mtu %u\n", c->max_mtu);
	seq_printf(m, "hca_gid_tbl_len %u\n", c->gid_tbl_len);
	seq_printf(m, "hca_pkey_tbl_len %u\n", c->pkey_tbl_len);
	seq_printf(m, "hca_max_msg_sz 0x%x\n", c->max_msg_sz);
	seq_printf(m, "hca_wqebb_size %u\n", c->wqebb_size);
	seq_printf(m, "hca_max_wqe_size %u\n", c->max_wqe_size);
	seq_printf(m, "hca_cqe_size %u\n", c->cqe_size);
	seq_printf(m, "hca_eqe_size %u\n", c->eqe_size);
	seq_printf(m, "hca_bf_buf_size %u\n", c->bf_buf_size);
	seq_printf(m, "hca_max_sq_wqebbs %u\n", c->max_sq_wqebbs);
	seq_printf(m, "hca_max_rq_wqes %u\n", c->max_rq_wqes);
	seq_printf(m, "hca_max_inline_data %u\n", c->max_inline_data);
	seq_printf(m, "hca_max_uar %u\n", c->max_uar);
	seq_printf(m, "hca_max_comp_eqs %u\n", c->max_comp_eqs);
	seq_printf(m, "hca_max_q_counters %u\n", c->max_q_counters);
	seq_printf(m, "hca_flags 0x%llx\n", c->flags);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(shca_caps);

void shca_debugfs_init(void)
{
	shca_debugfs_root = debugfs_create_dir("softhca", NULL);
}

void shca_debugfs_exit(void)
{
	debugfs_remove_recursive(shca_debugfs_root);
	shca_debugfs_root = NULL;
}

/* Called under shca_devs_lock once the device is registered. */
void shca_debugfs_add_dev(struct shca_dev *sdev)
{
	char name[IB_DEVICE_NAME_MAX];
	struct dentry *old;

	if (IS_ERR_OR_NULL(shca_debugfs_root))
		return;
	strscpy(name, sdev->ibdev.name, sizeof(name));
	/* A renamed device may still hold this name: go without. */
	old = debugfs_lookup(name, shca_debugfs_root);
	if (old) {
		dput(old);
		return;
	}
	sdev->dbg_dir = debugfs_create_dir(name, shca_debugfs_root);
	debugfs_create_file("caps", 0400, sdev->dbg_dir, sdev,
			    &shca_caps_fops);
	shca_eqs_debugfs_add(sdev, sdev->dbg_dir);
}

/* Called under shca_devs_lock; waits for readers of the files. */
void shca_debugfs_del_dev(struct shca_dev *sdev)
{
	debugfs_remove_recursive(sdev->dbg_dir);
	sdev->dbg_dir = NULL;
}
