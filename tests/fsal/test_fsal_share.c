// SPDX-License-Identifier: BSD-2-Clause
/*
 * NFSv4.1 share reservations (RFC 8881 section 9.7, RFC 7530 section 9.9)
 * against a model: every OPEN, CLOSE and OPEN_DOWNGRADE's answer must be
 * the model's.  An OPEN of access A and deny D by an open owner without an
 * open of the file is refused (NFS4ERR_SHARE_DENIED) when another owner's
 * open denies any of A or has access D denies.  The model is Ganesha's
 * where Ganesha's protocol layer and its FSAL_VFS pattern decide, on every
 * FSAL alike:
 *  - a second OPEN by the same owner asks for the union of its opens, and
 *    that union is checked against every share, the owner's own included
 *    (reopen2 checks the counters it is counted in; Linux nfsd's
 *    nfs4_upgrade_open does the same), so an owner cannot open again with
 *    an access its own open denies;
 *  - OPEN_DOWNGRADE must ask for a part of the owner's share whose access
 *    and whose deny were each asked for by one of its opens (else
 *    NFS4ERR_INVAL; RFC 8881 asks for the union of some of its opens);
 *    the new share is checked as an upgrade is, and a conflict is
 *    NFS4ERR_SERVERFAULT.
 * A close takes the owner's whole share away.

 * The opens come from the raw client (nfs4_client.h), each owner an open
 * owner of one client: libnfs does not send deny modes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfs4_client.h"
#include "nfs_harness.h"

#define DIR "/share"
#define SEED 0x54a2edull
#define OWNERS 3
#define RANDOM_STEPS 600

static struct nfs_context *v3;
static struct n4_client *c;
static struct n4_fh dir;

struct share {
	bool open;
	uint32_t access, deny;
	uint32_t access_seen, deny_seen;	/* 1 << each asked for */
	struct n4_stateid sid;
};

/* The model: each owner's share of the one file under test. */
static struct share owner[OWNERS];
static struct n4_fh file;
static char file_name[64];
static unsigned int step;

static const char *const access_name[] = { "-", "READ", "WRITE", "BOTH" };
static const char *const deny_name[] = { "NONE", "READ", "WRITE", "BOTH" };

static int setup(void **state)
{
	char path[256];

	(void)state;
	if (nh_suite_setup(DIR, &v3, NULL) != 0)
		return -1;
	c = n4_connect(1, "sc-share-test");
	snprintf(path, sizeof(path), "%s%s", nh_env("NFS_EXPORT"), DIR);
	return c && n4_lookup(c, path, &dir) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	n4_disconnect(c);
	nh_suite_teardown(&v3, NULL);
	return 0;
}

/* A new file for the next scenario (created by a throw-away owner). */
static void new_file(const char *what)
{
	static unsigned int n;
	struct n4_stateid sid;
	int rc;

	snprintf(file_name, sizeof(file_name), "%s-%u", what, n++);
	rc = n4_open(c, &dir, file_name, "creator", N4_ACCESS_BOTH,
		     N4_DENY_NONE, true, &sid, &file);
	assert_int_equal(rc, N4_OK);
	assert_int_equal(n4_close(c, &file, &sid), N4_OK);
	memset(owner, 0, sizeof(owner));
}

static const char *owner_name(int o)
{
	static const char *const names[OWNERS] = { "owner-a", "owner-b", "owner-c" };

	return names[o];
}

static void expect(const char *what, int o, int got, int want)
{
	step++;
	if (got == want)
		return;
	fprintf(stderr, "share: step %u, %s: %s by %s: got %s (%d), want %s\n", step,
		file_name, what, owner_name(o), n4_status_name(got), got,
		n4_status_name(want));
	for (int i = 0; i < OWNERS; i++)
		if (owner[i].open)
			fprintf(stderr, "share:   %s holds %s / deny %s\n", owner_name(i),
				access_name[owner[i].access], deny_name[owner[i].deny]);
	fail();
}

/* Does a share of (access, deny) for owner o conflict (o's own counts if
 * SELF)? */
static bool conflicts(int o, bool self, uint32_t access, uint32_t deny)
{
	for (int i = 0; i < OWNERS; i++)
		if ((i != o || self) && owner[i].open &&
		    ((access & owner[i].deny) || (deny & owner[i].access)))
			return true;
	return false;
}

