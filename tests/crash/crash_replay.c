// SPDX-License-Identifier: BSD-2-Clause
/*
 * Crash states from a crash log: what the disk may hold after a power cut
 * at a point of the log (the first `cut` records happened, the rest did
 * not).  The model, a weak ext4 (data=ordered) one, so that anything the
 * store gets right here it gets right on a real disk:
 *
 *   - A file's data changes (write, truncate, punch, zero range, allocate)
 *     are durable once an fsync or fdatasync of that file, or a sync(),
 *     has returned after them; a write to an O_DSYNC fd (or with
 *     RWF_DSYNC) is durable when it returns.  sync_file_range is not a
 *     barrier (it waits for no disk cache and no metadata).
 *   - Before that, each change may independently be lost or kept, in
 *     whatever combination (the page cache writes back in any order), and
 *     a kept write may be torn: each of its 512-byte sectors (aligned in
 *     the file) kept or lost on its own.  What is kept is applied in log
 *     order, so a later write to the same bytes wins.  A write past the
 *     end extends the file; lost writes before it read as zeros.
 *   - Directory changes (create, mkdir, unlink, rmdir, rename) are
 *     durable once the directory holding the entry is fsync'ed, or the
 *     created or renamed file itself (ext4 commits the entry with the
 *     inode); an fsync of a file also makes the creation of its not yet
 *     durable ancestor directories durable (ext4's journal commit carries
 *     them).  A directory's changes reach the disk in order: if one is
 *     lost, every later one in that directory is lost too.  A rename
 *     belongs to its source directory's order.
 *   - A change to a file whose creation is lost is lost with it.
 *
 * With posix_dirs, a directory entry is durable only once its directory
 * was fsync'ed (what POSIX promises; ext4, XFS and btrfs give more).
 *
 * The recorder refuses what this model cannot hold (CL_UNTRACEABLE).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <seacache/prng.h>

#include "crash_replay.h"
#include "crashlog.h"

#define SECTOR 512u
#define NEVER SIZE_MAX

struct rec {
	uint32_t op, flags;
	uint64_t off, len;
	uint64_t end;		/* the log's size once this record is in it */
	const char *path, *path2;	/* NUL-terminated copies */
	const uint8_t *data;
	size_t obj;		/* the file or dir it changes */
	size_t dir;		/* directory changes: the directory */
	size_t dir2;		/* rename: the target directory */
	/* the barrier making it durable, or NEVER: [0] ext4, [1] POSIX */
	size_t persisted_at[2];
};

struct obj {
	char *path;		/* where it lives when first seen or made */
	size_t parent;		/* as of now (pass 1); SIZE_MAX: the root */
	bool dir;
	bool initial;		/* in the initial directory, not created */
	size_t create_op;	/* NEVER for initial objects */
};

struct crash_log {
	uint8_t *buf;
	struct rec *r;
	size_t n;
	struct obj *o;
	size_t n_obj, cap_obj;
	/* pass 1's name table: path -> object, for the live names */
	struct name {
		char *path;
		size_t obj;
	} *names;
	size_t n_names, cap_names;
};

static bool is_dir_op(uint32_t op)
{
	return op == CL_CREATE || op == CL_MKDIR || op == CL_UNLINK ||
	       op == CL_RMDIR || op == CL_RENAME;
}

