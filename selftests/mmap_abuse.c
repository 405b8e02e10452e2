// SPDX-License-Identifier: GPL-2.0
/*
 * What a process can do with the device's mappings, and what it cannot.
 * The mappings (UAR page with its doorbell area, read-only device page, CQ
 * ring, QP queues) are found black-box in /proc/self/maps, with their
 * offsets on the uverbs fd:
 * - each offset maps again only as it is: same length, MAP_SHARED, never
 *   executable; the device page never writable, not even by mprotect();
 *   none grows with mremap();
 * - an offset whose object was destroyed maps no more;
 * - a forked child that keeps writing into the parent's queues after the
 *   parent destroyed them and exited harms nobody: the memory lives until
 *   the last mapping goes, objects are all freed, dmesg stays clean.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "verbs_util.h"

#define MAX_MAPS	32

struct dev_map {
	unsigned long start, len, pgoff;
	bool writable;
};

/* Every mapping of a uverbs device in this process. */
static int uverbs_maps(struct dev_map *m, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long start, end, off;
		char perms[8];

		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms,
			   &off) != 4)
			continue;
		m[n].start = start;
		m[n].len = end - start;
		m[n].pgoff = off;
		m[n].writable = perms[1] == 'w';
		n++;
	}
	fclose(f);
	return n;
}

FIXTURE(maps) {
	struct rc_pair p;
	struct dev_map m[MAX_MAPS];
	int n;
	int fd;
};

FIXTURE_SETUP(maps)
{
	struct rc_cfg c;

	rc_cfg_default(&c, RC_SAME_CTX);
	ASSERT_EQ(0, rc_pair_open(&self->p, &c)) TH_LOG("%s", rc_err);
	self->fd = self->p.e[0].ctx->cmd_fd;
	self->n = uverbs_maps(self->m, MAX_MAPS);
	/* UAR (with its doorbell area), device page, 4 CQs, 2 QPs. */
	ASSERT_GE(self->n, 8);
}

FIXTURE_TEARDOWN(maps)
{
	rc_pair_destroy(&self->p);
}

static void *map_at(int fd, size_t len, int prot, int flags, unsigned long off)
{
	return mmap(NULL, len, prot, flags, fd, off);
}

TEST_F(maps, each_offset_maps_again_only_as_it_is)
{
	for (int i = 0; i < self->n; i++) {
		const struct dev_map *m = &self->m[i];
		int prot = PROT_READ | (m->writable ? PROT_WRITE : 0);
		void *p;

		/* As it is: fine (and unmapped again). */
		p = map_at(self->fd, m->len, prot, MAP_SHARED, m->pgoff);
		ASSERT_NE(MAP_FAILED, p) TH_LOG("map %d off %#lx len %#lx: %s",
						i, m->pgoff, m->len, strerror(errno));
		munmap(p, m->len);
		/* Executable, private, longer, shorter: refused. */
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, m->len, prot | PROT_EXEC,
					     MAP_SHARED, m->pgoff));
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, m->len, prot,
					     MAP_PRIVATE, m->pgoff));
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, m->len + 4096, prot,
					     MAP_SHARED, m->pgoff));
		if (m->len > 4096)
			EXPECT_EQ(MAP_FAILED, map_at(self->fd, m->len - 4096,
						     prot, MAP_SHARED, m->pgoff));
		/* A page into the mapping is not an offset of anything. */
		if (m->len > 4096)
			EXPECT_EQ(MAP_FAILED, map_at(self->fd, 4096, prot,
						     MAP_SHARED,
						     m->pgoff + 4096));
	}
}

TEST_F(maps, device_page_is_never_writable)
{
	int ro = 0;

	for (int i = 0; i < self->n; i++) {
		const struct dev_map *m = &self->m[i];
		void *p;

		if (m->writable)
			continue;
		ro++;
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, m->len,
					     PROT_READ | PROT_WRITE,
					     MAP_SHARED, m->pgoff));
		EXPECT_EQ(EPERM, errno);
		p = map_at(self->fd, m->len, PROT_READ, MAP_SHARED, m->pgoff);
		ASSERT_NE(MAP_FAILED, p);
		EXPECT_EQ(-1, mprotect(p, m->len, PROT_READ | PROT_WRITE));
		EXPECT_EQ(-1, mprotect(p, m->len, PROT_READ | PROT_EXEC));
		munmap(p, m->len);
	}
	/* The provider's own mapping of the device page is the one. */
	EXPECT_EQ(1, ro);
}

