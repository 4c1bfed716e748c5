// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Container files: chunk data in fixed-size slots, slot s living in
 * container s / slots_per_container at offset (s % slots_per_container) *
 * block size.  Slots are handed out in increasing order and never written
 * twice, so a reader never sees a slot change under it; a dead slot's
 * space goes back to the file system by punching a hole.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dstore_int.h"

static int container_path(struct dstore *ds, size_t i, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/containers/%08zu.dat", ds->dir, i);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The fd of container i, opening (and creating) it; cont_lock held. */
static int container_fd_locked(struct dstore *ds, size_t i)
{
	char path[PATH_MAX];
	int fd, rc;

	if (i >= ds->n_cont) {
		size_t n = i + 16;
		int *fds = realloc(ds->cont_fds, n * sizeof(*fds));
		bool *dirty;
		void **maps;

		if (!fds)
			return -ENOMEM;
		ds->cont_fds = fds;
		dirty = realloc(ds->cont_dirty, n * sizeof(*dirty));
		if (!dirty)
			return -ENOMEM;
		ds->cont_dirty = dirty;
		maps = realloc(ds->cont_maps, n * sizeof(*maps));
		if (!maps)
			return -ENOMEM;
		ds->cont_maps = maps;
		for (size_t j = ds->n_cont; j < n; j++) {
			fds[j] = -1;
			dirty[j] = false;
			maps[j] = MAP_FAILED;
		}
		ds->n_cont = n;
	}
	if (ds->cont_fds[i] >= 0)
		return ds->cont_fds[i];
	rc = container_path(ds, i, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, (ds->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !ds->read_only) {
		/* a new container: in the directory for good before any
		 * index entry can name a slot of it */
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			*strrchr(path, '/') = '\0';
			rc = dir_sync(ds, path);
			if (rc) {
				close(fd);
				return rc;
			}
		}
	}
	if (fd < 0) {
		rc = -errno;
		dstore_logf(ds, DSTORE_LOG_ERROR, "container %s: %m", path);
		return rc;
	}
	ds->cont_fds[i] = fd;
	return fd;
}

static int container_fd(struct dstore *ds, uint64_t slot, off_t *off)
{
	size_t i = slot / ds->slots_per_container;
	int fd;

	*off = (off_t)((slot % ds->slots_per_container) << ds->bshift);
	pthread_mutex_lock(&ds->cont_lock);
	fd = container_fd_locked(ds, i);
	pthread_mutex_unlock(&ds->cont_lock);
	return fd;
}

static size_t container_bytes(const struct dstore *ds)
{
	return (size_t)ds->slots_per_container << ds->bshift;
}

/*
 * Whether slots first .. first + n - 1 (of one container) are all in the
 * page cache.  mincore over a read-only map of the whole container, made
 * once and never touched (so no fault, no SIGBUS past the file's end):
 * unlike a preadv2 RWF_NOWAIT, which starts the read-ahead of what it
 * does not find and so reads from the disk the blocks the caller then
 * leaves to a peer, it asks the page cache and nothing else.
 */
static int container_resident(struct dstore *ds, uint64_t first,
			      unsigned int n)
{
	size_t i = first / ds->slots_per_container;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t off = (size_t)(first % ds->slots_per_container) << ds->bshift;
	size_t end = off + ((size_t)n << ds->bshift);
	unsigned char vec[256];
	void *map;
	int fd;

	pthread_mutex_lock(&ds->cont_lock);
	fd = container_fd_locked(ds, i);
	if (fd >= 0 && ds->cont_maps[i] == MAP_FAILED)
		ds->cont_maps[i] = mmap(NULL, container_bytes(ds), PROT_READ,
					MAP_SHARED, fd, 0);
	map = fd < 0 ? MAP_FAILED : ds->cont_maps[i];
	pthread_mutex_unlock(&ds->cont_lock);
	if (fd < 0)
		return fd;
	if (map == MAP_FAILED)
		return -EAGAIN;
	off &= ~(page - 1);
	while (off < end) {
		size_t len = end - off < sizeof(vec) * page ? end - off :
							      sizeof(vec) * page;

		if (mincore((char *)map + off, len, vec))
			return -EAGAIN;
		for (size_t p = 0; p < (len + page - 1) / page; p++)
			if (!(vec[p] & 1))
				return -EAGAIN;
		off += len;
	}
	return 0;
}

/*
 * Marked after the write completed: a sync that clears the mark after
 * this point covers the write; one that cleared it before leaves it set.
 */
static void container_mark_dirty(struct dstore *ds, uint64_t slot)
{
	pthread_mutex_lock(&ds->cont_lock);
	ds->cont_dirty[slot / ds->slots_per_container] = true;
	pthread_mutex_unlock(&ds->cont_lock);
}

int containers_open(struct dstore *ds)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/containers", ds->dir);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if (ds->read_only)
		return 0;
	if (mkdir(path, 0700) == 0)
		return dir_sync(ds, ds->dir);
	if (errno != EEXIST) {
		int e = errno;

		dstore_logf(ds, DSTORE_LOG_ERROR, "%s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

void containers_close(struct dstore *ds)
{
	for (size_t i = 0; i < ds->n_cont; i++) {
		if (ds->cont_maps[i] != MAP_FAILED)
			munmap(ds->cont_maps[i], container_bytes(ds));
		if (ds->cont_fds[i] >= 0)
			close(ds->cont_fds[i]);
	}
	free(ds->cont_fds);
	free(ds->cont_dirty);
	free(ds->cont_maps);
	ds->cont_fds = NULL;
	ds->cont_dirty = NULL;
	ds->cont_maps = NULL;
	ds->n_cont = 0;
}

uint64_t slots_reserve(struct dstore *ds, uint64_t n)
{
	uint64_t first;

	pthread_mutex_lock(&ds->cont_lock);
	first = ds->next_slot;
	ds->next_slot += n;
	pthread_mutex_unlock(&ds->cont_lock);
	return first;
}

/* iovecs per preadv/pwritev: a 4 MiB run of 4 KiB blocks in one call */
#define IO_RUN_IOV 1024

/* Slots first .. first + n - 1 of one container, one block buffer each. */
static int io_run(struct dstore *ds, enum slot_io io, uint64_t first,
		  unsigned int n, void *const *bufs)
{
	bool wr = io == SLOT_WRITE;
	struct iovec iov[IO_RUN_IOV];
	off_t off;
	int fd = container_fd(ds, first, &off);
	size_t want = (size_t)n << ds->bshift, done = 0;
	ssize_t got;

	if (fd < 0)
		return fd;
	if (io == SLOT_READ_CACHED) {
		int rc = container_resident(ds, first, n);

		if (rc)
			return rc;
	}
	while (done < want) {
		/* the iovecs of what is left: whole blocks plus a partial one */
		size_t skip = done >> ds->bshift, part = done & (ds->bsize - 1);
		int cnt = 0;

		for (size_t i = skip; i < n && cnt < IO_RUN_IOV; i++, cnt++) {
			iov[cnt].iov_base = (char *)bufs[i] + (i == skip ? part : 0);
			iov[cnt].iov_len = ds->bsize - (i == skip ? part : 0);
		}
		if (wr)
			got = pwritev(fd, iov, cnt, off + (off_t)done);
		else
			got = preadv(fd, iov, cnt, off + (off_t)done);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int e = errno;

			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "container %s at slot %llu: %s",
				    wr ? "write" : "read",
				    (unsigned long long)first, strerror(e));
			return -e;
		}
		if (got == 0) {
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "slot %llu lies beyond its container's end: the container was truncated; run seacachectl fsck",
				    (unsigned long long)(first + skip));
			return -EIO;
		}
		done += (size_t)got;
	}
	if (wr) {
		/*
		 * Start writeback now: the group commit's fdatasync, which
		 * must come before the index transaction, then finds most of
		 * the data on its way to disk already.
		 */
		sync_file_range(fd, off, (off_t)want, SYNC_FILE_RANGE_WRITE);
		container_mark_dirty(ds, first);
	}
	return 0;
}

