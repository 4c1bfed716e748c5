// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-sim's trace readers on small hand-written inputs: good lines of
 * each format, every kind of malformed line reported with its line number,
 * multi-block and unaligned requests, FIU's per-sector hashes, larger
 * simulated blocks, format detection, and gzip/zstd input made here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "trace.h"
#include "tracegen.h"

static char dir[] = "/tmp/sim-trace-test-XXXXXX";
static char path[sizeof(dir) + 64];

static const char *write_file(const char *name, const void *data, size_t len)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *write_text(const char *name, const char *text)
{
	return write_file(name, text, strlen(text));
}

static struct sim_trace *open_ok(const char *p, const char *fmt, uint32_t bs)
{
	char err[256] = "";
	struct sim_trace *t = sim_trace_open(p, fmt, bs, err, sizeof(err));

	if (!t)
		fail_msg("open %s: %s", p, err);
	return t;
}

/* The open fails, with a message containing want. */
static void open_fails(const char *p, const char *fmt, uint32_t bs,
		       const char *want)
{
	char err[256] = "";

	assert_null(sim_trace_open(p, fmt, bs, err, sizeof(err)));
	if (!strstr(err, want))
		fail_msg("error '%s' lacks '%s'", err, want);
}

static void next_ok(struct sim_trace *t, struct sim_req *r)
{
	int rc = sim_trace_next(t, r);

	if (rc != 1)
		fail_msg("next: %d (%s)", rc, sim_trace_error(t));
}

static void unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(s + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

/* The rest of the lines are all bad, in order, with these reasons. */
static void expect_bad(struct sim_trace *t, uint64_t first_line,
		       const char *const *reasons, size_t n)
{
	const struct sim_trace_stats *st = sim_trace_stats(t);
	uint64_t requests = st->requests;
	struct sim_req r;

	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(st->requests, requests);
	assert_int_equal(st->malformed, n);
	assert_int_equal(st->nbad, n < SIM_TRACE_BAD_KEEP ? n : SIM_TRACE_BAD_KEEP);
	for (uint32_t i = 0; i < st->nbad; i++) {
		assert_int_equal(st->bad[i].line, first_line + i);
		if (!strstr(st->bad[i].reason, reasons[i]))
			fail_msg("line %llu: reason '%s' lacks '%s'",
				 (unsigned long long)st->bad[i].line,
				 st->bad[i].reason, reasons[i]);
	}
}

/* ---- the SeaCache workload format ---- */

#define FP_A "00112233445566778899aabbccddeeff"
#define FP_B "ffeeddccbbaa99887766554433221100"
#define FP_C "0123456789abcdef0123456789ABCDEF"
#define FP_D "fedcba9876543210fedcba9876543210"

static void seacache_good_lines(void **state)
{
	const char *p = write_text("w.txt",
		"# seacache-workload v1 block_size=4096 generator=test\n"
		"# comment\n"
		"\n"
		"   # indented comment\n"
		"100 0 R 0 7 1 " FP_A "\n"
		"150\t3  W 2 9 2 " FP_B " " FP_C "   # trailing comment\r\n"
		"90 1 R 1 0 1 " FP_A); /* earlier than the first; no newline */
	struct sim_trace *t = open_ok(p, NULL, 0);
	const struct sim_trace_stats *st;
	uint8_t want[32];
	struct sim_req r;

	(void)state;
	assert_string_equal(sim_trace_format(t), "seacache");
	assert_int_equal(sim_trace_block_size(t), 4096);
	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 0);
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.op, 'R');
	assert_int_equal(r.file, 0);
	assert_int_equal(r.lbn, 7);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.fp_len, 16);
	unhex(FP_A, want, 16);
	assert_memory_equal(r.fp, want, 16);

	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 50000);
	assert_int_equal(r.vm, 3);
	assert_int_equal(r.op, 'W');
	assert_int_equal(r.file, 2);
	assert_int_equal(r.lbn, 9);
	assert_int_equal(r.nblocks, 2);
	unhex(FP_B, want, 16);
	unhex(FP_C, want + 16, 16);
	assert_memory_equal(r.fp, want, 32);

	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 0);
	assert_int_equal(r.vm, 1);
	assert_int_equal(r.lbn, 0);
	assert_int_equal(sim_trace_next(t, &r), 0);
	st = sim_trace_stats(t);
	assert_int_equal(st->lines, 7);
	assert_int_equal(st->requests, 3);
	assert_int_equal(st->malformed, 0);
	assert_int_equal(st->unaligned, 0);
	sim_trace_close(t);
}

