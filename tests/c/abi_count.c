// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * abi_count: instruction-count harness (callgrind) for the steady-state sequence through the C
 * ABI, against glibc on the identical sequence.
 *
 *   abi_count MODE N OPS
 *     zs      one step = zs_free of a random victim, zs_store of a new object in its place, then
 *             a read section of a random live object (zs_obj_read_begin, memcpy out,
 *             zs_obj_read_end; objects that cross a page are copied into a local buffer)
 *     malloc  the same with free, malloc + memcpy in, memcpy out of the random block
 *     zs-step / malloc-step   the free and store only
 *     zs-read / malloc-read   the read only (random live objects, spanning ones included)
 *
 * N objects live; sizes are normal(694, 474) rounded and clipped to 1..4096 (SplitMix64 seeded
 * with 0x5eed2d172058 ^ N, Box-Muller), the sequence precomputed before the first step.
 * The process ends with _exit() right after the OPS steps, so that two runs differing only in
 * OPS differ only by their steps: (Ir(OPS2) - Ir(OPS1)) / (OPS2 - OPS1) is the cost of one step
 * (scripts/bench-callgrind-capi.sh).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zsmalloc.h"

#define MEAN 694.0
#define SD 474.0
#define MAX_SIZE 4096
#define SEED 0x5eed2d172058ULL
#define STEPS (1u << 20)

static uint64_t rng_state;

static uint64_t next_u64(void)
{
	rng_state += 0x9e3779b97f4a7c15ULL;
	uint64_t z = rng_state;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double next_f64(void)
{
	return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(((unsigned __int128)next_u64() * n) >> 64);
}

static uint32_t next_size(void)
{
	double u1 = 1.0 - next_f64(), u2 = next_f64();
	double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
	double s = round(MEAN + SD * z);
	return s < 1 ? 1 : s > MAX_SIZE ? MAX_SIZE : (uint32_t)s;
}

static void die(const char *what)
{
	fprintf(stderr, "abi_count: %s failed: %s\n", what, zs_last_error_message());
	_exit(1);
}

static unsigned char out[MAX_SIZE + 64], local[MAX_SIZE + 64];

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: abi_count zs|malloc|zs-step|malloc-step|zs-read|malloc-read N OPS\n");
		return 2;
	}
	const char *mode = argv[1];
	uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
	size_t ops = strtoull(argv[3], NULL, 10);
	int zs = strncmp(mode, "zs", 2) == 0;
	int do_step = strstr(mode, "-read") == NULL, do_read = strstr(mode, "-step") == NULL;
	if (n == 0 || (!zs && strncmp(mode, "malloc", 6) != 0)) {
		fprintf(stderr, "abi_count: bad mode or N\n");
		return 2;
	}

	rng_state = SEED ^ n;
	uint32_t *len = malloc(n * sizeof *len), *victim = malloc(STEPS * 4),
		 *size = malloc(STEPS * 4), *reader = malloc(STEPS * 4);
	unsigned char *data = malloc(MAX_SIZE);
	if (!len || !victim || !size || !reader || !data)
		die("malloc");
	for (uint32_t i = 0; i < n; i++)
		len[i] = next_size();
	for (uint32_t k = 0; k < STEPS; k++) {
		victim[k] = below(n);
		size[k] = next_size();
		reader[k] = below(n);
	}
	for (int i = 0; i < MAX_SIZE; i++)
		data[i] = (unsigned char)next_u64();
	uint32_t *cur = malloc(n * sizeof *cur);
	if (!cur)
		die("malloc");
	memcpy(cur, len, n * sizeof *cur);

	if (zs) {
		struct zs_pool *pool = zs_create_pool("abi_count");
		struct zs_handle *h = calloc(n, sizeof *h);
		if (!pool || !h)
			die("setup");
		for (uint32_t i = 0; i < n; i++)
			if (zs_store(pool, &h[i], data, len[i], 0))
				die("zs_store");
		for (size_t k = 0, at = 0; k < ops; k++, at = (at + 1) % STEPS) {
			if (do_step) {
				uint32_t v = victim[at], s = size[at];
				if (zs_free(pool, &h[v]) || zs_store(pool, &h[v], data, s, 0))
					die("step");
				cur[v] = s;
			}
			if (do_read) {
				uint32_t r = reader[at], l = cur[r];
				void *p = zs_obj_read_begin(pool, &h[r], l, local);
				if (!p)
					die("zs_obj_read_begin");
				memcpy(out, p, l);
				if (zs_obj_read_end(pool, &h[r], l, p))
					die("zs_obj_read_end");
				__asm__ volatile("" : : "r"(out) : "memory");
			}
		}
	} else {
		unsigned char **blk = malloc(n * sizeof *blk);
		if (!blk)
			die("setup");
		for (uint32_t i = 0; i < n; i++) {
			if (!(blk[i] = malloc(len[i])))
				die("malloc");
			memcpy(blk[i], data, len[i]);
		}
		for (size_t k = 0, at = 0; k < ops; k++, at = (at + 1) % STEPS) {
			if (do_step) {
				uint32_t v = victim[at], s = size[at];
				free(blk[v]);
				if (!(blk[v] = malloc(s)))
					die("malloc");
				memcpy(blk[v], data, s);
				cur[v] = s;
			}
			if (do_read) {
				uint32_t r = reader[at];
				memcpy(out, blk[r], cur[r]);
				__asm__ volatile("" : : "r"(out) : "memory");
			}
		}
	}
	_exit(0);
}
