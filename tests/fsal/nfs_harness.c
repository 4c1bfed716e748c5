// SPDX-License-Identifier: BSD-2-Clause
#include "nfs_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

/*
 * libnfs 4.0's struct nfs_fh (include/libnfs-private.h): the public headers
 * only declare it, nfs_get_fh() returns it.
 */
struct nfs_fh {
	int len;
	char *val;
};

const char *nh_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr, "nfs-harness: %s is not set: run under scripts/ganesha-run\n",
			name);
		exit(1);
	}
	return v;
}

bool nh_is_dedup(void)
{
	return strcmp(nh_env("GANESHA_FSAL"), "dedup") == 0;
}

/* uid < 0: as root, the client's default; export NULL: ganesha-run's. */
static struct nfs_context *mount_as(int version, bool autoreconnect, int uid, int gid,
				    const char *export)
{
	char url[1024];
	struct nfs_context *nfs;
	struct nfs_url *u;

	if (export)
		snprintf(url, sizeof(url), "nfs://%s%s/?%s%s", nh_env("NFS_SERVER"),
			 export, nh_env("NFS_URL_OPTS"), version == 4 ? "&version=4" : "");
	else
		snprintf(url, sizeof(url), "%s/?%s%s", nh_env("NFS_URL_BASE"),
			 nh_env("NFS_URL_OPTS"), version == 4 ? "&version=4" : "");
	nfs = nfs_init_context();
	if (!nfs) {
		fprintf(stderr, "nfs-harness: nfs_init_context failed\n");
		return NULL;
	}
	u = nfs_parse_url_dir(nfs, url);
	if (!u) {
		fprintf(stderr, "nfs-harness: bad URL %s: %s\n", url, nfs_get_error(nfs));
		nfs_destroy_context(nfs);
		return NULL;
	}
	nfs_set_autoreconnect(nfs, autoreconnect ? -1 : 0);
	nfs_set_dircache(nfs, 0);
	if (uid >= 0) {
		char name[64];

		nfs_set_uid(nfs, uid);
		nfs_set_gid(nfs, gid);
		/* an NFSv4 client of its own, not the root context's again */
		snprintf(name, sizeof(name), "nfs-harness-%d-uid%d", (int)getpid(), uid);
		nfs4_set_client_name(nfs, name);
	}
	if (nfs_mount(nfs, u->server, u->path) != 0) {
		fprintf(stderr, "nfs-harness: mount %s (v%d) failed: %s\n", url, version,
			nfs_get_error(nfs));
		nfs_destroy_url(u);
		nfs_destroy_context(nfs);
		return NULL;
	}
	nfs_destroy_url(u);
	return nfs;
}

struct nfs_context *nh_try_mount(int version, bool autoreconnect)
{
	return mount_as(version, autoreconnect, -1, -1, NULL);
}

struct nfs_context *nh_try_mount_export(int version, const char *export)
{
	return mount_as(version, false, -1, -1, export);
}

struct nfs_context *nh_mount_user(int version, int uid, int gid)
{
	struct nfs_context *nfs = mount_as(version, false, uid, gid, NULL);

	if (!nfs)
		exit(1);
	return nfs;
}

struct nfs_context *nh_mount(int version)
{
	struct nfs_context *nfs = nh_try_mount(version, false);

	if (!nfs)
		exit(1);
	return nfs;
}

void nh_umount(struct nfs_context *nfs)
{
	if (nfs)
		nfs_destroy_context(nfs);
}

int nh_suite_setup(const char *dir, struct nfs_context **v3, struct nfs_context **v4)
{
	*v3 = nh_mount(3);
	if (v4)
		*v4 = nh_mount(4);
	if (nh_rm_rf(*v3, dir) < 0 || nfs_mkdir(*v3, dir) < 0) {
		fprintf(stderr, "nfs-harness: cannot make %s: %s\n", dir, nfs_get_error(*v3));
		return -1;
	}
	return 0;
}

void nh_suite_teardown(struct nfs_context **v3, struct nfs_context **v4)
{
	if (v4) {
		nh_umount(*v4);
		*v4 = NULL;
	}
	nh_umount(*v3);
	*v3 = NULL;
}