static bool is_data_op(uint32_t op)
{
	return op == CL_WRITE || op == CL_TRUNCATE || op == CL_PUNCH ||
	       op == CL_ZERO || op == CL_EXTEND;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int obj_new(struct crash_log *l, const char *path, size_t parent,
		   bool dir, size_t create_op, size_t *out)
{
	if (l->n_obj == l->cap_obj) {
		size_t cap = l->cap_obj ? 2 * l->cap_obj : 64;
		struct obj *o = realloc(l->o, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		l->o = o;
		l->cap_obj = cap;
	}
	l->o[l->n_obj] = (struct obj){ .path = strdup(path), .parent = parent,
				       .dir = dir, .initial = create_op == NEVER,
				       .create_op = create_op };
	if (!l->o[l->n_obj].path)
		return -ENOMEM;
	*out = l->n_obj++;
	return 0;
}

static struct name *name_find(struct crash_log *l, const char *path)
{
	for (size_t i = 0; i < l->n_names; i++)
		if (!strcmp(l->names[i].path, path))
			return &l->names[i];
	return NULL;
}

static int name_bind(struct crash_log *l, const char *path, size_t obj)
{
	struct name *n = name_find(l, path);

	if (n) {
		n->obj = obj;
		return 0;
	}
	if (l->n_names == l->cap_names) {
		size_t cap = l->cap_names ? 2 * l->cap_names : 64;
		struct name *nn = realloc(l->names, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		l->names = nn;
		l->cap_names = cap;
	}
	l->names[l->n_names].path = strdup(path);
	if (!l->names[l->n_names].path)
		return -ENOMEM;
	l->names[l->n_names++].obj = obj;
	return 0;
}

static void name_unbind(struct crash_log *l, const char *path)
{
	struct name *n = name_find(l, path);

	if (!n)
		return;
	free(n->path);
	*n = l->names[--l->n_names];
}

/* The directory holding path ("" for a top-level name). */
static void dir_of(const char *path, char *out, size_t len)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) : 0;

	if (n >= len)
		n = len - 1;
	memcpy(out, path, n);
	out[n] = '\0';
}

/* The object path names now; an initial one when never seen. */
static int lookup(struct crash_log *l, const char *path, bool dir,
		  size_t *out)
{
	struct name *n = name_find(l, path);
	char parent[PATH_MAX];
	size_t p;
	int rc;

	if (n) {
		*out = n->obj;
		return 0;
	}
	if (!path[0])
		return -EINVAL;	/* the root is bound at load */
	dir_of(path, parent, sizeof(parent));
	rc = lookup(l, parent, true, &p);
	if (!rc)
		rc = obj_new(l, path, p, dir, NEVER, out);
	return rc ? rc : name_bind(l, path, *out);
}

/* Pass 1: every record's object and directory, as names resolve then. */
static int resolve(struct crash_log *l)
{
	char d[PATH_MAX];
	size_t root;
	int rc = obj_new(l, "", SIZE_MAX, true, NEVER, &root);

	if (!rc)
		rc = name_bind(l, "", root);
	for (size_t i = 0; !rc && i < l->n; i++) {
		struct rec *r = &l->r[i];

		r->obj = r->dir = r->dir2 = SIZE_MAX;
		if (r->op == CL_MARK || r->op == CL_SYNC)
			continue;
		if (r->op == CL_CREATE || r->op == CL_MKDIR) {
			dir_of(r->path, d, sizeof(d));
			rc = lookup(l, d, true, &r->dir);
			if (!rc)
				rc = obj_new(l, r->path, r->dir, r->op == CL_MKDIR,
					     i, &r->obj);
			if (!rc)
				rc = name_bind(l, r->path, r->obj);
			continue;
		}
		rc = lookup(l, r->path, r->op == CL_RMDIR, &r->obj);
		if (rc || !is_dir_op(r->op))
			continue;
		dir_of(r->path, d, sizeof(d));
		rc = lookup(l, d, true, &r->dir);
		if (rc)
			continue;
		if (r->op != CL_RENAME) {
			name_unbind(l, r->path);
			continue;
		}
		dir_of(r->path2, d, sizeof(d));
		rc = lookup(l, d, true, &r->dir2);
		if (rc)
			continue;
		/* the object and everything below it move */
		{
			size_t ol = strlen(r->path);
			char np[PATH_MAX];

			for (size_t k = 0; k < l->n_names; k++) {
				struct name *nm = &l->names[k];

				if (strncmp(nm->path, r->path, ol) ||
				    nm->path[ol] != '/')
					continue;
				snprintf(np, sizeof(np), "%s%s", r->path2,
					 nm->path + ol);
				free(nm->path);
				nm->path = strdup(np);
				if (!nm->path)
					return -ENOMEM;
			}
		}
		name_unbind(l, r->path);
		rc = name_bind(l, r->path2, r->obj);
		l->o[r->obj].parent = r->dir2;
	}
	return rc;
}

/*
 * Pass 2: when each change became durable; posix: a directory entry only
 * with its directory's fsync.
 */
static int persistence(struct crash_log *l, bool posix)
{
	size_t *pending = malloc((l->n + 1) * sizeof(*pending));
	size_t *dmin, np = 0;
	bool *anc;

	if (!pending)
		return -ENOMEM;
	anc = calloc(l->n_obj, sizeof(*anc));
	dmin = malloc(l->n_obj * sizeof(*dmin));
	if (!anc || !dmin) {
		free(pending);
		free(anc);
		free(dmin);
		return -ENOMEM;
	}
	for (size_t i = 0; i < l->n; i++) {
		struct rec *r = &l->r[i];
		size_t keep = 0;

		r->persisted_at[posix] = NEVER;
		if (is_data_op(r->op) || is_dir_op(r->op)) {
			if (r->op == CL_WRITE && (r->flags & CL_F_DURABLE))
				r->persisted_at[posix] = i;
			else
				pending[np++] = i;
			continue;
		}
		if (r->op != CL_FSYNC && r->op != CL_SYNC)
			continue;
		/* the synced object's ancestors, whose creation it carries */
		memset(anc, 0, l->n_obj * sizeof(*anc));
		if (r->op == CL_FSYNC)
			for (size_t a = r->obj; a != SIZE_MAX; a = l->o[a].parent)
				anc[a] = true;
		for (size_t k = 0; k < np; k++) {
			struct rec *p = &l->r[pending[k]];
			bool done = r->op == CL_SYNC;

			if (!done && is_data_op(p->op))
				done = p->obj == r->obj;
			else if (!done)
				done = p->dir == r->obj || p->dir2 == r->obj ||
				       (!posix &&
					(((p->op == CL_CREATE || p->op == CL_MKDIR) &&
					  anc[p->obj]) ||
					 (p->op == CL_RENAME && p->obj == r->obj)));
			if (done)
				p->persisted_at[posix] = i;
			else
				pending[keep++] = pending[k];
		}
		np = keep;
	}
	/* a directory's changes reach the disk in order */
	for (size_t k = 0; k < l->n_obj; k++)
		dmin[k] = NEVER;
	for (size_t i = l->n; i-- > 0;) {
		struct rec *r = &l->r[i];

		if (!is_dir_op(r->op))
			continue;
		if (dmin[r->dir] < r->persisted_at[posix])
			r->persisted_at[posix] = dmin[r->dir];
		dmin[r->dir] = r->persisted_at[posix];
	}
	free(pending);
	free(anc);
	free(dmin);
	return 0;
}

void crash_log_free(struct crash_log *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_obj; i++)
		free(l->o[i].path);
	for (size_t i = 0; i < l->n_names; i++)
		free(l->names[i].path);
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->r[i].path);
		free((char *)l->r[i].path2);
	}
	free(l->names);
	free(l->o);
	free(l->r);
	free(l->buf);
	free(l);
}

