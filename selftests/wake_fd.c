// SPDX-License-Identifier: GPL-2.0
/*
 * The wake fd (kernel/wake.c, user/engine.c): the cheap way in for the
 * wake-up call the provider makes when the engine thread sleeps.
 * - WAKE_FD_OPEN gives an O_CLOEXEC anon-inode fd, once per context
 *   (EEXIST after), and no fd when the call fails;
 * - fsync() (the kick) returns 0 while the context lives; every ioctl is
 *   ENOTTY; after the context is closed, or its device removed
 *   (disassociate), the kick fails with EIO;
 * - kicks racing with the context's close from another thread return 0
 *   or EIO, never anything else, and EIO from then on;
 * - an open wake fd holds a reference on softhca_wakefd.ko (which owns its
 *   file operations), none on softhca.ko;
 * - with the engine thread not polling, the provider posts through its
 *   wake fd (opened on the first wake-up call, one per context), and with
 *   SOFTHCA_NO_WAKE_FD=1 through the ENGINE_WAKE method; both complete
 *   every WR and make exactly one wake-up call per post.
 */
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/softhca-abi.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "util.h"
#include "verbs_util.h"

#define PARAM		"/sys/module/softhca/parameters/"

static int wake_fd_open(struct ibv_context *ctx)
{
	return wake_fd_open_len(ctx, sizeof(uint32_t));
}

static int kick(int fd)
{
	return fsync(fd) ? -errno : 0;
}

/* How many of this process's fds are wake fds. */
static int count_wake_fds(void)
{
	return count_fds(WAKE_FD_NAME);
}

static long read_long(const char *path)
{
	char buf[64];

	if (read_line(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static int write_param(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), PARAM "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

FIXTURE(wake) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(wake)
{
	self->ctx = open_dev("shca0");
	ASSERT_NE(NULL, self->ctx);
}

FIXTURE_TEARDOWN(wake)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(wake, open_gives_one_cloexec_anon_fd)
{
	char path[64], link[128];
	ssize_t l;
	int fd = wake_fd_open(self->ctx);

	ASSERT_LE(0, fd) TH_LOG("WAKE_FD_OPEN: %s", strerror(-fd));
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	l = readlink(path, link, sizeof(link) - 1);
	ASSERT_LT(0, l);
	link[l] = 0;
	EXPECT_STREQ(WAKE_FD_NAME, link);
	EXPECT_EQ(1, count_wake_fds());

	/* One per context. */
	EXPECT_EQ(-EEXIST, wake_fd_open(self->ctx));
	EXPECT_EQ(1, count_wake_fds());

	EXPECT_EQ(0, kick(fd));
	EXPECT_EQ(0, kick(fd));
	EXPECT_EQ(0, fdatasync(fd) ? -errno : 0);
	EXPECT_EQ(-ENOTTY, ioctl(fd, _IO(0x1b, 0x40), 0) ? -errno : 0);
	EXPECT_EQ(-ENOTTY, ioctl(fd, RDMA_VERBS_IOCTL, 0) ? -errno : 0);
	close(fd);
}

TEST_F(wake, bad_out_attribute_leaks_no_fd)
{
	int before = count_wake_fds();

	/* Too short for a u32: uverbs refuses it before the handler. */
	EXPECT_GT(0, wake_fd_open_len(self->ctx, 2));
	EXPECT_EQ(before, count_wake_fds());
	/* The context can still have its one wake fd. */
	EXPECT_LE(0, wake_fd_open(self->ctx));
	EXPECT_EQ(before + 1, count_wake_fds());
}

#define REFCNT(mod)	"/sys/module/" mod "/refcnt"

/* The file outlives its context; it pins softhca_wakefd, not softhca. */
TEST_F(wake, kick_after_close_is_eio_and_fd_pins_only_wakefd)
{
	long ref0 = read_long(REFCNT("softhca_wakefd"));
	long sref = read_long(REFCNT("softhca"));
	int fd = wake_fd_open(self->ctx);

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ref0);
	ASSERT_LE(0, sref);
	EXPECT_EQ(ref0 + 1, read_long(REFCNT("softhca_wakefd")));
	EXPECT_EQ(sref, read_long(REFCNT("softhca")));
	EXPECT_EQ(0, kick(fd));

	ibv_close_device(self->ctx);
	self->ctx = NULL;
	EXPECT_EQ(-EIO, kick(fd));
	EXPECT_EQ(ref0 + 1, read_long(REFCNT("softhca_wakefd")));
	EXPECT_EQ(sref, read_long(REFCNT("softhca")));
	close(fd);
	/* fput of the last reference is deferred to our return to user. */
	EXPECT_EQ(ref0, read_long(REFCNT("softhca_wakefd")));
}

struct kicker {
	int fd;
	volatile int stop;
	long ok, eio, other;
};

static void *kick_loop(void *arg)
{
	struct kicker *k = arg;

	while (!k->stop) {
		int ret = kick(k->fd);

		if (!ret)
			k->ok++;
		else if (ret == -EIO)
			k->eio++;
		else
			k->other++;
	}
	return NULL;
}

TEST_F(wake, kicks_racing_with_close)
{
	struct kicker k = {};
	pthread_t t[2];
	int i;

	k.fd = wake_fd_open(self->ctx);
	ASSERT_LE(0, k.fd);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, kick_loop, &k));
	usleep(20000);
	ibv_close_device(self->ctx);
	self->ctx = NULL;
	usleep(20000);
	k.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	EXPECT_LT(0, k.ok);
	EXPECT_LT(0, k.eio);
	EXPECT_EQ(0, k.other);
	EXPECT_EQ(-EIO, kick(k.fd));
	close(k.fd);
}

