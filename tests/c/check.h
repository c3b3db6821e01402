/* The C test programs' check macro: counts passed and failed checks, and prints each failure
 * with its location, the failed expression and the library's last error. */
#ifndef ZS_TESTS_CHECK_H
#define ZS_TESTS_CHECK_H

#include <stdio.h>

#include "zsmalloc.h"

static int passed, failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
        } else {                                                                                   \
            failed++;                                                                              \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [%s] last error %d: %s\n", #cond, zs_last_error(),                   \
                    zs_last_error_message());                                                      \
        }                                                                                          \
    } while (0)

#endif