#define WL_HEAD "# seacache-workload v1 block_size=4096\n" \
		"100 0 R 0 7 1 " FP_A "\n" /* good: fixes the fingerprint length */
/* Sixteen bad lines, eight per file (the number of reasons kept). */
#define WL_BAD1 \
	"x 0 R 0 7 1 " FP_A "\n" \
	"1 -1 R 0 7 1 " FP_A "\n" \
	"1 16777216 R 0 7 1 " FP_A "\n" \
	"1 0 X 0 7 1 " FP_A "\n" \
	"1 0 R a 7 1 " FP_A "\n" \
	"1 0 R 0 7x 1 " FP_A "\n" \
	"1 0 R 0 7 0\n" \
	"1 0 R 0 7 2 " FP_A "\n"
#define WL_BAD2 \
	"1 0 R 0 7 1 " FP_A " " FP_B "\n" \
	"1 0 R 0 7 1 abc\n" \
	"1 0 R 0 7 2 " FP_A " 0011223344556677\n" \
	"1 0 R 0 7 1 0011223344556677889900aabbccddeg\n" \
	"1 0 R 0 7 1 0011223344556677\n" \
	"1 0 R 99999999 7 1 " FP_A "\n" \
	"1 0 R 0 7\n" \
	"1 0 R 0 7 300000 " FP_A "\n"

static void seacache_malformed_lines(void **state)
{
	static const char *const reasons[] = {
		"timestamp", "bad vm", "vm 16777216 over", "not R or W",
		"bad image", "bad lbn", "block count", "1 fingerprints for 2",
		"more than 1", "hex digits (want", "fingerprint 2 has",
		"non-hex", "-byte fingerprint, earlier", "image 99999999 over",
		"bad block count", "limit 1 GiB",
	};
	struct sim_trace *t;
	struct sim_req r;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;

	(void)state;
	t = open_ok(write_text("bad1.txt", WL_HEAD WL_BAD1), "seacache", 0);
	next_ok(t, &r);
	expect_bad(t, 3, reasons, 8);
	sim_trace_close(t);
	t = open_ok(write_text("bad2.txt", WL_HEAD WL_BAD2), NULL, 0);
	next_ok(t, &r);
	expect_bad(t, 3, reasons + 8, 8);
	sim_trace_close(t);

	/* All sixteen: eight kept, the report counts the others. */
	t = open_ok(write_text("bad.txt", WL_HEAD WL_BAD1 WL_BAD2), NULL, 0);
	next_ok(t, &r);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->malformed, 16);
	assert_int_equal(sim_trace_stats(t)->nbad, SIM_TRACE_BAD_KEEP);
	f = open_memstream(&out, &outlen);
	assert_non_null(f);
	sim_trace_report(t, f);
	fclose(f);
	assert_non_null(strstr(out, "18 lines, 1 requests, 16 malformed"));
	assert_non_null(strstr(out, "line 3: bad timestamp"));
	assert_non_null(strstr(out, "line 10: 1 fingerprints for 2 blocks"));
	assert_non_null(strstr(out, "and 8 more malformed lines"));
	free(out);
	sim_trace_close(t);
}

static void seacache_bad_headers(void **state)
{
	(void)state;
	open_fails(write_text("h1.txt", "1 0 R 0 7 1 " FP_A "\n"), "seacache",
		   0, "first line must be");
	open_fails(write_text("h2.txt", "# seacache-workload v2 block_size=4096\n"),
		   NULL, 0, "not v1");
	open_fails(write_text("h3.txt", "# seacache-workload v1\n"), NULL, 0,
		   "block_size missing");
	open_fails(write_text("h4.txt", "# seacache-workload v1 block_size=3000\n"),
		   NULL, 0, "block_size missing or not a power of two");
	open_fails(write_text("h5.txt", "# seacache-workload v1 block_size=16384\n"),
		   NULL, 4096, "at least the trace's 16384");
	open_fails(write_text("h6.txt", "# seacache-workload v1 block_size=4096\n"),
		   NULL, 12288, "power of two");
	open_fails(write_text("h7.txt", ""), NULL, 0, "empty trace");
	open_fails(write_text("h8.txt", "hello world\n"), NULL, 0,
		   "cannot tell the trace format");
	open_fails(write_text("h9.txt", "x\n"), "nosuch", 0,
		   "unknown trace format 'nosuch'");
	open_fails("/nonexistent/trace", NULL, 0, "No such file");
}

