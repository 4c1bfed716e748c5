/* SPDX-License-Identifier: BSD-2-Clause */
/* seacache-workload's small helpers: errors, memory, child processes, files. */
#ifndef WL_UTIL_H
#define WL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Fixed inode times and the time mkfs/debugfs see (E2FSPROGS_FAKE_TIME):
 * bookworm's release day, so that the same seed gives the same bytes. */
#define WL_FAKE_TIME 1686355200ull

/* Prints "seacache-workload: ..." on stderr; returns -1. */
int wl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A progress line on stderr. */
void wl_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Out of memory ends the program: a generator has nothing to fall back on. */
void *wl_malloc(size_t n);
void *wl_calloc(size_t n, size_t size);
void *wl_realloc(void *p, size_t n);
char *wl_strdup(const char *s);
char *wl_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct wl_u64vec {
	uint64_t *v;
	size_t n, cap;
};
void wl_u64vec_push(struct wl_u64vec *a, uint64_t x);

/* Runs argv (argv[0] looked up in PATH) with E2FSPROGS_FAKE_TIME set,
 * stdin from /dev/null, stdout into out_path (NULL: /dev/null) and stderr
 * into err_path (NULL: ours).  Returns the exit status, or -1 when it
 * could not run or died of a signal. */
int wl_run(char *const argv[], const char *out_path, const char *err_path);
/* Whether prog is on PATH. */
bool wl_have(const char *prog);

int wl_mkdir_p(const char *path);
/* rm -rf path (refuses "/" and ""). */
int wl_rm_rf(const char *path);
/* Copies src to dst leaving all-zero blocks as holes (images are mostly
 * unallocated space); dst is replaced. */
int wl_copy_sparse(const char *src, const char *dst);
int wl_write_all(int fd, const void *buf, size_t len);
int wl_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int wl_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* The whole file as a NUL-terminated string (NULL on error, message printed). */
char *wl_read_file(const char *path, size_t *len);

/* Number parsing for options: the whole string must be a number in range. */
bool wl_parse_u64(const char *s, uint64_t max, uint64_t *out);
bool wl_parse_frac(const char *s, double *out);

/* Monotonic seconds, for the progress lines. */
double wl_now(void);



/* This process's scratch directory (created on first use under $TMPDIR or
 * /tmp, removed at exit). */
const char *wl_tmpdir(void);

/* Runs debugfs's commands (one a line) on img, read-write when write is
 * set, stdout into out_path (NULL: dropped).  debugfs exits 0 even when a
 * command fails, so any line on its stderr but its version banner is
 * taken as failure and printed. */
int wl_debugfs(const char *img, const char *cmds, bool write, const char *out_path);
#endif /* WL_UTIL_H */
