/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A read-only ext4 reader: just enough to map an image's files to its
 * blocks (superblock, group descriptors, inodes, extent trees, directory
 * entries).  Parsing the image ourselves rather than asking debugfs for
 * every file keeps a storm of tens of thousands of files fast and gives
 * the tests an independent check (they compare against debugfs).
 *
 * What mkfs.ext4 makes by default is supported: 4 KiB blocks (any power of
 * two from 1 KiB to 64 KiB), extents, flex_bg, 64bit, dir_index,
 * metadata_csum.  Refused with a message: meta_bg, inline_data, block-mapped
 * (ext2/ext3 style) files.
 */
#ifndef WL_EXT4_H
#define WL_EXT4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WL_EXT4_ROOT_INO 2u

struct wl_ext4 {
	int fd;
	const char *path;
	uint32_t bs;		/* block size in bytes */
	uint64_t blocks;	/* s_blocks_count */
	uint64_t free_blocks;	/* s_free_blocks_count, as of the last unmount */
	uint32_t first_data_block;
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inode_size;
	uint32_t ngroups;
	uint32_t gdt_blocks;	/* blocks holding the group descriptors */
	uint32_t journal_ino;	/* 0: no journal */
	uint64_t *itable;	/* per group: first block of its inode table */
	uint8_t *buf;		/* one block of scratch */
};

struct wl_inode {
	uint32_t ino;
	uint16_t mode;
	uint32_t flags;
	uint64_t size;
	uint8_t iblock[60];	/* i_block: extent root or fast symlink text */
};

/* One extent: logical blocks [lblk, lblk + len) at [pblk, pblk + len). */
struct wl_extent {
	uint64_t lblk;
	uint64_t pblk;
	uint32_t len;
};

/* A file's blocks: its extents in logical order and its extent tree's own
 * blocks (index and leaf blocks, in the order a lookup reads them). */
struct wl_blockmap {
	struct wl_extent *ext;
	size_t n, cap;
	uint64_t *tree;
	size_t ntree, treecap;
	uint64_t nblocks;	/* data blocks in all extents */
};

#define WL_S_IFMT 0170000u
#define WL_S_IFREG 0100000u
#define WL_S_IFDIR 0040000u
#define WL_S_IFLNK 0120000u

/* 0, or -1 after printing what is wrong with the image on stderr. */
int wl_ext4_open(struct wl_ext4 *fs, const char *path);
void wl_ext4_close(struct wl_ext4 *fs);

int wl_ext4_read_block(struct wl_ext4 *fs, uint64_t blk, void *buf);
/* The block of the inode table that holds inode ino. */
uint64_t wl_ext4_inode_block(const struct wl_ext4 *fs, uint32_t ino);
int wl_ext4_inode(struct wl_ext4 *fs, uint32_t ino, struct wl_inode *out);

/* Fills m (reset first) with the inode's extents; an inode without data
 * blocks (empty file, fast symlink) gives none.  The caller frees m with
 * wl_blockmap_free. */
int wl_ext4_map(struct wl_ext4 *fs, const struct wl_inode *in,
		struct wl_blockmap *m);
void wl_blockmap_free(struct wl_blockmap *m);

/* Directory entry callback: name (not NUL-terminated), the entry's inode,
 * and the logical block of the directory that holds it.  Non-zero stops
 * the walk and is returned by wl_ext4_readdir. */
typedef int (*wl_dirent_fn)(void *ctx, const char *name, size_t namelen,
			    uint32_t ino, uint64_t dir_lblk);

/* Every entry of a directory in on-disk order, "." and ".." left out; m is
 * the directory's block map (wl_ext4_map). */
int wl_ext4_readdir(struct wl_ext4 *fs, const struct wl_blockmap *m,
		    wl_dirent_fn fn, void *ctx);

/* Finds name in a directory: its inode and the directory's logical block
 * holding the entry.  1 found, 0 not there, -1 error. */
int wl_ext4_dir_find(struct wl_ext4 *fs, const struct wl_blockmap *dir,
		     const char *name, size_t namelen, uint32_t *ino,
		     uint64_t *lblk);

/* Called for every inode reachable from the root, depth first in directory
 * order, a directory before its entries (as find and fts walk); path is
 * the inode's absolute path, m its block map.  Non-zero stops the walk. */
typedef int (*wl_visit_fn)(void *ctx, const char *path,
			   const struct wl_inode *in,
			   const struct wl_blockmap *m);
int wl_ext4_walk(struct wl_ext4 *fs, wl_visit_fn fn, void *ctx);

/* Physical block of logical block lblk, or 0 when it is a hole. */
uint64_t wl_blockmap_phys(const struct wl_blockmap *m, uint64_t lblk);

#endif /* WL_EXT4_H */