/* XXH3-128 of four 16-byte fingerprints given in hex: a 16 KiB block's. */
static void block_fp(const char *hex4, uint8_t out[16])
{
	uint8_t cat[64];
	XXH128_canonical_t c;

	unhex(hex4, cat, 64);
	XXH128_canonicalFromHash(&c, XXH3_128bits(cat, 64));
	memcpy(out, c.digest, 16);
}

/*
 * Read at 16 KiB a 4 KiB workload: a simulated block is named by its four
 * fingerprints in order, wherever it is; a part a request misses is named
 * by what was last seen there, or, never seen, by its offset alone (the
 * same unseen part of two clones is the same content).
 */
static void seacache_larger_blocks(void **state)
{
	const char *p = write_text("big.txt",
		"# seacache-workload v1 block_size=4096\n"
		"0 0 R 0 4 4 " FP_A " " FP_B " " FP_C " " FP_D "\n"
		"1 1 R 1 8 4 " FP_A " " FP_B " " FP_C " " FP_D "\n"
		"2 0 W 0 5 2 " FP_D " " FP_D "\n"
		"3 2 R 2 13 2 " FP_B " " FP_C "\n"
		"4 3 R 3 13 2 " FP_B " " FP_C "\n"
		"5 0 R 0 6 4 " FP_C " " FP_D " " FP_A " " FP_B "\n");
	struct sim_trace *t = open_ok(p, NULL, 16384);
	uint8_t want[16], unseen[16];
	struct sim_req r;

	(void)state;
	next_ok(t, &r);
	assert_int_equal(r.lbn, 1);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.fp_len, 16);
	block_fp(FP_A FP_B FP_C FP_D, want);
	assert_memory_equal(r.fp, want, 16);
	next_ok(t, &r); /* the same content in another image */
	assert_int_equal(r.lbn, 2);
	assert_int_equal(r.file, 1);
	assert_memory_equal(r.fp, want, 16);

	next_ok(t, &r); /* a partial write: the other parts as last seen */
	assert_int_equal(r.lbn, 1);
	assert_int_equal(r.nblocks, 1);
	block_fp(FP_A FP_D FP_D FP_D, want);
	assert_memory_equal(r.fp, want, 16);

	next_ok(t, &r); /* image 2 never seen: parts 12 and 15 unseen */
	assert_int_equal(r.lbn, 3);
	memcpy(unseen, r.fp, 16);
	block_fp(FP_A FP_B FP_C FP_D, want);
	assert_memory_not_equal(unseen, want, 16);
	next_ok(t, &r); /* its clone, image 3, the same */
	assert_int_equal(r.file, 3);
	assert_memory_equal(r.fp, unseen, 16);

	/* Straddling two simulated blocks: both named from what is known. */
	next_ok(t, &r);
	assert_int_equal(r.file, 0);
	assert_int_equal(r.lbn, 1);
	assert_int_equal(r.nblocks, 2);
	block_fp(FP_A FP_D FP_C FP_D, want);
	assert_memory_equal(r.fp, want, 16);
	block_fp(FP_A FP_B FP_C FP_D, want); /* units 10, 11 unseen */
	assert_memory_not_equal(r.fp + 16, want, 16);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->unaligned, 4);
	sim_trace_close(t);
}

/* ---- FIU ---- */

#define MD5_1 "d41d8cd98f00b204e9800998ecf8427e"
#define MD5_2 "0cc175b9c0f1b6a831c399e269772661"
#define MD5_3 "92eb5ffee6ae2fec3ad71c777531578f"

