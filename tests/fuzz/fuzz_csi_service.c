// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service's handlers in this process (csi_service_handle), fed
 * requests that the codec decoded, as the RPC server hands them over:
 * whatever the decoders let through must not make a handler run outside
 * its memory, leak, answer with a result the codec refuses to encode, or
 * answer a READ with bytes that are not the content it names.
 *
 * An input is a sequence of calls, each
 *     u8 proc   a procedure of CSI_PROG, by its index in fuzz_procs
 *     u8 how    bit 0: the header's host and epoch become those of one of
 *               the HOSTS registered at start (bits 1-2 pick it), so the
 *               call gets past §5.1's checks; bits 3-4: the caller (root,
 *               uid 1000, uid 3000, AUTH_NONE); bits 5-6: its address;
 *               bit 7: the file id of a READ, GET_HASHES, WRITE or COMMIT
 *               is an index into the files made at start (so the fuzzer
 *               need not guess inode numbers)
 *     u16 len   big-endian, then len bytes of XDR arguments
 * up to MAX_CALLS of them.  The store (files of known content, some of it
 * shared) and the service are made once; the clocks stand still, so no
 * lease runs out during a run and an input replays the same way.  What
 * the calls write stays for later inputs, as it would in a server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seacache/csi_codec.h>
#include <seacache/hash.h>
#include <seacache/prng.h>
#include <seacache/rpc_transport.h>

#include "dstore.h"
#include "fuzz_common.h"
#include "service.h"

#define BS 4096u
#define HOSTS 4u
#define MAX_CALLS 16u
#define FILE_BLOCKS 32u
#define FILES 3u
#define EXPORT "/export"

/* The messages whose C struct begins with the request header. */
#define HDR_FIRST(type)							\
	_Static_assert(offsetof(struct type, hdr) == 0,			\
		       #type " begins with its request header")
HDR_FIRST(csi_lookup_args);
HDR_FIRST(csi_gethashes_args);
HDR_FIRST(csi_read_args);
HDR_FIRST(csi_write_args);
HDR_FIRST(csi_commit_args);
HDR_FIRST(csi_evict_args);
HDR_FIRST(csi_getmap_args);
HDR_FIRST(csi_peer_report_args);

static bool has_hdr(enum csi_msg m)
{
	switch (m) {
	case CSI_MSG_LOOKUP_ARGS: case CSI_MSG_GETHASHES_ARGS:
	case CSI_MSG_READ_ARGS: case CSI_MSG_WRITE_ARGS:
	case CSI_MSG_COMMIT_ARGS: case CSI_MSG_EVICT_ARGS:
	case CSI_MSG_GETMAP_ARGS: case CSI_MSG_PEER_REPORT_ARGS:
		return true;
	default:
		return false;
	}
}

static struct {
	struct dstore *ds;
	struct csi_service *svc;
	struct sc_hasher *hs;
	const struct csi_proc_info *procs[FUZZ_MAX_PROCS];
	unsigned int nprocs;
	struct sockaddr_in addr[4];
	struct csi_reqhdr host[HOSTS];
	uint64_t ino[FILES];
	char dir[64];
} F;

static const struct sc_rpc_auth_sys callers[3] = {
	{ .uid = 0, .gid = 0 },
	{ .uid = 1000, .gid = 1000 },
	{ .uid = 3000, .gid = 3000 },
};

/* Every caller is admitted to the one export as itself: modes decide. */
static int admit(void *ctx, const char *export_path,
		 const struct sockaddr *host, const struct sc_rpc_auth_sys *cred,
		 bool write, struct csi_callers *out)
{
	(void)ctx;
	(void)host;
	(void)write;
	if (export_path && strcmp(export_path, EXPORT))
		return -ENOENT;
	out->n = 1;
	out->c[0] = (struct csi_caller){ .uid = cred ? cred->uid : 65534,
					 .gid = cred ? cred->gid : 65534 };
	return 0;
}

static void file_changed(void *ctx, uint64_t ino)
{
	(void)ctx;
	(void)ino;
}

static uint64_t clock_ms(void *ctx)
{
	(void)ctx;
	return 1000000;
}

static uint64_t unix_s(void *ctx)
{
	(void)ctx;
	return 1800000000;
}

static const struct csi_service_hooks hooks = {
	.admit = admit, .file_changed = file_changed,
};

/* name in the root: blocks of a seeded stream, the second half repeating the first. */
static uint64_t make_file(const char *name, uint32_t uid, uint32_t mode,
			  uint64_t seed, size_t len)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = mode, .uid = uid,
				.gid = uid };
	struct dstore_attr a;
	struct sc_prng r;
	uint8_t *buf = fuzz_alloc(len);

	sc_prng_seed(&r, seed);
	sc_prng_fill(&r, buf, len / 2);
	memcpy(buf + len / 2, buf, len - len / 2);
	FUZZ_CHECK(dstore_create(F.ds, DSTORE_ROOT_INO, name, &n, &a) == 0,
		   "%s", name);
	FUZZ_CHECK(dstore_write(F.ds, a.ino, 0, buf, len, true, NULL) ==
		   (ssize_t)len, "%s", name);
	free(buf);
	return a.ino;
}

