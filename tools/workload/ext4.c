/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Read-only ext4 reader (ext4.h).  Field offsets follow the kernel's
 * Documentation/filesystems/ext4/ (superblock, group descriptors, inodes,
 * extent tree, linear directories).
 */
#include "ext4.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SB_OFFSET 1024
#define EXT4_MAGIC 0xEF53
#define INCOMPAT_META_BG 0x10u
#define INCOMPAT_EXTENTS 0x40u
#define INCOMPAT_64BIT 0x80u
#define INCOMPAT_INLINE_DATA 0x8000u
#define INODE_FL_EXTENTS 0x80000u
#define INODE_FL_INLINE_DATA 0x10000000u
#define EXTENT_MAGIC 0xF30A
#define EXTENT_UNWRITTEN_MAX 32768u
/* Deeper trees than this cannot exist for 2^32 logical blocks. */
#define EXTENT_MAX_DEPTH 5

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int bad(const struct wl_ext4 *fs, const char *what)
{
	return wl_err("%s: %s", fs->path, what);
}

int wl_ext4_read_block(struct wl_ext4 *fs, uint64_t blk, void *buf)
{
	if (blk >= fs->blocks)
		return bad(fs, "block number past the end of the file system");
	if (wl_pread_all(fs->fd, buf, fs->bs, blk * fs->bs))
		return bad(fs, "short read (truncated image?)");
	return 0;
}

int wl_ext4_open(struct wl_ext4 *fs, const char *path)
{
	uint8_t sb[1024];
	uint32_t log_bs, incompat, desc_size, g;
	uint64_t gdt_bytes;
	uint8_t *gdt;

	memset(fs, 0, sizeof(*fs));
	fs->path = path;
	fs->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fs->fd < 0)
		return wl_err("%s: %s", path, strerror(errno));
	if (wl_pread_all(fs->fd, sb, sizeof(sb), SB_OFFSET) ||
	    le16(sb + 0x38) != EXT4_MAGIC) {
		bad(fs, "not an ext2/3/4 file system (no superblock magic)");
		goto fail;
	}
	log_bs = le32(sb + 0x18);
	if (log_bs > 6) {
		bad(fs, "block size over 64 KiB");
		goto fail;
	}
	fs->bs = 1024u << log_bs;
	incompat = le32(sb + 0x60);
	if (incompat & (INCOMPAT_META_BG | INCOMPAT_INLINE_DATA)) {
		bad(fs, "meta_bg and inline_data are not supported (make it with mkfs.ext4's defaults)");
		goto fail;
	}
	if (!(incompat & INCOMPAT_EXTENTS)) {
		bad(fs, "not an extent-mapped (ext4) file system");
		goto fail;
	}
	fs->blocks = le32(sb + 0x04);
	fs->free_blocks = le32(sb + 0x0C);
	desc_size = 32;
	if (incompat & INCOMPAT_64BIT) {
		fs->blocks |= (uint64_t)le32(sb + 0x150) << 32;
		fs->free_blocks |= (uint64_t)le32(sb + 0x158) << 32;
		desc_size = le16(sb + 0xFE);
		if (desc_size < 32 || desc_size > 1024) {
			bad(fs, "bad group descriptor size");
			goto fail;
		}
	}
	fs->first_data_block = le32(sb + 0x14);
	fs->blocks_per_group = le32(sb + 0x20);
	fs->inodes_per_group = le32(sb + 0x28);
	fs->inode_size = le16(sb + 0x58);
	fs->journal_ino = le32(sb + 0xE0);
	if (!fs->blocks_per_group || !fs->inodes_per_group ||
	    fs->inode_size < 128 || fs->inode_size > fs->bs ||
	    fs->blocks <= fs->first_data_block) {
		bad(fs, "inconsistent superblock");
		goto fail;
	}
	fs->ngroups = (uint32_t)((fs->blocks - fs->first_data_block +
				  fs->blocks_per_group - 1) / fs->blocks_per_group);
	gdt_bytes = (uint64_t)fs->ngroups * desc_size;
	fs->gdt_blocks = (uint32_t)((gdt_bytes + fs->bs - 1) / fs->bs);
	fs->buf = wl_malloc(fs->bs);
	fs->itable = wl_calloc(fs->ngroups, sizeof(*fs->itable));
	gdt = wl_malloc((size_t)fs->gdt_blocks * fs->bs);
	if (wl_pread_all(fs->fd, gdt, (size_t)fs->gdt_blocks * fs->bs,
		      ((uint64_t)fs->first_data_block + 1) * fs->bs)) {
		free(gdt);
		bad(fs, "short read of the group descriptors");
		goto fail;
	}
	for (g = 0; g < fs->ngroups; g++) {
		const uint8_t *d = gdt + (size_t)g * desc_size;

		fs->itable[g] = le32(d + 0x08);
		if (desc_size >= 64)
			fs->itable[g] |= (uint64_t)le32(d + 0x28) << 32;
	}
	free(gdt);
	return 0;
