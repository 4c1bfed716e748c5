// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: file I/O.  READ, WRITE and COMMIT, and
 * NFSv4.2's ALLOCATE, DEALLOCATE and SEEK, each after the share-state
 * check of io_begin.
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_handle.c, Copyright 2017-2021 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <string.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"

/* ---------------------------------------------------------------------
 * READ, WRITE and COMMIT
 */

/*
 * Share-state check for a read or write (FSAL_MEM's pattern): there is
 * no descriptor to find, only the open mode to honour.  *has_lock: the
 * caller unlocks obj_lock when done.
 */
static fsal_status_t io_begin(struct fsal_obj_handle *obj_hdl, bool bypass,
			      struct state_t *state, fsal_openflags_t mode,
			      bool *has_lock)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd tmp_fd = { 0 }, *fdp = &tmp_fd;
	bool closefd = false, reusing = false;

	if (obj_hdl->type != REGULAR_FILE)
		return fsalstat(ERR_FSAL_INVAL, 0);
	return fsal_find_fd(&fdp, obj_hdl, &h->fd, &h->share, bypass, state,
			    mode, dedup_open_func, dedup_close_func, has_lock,
			    &closefd, false, &reusing);
}

void dedup_read2(struct fsal_obj_handle *obj_hdl,
		 bool bypass,
		 fsal_async_cb done_cb,
		 struct fsal_io_arg *read_arg,
		 void *caller_arg)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	uint64_t offset = read_arg->offset;
	bool has_lock = false;
	fsal_status_t status;
	int i;

	/* No READ_PLUS */
	status = read_arg->info != NULL ? fsalstat(ERR_FSAL_NOTSUPP, 0) :
		 io_begin(obj_hdl, bypass, read_arg->state, FSAL_O_READ,
			  &has_lock);
	if (FSAL_IS_ERROR(status)) {
		done_cb(obj_hdl, status, read_arg, caller_arg);
		return;
	}

	read_arg->io_amount = 0;
	read_arg->end_of_file = false;
	for (i = 0; i < read_arg->iov_count; i++) {
		size_t len = read_arg->iov[i].iov_len;
		bool eof = false;
		ssize_t n;

		n = dstore_read(h->store->ds, h->ino, offset,
				read_arg->iov[i].iov_base, len, &eof);
		if (n < 0) {
			status = dedup_status_obj((int)n);
			break;
		}
		read_arg->io_amount += (size_t)n;
		offset += (uint64_t)n;
		if (eof || (size_t)n < len) {
			read_arg->end_of_file = eof;
			break;
		}
	}

	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	done_cb(obj_hdl, status, read_arg, caller_arg);
}

void dedup_write2(struct fsal_obj_handle *obj_hdl,
		  bool bypass,
		  fsal_async_cb done_cb,
		  struct fsal_io_arg *write_arg,
		  void *caller_arg)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	bool has_lock = false;
	bool stable = write_arg->fsal_stable;
	bool one = write_arg->iov_count == 1;
	uint64_t offset = write_arg->offset;
	fsal_status_t status;
	int i, rc;

	status = io_begin(obj_hdl, bypass, write_arg->state, FSAL_O_WRITE,
			  &has_lock);
	if (FSAL_IS_ERROR(status)) {
		done_cb(obj_hdl, status, write_arg, caller_arg);
		return;
	}

	write_arg->io_amount = 0;
	for (i = 0; i < write_arg->iov_count; i++) {
		size_t len = write_arg->iov[i].iov_len;
		ssize_t n;

		/* FILE_SYNC/DATA_SYNC: the store makes it durable. */
		n = dstore_write(h->store->ds, h->ino, offset,
				 write_arg->iov[i].iov_base, len,
				 stable && one, NULL);
		if (n < 0) {
			status = dedup_status_obj((int)n);
			break;
		}
		write_arg->io_amount += (size_t)n;
		offset += (uint64_t)n;
		if ((size_t)n < len)
			break;
	}
	if (!FSAL_IS_ERROR(status) && stable && !one) {
		rc = dstore_sync(h->store->ds);
		if (rc < 0)
			status = dedup_status(rc);
	}
	write_arg->fsal_stable = stable && !FSAL_IS_ERROR(status);

	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	done_cb(obj_hdl, status, write_arg, caller_arg);
}

fsal_status_t dedup_commit2(struct fsal_obj_handle *obj_hdl,
			    off_t offset, size_t len)
{
	(void)offset;
	(void)len;
	return dedup_status(dstore_sync(dedup_hdl(obj_hdl)->store->ds));
}

