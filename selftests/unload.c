// SPDX-License-Identifier: GPL-2.0
/*
 * Unloading softhca with live users (Documentation/kernel.md, "Unloading
 * with live users"): `rmmod softhca`, or `rdma link del` then `rmmod`,
 * disassociates every user of the device instead of failing with EBUSY or
 * waiting for them, as mlx5_ib does.
 * - under_traffic (variants: rmmod or link del + rmmod, each with a stock
 *   tool pair running between two processes on shca0: ib_write_bw,
 *   ib_send_lat, ib_send_lat -e, ibv_rc_pingpong): this process holds two
 *   contexts with PDs, MRs, CQs on completion channels and a connected RC
 *   pair moving WRITEs and SENDs, their mappings, the provider's wake fd
 *   and one of its own being kicked, and a thread asleep in
 *   ibv_get_cq_event. With all that open softhca's refcount is 0. The
 *   unload takes less than 1 s; both contexts get IBV_EVENT_DEVICE_FATAL;
 *   the traffic thread's poll_cq fails with EIO; the sleeper wakes with
 *   EIO; kicks fail with EIO, never otherwise; verbs that create or change
 *   fail with EIO, destroys succeed; the mappings stay, the device page
 *   reads as the zero page, writes go somewhere harmless, and no new
 *   mapping can be made; the tools exit by themselves; dmesg stays clean;
 *   the module loads again and moves data.
 * - wake_fd_across_unload (context closed first, or still open): the wake
 *   fd pins softhca_wakefd, not softhca; after the unload fsync is EIO;
 *   softhca_wakefd unloads only once the fd is closed, and loads again.
 * - kill9_rounds: tool pairs and two holder processes (traffic, wake fd,
 *   then the same checks as above after the unload), each killed with
 *   SIGKILL at a random moment before or during the unload or not at all;
 *   every unload succeeds within 1 s, every survivor passes its checks and
 *   exits, dmesg stays clean, the module loads again and moves data.
 * "Within 1 s" holds for a host where an unload without users takes up to
 * 100 ms; when an unload with users took longer, the teardown times one
 * without users and scales the budget by it (judge_slow()): under TCG on a
 * loaded host all of the teardown is slower, not only ours.
 * Every test leaves softhca loaded with shca0 on veth0. SOFTHCA_FUZZ_SEED
 * replays the random choices, SOFTHCA_UNLOAD_ROUNDS (4) sets the rounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/softhca-queue.h>

#include "kselftest_harness.h"
#include "rc.h"
#include "rdmanl.h"
#include "rng.h"
#include "util.h"
#include "verbs_util.h"

/* What the issue asks of an unload with users: done within a second. */
#define UNLOAD_MAX_MS	1000
/* How long survivors get to notice and exit. */
#define EXIT_MAX_MS	10000
#define NOTICE_MS	3000

/* ---- the modules --------------------------------------------------- */

/* @name.ko at the top of the tree this binary was built in (build/selftests/). */
static void ko_path(char *buf, size_t len, const char *name)
{
	char exe[PATH_MAX];
	const char *env = getenv(strcmp(name, "softhca") ? "SOFTHCA_WAKEFD_KO" :
				 "SOFTHCA_KO");
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	snprintf(buf, len, "%s/../../%s.ko", dirname(exe), name);
}

static bool mod_loaded(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", name);
	return !access(path, F_OK);
}

