/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `seacache-workload storm boot|scan|patch`: one storm over an image set,
 * in the workload format of tools/sim/WORKLOAD-FORMAT.md.
 *
 * Each VM is modelled as one stream of requests over its own image with a
 * page cache in front: a block is read at most once per VM, and
 * consecutive blocks read in a row are merged into one request of at most
 * --max-req blocks (128 KiB by default, Linux's default read-ahead).
 *   boot   the blocks a mount reads (superblock, group descriptors, the
 *          journal's superblock, the root inode), then for every file of
 *          the boot list that exists, in list order: the path lookup
 *          (each directory's inode, the directory blocks up to the one
 *          holding the entry; block 0 and that block in an htree
 *          directory; symlinks followed, their inode and target block),
 *          the file's inode, extent tree and data blocks in file order.
 *   scan   the mount's blocks, then the whole tree depth first in
 *          directory order (as find walks it): a directory's inode and
 *          blocks before its entries; every other inode's block, extent
 *          tree and data blocks.
 *   patch  the same update files (seeded, --patch-mib in all) written into
 *          every VM's image: data blocks only, at free blocks of that image
 *          (debugfs ffb, first fit from the start).  Bitmaps, inodes and
 *          directories are left alone, so the image stays a valid ext4
 *          whose free blocks hold the new bytes.  Their bytes are in
 *          FILE.blocks (one block after another), for a replayer to write.
 *          --patch-release N gives the same files (sizes, places, timing)
 *          other bytes: the next release of the update, whose contents no
 *          store holds yet.
 * All VMs start within --stagger-ms of each other; a VM issues its next
 * request a seeded 0.5x-1.5x of --gap-us after the previous one.  With
 * --waves N they power on in N waves --wave-gap-ms apart, as a VDI pool's
 * power-on limit starts them: VM v in wave v mod N, so that every wave
 * spreads over the hosts (a host runs consecutive VMs).  Read
 * fingerprints come from the image bytes, write fingerprints from the
 * written bytes.
 */
#include "workload.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ext4.h"
#include "seacache/hash.h"
#include "seacache/prng.h"

enum storm { BOOT, SCAN, PATCH };

struct opts {
	enum storm storm;
	const char *images;
	const char *out;
	uint32_t vms;		/* 0: every image of the manifest */
	uint64_t seed;
	uint32_t max_req;
	uint64_t stagger_us;
	uint32_t waves;
	uint64_t wave_gap_us;
	uint64_t gap_us;
	uint64_t patch_mib;
	uint64_t patch_release;
	const char *boot_files;
};

struct run {
	uint64_t ts;
	uint64_t lbn;
	uint64_t src;		/* a write's first patch block */
	uint32_t vm;
	uint32_t n;
	uint32_t seq;		/* position in its VM's stream */
	bool write;
};

struct vmgen {
	uint32_t vm;
	struct wl_ext4 fs;
	uint8_t *seen;		/* the VM's page cache: one bit a block */
	struct run *runs;
	size_t n, cap;
	uint32_t max_req;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-workload storm boot|scan|patch --images DIR --out FILE [OPTIONS]\n"
		"\n"
		"Writes one storm over the image set in DIR (`seacache-workload images`) in the\n"
		"SeaCache workload format (tools/sim/WORKLOAD-FORMAT.md); VM v uses image v.\n"
		"  boot   every VM boots at once: the blocks a mount and a Debian boot read\n"
		"  scan   every VM's virus scan: every allocated block, file by file\n"
		"  patch  the same update files written into every VM (writes; their bytes\n"
		"         go to FILE.blocks)\n"
		"\n"
		"  -i, --images DIR      the image set (required)\n"
		"  -o, --out FILE        the workload (required; - for standard output)\n"
		"  -n, --vms N           the first N VMs of the set (all)\n"
		"  -s, --seed S          random seed: timing, patch contents (1)\n"
		"      --max-req N       blocks a request, at most (32)\n"
		"      --stagger-ms N    VMs start within N ms of each other (10)\n"
		"      --waves N         VMs power on in N waves, VM v in wave v mod N (1:\n"
		"                        all at once, the worst case)\n"
		"      --wave-gap-ms M   time between two waves' starts (1000)\n"
		"      --gap-us N        mean time between one VM's requests (100)\n"
		"      --patch-mib M     patch storm: MiB of update files (16)\n"
		"      --patch-release N patch storm: the same files, sizes, places and\n"
		"                        timing with other bytes, release N (0)\n"
		"      --boot-files F    boot storm: the boot list (the shipped boot-files.txt)\n"
		"  -h, --help            this text\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "images", required_argument, NULL, 'i' },
		{ "out", required_argument, NULL, 'o' },
		{ "vms", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "max-req", required_argument, NULL, 'R' },
		{ "stagger-ms", required_argument, NULL, 'T' },
		{ "waves", required_argument, NULL, 'W' },
		{ "wave-gap-ms", required_argument, NULL, 'w' },
		{ "gap-us", required_argument, NULL, 'G' },
		{ "patch-mib", required_argument, NULL, 'P' },
		{ "patch-release", required_argument, NULL, 'L' },
		{ "boot-files", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	*o = (struct opts){ .seed = 1, .max_req = 32, .stagger_us = 10000, .waves = 1,
			    .wave_gap_us = 1000000, .gap_us = 100,
			    .patch_mib = 16, .boot_files = wl_default_boot_files() };
	while ((c = getopt_long(argc, argv, "i:o:n:s:h", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->images = optarg;
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'n':
			if (wl_opt_vms(optarg, &o->vms))
				return -1;
			break;
		case 's':
			if (wl_opt_seed(optarg, &o->seed))
				return -1;
			break;
		case 'R':
			if (!wl_parse_u64(optarg, 1024, &v) || !v)
				return wl_err("--max-req: a number from 1 to 1024");
			o->max_req = (uint32_t)v;
			break;
		case 'T':
			if (!wl_parse_u64(optarg, 3600000, &v))
				return wl_err("--stagger-ms: milliseconds, at most an hour");
			o->stagger_us = v * 1000;
			break;
		case 'W':
			if (!wl_parse_u64(optarg, 1u << 16, &v) || !v)
				return wl_err("--waves: a number from 1 to 65536");
			o->waves = (uint32_t)v;
			break;
		case 'w':
			if (!wl_parse_u64(optarg, 3600000, &v))
				return wl_err("--wave-gap-ms: milliseconds, at most an hour");
			o->wave_gap_us = v * 1000;
			break;
		case 'G':
			if (!wl_parse_u64(optarg, 60000000, &o->gap_us))
				return wl_err("--gap-us: microseconds, at most a minute");
			break;
		case 'P':
			if (!wl_parse_u64(optarg, 1u << 20, &o->patch_mib) || !o->patch_mib)
				return wl_err("--patch-mib: a number of MiB, at least 1");
			break;
		case 'L':
			if (!wl_parse_u64(optarg, UINT32_MAX, &o->patch_release))
				return wl_err("--patch-release: a number");
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
	if (optind >= argc)
		return wl_err("storm: which one? boot, scan or patch (see --help)");
	if (!strcmp(argv[optind], "boot"))
		o->storm = BOOT;
	else if (!strcmp(argv[optind], "scan"))
		o->storm = SCAN;
	else if (!strcmp(argv[optind], "patch"))
		o->storm = PATCH;
	else
		return wl_err("storm: unknown storm '%s' (boot, scan, patch)", argv[optind]);
	if (optind + 1 < argc)
		return wl_err("storm: unexpected argument '%s'", argv[optind + 1]);
	if (!o->images || !o->out)
		return wl_err("storm: --images DIR and --out FILE are required (see --help)");
	return 0;
}

static struct run *new_run(struct vmgen *g)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1024;
		g->runs = wl_realloc(g->runs, g->cap * sizeof(*g->runs));
	}
	g->runs[g->n] = (struct run){ .vm = g->vm, .seq = (uint32_t)g->n };
	return &g->runs[g->n++];
}

/* A read of block blk, unless the VM's page cache already has it. */
static void rd(struct vmgen *g, uint64_t blk)
{
	struct run *r = g->n ? &g->runs[g->n - 1] : NULL;

	if (g->seen[blk / 8] & (1u << (blk % 8)))
		return;
	g->seen[blk / 8] |= (uint8_t)(1u << (blk % 8));
	if (r && !r->write && r->lbn + r->n == blk && r->n < g->max_req) {
		r->n++;
		return;
	}
	r = new_run(g);
	r->lbn = blk;
	r->n = 1;
}

/* The reads of an inode, as the kernel does them: its inode-table block,
 * then its extent tree's blocks. */
static void rd_inode(struct vmgen *g, uint32_t ino, const struct wl_blockmap *m)
{
	size_t i;

	rd(g, wl_ext4_inode_block(&g->fs, ino));
	for (i = 0; i < m->ntree; i++)
		rd(g, m->tree[i]);
}

static int read_inode(struct vmgen *g, uint32_t ino, struct wl_inode *in,
		      struct wl_blockmap *m)
{
	if (wl_ext4_inode(&g->fs, ino, in) || wl_ext4_map(&g->fs, in, m))
		return -1;
	rd_inode(g, ino, m);
	return 0;
}

static void read_data(struct vmgen *g, const struct wl_blockmap *m)
{
	size_t i;
	uint32_t j;

	for (i = 0; i < m->n; i++)
		for (j = 0; j < m->ext[i].len; j++)
			rd(g, m->ext[i].pblk + j);
}

/* What mounting reads: the superblock, the group descriptors, the
 * journal's superblock, the root directory's inode. */
static int mount_reads(struct vmgen *g)
{
	struct wl_blockmap m = { 0 };
	struct wl_inode in;
	uint32_t i;
	int rc = 0;

	rd(g, 1024 / g->fs.bs);
	for (i = 0; i < g->fs.gdt_blocks; i++)
		rd(g, g->fs.first_data_block + 1 + i);
	if (g->fs.journal_ino) {
		rc = read_inode(g, g->fs.journal_ino, &in, &m);
		if (!rc && m.n)
			rd(g, m.ext[0].pblk);
	}
	if (!rc)
		rc = read_inode(g, WL_EXT4_ROOT_INO, &in, &m);
	wl_blockmap_free(&m);
	return rc;
}

#define EXT4_INDEX_FL 0x1000u
#define MAX_SYMLINKS 40		/* the kernel's MAXSYMLINKS */
#define PATH_BUF 8192

/* Looks name up in directory (in, m): 1 and *ino when there. */
static int lookup(struct vmgen *g, const struct wl_inode *in,
		  const struct wl_blockmap *m, const char *name, uint32_t *ino)
{
	uint64_t lblk, l, p;
	int rc = wl_ext4_dir_find(&g->fs, m, name, strlen(name), ino, &lblk);

	if (rc < 0)
		return -1;
	if (in->flags & EXT4_INDEX_FL) {
		/* htree: the root block, then the leaf holding the name
		 * (a miss is decided in the root's leaf, modelled as block 0). */
		if ((p = wl_blockmap_phys(m, 0)))
			rd(g, p);
		if (rc && (p = wl_blockmap_phys(m, lblk)))
			rd(g, p);
		return rc;
	}
	/* Linear: every block up to the one holding the name, or all. */
	for (l = 0; m->n && l < m->ext[m->n - 1].lblk + m->ext[m->n - 1].len; l++) {
		if (rc && l > lblk)
			break;
		if ((p = wl_blockmap_phys(m, l)))
			rd(g, p);
	}
	return rc;
}

/* A symlink's target, from the inode (fast) or its first block. */
static int link_target(struct vmgen *g, const struct wl_inode *in,
		       const struct wl_blockmap *m, char *out, size_t room)
{
	if (in->size >= room || in->size > g->fs.bs)
		return wl_err("%s: symlink %u too long", g->fs.path, in->ino);
	if (!m->n) {
		if (in->size >= sizeof(in->iblock))
			return wl_err("%s: symlink %u has no block", g->fs.path, in->ino);
		memcpy(out, in->iblock, in->size);
	} else {
		rd(g, m->ext[0].pblk);
		if (wl_ext4_read_block(&g->fs, m->ext[0].pblk, g->fs.buf))
			return -1;
		memcpy(out, g->fs.buf, in->size);
	}
	out[in->size] = '\0';
	return 0;
}

/* Resolves an absolute path like the kernel's path walk, recording the
 * reads: 1 and the final inode and map when it exists, 0 when not. */
static int resolve(struct vmgen *g, const char *path, struct wl_inode *out,
		   struct wl_blockmap *om)
{
	char *rest = wl_malloc(PATH_BUF), *tmp = wl_malloc(PATH_BUF), *comp;
	uint32_t stack[PATH_BUF / 2], depth = 1, links = 0, ino;
	struct wl_blockmap dm = { 0 };
	struct wl_inode din;
	int rc = 0;

	stack[0] = WL_EXT4_ROOT_INO;
	snprintf(rest, PATH_BUF, "%s", path);
	for (;;) {
		char *slash;

		comp = rest;
		while (*comp == '/')
			comp++;
		if (!*comp) {
			/* The path named a directory (or "/"). */
			rc = read_inode(g, stack[depth - 1], out, om) ? -1 : 1;
			break;
		}
		slash = strchr(comp, '/');
		if (slash)
			*slash = '\0';
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			if (comp[1] == '.' && depth > 1)
				depth--;
			memmove(rest, slash ? slash + 1 : comp + strlen(comp),
				strlen(slash ? slash + 1 : "") + 1);
			continue;
		}
		if (read_inode(g, stack[depth - 1], &din, &dm)) {
			rc = -1;
			break;
		}
		if ((din.mode & WL_S_IFMT) != WL_S_IFDIR)
			break;
		rc = lookup(g, &din, &dm, comp, &ino);
		if (rc <= 0)
			break;
		rc = 0;
		if (read_inode(g, ino, out, om)) {
			rc = -1;
			break;
		}
		if ((out->mode & WL_S_IFMT) == WL_S_IFLNK) {
			if (++links > MAX_SYMLINKS)
				break;
			if (link_target(g, out, om, tmp, PATH_BUF / 2)) {
				rc = -1;
				break;
			}
			/* The target replaces the component; an absolute
			 * one restarts at the root. */
			if (tmp[0] == '/')
				depth = 1;
			if (slash) {
				size_t tl = strlen(tmp), sl = strlen(slash + 1);

				if (tl + 1 + sl >= PATH_BUF)
					break;
				tmp[tl] = '/';
				memcpy(tmp + tl + 1, slash + 1, sl + 1);
			}
			comp = rest;
			rest = tmp;
			tmp = comp;
			continue;
		}
		if (!slash) {
			rc = 1;
			break;
		}
		if (depth == SC_ARRAY_SIZE(stack))
			break;
		stack[depth++] = ino;
		memmove(rest, slash + 1, strlen(slash + 1) + 1);
	}
	wl_blockmap_free(&dm);
	free(rest);
	free(tmp);
	return rc;
}

static int boot_reads(struct vmgen *g, char **paths, size_t n, size_t *found)
{
	struct wl_blockmap m = { 0 };
	struct wl_inode in;
	size_t i;
	int rc = mount_reads(g);

	*found = 0;
	for (i = 0; i < n && !rc; i++) {
		int r = resolve(g, paths[i], &in, &m);

		if (r < 0)
			rc = -1;
		else if (r > 0 && (in.mode & WL_S_IFMT) == WL_S_IFREG) {
			read_data(g, &m);
			(*found)++;
		}
	}
	wl_blockmap_free(&m);
	return rc;
}

static int scan_one(void *ctx, const char *path, const struct wl_inode *in,
		    const struct wl_blockmap *m)
{
	struct vmgen *g = ctx;

	(void)path;
	rd_inode(g, in->ino, m);
	read_data(g, m);
	return 0;
}

static int scan_reads(struct vmgen *g)
{
	return mount_reads(g) ? -1 : wl_ext4_walk(&g->fs, scan_one, g);
}

/* The patch: its blocks' fingerprints and where its files end. */
struct patch {
	uint8_t (*fp)[WL_FP_BYTES];
	uint64_t nblocks, cap;
	struct wl_u64vec file_end;	/* one past each file's last patch block */
};

static int make_patch(const struct opts *o, const char *blocks_path, struct patch *pt)
{
	uint64_t bytes = o->patch_mib << 20, done = 0;
	uint8_t blk[WL_BLOCK_SIZE];
	struct sc_prng p, c;
	FILE *f = NULL;
	int rc = 0;

	memset(pt, 0, sizeof(*pt));
	f = fopen(blocks_path, "wb");
	if (!f)
		return wl_err("%s: %s", blocks_path, strerror(errno));
	sc_prng_seed(&p, sc_mix64(o->seed ^ 0x7061746368ull /* "patch" */));
	while (done < bytes && !rc) {
		uint64_t size = wl_file_size(&p), left;

		if (size > bytes - done)
			size = bytes - done;
		done += size;
		/* sc_mix64(0) is 0: release 0 has the bytes it always had */
		sc_prng_seed(&c, sc_prng_next(&p) ^ sc_mix64(o->patch_release));
		for (left = size; left && !rc; left -= left < sizeof(blk) ? left : sizeof(blk)) {
			size_t n = left < sizeof(blk) ? (size_t)left : sizeof(blk);

			/* A file's last block is zero-padded, as on disk. */
			memset(blk, 0, sizeof(blk));
			sc_prng_fill(&c, blk, n);
			if (fwrite(blk, sizeof(blk), 1, f) != 1) {
				rc = wl_err("%s: cannot write the patch blocks", blocks_path);
				break;
			}
			if (pt->nblocks == pt->cap) {
				pt->cap = pt->cap ? 2 * pt->cap : 1024;
				pt->fp = wl_realloc(pt->fp, pt->cap * sizeof(*pt->fp));
			}
			wl_fingerprint(blk, sizeof(blk), pt->fp[pt->nblocks++]);
		}
		wl_u64vec_push(&pt->file_end, pt->nblocks);
	}
	if (fclose(f) && !rc)
		rc = wl_err("%s: %s", blocks_path, strerror(errno));
	return rc;
}

/* Free blocks of img, first fit from its start, as debugfs's ffb finds
 * them (it reads the bitmaps through libext2fs, uninitialized groups and
 * all). */
static int free_blocks(const char *img, uint64_t want, uint64_t *out)
{
	char *cmd = wl_printf("ffb %llu\n", (unsigned long long)want);
	char *outf = wl_printf("%s/ffb.out", wl_tmpdir());
	char *text = NULL, *p, *end;
	uint64_t n = 0;
	int rc = wl_debugfs(img, cmd, false, outf);

	if (!rc)
		text = wl_read_file(outf, NULL);
	if (!text) {
		rc = -1;
		goto done;
	}
	p = strstr(text, "Free blocks found:");
	if (p)
		p += strlen("Free blocks found:");
	while (p && n < want) {
		unsigned long long b = strtoull(p, &end, 10);

		if (end == p)
			break;
		out[n++] = b;
		p = end;
	}
	if (n < want)
		rc = wl_err("%s: %llu free blocks, the patch needs %llu: give the images a "
			    "larger --size-mib or the patch a smaller --patch-mib", img,
			    (unsigned long long)n, (unsigned long long)want);
done:
	free(cmd);
	free(outf);
	free(text);
	return rc;
}

static int patch_writes(struct vmgen *g, const char *img, const struct patch *pt)
{
	uint64_t *where = wl_malloc(pt->nblocks * sizeof(*where)), i;
	size_t f = 0;
	int rc = free_blocks(img, pt->nblocks, where);

	for (i = 0; !rc && i < pt->nblocks; i++) {
		struct run *r = g->n ? &g->runs[g->n - 1] : NULL;
		bool new_file = f < pt->file_end.n && i == (f ? pt->file_end.v[f - 1] : 0);

		if (new_file)
			f++;
		/* One request per file piece: a file's blocks are written in
		 * order, contiguous ones together. */
		if (r && !new_file && r->lbn + r->n == where[i] && r->n < g->max_req) {
			r->n++;
			continue;
		}
		r = new_run(g);
		r->write = true;
		r->lbn = where[i];
		r->src = i;
		r->n = 1;
	}
	free(where);
	return rc;
}

static int cmp_run(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->vm != y->vm)
		return x->vm < y->vm ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_fp(const void *a, const void *b)
{
	return memcmp(a, b, WL_FP_BYTES);
}

static const char *const storm_name[] = { "boot", "scan", "patch" };

/* Writes the merged requests; every read's fingerprint from its image. */
static int emit(const struct opts *o, const struct wl_manifest *man, uint32_t nvms,
		struct run *runs, size_t nruns, const struct patch *pt,
		const char *blocks_name)
{
	char *tmp = strcmp(o->out, "-") ? wl_printf("%s.tmp", o->out) : NULL;
	FILE *f = tmp ? fopen(tmp, "w") : stdout;
	int *fds = wl_calloc(nvms, sizeof(*fds));
	/* A request's blocks, read at once (requests are of max_req at most). */
	uint8_t (*all)[WL_FP_BYTES] = NULL, *buf = wl_malloc((size_t)o->max_req * WL_BLOCK_SIZE);
	uint64_t nblocks = 0, distinct = 0, k;
	char hex[2 * WL_FP_BYTES + 1];
	size_t i, nall = 0;
	uint32_t v, j;
	int rc = 0;

	for (i = 0; i < nruns; i++)
		nblocks += runs[i].n;
	all = wl_malloc(nblocks * sizeof(*all));
	for (v = 0; v < nvms; v++)
		fds[v] = -1;
	if (!f) {
		rc = wl_err("%s: %s", tmp, strerror(errno));
		goto done;
	}
	for (v = 0; v < nvms && !rc; v++) {
		char *img = wl_printf("%s/%s", man->dir, man->images[v]);

		fds[v] = open(img, O_RDONLY | O_CLOEXEC);
		if (fds[v] < 0)
			rc = wl_err("%s: %s", img, strerror(errno));
		free(img);
	}
	if (rc)
		goto done;
	fprintf(f, "# seacache-workload v1 block_size=%u fingerprint=" WL_FP_NAME
		" storm=%s vms=%u seed=%llu generator=seacache-workload\n",
		WL_BLOCK_SIZE, storm_name[o->storm], nvms,
		(unsigned long long)o->seed);
	if (o->storm == PATCH && o->patch_release)
		fprintf(f, "# patch release %llu\n",
			(unsigned long long)o->patch_release);
	if (o->waves > 1)
		fprintf(f, "# waves %u, %llu ms apart\n", o->waves,
			(unsigned long long)(o->wave_gap_us / 1000));
	fprintf(f, "# images %s (manifest: %s/" WL_MANIFEST ")\n", man->dir, man->dir);
	for (v = 0; v < nvms; v++)
		fprintf(f, "# image %u %s\n", v, man->images[v]);
	if (blocks_name)
		fprintf(f, "# data %s: the written blocks' bytes, in patch order\n", blocks_name);
	for (i = 0; i < nruns && !rc; i++) {
		const struct run *r = &runs[i];

		if (!r->write && wl_pread_all(fds[r->vm], buf, (size_t)r->n * WL_BLOCK_SIZE,
					      r->lbn * WL_BLOCK_SIZE)) {
			rc = wl_err("%s: cannot read blocks %llu-%llu", man->images[r->vm],
				    (unsigned long long)r->lbn,
				    (unsigned long long)(r->lbn + r->n - 1));
			break;
		}
		fprintf(f, "%llu %u %c %u %llu %u", (unsigned long long)r->ts, r->vm,
			r->write ? 'W' : 'R', r->vm, (unsigned long long)r->lbn, r->n);
		for (j = 0; j < r->n; j++) {
			uint8_t *fp = all[nall++];

			if (r->write)
				memcpy(fp, pt->fp[r->src + j], WL_FP_BYTES);
			else
				wl_fingerprint(buf + (size_t)j * WL_BLOCK_SIZE,
					       WL_BLOCK_SIZE, fp);
			for (k = 0; k < WL_FP_BYTES; k++)
				snprintf(hex + 2 * k, 3, "%02x", fp[k]);
			fprintf(f, " %s", hex);
		}
		fputc('\n', f);
	}
	if (tmp && fclose(f) && !rc)
		rc = wl_err("%s: %s", tmp, strerror(errno));
	else if (!tmp && fflush(f) && !rc)
		rc = wl_err("standard output: %s", strerror(errno));
	f = NULL;
	if (!rc && tmp && rename(tmp, o->out))
		rc = wl_err("rename %s: %s", tmp, strerror(errno));
	if (!rc) {
		qsort(all, nall, sizeof(*all), cmp_fp);
		for (k = 0; k < nall; k++)
			distinct += !k || memcmp(all[k], all[k - 1], WL_FP_BYTES);
		wl_note("%s storm: %u VMs, %zu requests, %llu blocks (%.1f MiB), %llu distinct "
			"(%.1f%%) -> %s", storm_name[o->storm], nvms, nruns,
			(unsigned long long)nblocks, nblocks * (double)WL_BLOCK_SIZE / (1 << 20),
			(unsigned long long)distinct, nblocks ? 100.0 * distinct / nblocks : 0.0,
			o->out);
	}
done:
	if (f && f != stdout)
		fclose(f);
	if (rc && tmp)
		unlink(tmp);
	for (v = 0; v < nvms; v++)
		if (fds[v] >= 0)
			close(fds[v]);
	free(fds);
	free(all);
	free(buf);
	free(tmp);
	return rc;
}

int wl_cmd_storm(int argc, char **argv)
{
	struct wl_manifest man = { 0 };
	struct patch pt = { 0 };
	struct opts o;
	struct vmgen g = { 0 };
	struct run *all = NULL;
	char **boot = NULL, *blocks_path = NULL;
	const char *blocks_name = NULL;
	size_t nboot = 0, nall = 0, i, found = 0;
	uint32_t nvms, v;
	double t0 = wl_now();
	int rc = 1;

	if (parse(argc, argv, &o) || wl_manifest_read(o.images, &man))
		goto done;
	nvms = o.vms ? o.vms : (uint32_t)man.nimages;
	if (nvms > man.nimages) {
		wl_err("%s has %zu images, --vms asks for %u", o.images, man.nimages, nvms);
		goto done;
	}
	if (o.storm == BOOT && !(boot = wl_read_paths(o.boot_files, &nboot)))
		goto done;
	if (o.storm == PATCH) {
		if (!wl_have("debugfs")) {
			wl_err("debugfs is missing: install e2fsprogs (scripts/install-deps lab)");
			goto done;
		}
		if (!strcmp(o.out, "-")) {
			wl_err("storm patch: --out must be a file (its bytes go next to it)");
			goto done;
		}
		blocks_path = wl_printf("%s.blocks", o.out);
		blocks_name = strrchr(blocks_path, '/') ? strrchr(blocks_path, '/') + 1 : blocks_path;
		if (make_patch(&o, blocks_path, &pt))
			goto done;
	}
	for (v = 0; v < nvms; v++) {
		char *img = wl_printf("%s/%s", man.dir, man.images[v]);
		struct sc_prng p;
		uint64_t ts;
		int r;

		g = (struct vmgen){ .vm = v, .max_req = o.max_req };
		if (wl_ext4_open(&g.fs, img)) {
			free(img);
			goto done;
		}
		g.seen = wl_calloc(g.fs.blocks / 8 + 1, 1);
		if (o.storm == BOOT)
			r = boot_reads(&g, boot, nboot, &found);
		else if (o.storm == SCAN)
			r = scan_reads(&g);
		else
			r = patch_writes(&g, img, &pt);
		wl_ext4_close(&g.fs);
		free(g.seen);
		free(img);
		if (r)
			goto done;
		/* Timing: the VM's own stream, whatever the number of VMs. */
		sc_prng_seed(&p, sc_mix64(o.seed * 0x9e3779b97f4a7c15ull + o.storm * 1000003u + v));
		ts = o.stagger_us ? sc_prng_next(&p) % (o.stagger_us + 1) : 0;
		ts += (uint64_t)(v % o.waves) * o.wave_gap_us;
		for (i = 0; i < g.n; i++) {
			g.runs[i].ts = ts;
			ts += o.gap_us / 2 + (o.gap_us ? sc_prng_next(&p) % (o.gap_us + 1) : 0);
		}
		all = wl_realloc(all, (nall + g.n) * sizeof(*all));
		memcpy(all + nall, g.runs, g.n * sizeof(*all));
		nall += g.n;
		if (o.storm == BOOT)
			wl_note("vm %u: %zu requests, %zu of %zu boot files found", v, g.n, found,
				nboot);
		else
			wl_note("vm %u: %zu requests", v, g.n);
		free(g.runs);
		g.runs = NULL;
	}
	qsort(all, nall, sizeof(*all), cmp_run);
	if (emit(&o, &man, nvms, all, nall, &pt, blocks_name))
		goto done;
	wl_note("done in %.1f s", wl_now() - t0);
	rc = 0;
done:
	/* A failed patch storm leaves no bytes without their workload. */
	if (rc && blocks_path)
		unlink(blocks_path);
	free(g.runs);
	free(all);
	free(pt.fp);
	free(pt.file_end.v);
	free(blocks_path);
	wl_free_paths(boot);
	wl_manifest_free(&man);
	return rc;
}
