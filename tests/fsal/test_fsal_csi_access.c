// SPDX-License-Identifier: BSD-2-Clause
/*
 * CSI lets in exactly whom NFS lets in, on the same export of a real
 * ganesha.nfsd (FSAL_DEDUP, Squash = root_squash, anonymous ids 4242):
 * each caller (root, a file's owner, a member of its group, anyone else)
 * reads and writes each file over NFSv3 (libnfs, AUTH_SYS) and over CSI
 * (the project's RPC client with the same AUTH_SYS credential), and the
 * two answers must agree, and agree with the table POSIX and the squash
 * give.  Among them the probe of the security issue: root reading and
 * writing a root-owned 0600 file on a root-squashed export.  A LOOKUP
 * through a directory the caller may not search is refused both ways.
 * A call with AUTH_NONE gets what NFS gives it: nothing where SecType
 * lacks none, the anonymous ids on an export (/anon) whose SecType is
 * none.  Exports whose rules CSI cannot enforce (/managed with
 * Manage_Gids, /krb5only) are NFS's only: CSI knows no such export.
 *
 * The files are made in the store directly (ganesha stopped), so that
 * they can have any owner: root squashed cannot make a root-owned file.
 * CSI_PORT (environment) is the port the server's config gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/csi_codec.h>
#include <seacache/hash.h>
#include <seacache/rpc_transport.h>

#include "dstore.h"
#include "nfs_harness.h"

#define EXPORT "/export"		/* ganesha-run's pseudo path */
/* ganesha-run --extra-export's, on the same store (CMakeLists.txt) */
#define EXPORT_ANON "/anon"		/* SecType = none */
#define EXPORT_MANAGED "/managed"	/* Manage_Gids = true */
#define EXPORT_KRB5 "/krb5only"		/* SecType = krb5 */
#define BS 4096u
#define ANON 4242u			/* the export's Anonymous_Uid/Gid */

struct who {
	const char *name;
	uint32_t uid, gid;
};

static const struct who callers[] = {
	{ "root", 0, 0 },
	{ "owner", 1000, 1000 },
	{ "group", 2000, 1000 },
	{ "other", 3000, 3000 },
};

#define NCALLERS (sizeof(callers) / sizeof(callers[0]))

struct file {
	const char *name;
	uint32_t uid, gid, mode;
	/* per caller: may read, may write (what NFS and CSI must both say) */
	bool read[NCALLERS], write[NCALLERS];
	uint64_t id;
};

/* root is squashed to ANON: the others' bits, unless ANON owns it */
static struct file files[] = {
	{ "root600", 0, 0, 0600, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, 0 },
	{ "user600", 1000, 1000, 0600, { 0, 1, 0, 0 }, { 0, 1, 0, 0 }, 0 },
	{ "user640", 1000, 1000, 0640, { 0, 1, 1, 0 }, { 0, 1, 0, 0 }, 0 },
	{ "user664", 1000, 1000, 0664, { 1, 1, 1, 1 }, { 0, 1, 1, 0 }, 0 },
	{ "anon600", ANON, ANON, 0600, { 1, 0, 0, 0 }, { 1, 0, 0, 0 }, 0 },
};

#define NFILES (sizeof(files) / sizeof(files[0]))

static struct sc_hasher *hasher;
static uint8_t block[BS];
static uint64_t host_id, epoch;

static uint16_t csi_port(void)
{
	return (uint16_t)atoi(nh_env("CSI_PORT"));
}

/* A CSI client calling as w; NULL: with AUTH_NONE. */
static struct sc_rpc_client *csi_as(const struct who *w)
{
	struct sc_rpc_auth_sys cred = { .uid = w ? w->uid : 0,
					.gid = w ? w->gid : 0 };
	struct sc_rpc_client_opts o = { .host = "127.0.0.1",
					.port = csi_port(), .prog = CSI_PROG,
					.timeout_ms = 20000, .cred = &cred,
					.auth_none = !w };
	struct sc_rpc_client *c;

	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	return c;
}

