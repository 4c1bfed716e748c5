// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-host's "file" way to the server: the images are files under a
 * mounted directory, read with pread(2) by every VM thread.  With the
 * directory a seacache.ko mount, this is a VDI host in the kernel: the
 * module's one content cache serves every VM, and its counters in
 * /sys/fs/seacache/<major:minor>/ are the host's totals.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "backends.h"

struct file_backend {
	struct host_paths paths;
	char mount[PATH_MAX];
	char sysfs[PATH_MAX];	/* the mount's counters; "" if not seacache */
	uint32_t block_size;
};

struct file_vm {
	int *fd;		/* per image, -1 until opened */
	uint32_t nfd;
};

void *file_backend_new(const struct host_paths *p, const char *mount,
		       uint32_t block_size, char *err, size_t errlen)
{
	struct file_backend *b = calloc(1, sizeof(*b));
	struct stat st;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (stat(mount, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--mount %s: not a directory", mount);
		free(b);
		return NULL;
	}
	b->paths = *p;
	b->block_size = block_size;
	snprintf(b->mount, sizeof(b->mount), "%s", mount);
	snprintf(b->sysfs, sizeof(b->sysfs), "/sys/fs/seacache/%u:%u",
		 major(st.st_dev), minor(st.st_dev));
	if (access(b->sysfs, R_OK))
		b->sysfs[0] = '\0';
	return b;
}

void file_backend_free(void *be)
{
	free(be);
}

static void *file_vm_open(void *be, unsigned int vm, char *err,
			  size_t errlen)
{
	struct file_vm *v = calloc(1, sizeof(*v));

	(void)be;
	(void)vm;
	if (!v)
		snprintf(err, errlen, "out of memory");
	return v;
}

static void file_vm_close(void *be, void *vmctx)
{
	struct file_vm *v = vmctx;

	(void)be;
	for (uint32_t i = 0; i < v->nfd; i++)
		if (v->fd[i] >= 0)
			close(v->fd[i]);
	free(v->fd);
	free(v);
}

/* The VM's descriptor of image, opened the first time. */
static int file_vm_fd(struct file_backend *b, struct file_vm *v,
		      uint32_t image)
{
	char rel[PATH_MAX], path[2 * PATH_MAX];

	if (image >= v->nfd) {
		uint32_t n = image + 1;
		int *fd = realloc(v->fd, n * sizeof(*fd));

		if (!fd)
			return -ENOMEM;
		for (uint32_t i = v->nfd; i < n; i++)
			fd[i] = -1;
		v->fd = fd;
		v->nfd = n;
	}
	if (v->fd[image] < 0) {
		host_image_path(&b->paths, image, rel, sizeof(rel));
		snprintf(path, sizeof(path), "%s%s", b->mount, rel);
		/* read-only where the mount is (a read storm needs no more) */
		v->fd[image] = open(path, O_RDWR);
		if (v->fd[image] < 0 && (errno == EROFS || errno == EACCES))
			v->fd[image] = open(path, O_RDONLY);
		if (v->fd[image] < 0)
			return -errno;
	}
	return v->fd[image];
}

static int file_read(void *be, void *vmctx, uint32_t image, uint64_t off,
		     void *buf, size_t len)
{
	int fd = file_vm_fd(be, vmctx, image);
	size_t done = 0;

	if (fd < 0)
		return fd;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)	/* past the end of the image: zeros */
			break;
		done += (size_t)n;
	}
	memset((char *)buf + done, 0, len - done);
	return 0;
}

static int file_write(void *be, void *vmctx, uint32_t image, uint64_t off,
		      const void *buf, size_t len)
{
	int fd = file_vm_fd(be, vmctx, image);
	size_t done = 0;

	if (fd < 0)
		return fd;
	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

static int file_flush(void *be, void *vmctx, uint32_t image)
{
	int fd = file_vm_fd(be, vmctx, image);

	if (fd < 0)
		return fd;
	return fsync(fd) ? -errno : 0;
}

const struct backend_ops file_backend_ops = {
	.vm_open = file_vm_open,
	.vm_close = file_vm_close,
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
};

static uint64_t sysfs_value(const struct file_backend *b, const char *name)
{
	char path[PATH_MAX + 64];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", b->sysfs, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* The module's counters of the mount (zeros on another file system). */
void file_backend_totals(void *be, struct host_totals *t)
{
	const struct file_backend *b = be;

	memset(t, 0, sizeof(*t));
	if (!b->sysfs[0])
		return;
	t->server_bytes = sysfs_value(b, "bytes_from_server");
	t->written_bytes = sysfs_value(b, "write_data_bytes");
	t->peer_bytes = sysfs_value(b, "bytes_from_peers");
	t->peer_served_bytes = sysfs_value(b, "peer_served_bytes");
	t->server_calls = sysfs_value(b, "server_calls");
	t->cache_blocks_hit = sysfs_value(b, "address_hits") +
			      sysfs_value(b, "content_hits");
	t->blocks_read = sysfs_value(b, "read_blocks");
	t->delegations = sysfs_value(b, "delegations");
	t->peer_failures = sysfs_value(b, "peer_failures");
	t->force_data_blocks = sysfs_value(b, "force_data_blocks");
	t->hash_only_blocks = sysfs_value(b, "hash_only_blocks");
	t->pushes_received = sysfs_value(b, "pushes_received");
	t->pushed_hits = sysfs_value(b, "pushes_used");
	t->map_calls = sysfs_value(b, "map_calls");
	t->map_entries = sysfs_value(b, "map_entries");
	t->mapped_hits = sysfs_value(b, "maps_used");
	t->readahead_blocks = sysfs_value(b, "readahead_blocks");
}
