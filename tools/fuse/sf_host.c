// SPDX-License-Identifier: BSD-2-Clause
/*
 * The mount's CSI host and its idle work.  The mount serves from the
 * first moment, through NFS alone while the CSI service does not answer:
 * the idle thread registers (HELLO, tried again with back-off up to a
 * minute, as seacache.ko's mount does), then calls sc_host_idle every
 * second (eviction notices, the lease, the down service's probe) and
 * writes the statistics directory.  The host is made once and lives
 * until the mount ends; with fail_fast it marks a silent service down,
 * so a VM waits one csi_timeo= at most before its I/O goes to NFS.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

#include <seacache/defaults.h>
#include <seacache/host.h>
#include <seacache/host_transport.h>

#include "sf.h"

#define SF_RETRY_MAX_S 60

static int host_connect(struct sf_fs *fs)
{
	const struct sf_opts *o = &fs->o;
	char bind[64] = "";
	const char *colon = o->peer ? strrchr(o->peer, ':') : NULL;
	struct sc_host_transport_opts to = {
		.server = o->server, .port = (uint16_t)o->csi_port,
		.timeout_ms = (int)o->csi_timeo * 100,
	};
	struct sc_host_config hc = {
		.name = "seacache-fuse", .cache_blocks = (uint32_t)(o->cache_bytes >> 12),
		.policy = o->policy, .io_retries = SC_HOST_MOUNT_IO_RETRIES,
		.fail_fast = true,
	};
	struct sc_host *host;
	int rc;

	if (colon) {
		snprintf(bind, sizeof(bind), "%.*s", (int)(colon - o->peer),
			 o->peer);
		to.peer_bind = bind;
		to.peer_port = (uint16_t)atoi(colon + 1);
	}
	sc_variant_parse(o->variant, &hc.variant);	/* checked at start */
	memcpy(hc.uuid, fs->uuid, sizeof(hc.uuid));
	rc = sc_host_transport_open(&to, &hc.tr, &fs->ts);
	if (rc)
		return rc;
	sc_host_transport_peer_addr(fs->ts, &hc.peer);
	rc = sc_host_create(&hc, &host);
	if (rc) {
		sc_host_transport_close(fs->ts);
		fs->ts = NULL;
		return rc;
	}
	sc_host_transport_set_host(fs->ts, host);
	atomic_store_explicit(&fs->host, host, memory_order_release);
	fprintf(stderr, "seacache-fuse: %s: registered with the CSI service at %s port %u\n",
		fs->mountpoint, o->server, o->csi_port);
	return 0;
}

/*
 * The host's counters under seacache.ko's names for them (its sysfs.c),
 * so that `seacachectl stats --mount` and an operator's dashboards read
 * either host the same way.
 */
