/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `seacache-workload images`: a golden ext4 image and N clones of it.
 *
 * Golden: mkfs.ext4 -d over a debootstrap minbase tree (cached, with the
 * image, under $SEACACHE_CACHE/images) or over a seeded synthetic tree.
 * Clone v: a sparse copy of the golden, then
 *   - divergence: round(F * B) of the golden's B regular-file data blocks,
 *     picked by a seeded shuffle, overwritten with seeded random bytes
 *     (file data is opaque to ext4: the clone stays a valid file system);
 *   - unique files: M MiB of seeded files written by `debugfs -w` into
 *     /home/vdi-user (a user profile), allocated by libext2fs in the
 *     clone's free space.
 * Every inode's times are then set to one fixed instant, and mkfs/debugfs
 * run with E2FSPROGS_FAKE_TIME, so that the same options and seed give the
 * same bytes (mkfs -d copies ctime and atime from the tree, which no one
 * can set).
 */
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ext4.h"
#include "seacache/hash.h"
#include "seacache/prng.h"

#define DEFAULT_SUITE "bookworm"
#define DEFAULT_MIRROR "http://deb.debian.org/debian"
#define VARIANT "minbase"
/* One fixed UUID (also the directory hash seed) for every golden: clones
 * of one golden share it, as linked clones do. */
#define GOLDEN_UUID "5eaca4e0-0000-4000-8000-000000000001"
/* Version of the recipe below: part of the cache key, so that a changed
 * recipe never reuses an image made by the old one. */
#define RECIPE "r1"

