// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runs the SeaCache core's self-tests (lib/selftest/selftest.c) at load time, so the
 * core is proven in a real kernel, and checks the CSI protocol's golden
 * vectors (protocol/vectors, put into the guest by the test) with the
 * codec as compiled into the kernel.  Loading fails when any check fails.
 */
#include <linux/kernel_read_file.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "seacache/csi_vectors.h"
#include "seacache/selftest.h"

static uint random_ops = 100000;
module_param(random_ops, uint, 0444);
MODULE_PARM_DESC(random_ops, "operations per randomized self-test case");

static char *vectors = "/vectors";
module_param(vectors, charp, 0444);
MODULE_PARM_DESC(vectors, "directory of the CSI golden vectors (<name>.bin)");

/* Every vector of the table must be there, decode, and re-encode to itself. */
static unsigned int sc_check_vectors(void)
{
	unsigned int i, failed = 0;
	ssize_t n;

	for (i = 0; i < csi_nvectors; i++) {
		const struct csi_vector *v = &csi_vectors[i];
		char *path = kasprintf(GFP_KERNEL, "%s/%s.bin", vectors,
				       v->name);
		void *buf = NULL;

		n = path ? kernel_read_file_from_path(path, 0, &buf, SZ_1M,
						      NULL, READING_UNKNOWN) :
			   -ENOMEM;
		if (n < 0)
			pr_err("seacache core selftest: cannot read %s: %zd\n",
			       path, n);
		if (n < 0 || csi_vector_check(v, buf, n))
			failed++;
		vfree(buf);
		kfree(path);
	}
	pr_info("seacache core selftest: %u of %u CSI vectors good\n",
		csi_nvectors - failed, csi_nvectors);
	return failed;
}

static int __init sc_core_selftest_init(void)
{
	struct sc_selftest_opts o = { .random_ops = random_ops, .seed = 1 };
	unsigned int failed = sc_selftest_run_all(&o);

	if (sc_check_vectors())
		return -EINVAL;
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
