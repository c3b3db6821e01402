/*
 * The content of the main run's baselines (tests/c/kernel_test_malloc.c, kernel_test_zs.c), made
 * the way the lab makes it (zsmalloc-lab/src/content.rs): object k's bytes are the window of a
 * seeded random pattern at an offset its mixed key picks among 4,096, copied straight from the
 * pattern on store and compared with it in place on read. The pattern is 4,096 offsets plus a
 * page, 8 KiB, so it stays in the first-level cache as the lab's does.
 */
#ifndef KERNEL_TEST_CONTENT_H
#define KERNEL_TEST_CONTENT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KT_PAGE 4096
#define KT_OFFSETS 4096

static unsigned char kt_pattern[KT_OFFSETS + KT_PAGE];

static uint64_t kt_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void kt_pattern_init(void)
{
	uint64_t s = 0x7a736d616c6c6f63ull;
	for (size_t i = 0; i < sizeof(kt_pattern); i++)
		kt_pattern[i] = (unsigned char)((s = kt_mix64(s)) >> 56);
}

/* The content of object `id`: `len <= KT_PAGE` bytes of the pattern. */
static const unsigned char *kt_content(uint64_t id)
{
	return kt_pattern + kt_mix64(1 ^ kt_mix64(id)) % KT_OFFSETS;
}

/* Parses [LO HI STEP N] (defaults 32 4080 16 1337, the RFC's run); 0 on success, else -1 after
 * printing the usage. */
static int kt_args(int argc, char **argv, size_t *lo, size_t *hi, size_t *step, size_t *n)
{
	*lo = 32, *hi = 4080, *step = 16, *n = 1337;
	if (argc == 5) {
		*lo = strtoul(argv[1], NULL, 0);
		*hi = strtoul(argv[2], NULL, 0);
		*step = strtoul(argv[3], NULL, 0);
		*n = strtoul(argv[4], NULL, 0);
	}
	if ((argc == 1 || argc == 5) && *lo >= 1 && *lo <= *hi && *hi <= KT_PAGE && *step >= 1 &&
	    *n >= 1)
		return 0;
	fprintf(stderr, "usage: %s [LO HI STEP N] with 1 <= LO <= HI <= %d, STEP, N >= 1\n",
		argv[0], KT_PAGE);
	return -1;
}

#endif
