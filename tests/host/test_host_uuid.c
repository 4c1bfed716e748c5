// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-host's uuid: random without a file; with one, made on first
 * use (owner-only), the same on every later run, and a damaged file is an
 * error that names it, never a silently new identity.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/host_uuid.h>

static char dir[] = "/tmp/host-uuid-XXXXXX";

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_random_without_file(void **state)
{
	uint8_t a[CSI_HOST_UUID_SIZE], b[CSI_HOST_UUID_SIZE];
	char err[256];

	(void)state;
	assert_int_equal(host_uuid(NULL, a, err, sizeof(err)), 0);
	assert_int_equal(host_uuid(NULL, b, err, sizeof(err)), 0);
	assert_memory_not_equal(a, b, sizeof(a));
}

static void test_file_kept(void **state)
{
	uint8_t a[CSI_HOST_UUID_SIZE], b[CSI_HOST_UUID_SIZE];
	char path[256], err[256], text[64];
	struct stat st;
	FILE *f;

	(void)state;
	path_of(path, sizeof(path), "kept");
	assert_int_equal(host_uuid(path, a, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 2 * CSI_HOST_UUID_SIZE + 1);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	for (unsigned int i = 0; i < CSI_HOST_UUID_SIZE; i++) {
		unsigned int v;

		assert_int_equal(sscanf(text + 2 * i, "%2x", &v), 1);
		assert_int_equal(v, a[i]);
	}
	assert_int_equal(host_uuid(path, b, err, sizeof(err)), 0);
	assert_memory_equal(a, b, sizeof(a));
	/* an operator's uuid without the newline, in capitals */
	write_file(path, "00112233445566778899AABBCCDDEEFF");
	assert_int_equal(host_uuid(path, b, err, sizeof(err)), 0);
	assert_int_equal(b[0], 0x00);
	assert_int_equal(b[10], 0xaa);
	assert_int_equal(b[15], 0xff);
	unlink(path);
}

static void test_damaged_file(void **state)
{
	static const char *const bad[] = {
		"",
		"0011223344556677",
		"00112233445566778899aabbccddeefg\n",
		"00112233445566778899aabbccddeeff\nmore",
		"00112233445566778899aabbccddeeff00\n",
		" 0112233445566778899aabbccddeeff\n",
	};
	uint8_t u[CSI_HOST_UUID_SIZE];
	char path[256], err[256];

	(void)state;
	path_of(path, sizeof(path), "bad");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i]);
		err[0] = '\0';
		assert_int_equal(host_uuid(path, u, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, path));
	}
	unlink(path);
	/* a directory that cannot be made into: the error names the file */
	path_of(path, sizeof(path), "no-such-dir/uuid");
	assert_true(host_uuid(path, u, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, path));
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_without_file),
		cmocka_unit_test(test_file_kept),
		cmocka_unit_test(test_damaged_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