TEST(kick_after_device_removal_is_eio)
{
	struct ibv_context *ctx;
	int added, fd;

	rc_shca1_guard();
	added = rc_shca1_add();
	ASSERT_LE(0, added) TH_LOG("%s", rc_err);
	ctx = open_dev("shca1");
	ASSERT_NE(NULL, ctx);
	fd = wake_fd_open(ctx);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, kick(fd));

	/* Disassociate: the device goes although we hold it. */
	ASSERT_EQ(0, rc_shca1_del()) TH_LOG("%s", rc_err);
	EXPECT_EQ(-EIO, kick(fd));
	close(fd);
	ibv_close_device(ctx);
	if (!added)
		EXPECT_LE(0, rc_shca1_add());
}

FIXTURE(nopoll) {
	int unused;
};

FIXTURE_SETUP(nopoll)
{
}

/* Whatever happened, the next suite finds the engine polling again. */
FIXTURE_TEARDOWN(nopoll)
{
	write_param("engine_poll", "1");
}

/*
 * 200 SENDs with the engine thread told not to poll: each post's wake-up
 * call carries it; with or without the wake fd.
 */
static void posts_through_wake_calls(struct __test_metadata *_metadata,
				     bool no_wake_fd)
{
	struct rc_pair p = {};
	struct rc_cfg c;
	struct ibv_wc wc;
	long w0, w1;
	int i;

	if (no_wake_fd)
		setenv("SOFTHCA_NO_WAKE_FD", "1", 1);
	else
		unsetenv("SOFTHCA_NO_WAKE_FD");
	rc_cfg_default(&c, RC_SAME_CTX);
	ASSERT_EQ(0, rc_pair_open(&p, &c)) TH_LOG("%s", rc_err);
	unsetenv("SOFTHCA_NO_WAKE_FD");
	ASSERT_EQ(0, write_param("engine_poll", "0"));

	w0 = read_long(PARAM "engine_wakeups");
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, rc_post_recv(p.e[1].qp, i, p.e[1].buf, 64,
					  p.e[1].mr->lkey));
		ASSERT_EQ(0, rc_post_send(p.e[0].qp, IBV_WR_SEND, i,
					  p.e[0].buf, 8, p.e[0].mr->lkey, 0, 0,
					  IBV_SEND_SIGNALED, 0));
		ASSERT_EQ(1, rc_poll(p.e[1].rcq, &wc, 1, 5000)) TH_LOG("post %d", i);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(8, wc.byte_len);
		ASSERT_EQ(1, rc_poll(p.e[0].scq, &wc, 1, 5000));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ((uint64_t)i, wc.wr_id);
	}
	w1 = read_long(PARAM "engine_wakeups");
	/* post_recv rings no engine; each post_send one call. */
	EXPECT_LE(200, w1 - w0);
	EXPECT_GE(200 + 20, w1 - w0);
	EXPECT_EQ(no_wake_fd ? 0 : 1, count_wake_fds());
	rc_pair_destroy(&p);
	EXPECT_EQ(0, count_wake_fds());
}

TEST_F(nopoll, provider_posts_through_its_wake_fd)
{
	posts_through_wake_calls(_metadata, false);
}

TEST_F(nopoll, provider_without_wake_fd_uses_the_method)
{
	posts_through_wake_calls(_metadata, true);
}

TEST_HARNESS_MAIN
