// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>
#include <string.h>

#include "backends.h"

bool host_pattern_ok(const char *pattern)
{
	const char *pc = strchr(pattern, '%');

	if (!pc || strchr(pc + 1, '%'))
		return false;
	pc++;
	while (*pc >= '0' && *pc <= '9')
		pc++;
	return *pc == 'u';
}

void host_image_path(const struct host_paths *p, uint32_t image, char *out,
		     size_t len)
{
	char name[256];

	/* host_pattern_ok() said it has exactly one %u conversion */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(name, sizeof(name), p->pattern, image);
#pragma GCC diagnostic pop
	if (p->dir[0])
		snprintf(out, len, "/%s/%s", p->dir, name);
	else
		snprintf(out, len, "/%s", name);
}
