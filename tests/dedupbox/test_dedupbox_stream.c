// SPDX-License-Identifier: BSD-2-Clause
/*
 * The box pair as processes on loopback, between clients of this test and
 * an echo server of this test: every stream a client sends comes back byte
 * for byte through both boxes both ways — several clients at once, random,
 * repetitive and NFS-shaped data written in pieces of every size, the same
 * stream twice (the second time mostly fingerprints), the server box
 * restarted (the host box links again, cold), a client that resets its
 * connection mid-record (what it sent is delivered), and garbage or a
 * truncated stream on the link from either side (that link is closed with
 * a log line, the others are served).
 * usage: test_dedupbox_stream SEACACHE-DEDUPBOX
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/prng.h>

#include "traffic.h"

static const char *box_path;
static char dir[] = "/tmp/dedupbox-stream-XXXXXX";
static int echo_port, link_port, fwd_port;
static pid_t server_box, host_box;

/* ---- the echo server: what it received last, per closed connection ---- */

static pthread_mutex_t echo_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t echo_cond = PTHREAD_COND_INITIALIZER;
static uint64_t echo_closed, echo_last_bytes;

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	uint64_t total = 0;
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += (uint64_t)n;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	close(fd);
	pthread_mutex_lock(&echo_lock);
	echo_closed++;
	echo_last_bytes = total;
	pthread_cond_broadcast(&echo_cond);
	pthread_mutex_unlock(&echo_lock);
	return NULL;
}

