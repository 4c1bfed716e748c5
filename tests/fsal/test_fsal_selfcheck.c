// SPDX-License-Identifier: BSD-2-Clause
/*
 * The harness's own checks (FSAL_VFS only), run by CTest:
 *   fail     exit 3, a status of its own          (ganesha-run passes it on)
 *   die      kill -9 ganesha behind the harness's back, exit 0
 *                                                 (ganesha-run must fail)
 *   corrupt  write a file, change one byte of it in the exported directory
 *            behind the server, read it back: the check must see it, exit 1
 *   clean    the same as corrupt without the corruption: exit 0
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nfs_harness.h"

static int write_check(int corrupt)
{
	static unsigned char data[65536];
	struct nfs_context *nfs = nh_mount(3);
	char local[4096];
	int fd, rc;

	nh_fill_seeded(data, sizeof(data), 42);
	if (nh_write_file(nfs, "/selfcheck", data, sizeof(data), sizeof(data)) != 0)
		return 2;
	if (corrupt) {
		unsigned char b = (unsigned char)(data[4242] ^ 0x40);

		if (nh_is_dedup()) {
			fprintf(stderr, "selfcheck: corrupt works on FSAL_VFS only\n");
			return 2;
		}
		snprintf(local, sizeof(local), "%s/selfcheck", nh_env("SEACACHE_STORE"));
		fd = open(local, O_WRONLY);
		if (fd < 0 || pwrite(fd, &b, 1, 4242) != 1) {
			perror(local);
			return 2;
		}
		close(fd);
	}
	rc = nh_check_file(nfs, "/selfcheck", data, sizeof(data));
	nh_umount(nfs);
	if (rc != 0) {
		printf("selfcheck: the harness saw the difference\n");
		return 1;
	}
	printf("selfcheck: file reads back intact\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "fail")) {
		printf("selfcheck: failing on purpose, status 3\n");
		return 3;
	}
	if (!strcmp(mode, "die")) {
		char *out = NULL;
		char *argv2[] = { (char *)nh_env("GANESHA_CTL"), "pid", NULL };
		int pid;

		if (nh_run(argv2, &out) != 0 || (pid = atoi(out)) <= 0)
			return 2;
		free(out);
		if (kill(pid, SIGKILL) != 0)
			return 2;
		/* gone (or a zombie) before the harness looks */
		for (;;) {
			char path[64], st[512], *p;
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/stat", pid);
			f = fopen(path, "r");
			if (!f)
				return 0;
			p = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
			fclose(f);
			if (!p || p[2] == 'Z')
				return 0;
			usleep(10000);
		}
	}
	if (!strcmp(mode, "corrupt"))
		return write_check(1);
	if (!strcmp(mode, "clean"))
		return write_check(0);
	fprintf(stderr, "usage: test_fsal_selfcheck fail|die|corrupt|clean\n");
	return 2;
}