static void fiu_good_lines(void **state)
{
	const char *p = write_text("fiu.txt",
		"1000000 4985 syslogd 80 8 W 8 0 " MD5_1 "\n"
		"2000000 77 cp 96 16 R 8 16 " MD5_2 MD5_3 "\n"
		"3000000 4985 syslogd 112 16 R 8 0 " MD5_3 " " MD5_1 "\n"
		"4000000 4985 syslogd 4 8 R 8 0 " MD5_2 "\n");
	struct sim_trace *t = open_ok(p, NULL, 0);
	uint8_t want[32];
	struct sim_req r;

	(void)state;
	assert_string_equal(sim_trace_format(t), "fiu");
	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 0);
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.file, 0);
	assert_int_equal(r.op, 'W');
	assert_int_equal(r.lbn, 10);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.fp_len, 16);
	unhex(MD5_1, want, 16);
	assert_memory_equal(r.fp, want, 16);

	next_ok(t, &r); /* multi-block, MD5s concatenated, device 8:16 */
	assert_int_equal(r.ts_ns, 1000000);
	assert_int_equal(r.vm, 1);
	assert_int_equal(r.file, 1);
	assert_int_equal(r.lbn, 12);
	assert_int_equal(r.nblocks, 2);
	unhex(MD5_2 MD5_3, want, 32);
	assert_memory_equal(r.fp, want, 32);

	next_ok(t, &r); /* MD5s as separate fields */
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.lbn, 14);
	unhex(MD5_3 MD5_1, want, 32);
	assert_memory_equal(r.fp, want, 32);

	/* 4 KiB from sector 4: two blocks, the hash names the first, the
	 * second is named as an unseen part. */
	next_ok(t, &r);
	assert_int_equal(r.lbn, 0);
	assert_int_equal(r.nblocks, 2);
	unhex(MD5_2, want, 16);
	assert_memory_equal(r.fp, want, 16);
	assert_memory_not_equal(r.fp + 16, want, 16);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->unaligned, 1);
	sim_trace_close(t);

	/* fiu-pid: the process is the VM, the device still the file. */
	t = open_ok(p, "fiu-pid", 0);
	next_ok(t, &r);
	assert_int_equal(r.vm, 0);
	next_ok(t, &r);
	assert_int_equal(r.vm, 1);
	assert_int_equal(r.file, 1);
	next_ok(t, &r);
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.file, 0);
	sim_trace_close(t);
}

/*
 * The FIU trace with one MD5 per 512 B sector: a 4 KiB block is named by
 * XXH3-128 of its eight sector MD5s, so equal blocks match anywhere.
 */
static void fiu_sector_hashes(void **state)
{
	char text[4096], md5s[8 * 32 + 1] = "";
	const char *p;
	struct sim_trace *t;
	uint8_t cat[128];
	XXH128_canonical_t c;
	struct sim_req r;

	(void)state;
	for (int i = 0; i < 8; i++)
		strcat(md5s, i % 3 ? MD5_1 : MD5_2);
	snprintf(text, sizeof(text),
		 "1 1 p 1 1 R 8 0 " MD5_3 "\n" /* one sector, before the mode is known */
		 "2 1 p 8 8 R 8 0 %s\n"
		 "3 1 p 64 8 R 8 1 %s\n"
		 "4 1 p 1 1 R 8 0 " MD5_3 "\n" /* one sector, now per-sector */
		 "5 1 p 8 8 R 8 0 " MD5_1 "\n", /* a 4 KiB-hash line still reads */
		 md5s, md5s);
	p = write_text("fiu512.txt", text);
	t = open_ok(p, "fiu", 0);
	next_ok(t, &r);
	assert_int_equal(r.lbn, 0);
	unhex(MD5_3, cat, 16);
	assert_memory_equal(r.fp, cat, 16); /* read as a 4 KiB hash */

	unhex(md5s, cat, 128);
	XXH128_canonicalFromHash(&c, XXH3_128bits(cat, 128));
	next_ok(t, &r);
	assert_int_equal(r.lbn, 1);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.fp_len, 16);
	assert_memory_equal(r.fp, c.digest, 16);
	next_ok(t, &r);
	assert_int_equal(r.lbn, 8);
	assert_int_equal(r.file, 1);
	assert_memory_equal(r.fp, c.digest, 16);

	next_ok(t, &r);
	assert_int_equal(r.lbn, 0);
	unhex(MD5_3, cat, 16);
	assert_memory_not_equal(r.fp, cat, 16); /* one sector of eight */
	next_ok(t, &r);
	unhex(MD5_1, cat, 16);
	assert_memory_equal(r.fp, cat, 16);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->malformed, 0);
	sim_trace_close(t);
}