static int listen_any(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void *echo_server(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;

		if (fd < 0)
			continue;
		pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	return NULL;
}

/* A port nothing listens on now. */
static int free_port(void)
{
	int port, fd = listen_any(&port);

	close(fd);
	return port;
}

static int dial(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	for (int i = 0; i < 200; i++) {
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			return fd;
		usleep(20000);
	}
	fail_msg("cannot connect to port %d: %s", port, strerror(errno));
	return -1;
}

/* ---- the boxes ---------------------------------------------------------- */

static pid_t start_box(const char *name, char *const args[])
{
	char out[256], err[256];
	pid_t pid;

	snprintf(out, sizeof(out), "%s/%s.out", dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", dir, name);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(o, 1);
		dup2(e, 2);
		execv(box_path, args);
		_exit(127);
	}
	return pid;
}

static pid_t start_server_box(void)
{
	char link[32], target[32];
	char *args[] = { (char *)box_path, "--side", "server", "--link", link,
			 "--target", target, "--json", "--cache-mib", "16", NULL };

	snprintf(link, sizeof(link), "127.0.0.1:%d", link_port);
	snprintf(target, sizeof(target), "127.0.0.1:%d", echo_port);
	return start_box("server", args);
}

static pid_t start_host_box(const char *name, int to_port, int listen_port)
{
	char link[32], fwd[64];
	char *args[] = { (char *)box_path, "--side", "host", "--link", link,
			 "--forward", fwd, "--json", "--rw", "--cache-mib", "16", NULL };

	snprintf(link, sizeof(link), "127.0.0.1:%d", to_port);
	snprintf(fwd, sizeof(fwd), "127.0.0.1:%d=127.0.0.1:%d", listen_port, echo_port);
	return start_box(name, args);
}

static void stop_box(pid_t pid)
{
	int st;

	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char *slurp(const char *name)
{
	char path[256];
	FILE *f;
	char *s;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

static unsigned int count_lines(const char *text, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Wait until NAME's log holds NEEDLE COUNT times (10 s at most). */
static void await_log(const char *name, const char *needle, unsigned int count)
{
	for (int i = 0; i < 500; i++) {
		char *s = slurp(name);
		unsigned int n = count_lines(s, needle);

		free(s);
		if (n >= count)
			return;
		usleep(20000);
	}
	fail_msg("%s never logged \"%s\" %u times", name, needle, count);
}

/* A counter from a box's newest statistics line, asked for by SIGUSR1. */
static uint64_t box_stat(pid_t pid, const char *name, const char *key)
{
	char out[64], k[64], *s, *last, *p;
	unsigned int before;
	uint64_t v;

	snprintf(out, sizeof(out), "%s.out", name);
	s = slurp(out);
	before = count_lines(s, "\n");
	free(s);
	assert_int_equal(kill(pid, SIGUSR1), 0);
	for (int i = 0;; i++) {
		s = slurp(out);
		if (count_lines(s, "\n") > before)
			break;
		free(s);
		assert_true(i < 500);
		usleep(10000);
	}
	s[strlen(s) - 1] = '\0';
	last = strrchr(s, '\n');
	last = last ? last + 1 : s;
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(last, k);
	assert_non_null(p);
	v = strtoull(p + strlen(k), NULL, 10);
	free(s);
	return v;
}

/* ---- clients ------------------------------------------------------------ */

struct client {
	enum traffic_kind kind;
	uint64_t seed;
	size_t len;
	int port;
	int ok;
};

struct writer {
	int fd;
	const uint8_t *data;
	size_t len;
	uint64_t seed;
};

/* Writes in pieces of every size class: 1 byte to 100 KB. */
static void *writer(void *arg)
{
	struct writer *w = arg;
	struct sc_prng g;

	sc_prng_seed(&g, w->seed);
	for (size_t off = 0; off < w->len;) {
		static const uint32_t max[] = { 1, 7, 600, 5000, 70000, 100000 };
		size_t n = 1 + sc_prng_below(&g, max[sc_prng_below(&g, 6)]);
		ssize_t k;

		if (n > w->len - off)
			n = w->len - off;
		k = write(w->fd, w->data + off, n);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

/* Send a stream through the boxes, read the echo: equal? */
static void *client_run(void *arg)
{
	struct client *c = arg;
	size_t len, got = 0;
	uint8_t *data = traffic_make(c->kind, c->seed, c->len, &len);
	uint8_t *back = malloc(len + 1);
	struct writer w;
	pthread_t t;
	ssize_t n;

	c->ok = 0;
	if (!data || !back)
		return NULL;
	w = (struct writer){ dial(c->port), data, len, c->seed };
	pthread_create(&t, NULL, writer, &w);
	while ((n = read(w.fd, back + got, len + 1 - got)) > 0)
		got += (size_t)n;
	pthread_join(t, NULL);
	close(w.fd);
	c->ok = got == len && !memcmp(back, data, len);
	if (!c->ok)
		fprintf(stderr, "client %d/%llu: %zu of %zu bytes back%s\n", c->kind,
			(unsigned long long)c->seed, got, len,
			got == len ? ", different" : "");
	free(data);
	free(back);
	return NULL;
}

static void one_client(enum traffic_kind kind, uint64_t seed, size_t len)
{
	struct client c = { kind, seed, len, fwd_port, 0 };

	client_run(&c);
	assert_true(c.ok);
}

/* ---- the cases ---------------------------------------------------------- */

static void clients_at_once(void **state)
{
	struct client c[6];
	pthread_t t[6];

	(void)state;
	for (int i = 0; i < 6; i++) {
		c[i] = (struct client){ (enum traffic_kind)(i % 3), 100 + (uint64_t)i,
					(size_t)(3 + i) << 20, fwd_port, 0 };
		pthread_create(&t[i], NULL, client_run, &c[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		assert_true(c[i].ok);
	}
}

/*
 * The same NFS-shaped stream twice: the second sends no block whole but
 * those the first sent only in part (an idle flush while the writer was
 * not scheduled: those were never indexed); every other payload block is
 * a reference.
 */
static void second_pass_is_fingerprints(void **state)
{
	uint64_t s0, s1, s2, ref0, ref2, new1, new2, part0, part1;

	(void)state;
	s0 = box_stat(server_box, "server", "link_tx_bytes");
	part0 = box_stat(server_box, "server", "partial_blocks");
	one_client(TRAFFIC_NFS, 200, 8 << 20);
	s1 = box_stat(server_box, "server", "link_tx_bytes");
	ref0 = box_stat(server_box, "server", "ref_bytes");
	new1 = box_stat(server_box, "server", "new_blocks");
	part1 = box_stat(server_box, "server", "partial_blocks");
	one_client(TRAFFIC_NFS, 200, 8 << 20);
	s2 = box_stat(server_box, "server", "link_tx_bytes");
	ref2 = box_stat(server_box, "server", "ref_bytes");
	new2 = box_stat(server_box, "server", "new_blocks");
	print_message("first pass %llu bytes on the link, second %llu\n",
		      (unsigned long long)(s1 - s0), (unsigned long long)(s2 - s1));
	assert_true(ref2 > ref0);
	assert_true(new2 - new1 <= part1 - part0);
	assert_true(s2 - s1 < s1 - s0);
}

/* Garbage and truncated streams on the link, with a client meanwhile. */
static void bad_links_closed_others_served(void **state)
{
	static const char hs_prefix[] = "SCDBOX1";
	uint8_t hs[32] = { 0 }, junk[64];
	struct client c = { TRAFFIC_NFS, 300, 16 << 20, fwd_port, 0 };
	struct sc_prng g;
	pthread_t t;
	int fd;

	(void)state;
	pthread_create(&t, NULL, client_run, &c);
	sc_prng_seed(&g, 7);
	sc_prng_fill(&g, junk, sizeof(junk));

	fd = dial(link_port);	/* not a box at all */
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	await_log("server.err", "not a dedup box (bad handshake)", 1);
	close(fd);

	memcpy(hs, hs_prefix, sizeof(hs_prefix));
	hs[11] = 1;		/* version */
	hs[14] = 1;		/* 256 slots */
	fd = dial(link_port);	/* a box that sends garbage frames */
	assert_int_equal(write(fd, hs, sizeof(hs)), (ssize_t)sizeof(hs));
	junk[0] = 0x77;
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	await_log("server.err", "bad stream from the peer: unknown frame type 119", 1);
	close(fd);

	fd = dial(link_port);	/* a box that stops mid-frame */
	assert_int_equal(write(fd, hs, sizeof(hs)), (ssize_t)sizeof(hs));
	junk[0] = 3;		/* LIT of 0x100 bytes, 20 of them sent */
	memset(junk + 1, 0, 8);
	junk[7] = 1;
	assert_int_equal(write(fd, junk, 29), 29);
	/* its handshake read: the close is a FIN, not a reset */
	assert_int_equal(read(fd, junk, sizeof(hs)), (ssize_t)sizeof(hs));
	close(fd);
	await_log("server.err", "in the middle of a frame (truncated stream, 29 bytes left)", 1);

	pthread_join(t, NULL);
	assert_true(c.ok);
	one_client(TRAFFIC_RANDOM, 301, 1 << 20);
}

/* A host box whose "server box" sends garbage: it says so and retries. */
static void host_box_refuses_garbage(void **state)
{
	int port, lfd = listen_any(&port), fd;
	uint8_t junk[64];
	pid_t pid;
	char *log;

	(void)state;
	memset(junk, 0xab, sizeof(junk));
	pid = start_host_box("host2", port, free_port());
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	await_log("host2.err", "not a dedup box (bad handshake); link closed", 1);
	close(fd);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);	/* it links again */
	assert_true(fd >= 0);
	close(fd);
	close(lfd);
	stop_box(pid);
	log = slurp("host2.err");
	assert_null(strstr(log, " up: "));
	free(log);
}

/*
 * A client that stops mid-record and closes with the echo unread, which
 * resets its connection: every byte it sent reaches the server all the
 * same, though the host box's writes to it fail.
 */
static void truncated_client_delivered(void **state)
{
	size_t len;
	uint8_t *data = traffic_make(TRAFFIC_NFS, 400, 1 << 20, &len);
	uint64_t closed;
	uint8_t echo;
	int fd, unsent;

	(void)state;
	assert_non_null(data);
	pthread_mutex_lock(&echo_lock);
	closed = echo_closed;
	pthread_mutex_unlock(&echo_lock);
	fd = dial(fwd_port);
	/* a record mark and part of a payload block: the chunker holds some */
	assert_int_equal(write(fd, data, 300000), 300000);
	/*
	 * The reset drops what is still in this socket's send queue: wait
	 * until the host box's socket has it all, so "sent" is all 300000.
	 */
	for (int i = 0;; i++) {
		assert_int_equal(ioctl(fd, SIOCOUTQ, &unsent), 0);
		if (!unsent)
			break;
		assert_true(i < 500);
		usleep(20000);
	}
	/* echo unread at the close: a reset, not an end of stream */
	assert_int_equal(recv(fd, &echo, 1, MSG_PEEK), 1);
	close(fd);
	pthread_mutex_lock(&echo_lock);
	while (echo_closed == closed)
		pthread_cond_wait(&echo_cond, &echo_lock);
	assert_int_equal(echo_last_bytes, 300000);
	pthread_mutex_unlock(&echo_lock);
	await_log("host.err", ": 300000 bytes in", 1);
	free(data);
}

/* The server box restarts: the host box links again, both cold. */
static void server_box_restart(void **state)
{
	(void)state;
	one_client(TRAFFIC_NFS, 500, 4 << 20);
	stop_box(server_box);
	await_log("host.err", "link 127.0.0.1:", 1);
	server_box = start_server_box();
	await_log("host.err", "a cold session (both indexes empty)", 2);
	one_client(TRAFFIC_NFS, 500, 4 << 20);
	/* cold: the same stream again sent its blocks whole first */
	assert_int_equal(box_stat(server_box, "server", "links"), 1);
	assert_true(box_stat(server_box, "server", "new_blocks") > 0);
	assert_int_equal(box_stat(host_box, "host", "links"), 2);
}

static int setup(void **state)
{
	int efd = listen_any(&echo_port);
	pthread_t t;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	pthread_create(&t, NULL, echo_server, (void *)(intptr_t)efd);
	pthread_detach(t);
	link_port = free_port();
	fwd_port = free_port();
	server_box = start_server_box();
	host_box = start_host_box("host", link_port, fwd_port);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	stop_box(host_box);
	stop_box(server_box);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(clients_at_once),
		cmocka_unit_test(second_pass_is_fingerprints),
		cmocka_unit_test(bad_links_closed_others_served),
		cmocka_unit_test(host_box_refuses_garbage),
		cmocka_unit_test(truncated_client_delivered),
		cmocka_unit_test(server_box_restart),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_dedupbox_stream SEACACHE-DEDUPBOX\n");
		return 2;
	}
	box_path = argv[1];
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