/* ---------------------------------------------------------------------
 * ALLOCATE, DEALLOCATE and SEEK (NFSv4.2)
 */

/* Blocks looked at per store snapshot when walking a file's block map. */
#define MAP_WINDOW 1024u
/* Blocks of zeros written per call when punching a hole. */
#define ZERO_RUN 64u

/*
 * Calls fn(ctx, lbn, mapped) for each block from first on, a window of
 * blocks at a time, until fn returns non-zero (that value is returned) or
 * the file's size is passed (0).  *size: the size in the first window.
 */
static int walk_block_map(struct dedup_fsal_obj_handle *h, uint64_t first,
			  int (*fn)(void *ctx, uint64_t lbn, bool mapped),
			  void *ctx, uint64_t *size)
{
	struct dedup_store *st = h->store;
	struct sc_hash *hashes = gsh_malloc(MAP_WINDOW * sizeof(*hashes));
	uint8_t mapped[MAP_WINDOW];
	struct dstore_attr a;
	uint64_t lbn, nblocks = UINT64_MAX;
	uint32_t i;
	int rc = 0;

	for (lbn = first; rc == 0 && lbn < nblocks; lbn += MAP_WINDOW) {
		rc = dstore_block_hashes(st->ds, h->ino, lbn, MAP_WINDOW,
					 hashes, mapped, &a);
		if (rc < 0)
			break;
		if (nblocks == UINT64_MAX) {
			*size = a.size;
			nblocks = (a.size + st->block_size - 1) /
				  st->block_size;
		}
		for (i = 0; rc == 0 && i < MAP_WINDOW && lbn + i < nblocks; i++)
			rc = fn(ctx, lbn + i, mapped[i] != 0);
	}
	gsh_free(hashes);
	return rc;
}

struct punch {
	struct dedup_fsal_obj_handle *h;
	uint64_t end;			/* of the whole blocks to unmap */
	const uint8_t *zeros;		/* ZERO_RUN blocks */
	uint64_t run, run_len;		/* mapped blocks not yet written */
};

/* Writes the pending run of mapped blocks as zeros: they become holes. */
static int punch_flush(struct punch *p)
{
	struct dstore_wblocks w = { .buf = p->zeros, .stable = false };
	struct dstore_attr pre, post;
	int rc = 0;

	while (rc == 0 && p->run_len > 0) {
		w.lbn = p->run;
		w.n = p->run_len < ZERO_RUN ? (uint32_t)p->run_len : ZERO_RUN;
		/* end 0: the size stays */
		rc = dstore_write_blocks(p->h->store->ds, p->h->ino, &w, &pre,
					 &post);
		p->run += w.n;
		p->run_len -= w.n;
	}
	return rc;
}

static int punch_block(void *ctx, uint64_t lbn, bool mapped)
{
	struct punch *p = ctx;
	int rc = 0;

	if (lbn >= p->end) {
		rc = punch_flush(p);
		return rc < 0 ? rc : 1;
	}
	if (mapped && p->run + p->run_len == lbn) {
		p->run_len++;
		return 0;
	}
	if (mapped) {
		rc = punch_flush(p);
		p->run = lbn;
		p->run_len = 1;
	}
	return rc;
}

/*
 * Zeros bytes [off, end) of one block, within the file: the store reads,
 * merges and writes the block under its own lock.  (Racing a truncation
 * below off, this would extend the file again, with zeros.)
 */
static int zero_within_block(struct dedup_fsal_obj_handle *h, uint64_t off,
			     uint64_t end, const uint8_t *zeros)
{
	ssize_t n;

	if (off >= end)
		return 0;
	n = dstore_write(h->store->ds, h->ino, off, zeros, (size_t)(end - off),
			 false, NULL);
	return n < 0 ? (int)n : 0;
}

/*
 * DEALLOCATE: the bytes read as zeros afterwards and the size stays (as
 * fallocate(2)'s PUNCH_HOLE | KEEP_SIZE).  Whole blocks that hold data
 * lose their mapping, so the store drops their references to the chunks;
 * partial blocks at either end are zeroed in place.
 */
