// SPDX-License-Identifier: BSD-2-Clause
/*
 * NFS connections for the namespace, the attributes and fallback I/O.  A
 * libnfs context serves one call at a time, so the mount keeps a few and
 * each call takes a free one; the caller's uid and gid go with it
 * (AUTH_SYS), so the server decides as it would for the kernel's client.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include "sf.h"

static int nfs_connect(struct sf_nfs *c, const struct sf_opts *o, char *err,
		       size_t errlen)
{
	char url[1024], q[64] = "";
	struct nfs_url *u;

	c->nfs = nfs_init_context();
	if (!c->nfs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (o->nfsport)
		snprintf(q, sizeof(q), "&nfsport=%u&mountport=%u", o->nfsport,
			 o->mountport);
	snprintf(url, sizeof(url), "nfs://%s%s?version=3%s", o->nfs_server,
		 o->export, q);
	u = nfs_parse_url_dir(c->nfs, url);
	if (!u || nfs_mount(c->nfs, u->server, u->path)) {
		snprintf(err, errlen, "cannot mount %s:%s over NFSv3: %s",
			 o->nfs_server, o->export, nfs_get_error(c->nfs));
		nfs_destroy_url(u);
		return -1;
	}
	nfs_destroy_url(u);
	return 0;
}

int sf_nfs_pool_open(struct sf_nfs_pool *p, const struct sf_opts *o,
		     char *err, size_t errlen)
{
	p->conn = calloc(o->nfs_conns, sizeof(*p->conn));
	if (!p->conn) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (p->n = 0; p->n < o->nfs_conns; p->n++) {
		pthread_mutex_init(&p->conn[p->n].lock, NULL);
		if (nfs_connect(&p->conn[p->n], o, err, errlen)) {
			p->n++;
			sf_nfs_pool_close(p);
			return -1;
		}
	}
	atomic_init(&p->next, 0);
	return 0;
}

void sf_nfs_pool_close(struct sf_nfs_pool *p)
{
	for (unsigned int i = 0; i < p->n; i++) {
		if (p->conn[i].nfs)
			nfs_destroy_context(p->conn[i].nfs);
		pthread_mutex_destroy(&p->conn[i].lock);
	}
	free(p->conn);
	p->conn = NULL;
	p->n = 0;
}

struct nfs_context *sf_nfs_get(struct sf_nfs_pool *p, uid_t uid, gid_t gid,
			       struct sf_nfs **held)
{
	unsigned int start = atomic_fetch_add(&p->next, 1), i;
	struct sf_nfs *c = NULL;

	/* a free one if there is, else wait for the one in turn */
	for (i = 0; i < p->n && !c; i++)
		if (!pthread_mutex_trylock(&p->conn[(start + i) % p->n].lock))
			c = &p->conn[(start + i) % p->n];
	if (!c) {
		c = &p->conn[start % p->n];
		pthread_mutex_lock(&c->lock);
	}
	nfs_set_uid(c->nfs, (int)uid);
	nfs_set_gid(c->nfs, (int)gid);
	*held = c;
	return c->nfs;
}

void sf_nfs_put(struct sf_nfs *held)
{
	pthread_mutex_unlock(&held->lock);
}