static void do_open(int o, uint32_t access, uint32_t deny)
{
	struct share *s = &owner[o];
	uint32_t a = s->open ? s->access | access : access;
	uint32_t d = s->open ? s->deny | deny : deny;
	int want = conflicts(o, s->open, a, d) ? N4ERR_SHARE_DENIED : N4_OK;
	char what[64];
	struct n4_stateid sid;
	struct n4_fh fh;
	int rc = n4_open(c, &dir, file_name, owner_name(o), access, deny, false, &sid, &fh);

	snprintf(what, sizeof(what), "OPEN %s / deny %s", access_name[access],
		 deny_name[deny]);
	expect(what, o, rc, want);
	if (rc != N4_OK)
		return;
	if (!s->open)
		s->access_seen = s->deny_seen = 0;
	s->open = true;
	s->access = a;
	s->deny = d;
	s->access_seen |= 1u << access;
	s->deny_seen |= 1u << deny;
	s->sid = sid;
}

static void do_close(int o)
{
	expect("CLOSE", o, n4_close(c, &file, &owner[o].sid), N4_OK);
	owner[o].open = false;
	owner[o].access = owner[o].deny = 0;
}

static void do_downgrade(int o, uint32_t access, uint32_t deny)
{
	struct share *s = &owner[o];
	int want = N4_OK, rc;
	char what[64];

	if ((access & ~s->access) || (deny & ~s->deny) ||
	    !(s->access_seen & (1u << access)) || !(s->deny_seen & (1u << deny)))
		want = N4ERR_INVAL;
	else if (conflicts(o, true, access, deny))
		want = N4ERR_SERVERFAULT;
	snprintf(what, sizeof(what), "OPEN_DOWNGRADE to %s / deny %s", access_name[access],
		 deny_name[deny]);
	rc = n4_open_downgrade(c, &file, &s->sid, access, deny);
	expect(what, o, rc, want);
	if (rc != N4_OK)
		return;
	s->access = access;
	s->deny = deny;
}

static void close_all(void)
{
	for (int o = 0; o < OWNERS; o++)
		if (owner[o].open)
			do_close(o);
}

/* No share is left over: the most exclusive open succeeds, and closes. */
static void expect_no_share_left(void)
{
	do_open(2, N4_ACCESS_BOTH, N4_DENY_BOTH);
	do_close(2);
}

/* Every access x deny of a first owner against every one of a second. */
static void test_two_owner_matrix(void **state)
{
	(void)state;
	new_file("matrix");
	for (uint32_t a1 = 1; a1 <= 3; a1++)
		for (uint32_t d1 = 0; d1 <= 3; d1++)
			for (uint32_t a2 = 1; a2 <= 3; a2++)
				for (uint32_t d2 = 0; d2 <= 3; d2++) {
					do_open(0, a1, d1);
					do_open(1, a2, d2);
					close_all();
					expect_no_share_left();
				}
}

/* The cases found miscounted: a share must be released as it was taken. */
static void test_open_close_reopen(void **state)
{
	(void)state;
	/* an existing file opened write-only and closed leaves nothing */
	new_file("wronly-closed");
	do_open(0, N4_ACCESS_WRITE, N4_DENY_NONE);
	do_close(0);
	do_open(1, N4_ACCESS_READ, N4_DENY_READ);
	do_close(1);
	expect_no_share_left();

	/* a file created write-only has no reader a deny-read conflicts with */
	snprintf(file_name, sizeof(file_name), "wronly-created");
	memset(owner, 0, sizeof(owner));
	assert_int_equal(n4_open(c, &dir, file_name, owner_name(0), N4_ACCESS_WRITE,
				 N4_DENY_NONE, true, &owner[0].sid, &file),
			 N4_OK);
	owner[0] = (struct share){ .open = true, .access = N4_ACCESS_WRITE,
				   .access_seen = 1u << N4_ACCESS_WRITE,
				   .deny_seen = 1u << N4_DENY_NONE, .sid = owner[0].sid };
	do_open(1, N4_ACCESS_WRITE, N4_DENY_READ);
	do_open(2, N4_ACCESS_READ, N4_DENY_NONE);	/* denied by owner 1 */
	close_all();
	expect_no_share_left();

	/* the same owner opening again: its shares combine, others see them */
	new_file("reopen");
	do_open(0, N4_ACCESS_READ, N4_DENY_NONE);
	do_open(0, N4_ACCESS_WRITE, N4_DENY_NONE);
	do_open(1, N4_ACCESS_READ, N4_DENY_WRITE);	/* owner 0 writes */
	do_open(1, N4_ACCESS_READ, N4_DENY_READ);	/* owner 0 reads */
	do_close(0);
	do_open(1, N4_ACCESS_READ, N4_DENY_BOTH);
	close_all();
	expect_no_share_left();

	/* open, close, open again many times: nothing accumulates */
	new_file("cycles");
	for (int i = 0; i < 20; i++) {
		do_open(i % 2, (uint32_t)(i % 3) + 1, (uint32_t)(i % 4));
		do_close(i % 2);
	}
	expect_no_share_left();
}