#define FIU_GOOD "1 1 p 0 8 R 8 0 " MD5_1 "\n"

static void fiu_malformed_lines(void **state)
{
	static const char *const reasons[] = {
		"bad timestamp", "bad pid", "missing process", "bad lba",
		"bad size", "not R or W", "major:minor", "not a multiple of 32",
		"non-hex", "no MD5", "2 MD5s for 8 sectors", "zero-length",
	};
	struct sim_trace *t;
	struct sim_req r;

	(void)state;
	t = open_ok(write_text("fiubad1.txt", FIU_GOOD
		"x 1 p 0 8 R 8 0 " MD5_1 "\n"
		"1 -1 p 0 8 R 8 0 " MD5_1 "\n"
		"1 1\n"
		"1 1 p lba 8 R 8 0 " MD5_1 "\n"
		"1 1 p 0 8k R 8 0 " MD5_1 "\n"
		"1 1 p 0 8 Read 8 0 " MD5_1 "\n"
		"1 1 p 0 8 R 8 " MD5_1 "\n"
		"1 1 p 0 8 R 8 0 d41d8cd98f00b204e9800998ecf8427\n"), NULL, 0);
	next_ok(t, &r);
	expect_bad(t, 2, reasons, 8);
	sim_trace_close(t);
	t = open_ok(write_text("fiubad2.txt", FIU_GOOD
		"1 1 p 0 8 R 8 0 z41d8cd98f00b204e9800998ecf8427e\n"
		"1 1 p 0 8 R 8 0\n"
		"1 1 p 0 8 R 8 0 " MD5_1 MD5_2 "\n"
		"1 1 p 0 0 R 8 0 " MD5_1 "\n"), "fiu", 0);
	next_ok(t, &r);
	expect_bad(t, 2, reasons + 8, 4);
	sim_trace_close(t);
}

/* ---- MSR Cambridge ---- */

static void msr_good_lines(void **state)
{
	const char *p = write_text("msr.csv",
		"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
		"128166372003061629,hm,1,Read,3154149376,32768,1331\n"
		"128166372003071629,hm,0,Write,4096,4096,200\n"
		"128166372003081629,prxy,1,write,6144,4096,5\n"
		"128166372003091629,hm,1,Read,8192,100,5\n");
	struct sim_trace *t = open_ok(p, NULL, 0);
	struct sim_req r;

	(void)state;
	assert_string_equal(sim_trace_format(t), "msr");
	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 0);
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.file, 0);
	assert_int_equal(r.op, 'R');
	assert_int_equal(r.lbn, 3154149376 / 4096);
	assert_int_equal(r.nblocks, 8);
	assert_int_equal(r.fp_len, 0);
	assert_null(r.fp);
	next_ok(t, &r);
	assert_int_equal(r.ts_ns, 1000000); /* 10000 filetime units */
	assert_int_equal(r.vm, 1); /* another disk of hm: another volume */
	assert_int_equal(r.op, 'W');
	assert_int_equal(r.lbn, 1);
	next_ok(t, &r);
	assert_int_equal(r.vm, 2);
	assert_int_equal(r.file, 2);
	assert_int_equal(r.op, 'W');
	assert_int_equal(r.lbn, 1);
	assert_int_equal(r.nblocks, 2); /* 6144..10240 touches blocks 1 and 2 */
	next_ok(t, &r);
	assert_int_equal(r.vm, 0);
	assert_int_equal(r.lbn, 2);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->unaligned, 2);
	assert_int_equal(sim_trace_stats(t)->lines, 5);
	sim_trace_close(t);

	/* At 64 KiB: the same offsets, larger blocks. */
	t = open_ok(p, "msr", 65536);
	next_ok(t, &r);
	assert_int_equal(r.lbn, 3154149376 / 65536);
	assert_int_equal(r.nblocks, 1);
	sim_trace_close(t);
}