struct opts {
	const char *out;
	uint32_t vms;
	double divergence;
	uint64_t unique_mib;
	bool synthetic;
	uint64_t seed;
	uint64_t size_mib;
	const char *suite;
	const char *mirror;
	const char *boot_files;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-workload images --out DIR [OPTIONS]\n"
		"\n"
		"Makes DIR/golden.img (ext4), DIR/vm-000.img ... (its clones) and DIR/manifest.\n"
		"The golden comes from `debootstrap --variant=minbase` (as root, network to\n"
		"Debian's mirror; cached under $SEACACHE_CACHE/images, default\n"
		"/var/cache/seacache/images, and reused) or, with --synthetic, from a seeded\n"
		"generated tree (no root, no network).  The same options give the same bytes.\n"
		"\n"
		"  -o, --out DIR         where the image set goes (required)\n"
		"  -n, --vms N           clones, one per VM (8)\n"
		"  -d, --divergence F    fraction of the golden's file data blocks each clone\n"
		"                        rewrites with its own bytes, 0..1 (0.05)\n"
		"  -u, --unique-mib M    MiB of files only this clone has, per clone (4)\n"
		"      --synthetic       a generated golden tree instead of debootstrap\n"
		"  -s, --seed S          random seed (1)\n"
		"  -m, --size-mib M      image size in MiB (512; 32 with --synthetic)\n"
		"      --suite NAME      Debian suite for debootstrap (" DEFAULT_SUITE ")\n"
		"      --mirror URL      Debian mirror for debootstrap (" DEFAULT_MIRROR ")\n"
		"      --boot-files F    boot list the synthetic tree carries (the shipped one)\n"
		"  -h, --help            this text\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "vms", required_argument, NULL, 'n' },
		{ "divergence", required_argument, NULL, 'd' },
		{ "unique-mib", required_argument, NULL, 'u' },
		{ "synthetic", no_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "size-mib", required_argument, NULL, 'm' },
		{ "suite", required_argument, NULL, 'T' },
		{ "mirror", required_argument, NULL, 'M' },
		{ "boot-files", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .vms = 8, .divergence = 0.05, .unique_mib = 4, .seed = 1,
			    .suite = DEFAULT_SUITE, .mirror = DEFAULT_MIRROR,
			    .boot_files = wl_default_boot_files() };
	while ((c = getopt_long(argc, argv, "o:n:d:u:s:m:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 'n':
			if (wl_opt_vms(optarg, &o->vms))
				return -1;
			break;
		case 'd':
			if (!wl_parse_frac(optarg, &o->divergence))
				return wl_err("--divergence: a fraction from 0 to 1");
			break;
		case 'u':
			if (!wl_parse_u64(optarg, 1u << 20, &o->unique_mib))
				return wl_err("--unique-mib: a number of MiB");
			break;
		case 'S':
			o->synthetic = true;
			break;
		case 's':
			if (wl_opt_seed(optarg, &o->seed))
				return -1;
			break;
		case 'm':
			if (!wl_parse_u64(optarg, 1u << 24, &o->size_mib) || o->size_mib < 4)
				return wl_err("--size-mib: at least 4");
			break;
		case 'T':
			o->suite = optarg;
			break;
		case 'M':
			o->mirror = optarg;
			break;
		case 'B':
			o->boot_files = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc)
		return wl_err("images: unexpected argument '%s' (see --help)", argv[optind]);
	if (!o->out)
		return wl_err("images: --out DIR is required (see --help)");
	if (!o->size_mib)
		o->size_mib = o->synthetic ? 32 : 512;
	return 0;
}

static int need_e2fsprogs(void)
{
	if (wl_have("mkfs.ext4") && wl_have("debugfs"))
		return 0;
	return wl_err("mkfs.ext4 and debugfs are missing: install e2fsprogs "
		      "(scripts/install-deps lab, as root)");
}

static int mkfs(const char *tree, const char *img, uint64_t size_mib)
{
	char *errf = wl_printf("%s/mkfs.err", wl_tmpdir());
	char *size = wl_printf("%lluk", (unsigned long long)size_mib * 1024);
	char *ext = wl_printf("hash_seed=%s,root_owner=0:0,nodiscard", GOLDEN_UUID);
	/* Block and inode sizes and the inode ratio are fixed: mke2fs.conf's
	 * "small" and "floppy" types would otherwise change them with the
	 * image size (1 KiB blocks under 512 MiB). */
	char *argv[] = { "mkfs.ext4", "-q", "-F", "-b", "4096", "-I", "256", "-i", "8192",
			 "-U", GOLDEN_UUID, "-E", ext, "-L", "seacache-golden",
			 "-d", (char *)tree, (char *)img, size, NULL };
	int rc, fd;

	unlink(img);
	fd = open(img, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || close(fd)) {
		rc = wl_err("%s: %s", img, strerror(errno));
		goto done;
	}
	rc = wl_run(argv, NULL, errf);
	if (rc) {
		char *err = wl_read_file(errf, NULL);

		wl_err("mkfs.ext4 -d %s %s failed:\n%s", tree, img, err ? err : "");
		if (err && strstr(err, "allocate"))
			wl_err("the tree does not fit: give a larger --size-mib");
		free(err);
		rc = -1;
	}
done:
	free(errf);
	free(size);
	free(ext);
	return rc;
}

struct inos {
	struct wl_u64vec ino;
	struct wl_u64vec file_blocks;	/* regular files' data blocks */
	uint64_t blocks, free_blocks;	/* the superblock's counts */
};

static int collect_inos(void *ctx, const char *path, const struct wl_inode *in,
			const struct wl_blockmap *m)
{
	struct inos *c = ctx;
	size_t i;
	uint32_t j;

	(void)path;
	wl_u64vec_push(&c->ino, in->ino);
	if ((in->mode & WL_S_IFMT) == WL_S_IFREG)
		for (i = 0; i < m->n; i++)
			for (j = 0; j < m->ext[i].len; j++)
				wl_u64vec_push(&c->file_blocks, m->ext[i].pblk + j);
	return 0;
}

/* Inodes reachable from the root, the regular files' data blocks and the
 * block counts. */
static int scan_image(const char *img, struct inos *c)
{
	struct wl_ext4 fs;
	int rc;

	if (wl_ext4_open(&fs, img))
		return -1;
	c->blocks = fs.blocks;
	c->free_blocks = fs.free_blocks;
	rc = wl_ext4_walk(&fs, collect_inos, c);
	wl_ext4_close(&fs);
	return rc;
}

static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > *cap) {
		*cap = 2 * (*len + n + 1);
		*buf = wl_realloc(*buf, *cap);
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

/* sif commands giving one inode (a "<ino>" or a path) the fixed times. */
static void fix_times(char **buf, size_t *len, size_t *cap, const char *spec)
{
	static const char *const f[] = { "atime", "ctime", "mtime", "crtime" };
	char line[4200];
	size_t i;

	for (i = 0; i < SC_ARRAY_SIZE(f); i++) {
		snprintf(line, sizeof(line), "sif %s %s @%llu\nsif %s %s_extra 0\n", spec,
			 f[i], WL_FAKE_TIME, spec, f[i]);
		append(buf, len, cap, line);
	}
}

static int normalize_times(const char *img)
{
	struct inos c = { 0 };
	char *cmds = NULL, spec[32];
	size_t len = 0, cap = 0, i;
	int rc;

	rc = scan_image(img, &c);
	append(&cmds, &len, &cap, "");
	for (i = 0; !rc && i < c.ino.n; i++) {
		snprintf(spec, sizeof(spec), "<%llu>", (unsigned long long)c.ino.v[i]);
		fix_times(&cmds, &len, &cap, spec);
	}
	if (!rc)
		rc = wl_debugfs(img, cmds, true, NULL);
	free(cmds);
	free(c.ino.v);
	free(c.file_blocks.v);
	return rc;
}

static char *cache_root(void)
{
	const char *c = getenv("SEACACHE_CACHE");

	return wl_printf("%s/images", c && *c ? c : "/var/cache/seacache");
}

/* Unmounts whatever a failed debootstrap left mounted under dir (it
 * mounts /proc and /sys in the target), deepest first. */
static void unmount_under(const char *dir)
{
	size_t n = strlen(dir), len = 0, i;
	char *mounts = wl_read_file("/proc/self/mounts", &len);
	struct wl_u64vec at = { 0 };
	char *line, *save = NULL;

	if (!mounts)
		return;
	for (line = strtok_r(mounts, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *mp = strchr(line, ' ');

		if (!mp)
			continue;
		mp++;
		*strchrnul(mp, ' ') = '\0';
		if (!strncmp(mp, dir, n) && mp[n] == '/')
			wl_u64vec_push(&at, (uint64_t)(uintptr_t)mp);
	}
	for (i = at.n; i-- > 0;) {
		const char *mp = (const char *)(uintptr_t)at.v[i];

		if (umount2(mp, MNT_DETACH))
			wl_err("umount %s: %s", mp, strerror(errno));
	}
	free(at.v);
	free(mounts);
}

static int debootstrap(const struct opts *o, const char *tree)
{
	char *tmp = wl_printf("%s.tmp", tree);
	char *log = wl_printf("%s.log", tree);
	char *argv[] = { "debootstrap", "--variant=" VARIANT, (char *)o->suite, tmp,
			 (char *)o->mirror, NULL };
	double t0 = wl_now();
	int rc;

	if (geteuid() != 0) {
		rc = wl_err("debootstrap needs root: run `seacache-workload images` as root "
			    "(or use --synthetic, which needs neither root nor network)");
		goto done;
	}
	if (!wl_have("debootstrap")) {
		rc = wl_err("debootstrap is missing: install it with `scripts/install-deps lab` "
			    "(as root), or use --synthetic");
		goto done;
	}
	unmount_under(tmp);
	if (wl_rm_rf(tmp)) {
		rc = -1;
		goto done;
	}
	wl_note("debootstrap --variant=%s %s from %s (about a minute; log: %s)", VARIANT,
		o->suite, o->mirror, log);
	rc = wl_run(argv, log, log);
	unmount_under(tmp);
	if (rc) {
		char *text = wl_read_file(log, NULL), *last = NULL;

		/* debootstrap's last "E:" line says what failed. */
		if (text) {
			char *e = text;

			while ((e = strstr(e, "E: ")) != NULL)
				last = e++;
			if (last)
				*strchrnul(last, '\n') = '\0';
		}
		wl_err("debootstrap failed (exit %d): %s (log: %s)", rc,
		       last ? last : "see the log", log);
		free(text);
		wl_rm_rf(tmp);
		wl_err("it fetches from %s like apt does here: check that the mirror is "
		       "reachable (apt-get update), or pass --mirror URL; without a network, "
		       "use --synthetic", o->mirror);
		rc = -1;
		goto done;
	}
	if (rename(tmp, tree)) {
		rc = wl_err("rename %s: %s", tmp, strerror(errno));
		goto done;
	}
	wl_note("debootstrap done in %.1f s", wl_now() - t0);
done:
	free(tmp);
	free(log);
	return rc;
}

/* The cached debootstrap golden, made when missing: its path or NULL. */
static char *cached_golden(const struct opts *o)
{
	char *root = cache_root();
	char *tree = wl_printf("%s/tree-%s-%s", root, o->suite, VARIANT);
	char *img = wl_printf("%s/golden-%s-%s-%llum-%s.img", root, o->suite, VARIANT,
			      (unsigned long long)o->size_mib, RECIPE);
	char *tmp = wl_printf("%s.tmp", img);
	char *lock = wl_printf("%s/.lock", root);
	struct stat st;
	double t0;
	int rc = 0, lfd = -1;

	if (!stat(img, &st)) {
		wl_note("golden: reusing %s", img);
		goto done;
	}
	if ((rc = wl_mkdir_p(root)))
		goto done;
	/* One builder at a time (make lab and a test may start together):
	 * a second one waits, then finds the image made. */
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (lfd < 0 || flock(lfd, LOCK_EX)) {
		rc = wl_err("%s: %s", lock, strerror(errno));
		goto done;
	}
	if (!stat(img, &st)) {
		wl_note("golden: reusing %s", img);
		goto done;
	}
	/* The tree is renamed into place only when debootstrap succeeded. */
	if (stat(tree, &st))
		rc = debootstrap(o, tree);
	else
		wl_note("golden: reusing the tree %s", tree);
	if (rc)
		goto done;
	t0 = wl_now();
	wl_note("golden: mkfs.ext4 -d %s (%llu MiB)", tree, (unsigned long long)o->size_mib);
	rc = mkfs(tree, tmp, o->size_mib);
	if (!rc)
		rc = normalize_times(tmp);
	if (!rc && rename(tmp, img))
		rc = wl_err("rename %s: %s", tmp, strerror(errno));
	if (rc)
		unlink(tmp);
	else
		wl_note("golden: %s made in %.1f s", img, wl_now() - t0);
done:
	if (lfd >= 0)
		close(lfd);
	free(lock);
	free(root);
	free(tree);
	free(tmp);
	if (rc) {
		free(img);
		return NULL;
	}
	return img;
}

static int synthetic_golden(const struct opts *o, const char *golden)
{
	char *tree = wl_printf("%s/.synthetic-tree", o->out);
	size_t nboot;
	char **boot = wl_read_paths(o->boot_files, &nboot);
	int rc = -1;

	if (!boot)
		goto done;
	/* Files fill about 40% of the image: room is left for the clones'
	 * unique files and for a patch storm's writes. */
	rc = wl_synth_tree(tree, o->seed, o->size_mib * (1u << 20) * 2 / 5, boot, nboot);
	if (!rc)
		rc = mkfs(tree, golden, o->size_mib);
	if (!rc)
		rc = normalize_times(golden);
	if (rc)
		unlink(golden);
	wl_rm_rf(tree);
done:
	wl_free_paths(boot);
	free(tree);
	return rc;
}

static int rewrite_blocks(const char *img, const struct wl_u64vec *file_blocks,
			  uint64_t k, struct sc_prng *p)
{
	uint64_t *idx = wl_malloc(file_blocks->n * sizeof(*idx));
	uint8_t buf[WL_BLOCK_SIZE];
	uint64_t i;
	int fd, rc = 0;

	memcpy(idx, file_blocks->v, file_blocks->n * sizeof(*idx));
	fd = open(img, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		free(idx);
		return wl_err("%s: %s", img, strerror(errno));
	}
	/* A partial Fisher-Yates shuffle: k distinct blocks. */
	for (i = 0; i < k && !rc; i++) {
		uint64_t j = i + sc_prng_next(p) % (file_blocks->n - i), t = idx[j];

		idx[j] = idx[i];
		idx[i] = t;
		sc_prng_fill(p, buf, sizeof(buf));
		if (wl_pwrite_all(fd, buf, sizeof(buf), t * WL_BLOCK_SIZE))
			rc = wl_err("%s: %s", img, strerror(errno));
	}
	if (close(fd) && !rc)
		rc = wl_err("%s: %s", img, strerror(errno));
	free(idx);
	return rc;
}

/* Whether /home exists in img (the clones' unique files go under it). */
static int has_home(const char *img)
{
	struct wl_blockmap m = { 0 };
	struct wl_inode root;
	struct wl_ext4 fs;
	uint32_t ino;
	uint64_t lblk;
	int rc;

	if (wl_ext4_open(&fs, img))
		return -1;
	rc = wl_ext4_inode(&fs, WL_EXT4_ROOT_INO, &root);
	if (!rc)
		rc = wl_ext4_map(&fs, &root, &m);
	if (!rc)
		rc = wl_ext4_dir_find(&fs, &m, "home", 4, &ino, &lblk);
	wl_blockmap_free(&m);
	wl_ext4_close(&fs);
	return rc;
}

static int unique_files(const char *img, uint64_t bytes, struct sc_prng *p,
			uint32_t *nfiles)
{
	char *cmds = NULL, *line;
	size_t len = 0, cap = 0;
	uint64_t done = 0;
	uint32_t i;
	int rc, home = has_home(img);

	if (home < 0)
		return -1;
	append(&cmds, &len, &cap, home ? "" : "mkdir /home\n");
	append(&cmds, &len, &cap, "mkdir /home/vdi-user\n");
	for (i = 0, rc = 0; done < bytes && !rc; i++) {
		uint64_t size = wl_file_size(p);
		char *host = wl_printf("%s/unique-%04u", wl_tmpdir(), i);

		if (size > bytes - done)
			size = bytes - done;
		rc = wl_write_content(host, sc_prng_next(p), size);
		line = wl_printf("write %s /home/vdi-user/doc-%04u.bin\n", host, i);
		append(&cmds, &len, &cap, line);
		free(line);
		free(host);
		done += size;
	}
	*nfiles = i;
	if (!home)
		fix_times(&cmds, &len, &cap, "/home");
	fix_times(&cmds, &len, &cap, "/home/vdi-user");
	for (i = 0; i < *nfiles; i++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "/home/vdi-user/doc-%04u.bin", i);
		fix_times(&cmds, &len, &cap, spec);
	}
	if (!rc)
		rc = wl_debugfs(img, cmds, true, NULL);
	for (i = 0; i < *nfiles; i++) {
		char *host = wl_printf("%s/unique-%04u", wl_tmpdir(), i);

		unlink(host);
		free(host);
	}
	free(cmds);
	if (rc)
		wl_err("%s: could not add the unique files (a full image? give a larger "
		       "--size-mib or a smaller --unique-mib)", img);
	return rc;
}

static int write_manifest(const struct opts *o, const char *params, const struct inos *g,
			  uint64_t rewritten, const uint32_t *nunique)
{
	char *path = wl_printf("%s/" WL_MANIFEST, o->out);
	char *tmp = wl_printf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	uint32_t v;
	int rc = 0;

	if (!f) {
		rc = wl_err("%s: %s", tmp, strerror(errno));
		goto done;
	}
	fprintf(f, "# seacache-workload images v1 (tools/workload/README.md)\n");
	fprintf(f, "%s\n", params);
	fprintf(f, "block_size %u\n", WL_BLOCK_SIZE);
	if (o->synthetic)
		fprintf(f, "source synthetic\n");
	else
		fprintf(f, "source debootstrap suite=%s variant=%s mirror=%s\n", o->suite,
			VARIANT, o->mirror);
	fprintf(f, "size_mib %llu\n", (unsigned long long)o->size_mib);
	fprintf(f, "seed %llu\n", (unsigned long long)o->seed);
	fprintf(f, "divergence %.6f\n", o->divergence);
	fprintf(f, "unique_mib %llu\n", (unsigned long long)o->unique_mib);
	fprintf(f, "golden golden.img blocks=%llu allocated=%llu file_data_blocks=%zu\n",
		(unsigned long long)g->blocks,
		(unsigned long long)(g->blocks - g->free_blocks), g->file_blocks.n);
	fprintf(f, "vms %u\n", o->vms);
	for (v = 0; v < o->vms; v++)
		fprintf(f, "image %u vm-%03u.img rewritten_blocks=%llu unique_files=%u\n", v,
			v, (unsigned long long)rewritten, nunique[v]);
	if (fclose(f))
		rc = wl_err("%s: %s", tmp, strerror(errno));
	else if (rename(tmp, path))
		rc = wl_err("rename %s: %s", tmp, strerror(errno));
done:
	free(path);
	free(tmp);
	return rc;
}

/* The synthetic tree carries the boot list's files: the list's content
 * (its SHA-256, cut) is one of the set's parameters. */
static char *boot_list_id(const char *path)
{
	struct sc_hasher *h = sc_hasher_new();
	size_t len = 0;
	char *text = wl_read_file(path, &len), hex[2 * SC_HASH_LEN + 1], *id;
	struct sc_hash d;

	if (!h || !text || sc_hasher_digest(h, text, len, &d))
		id = wl_strdup(" boot_files=unreadable");
	else {
		sc_hash_to_hex(&d, hex);
		hex[16] = '\0';
		id = wl_printf(" boot_files=%s", hex);
	}
	sc_hasher_free(h);
	free(text);
	return id;
}

/* Everything the set's bytes depend on, as one manifest line. */
static char *params_line(const struct opts *o)
{
	char *boot = o->synthetic ? boot_list_id(o->boot_files) : wl_strdup("");
	char *p = wl_printf("params recipe=%s source=%s suite=%s size_mib=%llu seed=%llu "
			    "divergence=%.6f unique_mib=%llu vms=%u%s", RECIPE,
			    o->synthetic ? "synthetic" : "debootstrap",
			    o->synthetic ? "-" : o->suite, (unsigned long long)o->size_mib,
			    (unsigned long long)o->seed, o->divergence,
			    (unsigned long long)o->unique_mib, o->vms, boot);

	free(boot);
	return p;
}

/* Whether DIR already holds the set these options make: the manifest is
 * written last, so its presence with the same parameters and every image
 * of the right size mean a complete set. */
static bool set_is_current(const struct opts *o, const char *params)
{
	char *path = wl_printf("%s/" WL_MANIFEST, o->out);
	char *text = access(path, R_OK) ? NULL : wl_read_file(path, NULL);
	bool ok = text && strstr(text, params);
	uint32_t v;

	for (v = 0; ok && v <= o->vms; v++) {
		char *img = v < o->vms ? wl_printf("%s/vm-%03u.img", o->out, v) :
					 wl_printf("%s/golden.img", o->out);
		struct stat st;

		ok = !stat(img, &st) && (uint64_t)st.st_size == o->size_mib << 20;
		free(img);
	}
	free(text);
	free(path);
	return ok;
}

int wl_cmd_images(int argc, char **argv)
{
	struct opts o;
	struct inos g = { 0 };
	char *golden = NULL, *cached = NULL, *params, *manifest = NULL;
	uint64_t k;
	uint32_t *nunique = NULL, v;
	double t0 = wl_now();
	int rc;

	if (parse(argc, argv, &o) || need_e2fsprogs() || wl_mkdir_p(o.out))
		return 1;
	params = params_line(&o);
	if (set_is_current(&o, params)) {
		wl_note("images: %s already holds this set (%s): reused", o.out, params + 7);
		free(params);
		return 0;
	}
	manifest = wl_printf("%s/" WL_MANIFEST, o.out);
	if (unlink(manifest) && errno != ENOENT) {
		wl_err("%s: %s", manifest, strerror(errno));
		goto fail;
	}
	golden = wl_printf("%s/golden.img", o.out);
	if (o.synthetic) {
		wl_note("golden: synthetic tree, seed %llu, %llu MiB image",
			(unsigned long long)o.seed, (unsigned long long)o.size_mib);
		rc = synthetic_golden(&o, golden);
	} else {
		cached = cached_golden(&o);
		rc = cached ? wl_copy_sparse(cached, golden) : -1;
	}
	if (rc || scan_image(golden, &g))
		goto fail;
	k = (uint64_t)llround(o.divergence * (double)g.file_blocks.n);
	wl_note("golden: %llu blocks, %llu allocated, %zu in regular files; each clone "
		"rewrites %llu", (unsigned long long)g.blocks,
		(unsigned long long)(g.blocks - g.free_blocks), g.file_blocks.n,
		(unsigned long long)k);
	nunique = wl_calloc(o.vms, sizeof(*nunique));
	for (v = 0; v < o.vms; v++) {
		char *img = wl_printf("%s/vm-%03u.img", o.out, v);
		struct sc_prng p;

		/* Each clone's own stream, whatever the number of clones. */
		sc_prng_seed(&p, sc_mix64(o.seed * 0x100000001b3ull + v + 1));
		rc = wl_copy_sparse(golden, img);
		if (!rc)
			rc = rewrite_blocks(img, &g.file_blocks, k, &p);
		if (!rc && o.unique_mib)
			rc = unique_files(img, o.unique_mib << 20, &p, &nunique[v]);
		free(img);
		if (rc)
			goto fail;
		wl_note("vm-%03u.img: %llu blocks rewritten, %u unique files (%.1f s)", v,
			(unsigned long long)k, nunique[v], wl_now() - t0);
	}
	if (write_manifest(&o, params, &g, k, nunique))
		goto fail;
	wl_note("images: %u clones in %s in %.1f s", o.vms, o.out, wl_now() - t0);
	rc = 0;
	goto done;
fail:
	rc = 1;
done:
	free(params);
	free(manifest);
	free(golden);
	free(cached);
	free(nunique);
	free(g.ino.v);
	free(g.file_blocks.v);
	return rc;
}
