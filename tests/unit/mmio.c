// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host unit test of user/mmio.h: doorbell byte order, store widths, the
 * BlueFlame 64-byte copy, and that every barrier runs. TAP output.
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mmio.h"

static int test_no;
static int failed;

static void ok(int cond, const char *name)
{
	test_no++;
	if (!cond)
		failed++;
	printf("%sok %d %s\n", cond ? "" : "not ", test_no, name);
}

/* A target window with guard bytes around it, 64-byte aligned. */
struct window {
	_Alignas(64) uint8_t below[64];
	uint8_t win[512];
	uint8_t above[64];
};

static int guards_intact(const struct window *w, uint8_t fill)
{
	for (size_t i = 0; i < sizeof(w->below); i++)
		if (w->below[i] != fill || w->above[i] != fill)
			return 0;
	return 1;
}

static void fill_window(struct window *w, uint8_t fill)
{
	memset(w, fill, sizeof(*w));
}

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

int main(void)
{
	static const uint8_t be[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	static struct window w;
	uint8_t src[512 + 1];
	int good;

	printf("1..10\n");

	fill_window(&w, 0xa5);
	mmio_write64_be(w.win + 8, htobe64(0x0102030405060708ull));
	ok(!memcmp(w.win + 8, be, 8), "mmio_write64_be stores big-endian bytes 01..08");
	ok(guards_intact(&w, 0xa5) && w.win[7] == 0xa5 && w.win[16] == 0xa5,
	   "mmio_write64_be writes exactly 8 bytes");

	fill_window(&w, 0xa5);
	mmio_write64_be(w.win, htobe64(0xc0ffee00000000d1ull));
	ok(w.win[0] == 0xc0 && w.win[7] == 0xd1,
	   "mmio_write64_be: most significant byte at the lowest address");

	fill_window(&w, 0xa5);
	mmio_write32_be(w.win + 4, htobe32(0x0a0b0c0du));
	ok(w.win[4] == 0x0a && w.win[7] == 0x0d && w.win[3] == 0xa5 &&
		   w.win[8] == 0xa5,
	   "mmio_write32_be stores 4 big-endian bytes");

	fill_window(&w, 0x5a);
	pattern(src, 64, 1);
	mmio_memcpy_x64(w.win, src, 64);
	ok(!memcmp(w.win, src, 64) && w.win[64] == 0x5a && guards_intact(&w, 0x5a),
	   "mmio_memcpy_x64 copies one 64-byte block and nothing more");

	fill_window(&w, 0x5a);
	pattern(src, 256, 9);
	mmio_memcpy_x64(w.win, src, 256);
	ok(!memcmp(w.win, src, 256) && w.win[256] == 0x5a &&
		   guards_intact(&w, 0x5a),
	   "mmio_memcpy_x64 copies four blocks in order");

	fill_window(&w, 0x5a);
	pattern(src, sizeof(src), 3);
	mmio_memcpy_x64(w.win, src + 1, 128);
	ok(!memcmp(w.win, src + 1, 128) && w.win[128] == 0x5a,
	   "mmio_memcpy_x64 from an unaligned source");

	fill_window(&w, 0x5a);
	mmio_memcpy_x64(w.win, src, 0);
	ok(w.win[0] == 0x5a && guards_intact(&w, 0x5a),
	   "mmio_memcpy_x64 of 0 bytes writes nothing");

	/* A control segment as the data path will ring it: the copy keeps the
	 * stored byte image, so a big-endian WQE stays big-endian. */
	{
		uint64_t ctrl[8] = { htobe64(0x0000010a00000012ull) };

		fill_window(&w, 0);
		mmio_memcpy_x64(w.win, ctrl, 64);
		good = w.win[2] == 0x01 && w.win[3] == 0x0a && w.win[7] == 0x12;
		ok(good, "mmio_memcpy_x64 preserves the big-endian byte image");
	}

	udma_to_device_barrier();
	udma_from_device_barrier();
	mmio_wc_start();
	mmio_flush_writes();
	udma_full_barrier();
	ok(1, "all barriers execute");

	return failed ? 1 : 0;
}
