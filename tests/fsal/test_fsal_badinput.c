// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bad input for FSAL_DEDUP (run with DEDUP { Verify_Reads = true; }).
 *
 * No arguments: a corrupted chunk.  A file of four distinct random blocks
 * is written over NFSv3 and read back; with ganesha stopped, one byte of
 * its second block's slot in STORE/containers/00000000.dat is flipped (the
 * slot found by searching the container for the block's bytes).  After a
 * start, a READ covering that block fails (EIO) while the other blocks
 * still read back, ganesha's log names the chunk ("fails its check ...
 * seacachectl fsck"), and `seacachectl fsck STORE` exits 4 naming the
 * chunk, also with --repair (the data cannot be invented).  The steps are
 * separate tests run in order, so each check fails on its own.
 *
 * badconf NEEDLE...: ganesha was started (scripts/ganesha-run --expect-exit)
 * with an invalid DEDUP { } block, which must stop the server: ganesha
 * exited by itself with a non-zero status (GANESHA_EXIT_STATUS), and every
 * NEEDLE stands in a CRIT or FATAL line of its log (lines read
 * "... function :COMPONENT :CRIT :message", ":FATAL :" for LogFatal).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nfs_harness.h"

#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#define SEED 0xbad1a7ull
#define D "/badinput"
#define FILE_PATH D "/four-blocks"
#define BLK 4096u
#define NBLK 4
#define VICTIM 1		/* the file's second block */
#define FLIP_AT 1234		/* the byte flipped inside its slot */

static struct nfs_context *v3;
static unsigned char file_data[NBLK * BLK];
static char victim_sha[65];	/* SHA-256 of the victim block, hex */
static int64_t victim_slot = -1;	/* its slot in container 0 */

static char **needles;
static int n_needles;

/* --- helpers ---------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 0;
	char *buf = NULL;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - n < 65536) {
			char *nb = realloc(buf, cap + (1u << 20));

			if (!nb)
				break;
			buf = nb;
			cap += 1u << 20;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		if (got == 0)
			break;
		n += got;
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* A copy of the first line of ganesha's log holding every one of WORDS
 * (NULL-terminated), or NULL. */
static char *log_line(const char *const words[])
{
	char *log = read_all(nh_env("GANESHA_LOG"), NULL);
	char *line, *save = NULL, *found = NULL;

	if (!log)
		return NULL;
	for (line = strtok_r(log, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		int i;

		for (i = 0; words[i]; i++)
			if (!strstr(line, words[i]))
				break;
		if (!words[i])
			found = strdup(line);
	}
	free(log);
	return found;
}

/* seacachectl fsck [--repair] STORE, stdout and stderr into *out; the
 * server must be stopped. */
static int fsck(bool repair, char **out)
{
	const char *tool = nh_seacachectl();
	char *argv[] = { "sh", "-c", "exec \"$@\" 2>&1", "sh", (char *)tool, "fsck",
			 repair ? "--repair" : (char *)nh_env("SEACACHE_STORE"),
			 repair ? (char *)nh_env("SEACACHE_STORE") : NULL, NULL };
	int rc;

	if (!tool)
		fail_msg("seacachectl is not built at '%s' (set SEACACHE_SEACACHECTL)",
			 getenv("SEACACHECTL") ? getenv("SEACACHECTL") : "");
	rc = nh_run(argv, out);
	printf("# seacachectl fsck%s: exit status %d\n%s", repair ? " --repair" : "", rc,
	       *out ? *out : "");
	return rc;
}

static void server(const char *what)
{
	nh_umount(v3);
	v3 = NULL;
	assert_int_equal(nh_ctl(what), 0);
	if (!strcmp(what, "start"))
		v3 = nh_mount(3);
}

/* SHA-256 of BUF, by sha256sum (the chunk's name in the store). */
static void sha256_hex(const void *buf, size_t len, char hex[65])
{
	char tmp[] = "/tmp/fsal-badinput.XXXXXX";
	char *argv[] = { "sha256sum", tmp, NULL }, *out = NULL;
	int fd = mkstemp(tmp);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
	assert_int_equal(nh_run(argv, &out), 0);
	unlink(tmp);
	assert_non_null(out);
	assert_true(strlen(out) >= 64);
	memcpy(hex, out, 64);
	hex[64] = '\0';
	free(out);
}

struct read3_cb {
	int done;
	int status;	/* nfsstat3, or -EIO when the call itself failed */
	uint32_t count;
};

static void read3_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct read3_cb *cb = priv;
	READ3res *res = data;

	(void)rpc;
	cb->done = 1;
	cb->status = status == RPC_STATUS_SUCCESS ? (int)res->status : -EIO;
	if (cb->status == NFS3_OK)
		cb->count = res->READ3res_u.resok.count;
}

