// SPDX-License-Identifier: BSD-2-Clause
/*
 * Workload replay for seacache-host: see replay.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "replay.h"
#include "trace.h"
#include "workload_fp.h"

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* A block of the written data, by its fingerprint. */
struct data_block {
	uint8_t fp[WL_FP_BYTES];
	uint32_t at;
};

static int cmp_data_block(const void *a, const void *b)
{
	return memcmp(((const struct data_block *)a)->fp,
		      ((const struct data_block *)b)->fp, WL_FP_BYTES);
}

/* The block of the n sorted ones whose fingerprint is fp; or -1. */
static int64_t find_block(const struct data_block *d, size_t n,
			  const uint8_t *fp, uint32_t fp_len)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(d[mid].fp, fp, fp_len);

		if (!c)
			return d[mid].at;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The workload's written bytes, path.blocks, mapped; each write's
 * fingerprints found there (r->src). */
static int load_written(struct replay *r, const char *path, char *err,
			size_t errlen)
{
	char *bpath = malloc(strlen(path) + sizeof(".blocks"));
	struct data_block *d = NULL;
	size_t n = 0, i;
	struct stat st;
	int fd = -1, rc = -1;

	if (!bpath) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!r->fp_known) {
		snprintf(err, errlen,
			 "%s: its writes' fingerprints are not " WL_FP_NAME
			 " (no fingerprint=" WL_FP_NAME " in its header): write it again with this build's seacache-workload",
			 path);
		goto out;
	}
	strcpy(bpath, path);
	strcat(bpath, ".blocks");
	fd = open(bpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s (the written bytes of %s): %s",
			 bpath, path, strerror(errno));
		goto out;
	}
	n = (size_t)st.st_size / r->block_size;
	if (!n || (size_t)st.st_size % r->block_size || n > UINT32_MAX) {
		snprintf(err, errlen, "%s: not whole blocks of %u bytes",
			 bpath, r->block_size);
		goto out;
	}
	r->data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
		       0);
	if (r->data == MAP_FAILED) {
		r->data = NULL;
		snprintf(err, errlen, "%s: %s", bpath, strerror(errno));
		goto out;
	}
	r->data_len = (size_t)st.st_size;
	d = malloc(n * sizeof(*d));
	r->src = calloc(r->nfps, sizeof(*r->src));
	if (!d || !r->src) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		d[i].at = (uint32_t)i;
		wl_fingerprint(r->data + i * r->block_size, r->block_size,
			       d[i].fp);
	}
	qsort(d, n, sizeof(*d), cmp_data_block);
	for (unsigned int v = 0; v < r->nvms; v++) {
		for (size_t k = 0; k < r->nreqs[v]; k++) {
			const struct vm_req *q = &r->reqs[v][k];

			for (uint32_t b = 0; q->write && b < q->nblocks; b++) {
				size_t f = (size_t)q->fp_at + b;
				int64_t at = find_block(d, n, r->fps + f * r->fp_len,
							r->fp_len);

				if (at < 0) {
					snprintf(err, errlen,
						 "%s: a write of VM %u (block %llu): its content is not in %s",
						 path, r->vm_first + v,
						 (unsigned long long)(q->lbn + b),
						 bpath);
					goto out;
				}
				r->src[f] = (uint32_t)at;
			}
		}
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(d);
	free(bpath);
	return rc;
}

