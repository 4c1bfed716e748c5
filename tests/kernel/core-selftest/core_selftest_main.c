// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runs the SeaCache core's self-tests (lib/selftest.c) at load time, so the
 * core is proven in a real kernel.  Loading fails when any case fails.
 */
#include <linux/module.h>

#include "seacache/selftest.h"

static uint random_ops = 100000;
module_param(random_ops, uint, 0444);
MODULE_PARM_DESC(random_ops, "operations per randomized self-test case");

static int __init sc_core_selftest_init(void)
{
	struct sc_selftest_opts o = { .random_ops = random_ops, .seed = 1 };
	unsigned int failed = sc_selftest_run_all(&o);

	if (failed) {
		pr_err("seacache core selftest: %u of %u cases FAILED\n",
		       failed, sc_selftest_ncases);
		return -EINVAL;
	}
	pr_info("seacache core selftest: all %u cases passed\n",
		sc_selftest_ncases);
	return 0;
}

static void __exit sc_core_selftest_exit(void)
{
}

module_init(sc_core_selftest_init);
module_exit(sc_core_selftest_exit);
MODULE_DESCRIPTION("SeaCache core self-tests");
MODULE_LICENSE("GPL");
