/*
 * The floor of the lab's main run: what `zsmalloc run kernel-test` asks of an allocator, done with
 * glibc malloc and nothing else. For each size lo..=hi by step, n objects are allocated and filled
 * with their content (kernel_test_content.h: the lab's kind of content); then every object is
 * verified in allocation order. Objects are never freed (the lab's run ends with its pool alive,
 * too). Links nothing of the project.
 *
 * Usage: kernel_test_malloc [LO HI STEP N]   (defaults: 32 4080 16 1337, the RFC's run)
 * Prints the objects written and verified, and their bytes; exits 1 on a verification failure.
 * scripts/bench-main-run.sh times it against the lab, whole process, in alternating pairs.
 */
#include <stdio.h>

#include "kernel_test_content.h"

int main(int argc, char **argv)
{
	size_t lo, hi, step, n;
	if (kt_args(argc, argv, &lo, &hi, &step, &n))
		return 2;
	kt_pattern_init();
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
			memcpy(objs[k], kt_content(k), size);
		}
	size_t verified = 0;
	for (k = 0; k < count; k++)
		verified += memcmp(objs[k], kt_content(k), lens[k]) == 0;
	printf("objects %zu bytes %zu verified %zu\n", count, bytes, verified);
	return verified == count ? 0 : 1;
}