int replay_load(struct replay *r, const char *path, unsigned int vm_first,
		unsigned int nvms, char *err, size_t errlen)
{
	struct sim_trace *t;
	struct sim_req q;
	size_t *cap = calloc(nvms, sizeof(*cap)), fcap = 0;
	bool writes = false;
	int rc;

	memset(r, 0, sizeof(*r));
	r->vm_first = vm_first;
	r->nvms = nvms;
	r->reqs = calloc(nvms, sizeof(*r->reqs));
	r->nreqs = calloc(nvms, sizeof(*r->nreqs));
	if (!cap || !r->reqs || !r->nreqs) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	t = sim_trace_open(path, "seacache", 0, err, errlen);
	if (!t)
		goto fail;
	r->block_size = sim_trace_block_size(t);
	r->fp_known = !strcmp(sim_trace_fingerprint(t), WL_FP_NAME);
	while ((rc = sim_trace_next(t, &q)) == 1) {
		unsigned int v = q.vm - vm_first;
		struct vm_req *vr;

		if (q.vm < vm_first || v >= nvms)
			continue;
		if (q.fp_len == 0 || (r->fp_len && q.fp_len != r->fp_len)) {
			snprintf(err, errlen,
				 "%s: requests need fingerprints of one length",
				 path);
			sim_trace_close(t);
			goto fail;
		}
		r->fp_len = q.fp_len;
		if (grow((void **)&r->reqs[v], &cap[v], r->nreqs[v] + 1,
			 sizeof(**r->reqs)) ||
		    grow((void **)&r->fps, &fcap,
			 (r->nfps + q.nblocks) * q.fp_len, 1)) {
			snprintf(err, errlen, "out of memory loading %s", path);
			sim_trace_close(t);
			goto fail;
		}
		vr = &r->reqs[v][r->nreqs[v]++];
		vr->lbn = q.lbn;
		vr->nblocks = q.nblocks;
		vr->image = (uint32_t)q.file;
		vr->fp_at = (uint32_t)r->nfps;
		vr->write = q.op == 'W';
		writes |= vr->write;
		memcpy(r->fps + r->nfps * q.fp_len, q.fp,
		       (size_t)q.nblocks * q.fp_len);
		r->nfps += q.nblocks;
		r->total_requests++;
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, sim_trace_error(t));
		sim_trace_close(t);
		goto fail;
	}
	if (sim_trace_stats(t)->malformed) {
		sim_trace_report(t, stderr);
		snprintf(err, errlen, "%s: %llu malformed lines (listed above)",
			 path,
			 (unsigned long long)sim_trace_stats(t)->malformed);
		sim_trace_close(t);
		goto fail;
	}
	sim_trace_close(t);
	if (r->fp_known && r->fp_len != WL_FP_BYTES) {
		snprintf(err, errlen,
			 "%s: fingerprint=" WL_FP_NAME " but fingerprints of %u bytes, not %u",
			 path, r->fp_len, WL_FP_BYTES);
		goto fail;
	}
	if (writes && load_written(r, path, err, errlen))
		goto fail;
	free(cap);
	return 0;
fail:
	free(cap);
	replay_free(r);
	return -1;
}

void replay_free(struct replay *r)
{
	for (unsigned int v = 0; r->reqs && v < r->nvms; v++)
		free(r->reqs[v]);
	free(r->reqs);
	free(r->nreqs);
	free(r->fps);
	free(r->src);
	if (r->data)
		munmap(r->data, r->data_len);
	memset(r, 0, sizeof(*r));
}

