/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal NFSv4.1/4.2 client for the FSAL tests: raw COMPOUNDs over one
 * TCP connection to the server ganesha-run started (NFS_SERVER, NFS_PORT),
 * AUTH_SYS as root, one session with one slot.  It sends what libnfs 4.0
 * cannot: share reservations with deny modes from several open owners,
 * OPEN_DOWNGRADE, and NFSv4.2's ALLOCATE, DEALLOCATE and SEEK.
 *
 * Every operation returns the NFSv4 status of the first operation that
 * failed (NFS4_OK, 0, when all succeeded), or a negative errno when the
 * call could not be made or its reply not understood (printed).
 */
#ifndef SC_NFS4_CLIENT_H
#define SC_NFS4_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* nfsstat4 values the tests name (RFC 8881 section 15) */
#define N4_OK 0
#define N4ERR_NOENT 2
#define N4ERR_IO 5
#define N4ERR_NXIO 6
#define N4ERR_ACCESS 13
#define N4ERR_EXIST 17
#define N4ERR_ISDIR 21
#define N4ERR_INVAL 22
#define N4ERR_FBIG 27
#define N4ERR_NAMETOOLONG 63
#define N4ERR_NOTSUPP 10004
#define N4ERR_SERVERFAULT 10006
#define N4ERR_DENIED 10010
#define N4ERR_LOCKED 10012
#define N4ERR_SHARE_DENIED 10015
#define N4ERR_OPENMODE 10038
#define N4ERR_BAD_STATEID 10025
#define N4ERR_SYMLINK 10029
#define N4ERR_LOCKS_HELD 10037
#define N4ERR_BADSESSION 10052

/* OPEN4_SHARE_ACCESS_* and OPEN4_SHARE_DENY_* */
#define N4_ACCESS_READ 1u
#define N4_ACCESS_WRITE 2u
#define N4_ACCESS_BOTH 3u
#define N4_DENY_NONE 0u
#define N4_DENY_READ 1u
#define N4_DENY_WRITE 2u
#define N4_DENY_BOTH 3u

/* data_content4 */
#define N4_CONTENT_DATA 0u
#define N4_CONTENT_HOLE 1u

struct n4_fh {
	uint32_t len;
	uint8_t val[128];
};

struct n4_stateid {
	uint32_t seqid;
	uint8_t other[12];
};

struct n4_client;

/*
 * Connects and sets up a client (EXCHANGE_ID with owner name NAME, which
 * tells clients apart), a session and RECLAIM_COMPLETE, for minor
 * version MINOR (1 or 2).  NULL on failure (printed).
 */
struct n4_client *n4_connect(uint32_t minor, const char *name);
/* DESTROY_SESSION, DESTROY_CLIENTID, close. */
void n4_disconnect(struct n4_client *c);

/* The handle of PATH ("/export/dir/file"), from the root of the server. */
int n4_lookup(struct n4_client *c, const char *path, struct n4_fh *fh);

/*
 * OPEN NAME in directory DIR for open owner OWNER (a string) with share
 * ACCESS and DENY; CREATE: UNCHECKED4 create, mode 0644.  *sid, *fh: the
 * open's stateid and the file's handle.
 */
int n4_open(struct n4_client *c, const struct n4_fh *dir, const char *name,
	    const char *owner, uint32_t access, uint32_t deny, bool create,
	    struct n4_stateid *sid, struct n4_fh *fh);
/* OPEN with a choice of creation: EXCLUSIVE41 takes an 8-byte VERIFIER. */
enum n4_create { N4_NOCREATE, N4_UNCHECKED, N4_GUARDED, N4_EXCLUSIVE41 };
int n4_open_how(struct n4_client *c, const struct n4_fh *dir, const char *name,
		const char *owner, uint32_t access, uint32_t deny,
		enum n4_create how, const uint8_t *verifier,
		struct n4_stateid *sid, struct n4_fh *fh);
int n4_close(struct n4_client *c, const struct n4_fh *fh,
	     struct n4_stateid *sid);
int n4_open_downgrade(struct n4_client *c, const struct n4_fh *fh,
		      struct n4_stateid *sid, uint32_t access, uint32_t deny);

/* WRITE of LEN bytes (at most 64 KiB) at OFF: FILE_SYNC or UNSTABLE. */
int n4_write(struct n4_client *c, const struct n4_fh *fh,
	     const struct n4_stateid *sid, uint64_t off, const void *buf,
	     uint32_t len, bool stable);
/* READ of at most LEN bytes (at most 64 KiB); *got: how many came. */
int n4_read(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *sid, uint64_t off, void *buf,
	    uint32_t len, uint32_t *got);

/*
 * Byte-range locks (WRITE or READ) of LEN bytes at OFF.  LOCK: a first
 * lock of lock owner OWNER (*lock_sid unset, NEW_OWNER) comes from the
 * open OPEN_SID; a later one (!NEW_OWNER) from *lock_sid, which it
 * updates.  N4ERR_DENIED when another owner holds a conflicting lock.
 */
int n4_lock(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *open_sid, const char *owner, bool new_owner,
	    bool write, uint64_t off, uint64_t len, struct n4_stateid *lock_sid);
int n4_lockt(struct n4_client *c, const struct n4_fh *fh, const char *owner,
	     bool write, uint64_t off, uint64_t len);
int n4_locku(struct n4_client *c, const struct n4_fh *fh,
	     struct n4_stateid *lock_sid, uint64_t off, uint64_t len);

/* NFSv4.2 (minor version 2) */
int n4_allocate(struct n4_client *c, const struct n4_fh *fh,
		const struct n4_stateid *sid, uint64_t off, uint64_t len);
int n4_deallocate(struct n4_client *c, const struct n4_fh *fh,
		  const struct n4_stateid *sid, uint64_t off, uint64_t len);
/* SEEK from OFF to N4_CONTENT_DATA or N4_CONTENT_HOLE. */
int n4_seek(struct n4_client *c, const struct n4_fh *fh,
	    const struct n4_stateid *sid, uint64_t off, uint32_t what,
	    bool *eof, uint64_t *found);

/* The file's size (GETATTR). */
int n4_size(struct n4_client *c, const struct n4_fh *fh, uint64_t *size);

/* A name for an nfsstat4 value the tests use ("NFS4ERR_SHARE_DENIED"). */
const char *n4_status_name(int status);

#endif
