/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The recency bookkeeping of the LRU policy, for policies that keep the same
 * list and differ only in how they pick a victim (ELRU-n).  Their private
 * state must begin with a struct sc_lru.
 */
#ifndef SEACACHE_POLICY_LRU_H
#define SEACACHE_POLICY_LRU_H

#include "seacache/lru.h"
#include "seacache/policy.h"

void sc_policy_lru_destroy(struct sc_policy *p);
void sc_policy_lru_insert(struct sc_policy *p, uint32_t slot);
void sc_policy_lru_hit(struct sc_policy *p, uint32_t slot);
void sc_policy_lru_remove(struct sc_policy *p, uint32_t slot);
size_t sc_policy_lru_bytes(const struct sc_policy *p);

#endif /* SEACACHE_POLICY_LRU_H */
