// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * hostile_input: what a careless or hostile caller can hand the C ABI, refused cheaply.
 *
 * Checked:
 * - struct sizes: every size from 0 to past this header's struct, for zs_pool_config (in and
 *   out) and both stats structs (out): a size that ends inside a field is -EINVAL with nothing
 *   read or written, the message naming the size and the field; every size ending on a field
 *   boundary (computed here with offsetof, from this header) is accepted;
 * - ZSMALLOC_CLASS_TABLE naming /dev/zero, /dev/urandom, a FIFO whose writer never stops (zeros,
 *   class lines, comment lines), a file with a 2 MB line and a file of 5 MB: zs_create_pool()
 *   returns NULL with -EINVAL and a message naming the variable, the file and the line; each
 *   refusal runs in a child process of its own that uses under 5 seconds of CPU (a bound the
 *   machine's other load does not move, as it would wall-clock time) with a peak RSS under
 *   300 MiB and, outside AddressSanitizer (whose shadow memory needs terabytes of address
 *   space), under a 4 GiB address-space limit;
 * - a ZSMALLOC_* value holding a newline or an escape sequence: quoted escaped, one line.
 *
 *   hostile_input     run the checks; prints "hostile_input: P passed, F failed"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zsmalloc.h"
#include "check.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define MAX_SECONDS 5.0
#define MAX_RSS_KIB (300L << 10)
#define ADDRESS_SPACE (4UL << 30)

/* ------------------------------------------------------------------------- struct sizes */

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Whether `size` is a size the library must take: a field boundary at or above the first
 * version's size, or a multiple of 8 above this header's struct (a later version's sizeof). */
static int accepted(size_t size, const size_t *ends, size_t n, size_t first, size_t ours)
{
    if (size > ours)
        return size % 8 == 0 && size <= 4096;
    if (size < first)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (ends[i] == size)
            return 1;
    return 0;
}

static void struct_sizes(void)
{
    typedef struct zs_pool_config C;
    const size_t cfg_ends[] = {
        END_OF(C, mem_limit_pages), END_OF(C, backing),     END_OF(C, reserved),
        END_OF(C, backend),         END_OF(C, reserved2),   END_OF(C, class_table),
        END_OF(C, class_count),     END_OF(C, multi_page_size), END_OF(C, placement_only),
    };
    const size_t ncfg = sizeof(cfg_ends) / sizeof(cfg_ends[0]);
    union {
        struct zs_pool_config cfg;
        struct zs_pool_stats st;
        struct zs_class_stats cs;
        unsigned char bytes[512];
    } u, pattern;
    memset(&pattern, 0xa5, sizeof(pattern));
    struct zs_pool_config defaults;
    zs_pool_config_init(&defaults);
    int mismatches = 0, silent = 0, unnamed = 0;
    for (size_t size = 0; size <= sizeof(C) + 16; size++) {
        int want = accepted(size, cfg_ends, ncfg, ZS_POOL_CONFIG_SIZE_VER1, sizeof(C));
        memset(&u, 0, sizeof(u));
        u.cfg = defaults;
        struct zs_pool *pool = zs_create_pool_with_config_sized("sized", &u.cfg, size);
        mismatches += (pool != NULL) != want;
        if (!pool) {
            char needle[32];
            snprintf(needle, sizeof(needle), "size %zu ", size);
            unnamed += zs_last_error() != -EINVAL || !strstr(zs_last_error_message(), needle);
        }
        zs_destroy_pool(pool);
        memset(&u, 0xa5, sizeof(u));
        int rc = zs_pool_config_init_sized(&u.cfg, size);
        mismatches += (rc == 0) != want;
        silent += rc != 0 && memcmp(&u, &pattern, sizeof(u)) != 0;
    }
    CHECK(mismatches == 0 && unnamed == 0 && silent == 0,
          "zs_pool_config: %d sizes misjudged, %d refusals without -EINVAL naming the size, %d "
          "refusals that wrote",
          mismatches, unnamed, silent);

    u.cfg = defaults;
    size_t half = offsetof(C, multi_page_size) + 2;
    struct zs_pool *pool = zs_create_pool_with_config_sized("half", &u.cfg, half);
    const char *msg = zs_last_error_message();
    CHECK(!pool && zs_last_error() == -EINVAL && strstr(msg, "size 66 ends inside multi_page_size (bytes 64..68)") &&
              strstr(msg, "32, 36, 40, 44, 48, 56, 64, 68, 72"),
          "a size of %zu, half of multi_page_size, refused naming the field and the boundaries", half);

    typedef struct zs_pool_stats P;
    typedef struct zs_class_stats S;
    const size_t pool_ends[] = {END_OF(P, objs_moved), END_OF(P, bytes_moved)};
    const size_t class_ends[] = {END_OF(S, bytes_stored), END_OF(S, reads), END_OF(S, reads_spanning),
                                 END_OF(S, read_copy_bytes), END_OF(S, order), END_OF(S, reserved)};
    pool = zs_create_pool_with_config("stats", &defaults);
    mismatches = silent = 0;
    for (size_t size = ZS_POOL_STATS_SIZE_VER1 - 8; size <= sizeof(S) + 16; size++) {
        memset(&u, 0xa5, sizeof(u));
        int rc = zs_pool_stats_sized(pool, &u.st, size);
        int want = accepted(size, pool_ends, 2, ZS_POOL_STATS_SIZE_VER1, sizeof(P));
        mismatches += (rc == 0) != want;
        silent += rc != 0 && memcmp(&u, &pattern, sizeof(u)) != 0;
        memset(&u, 0xa5, sizeof(u));
        rc = zs_class_stats_sized(pool, 0, &u.cs, size);
        want = accepted(size, class_ends, 6, ZS_CLASS_STATS_SIZE_VER1, sizeof(S));
        mismatches += (rc == 0) != want;
        silent += rc != 0 && memcmp(&u, &pattern, sizeof(u)) != 0;
    }
    CHECK(mismatches == 0 && silent == 0, "stats structs: %d sizes misjudged, %d refusals that wrote",
          mismatches, silent);
    CHECK(zs_class_stats_sized(pool, 0, &u.cs, END_OF(S, reads) - 4) == -EINVAL &&
              strstr(zs_last_error_message(), "ends inside reads"),
          "zs_class_stats: half of `reads` refused by name");
    zs_destroy_pool(pool);
}

/* ------------------------------------------------------------------------- hostile tables */

struct outcome {
    int refused, error;
    double cpu_seconds; /* the child's, user and system */
    long max_rss_kib;
    char message[1024];
};

/* zs_create_pool() with ZSMALLOC_CLASS_TABLE=`path`, in a child process of its own so that its
 * peak RSS is its own and the address-space limit binds it alone. */
static struct outcome create_in_child(const char *path)
{
    struct outcome out;
    memset(&out, 0, sizeof(out));
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        struct rlimit as = {ADDRESS_SPACE, ADDRESS_SPACE};
        if (!UNDER_ASAN && setrlimit(RLIMIT_AS, &as) != 0) {
            perror("setrlimit(RLIMIT_AS)");
            _exit(1);
        }
        setenv("ZSMALLOC_CLASS_TABLE", path, 1);
        struct zs_pool *pool = zs_create_pool("hostile");
        out.refused = pool == NULL;
        out.error = zs_last_error();
        snprintf(out.message, sizeof(out.message), "%s", zs_last_error_message());
        zs_destroy_pool(pool);
        ssize_t w = write(fds[1], &out, sizeof(out));
        _exit(w == (ssize_t)sizeof(out) ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &out, sizeof(out));
    close(fds[0]);
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    if (got != (ssize_t)sizeof(out) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        snprintf(out.message, sizeof(out.message), "the child died (status %d)", status);
    out.max_rss_kib = ru.ru_maxrss;
    out.cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    return out;
}

/* Checks the refusal of the table at `path`: its message holds `want`, its child's time and
 * memory are within the limits. */
static void refused(const char *what, const char *path, const char *want)
{
    struct outcome o = create_in_child(path);
    CHECK(o.refused && o.error == -EINVAL && strstr(o.message, "ZSMALLOC_CLASS_TABLE") &&
              strstr(o.message, path) && strstr(o.message, "line ") && strstr(o.message, want),
          "%s: refused naming the variable, the file and the line (\"%s\"): got \"%s\"", what, want,
          o.message);
    CHECK(o.cpu_seconds < MAX_SECONDS && o.max_rss_kib < MAX_RSS_KIB,
          "%s: %.2f s of CPU, peak RSS %ld KiB (limits %.0f s, %ld KiB)", what, o.cpu_seconds,
          o.max_rss_kib, MAX_SECONDS, MAX_RSS_KIB);
    printf("  %-40s %.3f s of CPU, peak RSS %ld KiB%s\n", what, o.cpu_seconds, o.max_rss_kib,
           UNDER_ASAN ? "" : ", under a 4 GiB address-space limit");
}

/* A FIFO at `path` whose writer, a child process, writes `head` then the `n` bytes of `unit`
 * forever (until the reader is gone). Returns the writer's pid. */
static pid_t endless_fifo(const char *path, const char *head, const char *unit, size_t n)
{
    unlink(path);
    if (mkfifo(path, 0600) != 0) {
        perror("mkfifo");
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        int fd = open(path, O_WRONLY);
        char block[65536];
        size_t filled = 0;
        while (filled + n <= sizeof(block)) {
            memcpy(block + filled, unit, n);
            filled += n;
        }
        if (fd < 0 || write(fd, head, strlen(head)) < 0)
            _exit(1);
        while (write(fd, block, filled) > 0) {
        }
        _exit(0);
    }
    return pid;
}

static void stop(pid_t writer)
{
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
}

/* Writes `head`, `unit` until at least `bytes` are written, then `tail`. */
static void write_file(const char *path, const char *head, const char *unit, size_t bytes,
                       const char *tail)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(head, f);
    for (size_t written = 0; written < bytes; written += strlen(unit))
        fputs(unit, f);
    fputs(tail, f);
    fclose(f);
}

static void hostile_tables(const char *dir)
{
    char path[512];
    const char *too_long = "line 1: the line is longer than 64 KiB";
    refused("/dev/zero", "/dev/zero", too_long);
    refused("/dev/urandom", "/dev/urandom", ": line ");

    snprintf(path, sizeof(path), "%s/zeros.fifo", dir);
    pid_t w = endless_fifo(path, "", "\0", 1);
    refused("a FIFO of endless zeros", path, too_long);
    stop(w);
    w = endless_fifo(path, "page_size 4096\n", "32 1\n", 5);
    refused("a FIFO of endless class lines", path, "line 8191 (`32 1`): too many classes");
    stop(w);
    const char *comment = "# a comment, not a class\n";
    w = endless_fifo(path, "page_size 4096\n", comment, strlen(comment));
    refused("a FIFO of endless comments", path, "the input is larger than 4 MiB");
    stop(w);
    unlink(path);

    snprintf(path, sizeof(path), "%s/long-line.table", dir);
    write_file(path, "page_size 4096\n32 1\n", "x", 2u << 20, "\n4096 1\n");
    refused("a file with a 2 MB line", path, "line 3: the line is longer than 64 KiB");
    unlink(path);
    snprintf(path, sizeof(path), "%s/large.table", dir);
    write_file(path, "page_size 4096\n", comment, 5u << 20, "32 1\n4096 1\n");
    refused("a file of 5 MB", path, "the input is larger than 4 MiB");
    unlink(path);
}

/* A ZSMALLOC_* value with a newline (or another control character) is quoted escaped in the
 * message, which stays one line for the caller to print. */
static void multiline_env_values(void)
{
    static const char *const env[][2] = {
        {"ZSMALLOC_PAGE_SIZE", "4096\nx"},
        {"ZSMALLOC_READ_MODE", "co\npy"},
        {"ZSMALLOC_CHAIN_POLICY", "heur\nistic"},
        {"ZSMALLOC_BACKEND", "zs\nmalloc\x1b[2J"},
    };
    for (size_t k = 0; k < sizeof(env) / sizeof(env[0]); k++) {
        struct zs_pool_config cfg;
        setenv(env[k][0], env[k][1], 1);
        int err = zs_pool_config_from_env(&cfg);
        const char *msg = zs_last_error_message();
        CHECK(err == -EINVAL && !strchr(msg, '\n') && !strchr(msg, '\x1b') && strstr(msg, "\\n") &&
                  strstr(msg, env[k][0]),
              "%s with a newline: one line, escaped, naming the variable: %s", env[k][0], msg);
        unsetenv(env[k][0]);
    }
}

int main(void)
{
    /* The FIFO writers end by SIGPIPE when the reader is gone; the parent only reads. */
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/zs-hostile-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    struct_sizes();
    multiline_env_values();
    hostile_tables(dir);
    rmdir(dir);
    printf("hostile_input: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