TEST_F(maps, no_mapping_grows)
{
	for (int i = 0; i < self->n; i++) {
		const struct dev_map *m = &self->m[i];
		int prot = PROT_READ | (m->writable ? PROT_WRITE : 0);
		void *p = map_at(self->fd, m->len, prot, MAP_SHARED, m->pgoff);
		void *q;

		ASSERT_NE(MAP_FAILED, p);
		q = mremap(p, m->len, m->len + 4096, MREMAP_MAYMOVE);
		EXPECT_EQ(MAP_FAILED, q) TH_LOG("map %d grew", i);
		munmap(q == MAP_FAILED ? p : q,
		       q == MAP_FAILED ? m->len : m->len + 4096);
	}
}

TEST_F(maps, destroyed_objects_offsets_map_no_more)
{
	struct dev_map before[MAX_MAPS], after[MAX_MAPS];
	int nb = self->n, na, gone = 0;

	memcpy(before, self->m, sizeof(before));
	/* The QPs' mappings go with them. */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, ibv_destroy_qp(self->p.e[i].qp));
		self->p.e[i].qp = NULL;
	}
	na = uverbs_maps(after, MAX_MAPS);
	ASSERT_EQ(nb - 2, na);
	for (int i = 0; i < nb; i++) {
		bool still = false;

		for (int j = 0; j < na; j++)
			still |= after[j].pgoff == before[i].pgoff;
		if (still)
			continue;
		gone++;
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, before[i].len,
					     PROT_READ | PROT_WRITE,
					     MAP_SHARED, before[i].pgoff));
		EXPECT_EQ(EINVAL, errno);
	}
	EXPECT_EQ(2, gone);
}

/*
 * A child forked with the queues mapped scribbles over them while the
 * parent destroys everything and exits; the kernel frees the objects and
 * keeps the memory until the child's mappings go.
 */
TEST(child_writes_after_parent_is_gone)
{
	long qp0 = res_count("shca0", "qp"), cq0 = res_count("shca0", "cq");
	int sync_pipe[2], status;
	pid_t parent, child;

	ASSERT_EQ(0, pipe(sync_pipe));
	parent = fork();
	ASSERT_LE(0, parent);
	if (!parent) {
		struct dev_map m[MAX_MAPS];
		struct rc_pair p;
		struct rc_cfg c;
		int n;

		rc_cfg_default(&c, RC_SAME_CTX);
		if (rc_pair_open(&p, &c))
			_exit(10);
		n = uverbs_maps(m, MAX_MAPS);
		child = fork();
		if (child < 0)
			_exit(11);
		if (!child) {
			char ok = 0;

			/* Wait until the parent is gone, then keep writing. */
			close(sync_pipe[1]);
			if (read(sync_pipe[0], &ok, 1) != 0)
				_exit(12);
			for (int round = 0; round < 200; round++)
				for (int i = 0; i < n; i++)
					if (m[i].writable)
						memset((void *)m[i].start, round,
						       m[i].len);
			_exit(0);
		}
		/* Traffic the child's garbage may meet, then go. */
		rc_post_recv(p.e[1].qp, 1, p.e[1].buf, 64, p.e[1].mr->lkey);
		rc_post_send(p.e[0].qp, IBV_WR_SEND, 1, p.e[0].buf, 64,
			     p.e[0].mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0);
		rc_pair_destroy(&p);
		_exit(0);	/* closes the pipe: the child starts */
	}
	close(sync_pipe[1]);
	close(sync_pipe[0]);
	ASSERT_EQ(parent, waitpid(parent, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* The grandchild is not ours to wait for: wait for the counts. */
	for (int i = 0; i < 500; i++) {
		if (res_count("shca0", "qp") == qp0 &&
		    res_count("shca0", "cq") == cq0)
			break;
		usleep(10000);
	}
	EXPECT_EQ(qp0, res_count("shca0", "qp"));
	EXPECT_EQ(cq0, res_count("shca0", "cq"));
	/* Give the grandchild time to finish its writes and exit. */
	usleep(300000);
}

TEST_HARNESS_MAIN
