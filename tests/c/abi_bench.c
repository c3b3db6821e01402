/*
 * The steady-state measurements through the C ABI, timed, as a C caller pays for them: the step
 * (zs_free of a random victim + zs_store of a new object) and the non-spanning read
 * (zs_obj_read_begin + memcpy out + zs_obj_read_end), each against glibc on the identical
 * sequence (free + malloc + memcpy; memcpy out of the malloc'd block).
 *
 * The workload is zsmalloc-core/benches/common's, bit for bit: SplitMix64 seeded with
 * 0x5eed2d172058 ^ N, N initial sizes from normal(694, 474) rounded and clipped to 1..4096, then
 * the steps (victim, size), then 4096 payload bytes.
 *
 * Usage: abi_bench N [OPS] [ROUNDS]   (defaults 2000000 operations, 5 rounds)
 * Each round times the pool and glibc one after the other; the ratio printed is the median of
 * the rounds' ratios (on shared cores a ratio within a round is steadier than either time).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *what)
{
	fprintf(stderr, "abi_bench: %s failed: %s\n", what, zs_last_error_message());
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: abi_bench N [OPS] [ROUNDS]\n");
		return 2;
	}
	uint32_t n = (uint32_t)strtoul(argv[1], NULL, 10);
	size_t ops = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	if (n == 0 || ops == 0 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "abi_bench: N, OPS and ROUNDS (1..99) must be positive\n");
		return 2;
	}

	rng_state = SEED ^ n;
	uint32_t *len = malloc(n * sizeof *len), *victim = malloc(STEPS * 4), *size = malloc(STEPS * 4);
	unsigned char *data = malloc(MAX_SIZE);
	if (!len || !victim || !size || !data)
		die("malloc");
	for (uint32_t i = 0; i < n; i++)
		len[i] = next_size();
	for (uint32_t k = 0; k < STEPS; k++) {
		victim[k] = below(n);
		size[k] = next_size();
	}
	for (int i = 0; i < MAX_SIZE; i++)
		data[i] = (unsigned char)next_u64();

	struct zs_pool *pool = zs_create_pool("abi_bench");
	struct zs_handle *h = calloc(n, sizeof *h);
	uint32_t *hlen = malloc(n * sizeof *hlen), *mlen = malloc(n * sizeof *mlen);
	unsigned char **blk = malloc(n * sizeof *blk);
	if (!pool || !h || !hlen || !mlen || !blk)
		die("setup");
	for (uint32_t i = 0; i < n; i++) {
		if (zs_store(pool, &h[i], data, len[i], 0))
			die("zs_store");
		if (!(blk[i] = malloc(len[i])))
			die("malloc");
		memcpy(blk[i], data, len[i]);
		hlen[i] = mlen[i] = len[i];
	}

	static unsigned char out[MAX_SIZE + 64], local[MAX_SIZE + 64];
	double step_ratio[99], read_ratio[99], pool_step = 0, base_step = 0, pool_read = 0,
	       base_read = 0;
	size_t at_pool = 0, at_base = 0;
	uint32_t *order = malloc(n * sizeof *order);
	if (!order)
		die("malloc");
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		for (size_t k = 0; k < ops; k++, at_pool = (at_pool + 1) % STEPS) {
			uint32_t v = victim[at_pool], s = size[at_pool];
			if (zs_free(pool, &h[v]) || zs_store(pool, &h[v], data, s, 0))
				die("step");
			hlen[v] = s;
		}
		double t1 = now_ns();
		for (size_t k = 0; k < ops; k++, at_base = (at_base + 1) % STEPS) {
			uint32_t v = victim[at_base], s = size[at_base];
			free(blk[v]);
			if (!(blk[v] = malloc(s)))
				die("malloc");
			memcpy(blk[v], data, s);
			mlen[v] = s;
		}
		double t2 = now_ns();
		step_ratio[r] = (t1 - t0) / (t2 - t1);
		pool_step += (t1 - t0) / ops / rounds;
		base_step += (t2 - t1) / ops / rounds;
	}

	/* Reads: non-spanning objects of the pool (the scatter-gather begin says which), in the
	 * shuffled order of zsmalloc-core's read benchmark; glibc reads the same indices. */
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct zs_sg sg[2];
		int segs = zs_obj_read_sg_begin(pool, &h[i], sg, hlen[i]);
		if (segs < 0 || zs_obj_read_sg_end(pool, &h[i]))
			die("zs_obj_read_sg_begin");
		if (segs == 1 && hlen[i] == mlen[i])
			order[m++] = i;
	}
	rng_state = SEED ^ 0x7ead;
	for (uint32_t i = m - 1; i > 0; i--) {
		uint32_t j = below(i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	size_t at = 0;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		for (size_t k = 0; k < ops; k++, at = at + 1 == m ? 0 : at + 1) {
			uint32_t i = order[at];
			void *p = zs_obj_read_begin(pool, &h[i], hlen[i], local);
			if (!p)
				die("zs_obj_read_begin");
			memcpy(out, p, hlen[i]);
			if (zs_obj_read_end(pool, &h[i], hlen[i], p))
				die("zs_obj_read_end");
			__asm__ volatile("" : : "r"(out) : "memory");
		}
		double t1 = now_ns();
		for (size_t k = 0; k < ops; k++, at = at + 1 == m ? 0 : at + 1) {
			uint32_t i = order[at];
			memcpy(out, blk[i], mlen[i]);
			__asm__ volatile("" : : "r"(out) : "memory");
		}
		double t2 = now_ns();
		read_ratio[r] = (t1 - t0) / (t2 - t1);
		pool_read += (t1 - t0) / ops / rounds;
		base_read += (t2 - t1) / ops / rounds;
	}

	qsort(step_ratio, rounds, sizeof(double), cmp_double);
	qsort(read_ratio, rounds, sizeof(double), cmp_double);
	printf("abi N=%u step: zs %.1f ns, malloc %.1f ns, median ratio %.2fx | read (%u "
	       "non-spanning): zs %.1f ns, memcpy %.1f ns, median ratio %.2fx\n",
	       n, pool_step, base_step, step_ratio[rounds / 2], m, pool_read, base_read,
	       read_ratio[rounds / 2]);

	for (uint32_t i = 0; i < n; i++) {
		zs_free(pool, &h[i]);
		free(blk[i]);
	}
	zs_destroy_pool(pool);
	free(order);
	free(blk);
	free(mlen);
	free(hlen);
	free(h);
	free(data);
	free(size);
	free(victim);
	free(len);
	return 0;
}