fail:
	wl_ext4_close(fs);
	return -1;
}

void wl_ext4_close(struct wl_ext4 *fs)
{
	if (fs->fd >= 0)
		close(fs->fd);
	free(fs->itable);
	free(fs->buf);
	fs->fd = -1;
	fs->itable = NULL;
	fs->buf = NULL;
}

uint64_t wl_ext4_inode_block(const struct wl_ext4 *fs, uint32_t ino)
{
	uint32_t idx = (ino - 1) % fs->inodes_per_group;
	uint32_t g = (ino - 1) / fs->inodes_per_group;

	return fs->itable[g] + (uint64_t)idx * fs->inode_size / fs->bs;
}

int wl_ext4_inode(struct wl_ext4 *fs, uint32_t ino, struct wl_inode *out)
{
	uint32_t idx, off;
	const uint8_t *p;

	if (ino == 0 || (ino - 1) / fs->inodes_per_group >= fs->ngroups)
		return bad(fs, "inode number out of range");
	if (wl_ext4_read_block(fs, wl_ext4_inode_block(fs, ino), fs->buf))
		return -1;
	idx = (ino - 1) % fs->inodes_per_group;
	off = (uint32_t)((uint64_t)idx * fs->inode_size % fs->bs);
	p = fs->buf + off;
	out->ino = ino;
	out->mode = le16(p + 0x00);
	out->size = le32(p + 0x04) | (uint64_t)le32(p + 0x6C) << 32;
	out->flags = le32(p + 0x20);
	memcpy(out->iblock, p + 0x28, sizeof(out->iblock));
	return 0;
}

static void push_extent(struct wl_blockmap *m, uint64_t lblk, uint64_t pblk,
			uint32_t len)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 8;
		m->ext = wl_realloc(m->ext, m->cap * sizeof(*m->ext));
	}
	m->ext[m->n++] = (struct wl_extent){ lblk, pblk, len };
	m->nblocks += len;
}

static void push_tree(struct wl_blockmap *m, uint64_t blk)
{
	if (m->ntree == m->treecap) {
		m->treecap = m->treecap ? 2 * m->treecap : 4;
		m->tree = wl_realloc(m->tree, m->treecap * sizeof(*m->tree));
	}
	m->tree[m->ntree++] = blk;
}

/* One node of the extent tree (the inode's i_block or a tree block of
 * `room` bytes); depth counts the levels still allowed below it. */
