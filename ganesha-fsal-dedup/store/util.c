// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The store's bottom: logging, the index's error codes, the clocks, the
 * per-thread hashers and directory syncs.  It calls no other file of the
 * store, so every file can call down into it (see README.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dstore_int.h"

void dstore_logf(struct dstore *ds, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ds->log)
		ds->log(ds->log_ctx, level, msg);
	else
		fprintf(stderr, "dedup store %s: %s\n", ds->dir, msg);
}

static void hasher_free(void *h)
{
	sc_hasher_free(h);
}

int hashers_init(struct dstore *ds)
{
	return pthread_key_create(&ds->hasher_key, hasher_free) ? -EAGAIN : 0;
}

/* The calling thread's own hasher: pthread_key_delete runs no destructor. */
void hashers_fini(struct dstore *ds)
{
	sc_hasher_free(pthread_getspecific(ds->hasher_key));
	pthread_key_delete(ds->hasher_key);
}

/* One hashing context per thread, made on first use. */
struct sc_hasher *dstore_hasher(struct dstore *ds)
{
	struct sc_hasher *h = pthread_getspecific(ds->hasher_key);

	if (!h) {
		h = sc_hasher_new();
		if (h && pthread_setspecific(ds->hasher_key, h)) {
			sc_hasher_free(h);
			h = NULL;
		}
	}
	return h;
}

void dstore_deadline(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int dir_sync(struct dstore *ds, const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = fd < 0 || fsync(fd) ? -errno : 0;

	if (fd >= 0)
		close(fd);
	if (rc)
		dstore_logf(ds, DSTORE_LOG_ERROR, "%s: fsync: %s", path,
			    strerror(-rc));
	return rc;
}

void dstore_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

int idx_err(struct dstore *ds, int rc, const char *what)
{
	if (rc == 0)
		return 0;
	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc == MDB_MAP_FULL) {
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "%s: the index is full; raise Index_Map_Size in the DEDUP block and restart",
			    what);
		return -ENOSPC;
	}
	if (rc == MDB_READERS_FULL) {
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "%s: too many concurrent readers; raise Max_Readers in the DEDUP block",
			    what);
		return -EAGAIN;
	}
	if (rc > 0) {
		dstore_logf(ds, DSTORE_LOG_ERROR, "%s: %s", what,
			    mdb_strerror(rc));
		return rc < 1000 ? -rc : -EIO;
	}
	return rc;
}