static void msr_malformed_lines(void **state)
{
	static const char *const reasons[] = {
		"bad timestamp", "missing hostname", "bad disk", "Read or Write",
		"bad offset", "bad size", "missing response time", "response time or extra",
		"zero-length", "limit 1 GiB", "too few fields",
	};
	const char *p = write_text("msrbad.csv",
		"128166372003061629,hm,1,Read,0,4096,1\n"
		"-1,hm,1,Read,0,4096,1\n"
		"1,,1,Read,0,4096,1\n"
		"1,hm,x,Read,0,4096,1\n"
		"1,hm,1,Erase,0,4096,1\n"
		"1,hm,1,Read,-5,4096,1\n"
		"1,hm,1,Read,0,4k,1\n"
		"1,hm,1,Read,0,4096\n"
		"1,hm,1,Read,0,4096,1,extra\n");
	struct sim_trace *t = open_ok(p, NULL, 0);
	struct sim_req r;

	(void)state;
	next_ok(t, &r);
	expect_bad(t, 2, reasons, 8);
	sim_trace_close(t);
	t = open_ok(write_text("msrbad2.csv",
		"128166372003061629,hm,1,Read,0,4096,1\n"
		"1,hm,1,Read,0,0,1\n"
		"1,hm,1,Read,0,2147483648,1\n"
		"1,hm,1,Read\n"), NULL, 0);
	next_ok(t, &r);
	expect_bad(t, 2, reasons + 8, 3);
	sim_trace_close(t);
}

/* ---- compressed input and buffer boundaries ---- */

static char *gen_text(size_t *len)
{
	struct sim_gen_params p;
	char err[128], *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	sim_gen_defaults(&p);
	p.vms = 6;
	p.blocks = 8000;
	p.boot_blocks = 2000;
	p.max_req = 5;
	assert_int_equal(sim_gen_write(&p, f, NULL, err, sizeof(err)), 0);
	fclose(f);
	assert_true(*len > (2u << 20)); /* more than two input chunks */
	return buf;
}

/* The two traces hand out the same requests, in the same order. */
static void same_requests(const char *a, const char *b)
{
	struct sim_trace *ta = open_ok(a, NULL, 0), *tb = open_ok(b, NULL, 0);
	struct sim_req ra, rb;
	int rca, rcb;

	while ((rca = sim_trace_next(ta, &ra)) == 1) {
		rcb = sim_trace_next(tb, &rb);
		assert_int_equal(rcb, 1);
		assert_int_equal(ra.ts_ns, rb.ts_ns);
		assert_int_equal(ra.vm, rb.vm);
		assert_int_equal(ra.op, rb.op);
		assert_int_equal(ra.file, rb.file);
		assert_int_equal(ra.lbn, rb.lbn);
		assert_int_equal(ra.nblocks, rb.nblocks);
		assert_int_equal(ra.fp_len, rb.fp_len);
		assert_memory_equal(ra.fp, rb.fp, (size_t)ra.nblocks * ra.fp_len);
	}
	assert_int_equal(rca, 0);
	assert_int_equal(sim_trace_next(tb, &rb), 0);
	assert_int_equal(sim_trace_stats(ta)->malformed, 0);
	assert_int_equal(sim_trace_stats(ta)->requests,
			 sim_trace_stats(tb)->requests);
	assert_true(sim_trace_stats(ta)->requests > 10000);
	sim_trace_close(ta);
	sim_trace_close(tb);
}

/* Reading p ends in an error whose message contains want. */
static void read_fails(const char *p, const char *want)
{
	struct sim_trace *t = open_ok(p, NULL, 0);
	struct sim_req r;
	int rc;

	while ((rc = sim_trace_next(t, &r)) == 1)
		;
	assert_int_equal(rc, -1);
	assert_non_null(strstr(sim_trace_error(t), want));
	sim_trace_close(t);
}

static void gzip_file(const char *name, const char *data, size_t len,
		      int members)
{
	char gzpath[sizeof(path)];
	size_t part = len / (size_t)members;

	snprintf(gzpath, sizeof(gzpath), "%s/%s", dir, name);
	unlink(gzpath);
	for (int m = 0; m < members; m++) {
		/* "a": each gzopen adds one more gzip member */
		gzFile gz = gzopen(gzpath, "ab6");
		size_t off = (size_t)m * part;
		size_t n = m == members - 1 ? len - off : part;

		assert_non_null(gz);
		assert_int_equal(gzwrite(gz, data + off, (unsigned)n), (int)n);
		assert_int_equal(gzclose(gz), Z_OK);
	}
}

