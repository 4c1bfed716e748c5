// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Map windows (PROTOCOL.md §7.11): the host learns which content each
 * block holds ahead of its readers, so that a read whose contents the
 * host caches costs no call.  The VMs of a host read clones of one image
 * in step, and without the maps each of them asks the server for every
 * block it reads even though the first VM's reply brought the content:
 * the host knows a (file, block)'s content only for the file it was read
 * through.
 *
 * Each file read has a window, the blocks whose map the host fetched.  A
 * read that reaches past the middle of its file's window fetches the next
 * one before it looks its blocks up, twice as large as the last while the
 * reader stays sequential (up to CSI_MAX_MAP_BLOCKS); a read that finds a
 * block the host knows nothing of, outside the window, starts a window
 * where it is (a read whose blocks are known, from an earlier window or
 * an earlier read, costs no GET_MAP).  The same GET_MAP asks for the same blocks of the files
 * the host read most recently whose windows do not cover them yet: the
 * other VMs' clones, which they will read next.  One GET_MAP of the host
 * is in flight at a time; a read whose blocks it will map waits for it
 * rather than asking the server itself.
 */
#include "host_priv.h"
#include "seacache/csi_codec.h"

/* The first window of a file, and of a read elsewhere in it. */
#define MAP_FIRST_BLOCKS 512u
/*
 * The share of the CSI-Map's entries one GET_MAP may fill: windows come
 * ahead of the readers, and a window that pushed out the entries the
 * readers are using now would cost more calls than it saves.
 */
#define MAP_CAP_SHARE 4u
/* Blocks a read may skip past the last one's end and still be sequential. */
#define MAP_SEQ_GAP 32u

uint32_t host_map_cap(struct sc_hostcache *hc)
{
	struct sc_hostcache_stats cs;

	sc_hostcache_get_stats(hc, &cs);
	return (uint32_t)(cs.map.capacity_entries / MAP_CAP_SHARE);
}

/* The window of file, or NULL; under h->lock. */
static struct host_mapwin *win_find(struct sc_host *h, uint64_t file)
{
	uint32_t i;

	for (i = 0; i < HOST_MAP_WINDOWS; i++)
		if (h->wins[i].used && h->wins[i].file == file)
			return &h->wins[i];
	return NULL;
}

/* A window for file, the least recently used one if all are taken. */
static struct host_mapwin *win_get(struct sc_host *h, uint64_t file)
{
	struct host_mapwin *w = win_find(h, file), *old = &h->wins[0];
	uint32_t i;

	if (w)
		return w;
	for (i = 0; i < HOST_MAP_WINDOWS; i++) {
		if (!h->wins[i].used) {
			old = &h->wins[i];
			break;
		}
		if (h->wins[i].used < old->used)
			old = &h->wins[i];
	}
	sc_memset(old, 0, sizeof(*old));
	old->file = file;
	return old;
}

/* Does the in-flight GET_MAP map blocks first..last of file? */
static bool map_covers(const struct sc_host *h, uint64_t file,
		       uint64_t first, uint64_t last)
{
	uint32_t i;

	if (!h->map_busy || first < h->map_lbn ||
	    last >= h->map_lbn + h->map_count)
		return false;
	for (i = 0; i < h->map_nfiles; i++)
		if (h->map_files[i] == file)
			return true;
	return false;
}

static bool map_idle(void *arg)
{
	struct sc_host *h = arg;
	bool busy;

	sc_mutex_lock(&h->lock);
	busy = h->map_busy;
	sc_mutex_unlock(&h->lock);
	return !busy;
}

/*
 * Plans the GET_MAP a read of blocks first..last of file needs, under
 * h->lock: false if none.  Ahead of the lookups (!miss), the window grows
 * while the reader reaches into its second half; for a block the host
 * knows nothing of (miss), a window starts there unless the block is in
 * the window already (a hole, or an entry that left the CSI-Map).
 */
static bool map_plan(struct sc_host *h, uint64_t file, uint64_t first,
		     uint64_t last, bool miss, uint32_t cap)
{
	struct host_mapwin *w = win_get(h, file), *o;
	bool inside = w->end > w->start && first >= w->start && first < w->end;
	uint64_t lbn;
	uint32_t count, i, n = 0;

	w->used = ++h->map_clock;
	if (inside && !miss) {
		if (last + (w->end - w->start) / 2 < w->end)
			return false;
		lbn = w->end;
		count = w->grow;
	} else if (!inside && miss) {
		lbn = first;
		count = MAP_FIRST_BLOCKS;
	} else {
		return false;
	}
	if (count > cap)
		count = cap;
	if (count > CSI_MAX_MAP_BLOCKS)
		count = CSI_MAX_MAP_BLOCKS;
	/* a CSI-Map too small for any window: the reads ask as without */
	if (!count)
		return false;
	h->map_files[n++] = file;
	/* the other files read most recently, whose windows end before it */
	while (n < CSI_MAX_MAP_FILES && (n + 1) * count <= cap) {
		o = NULL;
		for (i = 0; i < HOST_MAP_WINDOWS; i++) {
			struct host_mapwin *c = &h->wins[i];
			uint32_t k;

			if (!c->used || c->file == file ||
			    (c->start <= lbn && c->end >= lbn + count))
				continue;
			for (k = 0; k < n && h->map_files[k] != c->file; k++)
				;
			if (k == n && (!o || c->used > o->used))
				o = c;
		}
		if (!o)
			break;
		h->map_files[n++] = o->file;
	}
	h->map_busy = true;
	h->map_lbn = lbn;
	h->map_count = count;
	h->map_nfiles = n;
	return true;
}

