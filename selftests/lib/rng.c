// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rng.h"

static uint64_t rng_state = 1;

uint64_t rnd_seed(void)
{
	const char *s = getenv("SOFTHCA_FUZZ_SEED");

	rng_state = s ? strtoull(s, NULL, 0) :
		    (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid() << 32;
	if (!rng_state)
		rng_state = 1;
	return rng_state;
}

void rnd_mix(uint64_t v)
{
	rng_state ^= v;
	if (!rng_state)
		rng_state = 1;
}

uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

void rnd_fill(void *p, size_t len)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)rnd();
}