static void hdr_set(struct csi_reqhdr *h)
{
	memset(h, 0, sizeof(*h));
	h->host = host_id;
	h->epoch = epoch;
}

static uint32_t csi_lookup_in(struct sc_rpc_client *c, const char *export,
			      const char *path, uint64_t *id)
{
	struct csi_lookup_args a;
	struct csi_lookup_res r;
	struct sc_rpc_reply *rep;
	uint32_t st;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr);
	a.export_path.p = (const uint8_t *)export;
	a.export_path.len = (uint32_t)strlen(export);
	a.path.p = (const uint8_t *)path;
	a.path.len = (uint32_t)strlen(path);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_LOOKUP, &a, &r, &rep), 0);
	st = r.status;
	if (st == CSI_OK && id)
		*id = r.attr.file;
	sc_rpc_reply_free(rep);
	return st;
}

static uint32_t csi_lookup(struct sc_rpc_client *c, const char *path,
			   uint64_t *id)
{
	return csi_lookup_in(c, EXPORT, path, id);
}

/* READ of block 0 with its data: CSI_OK, with the bytes checked (expect). */
static uint32_t csi_read(struct sc_rpc_client *c, uint64_t id,
			 const uint8_t *expect)
{
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t st;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr);
	a.file = id;
	a.count = 1;
	a.flags = CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
	st = r.status;
	if (st == CSI_OK) {
		assert_int_equal(r.nblocks, 1);
		assert_int_equal(r.blocks[0].kind, CSI_RK_DATA);
		if (expect)
			assert_memory_equal(r.blocks[0].data.p, expect, BS);
	}
	sc_rpc_reply_free(rep);
	return st;
}

static uint32_t csi_write(struct sc_rpc_client *c, uint64_t id,
			  const uint8_t *data)
{
	struct csi_write_block b = { .kind = CSI_WK_DATA };
	struct csi_write_args a;
	struct csi_write_res r;
	struct sc_rpc_reply *rep;
	uint32_t st;

	assert_int_equal(sc_hasher_digest(hasher, data, BS, &b.hash), 0);
	b.data.p = data;
	b.data.len = BS;
	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr);
	a.file = id;
	a.end = BS;
	a.stable = CSI_FILE_SYNC;
	a.blocks = &b;
	a.nblocks = 1;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_WRITE, &a, &r, &rep), 0);
	st = r.status;
	sc_rpc_reply_free(rep);
	return st;
}

/* NFSv3: 0 when the first block was read (and equals expect, if given). */
static int nfsv3_read(struct nfs_context *nfs, const char *path,
		    const uint8_t *expect)
{
	uint8_t buf[BS];
	struct nfsfh *fh;
	int n;

	if (nfs_open(nfs, path, O_RDONLY, &fh))
		return -1;
	n = nfs_pread(nfs, fh, 0, BS, buf);
	nfs_close(nfs, fh);
	if (n != (int)BS)
		return -1;
	if (expect)
		assert_memory_equal(buf, expect, BS);
	return 0;
}

static int nfsv3_write(struct nfs_context *nfs, const char *path,
		     const uint8_t *data)
{
	struct nfsfh *fh;
	int n;

	if (nfs_open(nfs, path, O_WRONLY, &fh))
		return -1;
	n = nfs_pwrite(nfs, fh, 0, BS, data);
	if (nfs_fsync(nfs, fh))
		n = -1;
	nfs_close(nfs, fh);
	return n == (int)BS ? 0 : -1;
}

static struct nfs_context *nfs_as(const struct who *w)
{
	return w->uid ? nh_mount_user(3, (int)w->uid, (int)w->gid) :
			nh_mount(3);
}