static int punch_hole(struct dedup_fsal_obj_handle *h, uint64_t offset,
		      uint64_t length)
{
	uint64_t bs = h->store->block_size;
	uint64_t end = offset + length, first = (offset + bs - 1) / bs;
	struct punch p = { .h = h };
	struct dstore_attr a;
	uint8_t *zeros;
	int rc;

	rc = dstore_getattr(h->store->ds, h->ino, &a);
	if (rc < 0)
		return rc;
	if (end > a.size)
		end = a.size;
	if (offset >= end)
		return 0;
	zeros = gsh_calloc(ZERO_RUN, bs);
	p.zeros = zeros;
	/* the last block of the file holds zeros past its end: whole */
	p.end = end == a.size ? (end + bs - 1) / bs : end / bs;
	rc = walk_block_map(h, first, punch_block, &p, &a.size);
	if (rc == 0)
		rc = punch_flush(&p);
	if (rc >= 0 && offset % bs != 0)
		rc = zero_within_block(h, offset,
				       end < first * bs ? end : first * bs,
				       zeros);
	if (rc >= 0 && end < a.size && end % bs != 0 && end / bs >= first)
		rc = zero_within_block(h, end / bs * bs, end, zeros);
	if (rc >= 0)
		rc = dstore_sync(h->store->ds);
	gsh_free(zeros);
	return rc;
}

/*
 * ALLOCATE: the store cannot reserve space (a block takes space when it
 * is written, and none when the store holds its content already), so
 * this only makes the file at least offset + length long, as
 * fallocate(2) mode 0 does; the new bytes read as zeros.
 */
static int extend_to(struct dedup_fsal_obj_handle *h, uint64_t end)
{
	struct dstore_wblocks w = { .end = end, .stable = true };
	struct dstore_attr pre, post;

	return dstore_write_blocks(h->store->ds, h->ino, &w, &pre, &post);
}

fsal_status_t dedup_fallocate(struct fsal_obj_handle *obj_hdl,
			      struct state_t *state, uint64_t offset,
			      uint64_t length, bool allocate)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	bool has_lock = false;
	fsal_status_t status;
	int rc;

	status = io_begin(obj_hdl, false, state, FSAL_O_WRITE, &has_lock);
	if (FSAL_IS_ERROR(status))
		return status;
	/* fallocate(2)'s answers: a negative off_t, then too far */
	if (offset > (uint64_t)INT64_MAX || length > (uint64_t)INT64_MAX)
		rc = -EINVAL;
	else if (offset + length > (uint64_t)INT64_MAX)
		rc = -EFBIG;
	else if (allocate)
		rc = extend_to(h, offset + length);
	else
		rc = punch_hole(h, offset, length);
	/* mtime and ctime move, whatever changed (as fallocate(2) on Linux) */
	if (rc == 0)
		rc = apply_attrs(h->store, h->ino, obj_hdl->type, NULL,
				 ATTR_MTIME_SERVER, NULL);
	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return dedup_status_obj(rc);
}

struct seek {
	uint64_t from;			/* block to look from */
	bool data;			/* SEEK_DATA, else SEEK_HOLE */
	uint64_t found;			/* the block */
};

static int seek_block(void *ctx, uint64_t lbn, bool mapped)
{
	struct seek *s = ctx;

	if (mapped != s->data)
		return 0;
	s->found = lbn;
	return 1;
}

/*
 * SEEK to data or to a hole, as lseek(2)'s SEEK_DATA and SEEK_HOLE at the
 * store's block granularity (and with FSAL_VFS's answers): an offset at
 * or past the end is NXIO; no data after it is eof with the offset
 * unchanged; the end of the file is a hole.
 */
fsal_status_t dedup_seek2(struct fsal_obj_handle *obj_hdl,
			  struct state_t *state, struct io_info *info)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	uint64_t offset = info->io_content.hole.di_offset, size = 0, at;
	struct seek s = { .from = offset / h->store->block_size };
	bool has_lock = false;
	fsal_status_t status;
	int rc;

	if (info->io_content.what != NFS4_CONTENT_DATA &&
	    info->io_content.what != NFS4_CONTENT_HOLE)
		return fsalstat(ERR_FSAL_UNION_NOTSUPP, 0);
	s.data = info->io_content.what == NFS4_CONTENT_DATA;
	status = io_begin(obj_hdl, false, state, FSAL_O_ANY, &has_lock);
	if (FSAL_IS_ERROR(status))
		return status;

	rc = walk_block_map(h, s.from, seek_block, &s, &size);
	if (rc >= 0 && offset >= size) {
		status = posix2fsal_status(ENXIO);
	} else if (rc < 0) {
		status = dedup_status_obj(rc);
	} else if (rc == 0 && s.data) {
		info->io_eof = true;
	} else {
		at = rc == 0 ? size : s.found * h->store->block_size;
		if (at < offset)
			at = offset;
		if (at > size)
			at = size;
		info->io_content.hole.di_offset = at;
		info->io_eof = at >= size;
	}
	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}
