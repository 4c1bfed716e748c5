// SPDX-License-Identifier: BSD-2-Clause
/*
 * Persistence across server restarts: a tree of directories, files (sizes
 * 0 to 3 MiB, random and repetitive), symlinks, hard links and a 300-entry
 * directory is written; after a clean restart and after a kill -9 and
 * start, every path has the same fileid, type, mode, link count, size,
 * mtime, symlink target and content, every directory lists the same names
 * with the same fileids in the same order, and READDIRPLUS resumes from a
 * cookie handed out before the restart.  NFSv3 file handles taken before
 * the restart keep working (an auto-reconnecting client reads through them).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cmocka.h>

#include "nfs_harness.h"

#define SEED 0x4e57a47ull
#define D "/persist"
#define MAXP 1024

struct node {
	char path[512];
	struct nfs_stat_64 st;
	char target[256];
	uint64_t hash;
	char *listing; /* directories: "name\tfileid\n"... in readdir order */
};

struct snap {
	struct node n[MAXP];
	int count;
};

static struct nfs_context *v3;
static struct snap before, after;

static uint64_t fnv(const void *p, size_t len, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void snap_path(struct snap *s, const char *path)
{
	struct node *n;
	struct nfsdirent *e;
	struct nfsdir *d;
	size_t cap = 0, len = 0;

	assert_true(s->count < MAXP);
	n = &s->n[s->count++];
	memset(n, 0, sizeof(*n));
	snprintf(n->path, sizeof(n->path), "%s", path);
	if (nfs_lstat64(v3, path, &n->st) != 0)
		fail_msg("lstat %s: %s", path, nfs_get_error(v3));
	if (S_ISLNK(n->st.nfs_mode)) {
		if (nfs_readlink(v3, path, n->target, sizeof(n->target)) != 0)
			fail_msg("readlink %s: %s", path, nfs_get_error(v3));
	} else if (S_ISREG(n->st.nfs_mode)) {
		void *buf;
		size_t got;

		if (nh_read_file(v3, path, &buf, &got) != 0)
			fail_msg("read %s", path);
		n->hash = fnv(buf, got, 0xcbf29ce484222325ull);
		free(buf);
	} else if (S_ISDIR(n->st.nfs_mode)) {
		char subs[400][256];
		int nsub = 0;

		if (nfs_opendir(v3, path, &d) != 0)
			fail_msg("opendir %s: %s", path, nfs_get_error(v3));
		while ((e = nfs_readdir(v3, d)) != NULL) {
			char line[300];
			int l;

			if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
				continue;
			l = snprintf(line, sizeof(line), "%s\t%" PRIu64 "\n", e->name, e->inode);
			if (len + (size_t)l + 1 > cap) {
				cap = 2 * (cap + (size_t)l + 1024);
				n->listing = realloc(n->listing, cap);
				assert_non_null(n->listing);
			}
			memcpy(n->listing + len, line, (size_t)l + 1);
			len += (size_t)l;
			if (nsub < 400)
				snprintf(subs[nsub++], sizeof(subs[0]), "%s", e->name);
		}
		nfs_closedir(v3, d);
		for (int i = 0; i < nsub; i++) {
			char sub[800];

			snprintf(sub, sizeof(sub), "%.500s/%.255s", path, subs[i]);
			snap_path(s, sub);
		}
	}
}

static void snapshot(struct snap *s)
{
	for (int i = 0; i < s->count; i++)
		free(s->n[i].listing);
	s->count = 0;
	snap_path(s, D);
}

static void compare(const struct snap *a, const struct snap *b, const char *when)
{
	if (a->count != b->count)
		fail_msg("%s: %d paths before, %d after", when, a->count, b->count);
	for (int i = 0; i < a->count; i++) {
		const struct node *x = &a->n[i], *y = &b->n[i];

		if (strcmp(x->path, y->path))
			fail_msg("%s: path %d is %s, was %s", when, i, y->path, x->path);
#define SAME(f)                                                                         \
	if (x->st.f != y->st.f)                                                         \
	fail_msg("%s: %s: " #f " %" PRIu64 ", was %" PRIu64, when, x->path, (uint64_t)y->st.f, \
		 (uint64_t)x->st.f)
		SAME(nfs_ino);
		SAME(nfs_mode);
		SAME(nfs_nlink);
		SAME(nfs_uid);
		SAME(nfs_gid);
		SAME(nfs_size);
		SAME(nfs_mtime);
		SAME(nfs_mtime_nsec);
#undef SAME
		if (strcmp(x->target, y->target))
			fail_msg("%s: %s: symlink target '%s', was '%s'", when, x->path, y->target,
				 x->target);
		if (x->hash != y->hash)
			fail_msg("%s: %s: content changed", when, x->path);
		if ((x->listing || y->listing) &&
		    (!x->listing || !y->listing || strcmp(x->listing, y->listing)))
			fail_msg("%s: %s: directory listing (names, fileids, order) changed", when,
				 x->path);
	}
	printf("# %s: %d paths with the same fileids, attributes, contents and listings\n", when,
	       a->count);
}

static void build_tree(void)
{
	static const size_t sizes[] = { 0, 1, 4096, 5000, 3 * NH_MIB + 17 };
	unsigned char *buf = malloc(3 * NH_MIB + 17);
	struct timeval tv[2] = { { 1111111111, 0 }, { 1222222222, 500000 } };
	char p[256];

	assert_non_null(buf);
	assert_int_equal(nfs_mkdir(v3, D), 0);
	assert_int_equal(nfs_mkdir(v3, D "/a"), 0);
	assert_int_equal(nfs_mkdir(v3, D "/a/b"), 0);
	assert_int_equal(nfs_mkdir(v3, D "/many"), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		nh_fill_seeded(buf, sizes[i], SEED + i);
		snprintf(p, sizeof(p), D "/a/rand-%zu", sizes[i]);
		assert_int_equal(nh_write_file(v3, p, buf, sizes[i], NH_MIB), 0);
		memset(buf, 'r', sizes[i]);
		snprintf(p, sizeof(p), D "/a/b/rep-%zu", sizes[i]);
		assert_int_equal(nh_write_file(v3, p, buf, sizes[i], NH_MIB), 0);
	}
	assert_int_equal(nfs_symlink(v3, "a/rand-5000", D "/link-rel"), 0);
	assert_int_equal(nfs_symlink(v3, "/dangling/target", D "/link-dangling"), 0);
	assert_int_equal(nfs_link(v3, D "/a/rand-4096", D "/hard-4096"), 0);
	assert_int_equal(nfs_chmod(v3, D "/a/rand-1", 0604), 0);
	assert_int_equal(nfs_utimes(v3, D "/a/rand-1", tv), 0);
	for (int i = 0; i < 300; i++) {
		struct nfsfh *fh;

		snprintf(p, sizeof(p), D "/many/entry-%03d-%.*s", i, i % 40,
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		assert_int_equal(nfs_create(v3, p, O_CREAT | O_EXCL | O_RDWR, 0644, &fh), 0);
		if (i % 7 == 0)
			assert_int_equal(nh_pwrite_all(v3, fh, 0, p, strlen(p), 4096), 0);
		assert_int_equal(nfs_fsync(v3, fh), 0);
		nfs_close(v3, fh);
	}
	free(buf);
}

/* A resumed READDIRPLUS of D/many from the middle entry's cookie. */
struct resume {
	char verf[8];
	uint64_t cookie;
	char *tail; /* names after the middle entry, in order */
};

static char *names_from(const struct nh_dirent *e, int from, int n)
{
	size_t len = 1;
	char *s;

	for (int i = from; i < n; i++)
		len += strlen(e[i].name) + 1;
	s = calloc(1, len);
	assert_non_null(s);
	for (int i = from; i < n; i++) {
		strcat(s, e[i].name);
		strcat(s, "\n");
	}
	return s;
}

static void resume_point(struct resume *r)
{
	struct nh_dirent *e;
	struct nfsfh *dfh;
	int n, calls;

	memset(r, 0, sizeof(*r));
	assert_int_equal(nfs_open(v3, D "/many", O_RDONLY, &dfh), 0);
	n = nh_readdirplus_all(v3, dfh, 0, r->verf, 4096, &e, &calls);
	nfs_close(v3, dfh);
	assert_int_equal(n, 300);
	r->cookie = e[n / 2].cookie;
	r->tail = names_from(e, n / 2 + 1, n);
	free(e);
}

static void check_resume(const struct resume *r, const char *when)
{
	char verf[8];
	struct nh_dirent *e;
	struct nfsfh *dfh;
	char *tail;
	int n, calls;

	memcpy(verf, r->verf, 8);
	assert_int_equal(nfs_open(v3, D "/many", O_RDONLY, &dfh), 0);
	n = nh_readdirplus_all(v3, dfh, r->cookie, verf, 4096, &e, &calls);
	nfs_close(v3, dfh);
	if (n < 0)
		fail_msg("%s: READDIRPLUS from a cookie of before: %s", when, strerror(-n));
	tail = names_from(e, 0, n);
	if (strcmp(tail, r->tail))
		fail_msg("%s: READDIRPLUS resumed from a cookie of before lists other names", when);
	printf("# %s: READDIRPLUS resumed from an old cookie: the same %d entries\n", when, n);
	free(tail);
	free(e);
}

static int setup(void **state)
{
	(void)state;
	v3 = nh_mount(3);
	return nh_rm_rf(v3, D) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	nh_umount(v3);
	return 0;
}

static void server(const char *what)
{
	nh_umount(v3);
	v3 = NULL;
	if (!strcmp(what, "kill9")) {
		assert_int_equal(nh_ctl("kill9"), 0);
		assert_int_equal(nh_ctl("start"), 0);
	} else {
		assert_int_equal(nh_ctl(what), 0);
	}
	v3 = nh_mount(3);
}

static void test_restart(void **state)
{
	struct nfs_context *keep;
	struct nfsfh *held;
	struct resume r;
	unsigned char head[4096], again[4096];
	size_t got;

	(void)state;
	build_tree();
	snapshot(&before);
	resume_point(&r);

	/* a handle held across the restart, by a client that reconnects */
	keep = nh_try_mount(3, true);
	assert_non_null(keep);
	assert_int_equal(nfs_open(keep, D "/a/rand-3145745", O_RDONLY, &held), 0);
	assert_int_equal(nh_pread_all(keep, held, NH_MIB, head, sizeof(head), 4096, &got), 0);

	server("restart");
	snapshot(&after);
	compare(&before, &after, "after a clean restart");
	check_resume(&r, "after a clean restart");
	assert_int_equal(nh_pread_all(keep, held, NH_MIB, again, sizeof(again), 4096, &got), 0);
	assert_int_equal(got, sizeof(again));
	assert_memory_equal(head, again, sizeof(head));
	printf("# an NFSv3 file handle of before the restart still reads the same data\n");

	/* changes, then kill -9 */
	assert_int_equal(nfs_rename(v3, D "/a/rand-5000", D "/a/b/moved-5000"), 0);
	assert_int_equal(nfs_unlink(v3, D "/a/b/rep-1"), 0);
	assert_int_equal(nfs_mkdir(v3, D "/later"), 0);
	{
		unsigned char buf[100000];

		nh_fill_seeded(buf, sizeof(buf), SEED + 100);
		assert_int_equal(nh_write_file(v3, D "/later/file", buf, sizeof(buf), 65536), 0);
	}
	assert_int_equal(nfs_truncate(v3, D "/a/rand-4096", 1000), 0);
	snapshot(&before);
	free(r.tail);
	resume_point(&r);
	server("kill9");
	snapshot(&after);
	compare(&before, &after, "after kill -9 and a start");
	check_resume(&r, "after kill -9 and a start");
	assert_int_equal(nh_pread_all(keep, held, NH_MIB, again, sizeof(again), 4096, &got), 0);
	assert_memory_equal(head, again, sizeof(head));
	printf("# ... and after kill -9 and a start\n");
	nfs_close(keep, held);
	nh_umount(keep);

	/* twice more in a row: nothing drifts */
	server("restart");
	server("kill9");
	snapshot(&after);
	compare(&before, &after, "after a restart and another kill -9");
	free(r.tail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart),
	};

	return cmocka_run_group_tests_name("fsal_restart", tests, setup, teardown);
}