/* Raw READ3 of [off, off + len): the server's nfsstat3 (-EIO: no reply). */
static int read3_status(struct nfsfh *fh, uint64_t off, uint32_t len)
{
	struct nh_fh h = nh_fh_of(fh);
	struct read3_cb cb = { 0, -EIO, 0 };
	READ3args a;

	memset(&a, 0, sizeof(a));
	a.file.data.data_len = h.len;
	a.file.data.data_val = (char *)h.val;
	a.offset = off;
	a.count = len;
	if (rpc_nfs3_read_async(nfs_get_rpc_context(v3), read3_done, &a, &cb) != 0 ||
	    nh_rpc_wait(v3, &cb.done) != 0)
		return -EIO;
	return cb.status;
}

/* --- corrupted chunk ---------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, NULL);
	return 0;
}

/* Write, read back, fsck clean; then flip a byte of the second block's slot. */
static void test_write_then_corrupt(void **state)
{
	char container[4096], *out = NULL;
	unsigned char slot[BLK], b;
	int found[NBLK] = { 0 };
	int64_t at = -1;
	off_t off;
	int fd;

	(void)state;
	for (int i = 0; i < NBLK; i++)
		nh_fill_seeded(file_data + i * BLK, BLK, nh_mix(SEED, (uint64_t)i));
	assert_int_equal(nh_write_file(v3, FILE_PATH, file_data, sizeof(file_data),
				       nfs_get_writemax(v3)), 0);
	if (nh_check_file(v3, FILE_PATH, file_data, sizeof(file_data)) != 0)
		fail_msg("%s does not read back before the corruption", FILE_PATH);
	sha256_hex(file_data + VICTIM * BLK, BLK, victim_sha);
	printf("# block %d of %s is chunk %s\n", VICTIM, FILE_PATH, victim_sha);

	server("stop");
	assert_int_equal(fsck(false, &out), 0);
	free(out);

	/* find the file's blocks in the container, slot by slot */
	snprintf(container, sizeof(container), "%s/containers/00000000.dat",
		 nh_env("SEACACHE_STORE"));
	fd = open(container, O_RDWR);
	if (fd < 0)
		fail_msg("cannot open %s: %s", container, strerror(errno));
	for (off = 0; pread(fd, slot, BLK, off) == (ssize_t)BLK; off += BLK)
		for (int i = 0; i < NBLK; i++)
			if (!memcmp(slot, file_data + i * BLK, BLK)) {
				found[i]++;
				if (i == VICTIM)
					at = off;
			}
	for (int i = 0; i < NBLK; i++)
		if (found[i] != 1)
			fail_msg("block %d of %s is %d times in %s, want once", i, FILE_PATH,
				 found[i], container);
	victim_slot = at / BLK;
	printf("# block %d is in slot %" PRId64 " (offset %" PRId64 "); flipping byte %d\n",
	       VICTIM, victim_slot, at, FLIP_AT);
	b = (unsigned char)(file_data[VICTIM * BLK + FLIP_AT] ^ 0x01);
	assert_int_equal(pwrite(fd, &b, 1, at + FLIP_AT), 1);
	assert_int_equal(fsync(fd), 0);
	close(fd);
	server("start");
}

/* Reads covering the corrupt block fail with NFS3ERR_IO (libnfs: an error);
 * the server does not return the changed bytes. */
static void test_read_of_corrupt_block_fails(void **state)
{
	static unsigned char buf[NBLK * BLK];
	const struct {
		uint64_t off;
		uint32_t len;
	} reads[] = { { 0, NBLK * BLK }, { VICTIM * BLK, BLK }, { VICTIM * BLK + FLIP_AT, 1 } };
	struct nfsfh *fh;
	int rc;

	(void)state;
	assert_int_equal(nfs_open(v3, FILE_PATH, O_RDONLY, &fh), 0);
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		rc = nfs_pread(v3, fh, reads[i].off, reads[i].len, buf);
		printf("# libnfs read of %u bytes at %" PRIu64 ": %d (%s)\n", reads[i].len,
		       reads[i].off, rc, rc < 0 ? nfs_get_error(v3) : "no error");
		if (rc >= 0)
			fail_msg("the read of %u bytes at %" PRIu64 ", over the corrupt block, "
				 "returned %d bytes", reads[i].len, reads[i].off, rc);
		rc = read3_status(fh, reads[i].off, reads[i].len);
		if (rc != NFS3ERR_IO)
			fail_msg("READ3 of %u bytes at %" PRIu64 ": status %d, want NFS3ERR_IO (%d)",
				 reads[i].len, reads[i].off, rc, NFS3ERR_IO);
	}
	nfs_close(v3, fh);
}

/* The blocks around it still read back intact. */
static void test_other_blocks_read(void **state)
{
	static unsigned char buf[NBLK * BLK];
	struct nfsfh *fh;
	int rc;

	(void)state;
	assert_int_equal(nfs_open(v3, FILE_PATH, O_RDONLY, &fh), 0);
	rc = nfs_pread(v3, fh, 0, BLK, buf);
	if (rc != (int)BLK)
		fail_msg("READ of block 0: %d (%s), want %u bytes", rc,
			 rc < 0 ? nfs_get_error(v3) : "short", BLK);
	assert_memory_equal(buf, file_data, BLK);
	rc = nfs_pread(v3, fh, (VICTIM + 1) * BLK, (NBLK - VICTIM - 1) * BLK, buf);
	if (rc != (int)((NBLK - VICTIM - 1) * BLK))
		fail_msg("READ of the blocks after the corrupt one: %d (%s)", rc,
			 rc < 0 ? nfs_get_error(v3) : "short");
	assert_memory_equal(buf, file_data + (VICTIM + 1) * BLK, (NBLK - VICTIM - 1) * BLK);
	nfs_close(v3, fh);
}

