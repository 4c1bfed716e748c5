// SPDX-License-Identifier: BSD-2-Clause
/*
 * scfs-fault-proxy: a TCP relay for the seacache.ko tests.  Between the
 * guest and the CSI service: killed, it is a CSI service that went away
 * (connections reset, new ones refused) while NFS, which does not go
 * through it, stays up; started again on the same port, the same service
 * is back.  In the guest (a static program): it joins the loopback
 * addresses the CSI service knows hosts by to QEMU's user network.
 *
 *   scfs-fault-proxy [ADDR:]PORT [ADDR:]TARGET_PORT [MANGLE_FROM | forge |
 *                    slow=MS]
 *
 * Listens on ADDR:PORT (default 127.0.0.1) and relays every connection to
 * ADDR:TARGET_PORT (default 127.0.0.1).  With MANGLE_FROM = N >= 1, the
 * N-th reply record the server sends (counted over all connections, from
 * 1) and every one after it reach the client malformed, in turn:
 *   - the RPC reply header kept (XID, accepted, SUCCESS), the CSI result
 *     after it random bytes of the same length;
 *   - the header and the result's first word kept, the rest cut off;
 *   - only the XID kept, the rest random: no valid RPC reply at all.
 * The random bytes are seeded: the same run mangles the same way.
 * With "forge", the last byte of every request record is flipped: in a
 * PEER_READ, the token's MAC (its last field), a forged token.
 * With "slow=MS", every reply record is held MS milliseconds before it
 * goes on: a server that answers late.
 * SIGUSR1 makes it silent: the connections stay up, requests still reach
 * the server, and every reply is held (new connections too) until
 * SIGUSR2, which lets them go on.
 * "ready" is printed on stdout once the port listens.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* xid, msg_type, reply_stat, verifier flavor and length, accept_stat */
#define RPC_REPLY_HDR 24u
/* More than a full CSI READ reply (256 blocks of 64 KiB). */
#define RECORD_MAX (32u << 20)

static struct sockaddr_in target;
static unsigned long mangle_from;	/* 0: replies as they are */
static int forge;			/* requests with a flipped last byte */
static unsigned long slow_ms;		/* each reply held this long */
static atomic_int silent;		/* SIGUSR1 .. SIGUSR2 */
static atomic_ulong replies;

struct conn {
	int client, server;
};

static int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done,
				 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_fill(uint64_t *s, uint8_t *p, size_t n)
{
	while (n--)
		*p++ = (uint8_t)rng_next(s);
}

/* The k-th reply record (from 1), mangled in place; its new length. */
static uint32_t mangle(unsigned long k, uint8_t *rec, uint32_t len)
{
	uint64_t seed = k;

	switch (k % 3) {
	case 0:
		if (len > RPC_REPLY_HDR)
			rng_fill(&seed, rec + RPC_REPLY_HDR,
				 len - RPC_REPLY_HDR);
		return len;
	case 1:
		return len > RPC_REPLY_HDR + 4 ? RPC_REPLY_HDR + 4 : len;
	default:
		if (len > 4)
			rng_fill(&seed, rec + 4, len - 4);
		return len;
	}
}

/*
 * Record by record from one socket to the other, each record passed
 * through edit (which returns its new length); until either side ends.
 */
static void relay_records(int from, int to,
			  uint32_t (*edit)(uint8_t *rec, uint32_t len))
{
	uint8_t *rec = malloc(RECORD_MAX);
	uint32_t mark, len;

	while (rec && !read_full(from, &mark, 4)) {
		len = ntohl(mark) & 0x7fffffffu;
		if (len > RECORD_MAX || read_full(from, rec, len))
			break;
		len = edit(rec, len);
		mark = htonl((ntohl(mark) & 0x80000000u) | len);
		if (write_full(to, &mark, 4) || write_full(to, rec, len))
			break;
	}
	free(rec);
	shutdown(from, SHUT_RDWR);
	shutdown(to, SHUT_RDWR);
}

static uint32_t edit_request(uint8_t *rec, uint32_t len)
{
	if (forge && len)
		rec[len - 1] ^= 0x5a;
	return len;
}

static void sleep_ms(unsigned long ms)
{
	struct timespec t = { .tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

static void on_signal(int sig)
{
	atomic_store(&silent, sig == SIGUSR1);
}

static uint32_t edit_reply(uint8_t *rec, uint32_t len)
{
	unsigned long k;

	if (slow_ms)
		sleep_ms(slow_ms);
	while (atomic_load(&silent))
		sleep_ms(20);

	if (!mangle_from)
		return len;
	k = atomic_fetch_add(&replies, 1) + 1;
	return k >= mangle_from ? mangle(k, rec, len) : len;
}

static void *relay_requests(void *arg)
{
	struct conn *c = arg;

	relay_records(c->client, c->server, edit_request);
	return NULL;
}

/*
 * A record is relayed in pieces (header, then body): without this, Nagle
 * holds the second piece for the peer's delayed ACK, 40 ms a call, which
 * the hosts' own connections (TCP_NODELAY) never wait.
 */
static void no_delay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_target(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&target,
			       sizeof(target))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		no_delay(fd);
	return fd;
}

static void *serve(void *arg)
{
	struct conn *c = arg;
	pthread_t t;

	c->server = connect_target();
	if (c->server >= 0 && !pthread_create(&t, NULL, relay_requests, c)) {
		relay_records(c->server, c->client, edit_reply);
		pthread_join(t, NULL);
	}
	if (c->server >= 0)
		close(c->server);
	close(c->client);
	free(c);
	return NULL;
}

/* "[ADDR:]PORT" into a, the address 127.0.0.1 if not given. */
static void addr_arg(const char *s, struct sockaddr_in *a)
{
	const char *colon = strrchr(s, ':');
	char host[INET_ADDRSTRLEN] = "127.0.0.1", *end;
	unsigned long port;

	if (colon && (size_t)(colon - s) < sizeof(host)) {
		memcpy(host, s, colon - s);
		host[colon - s] = '\0';
		s = colon + 1;
	}
	port = strtoul(s, &end, 10);
	a->sin_family = AF_INET;
	a->sin_port = htons(port);
	if (*end || !port || port > 65535 ||
	    inet_pton(AF_INET, host, &a->sin_addr) != 1) {
		fprintf(stderr, "scfs-fault-proxy: %s: not [ADDR:]PORT\n", s);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a;
	int one = 1, lfd;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: scfs-fault-proxy [ADDR:]PORT [ADDR:]TARGET_PORT [MANGLE_FROM | forge | slow=MS]\n");
		return 2;
	}
	addr_arg(argv[1], &a);
	addr_arg(argv[2], &target);
	if (argc == 4 && !strcmp(argv[3], "forge"))
		forge = 1;
	else if (argc == 4 && !strncmp(argv[3], "slow=", 5))
		slow_ms = strtoul(argv[3] + 5, NULL, 10);
	else if (argc == 4)
		mangle_from = strtoul(argv[3], NULL, 10);
	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 16)) {
		perror("scfs-fault-proxy: listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct conn *c = calloc(1, sizeof(*c));
		pthread_t t;

		if (!c)
			return 1;
		c->client = accept(lfd, NULL, NULL);
		if (c->client >= 0)
			no_delay(c->client);
		if (c->client < 0 ||
		    pthread_create(&t, NULL, serve, c)) {
			if (c->client >= 0)
				close(c->client);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
}