int nh_run(char *const argv[], char **out)
{
	int pfd[2] = { -1, -1 };
	size_t len = 0, cap = 0;
	char *buf = NULL;
	int status;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	if (out && pipe(pfd) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (out) {
			dup2(pfd[1], 1);
			close(pfd[0]);
			close(pfd[1]);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "nfs-harness: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (out) {
		close(pfd[1]);
		for (;;) {
			ssize_t n;

			if (cap - len < 4096) {
				char *nb = realloc(buf, cap + 65536);

				if (!nb)
					break;
				buf = nb;
				cap += 65536;
			}
			n = read(pfd[0], buf + len, cap - len - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			len += (size_t)n;
		}
		close(pfd[0]);
		if (!buf)
			buf = calloc(1, 1);
		if (buf)
			buf[len] = '\0';
		*out = buf;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int nh_ctl(const char *arg)
{
	char *argv[] = { (char *)nh_env("GANESHA_CTL"), (char *)arg, NULL };
	int rc = nh_run(argv, NULL);

	if (rc != 0)
		fprintf(stderr, "nfs-harness: ganesha-ctl %s: exit status %d\n", arg, rc);
	return rc;
}

const char *nh_seacachectl(void)
{
	const char *p = getenv("SEACACHECTL");

	if (!p || !*p || access(p, X_OK) != 0)
		return NULL;
	return p;
}

int nh_seacachectl_run(const char *cmd, char **out)
{
	const char *tool = nh_seacachectl();
	char *argv[8];
	char words[256];
	int argc = 0, rc;

	if (!tool) {
		fprintf(stderr, "nfs-harness: seacachectl is not built ($SEACACHECTL=%s)\n",
			getenv("SEACACHECTL") ? getenv("SEACACHECTL") : "");
		return -1;
	}
	snprintf(words, sizeof(words), "%s", cmd);
	argv[argc++] = (char *)tool;
	for (char *w = strtok(words, " "); w && argc < 6; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc++] = (char *)nh_env("SEACACHE_STORE");
	argv[argc] = NULL;
	/* The store is the server's while it runs: stop it for the tool. */
	if (nh_ctl("stop") != 0)
		return -1;
	rc = nh_run(argv, out);
	printf("# seacachectl %s %s: exit status %d\n", cmd, nh_env("SEACACHE_STORE"), rc);
	if (nh_ctl("start") != 0)
		return -1;
	return rc;
}

static const char *json_find(const char *json, const char *key)
{
	size_t kl = strlen(key);
	const char *p = json;

	while ((p = strchr(p, '"')) != NULL) {
		if (strncmp(p + 1, key, kl) == 0 && p[kl + 1] == '"') {
			p += kl + 2;
			while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
				p++;
			if (*p != ':')
				continue;
			p++;
			while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
				p++;
			return p;
		}
		p++;
	}
	return NULL;
}

int nh_json_u64(const char *json, const char *key, uint64_t *v)
{
	const char *p = json ? json_find(json, key) : NULL;
	char *end;

	if (!p)
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return (end == p || errno) ? -1 : 0;
}

int nh_json_double(const char *json, const char *key, double *v)
{
	const char *p = json ? json_find(json, key) : NULL;
	char *end;

	if (!p)
		return -1;
	*v = strtod(p, &end);
	return end == p ? -1 : 0;
}

/* --- generated data ------------------------------------------------------- */

uint64_t nh_mix(uint64_t a, uint64_t b)
{
	return sc_mix64(a ^ (b * 0x9e3779b97f4a7c15ull));
}

void nh_fill_seeded(void *buf, size_t len, uint64_t seed)
{
	struct sc_prng r;

	sc_prng_seed(&r, seed);
	sc_prng_fill(&r, buf, len);
}

/* --- file I/O ----------------------------------------------------------- */

size_t nh_first_diff(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	size_t i = 0;

	/* memcmp per 64 KiB, then bytewise in the differing piece */
	while (i < len) {
		size_t n = len - i < 65536 ? len - i : 65536;

		if (memcmp(x + i, y + i, n) != 0)
			break;
		i += n;
	}
	while (i < len && x[i] == y[i])
		i++;
	return i;
}

size_t nh_readmax(struct nfs_context *nfs)
{
	uint64_t m = nfs_get_readmax(nfs);

	/* libnfs 4.0 reports 0 over NFSv4 */
	return m ? (size_t)m : 64 * 1024;
}

int nh_pwrite_all(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off,
		  const void *buf, size_t len, size_t piece)
{
	const char *p = buf;

	while (len) {
		size_t n = len < piece ? len : piece;
		int rc = nfs_pwrite(nfs, fh, off, n, p);

		if (rc < 0) {
			fprintf(stderr, "nfs-harness: pwrite(%" PRIu64 ", %zu): %s\n", off, n,
				nfs_get_error(nfs));
			return rc;
		}
		if (rc == 0) {
			fprintf(stderr, "nfs-harness: pwrite(%" PRIu64 ", %zu) wrote nothing\n",
				off, n);
			return -EIO;
		}
		off += (uint64_t)rc;
		p += rc;
		len -= (size_t)rc;
	}
	return 0;
}

int nh_pread_all(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off,
		 void *buf, size_t len, size_t piece, size_t *got)
{
	char *p = buf;

	*got = 0;
	while (len) {
		size_t n = len < piece ? len : piece;
		int rc = nfs_pread(nfs, fh, off, n, p);

		if (rc < 0) {
			fprintf(stderr, "nfs-harness: pread(%" PRIu64 ", %zu): %s\n", off, n,
				nfs_get_error(nfs));
			return rc;
		}
		if (rc == 0)
			break;
		off += (uint64_t)rc;
		p += rc;
		len -= (size_t)rc;
		*got += (size_t)rc;
	}
	return 0;
}

int nh_write_file(struct nfs_context *nfs, const char *path, const void *buf,
		  size_t len, size_t piece)
{
	struct nfsfh *fh;
	int rc;

	rc = nfs_create(nfs, path, O_CREAT | O_TRUNC | O_RDWR, 0644, &fh);
	if (rc < 0) {
		fprintf(stderr, "nfs-harness: create %s: %s\n", path, nfs_get_error(nfs));
		return rc;
	}
	rc = nh_pwrite_all(nfs, fh, 0, buf, len, piece);
	if (rc == 0) {
		rc = nfs_fsync(nfs, fh);
		if (rc < 0)
			fprintf(stderr, "nfs-harness: commit %s: %s\n", path, nfs_get_error(nfs));
	}
	if (nfs_close(nfs, fh) < 0 && rc == 0)
		rc = -EIO;
	return rc;
}

int nh_read_file(struct nfs_context *nfs, const char *path, void **buf,
		 size_t *len)
{
	struct nfs_stat_64 st;
	struct nfsfh *fh;
	size_t got;
	char *b;
	int rc;

	rc = nfs_stat64(nfs, path, &st);
	if (rc < 0) {
		fprintf(stderr, "nfs-harness: stat %s: %s\n", path, nfs_get_error(nfs));
		return rc;
	}
	rc = nfs_open(nfs, path, O_RDONLY, &fh);
	if (rc < 0) {
		fprintf(stderr, "nfs-harness: open %s: %s\n", path, nfs_get_error(nfs));
		return rc;
	}
	b = malloc(st.nfs_size + 1);
	if (!b) {
		nfs_close(nfs, fh);
		return -ENOMEM;
	}
	rc = nh_pread_all(nfs, fh, 0, b, st.nfs_size, nh_readmax(nfs), &got);
	nfs_close(nfs, fh);
	if (rc < 0) {
		free(b);
		return rc;
	}
	*buf = b;
	*len = got;
	return 0;
}

int nh_check_file(struct nfs_context *nfs, const char *path, const void *buf,
		  size_t len)
{
	size_t got, d;
	void *b;
	int rc;

	rc = nh_read_file(nfs, path, &b, &got);
	if (rc < 0)
		return rc;
	if (got != len) {
		fprintf(stderr, "nfs-harness: %s: read %zu bytes, want %zu\n", path, got, len);
		free(b);
		return -EIO;
	}
	d = nh_first_diff(b, buf, len);
	if (d != len) {
		fprintf(stderr, "nfs-harness: %s: byte %zu is 0x%02x, want 0x%02x\n", path, d,
			((unsigned char *)b)[d], ((const unsigned char *)buf)[d]);
		free(b);
		return -EIO;
	}
	free(b);
	return 0;
}

/* --- raw RPC -------------------------------------------------------------- */

struct nh_fh nh_fh_of(struct nfsfh *fh)
{
	struct nfs_fh *f = nfs_get_fh(fh);
	struct nh_fh r = { (uint32_t)f->len, f->val };

	return r;
}

int nh_rpc_wait(struct nfs_context *nfs, const int *done)
{
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);

	while (!*done) {
		struct pollfd pfd = { rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0 };

		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (rpc_service(rpc, pfd.revents) < 0) {
			fprintf(stderr, "nfs-harness: rpc_service: %s\n", rpc_get_error(rpc));
			return -EIO;
		}
	}
	return 0;
}

struct write3_cb {
	int done;
	int status;
	uint32_t count;
	int committed;
	char verf[NFS3_WRITEVERFSIZE];
};

static void write3_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct write3_cb *cb = priv;
	WRITE3res *res = data;

	(void)rpc;
	cb->done = 1;
	if (status != RPC_STATUS_SUCCESS) {
		cb->status = -EIO;
		return;
	}
	if (res->status != NFS3_OK) {
		cb->status = nfsstat3_to_errno(res->status);
		return;
	}
	cb->count = res->WRITE3res_u.resok.count;
	cb->committed = res->WRITE3res_u.resok.committed;
	memcpy(cb->verf, res->WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

static const char *const how_name[] = { "UNSTABLE", "DATA_SYNC", "FILE_SYNC" };

int nh_write3(struct nfs_context *nfs, struct nfsfh *fh, uint64_t off, const void *buf,
	      uint32_t len, int how, char verf[8])
{
	struct nh_fh h = nh_fh_of(fh);
	struct write3_cb cb;
	WRITE3args args;
	int rc;

	memset(&cb, 0, sizeof(cb));
	memset(&args, 0, sizeof(args));
	args.file.data.data_len = h.len;
	args.file.data.data_val = (char *)h.val;
	args.offset = off;
	args.count = len;
	args.stable = (stable_how)how;
	args.data.data_len = len;
	args.data.data_val = (char *)buf;
	if (rpc_nfs3_write_async(nfs_get_rpc_context(nfs), write3_done, &args, &cb) != 0)
		return -EIO;
	rc = nh_rpc_wait(nfs, &cb.done);
	if (rc < 0)
		return rc;
	if (cb.status < 0) {
		fprintf(stderr, "nfs-harness: %s write(%" PRIu64 ", %u): %s\n", how_name[how], off,
			len, strerror(-cb.status));
		return cb.status;
	}
	/* the server may commit more than asked, never less */
	if (cb.count != len || cb.committed < how) {
		fprintf(stderr, "nfs-harness: %s write(%" PRIu64 ", %u): count %u, committed %d\n",
			how_name[how], off, len, cb.count, cb.committed);
		return -EIO;
	}
	if (verf)
		memcpy(verf, cb.verf, NFS3_WRITEVERFSIZE);
	return 0;
}

int nh_write_filesync(struct nfs_context *nfs, struct nfsfh *fh,
		      uint64_t off, const void *buf, uint32_t len)
{
	return nh_write3(nfs, fh, off, buf, len, FILE_SYNC, NULL);
}

struct commit3_cb {
	int done;
	int status;
	char verf[NFS3_WRITEVERFSIZE];
};

static void commit3_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct commit3_cb *cb = priv;
	COMMIT3res *res = data;

	(void)rpc;
	cb->done = 1;
	if (status != RPC_STATUS_SUCCESS)
		cb->status = -EIO;
	else if (res->status != NFS3_OK)
		cb->status = nfsstat3_to_errno(res->status);
	else
		memcpy(cb->verf, res->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

int nh_commit3(struct nfs_context *nfs, struct nfsfh *fh, char verf[8])
{
	struct nh_fh h = nh_fh_of(fh);
	struct commit3_cb cb;
	COMMIT3args args;
	int rc;

	memset(&cb, 0, sizeof(cb));
	memset(&args, 0, sizeof(args));
	args.file.data.data_len = h.len;
	args.file.data.data_val = (char *)h.val;
	if (rpc_nfs3_commit_async(nfs_get_rpc_context(nfs), commit3_done, &args, &cb) != 0)
		return -EIO;
	rc = nh_rpc_wait(nfs, &cb.done);
	if (rc < 0)
		return rc;
	if (cb.status < 0) {
		fprintf(stderr, "nfs-harness: COMMIT: %s\n", strerror(-cb.status));
		return cb.status;
	}
	memcpy(verf, cb.verf, NFS3_WRITEVERFSIZE);
	return 0;
}

struct rdp_state {
	int done;
	int status;
	int eof;
	char verf[NFS3_COOKIEVERFSIZE];
	uint64_t last_cookie;
	struct nh_dirent *ents;
	int n, cap;
};

static void rdp_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct rdp_state *st = priv;
	READDIRPLUS3res *res = data;

	(void)rpc;
	st->done = 1;
	if (status != RPC_STATUS_SUCCESS) {
		st->status = -EIO;
		return;
	}
	if (res->status != NFS3_OK) {
		st->status = nfsstat3_to_errno(res->status);
		return;
	}
	memcpy(st->verf, res->READDIRPLUS3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
	st->eof = res->READDIRPLUS3res_u.resok.reply.eof;
	for (entryplus3 *e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
		st->last_cookie = e->cookie;
		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		if (st->n == st->cap) {
			int cap = st->cap ? 2 * st->cap : 256;
			struct nh_dirent *n = realloc(st->ents, (size_t)cap * sizeof(*n));

			if (!n) {
				st->status = -ENOMEM;
				return;
			}
			st->ents = n;
			st->cap = cap;
		}
		snprintf(st->ents[st->n].name, sizeof(st->ents[0].name), "%s", e->name);
		st->ents[st->n].fileid = e->fileid;
		st->ents[st->n].cookie = e->cookie;
		st->n++;
	}
}

int nh_readdirplus_all(struct nfs_context *nfs, struct nfsfh *dir, uint64_t cookie,
		       char verf[8], uint32_t maxcount, struct nh_dirent **ents, int *calls)
{
	struct nh_fh h = nh_fh_of(dir);
	struct rdp_state st;

	memset(&st, 0, sizeof(st));
	memcpy(st.verf, verf, NFS3_COOKIEVERFSIZE);
	*calls = 0;
	while (!st.eof) {
		READDIRPLUS3args a;
		int rc;

		memset(&a, 0, sizeof(a));
		a.dir.data.data_len = h.len;
		a.dir.data.data_val = (char *)h.val;
		a.cookie = cookie;
		memcpy(a.cookieverf, st.verf, NFS3_COOKIEVERFSIZE);
		a.dircount = maxcount / 4;
		a.maxcount = maxcount;
		st.done = 0;
		if (rpc_nfs3_readdirplus_async(nfs_get_rpc_context(nfs), rdp_done, &a, &st) != 0) {
			free(st.ents);
			return -EIO;
		}
		rc = nh_rpc_wait(nfs, &st.done);
		if (rc == 0)
			rc = st.status;
		if (rc < 0) {
			fprintf(stderr, "nfs-harness: READDIRPLUS from cookie %" PRIu64 ": %s\n",
				cookie, strerror(-rc));
			free(st.ents);
			return rc;
		}
		(*calls)++;
		if (!st.eof && st.last_cookie == cookie) {
			fprintf(stderr, "nfs-harness: READDIRPLUS from cookie %" PRIu64
				": no progress and no EOF\n", cookie);
			free(st.ents);
			return -EIO;
		}
		cookie = st.last_cookie;
	}
	memcpy(verf, st.verf, NFS3_COOKIEVERFSIZE);
	*ents = st.ents;
	return st.n;
}

int nh_rm_rf(struct nfs_context *nfs, const char *path)
{
	struct nfs_stat_64 st;
	struct nfsdirent *e;
	struct nfsdir *d;
	int rc;

	rc = nfs_lstat64(nfs, path, &st);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	if (!S_ISDIR(st.nfs_mode))
		return nfs_unlink(nfs, path);
	rc = nfs_opendir(nfs, path, &d);
	if (rc < 0)
		return rc;
	while ((e = nfs_readdir(nfs, d)) != NULL) {
		char sub[4096];

		if (!strcmp(e->name, ".") || !strcmp(e->name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->name);
		rc = nh_rm_rf(nfs, sub);
		if (rc < 0) {
			nfs_closedir(nfs, d);
			return rc;
		}
	}
	nfs_closedir(nfs, d);
	return nfs_rmdir(nfs, path);
}
