// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Allocation failure injection for the tests (sc_env.h). */
#include "seacache/compat.h"

_Thread_local unsigned int sc_alloc_fail_in;

unsigned int sc_fault_inject_alloc(unsigned int n)
{
	unsigned int left = sc_alloc_fail_in;

	sc_alloc_fail_in = n;
	return left;
}