#define HS(_name, _field) { #_name, offsetof(struct sc_host_stats, _field) }
#define CS(_name, _field)						\
	{ #_name, offsetof(struct sc_host_stats, cache.cache._field) }
static const struct stat_file {
	const char *name;
	size_t off;		/* of a uint64_t in struct sc_host_stats */
} host_files[] = {
	HS(reads, reads), HS(read_blocks, read_blocks),
	HS(address_hits, addr_hits), HS(content_hits, content_hits),
	HS(misses, misses), HS(hole_blocks, hole_blocks),
	HS(bytes_from_server, server_data_bytes),
	HS(bytes_from_peers, peer_bytes), HS(blocks_to_peers, peer_served),
	HS(server_calls, server_calls),
	HS(hash_only_blocks, hash_only_blocks),
	HS(force_data_blocks, force_data_blocks),
	HS(pushes_received, pushes_received), HS(pushes_used, pushed_hits),
	HS(map_calls, map_calls), HS(map_entries, map_entries),
	HS(maps_used, mapped_hits), HS(readahead_blocks, readahead_blocks),
	HS(delegations, delegations), HS(peer_failures, peer_failures),
	HS(peer_reports, peer_reports), HS(csi_down, csi_down),
	HS(down_trips, down_trips), HS(down_calls, down_calls),
	HS(writes, writes), HS(write_blocks, write_blocks),
	HS(write_hash_blocks, write_hash_blocks),
	HS(write_data_bytes, write_data_bytes),
	HS(eviction_notices, notices_sent),
	HS(eviction_notices_dropped, notices_dropped),
	HS(registrations, registrations), HS(unstable_blocks, pinned_blocks),
	HS(memory_bytes, mem_bytes),
	CS(cache_blocks, blocks), CS(cache_evictions, evictions),
	CS(cache_shrunk, shrunk), CS(cache_limit, limit),
};
#undef CS
#undef HS

/* One file of the statistics directory, replaced whole. */
static void stat_put(int dirfd, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void stat_put(int dirfd, const char *name, const char *fmt, ...)
{
	char tmp[128], buf[128];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return;
	if (write(fd, buf, (size_t)n) == n)
		renameat(dirfd, tmp, dirfd, name);
	else
		unlinkat(dirfd, tmp, 0);
	close(fd);
}

/*
 * <stats_dir>/<major:minor>/, one value a file with seacache.ko's names
 * (host_files): `seacachectl stats --mount DIR` reads it.
 */
static void stats_write(struct sf_fs *fs)
{
	struct sc_host *host = sf_host(fs);
	struct sc_host_stats hs = { 0 };
	const uint8_t *u = fs->uuid;
	struct stat st;
	int dirfd;

	if (!fs->stats_path[0]) {
		if (stat(fs->mountpoint, &st))
			return;
		snprintf(fs->stats_path, sizeof(fs->stats_path), "%s/%u:%u",
			 fs->o.stats_dir, major(st.st_dev), minor(st.st_dev));
		mkdir(fs->o.stats_dir, 0755);
		if (mkdir(fs->stats_path, 0755) && errno != EEXIST) {
			fprintf(stderr, "seacache-fuse: %s: %s (no statistics)\n",
				fs->stats_path, strerror(errno));
			return;
		}
	}
	dirfd = open(fs->stats_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return;
	if (host)
		sc_host_get_stats(host, &hs);
	for (size_t k = 0; k < sizeof(host_files) / sizeof(host_files[0]); k++)
		stat_put(dirfd, host_files[k].name, "%llu\n", (unsigned long long)
			 *(const uint64_t *)((const char *)&hs + host_files[k].off));
#define SF_IO_STAT(_name)						\
	stat_put(dirfd, #_name, "%llu\n",				\
		 (unsigned long long)atomic_load(&fs->io._name))
	SF_IO_STAT(fallback_reads);
	SF_IO_STAT(fallback_read_bytes);
	SF_IO_STAT(fallback_writes);
	SF_IO_STAT(fallback_write_bytes);
	SF_IO_STAT(drained_blocks);
	SF_IO_STAT(csi_read_bytes);
#undef SF_IO_STAT
	stat_put(dirfd, "policy", "%s\n", fs->o.policy);
	stat_put(dirfd, "variant", "%s\n", fs->o.variant);
	stat_put(dirfd, "cache_bytes", "%llu\n",
		 (unsigned long long)fs->o.cache_bytes);
	stat_put(dirfd, "server", "%s:%u\n", fs->o.server, fs->o.csi_port);
	stat_put(dirfd, "connected", "%d\n", host != NULL);
	stat_put(dirfd, "host_uuid",
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	close(dirfd);
}

static void stats_remove(struct sf_fs *fs)
{
	DIR *d;
	struct dirent *e;

	if (!fs->stats_path[0] || !(d = opendir(fs->stats_path)))
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || strstr(e->d_name, ".tmp"))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(fs->stats_path);
}

static void *idle_main(void *arg)
{
	struct sf_fs *fs = arg;
	unsigned int retry_s = 1;
	time_t next_try = 0;
	struct timespec until;
	int rc;

	pthread_mutex_lock(&fs->stop_lock);
	while (!fs->stopping) {
		pthread_mutex_unlock(&fs->stop_lock);
		if (sf_host(fs)) {
			sc_host_idle(sf_host(fs));
		} else if (time(NULL) >= next_try) {
			rc = host_connect(fs);
			if (rc) {
				if (retry_s == 1)
					fprintf(stderr, "seacache-fuse: %s: the CSI service at %s port %u does not answer (%s): reads and writes go through NFS until it does\n",
						fs->mountpoint, fs->o.server,
						fs->o.csi_port, strerror(-rc));
				next_try = time(NULL) + retry_s;
				retry_s = retry_s * 2 > SF_RETRY_MAX_S ?
					  SF_RETRY_MAX_S : retry_s * 2;
			}
		}
		stats_write(fs);
		pthread_mutex_lock(&fs->stop_lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec++;
		if (!fs->stopping)
			pthread_cond_timedwait(&fs->stop_cond, &fs->stop_lock,
					       &until);
	}
	pthread_mutex_unlock(&fs->stop_lock);
	return NULL;
}

int sf_host_start(struct sf_fs *fs, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_init(&fs->stop_lock, NULL);
	pthread_cond_init(&fs->stop_cond, NULL);
	rc = pthread_create(&fs->idle, NULL, idle_main, fs);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s", strerror(rc));
		return -1;
	}
	fs->idle_started = true;
	return 0;
}

void sf_host_stop(struct sf_fs *fs)
{
	struct sc_host *host = sf_host(fs);
	struct sf_inode *i, *tmp;

	if (fs->idle_started) {
		pthread_mutex_lock(&fs->stop_lock);
		fs->stopping = true;
		pthread_cond_signal(&fs->stop_cond);
		pthread_mutex_unlock(&fs->stop_lock);
		pthread_join(fs->idle, NULL);
		fs->idle_started = false;
	}
	stats_remove(fs);
	if (!host)
		return;
	/* what CSI cannot commit goes through NFS, file by file */
	if (sc_host_commit_all(host))
		HASH_ITER(hh, fs->itab.by_fileid, i, tmp) {
			if (i->type == S_IFREG && sf_settle(fs, i))
				fprintf(stderr, "seacache-fuse: %s: file %llu: unstable writes lost: neither CSI nor NFS took them\n",
					fs->mountpoint,
					(unsigned long long)i->fileid);
		}
	sc_host_transport_set_host(fs->ts, NULL);
	sc_host_destroy(host);
	sc_host_transport_close(fs->ts);
	atomic_store(&fs->host, NULL);
}

/* ---- NFS behind the host ------------------------------------------------ */

struct drain {
	struct nfs_context *nfs;
	struct nfsfh *fh;
	struct sf_fs *fs;
};

static int drain_put(void *ctx, uint64_t off, const void *data, uint32_t len)
{
	struct drain *d = ctx;
	int n = nfs_pwrite(d->nfs, d->fh, off, len, data);

	if (n != (int)len)
		return n < 0 ? n : -EIO;
	atomic_fetch_add(&d->fs->io.drained_blocks, 1);
	return 0;
}

int sf_settle(struct sf_fs *fs, const struct sf_inode *i)
{
	struct sc_host *host = sf_host(fs);
	struct drain d = { .fs = fs };
	struct sf_nfs *held;
	char *path;
	int err;

	if (!host)
		return 0;
	err = sc_host_commit(host, i->fileid);
	if (!err || !sf_fallback_err(err))
		return err;
	err = sf_path(&fs->itab, i, NULL, &path);
	if (err)
		return err;
	/* the host's own writes: it writes them as itself, root */
	d.nfs = sf_nfs_get(&fs->pool, 0, 0, &held);
	err = nfs_open(d.nfs, path, O_WRONLY, &d.fh);
	if (!err) {
		err = sc_host_pins_drain(host, i->fileid, drain_put, &d);
		if (!err)
			err = nfs_fsync(d.nfs, d.fh);
		nfs_close(d.nfs, d.fh);
	}
	sf_nfs_put(held);
	free(path);
	return err;
}

ssize_t sf_nfs_pread(struct sf_fs *fs, uid_t uid, gid_t gid,
		     const char *path, uint64_t off, void *buf, size_t len)
{
	struct sf_nfs *held;
	struct nfs_context *nfs = sf_nfs_get(&fs->pool, uid, gid, &held);
	struct nfsfh *fh;
	size_t got = 0;
	int n = nfs_open(nfs, path, O_RDONLY, &fh);

	if (n) {
		sf_nfs_put(held);
		return n;
	}
	while (got < len) {
		n = nfs_pread(nfs, fh, off + got, len - got, (char *)buf + got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	nfs_close(nfs, fh);
	sf_nfs_put(held);
	if (n < 0 && !got)
		return n;
	atomic_fetch_add(&fs->io.fallback_reads, 1);
	atomic_fetch_add(&fs->io.fallback_read_bytes, got);
	return (ssize_t)got;
}

ssize_t sf_nfs_pwrite(struct sf_fs *fs, uid_t uid, gid_t gid,
		      const char *path, uint64_t off, const void *buf,
		      size_t len, bool stable)
{
	struct sf_nfs *held;
	struct nfs_context *nfs = sf_nfs_get(&fs->pool, uid, gid, &held);
	struct nfsfh *fh;
	size_t put = 0;
	int n = nfs_open(nfs, path, O_WRONLY, &fh);

	if (n) {
		sf_nfs_put(held);
		return n;
	}
	while (put < len) {
		n = nfs_pwrite(nfs, fh, off + put, len - put,
			       (const char *)buf + put);
		if (n <= 0)
			break;
		put += (size_t)n;
	}
	if (put == len && stable)
		n = nfs_fsync(nfs, fh);
	nfs_close(nfs, fh);
	sf_nfs_put(held);
	if (put < len || n < 0)
		return n < 0 ? n : -EIO;
	atomic_fetch_add(&fs->io.fallback_writes, 1);
	atomic_fetch_add(&fs->io.fallback_write_bytes, len);
	return (ssize_t)len;
}
