// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The registry of eviction policies and policy specs ("name[:arg]"). */
#include "seacache/policy.h"

/*
 * Add a policy: one file lib/cache/policy_NAME.c, listed in lib/sources.mk,
 * and one line here.
 */
static const struct sc_policy_ops *const sc_policies[] = {
	&sc_policy_lru,
	&sc_policy_elru,
	&sc_policy_arc,
};

const struct sc_policy_ops *sc_policy_at(unsigned int i)
{
	return i < SC_ARRAY_SIZE(sc_policies) ? sc_policies[i] : NULL;
}

int sc_policy_parse_u32(const char *arg, uint32_t min, uint32_t max,
			uint32_t *out)
{
	uint64_t v = 0;

	if (!arg || !*arg)
		return -SC_EINVAL;
	for (; *arg; arg++) {
		if (*arg < '0' || *arg > '9')
			return -SC_EINVAL;
		v = v * 10 + (uint64_t)(*arg - '0');
		if (v > max)
			return -SC_EINVAL;
	}
	if (v < min)
		return -SC_EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int sc_policy_create(struct sc_policy *p, const char *spec, uint32_t capacity,
		     const uint32_t *share)
{
	const char *colon = spec;
	size_t namelen;
	unsigned int i;
	int err;

	while (*colon && *colon != ':')
		colon++;
	namelen = (size_t)(colon - spec);
	for (i = 0; i < SC_ARRAY_SIZE(sc_policies); i++) {
		const struct sc_policy_ops *ops = sc_policies[i];

		if (sc_strlen(ops->name) != namelen ||
		    sc_strncmp(ops->name, spec, namelen) != 0)
			continue;
		sc_memset(p, 0, sizeof(*p));
		p->ops = ops;
		p->share = share;
		err = ops->init(p, capacity, *colon ? colon + 1 : NULL);
		if (err) {
			p->ops = NULL;
			if (err == -SC_EINVAL)
				sc_log_err("bad argument in cache policy '%s': %s",
					   spec, ops->help);
		}
		return err;
	}
	sc_log_err("unknown cache policy '%s'; the known ones are:", spec);
	for (i = 0; i < SC_ARRAY_SIZE(sc_policies); i++)
		sc_log_err("  %s (%s)", sc_policies[i]->name,
			   sc_policies[i]->help);
	return -SC_EINVAL;
}

void sc_policy_destroy(struct sc_policy *p)
{
	if (p->ops)
		p->ops->destroy(p);
	p->ops = NULL;
}