int slots_rw(struct dstore *ds, enum slot_io io, uint64_t first, size_t n,
	     void *const *bufs)
{
	while (n > 0) {
		uint64_t room = ds->slots_per_container -
				first % ds->slots_per_container;
		unsigned int run = (unsigned int)(n < room ? n : room);
		int rc = io_run(ds, io, first, run, bufs);

		if (rc)
			return rc;
		first += run;
		bufs += run;
		n -= run;
	}
	return 0;
}

int slot_punch(struct dstore *ds, uint64_t slot)
{
	off_t off;
	int fd = container_fd(ds, slot, &off);

	if (fd < 0)
		return fd;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
		      ds->bsize) == 0)
		return 0;
	/* no hole punching here: the slot stays dead, never reused */
	return errno == EOPNOTSUPP ? 0 : -errno;
}

/* Syncs outside the lock, so writers keep writing meanwhile. */
int containers_sync(struct dstore *ds)
{
	size_t i = 0;
	int fd, rc = 0;

	for (;;) {
		pthread_mutex_lock(&ds->cont_lock);
		while (i < ds->n_cont && !ds->cont_dirty[i])
			i++;
		if (i == ds->n_cont) {
			pthread_mutex_unlock(&ds->cont_lock);
			return rc;
		}
		ds->cont_dirty[i] = false;
		fd = ds->cont_fds[i];
		pthread_mutex_unlock(&ds->cont_lock);
		if (fdatasync(fd)) {
			rc = -errno;
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "container %zu: fdatasync: %s", i,
				    strerror(-rc));
			container_mark_dirty(ds, i * ds->slots_per_container);
			return rc;
		}
		i++;
	}
}

uint64_t containers_disk_bytes(struct dstore *ds)
{
	char path[PATH_MAX];
	struct stat st;
	uint64_t sum = 0;

	for (size_t i = 0;; i++) {
		if (container_path(ds, i, path, sizeof(path)) ||
		    stat(path, &st))
			break;
		sum += (uint64_t)st.st_blocks * 512;
	}
	return sum;
}