static void compressed_input(void **state)
{
	size_t len, zcap, zlen, half;
	char *text = gen_text(&len);
	char plain[sizeof(path)], *z;

	(void)state;
	snprintf(plain, sizeof(plain), "%s", write_file("gen.txt", text, len));
	gzip_file("gen.txt.gz", text, len, 1);
	snprintf(path, sizeof(path), "%s/gen.txt.gz", dir);
	same_requests(plain, path);
	gzip_file("gen2.txt.gz", text, len, 3); /* as `cat a.gz b.gz` */
	snprintf(path, sizeof(path), "%s/gen2.txt.gz", dir);
	same_requests(plain, path);

	/* zstd, in two frames */
	zcap = ZSTD_compressBound(len) * 2;
	z = malloc(zcap);
	assert_non_null(z);
	half = len / 2;
	zlen = ZSTD_compress(z, zcap, text, half, 3);
	assert_false(ZSTD_isError(zlen));
	{
		size_t n = ZSTD_compress(z + zlen, zcap - zlen, text + half,
					 len - half, 3);

		assert_false(ZSTD_isError(n));
		zlen += n;
	}
	write_file("gen.txt.zst", z, zlen);
	same_requests(plain, path);

	/* Truncated: an error with a message, not a silent end. */
	read_fails(write_file("cut.txt.zst", z, zlen / 2), "truncated zstd");
	snprintf(path, sizeof(path), "%s/gen.txt.gz", dir);
	{
		FILE *f = fopen(path, "rb");
		char *gz = malloc(len);
		size_t gzlen;

		assert_non_null(f);
		assert_non_null(gz);
		gzlen = fread(gz, 1, len, f);
		fclose(f);
		read_fails(write_file("cut.txt.gz", gz, gzlen - 100),
			   "truncated gzip");
		/* Corrupt in the middle: zlib's message. */
		memset(gz + gzlen / 2, 0x55, 64);
		read_fails(write_file("bad.txt.gz", gz, gzlen), "gzip");
		free(gz);
	}
	/* An FIU trace compressed: detection looks at decompressed text. */
	{
		static const char fiu[] = "1 1 p 0 8 R 8 0 " MD5_1 "\n";
		struct sim_trace *t;
		struct sim_req r;

		gzip_file("fiu.gz", fiu, strlen(fiu), 1);
		snprintf(path, sizeof(path), "%s/fiu.gz", dir);
		t = open_ok(path, NULL, 0);
		assert_string_equal(sim_trace_format(t), "fiu");
		next_ok(t, &r);
		assert_int_equal(sim_trace_next(t, &r), 0);
		sim_trace_close(t);
	}
	free(z);
	free(text);
}

/* A line over the 64 MiB limit is one malformed line; reading goes on. */
static void overlong_line(void **state)
{
	static const char head[] = "# seacache-workload v1 block_size=4096\n"
				   "0 0 R 0 1 1 " FP_A "\n";
	static const char tail[] = "\n5 0 R 0 2 1 " FP_B "\n";
	size_t big = (64u << 20) + 10, len = sizeof(head) - 1 + big + sizeof(tail) - 1;
	char *text = malloc(len);
	struct sim_trace *t;
	struct sim_req r;

	(void)state;
	assert_non_null(text);
	memcpy(text, head, sizeof(head) - 1);
	memset(text + sizeof(head) - 1, '7', big);
	memcpy(text + sizeof(head) - 1 + big, tail, sizeof(tail) - 1);
	t = open_ok(write_file("long.txt", text, len), NULL, 0);
	free(text);
	next_ok(t, &r);
	next_ok(t, &r);
	assert_int_equal(r.lbn, 2);
	assert_int_equal(sim_trace_next(t, &r), 0);
	assert_int_equal(sim_trace_stats(t)->malformed, 1);
	assert_int_equal(sim_trace_stats(t)->bad[0].line, 3);
	assert_non_null(strstr(sim_trace_stats(t)->bad[0].reason, "longer than"));
	assert_int_equal(sim_trace_stats(t)->lines, 4);
	sim_trace_close(t);
	unlink(path);
}

