// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's time (sim_model_int.h; README.md, "Time"): system mode
 * holds each request read in its VM's queue until its issue time, and
 * issues the VM that comes first from a heap of VMs.
 */
#include "sim_model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The issue time of VM v's next request. */
static double vm_next_ms(const struct sim *s, uint32_t v)
{
	double ts = s->pq[s->vq[v].head - s->pbase].ts_ms;

	return ts > s->vq[v].done_ms ? ts : s->vq[v].done_ms;
}

/* Heap order: the earlier issue time, then the lower VM. */
static bool vm_before(const struct sim *s, uint32_t x, uint32_t y)
{
	double tx = vm_next_ms(s, x), ty = vm_next_ms(s, y);

	return tx < ty || (tx == ty && x < y);
}

static void heap_push(struct sim *s, uint32_t v)
{
	uint32_t i = s->nheap++, up;

	while (i && vm_before(s, v, s->heap[up = (i - 1) / 2])) {
		s->heap[i] = s->heap[up];
		i = up;
	}
	s->heap[i] = v;
	s->vq[v].queued = true;
}

static uint32_t heap_pop(struct sim *s)
{
	uint32_t top = s->heap[0], v = s->heap[--s->nheap], i = 0, k;

	while ((k = 2 * i + 1) < s->nheap) {
		if (k + 1 < s->nheap && vm_before(s, s->heap[k + 1], s->heap[k]))
			k++;
		if (!vm_before(s, s->heap[k], v))
			break;
		s->heap[i] = s->heap[k];
		i = k;
	}
	if (s->nheap)
		s->heap[i] = v;
	s->vq[top].queued = false;
	return top;
}

/*
 * Before the queues grow: drop what lies before the oldest request not
 * issued yet (requests are issued out of order, but a queue's storage is
 * in reading order).
 */
static void queues_compact(struct sim *s)
{
	uint64_t oldest = s->pend_n, oldest_id, d;
	uint32_t v;

	for (v = 0; v < s->nvq; v++)
		if (s->vq[v].head < oldest)
			oldest = s->vq[v].head;
	oldest_id = oldest < s->pend_n ? s->pq[oldest - s->pbase].ids : s->ids_n;
	d = oldest - s->pbase;
	if (d && d * 4 >= s->pcap) {
		memmove(s->pq, s->pq + d, (s->pend_n - oldest) * sizeof(*s->pq));
		s->pbase = oldest;
	}
	d = oldest_id - s->ibase;
	if (d && d * 4 >= s->icap) {
		memmove(s->iq, s->iq + 2 * d,
			(s->ids_n - oldest_id) * 2 * sizeof(*s->iq));
		s->ibase = oldest_id;
	}
}

/* Issue the request of the VM that comes first. */
void issue_next(struct sim *s)
{
	uint32_t v = heap_pop(s);
	struct vmq *q = &s->vq[v];
	struct pend *p = &s->pq[q->head - s->pbase];
	double now = vm_next_ms(s, v);

	q->done_ms = now + run_request(s, v, p->nblocks & PEND_WRITE ? 'W' : 'R',
				       s->iq + 2 * (p->ids - s->ibase),
				       p->nblocks & ~PEND_WRITE, now);
	if (p->next_gap) {
		q->head += p->next_gap;
	} else {
		q->head = NOPEND;
		q->tail = NOPEND;
	}
	if (q->head != NOPEND)
		heap_push(s, v);
	s->held--;
}

/* Hold r until its issue time; issue what can no longer be preceded. */
void system_feed(struct sim *s, const struct sim_req *r)
{
	uint32_t v = r->vm, i, n = r->nblocks;
	struct pend *p;
	uint32_t *ids;

	if (v / s->p.vms_per_host >= 8 * s->aknown.w) {
		fprintf(stderr, "seacache-sim: VM %u was not in the preload pass\n", v);
		exit(2);
	}
	if (v >= s->nvq) {
		uint32_t nv = v + 16;

		s->vq = grow(s->vq, sizeof(*s->vq), s->nvq, nv, 0xff);
		s->heap = grow(s->heap, 4, s->nvq, nv, 0);
		for (i = s->nvq; i < nv; i++) {
			s->vq[i].done_ms = 0;
			s->vq[i].queued = false;
		}
		s->nvq = nv;
	}
	if (s->pend_n - s->pbase == s->pcap ||
	    s->ids_n + n - s->ibase > s->icap)
		queues_compact(s);
	if (s->pend_n - s->pbase == s->pcap) {
		s->pq = grow(s->pq, sizeof(*s->pq), s->pcap, s->pcap * 2 + 1024, 0);
		s->pcap = s->pcap * 2 + 1024;
	}
	while (s->ids_n + n - s->ibase > s->icap) {
		s->iq = grow(s->iq, 8, s->icap, s->icap * 2 + 4096, 0);
		s->icap = s->icap * 2 + 4096;
	}
	ids = s->iq + 2 * (s->ids_n - s->ibase);
	for (i = 0; i < n; i++) {
		ids[2 * i] = r->addr[i];
		ids[2 * i + 1] = r->content ? r->content[i] : NIL;
		addr_room(s, r->addr[i] + 1);
		seen(s, r->addr[i]);
		if (s->ahost[r->addr[i]] == NOHOST)
			s->ahost[r->addr[i]] = (uint16_t)(v / s->p.vms_per_host);
		if (r->content)
			content_room(s, r->content[i] + 1);
	}
	p = &s->pq[s->pend_n - s->pbase];
	p->ts_ms = (double)r->ts_ns / 1e6;
	p->next_gap = 0;
	p->ids = s->ids_n;
	p->nblocks = n | (r->op == 'W' ? PEND_WRITE : 0);
	if (s->vq[v].tail != NOPEND)
		s->pq[s->vq[v].tail - s->pbase].next_gap =
			(uint32_t)(s->pend_n - s->vq[v].tail);
	else
		s->vq[v].head = s->pend_n;
	s->vq[v].tail = s->pend_n;
	s->pend_n++;
	s->ids_n += n;
	s->held++;
	if (!s->vq[v].queued)
		heap_push(s, v);
	if (p->ts_ms > s->horizon_ms)
		s->horizon_ms = p->ts_ms;
	/*
	 * A line not read yet issues at its ts or later, so no later than
	 * the latest ts read if the trace is in time order: what comes
	 * strictly before that can go.
	 */
	while (s->nheap && (vm_next_ms(s, s->heap[0]) < s->horizon_ms ||
			    s->held > s->p.window))
		issue_next(s);
}