/* The files, made in the store with ganesha stopped. */
static void make_files(void)
{
	struct dstore_new dir = { .type = DSTORE_DIR, .mode = 0755 };
	struct dstore_new priv = { .type = DSTORE_DIR, .mode = 0700,
				   .uid = 1000, .gid = 1000 };
	struct dstore_params p;
	struct dstore *ds;
	struct dstore_attr d, a, pd;
	char err[256];
	unsigned int i;

	assert_int_equal(nh_ctl("stop"), 0);
	dstore_params_default(&p);
	if (dstore_open(nh_env("SEACACHE_STORE"), &p, &ds, err, sizeof(err)))
		fail_msg("dstore_open: %s", err);
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "acc", &dir, &d),
			 0);
	for (i = 0; i < NFILES; i++) {
		struct dstore_new n = { .type = DSTORE_REG,
					.mode = files[i].mode,
					.uid = files[i].uid,
					.gid = files[i].gid };

		assert_int_equal(dstore_create(ds, d.ino, files[i].name, &n,
					       &a), 0);
		assert_int_equal(dstore_write(ds, a.ino, 0, block, BS, true,
					      NULL), (ssize_t)BS);
	}
	assert_int_equal(dstore_create(ds, d.ino, "priv", &priv, &pd), 0);
	{
		struct dstore_new n = { .type = DSTORE_REG, .mode = 0644,
					.uid = 1000, .gid = 1000 };

		assert_int_equal(dstore_create(ds, pd.ino, "in", &n, &a), 0);
	}
	dstore_close(ds);
	assert_int_equal(nh_ctl("start"), 0);
}

static void register_host(void)
{
	struct sc_rpc_client *c = csi_as(&callers[0]);
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, 0xac, sizeof(a.host_uuid));
	a.features = CSI_FEAT_READ_HASH;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_HELLO, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);	/* root squashed is admitted */
	host_id = r.host;
	epoch = r.epoch;
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(c);
}

/*
 * Every caller, every file, read then write, both ways.  A write changes
 * the file's first block to `next`, which later reads must then see.
 */
static void test_nfs_and_csi_agree(void **state)
{
	uint8_t cur[NFILES][BS], next[BS];
	char path[64];
	unsigned int w, f;

	(void)state;
	for (f = 0; f < NFILES; f++)
		memcpy(cur[f], block, BS);
	for (w = 0; w < NCALLERS; w++) {
		struct nfs_context *nfs = nfs_as(&callers[w]);
		struct sc_rpc_client *c = csi_as(&callers[w]);

		for (f = 0; f < NFILES; f++) {
			bool nfs_ok, csi_ok;

			snprintf(path, sizeof(path), "/acc/%s", files[f].name);
			assert_int_equal(csi_lookup(c, path + 1, &files[f].id),
					 CSI_OK);
			nfs_ok = nfsv3_read(nfs, path, cur[f]) == 0;
			csi_ok = csi_read(c, files[f].id, cur[f]) == CSI_OK;
			print_message("%-6s read  %-8s nfs %-6s csi %s\n",
				      callers[w].name, files[f].name,
				      nfs_ok ? "ok" : "denied",
				      csi_ok ? "ok" : "denied");
			assert_int_equal(nfs_ok, files[f].read[w]);
			assert_int_equal(csi_ok, files[f].read[w]);

			memset(next, 0x10 * (int)w + (int)f + 1, BS);
			nfs_ok = nfsv3_write(nfs, path, next) == 0;
			if (nfs_ok)
				memcpy(cur[f], next, BS);
			next[0] ^= 0xff;
			csi_ok = csi_write(c, files[f].id, next) == CSI_OK;
			if (csi_ok)
				memcpy(cur[f], next, BS);
			print_message("%-6s write %-8s nfs %-6s csi %s\n",
				      callers[w].name, files[f].name,
				      nfs_ok ? "ok" : "denied",
				      csi_ok ? "ok" : "denied");
			assert_int_equal(nfs_ok, files[f].write[w]);
			assert_int_equal(csi_ok, files[f].write[w]);
		}
		sc_rpc_client_close(c);
		nh_umount(nfs);
	}
	/* what the owner reads over NFS is the last write that was let in */
	{
		struct nfs_context *nfs = nfs_as(&callers[1]);

		for (f = 1; f < 4; f++) {
			snprintf(path, sizeof(path), "/acc/%s", files[f].name);
			assert_int_equal(nfsv3_read(nfs, path, cur[f]), 0);
		}
		nh_umount(nfs);
	}
}

