/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tap.h - the few lines of TAP the host unit tests share.
 *
 * A test is a function in a table; CHECK_EQ records a failure with a
 * "# file:line" diagnostic and the test goes on, so one run shows every
 * wrong value. tap_run() prints the plan, one result line per test, and
 * returns the exit status (1 if anything failed).
 *
 * Note: the Makefile's unit rule does not list this header as a
 * prerequisite; touch the test .c after editing it.
 */
#ifndef SOFTHCA_TAP_H
#define SOFTHCA_TAP_H

#include <stdio.h>
#include <string.h>

struct tap_test {
	const char *name;
	void (*fn)(void);
};

static int tap_cur_failed;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		printf("# %s:%d: CHECK(%s) failed\n",			\
		       __FILE__, __LINE__, #cond);			\
		tap_cur_failed = 1;					\
	}								\
} while (0)

#define CHECK_EQ(got, want) do {					\
	unsigned long long tap_g = (unsigned long long)(got);		\
	unsigned long long tap_w = (unsigned long long)(want);		\
	if (tap_g != tap_w) {						\
		printf("# %s:%d: %s == 0x%llx, want 0x%llx (%s)\n",	\
		       __FILE__, __LINE__, #got, tap_g, tap_w, #want);	\
		tap_cur_failed = 1;					\
	}								\
} while (0)

/* Compare n bytes; print the first difference. */
#define CHECK_BYTES(got, want, n) do {					\
	const unsigned char *tap_a = (const void *)(got);		\
	const unsigned char *tap_b = (const void *)(want);		\
	for (size_t tap_i = 0; tap_i < (size_t)(n); tap_i++) {		\
		if (tap_a[tap_i] != tap_b[tap_i]) {			\
			printf("# %s:%d: %s[%zu] == 0x%02x, want 0x%02x\n", \
			       __FILE__, __LINE__, #got, tap_i,		\
			       tap_a[tap_i], tap_b[tap_i]);		\
			tap_cur_failed = 1;				\
			break;						\
		}							\
	}								\
} while (0)

static inline int tap_run(const struct tap_test *t, int n)
{
	int failed = 0;

	printf("TAP version 13\n1..%d\n", n);
	for (int i = 0; i < n; i++) {
		tap_cur_failed = 0;
		t[i].fn();
		printf("%sok %d %s\n", tap_cur_failed ? "not " : "", i + 1, t[i].name);
		failed |= tap_cur_failed;
	}
	fflush(stdout);
	return failed;
}

#define TAP_MAIN(tests)							\
int main(void)								\
{									\
	return tap_run(tests, (int)(sizeof(tests) / sizeof((tests)[0]))); \
}

#endif /* SOFTHCA_TAP_H */