static long mod_refcnt(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), "/sys/module/%s/refcnt", name);
	if (read_line(path, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

static long ms_since(uint64_t t0)
{
	return (long)((rc_now_us() - t0) / 1000);
}

/* delete_module(@name) as rmmod makes it: 0 or -errno; its time in *ms. */
static int mod_unload(const char *name, long *ms)
{
	uint64_t t0 = rc_now_us();
	int ret = syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;

	if (ms)
		*ms = ms_since(t0);
	return ret;
}

static int mod_load(const char *name)
{
	char path[PATH_MAX];
	int fd, ret;

	ko_path(path, sizeof(path), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int gid_ready(void *arg)
{
	struct ibv_context *ctx = open_dev("shca0");
	int ret;

	(void)arg;
	if (!ctx)
		return 0;
	ret = rc_find_gid(ctx, RC_IP0) >= 0;
	ibv_close_device(ctx);
	return ret;
}

/* softhca_wakefd and softhca loaded, shca0 on veth0 with its RoCE GID. */
static int device_back(void)
{
	int ret;

	if (!mod_loaded("softhca_wakefd") && (ret = mod_load("softhca_wakefd")))
		return ret;
	if (!mod_loaded("softhca") && (ret = mod_load("softhca")))
		return ret;
	if (rdmanl_dev_index("shca0") < 0 &&
	    (ret = rdmanl_link_add("shca0", "softhca", "veth0")))
		return ret;
	return wait_until(gid_ready, NULL, 5000) ? 0 : -ETIMEDOUT;
}

/*
 * The slowest unload (or link del) of the test that took UNLOAD_MAX_MS or
 * more: judged at teardown against an unload without users (judge_slow()).
 */
static long slowest_ms;

static void unload_timed(struct __test_metadata *_metadata, const char *what,
			 long ms)
{
	TH_LOG("%s: %ld ms", what, ms);
	if (ms >= UNLOAD_MAX_MS && ms > slowest_ms)
		slowest_ms = ms;
}

/* `rmmod softhca`, after `rdma link del shca0` if @link_del: 0 or -errno. */
static int unload(struct __test_metadata *_metadata, bool link_del)
{
	long ms;
	int ret;

	if (link_del) {
		uint64_t t0 = rc_now_us();

		ret = rdmanl_link_del("shca0");
		unload_timed(_metadata, "rdma link del shca0", ms_since(t0));
		EXPECT_EQ(0, ret);
		if (ret)
			return ret;
	}
	ret = mod_unload("softhca", &ms);
	unload_timed(_metadata, "rmmod softhca", ms);
	EXPECT_EQ(0, ret) TH_LOG("rmmod softhca: %s", strerror(-ret));
	return ret;
}

/*
 * An unload with users must take less than UNLOAD_MAX_MS on a host where
 * one without users takes IDLE_REF_MS or less. Under TCG on a loaded host
 * everything is slower (grace periods, the object teardown): the budget
 * grows with the time an unload without users takes right now. A driver
 * that waits for its users still fails on any host not itself that slow.
 */
#define IDLE_REF_MS	100

static void judge_slow(struct __test_metadata *_metadata)
{
	long idle, limit;

	if (!slowest_ms)
		return;
	if (device_back() || mod_unload("softhca", &idle) || device_back()) {
		EXPECT_GT(UNLOAD_MAX_MS, slowest_ms);
		return;
	}
	limit = UNLOAD_MAX_MS * (idle > IDLE_REF_MS ? idle : IDLE_REF_MS) /
		IDLE_REF_MS;
	TH_LOG("slowest unload with users %ld ms; without users now %ld ms: limit %ld ms",
	       slowest_ms, idle, limit);
	EXPECT_GT(limit, slowest_ms);
	slowest_ms = 0;
}

/* The device works again: a fresh pair moves one SEND. */
static int moves_data(void)
{
	struct rc_pair p = {};
	struct rc_cfg c;
	struct ibv_wc wc;
	int ret;

	rc_cfg_default(&c, RC_TWO_CTX);
	ret = rc_pair_open(&p, &c);
	if (!ret)
		ret = rc_post_recv(p.e[1].qp, 1, p.e[1].buf, 64,
				   p.e[1].mr->lkey);
	if (!ret)
		ret = rc_post_send(p.e[0].qp, IBV_WR_SEND, 2, p.e[0].buf, 64,
				   p.e[0].mr->lkey, 0, 0, IBV_SEND_SIGNALED, 0);
	if (!ret && (rc_poll(p.e[1].rcq, &wc, 1, 5000) != 1 ||
		     wc.status != IBV_WC_SUCCESS || wc.byte_len != 64))
		ret = -EIO;
	rc_pair_destroy(&p);
	return ret;
}

/* ---- stock tools ----------------------------------------------------- */

enum tool { TOOL_WRITE_BW, TOOL_SEND_LAT, TOOL_SEND_LAT_EV, TOOL_PINGPONG,
	    TOOL_COUNT };

static const char *const tool_name[TOOL_COUNT] = {
	"ib_write_bw", "ib_send_lat", "ib_send_lat -e", "ibv_rc_pingpong",
};

struct tool_run {
	pid_t pid[2];		/* server, client */
	char log[2][64];
};

/* Every process a test started, so that its teardown can end them. */
static pid_t spawned[16];

static void spawned_add(pid_t pid)
{
	for (int i = 0; pid > 0 && i < 16; i++)
		if (!spawned[i]) {
			spawned[i] = pid;
			return;
		}
}

static void spawned_del(pid_t pid)
{
	for (int i = 0; i < 16; i++)
		if (spawned[i] == pid)
			spawned[i] = 0;
}

static void spawned_kill_all(void)
{
	for (int i = 0; i < 16; i++)
		if (spawned[i]) {
			kill(spawned[i], SIGKILL);
			waitpid(spawned[i], NULL, 0);
			spawned[i] = 0;
		}
}

/* @argv with stdout and stderr line-buffered into @log. */
static pid_t spawn_logged(char *const argv[], const char *log)
{
	pid_t pid = fork();
	char *args[20] = { "stdbuf", "-oL", "-eL" };
	int fd, n = 3;

	if (pid) {
		spawned_add(pid);
		return pid;
	}
	while (*argv && n < 19)
		args[n++] = *argv++;
	args[n] = NULL;
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
		_exit(126);
	execvp(args[0], args);
	_exit(127);
}

/* A TCP socket listening on @port (v4 or v6)? */
static int listening(void *arg)
{
	static const char *const files[] = { "/proc/net/tcp", "/proc/net/tcp6" };
	unsigned int port = *(unsigned int *)arg, lport, st;
	char line[512];

	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(files[i], "r");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			colon = colon ? strchr(colon + 1, ':') : NULL;
			if (colon && sscanf(colon + 1, "%x %*s %x", &lport, &st) == 2 &&
			    lport == port && st == 0x0a) {
				fclose(f);
				return 1;
			}
		}
		fclose(f);
	}
	return 0;
}

struct marker {
	const char *log, *text;
};

static int log_has(void *arg)
{
	struct marker *m = arg;
	char buf[8192];
	ssize_t n;
	int fd = open(m->log, O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return !!strstr(buf, m->text);
}

/*
 * Server and client of @t on shca0 (TCP @port), running until stopped:
 * back once the client's output says the measurement started.
 */
static int tool_start(struct tool_run *r, enum tool t, unsigned int port,
		      int gid)
{
	char ports[16], gids[16], *argv[16];
	struct marker m;
	int n = 0;

	snprintf(ports, sizeof(ports), "%u", port);
	snprintf(gids, sizeof(gids), "%d", gid);
	argv[n++] = t == TOOL_PINGPONG ? "ibv_rc_pingpong" :
		    t == TOOL_WRITE_BW ? "ib_write_bw" : "ib_send_lat";
	argv[n++] = "-d";
	argv[n++] = "shca0";
	argv[n++] = "-p";
	argv[n++] = ports;
	if (t == TOOL_PINGPONG) {
		argv[n++] = "-g";
		argv[n++] = gids;
		argv[n++] = "-n";
		argv[n++] = "100000000";
	} else if (t == TOOL_SEND_LAT_EV) {
		/* Duration mode does not work with events. */
		argv[n++] = "-e";
		argv[n++] = "-n";
		argv[n++] = "10000000";
	} else {
		argv[n++] = "-D";
		argv[n++] = "60";
	}
	argv[n] = NULL;
	for (int i = 0; i < 2; i++)
		snprintf(r->log[i], sizeof(r->log[i]), "/tmp/unload.%d.%u.log",
			 i, port);
	r->pid[0] = spawn_logged(argv, r->log[0]);
	if (r->pid[0] < 0)
		return -errno;
	if (!wait_until(listening, &port, 20000))
		return -ETIMEDOUT;
	argv[n++] = "127.0.0.1";
	argv[n] = NULL;
	r->pid[1] = spawn_logged(argv, r->log[1]);
	if (r->pid[1] < 0)
		return -errno;
	/* Printed right before the loop that moves the data. */
	m.log = r->log[1];
	m.text = t == TOOL_PINGPONG ? "remote address" : "#bytes";
	if (!wait_until(log_has, &m, 30000))
		return -ETIMEDOUT;
	return 0;
}

/*
 * Wait up to @ms for @pid to exit: 1 if it did (its status in *st), else
 * 0 (then it is killed and reaped).
 */
static int reap(pid_t pid, int ms, int *st)
{
	uint64_t t0 = rc_now_us();

	spawned_del(pid);
	while (ms_since(t0) < ms) {
		if (waitpid(pid, st, WNOHANG) == pid)
			return 1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, st, 0);
	return 0;
}

static void print_log(const char *log)
{
	sh("sed 's/^/#   /' %s | tail -n 5 >&2", log);
}

/* ---- the holder: everything a program can keep open ------------------ */

struct holder {
	struct rc_pair p;
	struct ibv_comp_channel *idle_ch;	/* of idle_cq: never an event */
	struct ibv_cq *idle_cq;
	int wake_fd;				/* ours, on e[1]'s context */
	pthread_t traffic, sleeper, kicker;
	bool threads;
	/* Written by the threads. */
	volatile int stop;
	long moved;				/* traffic: round trips */
	int traffic_ret;			/* -errno that ended it */
	int traffic_done, sleeper_done;
	int sleeper_ret, sleeper_errno;
	long kicks_ok, kicks_eio, kicks_other;
};

/* WRITE (unsignaled) and SEND from e[0] to e[1], until an error. */
static void *traffic_fn(void *arg)
{
	struct holder *h = arg;
	struct rc_end *a = &h->p.e[0], *b = &h->p.e[1];
	struct ibv_wc wc;
	int ret = 0;

	while (!h->stop && !ret) {
		ret = rc_post_recv(b->qp, 1, b->buf, 4096, b->mr->lkey);
		if (!ret)
			ret = rc_post_send(a->qp, IBV_WR_RDMA_WRITE, 2, a->buf,
					   4096, a->mr->lkey,
					   (uintptr_t)b->buf + 8192,
					   b->mr->rkey, 0, 0);
		if (!ret)
			ret = rc_post_send(a->qp, IBV_WR_SEND, 3, a->buf, 256,
					   a->mr->lkey, 0, 0,
					   IBV_SEND_SIGNALED, 0);
		if (!ret)
			ret = rc_poll(b->rcq, &wc, 1, 5000);
		if (ret == 1)
			ret = rc_poll(a->scq, &wc, 1, 5000);
		if (ret == 1)
			ret = wc.status == IBV_WC_SUCCESS ? 0 : -EPROTO;
		else if (ret >= 0)
			ret = -ETIMEDOUT;
		if (!ret)
			__atomic_add_fetch(&h->moved, 1, __ATOMIC_RELAXED);
	}
	h->traffic_ret = ret;
	__atomic_store_n(&h->traffic_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *sleeper_fn(void *arg)
{
	struct holder *h = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	h->sleeper_ret = ibv_get_cq_event(h->idle_ch, &cq, &cq_ctx);
	h->sleeper_errno = errno;
	__atomic_store_n(&h->sleeper_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *kicker_fn(void *arg)
{
	struct holder *h = arg;

	while (!h->stop) {
		if (!fsync(h->wake_fd))
			h->kicks_ok++;
		else if (errno == EIO)
			h->kicks_eio++;
		else
			h->kicks_other++;
		usleep(500);
	}
	return NULL;
}

static int traffic_done(void *arg)
{
	return __atomic_load_n(&((struct holder *)arg)->traffic_done,
			       __ATOMIC_ACQUIRE);
}

static int sleeper_done(void *arg)
{
	return __atomic_load_n(&((struct holder *)arg)->sleeper_done,
			       __ATOMIC_ACQUIRE);
}

static int moved_some(void *arg)
{
	return __atomic_load_n(&((struct holder *)arg)->moved,
			       __ATOMIC_RELAXED) >= 50;
}

static int set_engine_poll(bool on)
{
	int fd = open("/sys/module/softhca/parameters/engine_poll", O_WRONLY);
	int ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -errno;
	close(fd);
	return ret;
}

/*
 * Open it all and start the threads: 0, or -errno with rc_err set. The
 * first post is made with the engine thread told not to poll, so that its
 * wake-up call opens the provider's own wake fd on e[0]'s context.
 */
static int holder_open(struct holder *h)
{
	struct rc_cfg c;
	struct ibv_wc wc;
	int ret;

	h->wake_fd = -1;
	rc_cfg_default(&c, RC_TWO_CTX);
	c.channels = true;
	ret = rc_pair_open(&h->p, &c);
	if (ret)
		return ret;
	h->idle_ch = ibv_create_comp_channel(h->p.e[0].ctx);
	h->idle_cq = h->idle_ch ? ibv_create_cq(h->p.e[0].ctx, 4, NULL,
						h->idle_ch, 0) : NULL;
	if (!h->idle_cq || ibv_req_notify_cq(h->idle_cq, 0))
		return -errno;
	h->wake_fd = wake_fd_open_len(h->p.e[1].ctx, sizeof(uint32_t));
	if (h->wake_fd < 0)
		return h->wake_fd;

	ret = set_engine_poll(false);
	if (!ret)
		ret = rc_post_recv(h->p.e[1].qp, 0, h->p.e[1].buf, 64,
				   h->p.e[1].mr->lkey);
	if (!ret)
		ret = rc_post_send(h->p.e[0].qp, IBV_WR_SEND, 0, h->p.e[0].buf,
				   8, h->p.e[0].mr->lkey, 0, 0,
				   IBV_SEND_SIGNALED, 0);
	if (!ret && (rc_poll(h->p.e[1].rcq, &wc, 1, 5000) != 1 ||
		     rc_poll(h->p.e[0].scq, &wc, 1, 5000) != 1))
		ret = -ETIMEDOUT;
	set_engine_poll(true);
	if (ret)
		return ret;

	if (pthread_create(&h->traffic, NULL, traffic_fn, h))
		return -EAGAIN;
	if (pthread_create(&h->sleeper, NULL, sleeper_fn, h)) {
		h->stop = 1;
		pthread_join(h->traffic, NULL);
		return -EAGAIN;
	}
	if (pthread_create(&h->kicker, NULL, kicker_fn, h)) {
		/* The sleeper wakes when the channel goes. */
		h->stop = 1;
		pthread_join(h->traffic, NULL);
		pthread_detach(h->sleeper);
		return -EAGAIN;
	}
	h->threads = true;
	return wait_until(moved_some, h, 20000) ? 0 : -ETIMEDOUT;
}

/* The device's mappings of this process, from /proc/self/maps. */
struct dev_map {
	uintptr_t start, end;
	unsigned long long off;
	bool r, w;
};

static int dev_maps(struct dev_map *m, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512], perm[8];
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/infiniband/uverbs"))
			continue;
		if (sscanf(line, "%lx-%lx %7s %llx", &m[n].start, &m[n].end,
			   perm, &m[n].off) != 4)
			continue;
		m[n].r = perm[0] == 'r';
		m[n].w = perm[1] == 'w';
		n++;
	}
	fclose(f);
	return n;
}

/* The device page: read only, one page. */
static bool is_device_page(const struct dev_map *m)
{
	return m->r && !m->w && m->end - m->start == 4096;
}

static uint32_t word_at(uintptr_t addr)
{
	return *(volatile uint32_t *)addr;
}

/*
 * After the unload: every mapping still there, readable ones read (the
 * device page as zeros), writable ones take a store in every page, and
 * the device maps nothing new. Returns how many mappings it touched.
 */
static int touch_dead_maps(struct __test_metadata *_metadata,
			   struct ibv_context *ctx)
{
	struct dev_map m[64];
	int n = dev_maps(m, 64), dev_pages = 0;

	for (int i = 0; i < n; i++) {
		for (uintptr_t a = m[i].start; a < m[i].end; a += 4096) {
			if (m[i].r)
				(void)word_at(a);
			if (m[i].w)
				*(volatile uint32_t *)(a + 64) = 0x5a5a5a5a;
		}
		if (!is_device_page(&m[i]))
			continue;
		dev_pages++;
		for (uintptr_t a = m[i].start; a < m[i].end; a += 4)
			if (word_at(a)) {
				EXPECT_EQ(0, word_at(a))
					TH_LOG("device page word %#lx",
					       (unsigned long)(a - m[i].start));
				break;
			}
		EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED,
					  ctx->cmd_fd, (off_t)m[i].off));
		EXPECT_EQ(EIO, errno);
	}
	EXPECT_LE(2, dev_pages);
	return n;
}

/* A DEVICE_FATAL among @ctx's next async events within NOTICE_MS? */
static bool saw_device_fatal(struct ibv_context *ctx)
{
	struct ibv_async_event ev;
	uint64_t t0 = rc_now_us();
	int type;

	while (ms_since(t0) < NOTICE_MS) {
		type = next_async_event(ctx, NOTICE_MS, &ev);
		if (type < 0)
			return false;
		if (type == IBV_EVENT_DEVICE_FATAL)
			return true;
	}
	return false;
}

/* Stop the threads; the sleeper is joined only if it woke. */
static void holder_stop(struct holder *h)
{
	h->stop = 1;
	if (!h->threads)
		return;
	pthread_join(h->traffic, NULL);
	pthread_join(h->kicker, NULL);
	if (sleeper_done(h))
		pthread_join(h->sleeper, NULL);
	else
		pthread_detach(h->sleeper);	/* wakes when its channel goes */
	h->threads = false;
}

/* Told: DEVICE_FATAL on both contexts, EIO to the poller, sleeper, kicker. */
static void check_told(struct __test_metadata *_metadata, struct holder *h)
{
	EXPECT_TRUE(saw_device_fatal(h->p.e[0].ctx));
	EXPECT_TRUE(saw_device_fatal(h->p.e[1].ctx));
	EXPECT_TRUE(wait_until(traffic_done, h, NOTICE_MS))
		TH_LOG("the traffic thread did not stop");
	EXPECT_EQ(-EIO, h->traffic_ret)
		TH_LOG("traffic ended with %d after %ld round trips",
		       h->traffic_ret, h->moved);
	EXPECT_TRUE(wait_until(sleeper_done, h, NOTICE_MS))
		TH_LOG("ibv_get_cq_event still asleep");
	if (sleeper_done(h)) {
		EXPECT_EQ(-1, h->sleeper_ret);
		EXPECT_EQ(EIO, h->sleeper_errno);
	}
	holder_stop(h);
	TH_LOG("kicks: %ld ok, %ld EIO, %ld other", h->kicks_ok,
	       h->kicks_eio, h->kicks_other);
	EXPECT_LT(0, h->kicks_ok);
	EXPECT_EQ(0, h->kicks_other);
	EXPECT_EQ(-1, fsync(h->wake_fd));
	EXPECT_EQ(EIO, errno);
}

/* The data path runs on the zapped mappings; poll_cq says it is gone. */
static void check_data_path(struct __test_metadata *_metadata,
			    struct rc_end *a)
{
	struct ibv_wc wc;

	touch_dead_maps(_metadata, a->ctx);
	rc_post_send(a->qp, IBV_WR_SEND, 9, a->buf, 8, a->mr->lkey, 0, 0,
		     IBV_SEND_SIGNALED, 0);
	rc_post_recv(a->qp, 9, a->buf, 8, a->mr->lkey);
	ibv_req_notify_cq(a->scq, 0);
	EXPECT_EQ(-EIO, ibv_poll_cq(a->scq, 1, &wc));
	EXPECT_EQ(-EIO, ibv_poll_cq(a->rcq, 1, &wc));
}

/* The kernel refuses every command but destroys. */
static void check_refused(struct __test_metadata *_metadata,
			  struct rc_end *a)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_port_attr pa;
	static char buf[4096];

	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_pd(a->ctx));
	EXPECT_EQ(EIO, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq(a->ctx, 4, NULL, NULL, 0));
	EXPECT_EQ(EIO, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_mr(a->pd, buf, sizeof(buf),
				   IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(EIO, ibv_query_port(a->ctx, 1, &pa));
	EXPECT_EQ(EIO, ibv_modify_qp(a->qp, &qa, IBV_QP_STATE));
}

/* Every destroy of a disassociated object succeeds. */
static void destroy_all(struct __test_metadata *_metadata, struct holder *h)
{
	EXPECT_EQ(0, ibv_destroy_cq(h->idle_cq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(h->idle_ch));
	h->idle_cq = NULL;
	h->idle_ch = NULL;
	for (int i = 0; i < 2; i++) {
		struct rc_end *e = &h->p.e[i];

		EXPECT_EQ(0, ibv_destroy_qp(e->qp));
		EXPECT_EQ(0, ibv_dereg_mr(e->mr));
		EXPECT_EQ(0, ibv_destroy_cq(e->scq));
		EXPECT_EQ(0, ibv_destroy_cq(e->rcq));
		EXPECT_EQ(0, ibv_destroy_comp_channel(e->ch));
		EXPECT_EQ(0, ibv_dealloc_pd(e->pd));
		e->qp = NULL;
		e->mr = NULL;
		e->scq = e->rcq = NULL;
		e->ch = NULL;
		e->pd = NULL;
	}
}

/* Whatever is left: the threads stopped, the objects and contexts gone. */
static void holder_close(struct holder *h)
{
	holder_stop(h);
	if (h->idle_cq)
		ibv_destroy_cq(h->idle_cq);
	if (h->idle_ch)
		ibv_destroy_comp_channel(h->idle_ch);
	h->idle_cq = NULL;
	h->idle_ch = NULL;
	rc_pair_destroy(&h->p);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	h->wake_fd = -1;
}

/* ---- under_traffic -------------------------------------------------- */

FIXTURE(unload) {
	long dmesg0;
};

FIXTURE_VARIANT(unload) {
	bool link_del;
	enum tool tool;
};

FIXTURE_VARIANT_ADD(unload, rmmod_write_bw) {
	.tool = TOOL_WRITE_BW,
};

FIXTURE_VARIANT_ADD(unload, link_del_send_lat) {
	.link_del = true,
	.tool = TOOL_SEND_LAT,
};

FIXTURE_VARIANT_ADD(unload, rmmod_send_lat_events) {
	.tool = TOOL_SEND_LAT_EV,
};

FIXTURE_VARIANT_ADD(unload, link_del_rc_pingpong) {
	.link_del = true,
	.tool = TOOL_PINGPONG,
};

FIXTURE_SETUP(unload)
{
	ASSERT_EQ(0, device_back()) TH_LOG("softhca and shca0 are not there");
	self->dmesg0 = dmesg_lines();
	ASSERT_LE(0, self->dmesg0);
}

/* Whatever happened, the next suite finds the module and shca0. */
FIXTURE_TEARDOWN(unload)
{
	spawned_kill_all();
	/* (No TH_LOG: after a failed ASSERT it would print regardless.) */
	EXPECT_EQ(0, dmesg_dirty_since(self->dmesg0));
	EXPECT_EQ(0, device_back());
	judge_slow(_metadata);
	set_engine_poll(true);
}

static int shca0_gid(void)
{
	struct ibv_context *ctx = open_dev("shca0");
	int gid;

	if (!ctx)
		return -errno;
	gid = rc_find_gid(ctx, RC_IP0);
	ibv_close_device(ctx);
	return gid;
}

TEST_F_TIMEOUT(unload, under_traffic, 180)
{
	struct holder h = {};
	struct tool_run t = {};
	struct dev_map maps[64];
	int n, dev_pages = 0, st, ret;

	ret = holder_open(&h);
	ASSERT_EQ(0, ret) TH_LOG("%s", rc_err);
	ret = tool_start(&t, variant->tool, 18600 + variant->tool,
			 shca0_gid());
	if (ret) {
		print_log(t.log[0]);
		print_log(t.log[1]);
	}
	ASSERT_EQ(0, ret) TH_LOG("%s did not start", tool_name[variant->tool]);
	EXPECT_EQ(2, count_fds(WAKE_FD_NAME));
	/* Nothing a user holds pins softhca, whose users get disassociated. */
	EXPECT_EQ(0, mod_refcnt("softhca"));
	/* softhca's use of softhca_wakefd, and our two wake fds. */
	EXPECT_LE(3, mod_refcnt("softhca_wakefd"));
	n = dev_maps(maps, 64);
	for (int i = 0; i < n; i++) {
		if (!is_device_page(&maps[i]))
			continue;
		dev_pages++;
		EXPECT_EQ(SOFTHCA_DEVICE_LIVE, word_at(maps[i].start + 4));
	}
	EXPECT_EQ(2, dev_pages);

	ASSERT_EQ(0, unload(_metadata, variant->link_del));
	check_told(_metadata, &h);
	check_data_path(_metadata, &h.p.e[0]);
	check_refused(_metadata, &h.p.e[0]);
	destroy_all(_metadata, &h);
	holder_close(&h);

	for (int i = 0; i < 2; i++) {
		EXPECT_TRUE(reap(t.pid[i], EXIT_MAX_MS, &st))
			TH_LOG("%s %s still running", tool_name[variant->tool],
			       i ? "client" : "server");
		print_log(t.log[i]);
	}
	ASSERT_EQ(0, device_back());
	EXPECT_EQ(0, moves_data()) TH_LOG("%s", rc_err);
}

/* ---- wake_fd_across_unload ------------------------------------------ */

FIXTURE(wakefd) {
	long dmesg0;
};

FIXTURE_VARIANT(wakefd) {
	bool close_ctx_first;
};

FIXTURE_VARIANT_ADD(wakefd, context_open) {
	.close_ctx_first = false,
};

FIXTURE_VARIANT_ADD(wakefd, context_closed) {
	.close_ctx_first = true,
};

FIXTURE_SETUP(wakefd)
{
	ASSERT_EQ(0, device_back());
	self->dmesg0 = dmesg_lines();
	ASSERT_LE(0, self->dmesg0);
}

FIXTURE_TEARDOWN(wakefd)
{
	spawned_kill_all();
	/* (No TH_LOG: after a failed ASSERT it would print regardless.) */
	EXPECT_EQ(0, dmesg_dirty_since(self->dmesg0));
	EXPECT_EQ(0, device_back());
	judge_slow(_metadata);
}

TEST_F(wakefd, wake_fd_across_unload)
{
	struct ibv_context *ctx = open_dev("shca0");
	long ref0 = mod_refcnt("softhca_wakefd");
	int fd;

	ASSERT_NE(NULL, ctx);
	ASSERT_LT(0, ref0);
	fd = wake_fd_open_len(ctx, sizeof(uint32_t));
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, fsync(fd));
	EXPECT_EQ(ref0 + 1, mod_refcnt("softhca_wakefd"));
	EXPECT_EQ(0, mod_refcnt("softhca"));
	if (variant->close_ctx_first) {
		ibv_close_device(ctx);
		ctx = NULL;
	}

	ASSERT_EQ(0, unload(_metadata, false));
	EXPECT_FALSE(mod_loaded("softhca"));
	/* The file outlives softhca: its calls fail, nothing jumps into it. */
	EXPECT_EQ(-1, fsync(fd));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(-1, fdatasync(fd));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(-1, ioctl(fd, _IO(0x1b, 0x40), 0));
	EXPECT_EQ(ENOTTY, errno);
	/* softhca's use is gone, the fd's is not: softhca_wakefd stays. */
	EXPECT_EQ(ref0, mod_refcnt("softhca_wakefd"));
	EXPECT_EQ(-EWOULDBLOCK, mod_unload("softhca_wakefd", NULL));
	if (ctx)
		EXPECT_EQ(0, ibv_close_device(ctx));
	close(fd);
	/* fput of the last reference is deferred to our return to user. */
	EXPECT_EQ(ref0 - 1, mod_refcnt("softhca_wakefd"));
	EXPECT_EQ(0, mod_unload("softhca_wakefd", NULL));
	EXPECT_FALSE(mod_loaded("softhca_wakefd"));
	/* softhca needs it: it cannot load alone. */
	EXPECT_EQ(-ENOENT, mod_load("softhca"));

	ASSERT_EQ(0, device_back());
	EXPECT_EQ(0, moves_data()) TH_LOG("%s", rc_err);
}

/* ---- kill9_rounds --------------------------------------------------- */

/*
 * A holder process: the same objects and threads as above. Once its
 * traffic stopped and the parent says the unload returned (a byte on
 * @go_fd), the same checks, reported by exit status: 0 all passed, 10+
 * the first that failed (no harness in a child, so no EXPECT here).
 */
static int holder_child(int ready_fd, int go_fd)
{
	struct pollfd go = { .fd = go_fd, .events = POLLIN };
	struct holder h = {};
	struct ibv_wc wc;
	char c = 1;

	if (holder_open(&h))
		return 10;
	if (write(ready_fd, &c, 1) != 1)
		return 11;
	close(ready_fd);
	/* Until the unload stops the traffic. */
	while (!traffic_done(&h))
		usleep(10000);
	if (h.traffic_ret != -EIO)
		return 12;
	if (poll(&go, 1, EXIT_MAX_MS) != 1 || read(go_fd, &c, 1) != 1)
		return 13;
	if (!saw_device_fatal(h.p.e[0].ctx) || !saw_device_fatal(h.p.e[1].ctx))
		return 14;
	if (!wait_until(sleeper_done, &h, NOTICE_MS) ||
	    h.sleeper_errno != EIO)
		return 15;
	holder_stop(&h);
	if (h.kicks_other)
		return 16;
	if (!fsync(h.wake_fd) || errno != EIO)
		return 17;
	if (ibv_alloc_pd(h.p.e[0].ctx) || errno != EIO)
		return 18;
	if (ibv_poll_cq(h.p.e[0].scq, 1, &wc) != -EIO)
		return 19;
	holder_close(&h);
	return 0;
}

/* A ready holder process, its pid, and in *go the fd that lets it check. */
static pid_t holder_spawn(int *go)
{
	int ready[2], gos[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	if (pipe(gos)) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	pid = fork();
	if (!pid) {
		close(ready[0]);
		close(gos[1]);
		rnd_mix(getpid());
		_exit(holder_child(ready[1], gos[0]));
	}
	close(ready[1]);
	close(gos[0]);
	*go = gos[1];
	/* Ready, or the child is gone (read 0). */
	if (pid > 0 && read(ready[0], &c, 1) != 1) {
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(ready[0]);
	spawned_add(pid);
	return pid;
}

#define PARTICIPANTS	4	/* tool server, tool client, two holders */

struct killer {
	pid_t pid[PARTICIPANTS];
	int delay_ms[PARTICIPANTS];	/* -1: not killed */
	bool killed[PARTICIPANTS];
};

/* SIGKILL each participant at its moment (ms after the thread starts). */
static void *killer_fn(void *arg)
{
	struct killer *k = arg;
	uint64_t t0 = rc_now_us();
	int left;

	do {
		left = 0;
		for (int i = 0; i < PARTICIPANTS; i++) {
			if (k->delay_ms[i] < 0 || k->killed[i])
				continue;
			if (ms_since(t0) >= k->delay_ms[i]) {
				kill(k->pid[i], SIGKILL);
				k->killed[i] = true;
			} else {
				left++;
			}
		}
		usleep(2000);
	} while (left);
	return NULL;
}

FIXTURE(rounds) {
	long dmesg0;
};

FIXTURE_SETUP(rounds)
{
	ASSERT_EQ(0, device_back());
	self->dmesg0 = dmesg_lines();
	ASSERT_LE(0, self->dmesg0);
}

FIXTURE_TEARDOWN(rounds)
{
	spawned_kill_all();
	/* (No TH_LOG: after a failed ASSERT it would print regardless.) */
	EXPECT_EQ(0, dmesg_dirty_since(self->dmesg0));
	EXPECT_EQ(0, device_back());
	judge_slow(_metadata);
}

TEST_F_TIMEOUT(rounds, kill9_rounds, 600)
{
	const char *env = getenv("SOFTHCA_UNLOAD_ROUNDS");
	int rounds = env && *env ? atoi(env) : 4;

	TH_LOG("seed %#llx (SOFTHCA_FUZZ_SEED to replay)",
	       (unsigned long long)rnd_seed());
	signal(SIGPIPE, SIG_IGN);
	for (int round = 0; round < rounds; round++) {
		enum tool tool = rnd_below(TOOL_COUNT);
		bool link_del = rnd_below(2);
		struct tool_run t = {};
		struct killer k = {};
		pthread_t killer;
		int go[2], st, ret;

		k.pid[2] = holder_spawn(&go[0]);
		k.pid[3] = holder_spawn(&go[1]);
		ASSERT_LT(0, k.pid[2]);
		ASSERT_LT(0, k.pid[3]);
		ret = tool_start(&t, tool, 18700 + round, shca0_gid());
		ASSERT_EQ(0, ret) TH_LOG("round %d: %s did not start", round,
					 tool_name[tool]);
		k.pid[0] = t.pid[0];
		k.pid[1] = t.pid[1];
		/* Half die: before the unload (< 300 ms) or during it. */
		for (int i = 0; i < PARTICIPANTS; i++)
			k.delay_ms[i] = rnd_below(2) ? (int)rnd_below(600) : -1;
		TH_LOG("round %d: %s, %s; kills at %d %d %d %d ms (unload at 300)",
		       round, tool_name[tool], link_del ? "link del + rmmod" :
		       "rmmod", k.delay_ms[0], k.delay_ms[1], k.delay_ms[2],
		       k.delay_ms[3]);
		ASSERT_EQ(0, pthread_create(&killer, NULL, killer_fn, &k));
		usleep(300 * 1000);
		ret = unload(_metadata, link_del);
		for (int i = 0; i < 2; i++) {
			/* A killed holder's pipe may be gone: no SIGPIPE. */
			if (write(go[i], "", 1) != 1)
				TH_LOG("round %d: holder %d gone", round, i + 2);
			close(go[i]);
		}
		pthread_join(killer, NULL);

		for (int i = 0; i < PARTICIPANTS; i++) {
			bool holder = i >= 2;

			EXPECT_TRUE(reap(k.pid[i], EXIT_MAX_MS, &st))
				TH_LOG("round %d: participant %d still running",
				       round, i);
			if (k.killed[i] && WIFSIGNALED(st)) {
				EXPECT_EQ(SIGKILL, WTERMSIG(st));
			} else if (holder) {
				EXPECT_EQ(0, WIFEXITED(st) ? WEXITSTATUS(st) : -1)
					TH_LOG("round %d: holder %d failed check (status %#x)",
					       round, i, st);
			} else {
				EXPECT_TRUE(WIFEXITED(st))
					TH_LOG("round %d: %s %s: status %#x", round,
					       tool_name[tool], i ? "client" : "server",
					       st);
			}
		}
		ASSERT_EQ(0, ret);
		ASSERT_EQ(0, device_back());
		EXPECT_EQ(0, moves_data()) TH_LOG("round %d: %s", round, rc_err);
	}
}

TEST_HARNESS_MAIN