static int walk_node(struct wl_ext4 *fs, const uint8_t *node, size_t room,
		     int depth_left, struct wl_blockmap *m)
{
	uint16_t entries, depth, i;
	uint8_t *child;
	int rc = 0;

	if (room < 12 || le16(node) != EXTENT_MAGIC)
		return bad(fs, "bad extent header");
	entries = le16(node + 2);
	depth = le16(node + 6);
	if ((size_t)entries * 12 + 12 > room || depth > depth_left)
		return bad(fs, "bad extent node");
	if (depth == 0) {
		for (i = 0; i < entries; i++) {
			const uint8_t *e = node + 12 + 12 * i;
			uint32_t len = le16(e + 4);
			uint64_t pblk = le32(e + 8) | (uint64_t)le16(e + 6) << 32;

			/* An unwritten extent is allocated all the same: a
			 * scan reads it (and gets zeros). */
			if (len > EXTENT_UNWRITTEN_MAX)
				len -= EXTENT_UNWRITTEN_MAX;
			if (!len || pblk + len > fs->blocks)
				return bad(fs, "extent outside the file system");
			push_extent(m, le32(e), pblk, len);
		}
		return 0;
	}
	child = wl_malloc(fs->bs);
	for (i = 0; i < entries && !rc; i++) {
		const uint8_t *e = node + 12 + 12 * i;
		uint64_t blk = le32(e + 4) | (uint64_t)le16(e + 8) << 32;

		push_tree(m, blk);
		if (!(rc = wl_ext4_read_block(fs, blk, child)))
			rc = walk_node(fs, child, fs->bs, depth - 1, m);
	}
	free(child);
	return rc;
}

int wl_ext4_map(struct wl_ext4 *fs, const struct wl_inode *in,
		struct wl_blockmap *m)
{
	uint16_t type = in->mode & WL_S_IFMT;

	m->n = m->ntree = 0;
	m->nblocks = 0;
	if (in->flags & INODE_FL_INLINE_DATA)
		return bad(fs, "inline data is not supported");
	if (!(in->flags & INODE_FL_EXTENTS)) {
		/* Fast symlinks and device nodes keep no blocks; anything
		 * else without extents is an ext2/3 block map. */
		if (type == WL_S_IFREG || type == WL_S_IFDIR ||
		    (type == WL_S_IFLNK && in->size >= sizeof(in->iblock)))
			return bad(fs, "block-mapped (ext2/ext3) inode: not supported");
		return 0;
	}
	return walk_node(fs, in->iblock, sizeof(in->iblock), EXTENT_MAX_DEPTH, m);
}

void wl_blockmap_free(struct wl_blockmap *m)
{
	free(m->ext);
	free(m->tree);
	memset(m, 0, sizeof(*m));
}

uint64_t wl_blockmap_phys(const struct wl_blockmap *m, uint64_t lblk)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (lblk >= m->ext[i].lblk && lblk < m->ext[i].lblk + m->ext[i].len)
			return m->ext[i].pblk + (lblk - m->ext[i].lblk);
	return 0;
}

int wl_ext4_readdir(struct wl_ext4 *fs, const struct wl_blockmap *m,
		    wl_dirent_fn fn, void *ctx)
{
	uint8_t *blk = wl_malloc(fs->bs);
	size_t i;
	uint32_t j;
	int rc = 0;

	for (i = 0; i < m->n && !rc; i++) {
		for (j = 0; j < m->ext[i].len && !rc; j++) {
			uint32_t off = 0;

			rc = wl_ext4_read_block(fs, m->ext[i].pblk + j, blk);
			while (!rc && off + 8 <= fs->bs) {
				const uint8_t *d = blk + off;
				uint32_t ino = le32(d), reclen = le16(d + 4);
				uint8_t nlen = d[6];

				/* 64 KiB blocks store a whole-block record as 0
				 * or 65535 (the kernel's ext4_rec_len_from_disk). */
				if (reclen == 0 || reclen == 65535)
					reclen = fs->bs;
				if (reclen < 8 || off + reclen > fs->bs ||
				    8u + nlen > reclen) {
					rc = bad(fs, "corrupt directory entry");
					break;
				}
				/* Inode 0 marks free space, an htree node's
				 * fake entry or the checksum tail. */
				if (ino && !(nlen == 1 && d[8] == '.') &&
				    !(nlen == 2 && d[8] == '.' && d[9] == '.'))
					rc = fn(ctx, (const char *)d + 8, nlen, ino,
						m->ext[i].lblk + j);
				off += reclen;
			}
		}
	}
	free(blk);
	return rc;
}