struct vm_run {
	const struct replay *r;
	const struct backend_ops *ops;
	void *be;
	unsigned int v;
	bool verify;
	void *vmctx;
	struct vm_result *res;
	_Atomic uint64_t done;
	atomic_bool finished;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

/* Checks each block of buf against the request's fingerprints. */
static void verify_blocks(struct vm_run *w, const struct vm_req *q,
			  const uint8_t *buf)
{
	const struct replay *r = w->r;
	uint8_t got[WL_FP_BYTES];

	for (uint32_t i = 0; i < q->nblocks; i++) {
		const uint8_t *fp = r->fps + ((size_t)q->fp_at + i) * r->fp_len;

		wl_fingerprint(buf + (size_t)i * r->block_size, r->block_size,
			       got);
		if (memcmp(got, fp, WL_FP_BYTES)) {
			if (!w->res->mismatches)
				fprintf(stderr,
					"seacache-host: VM %u image %u block %llu does not match the workload\n",
					r->vm_first + w->v, q->image,
					(unsigned long long)(q->lbn + i));
			w->res->mismatches++;
		}
		w->res->verified++;
	}
}

/* Every image the VM wrote made stable, once each. */
static void flush_written(struct vm_run *w)
{
	const struct vm_req *q = w->r->reqs[w->v];
	size_t n = w->r->nreqs[w->v];

	for (size_t i = 0; i < n; i++) {
		bool first = q[i].write;
		int rc;

		for (size_t j = 0; first && j < i; j++)
			first = !(q[j].write && q[j].image == q[i].image);
		if (!first)
			continue;
		rc = w->ops->flush(w->be, w->vmctx, q[i].image);
		if (rc) {
			fprintf(stderr,
				"seacache-host: VM %u flush of image %u: %s\n",
				w->r->vm_first + w->v, q[i].image,
				strerror(-rc));
			w->res->errors++;
		}
	}
}

static void *vm_main(void *arg)
{
	struct vm_run *w = arg;
	const struct replay *r = w->r;
	size_t n = r->nreqs[w->v], cap = 0;
	float *lat = malloc((n ? n : 1) * sizeof(*lat));
	uint8_t *buf = NULL;
	double t0 = now_us(), sum = 0;

	w->res->start = wall_s();

	if (!lat) {
		w->res->errors = n ? n : 1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct vm_req *q = &r->reqs[w->v][i];
		size_t len = (size_t)q->nblocks * r->block_size;
		double s;
		int rc;

		if (grow((void **)&buf, &cap, len, 1)) {
			w->res->errors++;
			break;
		}
		for (uint32_t b = 0; q->write && b < q->nblocks; b++)
			memcpy(buf + (size_t)b * r->block_size,
			       r->data + (size_t)r->src[q->fp_at + b] *
					 r->block_size, r->block_size);
		s = now_us();
		if (q->write)
			rc = w->ops->write(w->be, w->vmctx, q->image,
					   q->lbn * r->block_size, buf, len);
		else
			rc = w->ops->read(w->be, w->vmctx, q->image,
					  q->lbn * r->block_size, buf, len);
		lat[i] = (float)(now_us() - s);
		sum += lat[i];
		w->res->requests++;
		w->res->blocks += q->nblocks;
		if (q->write)
			w->res->write_blocks += q->nblocks;
		if (rc) {
			if (!w->res->errors)
				fprintf(stderr,
					"seacache-host: VM %u %s of image %u block %llu: %s\n",
					r->vm_first + w->v,
					q->write ? "write" : "read", q->image,
					(unsigned long long)q->lbn,
					strerror(-rc));
			w->res->errors++;
		} else if (w->verify && !q->write) {
			verify_blocks(w, q, buf);
		}
		atomic_store(&w->done, i + 1);
	}
	flush_written(w);
	w->res->end = wall_s();
	w->res->seconds = (now_us() - t0) / 1e6;
	if (w->res->requests) {
		qsort(lat, w->res->requests, sizeof(*lat), cmp_float);
		w->res->lat_mean_us = sum / (double)w->res->requests;
		w->res->lat_p50_us = lat[w->res->requests / 2];
		w->res->lat_p99_us = lat[(w->res->requests * 99) / 100];
	}
out:
	free(lat);
	free(buf);
	atomic_store(&w->finished, true);
	return NULL;
}

int replay_run(const struct replay *r, const struct backend_ops *ops,
	       void *be, bool verify, bool progress, struct vm_result *res,
	       char *err, size_t errlen)
{
	struct vm_run *w = calloc(r->nvms, sizeof(*w));
	pthread_t *th = calloc(r->nvms, sizeof(*th));
	unsigned int v, started = 0;
	int rc = 0;

	if (!w || !th) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	if (verify && !r->fp_known) {
		snprintf(err, errlen,
			 "the workload's fingerprints are not " WL_FP_NAME
			 " (no fingerprint=" WL_FP_NAME " in its header), so its reads cannot be checked: write it again with this build's seacache-workload, or replay with --no-verify");
		rc = -1;
		goto out;
	}
	for (v = 0; v < r->nvms; v++) {
		memset(&res[v], 0, sizeof(res[v]));
		w[v] = (struct vm_run){ .r = r, .ops = ops, .be = be, .v = v,
					.verify = verify, .res = &res[v] };
		w[v].vmctx = ops->vm_open(be, r->vm_first + v, err, errlen);
		if (!w[v].vmctx) {
			rc = -1;
			break;
		}
	}
	for (v = 0; !rc && v < r->nvms; v++) {
		if (pthread_create(&th[v], NULL, vm_main, &w[v])) {
			snprintf(err, errlen, "cannot start VM threads");
			rc = -1;
			break;
		}
		started++;
	}
	while (started == r->nvms) {
		uint64_t done = 0;
		unsigned int finished = 0;

		for (v = 0; v < r->nvms; v++) {
			done += atomic_load(&w[v].done);
			finished += atomic_load(&w[v].finished);
		}
		if (progress)
			fprintf(stderr, "\r  %llu/%llu requests",
				(unsigned long long)done,
				(unsigned long long)r->total_requests);
		if (finished == r->nvms)
			break;
		usleep(500 * 1000);
		if (ops->tick)
			ops->tick(be);
	}
	if (progress)
		fputc('\n', stderr);
	for (v = 0; v < started; v++)
		pthread_join(th[v], NULL);
	for (v = 0; v < r->nvms; v++)
		if (w[v].vmctx)
			ops->vm_close(be, w[v].vmctx);
out:
	free(w);
	free(th);
	return rc;
}