/*
 * Block ids: dense from 0 in order of first appearance, the same address
 * or fingerprint the same id; a binary trace written from the text gives
 * back every request's time, VM, kind, length and ids, and its header the
 * id counts; a truncated one is an error, not an end.
 */
static void ids_and_binary(void **state)
{
	static const uint32_t want_addr[] = { 0, 1, 2, 0, 1, 3 };
	static const uint32_t want_cont[] = { 0, 1, 0, 0, 2, 1 };
	const char *p = write_text("ids.txt",
		"# seacache-workload v1 block_size=4096\n"
		"10 0 R 0 5 2 " FP_A " " FP_B "\n"	/* a0 a1: c0 c1 */
		"20 1 W 1 5 1 " FP_A "\n"		/* a2 (other file): c0 */
		"30 0 R 0 5 1 " FP_A "\n"		/* a0: c0 */
		"40 0 R 0 6 2 " FP_C " " FP_B "\n");	/* a1 a3: c2 c1 */
	char bin[sizeof(path)], err[256] = "";
	struct sim_trace *t, *b;
	struct sim_req r, q;
	uint32_t k = 0, addrs, contents, i;
	FILE *f;

	(void)state;
	t = open_ok(p, NULL, 0);
	sim_trace_want_ids(t);
	while (sim_trace_next(t, &r) == 1)
		for (i = 0; i < r.nblocks; i++, k++) {
			assert_int_equal(r.addr[i], want_addr[k]);
			assert_int_equal(r.content[i], want_cont[k]);
		}
	assert_int_equal(k, 6);
	assert_false(sim_trace_ids(t, &addrs, &contents));
	assert_int_equal(addrs, 4);
	assert_int_equal(contents, 3);
	sim_trace_close(t);

	snprintf(bin, sizeof(bin), "%s/ids.sctr", dir);
	assert_int_equal(sim_trace_convert(p, NULL, 0, bin, err, sizeof(err)), 0);
	b = open_ok(bin, NULL, 0);
	assert_string_equal(sim_trace_format(b), "binary");
	assert_true(sim_trace_ids(b, &addrs, &contents));
	assert_int_equal(addrs, 4);
	assert_int_equal(contents, 3);
	t = open_ok(p, NULL, 0);
	sim_trace_want_ids(t);
	while (sim_trace_next(t, &r) == 1) {
		next_ok(b, &q);
		assert_int_equal(q.ts_ns, r.ts_ns);
		assert_int_equal(q.vm, r.vm);
		assert_int_equal(q.op, r.op);
		assert_int_equal(q.nblocks, r.nblocks);
		assert_memory_equal(q.addr, r.addr, r.nblocks * 4);
		assert_memory_equal(q.content, r.content, r.nblocks * 4);
	}
	assert_int_equal(sim_trace_next(b, &q), 0);
	sim_trace_close(t);
	sim_trace_close(b);

	/* cut in the middle of the last record (16 + 8 bytes a block) */
	assert_int_equal(truncate(bin, 64 + 32 + 24 + 24 + 10), 0);
	b = open_ok(bin, NULL, 0);
	for (k = 0; k < 3; k++)
		next_ok(b, &q);
	assert_int_equal(sim_trace_next(b, &q), -1);
	assert_non_null(strstr(sim_trace_error(b), "truncated"));
	sim_trace_close(b);
	f = fopen(bin, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite("SCTRACE1", 1, 8, f), 8);
	assert_int_equal(fclose(f), 0);
	open_fails(bin, NULL, 0, "shorter than its header");
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[sizeof(dir) + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seacache_good_lines),
		cmocka_unit_test(seacache_malformed_lines),
		cmocka_unit_test(seacache_bad_headers),
		cmocka_unit_test(seacache_larger_blocks),
		cmocka_unit_test(fiu_good_lines),
		cmocka_unit_test(fiu_sector_hashes),
		cmocka_unit_test(fiu_malformed_lines),
		cmocka_unit_test(msr_good_lines),
		cmocka_unit_test(msr_malformed_lines),
		cmocka_unit_test(compressed_input),
		cmocka_unit_test(overlong_line),
		cmocka_unit_test(ids_and_binary),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