struct find_ctx {
	const char *name;
	size_t len;
	uint32_t ino;
	uint64_t lblk;
};

static int find_one(void *ctx, const char *name, size_t namelen, uint32_t ino,
		    uint64_t dir_lblk)
{
	struct find_ctx *f = ctx;

	if (namelen != f->len || memcmp(name, f->name, namelen))
		return 0;
	f->ino = ino;
	f->lblk = dir_lblk;
	return 1;
}

int wl_ext4_dir_find(struct wl_ext4 *fs, const struct wl_blockmap *dir,
		     const char *name, size_t namelen, uint32_t *ino,
		     uint64_t *lblk)
{
	struct find_ctx f = { name, namelen, 0, 0 };
	int rc = wl_ext4_readdir(fs, dir, find_one, &f);

	if (rc < 0)
		return -1;
	*ino = f.ino;
	*lblk = f.lblk;
	return rc;
}

struct dent {
	uint32_t ino;
	char *name;
};

struct dent_list {
	struct dent *v;
	size_t n, cap;
};

static int collect(void *ctx, const char *name, size_t namelen, uint32_t ino,
		   uint64_t dir_lblk)
{
	struct dent_list *l = ctx;
	char *s = wl_malloc(namelen + 1);

	(void)dir_lblk;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = wl_realloc(l->v, l->cap * sizeof(*l->v));
	}
	memcpy(s, name, namelen);
	s[namelen] = '\0';
	l->v[l->n++] = (struct dent){ ino, s };
	return 0;
}

/* Linux paths are at most PATH_MAX; deeper trees are refused. */
#define WALK_PATH_MAX 4096

static int walk_dir(struct wl_ext4 *fs, const struct wl_inode *dir,
		    struct wl_blockmap *dm, char *path, size_t plen,
		    wl_visit_fn fn, void *ctx)
{
	struct dent_list l = { NULL, 0, 0 };
	struct wl_blockmap m = { 0 };
	size_t i;
	int rc;

	rc = fn(ctx, plen ? path : "/", dir, dm);
	/* The entries are listed before any is visited: the walk reads each
	 * directory once, as fts does, and holds no block buffer while deeper
	 * directories are read. */
	if (!rc && wl_ext4_readdir(fs, dm, collect, &l))
		rc = -1;
	for (i = 0; i < l.n && !rc; i++) {
		struct wl_inode in;
		size_t nlen = strlen(l.v[i].name);

		if (plen + 1 + nlen >= WALK_PATH_MAX) {
			rc = bad(fs, "path too long");
			break;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, l.v[i].name, nlen + 1);
		if ((rc = wl_ext4_inode(fs, l.v[i].ino, &in)) ||
		    (rc = wl_ext4_map(fs, &in, &m)))
			break;
		if ((in.mode & WL_S_IFMT) == WL_S_IFDIR)
			rc = walk_dir(fs, &in, &m, path, plen + 1 + nlen, fn, ctx);
		else
			rc = fn(ctx, path, &in, &m);
		path[plen] = '\0';
	}
	for (i = 0; i < l.n; i++)
		free(l.v[i].name);
	free(l.v);
	wl_blockmap_free(&m);
	return rc;
}

int wl_ext4_walk(struct wl_ext4 *fs, wl_visit_fn fn, void *ctx)
{
	struct wl_blockmap m = { 0 };
	struct wl_inode root;
	char *path = wl_malloc(WALK_PATH_MAX);
	int rc;

	path[0] = '\0';
	rc = wl_ext4_inode(fs, WL_EXT4_ROOT_INO, &root);
	if (!rc)
		rc = wl_ext4_map(fs, &root, &m);
	if (!rc)
		rc = walk_dir(fs, &root, &m, path, 0, fn, ctx);
	wl_blockmap_free(&m);
	free(path);
	return rc;
}
