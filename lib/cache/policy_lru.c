// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* LRU: evict the least recently used block. */
#include "policy_lru.h"

static int lru_init(struct sc_policy *p, uint32_t capacity, const char *arg)
{
	struct sc_lru *l;
	int err;

	if (arg)
		return -SC_EINVAL;
	l = sc_zalloc(sizeof(*l));
	if (!l)
		return -SC_ENOMEM;
	err = sc_lru_init(l, capacity);
	if (err) {
		sc_free(l);
		return err;
	}
	p->priv = l;
	return 0;
}

void sc_policy_lru_destroy(struct sc_policy *p)
{
	sc_lru_destroy(p->priv);
	sc_free(p->priv);
	p->priv = NULL;
}

void sc_policy_lru_insert(struct sc_policy *p, uint32_t slot)
{
	sc_lru_push_head(p->priv, slot);
}

void sc_policy_lru_hit(struct sc_policy *p, uint32_t slot)
{
	sc_lru_touch(p->priv, slot);
}

void sc_policy_lru_remove(struct sc_policy *p, uint32_t slot)
{
	sc_lru_unlink(p->priv, slot);
}

size_t sc_policy_lru_bytes(const struct sc_policy *p)
{
	return sizeof(struct sc_lru) + sc_lru_bytes(p->priv);
}

static uint32_t lru_victim(struct sc_policy *p)
{
	return sc_lru_tail(p->priv);
}

const struct sc_policy_ops sc_policy_lru = {
	.name = "lru",
	.help = "lru takes no argument",
	.init = lru_init,
	.destroy = sc_policy_lru_destroy,
	.insert = sc_policy_lru_insert,
	.hit = sc_policy_lru_hit,
	.victim = lru_victim,
	.remove = sc_policy_lru_remove,
	.bytes = sc_policy_lru_bytes,
};