static char *str_of(const uint8_t *p, size_t len)
{
	char *s = malloc(len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = '\0';
	}
	return s;
}

struct crash_log *crash_log_load(const char *path, char *err, size_t errlen)
{
	struct crash_log *l = calloc(1, sizeof(*l));
	struct stat st;
	size_t at = 8, cap = 0;
	uint64_t magic;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (!l || fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	l->buf = malloc((size_t)st.st_size + 1);
	if (!l->buf || read(fd, l->buf, (size_t)st.st_size) != st.st_size) {
		snprintf(err, errlen, "%s: cannot read it", path);
		goto fail;
	}
	memcpy(&magic, l->buf, sizeof(magic));
	if (st.st_size < 8 || magic != CRASHLOG_MAGIC) {
		snprintf(err, errlen, "%s is not a crash log", path);
		goto fail;
	}
	while (at < (size_t)st.st_size) {
		struct crashlog_rec h;
		struct rec *r;

		if ((size_t)st.st_size - at < sizeof(h))
			break;
		memcpy(&h, l->buf + at, sizeof(h));
		if ((size_t)st.st_size - at - sizeof(h) <
		    (uint64_t)h.path_len + h.path2_len + h.data_len)
			break;	/* the recorder died mid-record */
		if (l->n == cap) {
			cap = cap ? 2 * cap : 4096;
			r = realloc(l->r, cap * sizeof(*r));
			if (!r) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			l->r = r;
		}
		r = &l->r[l->n++];
		at += sizeof(h);
		*r = (struct rec){ .op = h.op, .flags = h.flags, .off = h.off,
				   .len = h.len };
		r->path = str_of(l->buf + at, h.path_len);
		at += h.path_len;
		r->path2 = str_of(l->buf + at, h.path2_len);
		at += h.path2_len;
		r->data = l->buf + at;
		at += h.data_len;
		r->end = at;
		if (!r->path || !r->path2) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		if (h.op == CL_UNTRACEABLE) {
			snprintf(err, errlen,
				 "%s: record %zu: %s changed %s in a way the log cannot hold",
				 path, l->n - 1, r->path2[0] ? r->path2 : "fallocate",
				 r->path);
			goto fail;
		}
		if (h.op < CL_WRITE || h.op > CL_MARK ||
		    (h.op == CL_WRITE && h.data_len != h.len)) {
			snprintf(err, errlen, "%s: record %zu is malformed",
				 path, l->n - 1);
			goto fail;
		}
	}
	close(fd);
	fd = -1;
	rc = resolve(l);
	if (!rc)
		rc = persistence(l, false);
	if (!rc)
		rc = persistence(l, true);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto fail;
	}
	return l;
fail:
	if (fd >= 0)
		close(fd);
	crash_log_free(l);
	return NULL;
}

