/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The protocol variants (PROTOCOL.md §8): the one table of their names and
 * of the CSI features each asks for in HELLO.  The host library,
 * seacache-host (and through it the lab) and the simulator take their
 * variants from here.
 *
 * A variant has two spellings, both accepted by sc_variant_parse: its name
 * ("readhash"), which the host side uses, and the SeaCache paper's name
 * ("dedup-read"), which the simulator prints in its CSV and its plots.
 */
#ifndef SEACACHE_VARIANT_H
#define SEACACHE_VARIANT_H

#include "csi_proto.h"

enum sc_variant {
	SC_VARIANT_BASELINE,	/* 0: data for every block */
	SC_VARIANT_READ_HASH,	/* Read#: hashes first, data for misses */
	SC_VARIANT_TRACKER,	/* W/Tracker */
	SC_VARIANT_PUSH,	/* SS-Push */
	SC_VARIANT_COOP,	/* Coop-Cache */
	SC_VARIANT_DEDUP_RW,	/* Read# reads and Dedup-W writes */
	SC_VARIANT_SEACACHE,	/* everything */
	SC_VARIANT_COUNT
};

struct sc_variant_info {
	const char *name;	/* "readhash" */
	const char *paper_name;	/* "dedup-read" */
	uint32_t features;	/* the CSI_FEAT_* bits it requests */
};

/* Indexed by enum sc_variant. */
extern const struct sc_variant_info sc_variants[SC_VARIANT_COUNT];

/* The variant of a name in either spelling; -SC_EINVAL if none. */
int sc_variant_parse(const char *name, enum sc_variant *v);

#endif /* SEACACHE_VARIANT_H */