/* ganesha's log names the chunk, its slot and what to run. */
static void test_log_names_chunk(void **state)
{
	char chunk[80], slot[40];
	const char *const words[] = { ":CRIT :", "fails its check", "seacachectl fsck", chunk,
				      slot, NULL };
	char *line;

	(void)state;
	snprintf(chunk, sizeof(chunk), "chunk %s ", victim_sha);
	snprintf(slot, sizeof(slot), "in slot %" PRId64 " ", victim_slot);
	line = log_line(words);
	if (!line)
		fail_msg("ganesha's log (%s) has no CRIT line with '%s', 'fails its check', "
			 "'seacachectl fsck' and '%s'", nh_env("GANESHA_LOG"), chunk, slot);
	printf("# ganesha: %s\n", line);
	free(line);
}

/* seacachectl fsck [--repair] with the server stopped: exit status 4 and the
 * chunk named. */
static void fsck_finds_victim(bool repair)
{
	char chunk[80], *out = NULL;
	int rc;

	snprintf(chunk, sizeof(chunk), "chunk %s", victim_sha);
	server("stop");
	rc = fsck(repair, &out);
	assert_non_null(out);
	if (rc != 4 || !strstr(out, chunk))
		fail_msg("seacachectl fsck%s: exit status %d (want 4%s), '%s' %s in its output",
			 repair ? " --repair" : "", rc, repair ? ": the data is lost" : "", chunk,
			 strstr(out, chunk) ? "named" : "not named");
	free(out);
	server("start");
}

static void test_fsck_names_chunk(void **state)
{
	(void)state;
	fsck_finds_victim(false);
}

/* --repair cannot make the chunk good (nor may it drop it silently). */
static void test_fsck_repair_leaves_it(void **state)
{
	(void)state;
	fsck_finds_victim(true);
	/* nothing else was harmed: block 0 still reads back */
	test_other_blocks_read(state);
}

/* --- bad DEDUP { } block ---------------------------------------------------- */

static void test_ganesha_exited(void **state)
{
	const char *st = getenv("GANESHA_EXIT_STATUS");
	char *end;
	long rc;

	(void)state;
	if (!st || !*st)
		fail_msg("GANESHA_EXIT_STATUS is not set: not run by scripts/ganesha-run "
			 "--expect-exit");
	rc = strtol(st, &end, 10);
	if (*end != '\0')
		fail_msg("GANESHA_EXIT_STATUS '%s' is not a number", st);
	if (rc == 0)
		fail_msg("ganesha.nfsd exited with status 0 despite the bad DEDUP { } block");
	printf("# ganesha.nfsd stopped, exit status %ld\n", rc);
}

/* The first line holding NEEDLE at CRIT or FATAL level, or NULL. */
static char *crit_line(const char *needle)
{
	const char *const crit[] = { ":CRIT :", needle, NULL };
	const char *const fatal[] = { ":FATAL :", needle, NULL };
	char *line = log_line(crit);

	return line ? line : log_line(fatal);
}

static void test_log_names_parameter(void **state)
{
	int missing = 0;

	(void)state;
	for (int i = 0; i < n_needles; i++) {
		char *line = crit_line(needles[i]);

		if (line)
			printf("# ganesha: %s\n", line);
		else
			printf("# ganesha's log (%s) has no CRIT or FATAL line with '%s'\n",
			       nh_env("GANESHA_LOG"), needles[i]);
		missing += !line;
		free(line);
	}
	if (missing)
		fail_msg("%d of the %d expected CRIT/FATAL lines are missing", missing,
			 n_needles);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest corrupt[] = {
		cmocka_unit_test(test_write_then_corrupt),
		cmocka_unit_test(test_read_of_corrupt_block_fails),
		cmocka_unit_test(test_other_blocks_read),
		cmocka_unit_test(test_log_names_chunk),
		cmocka_unit_test(test_fsck_names_chunk),
		cmocka_unit_test(test_fsck_repair_leaves_it),
	};
	const struct CMUnitTest badconf[] = {
		cmocka_unit_test(test_ganesha_exited),
		cmocka_unit_test(test_log_names_parameter),
	};

	if (!nh_is_dedup()) {
		fprintf(stderr, "test_fsal_badinput: FSAL_DEDUP only\n");
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "badconf")) {
		if (argc < 3) {
			fprintf(stderr, "usage: test_fsal_badinput badconf NEEDLE...\n");
			return 2;
		}
		needles = argv + 2;
		n_needles = argc - 2;
		return cmocka_run_group_tests_name("fsal_badconf", badconf, NULL, NULL);
	}
	return cmocka_run_group_tests_name("fsal_badinput", corrupt, setup, teardown);
}