size_t crash_log_len(const struct crash_log *l)
{
	return l->n;
}

size_t crash_log_len_at(const struct crash_log *l, uint64_t size)
{
	size_t n = 0;

	while (n < l->n && l->r[n].end <= size)
		n++;
	return n;
}

void crash_log_marks(const struct crash_log *l, size_t cut,
		     void (*fn)(void *ctx, uint64_t kind, uint64_t value),
		     void *ctx)
{
	for (size_t i = 0; i < cut && i < l->n; i++)
		if (l->r[i].op == CL_MARK)
			fn(ctx, l->r[i].off, l->r[i].len);
}

/* The state being built: where each object lives in it, if it does. */
struct build {
	const struct crash_log *l;
	const char *out;
	char **at;		/* object -> path under out, or NULL */
	int rc;
};

static void build_fail(struct build *b, const char *what, const char *path)
{
	if (!b->rc)
		b->rc = errno ? -errno : -EIO;
	fprintf(stderr, "crash state: %s %s: %s\n", what, path,
		strerror(-b->rc));
}

static int copy_tree(const char *from, const char *to)
{
	char cmd[3 * PATH_MAX];
	int st;

	snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", from, to);
	st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int crash_tree_remove(const char *path)
{
	char cmd[PATH_MAX + 16];
	int st;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* A name below out now held by no object (it was replaced or removed). */
static void forget_at(struct build *b, const char *path)
{
	size_t len = strlen(path);

	for (size_t k = 0; k < b->l->n_obj; k++)
		if (b->at[k] && !strncmp(b->at[k], path, len) &&
		    (b->at[k][len] == '\0' || b->at[k][len] == '/')) {
			free(b->at[k]);
			b->at[k] = NULL;
		}
}

/* out/<dir's place>/<base of name>, when dir exists in the state. */
static char *place(struct build *b, size_t dir, const char *name)
{
	char p[PATH_MAX * 2];

	if (!b->at[dir])
		return NULL;
	snprintf(p, sizeof(p), "%s/%s", b->at[dir], base_name(name));
	return strdup(p);
}

static void apply_dir_op(struct build *b, const struct rec *r)
{
	char *p;
	int fd;

	switch (r->op) {
	case CL_CREATE:
	case CL_MKDIR:
		p = place(b, r->dir, r->path);
		if (!p)
			return;	/* its directory is lost */
		forget_at(b, p);
		if (r->op == CL_MKDIR) {
			if (mkdir(p, 0700) && errno != EEXIST)
				build_fail(b, "mkdir", p);
		} else {
			fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0)
				build_fail(b, "create", p);
			else
				close(fd);
		}
		b->at[r->obj] = p;
		return;
	case CL_UNLINK:
	case CL_RMDIR:
		if (!b->at[r->obj])
			return;
		if (crash_tree_remove(b->at[r->obj]))
			build_fail(b, "remove", b->at[r->obj]);
		forget_at(b, b->at[r->obj]);
		return;
	case CL_RENAME:
		p = place(b, r->dir2, r->path2);
		if (!b->at[r->obj] || !p) {
			free(p);
			return;
		}
		forget_at(b, p);
		if (rename(b->at[r->obj], p)) {
			build_fail(b, "rename", p);
			free(p);
			return;
		}
		{
			size_t ol = strlen(b->at[r->obj]);
			char np[PATH_MAX * 2];

			for (size_t k = 0; k < b->l->n_obj; k++) {
				if (k == r->obj || !b->at[k] ||
				    strncmp(b->at[k], b->at[r->obj], ol) ||
				    b->at[k][ol] != '/')
					continue;
				snprintf(np, sizeof(np), "%s%s", p, b->at[k] + ol);
				free(b->at[k]);
				b->at[k] = strdup(np);
			}
		}
		free(b->at[r->obj]);
		b->at[r->obj] = p;
		return;
	}
}

/*
 * A data change; keep_sector (a write's 512-byte pieces, or NULL for all)
 * says which parts of a torn write are applied.
 */
static void apply_data_op(struct build *b, const struct rec *r,
			  const bool *keep_sector)
{
	const char *p = b->at[r->obj];
	struct stat st;
	int fd;

	if (!p)
		return;	/* the file's creation is lost */
	fd = open(p, O_WRONLY);
	if (fd < 0) {
		build_fail(b, "open", p);
		return;
	}
	switch (r->op) {
	case CL_WRITE:
		for (uint64_t o = r->off, s = 0; o < r->off + r->len; s++) {
			uint64_t end = (o / SECTOR + 1) * SECTOR;

			if (end > r->off + r->len)
				end = r->off + r->len;
			if ((!keep_sector || keep_sector[s]) &&
			    pwrite(fd, r->data + (o - r->off), end - o,
				   (off_t)o) != (ssize_t)(end - o))
				build_fail(b, "write", p);
			o = end;
		}
		break;
	case CL_TRUNCATE:
		if (ftruncate(fd, (off_t)r->off))
			build_fail(b, "truncate", p);
		break;
	case CL_PUNCH:
	case CL_ZERO:
		/* zeros either way; punched, which every file system here can */
		if (fstat(fd, &st)) {
			build_fail(b, "stat", p);
			break;
		}
		{
			uint64_t end = r->off + r->len;
			uint64_t size = (uint64_t)st.st_size;
			uint64_t zend = end < size ? end : size;

			if (zend > r->off &&
			    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)r->off, (off_t)(zend - r->off)))
				build_fail(b, "zero", p);
			if (r->op == CL_ZERO && !(r->flags & CL_F_KEEP_SIZE) &&
			    end > size && ftruncate(fd, (off_t)end))
				build_fail(b, "zero", p);
		}
		break;
	case CL_EXTEND:
		if (fstat(fd, &st) ||
		    ((uint64_t)st.st_size < r->off + r->len &&
		     ftruncate(fd, (off_t)(r->off + r->len))))
			build_fail(b, "extend", p);
		break;
	}
	close(fd);
}

