// SPDX-License-Identifier: BSD-2-Clause
/*
 * FUSE's node ids.  The kernel names a file by the id it was given at
 * LOOKUP and forgets it when done; libnfs names files by path.  So each
 * inode keeps the names it was found or made under, and a path is a name
 * and its parent's path up to the root.  Inodes are kept by NFS fileid,
 * so two names of one file are one inode, as for the kernel's NFS client;
 * a parent stays while a name in it does.
 */
#include <stdlib.h>
#include <string.h>

#include "sf.h"

int sf_itab_init(struct sf_itab *t, uint64_t root_fileid)
{
	memset(t, 0, sizeof(*t));
	pthread_rwlock_init(&t->lock, NULL);
	t->root = calloc(1, sizeof(*t->root));
	if (!t->root)
		return -ENOMEM;
	t->root->fileid = root_fileid;
	t->root->type = S_IFDIR;
	HASH_ADD(hh, t->by_fileid, fileid, sizeof(uint64_t), t->root);
	return 0;
}

static void inode_put(struct sf_itab *t, struct sf_inode *i);

/* Drops *np (under the write lock), and so its parent's reference. */
static void name_drop(struct sf_itab *t, struct sf_name **np)
{
	struct sf_name *n = *np;
	struct sf_inode *parent = n->parent;

	*np = n->next;
	free(n->name);
	free(n);
	parent->refs--;
	inode_put(t, parent);
}

/* Frees i when nothing holds it any more (under the write lock). */
static void inode_put(struct sf_itab *t, struct sf_inode *i)
{
	if (i == t->root || i->nlookup || i->refs)
		return;
	HASH_DELETE(hh, t->by_fileid, i);
	while (i->names)
		name_drop(t, &i->names);
	free(i);
}

void sf_itab_destroy(struct sf_itab *t)
{
	struct sf_inode *i, *tmp;
	struct sf_name *n;

	HASH_ITER(hh, t->by_fileid, i, tmp) {
		HASH_DELETE(hh, t->by_fileid, i);
		while ((n = i->names)) {
			i->names = n->next;
			free(n->name);
			free(n);
		}
		free(i);
	}
	pthread_rwlock_destroy(&t->lock);
}

struct sf_inode *sf_inode_of(struct sf_itab *t, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? t->root : (struct sf_inode *)ino;
}

fuse_ino_t sf_ino_of(struct sf_itab *t, const struct sf_inode *i)
{
	return i == t->root ? FUSE_ROOT_ID : (fuse_ino_t)i;
}

int sf_path(struct sf_itab *t, const struct sf_inode *parent,
	    const char *name, char **out)
{
	const struct sf_inode *i;
	size_t len = name ? strlen(name) + 1 : 0, n;
	char *p, *end;
	int err = 0;

	pthread_rwlock_rdlock(&t->lock);
	for (i = parent; i != t->root; i = i->names->parent) {
		if (!i->names) {
			err = -ESTALE;	/* its names are gone: no path to it */
			goto out;
		}
		len += strlen(i->names->name) + 1;
	}
	p = malloc(len + 2);
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	end = p + len + 1;
	*end = '\0';
	if (name) {
		n = strlen(name);
		end -= n;
		memcpy(end, name, n);
		*--end = '/';
	}
	for (i = parent; i != t->root; i = i->names->parent) {
		n = strlen(i->names->name);
		end -= n;
		memcpy(end, i->names->name, n);
		*--end = '/';
	}
	if (end == p + len + 1)	/* the root itself */
		*--end = '/';
	memmove(p, end, strlen(end) + 1);
	*out = p;
out:
	pthread_rwlock_unlock(&t->lock);
	return err;
}

/* Where i's name (parent, name) is kept, or NULL (under the lock). */
static struct sf_name **name_find(struct sf_inode *i,
				  const struct sf_inode *parent,
				  const char *name)
{
	struct sf_name **np;

	for (np = &i->names; *np; np = &(*np)->next)
		if ((*np)->parent == parent && !strcmp((*np)->name, name))
			return np;
	return NULL;
}

/* i is named name in parent, the name its path takes from now on. */
static int name_add(struct sf_inode *i, struct sf_inode *parent,
		    const char *name)
{
	struct sf_name **np = name_find(i, parent, name), *n;

	if (np) {		/* known: to the front */
		n = *np;
		*np = n->next;
	} else {
		n = calloc(1, sizeof(*n));
		if (!n || !(n->name = strdup(name))) {
			free(n);
			return -ENOMEM;
		}
		n->parent = parent;
		parent->refs++;
	}
	n->next = i->names;
	i->names = n;
	return 0;
}

int sf_inode_found(struct sf_itab *t, struct sf_inode *parent,
		   const char *name, const struct stat *st,
		   struct sf_inode **out)
{
	uint64_t fileid = (uint64_t)st->st_ino;
	struct sf_inode *i;
	int err = 0;

	pthread_rwlock_wrlock(&t->lock);
	HASH_FIND(hh, t->by_fileid, &fileid, sizeof(fileid), i);
	if (!i) {
		i = calloc(1, sizeof(*i));
		if (!i) {
			pthread_rwlock_unlock(&t->lock);
			return -ENOMEM;
		}
		i->fileid = fileid;
		HASH_ADD(hh, t->by_fileid, fileid, sizeof(uint64_t), i);
	}
	i->type = st->st_mode & S_IFMT;
	if (i != t->root)
		err = name_add(i, parent, name);
	if (!err) {
		i->nlookup++;
		*out = i;
	}
	inode_put(t, i);
	pthread_rwlock_unlock(&t->lock);
	return err;
}

void sf_inode_forget(struct sf_itab *t, struct sf_inode *i, uint64_t n)
{
	if (i == t->root)
		return;
	pthread_rwlock_wrlock(&t->lock);
	i->nlookup -= n < i->nlookup ? n : i->nlookup;
	inode_put(t, i);
	pthread_rwlock_unlock(&t->lock);
}

void sf_inode_moved(struct sf_itab *t, uint64_t fileid,
		    struct sf_inode *parent, const char *name,
		    struct sf_inode *newparent, const char *newname)
{
	struct sf_name **np;
	struct sf_inode *i;

	if (newparent == parent && newname && !strcmp(newname, name))
		return;		/* renamed to itself: nothing moved */
	pthread_rwlock_wrlock(&t->lock);
	HASH_FIND(hh, t->by_fileid, &fileid, sizeof(fileid), i);
	np = i ? name_find(i, parent, name) : NULL;
	if (np) {
		/* the new name first (no memory: the file has one name less) */
		if (newparent)
			name_add(i, newparent, newname);
		name_drop(t, name_find(i, parent, name));
	}
	pthread_rwlock_unlock(&t->lock);
}
