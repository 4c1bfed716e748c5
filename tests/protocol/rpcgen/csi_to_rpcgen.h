// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI messages as rpcgen sees them: for every enum csi_msg, rpcgen's
 * struct (sc_*, generated from protocol/seacache.x), its XDR routine and a
 * converter from our csi_* struct.  The cross-check encodes a message both
 * ways and compares bytes; the interoperability tests feed rpcgen's client
 * and server stubs with converted messages.
 */
#ifndef CSI_TO_RPCGEN_H
#define CSI_TO_RPCGEN_H

#include "seacache.h"		/* rpcgen's, from the build directory */
#include "seacache/csi_codec.h"

/*
 * What one or more conversions allocated (NUL-terminated copies of
 * strings, arrays of rpcgen's structs), released together; err is the
 * first error of the current conversion.  Zero-initialise before the first
 * use.
 */
struct csi_rpcgen_conv {
	struct csi_rpcgen_chunk *chunks;
	int err;
};

struct csi_rpcgen_msg {
	const char *name;		/* rpcgen's type: "sc_read_res" */
	size_t size;			/* of rpcgen's struct; 0 for void */
	xdrproc_t xdr;			/* xdr_sc_read_res */
	void (*to_sc)(struct csi_rpcgen_conv *c, const void *csi, void *sc);
};

extern const struct csi_rpcgen_msg csi_rpcgen_msgs[CSI_MSG_COUNT];

/*
 * Convert message m from our struct to rpcgen's (of csi_rpcgen_msgs[m].size,
 * zeroed here).  The result points into c's allocations and, for opaque
 * data and hash lists, into csi's own buffers: it lives as long as both,
 * and must not be given to xdr_free.  0, -EINVAL when a string holds a NUL
 * byte (a C string cannot carry it), or -ENOMEM.
 */
int csi_to_rpcgen(struct csi_rpcgen_conv *c, enum csi_msg m, const void *csi,
		  void *sc);

/* Free everything c allocated; c is then empty and can be used again. */
void csi_rpcgen_conv_release(struct csi_rpcgen_conv *c);

#endif /* CSI_TO_RPCGEN_H */
