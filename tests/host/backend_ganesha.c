// SPDX-License-Identifier: BSD-2-Clause
/*
 * A real ganesha.nfsd with FSAL_DEDUP and its CSI service, started by
 * scripts/ganesha-run: files are made, changed and read back over NFSv3
 * (libnfs), and a restart is GANESHA_CTL restart (a new epoch).  The
 * service's limits are the server's: max_blocks 256, max_evict 1024.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_test.h"
#include "nfs_harness.h"

#define DIR "/hosttest"

const char *hb_name = "ganesha";
uint32_t hb_max_evict = 1024;

static struct nfs_context *v3;

int hb_setup(void)
{
	return nh_suite_setup(DIR, &v3, NULL);
}

void hb_teardown(void)
{
	nh_suite_teardown(&v3, NULL);
}

const char *hb_server(void)
{
	return "127.0.0.1";
}

uint16_t hb_port(void)
{
	return (uint16_t)atoi(nh_env("CSI_PORT"));
}

static const char *path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, DIR "/%s", name);
	return buf;
}

static void die(const char *what)
{
	fprintf(stderr, "backend: %s failed\n", what);
	abort();
}

uint64_t hb_create(const char *name, const void *buf, size_t len)
{
	struct nfs_stat_64 st;
	char p[256];

	path_of(name, p, sizeof(p));
	nfs_unlink(v3, p);
	if (nh_write_file(v3, p, buf, len, 1 << 20) ||
	    nfs_stat64(v3, p, &st))
		die("create");
	return st.nfs_ino;
}

void hb_write_behind(const char *name, uint64_t off, const void *buf,
		     size_t len)
{
	struct nfsfh *fh;
	char p[256];

	if (nfs_open(v3, path_of(name, p, sizeof(p)), O_RDWR, &fh) ||
	    nh_pwrite_all(v3, fh, off, buf, len, 1 << 20) ||
	    nfs_fsync(v3, fh) || nfs_close(v3, fh))
		die("write");
}

void hb_truncate(const char *name, uint64_t size)
{
	char p[256];

	if (nfs_truncate(v3, path_of(name, p, sizeof(p)), size))
		die("truncate");
}

size_t hb_read_back(const char *name, void *buf, size_t max)
{
	struct nfsfh *fh;
	size_t got = 0;
	char p[256];

	if (nfs_open(v3, path_of(name, p, sizeof(p)), O_RDONLY, &fh) ||
	    nh_pread_all(v3, fh, 0, buf, max, nh_readmax(v3), &got) ||
	    nfs_close(v3, fh))
		die("read");
	return got;
}

void hb_restart(void)
{
	/* the mount does not reconnect by itself: mount again after */
	nh_umount(v3);
	if (nh_ctl("restart"))
		die("restart");
	v3 = nh_mount(3);
}
