// SPDX-License-Identifier: BSD-2-Clause
/*
 * The core's self-tests (lib/selftest/selftest.c) as cmocka tests: the very cases
 * the kernel test module runs at load time, here at full scale.
 *
 * usage: test_core_selftests [RANDOM_OPS [SEED]]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "seacache/selftest.h"

static struct sc_selftest_opts opts = { .random_ops = 2000000, .seed = 1 };

static void run_case(void **state)
{
	const struct sc_selftest_case *c = *state;

	assert_int_equal(c->run(&opts), 0);
}

int main(int argc, char **argv)
{
	struct CMUnitTest *tests;
	unsigned int i;
	int failed;

	if (argc > 1)
		opts.random_ops = (uint32_t)strtoul(argv[1], NULL, 10);
	if (argc > 2)
		opts.seed = strtoull(argv[2], NULL, 10);
	tests = calloc(sc_selftest_ncases, sizeof(*tests));
	if (!tests)
		return 1;
	for (i = 0; i < sc_selftest_ncases; i++) {
		tests[i].name = sc_selftest_cases[i].name;
		tests[i].test_func = run_case;
		tests[i].initial_state = (void *)&sc_selftest_cases[i];
	}
	failed = _cmocka_run_group_tests("core_selftests", tests,
					 sc_selftest_ncases, NULL, NULL);
	free(tests);
	return failed;
}
