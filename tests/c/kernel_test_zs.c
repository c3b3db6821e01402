/*
 * The allocator's share of the lab's main run: kernel_test_malloc.c's work done on libzsmalloc
 * through its C ABI, with no lab around it. Each object is stored from its content with
 * zs_store() into a handle of the program's own array, then read back in store order with
 * zs_obj_read_begin() (a spanning object copied into local_copy, the kernel's way), compared in
 * place and ended. Between kernel_test_malloc (the floor) and `zsmalloc run kernel-test` (the
 * lab), it separates what the allocator costs from what the lab's driver adds.
 *
 * Usage: kernel_test_zs [LO HI STEP N]   (defaults: 32 4080 16 1337, the RFC's run)
 * The pool is zs_create_pool()'s: ZSMALLOC_CHAIN_SIZE=10 gives the lab's --chain-size 10.
 * Prints the objects written and verified, the pool's pages and the spanning reads.
 */
#include <stdio.h>

#include "kernel_test_content.h"
#include "zsmalloc.h"

int main(int argc, char **argv)
{
	size_t lo, hi, step, n;
	if (kt_args(argc, argv, &lo, &hi, &step, &n))
		return 2;
	kt_pattern_init();
	struct zs_pool *pool = zs_create_pool("kernel_test_zs");
	if (!pool) {
		fprintf(stderr, "zs_create_pool: %s\n", zs_last_error_message());
		return 1;
	}
	size_t count = ((hi - lo) / step + 1) * n;
	struct zs_handle *handles = calloc(count, sizeof(*handles));
	size_t *lens = malloc(count * sizeof(*lens));
	unsigned char *local_copy = malloc(KT_PAGE + ZS_HANDLE_SIZE);
	if (!handles || !lens || !local_copy)
		return perror("malloc"), 1;
	size_t k = 0, bytes = 0;
	for (size_t size = lo; size <= hi; size += step)
		for (size_t i = 0; i < n; i++, k++) {
			int err = zs_store(pool, &handles[k], kt_content(k), size, 0);
			if (err) {
				fprintf(stderr, "zs_store: %s\n", zs_strerror(err));
				return 1;
			}
			lens[k] = size;
			bytes += size;
		}
	size_t verified = 0, spanning = 0;
	for (k = 0; k < count; k++) {
		const unsigned char *obj = zs_obj_read_begin(pool, &handles[k], lens[k], local_copy);
		if (!obj) {
			fprintf(stderr, "zs_obj_read_begin: %s\n", zs_last_error_message());
			return 1;
		}
		spanning += obj == local_copy + ZS_HANDLE_SIZE;
		verified += memcmp(obj, kt_content(k), lens[k]) == 0;
		int err = zs_obj_read_end(pool, &handles[k], lens[k], (void *)obj);
		if (err) {
			fprintf(stderr, "zs_obj_read_end: %s\n", zs_strerror(err));
			return 1;
		}
	}
	printf("objects %zu bytes %zu verified %zu pages %lu spanning %zu\n", count, bytes, verified,
	       zs_get_total_pages(pool), spanning);
	zs_destroy_pool(pool);
	free(local_copy);
	free(lens);
	free(handles);
	return verified == count ? 0 : 1;
}