/* The file id field of args (message m), or NULL if it has none. */
static uint64_t *file_field(enum csi_msg m, void *args)
{
	switch (m) {
	case CSI_MSG_GETHASHES_ARGS:
		return &((struct csi_gethashes_args *)args)->file;
	case CSI_MSG_READ_ARGS:
		return &((struct csi_read_args *)args)->file;
	case CSI_MSG_WRITE_ARGS:
		return &((struct csi_write_args *)args)->file;
	case CSI_MSG_COMMIT_ARGS:
		return &((struct csi_commit_args *)args)->file;
	default:
		return NULL;
	}
}

/* One call as the RPC server makes it; the result is checked, then freed. */
static void call(const struct csi_proc_info *p, const void *args,
		 const struct sockaddr_in *from,
		 const struct sc_rpc_auth_sys *cred, void *res)
{
	struct sc_rpc_request rq = {
		.peer = (const struct sockaddr *)from, .auth_sys = cred,
		.proc = p, .args = args, .res = res,
	};
	size_t len;
	int rc;

	memset(res, 0, csi_msgs[p->res].size);
	if (csi_service_handle(F.svc, &rq) == 0) {
		rc = csi_encode(p->res, res, NULL, 0, &len);
		FUZZ_CHECK(rc == 0, "%s: its result does not encode (%d)",
			   p->name, rc);
		FUZZ_CHECK(len <= SC_RPC_MAX_RECORD_DEFAULT,
			   "%s: a %zu-byte result", p->name, len);
	}
	if (p->res == CSI_MSG_READ_RES && ((struct csi_read_res *)res)->status
	    == CSI_OK) {
		const struct csi_read_res *r = res;
		uint8_t block[BS];

		for (uint32_t i = 0; i < r->nblocks; i++)
			if (r->blocks[i].kind == CSI_RK_DATA)
				FUZZ_CHECK(sc_block_verify(F.hs, BS,
							   &r->blocks[i].hash,
							   r->blocks[i].data.p,
							   r->blocks[i].data.len,
							   block) == 0,
					   "READ block %u: bytes other than its hash's", i);
	}
	sc_rpc_req_release(&rq);
}

