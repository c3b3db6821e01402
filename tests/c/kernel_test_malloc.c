/*
 * The baseline of the lab's main run: what `zsmalloc run kernel-test` asks of an allocator, done
 * with glibc malloc and nothing else. For each size lo..=hi by step, n objects are allocated and
 * filled with their content (a window of a seeded pattern whose first 8 bytes are mixed with a
 * per-object key, as the lab's content generator does); then every object is verified in
 * allocation order. Objects are never freed (the lab's run ends with its pool alive, too).
 *
 * Usage: kernel_test_malloc [LO HI STEP N]   (defaults: 32 4080 16 1337, the RFC's run)
 * Prints the objects written and verified, and their bytes; exits 1 on a verification failure.
 * scripts/bench-main-run.sh times it against the lab, whole process, in alternating pairs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static unsigned char pattern[2 * PAGE + 8];

static void fill(unsigned char *dst, uint64_t id, size_t len)
{
	uint64_t key = mix64(1 ^ mix64(id));
	size_t off = key % PAGE;
	memcpy(dst, pattern + off, len);
	for (size_t i = 0; i < len && i < 8; i++)
		dst[i] ^= (unsigned char)(key >> (8 * i));
}

static int verify(const unsigned char *src, uint64_t id, size_t len)
{
	uint64_t key = mix64(1 ^ mix64(id));
	size_t off = key % PAGE;
	size_t head = len < 8 ? len : 8;
	for (size_t i = 0; i < head; i++)
		if (src[i] != (unsigned char)(pattern[off + i] ^ (unsigned char)(key >> (8 * i))))
			return 0;
	return memcmp(src + head, pattern + off + head, len - head) == 0;
}

int main(int argc, char **argv)
{
	size_t lo = 32, hi = 4080, step = 16, n = 1337;
	if (argc == 5) {
		lo = strtoul(argv[1], NULL, 0);
		hi = strtoul(argv[2], NULL, 0);
		step = strtoul(argv[3], NULL, 0);
		n = strtoul(argv[4], NULL, 0);
	} else if (argc != 1) {
		fprintf(stderr, "usage: %s [LO HI STEP N]\n", argv[0]);
		return 2;
	}
	if (lo == 0 || lo > hi || hi > PAGE || step == 0 || n == 0) {
		fprintf(stderr, "need 1 <= LO <= HI <= %d, STEP >= 1, N >= 1\n", PAGE);
		return 2;
	}
	uint64_t s = 0x7a736d616c6c6f63ull;
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (unsigned char)((s = mix64(s)) >> 56);

	size_t count = ((hi - lo) / step + 1) * n;
	unsigned char **objs = malloc(count * sizeof(*objs));
	size_t *lens = malloc(count * sizeof(*lens));
	if (!objs || !lens)
		return perror("malloc"), 1;
	size_t k = 0, bytes = 0;
	for (size_t size = lo; size <= hi; size += step)
		for (size_t i = 0; i < n; i++, k++) {
			objs[k] = malloc(size);
			if (!objs[k])
				return perror("malloc"), 1;
			lens[k] = size;
			bytes += size;
			fill(objs[k], k, size);
		}
	size_t verified = 0;
	for (k = 0; k < count; k++)
		verified += verify(objs[k], k, lens[k]);
	printf("objects %zu bytes %zu verified %zu\n", count, bytes, verified);
	return verified == count ? 0 : 1;
}
