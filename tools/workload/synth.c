/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The synthetic golden tree (--synthetic): a seeded stand-in for a Debian
 * root file system, so that tests and CI never need the network.
 *
 * It has Debian 12's merged-/usr layout (/bin, /sbin, /lib, /lib64 are
 * symlinks into /usr), nine in ten of the boot list's files (the rest are
 * left out so that a boot storm meets missing files, as it does on
 * minbase), and filler packages under /usr and /var up to the byte
 * budget.  File sizes follow a rough root-file-system mix: about half of
 * the files under 4 KiB, a third 4-32 KiB, a few large; one file in ten
 * is a copy of an earlier one (duplicate files across packages).
 */
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seacache/prng.h"

struct made {
	uint64_t content_seed;
	uint64_t size;
};

struct synth {
	const char *root;
	struct sc_prng prng;
	struct made *files;
	size_t nfiles, cap;
	uint64_t bytes;		/* file data written so far */
};

static uint64_t between(struct sc_prng *p, uint64_t lo, uint64_t hi)
{
	return lo + sc_prng_next(p) % (hi - lo + 1);
}

/* Log-uniform in [lo, hi]: as many files of 1-2 KiB as of 2-4 KiB. */
static uint64_t log_between(struct sc_prng *p, uint64_t lo, uint64_t hi)
{
	double f = (double)(sc_prng_next(p) >> 11) / (double)(1ull << 53);
	double v = (double)lo * pow((double)hi / (double)lo, f);

	return v < (double)lo ? lo : v > (double)hi ? hi : (uint64_t)v;
}

uint64_t wl_file_size(struct sc_prng *p)
{
	uint32_t r = sc_prng_below(p, 100);

	if (r < 45)
		return log_between(p, 64, 4096);
	if (r < 80)
		return log_between(p, 4096, 32768);
	if (r < 95)
		return log_between(p, 32768, 262144);
	return log_between(p, 262144, 4u << 20);
}

int wl_write_content(const char *path, uint64_t content_seed, uint64_t size)
{
	uint8_t buf[65536];
	struct sc_prng p;
	int fd, rc = 0;

	sc_prng_seed(&p, content_seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return wl_err("%s: %s", path, strerror(errno));
	while (size && !rc) {
		size_t n = size < sizeof(buf) ? (size_t)size : sizeof(buf);

		sc_prng_fill(&p, buf, n);
		if (wl_write_all(fd, buf, n))
			rc = wl_err("%s: %s", path, strerror(errno));
		size -= n;
	}
	if (close(fd) && !rc)
		rc = wl_err("%s: %s", path, strerror(errno));
	return rc;
}

/* A new file at root + rel; one in ten repeats an earlier file's bytes. */
static int add_file(struct synth *s, const char *rel, uint64_t size, bool may_dup)
{
	struct made m = { sc_prng_next(&s->prng), size };
	char *path = wl_printf("%s%s", s->root, rel);
	int rc;

	if (may_dup && s->nfiles && sc_prng_below(&s->prng, 10) == 0)
		m = s->files[sc_prng_below(&s->prng, (uint32_t)s->nfiles)];
	rc = wl_write_content(path, m.content_seed, m.size);
	free(path);
	if (rc)
		return rc;
	if (s->nfiles == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->files = wl_realloc(s->files, s->cap * sizeof(*s->files));
	}
	s->files[s->nfiles++] = m;
	s->bytes += m.size;
	return 0;
}

static int mkdir_rel(struct synth *s, const char *rel)
{
	char *path = wl_printf("%s%s", s->root, rel);
	int rc = wl_mkdir_p(path);

	free(path);
	return rc;
}

static int symlink_rel(struct synth *s, const char *target, const char *rel)
{
	char *path = wl_printf("%s%s", s->root, rel);
	int rc = 0;

	if (symlink(target, path))
		rc = wl_err("symlink %s: %s", path, strerror(errno));
	free(path);
	return rc;
}

/* The merged-/usr name of a boot-list path: /lib/x -> /usr/lib/x. */
static char *usr_path(const char *p)
{
	static const char *const merged[] = { "/bin/", "/sbin/", "/lib/", "/lib64/" };
	size_t i;

	for (i = 0; i < SC_ARRAY_SIZE(merged); i++)
		if (!strncmp(p, merged[i], strlen(merged[i])))
			return wl_printf("/usr%s", p);
	return wl_strdup(p);
}

static int boot_files(struct synth *s, char **paths, size_t n, uint64_t budget)
{
	/* Programs and libraries up to 2 MiB (libc's size), less in a small
	 * image: the boot list's ~90 files take at most a third of it. */
	uint64_t big = budget / 3 / (n ? n : 1);
	size_t i;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		char *rel = usr_path(paths[i]), *slash, *full;
		bool small = !strncmp(rel, "/etc/", 5) || !strncmp(rel, "/root/", 6) ||
			     strstr(rel, "/system/");
		struct stat st;

		if (sc_prng_below(&s->prng, 10) == 0) {
			free(rel);
			continue;
		}
		full = wl_printf("%s%s", s->root, rel);
		slash = strrchr(rel, '/');
		*slash = '\0';
		rc = rel[0] ? mkdir_rel(s, rel) : 0;
		*slash = '/';
		/* The list names some files twice, through links. */
		if (!rc && lstat(full, &st) && errno == ENOENT) {
			/* Debian's own links: init is systemd, the ABI's loader
			 * path points into the multiarch directory. */
			if (!strcmp(paths[i], "/sbin/init"))
				rc = symlink_rel(s, "/lib/systemd/systemd", rel);
			else if (!strcmp(paths[i], "/lib64/ld-linux-x86-64.so.2"))
				rc = symlink_rel(s, "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", rel);
			else
				rc = add_file(s, rel, small ? log_between(&s->prng, 32, 4096) :
							      log_between(&s->prng, 8192,
									  big < 16384 ? 16384 :
									  big > (2u << 20) ? 2u << 20 : big),
					      false);
		}
		free(full);
		free(rel);
	}
	return rc;
}

