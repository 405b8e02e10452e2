// SPDX-License-Identifier: GPL-2.0
/*
 * rlkey: the reserved lkey of kernel QPs (key 0, kernel virtual addresses;
 * Documentation/kernel.md "Kernel verbs") is nothing to a user QP. Aimed at
 * a real direct-mapped/kernel-image address (a data symbol from
 * /proc/kallsyms, which the model's virt_addr_valid() check accepts), a
 * SEND gathering with lkey 0 fails with LOC_PROT_ERR and sends nothing, a
 * READ scattering to it fails likewise, and an RDMA WRITE with rkey 0 fails
 * with REM_ACCESS_ERR on the sender. Runs in the VM as root (kallsyms
 * shows real addresses only to root).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "rc.h"

#define WC_MS	5000

/* Address of a kernel data symbol, or 0. */
static uint64_t ksym(const char *name)
{
	char line[256], sym[128], type;
	unsigned long long addr;
	FILE *f = fopen("/proc/kallsyms", "r");
	uint64_t found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, sym) == 3 &&
		    !strcmp(sym, name)) {
			found = addr;
			break;
		}
	}
	fclose(f);
	return found;
}

FIXTURE(rl) {
	struct rc_pair p;
	uint64_t kaddr;
};

FIXTURE_SETUP(rl)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->kaddr = ksym("jiffies_64");
	ASSERT_NE(0, self->kaddr) TH_LOG("no jiffies_64 in /proc/kallsyms");
}

FIXTURE_TEARDOWN(rl)
{
	rc_pair_destroy(&self->p);
}

#define A (&self->p.e[0])
#define B (&self->p.e[1])

static void expect_status(struct __test_metadata *_metadata,
			  struct ibv_cq *cq, uint64_t wr_id,
			  enum ibv_wc_status st)
{
	struct ibv_wc wc;

	ASSERT_EQ(1, rc_poll(cq, &wc, 1, WC_MS));
	EXPECT_EQ(wr_id, wc.wr_id) TH_LOG("%s", rc_wc_str(&wc));
	EXPECT_EQ(st, wc.status) TH_LOG("%s", rc_wc_str(&wc));
}

TEST_F(rl, send_gathering_with_lkey_0_is_a_protection_error)
{
	ASSERT_EQ(0, rc_post_recv(B->qp, 7, B->buf, 64, B->mr->lkey));
	memset(B->buf, 0, 64);
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_SEND, 1,
				  (void *)(uintptr_t)self->kaddr, 8, 0, 0, 0,
				  IBV_SEND_SIGNALED, 0));
	expect_status(_metadata, A->scq, 1, IBV_WC_LOC_PROT_ERR);
	/* Nothing left: B's receive is not consumed, its buffer untouched. */
	EXPECT_EQ(0, rc_poll_none(B->rcq, 100));
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(0, B->buf[i]);
}

TEST_F(rl, read_scattering_with_lkey_0_is_a_protection_error)
{
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_READ, 2,
				  (void *)(uintptr_t)self->kaddr, 8, 0,
				  (uintptr_t)B->buf, B->mr->rkey,
				  IBV_SEND_SIGNALED, 0));
	expect_status(_metadata, A->scq, 2, IBV_WC_LOC_PROT_ERR);
}

TEST_F(rl, write_with_rkey_0_is_a_remote_access_error)
{
	ASSERT_EQ(0, rc_post_send(A->qp, IBV_WR_RDMA_WRITE, 3, A->buf, 8,
				  A->mr->lkey, self->kaddr, 0,
				  IBV_SEND_SIGNALED, 0));
	expect_status(_metadata, A->scq, 3, IBV_WC_REM_ACCESS_ERR);
}

TEST_HARNESS_MAIN