static int remove_one(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

/* At exit (libFuzzer's too): the store and its directory go. */
static void teardown(void)
{
	csi_service_free(F.svc);
	sc_hasher_free(F.hs);
	dstore_close(F.ds);
	nftw(F.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	struct csi_service_config cfg = {
		.features = CSI_SERVICE_FEATURES, .max_blocks = 256,
		.tracker_entries = 4096, .hooks = &hooks,
		.clock_ms = clock_ms, .unix_s = unix_s,
	};
	struct dstore_params dp;
	char err[256];
	unsigned int i, n;

	snprintf(F.dir, sizeof(F.dir), "%s/fuzz-csi-service.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	FUZZ_CHECK(mkdtemp(F.dir) != NULL, "mkdtemp %s", F.dir);
	dstore_params_default(&dp);
	dp.block_size = BS;
	dp.map_size = 256ull << 20;
	dp.container_size = 64ull << 20;
	dp.reclaim_interval_ms = 0;
	FUZZ_CHECK(dstore_open(F.dir, &dp, &F.ds, err, sizeof(err)) == 0,
		   "%s", err);
	atexit(teardown);
	F.ino[0] = make_file("shared", 1000, 0644, 1, FILE_BLOCKS * BS);
	F.ino[1] = make_file("private", 0, 0600, 1, FILE_BLOCKS * BS);
	F.ino[2] = make_file("tail", 1000, 0664, 2, 8 * BS + 1000);
	F.hs = sc_hasher_new();
	F.svc = csi_service_new(F.ds, &cfg);
	FUZZ_CHECK(F.hs && F.svc, "service");
	n = fuzz_procs(F.procs);
	for (i = 0; i < n; i++)
		if (F.procs[i]->prog == CSI_PROG)
			F.procs[F.nprocs++] = F.procs[i];
	for (i = 0; i < 4; i++) {
		F.addr[i].sin_family = AF_INET;
		F.addr[i].sin_port = htons(700 + i);
		F.addr[i].sin_addr.s_addr = htonl(0x0a000001 + (i & 1));
	}
	for (i = 0; i < HOSTS; i++) {
		struct csi_hello_args ha = { .features = CSI_SERVICE_FEATURES };
		struct csi_hello_res hr;

		memset(ha.host_uuid, 0x11 * (int)(i + 1), sizeof(ha.host_uuid));
		ha.peer.family = CSI_AF_INET;
		memcpy(ha.peer.addr, &F.addr[i & 1].sin_addr, 4);
		ha.peer.port = 20491;
		call(csi_proc_find(CSI_PROG, CSI_PROC_HELLO), &ha,
		     &F.addr[i & 1], &callers[0], &hr);
		FUZZ_CHECK(hr.status == CSI_OK, "HELLO %u: %u", i, hr.status);
		F.host[i].host = hr.host;
		F.host[i].epoch = hr.epoch;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static bool ready;
	size_t pos = 0;

	if (!ready) {
		setup();
		ready = true;
	}
	for (unsigned int c = 0; c < MAX_CALLS && len - pos >= 4; c++) {
		const struct csi_proc_info *p = F.procs[data[pos] % F.nprocs];
		uint8_t how = data[pos + 1];
		size_t n = (size_t)data[pos + 2] << 8 | data[pos + 3];
		unsigned int who = (how >> 3) & 3;
		void *args, *arena, *res;

		pos += 4;
		if (n > len - pos)
			n = len - pos;
		if (p->args == CSI_MSG_VOID ||
		    fuzz_decode(p->args, data + pos, n, &args, &arena)) {
			pos += n;
			continue;
		}
		pos += n;
		if ((how & 1) && has_hdr(p->args)) {
			struct csi_reqhdr *h = args;

			h->host = F.host[(how >> 1) & 3].host;
			h->epoch = F.host[(how >> 1) & 3].epoch;
		}
		if ((how & 0x80) && file_field(p->args, args)) {
			uint64_t *f = file_field(p->args, args);

			*f = F.ino[*f % FILES];
		}
		res = fuzz_alloc(csi_msgs[p->res].size);
		call(p, args, &F.addr[(how >> 5) & 3],
		     who < 3 ? &callers[who] : NULL, res);
		free(res);
		free(arena);
		free(args);
	}
	return 0;
}

/* Seeds: calls appended to a buffer, in the input's format. */
struct seed_buf {
	uint8_t b[1 << 16];
	size_t len;
};

/* The index in an input of procedure proc of CSI_PROG. */
static uint8_t proc_index(uint32_t proc)
{
	const struct csi_proc_info *procs[FUZZ_MAX_PROCS];
	unsigned int n = fuzz_procs(procs), k = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (procs[i]->prog != CSI_PROG)
			continue;
		if (procs[i]->proc == proc)
			return (uint8_t)k;
		k++;
	}
	FUZZ_CHECK(0, "no procedure %u", proc);
	return 0;
}

static void seed_add(struct seed_buf *sb, uint32_t proc, uint8_t how,
		     const uint8_t *args, size_t len)
{
	FUZZ_CHECK(len <= 0xffff && sb->len + 4 + len <= sizeof(sb->b),
		   "a %zu-byte seed call", len);
	sb->b[sb->len++] = proc_index(proc);
	sb->b[sb->len++] = how;
	sb->b[sb->len++] = (uint8_t)(len >> 8);
	sb->b[sb->len++] = (uint8_t)len;
	memcpy(sb->b + sb->len, args, len);
	sb->len += len;
}

static void seed_call(struct seed_buf *sb, uint32_t proc, uint8_t how,
		      enum csi_msg m, const void *args)
{
	uint8_t enc[1 << 14];
	size_t len;

	FUZZ_CHECK(csi_encode(m, args, enc, sizeof(enc), &len) == 0,
		   "encoding a seed's %s", csi_msgs[m].name);
	seed_add(sb, proc, how, enc, len);
}

struct vector_ctx {
	const char *out;
	uint32_t proc;
};

/* A golden vector of a procedure's arguments: one call, as host 0. */
static int vector_seed(void *ctx, const char *name, const uint8_t *b,
		       size_t len)
{
	struct vector_ctx *v = ctx;
	struct seed_buf *sb;
	int rc;

	if (len > 0xffff)
		return 0;
	sb = fuzz_alloc(sizeof(*sb));
	sb->len = 0;
	seed_add(sb, v->proc, 1, b, len);
	rc = fuzz_write_seed(v->out, name, sb->b, sb->len);
	free(sb);
	return rc;
}

/*
 * The calls of a host at work on the store's files (as host 0, as the
 * files' owner, by index): hashes, a READ with data and one of the
 * other file (answered by hash), a WRITE of new and of held content,
 * COMMIT.
 */
static int work_seed(const char *out)
{
	const uint8_t how = 0x80 | (1 << 3) | 1;
	struct csi_gethashes_args gh = { .file = 0, .count = FILE_BLOCKS };
	struct csi_read_args rd = { .file = 0, .count = FILE_BLOCKS,
				    .flags = CSI_READ_WANT_DATA };
	struct csi_write_block wb[2] = {
		{ .kind = CSI_WK_DATA }, { .kind = CSI_WK_HASH },
	};
	struct csi_write_args wr = { .file = 2, .lbn = 8, .end = 10 * BS,
				     .stable = CSI_FILE_SYNC, .blocks = wb,
				     .nblocks = 2 };
	struct csi_commit_args cm = { .file = 2 };
	static uint8_t data[BS];
	struct seed_buf *sb = fuzz_alloc(sizeof(*sb));
	struct sc_hasher *hs = sc_hasher_new();
	int rc;

	sb->len = 0;
	memset(data, 0xa5, sizeof(data));
	FUZZ_CHECK(hs && !sc_hasher_digest(hs, data, BS, &wb[0].hash) &&
		   !sc_hasher_digest(hs, data, BS, &wb[1].hash), "hashing");
	wb[0].data.p = data;
	wb[0].data.len = BS;
	seed_call(sb, CSI_PROC_GET_HASHES, how, CSI_MSG_GETHASHES_ARGS, &gh);
	seed_call(sb, CSI_PROC_READ, how, CSI_MSG_READ_ARGS, &rd);
	rd.file = 2;
	rd.count = 9;
	seed_call(sb, CSI_PROC_READ, how, CSI_MSG_READ_ARGS, &rd);
	seed_call(sb, CSI_PROC_WRITE, how, CSI_MSG_WRITE_ARGS, &wr);
	seed_call(sb, CSI_PROC_COMMIT, how, CSI_MSG_COMMIT_ARGS, &cm);
	rc = fuzz_write_seed(out, "work", sb->b, sb->len);
	sc_hasher_free(hs);
	free(sb);
	return rc;
}

int fuzz_write_seeds(const char *vectors, const char *out)
{
	const struct csi_proc_info *procs[FUZZ_MAX_PROCS];
	unsigned int n = fuzz_procs(procs);

	for (unsigned int i = 0; i < n; i++) {
		struct vector_ctx v = { .out = out, .proc = procs[i]->proc };

		if (procs[i]->prog == CSI_PROG &&
		    procs[i]->args != CSI_MSG_VOID &&
		    fuzz_each_vector(vectors, procs[i]->args, vector_seed, &v))
			return -1;
	}
	return work_seed(out);
}