static bool chance(struct sc_prng *g, double p)
{
	return (double)(sc_prng_next(g) >> 11) * 0x1.0p-53 < p;
}

int crash_state_build(const struct crash_log *l, const char *initial,
		      const char *out, size_t cut, uint64_t seed,
		      const struct crash_opts *o, struct crash_info *info)
{
	struct build b = { .l = l, .out = out };
	bool *dir_cut = calloc(l->n_obj, sizeof(*dir_cut));
	bool *sectors = NULL;
	size_t n_sectors = 0;
	struct sc_prng g;

	memset(info, 0, sizeof(*info));
	sc_prng_seed(&g, seed);
	b.at = calloc(l->n_obj, sizeof(*b.at));
	if (!b.at || !dir_cut) {
		free(b.at);
		free(dir_cut);
		return -ENOMEM;
	}
	if (cut > l->n)
		cut = l->n;
	if (mkdir(out, 0700))
		build_fail(&b, "mkdir", out);
	else if (initial && copy_tree(initial, out))
		build_fail(&b, "copy into", out);
	/* initial objects live where they were first named */
	for (size_t k = 0; !b.rc && k < l->n_obj; k++) {
		char p[PATH_MAX * 2];

		if (!l->o[k].initial)
			continue;
		snprintf(p, sizeof(p), "%s%s%s", out, l->o[k].path[0] ? "/" : "",
			 l->o[k].path);
		b.at[k] = strdup(p);
	}
	for (size_t i = 0; !b.rc && i < cut; i++) {
		const struct rec *r = &l->r[i];
		bool forced = r->persisted_at[o->posix_dirs] < cut;
		bool dir_op = is_dir_op(r->op), torn = false;

		if (!dir_op && !is_data_op(r->op))
			continue;
		if (forced) {
			info->forced++;
		} else if (dir_op) {
			/* the first loss in a directory loses the rest */
			if (!dir_cut[r->dir] && chance(&g, o->drop))
				dir_cut[r->dir] = true;
			if (dir_cut[r->dir]) {
				info->dropped++;
				continue;
			}
			info->kept++;
		} else if (chance(&g, o->drop)) {
			info->dropped++;
			continue;
		} else if (r->op == CL_WRITE && chance(&g, o->tear)) {
			size_t ns = (size_t)((r->off + r->len + SECTOR - 1) / SECTOR -
					     r->off / SECTOR);

			if (ns > n_sectors) {
				bool *s = realloc(sectors, ns * sizeof(*s));

				if (!s) {
					b.rc = -ENOMEM;
					break;
				}
				sectors = s;
				n_sectors = ns;
			}
			for (size_t s = 0; s < ns; s++)
				sectors[s] = chance(&g, 0.5);
			torn = true;
			info->torn++;
		} else {
			info->kept++;
		}
		if (dir_op)
			apply_dir_op(&b, r);
		else
			apply_data_op(&b, r, torn ? sectors : NULL);
	}
	for (size_t k = 0; k < l->n_obj; k++)
		free(b.at[k]);
	free(b.at);
	free(dir_cut);
	free(sectors);
	return b.rc;
}
