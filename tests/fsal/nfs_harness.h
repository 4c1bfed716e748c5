/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers for the FSAL integration tests: they run under scripts/ganesha-run,
 * which starts ganesha.nfsd and passes its address and controls in the
 * environment (NFS_URL_BASE, NFS_URL_OPTS, GANESHA_CTL, GANESHA_FSAL,
 * SEACACHE_STORE).  The client is libnfs.
 */
#ifndef SC_NFS_HARNESS_H
#define SC_NFS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nfsc/libnfs.h>

#include <seacache/prng.h>

#define NH_KIB ((size_t)1024)
#define NH_MIB ((size_t)1024 * 1024)
/* libnfs 4.0 fails NFSv4 WRITEs above ~3.9 KB in the client. */
#define NH_V4_WRITE_MAX 2048u

/* Environment variable NAME; a missing one fails the test program. */
const char *nh_env(const char *name);
/* true when the export is FSAL_DEDUP (GANESHA_FSAL=dedup) */
bool nh_is_dedup(void);

/*
 * Mount the export over NFSv3 or v4.  Auto-reconnect is off (a server that
 * went away fails the call instead of hanging) and libnfs's directory
 * cache is off.  Exits the program on failure.
 */
struct nfs_context *nh_mount(int version);
/* Like nh_mount, returning NULL and printing the reason on failure. */
struct nfs_context *nh_try_mount(int version, bool autoreconnect);
/* Like nh_try_mount, of another export of the server (its Pseudo path). */
struct nfs_context *nh_try_mount_export(int version, const char *export);
/* Like nh_mount, as user UID and group GID (AUTH_SYS; v4: a client of its own). */
struct nfs_context *nh_mount_user(int version, int uid, int gid);
void nh_umount(struct nfs_context *nfs);

/*
 * A suite's setup: mount NFSv3 into *v3 and, when V4 is not NULL, NFSv4
 * into *v4 (exits the program on failure), then remove DIR and make it
 * again, empty.  0, or -1 with the reason printed.
 */
int nh_suite_setup(const char *dir, struct nfs_context **v3, struct nfs_context **v4);
/* Unmount what nh_suite_setup mounted (V4 may be NULL) and clear the pointers. */
void nh_suite_teardown(struct nfs_context **v3, struct nfs_context **v4);

/* $GANESHA_CTL ARG (start, stop, restart, kill9); returns its exit status. */
int nh_ctl(const char *arg);
/* Run argv; stdout into *out (NUL-terminated, malloc'ed); exit status or -1. */
int nh_run(char *const argv[], char **out);

/*
 * seacachectl: path from $SEACACHECTL (set by CTest), NULL when the
 * program is not built.  Runs with ganesha stopped for the duration and
 * started again afterwards.
 */
const char *nh_seacachectl(void);
int nh_seacachectl_run(const char *cmd, char **out); /* "stats --json", "gc", "fsck" */
/* The value of "key": NUMBER in a flat JSON object; 0 if found. */
int nh_json_u64(const char *json, const char *key, uint64_t *v);
int nh_json_double(const char *json, const char *key, double *v);

/* Generated data: the core's seeded generator (seacache/prng.h). */
/* LEN pseudo-random bytes determined by SEED alone. */
void nh_fill_seeded(void *buf, size_t len, uint64_t seed);
/* A seed derived from two numbers. */
uint64_t nh_mix(uint64_t a, uint64_t b);

/*
 * Whole-file I/O.  Every call returns 0 or a negative errno and prints what
 * failed.  Writes go in pieces of PIECE bytes (v3: up to the server's
 * maximum; v4: at most NH_V4_WRITE_MAX), then COMMIT (fsync).
 */
int nh_write_file(struct nfs_context *nfs, const char *path, const void *buf,
		  size_t len, size_t piece);
int nh_pwrite_all(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off,
		  const void *buf, size_t len, size_t piece);
/* The server's READ maximum (64 KiB where libnfs does not know it). */
size_t nh_readmax(struct nfs_context *nfs);
/* Reads until LEN bytes or end of file; *got is the count read. */
int nh_pread_all(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off,
		 void *buf, size_t len, size_t piece, size_t *got);
/* Read PATH whole (its size from a stat) into a malloc'ed buffer. */
int nh_read_file(struct nfs_context *nfs, const char *path, void **buf,
		 size_t *len);
/* 0 when PATH holds exactly BUF[0..LEN); prints the first difference. */
int nh_check_file(struct nfs_context *nfs, const char *path, const void *buf,
		  size_t len);
/* Index of the first differing byte of a and b, or len when equal. */
size_t nh_first_diff(const void *a, const void *b, size_t len);

/*
 * WRITE3 of one piece (at most the server's maximum), raw RPC: how is
 * UNSTABLE, DATA_SYNC or FILE_SYNC; verf (or NULL) gets the reply's write
 * verifier.  Fails when the server wrote less or committed less than how.
 */
int nh_write3(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off, const void *buf,
	      uint32_t len, int how, char verf[8]);
int nh_write_filesync(struct nfs_context *nfs, struct nfsfh *fh,
		      uint64_t off, const void *buf, uint32_t len);
/* COMMIT3 of the whole file, raw RPC; verf gets the reply's verifier. */
int nh_commit3(struct nfs_context *nfs, struct nfsfh *fh, char verf[8]);

/* Handle bytes of an open file (libnfs 4.0 keeps them opaque). */
struct nh_fh {
	uint32_t len;
	const char *val;
};
struct nh_fh nh_fh_of(struct nfsfh *fh);
/* Block until the raw RPC call that sets *done completes. */
int nh_rpc_wait(struct nfs_context *nfs, const int *done);

/*
 * Raw READDIRPLUS3 from COOKIE with verifier VERF (8 bytes, updated) in
 * replies of at most MAXCOUNT bytes, until EOF: every entry but "." and ".."
 * into *ents (malloc'ed).  Returns the entry count or a negative errno;
 * *calls is the number of calls made.
 */
struct nh_dirent {
	char name[256];
	uint64_t fileid;
	uint64_t cookie;
};
int nh_readdirplus_all(struct nfs_context *nfs, struct nfsfh *dir, uint64_t cookie,
		       char verf[8], uint32_t maxcount, struct nh_dirent **ents, int *calls);

/* recursive removal of a directory tree on the export; ignores ENOENT */
int nh_rm_rf(struct nfs_context *nfs, const char *path);

#endif
