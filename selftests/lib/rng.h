/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A reproducible random stream for the fuzzing selftests (xorshift64*):
 * one per process, seeded from SOFTHCA_FUZZ_SEED or the clock, the seed
 * printed so a failing run can be replayed.
 */
#ifndef SOFTHCA_SELFTEST_RNG_H
#define SOFTHCA_SELFTEST_RNG_H

#include <stddef.h>
#include <stdint.h>

/* Seed from SOFTHCA_FUZZ_SEED, else from the time and pid; returns it. */
uint64_t rnd_seed(void);
/* Mix @v into the state (a forked child's own stream). */
void rnd_mix(uint64_t v);
uint64_t rnd(void);
/* Uniform in [0, n), 0 when n is 0. */
uint32_t rnd_below(uint32_t n);
void rnd_fill(void *p, size_t len);

#endif