static int filler(struct synth *s, uint64_t budget)
{
	static const char *const ext[] = { "so", "txt", "gz", "py", "mo", "conf" };
	static const char *const parents[] = { "/usr/share", "/usr/share/doc",
		"/usr/lib/x86_64-linux-gnu", "/usr/share/locale", "/var/lib" };
	char *dir = NULL;
	uint32_t pkg = 0, left = 0, f = 0;
	int rc = 0;

	while (!rc && s->bytes < budget) {
		uint64_t size = wl_file_size(&s->prng);
		char *rel;

		if (!left) {
			/* A package: a directory, sometimes with a subdirectory,
			 * holding a handful to a few dozen files. */
			free(dir);
			dir = wl_printf("%s/pkg%04u%s",
					parents[sc_prng_below(&s->prng, SC_ARRAY_SIZE(parents))],
					pkg++, sc_prng_below(&s->prng, 3) ? "" : "/data");
			rc = mkdir_rel(s, dir);
			left = (uint32_t)between(&s->prng, 3, 40);
			continue;
		}
		if (size > budget - s->bytes)
			size = budget - s->bytes;
		rel = wl_printf("%s/f%05u.%s", dir, f++,
				ext[sc_prng_below(&s->prng, SC_ARRAY_SIZE(ext))]);
		rc = add_file(s, rel, size, true);
		free(rel);
		left--;
	}
	free(dir);
	return rc;
}

int wl_synth_tree(const char *root, uint64_t seed, uint64_t bytes,
		  char **boot, size_t nboot)
{
	static const char *const dirs[] = { "/usr/bin", "/usr/sbin", "/usr/lib64",
		"/usr/lib/x86_64-linux-gnu", "/usr/share", "/etc", "/home", "/root",
		"/var/lib", "/var/log", "/tmp", "/dev", "/proc", "/sys", "/run",
		"/boot", "/opt", "/srv", "/mnt", "/media" };
	struct synth s = { .root = root };
	size_t i;
	int rc = 0;

	sc_prng_seed(&s.prng, seed ^ 0x73796e7468ull /* "synth" */);
	if (wl_rm_rf(root) || wl_mkdir_p(root))
		return -1;
	for (i = 0; i < SC_ARRAY_SIZE(dirs) && !rc; i++)
		rc = mkdir_rel(&s, dirs[i]);
	if (!rc)
		rc = symlink_rel(&s, "usr/bin", "/bin") || symlink_rel(&s, "usr/sbin", "/sbin") ||
		     symlink_rel(&s, "usr/lib", "/lib") || symlink_rel(&s, "usr/lib64", "/lib64");
	if (!rc)
		rc = boot_files(&s, boot, nboot, bytes);
	if (!rc)
		rc = filler(&s, bytes);
	if (!rc)
		wl_note("synthetic tree: %zu files, %llu KiB", s.nfiles,
			(unsigned long long)(s.bytes >> 10));
	free(s.files);
	return rc;
}