/* A directory the caller may not search hides its files both ways. */
static void test_lookup_search(void **state)
{
	struct nfs_context *nfs;
	struct sc_rpc_client *c;
	struct nfs_stat_64 st;
	unsigned int w;

	(void)state;
	for (w = 0; w < NCALLERS; w++) {
		bool may = w == 1;	/* priv is 0700, the owner's */

		nfs = nfs_as(&callers[w]);
		c = csi_as(&callers[w]);
		assert_int_equal(nfs_stat64(nfs, "/acc/priv/in", &st) == 0,
				 may);
		assert_int_equal(csi_lookup(c, "acc/priv/in", NULL) == CSI_OK,
				 may);
		sc_rpc_client_close(c);
		nh_umount(nfs);
	}
}

/*
 * AUTH_NONE, as NFS takes it: refused by /export (SecType = sys), the
 * anonymous ids (4242) through /anon, which may read anon600 and no file
 * of another owner's.  No registration either without an export that
 * admits the call.
 */
static void test_auth_none(void **state)
{
	struct sc_rpc_client *c = csi_as(NULL);
	uint64_t anon600, user600;

	(void)state;
	assert_int_equal(csi_lookup(c, "acc/anon600", NULL), CSI_ERR_ACCESS);
	assert_int_equal(csi_lookup_in(c, EXPORT_ANON, "acc/anon600",
				       &anon600), CSI_OK);
	assert_int_equal(csi_lookup_in(c, EXPORT_ANON, "acc/user600",
				       &user600), CSI_OK);
	assert_int_equal(csi_read(c, anon600, NULL), CSI_OK);
	assert_int_equal(csi_read(c, user600, NULL), CSI_ERR_ACCESS);
	sc_rpc_client_close(c);
}

/*
 * The exports CSI cannot enforce are served over NFS and are no export
 * to CSI, for any caller; the server's log says why and what to change.
 */
static void test_unenforceable_exports(void **state)
{
	static const char *const nfs_only[] = { EXPORT_MANAGED, EXPORT_KRB5 };
	char line[1024], want[2][128];
	struct nfs_context *nfs;
	bool said[2] = { false, false };
	unsigned int i;
	FILE *log;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct sc_rpc_client *c = csi_as(&callers[0]);

		assert_int_equal(csi_lookup_in(c, nfs_only[i], "acc/user664",
					       NULL), CSI_ERR_NOENT);
		sc_rpc_client_close(c);
	}
	/* NFS serves the one it can (a krb5 export wants a ticket) */
	nfs = nh_try_mount_export(3, EXPORT_MANAGED);
	assert_non_null(nfs);
	assert_int_equal(nfsv3_read(nfs, "/acc/user664", NULL), 0);
	nh_umount(nfs);

	for (i = 0; i < 2; i++)
		snprintf(want[i], sizeof(want[i]),
			 "export %s is served over NFS only, not over CSI",
			 nfs_only[i]);
	log = fopen(nh_env("GANESHA_LOG"), "r");
	assert_non_null(log);
	while (fgets(line, sizeof(line), log))
		for (i = 0; i < 2; i++)
			said[i] |= strstr(line, want[i]) != NULL;
	fclose(log);
	assert_true(said[0] && said[1]);
}

static int setup(void **state)
{
	(void)state;
	hasher = sc_hasher_new();
	if (!hasher)
		return -1;
	memset(block, 0x5a, BS);
	make_files();
	register_host();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sc_hasher_free(hasher);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nfs_and_csi_agree),
		cmocka_unit_test(test_lookup_search),
		cmocka_unit_test(test_auth_none),
		cmocka_unit_test(test_unenforceable_exports),
	};

	return cmocka_run_group_tests_name("fsal_dedup_csi_access", tests,
					   setup, teardown);
}
