/* SPDX-License-Identifier: BSD-2-Clause */
/* seacache-dedupbox: the two boxes' event loop (box.c) and its settings. */
#ifndef DEDUPBOX_BOX_H
#define DEDUPBOX_BOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BOX_FWD_MAX 16

enum box_side { SIDE_HOST, SIDE_SERVER };

struct box_config {
	enum box_side side;
	const char *link;		/* host: connect to; server: listen on */
	unsigned int nfwd;
	const char *fwd_listen[BOX_FWD_MAX];	/* host: where clients connect */
	const char *fwd_target[BOX_FWD_MAX];	/* the servers they reach */
	uint32_t store_slots;		/* blocks this box keeps for its peer */
	bool rw;			/* host: deduplicate writes too */
	bool json;			/* statistics as one JSON line */
	bool quiet;			/* no line per connection */
};

/* Runs until SIGTERM or SIGINT; statistics on SIGUSR1 and at the end. */
int box_run(const struct box_config *cfg);

/* "HOST:PORT", "[V6]:PORT" or "PORT" (loopback) into host and port. */
int box_split_addr(const char *addr, char *host, size_t hostlen,
		   char *port, size_t portlen);

#endif /* DEDUPBOX_BOX_H */
