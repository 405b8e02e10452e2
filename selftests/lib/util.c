// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	return 0;
}

int wait_until(int (*fn)(void *arg), void *arg, int ms)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };

	for (int waited = 0; waited <= ms; waited += 10) {
		if (fn(arg))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

const char *softhca_ko(void)
{
	const char *p = getenv("SOFTHCA_KO");

	return p && *p ? p : "./softhca.ko";
}

int count_fds(const char *target)
{
	char path[300], link[128];
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = 0;
		n += !strcmp(link, target);
	}
	closedir(dir);
	return n;
}

long dmesg_lines(void)
{
	FILE *f = popen("dmesg | wc -l", "r");
	long n = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

int dmesg_dirty_since(long lines)
{
	return !sh("dmesg | tail -n +%ld | grep -E 'WARNING:|BUG:|BUG |Oops|cut here|Call Trace|general protection|blocked for more than|soft lockup|hard LOCKUP' >&2",
		   lines + 1);
}