static void test_downgrade(void **state)
{
	(void)state;
	new_file("downgrade");
	do_open(0, N4_ACCESS_READ, N4_DENY_NONE);
	do_open(0, N4_ACCESS_WRITE, N4_DENY_WRITE);	/* both, deny write */
	do_open(1, N4_ACCESS_READ, N4_DENY_NONE);
	do_open(2, N4_ACCESS_WRITE, N4_DENY_NONE);	/* denied */
	do_downgrade(0, N4_ACCESS_READ, N4_DENY_NONE);
	do_open(2, N4_ACCESS_WRITE, N4_DENY_NONE);	/* granted now */
	do_open(1, N4_ACCESS_READ, N4_DENY_WRITE);	/* denied: 2 writes */
	do_close(2);
	do_open(1, N4_ACCESS_READ, N4_DENY_WRITE);
	do_downgrade(1, N4_ACCESS_READ, N4_DENY_NONE);
	do_open(2, N4_ACCESS_WRITE, N4_DENY_READ);	/* denied: 0, 1 read */
	close_all();
	expect_no_share_left();

	/* to more than the owner holds, or to a mode never asked for */
	new_file("downgrade-invalid");
	do_open(0, N4_ACCESS_READ, N4_DENY_WRITE);
	do_downgrade(0, N4_ACCESS_BOTH, N4_DENY_WRITE);
	do_downgrade(0, N4_ACCESS_READ, N4_DENY_BOTH);
	do_downgrade(0, N4_ACCESS_READ, N4_DENY_NONE);	/* never asked for */
	do_open(1, N4_ACCESS_WRITE, N4_DENY_NONE);	/* still denied */
	close_all();
	expect_no_share_left();

	/* Ganesha checks a downgrade against the owner's own share too */
	new_file("downgrade-self");
	do_open(0, N4_ACCESS_READ, N4_DENY_READ);
	do_downgrade(0, N4_ACCESS_READ, N4_DENY_READ);	/* SERVERFAULT */
	do_open(0, N4_ACCESS_READ, N4_DENY_NONE);	/* SHARE_DENIED */
	close_all();
	expect_no_share_left();
}

/* Random opens, closes and downgrades of three owners, against the model. */
static void test_random_sequence(void **state)
{
	struct sc_prng rng;

	(void)state;
	sc_prng_seed(&rng, SEED);
	new_file("random");
	for (int i = 0; i < RANDOM_STEPS; i++) {
		int o = (int)sc_prng_below(&rng, OWNERS);
		uint32_t r = sc_prng_below(&rng, 4);

		if (!owner[o].open || r < 2) {
			do_open(o, sc_prng_below(&rng, 3) + 1, sc_prng_below(&rng, 4));
		} else if (r == 2) {
			do_close(o);
		} else {
			/* a non-empty part of the access, any part of the deny */
			uint32_t a = owner[o].access & (sc_prng_below(&rng, 3) + 1);

			do_downgrade(o, a ? a : owner[o].access,
				     owner[o].deny & sc_prng_below(&rng, 4));
		}
	}
	close_all();
	expect_no_share_left();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_owner_matrix),
		cmocka_unit_test(test_open_close_reopen),
		cmocka_unit_test(test_downgrade),
		cmocka_unit_test(test_random_sequence),
	};

	return cmocka_run_group_tests_name("fsal_share", tests, setup, teardown);
}