/* After the GET_MAP: each file mapped has its window moved to it. */
static void map_windows_moved(struct sc_host *h, const bool *mapped)
{
	uint64_t lbn = h->map_lbn, end = h->map_lbn + h->map_count;
	struct host_mapwin *w;
	uint32_t i, grow;

	for (i = 0; i < h->map_nfiles; i++) {
		if (!mapped[i])
			continue;
		w = win_get(h, h->map_files[i]);
		grow = w->grow ? 2 * w->grow : 2 * MAP_FIRST_BLOCKS;
		if (w->end > w->start && lbn == w->end) {
			w->end = end;	/* sequential: the window moves on */
		} else {
			w->start = lbn;
			w->end = end;
			grow = 2 * MAP_FIRST_BLOCKS;
		}
		w->grow = grow > CSI_MAX_MAP_BLOCKS ? CSI_MAX_MAP_BLOCKS : grow;
		if (!w->used)
			w->used = ++h->map_clock;
	}
}

/* The planned GET_MAP; its windows into the cache.  No lock held. */
static int map_fetch(struct sc_host *h, const uint64_t *files, uint32_t nf,
		     uint64_t lbn, uint32_t count, bool *mapped)
{
	struct csi_getmap_args a = { .files = files, .nfiles = nf,
				     .lbn = lbn, .count = count };
	struct csi_getmap_res res;
	const struct csi_map_file *f;
	uint64_t since = sc_clock_us(), learnt = 0;
	struct host_call c;
	uint32_t i, n;
	int err;

	err = host_call(h, CSI_PROC_GET_MAP, &a.hdr, &a, &res, &c);
	if (err)
		return err;
	err = host_status_err(c.status);
	if (!err && res.nfiles != nf)
		err = host_proto_err(h, "GET_MAP: another number of files");
	for (i = 0; !err && i < nf; i++) {
		f = &res.files[i];
		if (csi_map_file_check(f, lbn, count, h->bs, &n) ||
		    (f->status == CSI_OK && f->attr.file != files[i])) {
			err = host_proto_err(h, "GET_MAP: a window against its file");
			break;
		}
		if (f->status == CSI_ERR_STALE)
			sc_hostcache_drop_file(h->hc, files[i]);
		if (f->status != CSI_OK)
			continue;	/* read through the other calls */
		/* the tag moves first: entries of an older state go */
		sc_hostcache_file_seen(h->hc, files[i], f->attr.change,
				       f->attr.size, c.since);
		learnt += sc_hostcache_learn_map(h->hc, files[i], lbn,
						 f->attr.change, f->holes,
						 f->hashes, n);
		mapped[i] = true;
	}
	host_release(h, &c);
	sc_mutex_lock(&h->lock);
	h->st.map_calls++;
	h->st.map_entries += learnt;
	sc_mutex_unlock(&h->lock);
	host_time_add(h, SC_HT_MAP, since);
	return err;
}

uint64_t host_map_seq_span(struct sc_host *h, uint64_t file, uint64_t last)
{
	struct host_mapwin *w;
	uint64_t span = 0;

	sc_mutex_lock(&h->lock);
	w = win_find(h, file);
	if (w && w->sequential && last >= w->start && last + 1 < w->end)
		span = w->end - last - 1 < w->streak ? w->end - last - 1 :
						      w->streak;
	sc_mutex_unlock(&h->lock);
	return span;
}

int host_map_ahead(struct sc_host *h, uint64_t file, uint64_t first,
		   uint64_t last, bool miss)
{
	uint64_t files[CSI_MAX_MAP_FILES];
	bool mapped[CSI_MAX_MAP_FILES] = { false };
	uint32_t nf, count;
	uint64_t lbn;
	bool planned;
	int err;

	sc_mutex_lock(&h->lock);
	if (!(h->reg.features & CSI_FEAT_MAP)) {
		sc_mutex_unlock(&h->lock);
		return 0;
	}
	if (!miss) {
		struct host_mapwin *w = win_get(h, file);

		/*
		 * Forward from where the last read ended, give or take the
		 * block two reads share and the small gaps of a scan over
		 * the files of an image laid out in order
		 */
		w->sequential = w->next && first + 1 >= w->next &&
				first <= w->next + MAP_SEQ_GAP;
		w->streak = (w->sequential ? w->streak : 0) + last - first + 1;
		w->next = last + 1;
		w->used = ++h->map_clock;
	}
	/*
	 * A read waits for the GET_MAP in flight, then plans its own if it
	 * still needs one: the VMs read in step, and a read that went on
	 * without its map would ask the server for blocks the next window
	 * names.
	 */
	while (h->map_busy) {
		bool covered = map_covers(h, file, first, last);

		h->st.map_waits++;
		sc_mutex_unlock(&h->lock);
		err = sc_waitq_wait(&h->map_done, map_idle, h,
				    SC_CSI_CALL_TIMEOUT_MS);
		if (err == -SC_EINTR)
			return err;
		if (covered || err)
			return 0;
		sc_mutex_lock(&h->lock);
	}
	planned = map_plan(h, file, first, last, miss, h->map_cap);
	nf = h->map_nfiles;
	lbn = h->map_lbn;
	count = h->map_count;
	sc_memcpy(files, h->map_files, nf * sizeof(files[0]));
	sc_mutex_unlock(&h->lock);
	if (!planned)
		return 0;
	err = map_fetch(h, files, nf, lbn, count, mapped);
	sc_mutex_lock(&h->lock);
	map_windows_moved(h, mapped);
	h->map_busy = false;
	sc_mutex_unlock(&h->lock);
	sc_wake_all(&h->map_done);
	/* a window is a guess ahead: without it the read asks as before */
	return err == -SC_EINTR ? err : 0;
}
