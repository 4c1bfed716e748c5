// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The protocol variants: PROTOCOL.md §8's table (see seacache/variant.h). */
#include "seacache/variant.h"

const struct sc_variant_info sc_variants[SC_VARIANT_COUNT] = {
	[SC_VARIANT_BASELINE] = { "baseline", "baseline", 0 },
	[SC_VARIANT_READ_HASH] = { "readhash", "dedup-read",
				   CSI_FEAT_READ_HASH },
	[SC_VARIANT_TRACKER] = { "tracker", "w-tracker",
				 CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER },
	[SC_VARIANT_PUSH] = { "push", "ss-push",
			      CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			      CSI_FEAT_PUSH },
	[SC_VARIANT_COOP] = { "coop", "coop-cache",
			      CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			      CSI_FEAT_PUSH | CSI_FEAT_COOP |
			      CSI_FEAT_PEER_REPORT },
	[SC_VARIANT_DEDUP_RW] = { "dedup-rw", "dedup-rw",
				  CSI_FEAT_READ_HASH | CSI_FEAT_DEDUP_WRITE },
	[SC_VARIANT_SEACACHE] = { "seacache", "seacache", CSI_FEAT_ALL },
};

int sc_variant_parse(const char *name, enum sc_variant *v)
{
	unsigned int i;

	for (i = 0; i < SC_VARIANT_COUNT; i++)
		if (!sc_strcmp(name, sc_variants[i].name) ||
		    !sc_strcmp(name, sc_variants[i].paper_name)) {
			*v = (enum sc_variant)i;
			return 0;
		}
	return -SC_EINVAL;
}
