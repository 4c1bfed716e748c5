// SPDX-License-Identifier: GPL-2.0-only
/*
 * seacache.ko's CSI transport and peer server (client-module/transport.c,
 * peer.c) in a guest kernel against a real CSI service: ganesha with
 * FSAL_DEDUP on the host side, reached at 10.0.2.2 through QEMU's user
 * network (tests/kernel/transport-test/host-side.sh sets it up).
 *
 * At load time, through a host of the core's host library over the
 * transport: LOOKUP and read the file the host side wrote over NFS and
 * compare its SHA-256 with the one given; write a range of a second file
 * (partial blocks too) and read it back; several kthreads reading at once
 * through a small cache, so their READ calls are in flight together on
 * the one connection; PEER_READ from this host's own peer server, with a
 * token made from the identity the transport was given, a forged one and
 * an unknown block; then, if asked, the CSI service is restarted by the
 * host side (this module prints when) and the host must come back (a new
 * connection and registration) and read the file right again.  Then the
 * faults a real server does not make, against a fake one (fault_test.c).
 * The verdict is the parameter "result".
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <net/sock.h>

#include "seacache.h"
#include "seacache/peer_token.h"
#include "transport_test.h"

static char *server = "10.0.2.2";
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "the CSI service's IPv4 address");
static ushort csi_port;
module_param(csi_port, ushort, 0444);
MODULE_PARM_DESC(csi_port, "the CSI service's port");
static char *export = "/export";
module_param(export, charp, 0444);
MODULE_PARM_DESC(export, "the export's path for LOOKUP");
static char *data_path = "transport-data";
module_param(data_path, charp, 0444);
MODULE_PARM_DESC(data_path, "the file to read, below the export");
static char *data_sha256 = "";
module_param(data_sha256, charp, 0444);
MODULE_PARM_DESC(data_sha256, "its SHA-256, hex");
static char *write_path = "transport-write";
module_param(write_path, charp, 0444);
MODULE_PARM_DESC(write_path, "the file to write, below the export");
static uint write_off = 4096 + 50;
module_param(write_off, uint, 0444);
MODULE_PARM_DESC(write_off, "where: the data file's first bytes go there");
static uint write_len = 2 * 4096 + 100;
module_param(write_len, uint, 0444);
MODULE_PARM_DESC(write_len, "how many of them");
static char *peer = "10.0.2.15";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "this guest's address for the peer server");
static ushort peer_port = 12060;
module_param(peer_port, ushort, 0444);
MODULE_PARM_DESC(peer_port, "the peer server's port");
static uint threads = 4;
module_param(threads, uint, 0444);
MODULE_PARM_DESC(threads, "concurrent reader kthreads");
static uint reads_per_thread = 200;
module_param(reads_per_thread, uint, 0444);
MODULE_PARM_DESC(reads_per_thread, "random reads each");
static bool restart;
module_param(restart, bool, 0444);
MODULE_PARM_DESC(restart, "ask the host side to restart the CSI service");

#define BS 4096u
/* small: most concurrent reads miss and go to the server */
#define CACHE_BLOCKS 64u
#define TIMEOUT_MS 10000u
/* how long the service may take to come back after a restart */
#define RESTART_WAIT_S 120

#define fail(fmt, ...) pr_err("transport test: FAIL: " fmt "\n", ##__VA_ARGS__)

struct test {
	struct scfs_transport *t;
	struct sc_host_transport inner;	/* the transport's own callbacks */
	struct sc_host *h;
	u64 file;
	u8 *data;			/* the data file, verified */
	size_t size;
	/* the identity the transport was last given */
	u64 host_id, epoch;
	u8 secret[CSI_SECRET_SIZE];
};

/* Records the identity, for the peer test's tokens, and passes it on. */
static void test_identity(void *ctx, u64 host, u64 epoch,
			  const u8 secret[CSI_SECRET_SIZE])
{
	struct test *T = container_of(ctx, struct test, inner);

	T->host_id = host;
	T->epoch = epoch;
	memcpy(T->secret, secret, CSI_SECRET_SIZE);
	T->inner.identity(T->inner.ctx, host, epoch, secret);
}

static int test_call(void *ctx, u32 proc, const void *args, void *res,
		     void **reply)
{
	struct test *T = container_of(ctx, struct test, inner);

	return T->inner.call(T->inner.ctx, proc, args, res, reply);
}

static void test_release(void *ctx, void *reply)
{
	struct test *T = container_of(ctx, struct test, inner);

	T->inner.release(T->inner.ctx, reply);
}

static int test_peer_fetch(void *ctx, const struct csi_peer_addr *where,
			   u64 requester, u64 epoch, const struct sc_hash *h,
			   const struct csi_token *tok, void *out)
{
	struct test *T = container_of(ctx, struct test, inner);

	return T->inner.peer_fetch(T->inner.ctx, where, requester, epoch, h,
				   tok, out);
}

static int sha256_hex(const void *p, size_t len, char hex[2 * SC_HASH_LEN + 1])
{
	struct sc_hasher *hs = sc_hasher_new();
	struct sc_hash h;
	int err = hs ? sc_hasher_digest(hs, p, len, &h) : -ENOMEM;

	if (!err)
		sc_hash_to_hex(&h, hex);
	sc_hasher_free(hs);
	return err;
}

/* The whole data file through the host, checked against data_sha256. */
static int read_data_file(struct test *T, u8 *buf)
{
	char hex[2 * SC_HASH_LEN + 1];
	ssize_t n;
	int err;

	n = sc_host_read(T->h, T->file, 0, buf, T->size);
	if (n != T->size) {
		fail("read of %s: %zd of %zu bytes", data_path, n, T->size);
		return n < 0 ? n : -EIO;
	}
	err = sha256_hex(buf, T->size, hex);
	if (err)
		return err;
	if (strcmp(hex, data_sha256)) {
		fail("%s has SHA-256 %s, not %s", data_path, hex, data_sha256);
		return -EIO;
	}
	return 0;
}

static int test_write(struct test *T)
{
	struct csi_fileattr at;
	u8 *back;
	ssize_t n;
	int err;

	if (write_len > T->size)
		return -EINVAL;
	err = sc_host_lookup(T->h, export, write_path, &at);
	if (err) {
		fail("LOOKUP %s: %d", write_path, err);
		return err;
	}
	n = sc_host_write(T->h, at.file, write_off, T->data, write_len, true);
	if (n != write_len) {
		fail("write: %zd", n);
		return n < 0 ? n : -EIO;
	}
	back = kvmalloc(write_len, GFP_KERNEL);
	if (!back)
		return -ENOMEM;
	n = sc_host_read(T->h, at.file, write_off, back, write_len);
	err = n == write_len && !memcmp(back, T->data, write_len) ? 0 : -EIO;
	if (err)
		fail("read back after write: %zd bytes, %s", n,
		     n == write_len ? "different" : "short");
	kvfree(back);
	return err;
}

struct reader {
	struct test *T;
	struct completion done;
	u32 seed;
	int err;
};

/* Random ranges of the data file, each compared with the verified copy. */
static int reader_main(void *arg)
{
	struct reader *r = arg;
	struct test *T = r->T;
	u8 *buf = kvmalloc(64 * BS, GFP_KERNEL);
	struct csi_fileattr at;
	unsigned int i;

	r->err = buf ? 0 : -ENOMEM;
	for (i = 0; i < reads_per_thread && !r->err; i++) {
		size_t off = (r->seed = r->seed * 1103515245 + 12345) % T->size;
		size_t len = 1 + (r->seed >> 8) % (64 * BS);
		ssize_t n;

		if (len > T->size - off)
			len = T->size - off;
		n = sc_host_read(T->h, T->file, off, buf, len);
		if (n != len || memcmp(buf, T->data + off, len)) {
			fail("reader %u: read %zu at %zu: %zd, %s", r->seed, len,
			     off, n, n == len ? "wrong bytes" : "short");
			r->err = -EIO;
		}
		/* a call that never hits the cache, between the reads */
		if (!r->err && (i & 7) == 0 &&
		    sc_host_getattr(T->h, T->file, &at)) {
			fail("GETATTR");
			r->err = -EIO;
		}
	}
	kvfree(buf);
	complete(&r->done);
	return 0;
}

static int test_concurrent(struct test *T)
{
	struct scfs_transport_stats st0, st1;
	struct reader *r = kcalloc(threads, sizeof(*r), GFP_KERNEL);
	unsigned int i, started = 0;
	int err = 0;

	if (!r)
		return -ENOMEM;
	scfs_transport_get_stats(T->t, &st0);
	for (i = 0; i < threads; i++) {
		struct task_struct *k;

		r[i].T = T;
		r[i].seed = i + 1;
		init_completion(&r[i].done);
		k = kthread_run(reader_main, &r[i], "scfs_treader%u", i);
		if (IS_ERR(k)) {
			err = PTR_ERR(k);
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		wait_for_test_thread(&r[i].done);
		if (!err)
			err = r[i].err;
	}
	scfs_transport_get_stats(T->t, &st1);
	pr_info("transport test: %u threads x %u reads: %llu calls, %llu errors, %llu timeouts\n",
		started, reads_per_thread, st1.calls - st0.calls,
		st1.errors - st0.errors, st1.timeouts - st0.timeouts);
	if (!err && st1.calls - st0.calls < threads * reads_per_thread / 8) {
		fail("only %llu calls: the reads did not reach the server",
		     st1.calls - st0.calls);
		err = -EIO;
	}
	kfree(r);
	return err;
}

/* A token for block h as the server would make it for requester. */
static void make_token(struct test *T, struct sc_mac *m, const struct sc_hash *h,
		       u64 requester, struct csi_token *tok)
{
	struct sc_peer_token_fields f = {
		.hash = *h, .requester = requester, .serving = T->host_id,
		.epoch = T->epoch, .expiry = ktime_get_real_seconds() + 60,
	};

	tok->expiry = f.expiry;
	sc_peer_token_mac(m, &f, tok->mac);
}

static int test_peer(struct test *T)
{
	struct scfs_transport_stats st0, st1;
	struct sc_host_transport *tr = &T->inner;
	struct csi_peer_addr self;
	struct sc_hasher *hs = sc_hasher_new();
	struct sc_mac *m = sc_mac_new(T->secret, CSI_SECRET_SIZE);
	struct csi_token tok;
	struct sc_hash h, other;
	u8 *out = kvmalloc(BS, GFP_KERNEL);
	int err = -ENOMEM, e1, e2, e3;

	if (!hs || !m || !out)
		goto out;
	scfs_transport_peer_addr(T->t, &self);
	/* block 1, just read, so in the cache */
	err = sc_host_read(T->h, T->file, BS, out, BS) == BS ? 0 : -EIO;
	if (!err)
		err = sc_hasher_digest(hs, T->data + BS, BS, &h);
	if (err)
		goto out;
	scfs_transport_get_stats(T->t, &st0);
	make_token(T, m, &h, 7, &tok);
	e1 = tr->peer_fetch(tr->ctx, &self, 7, T->epoch, &h, &tok, out);
	if (!e1 && memcmp(out, T->data + BS, BS))
		e1 = -EBADMSG;
	tok.mac[0] ^= 1;
	e2 = tr->peer_fetch(tr->ctx, &self, 7, T->epoch, &h, &tok, out);
	memset(&other, 0x5a, sizeof(other));
	make_token(T, m, &other, 7, &tok);
	e3 = tr->peer_fetch(tr->ctx, &self, 7, T->epoch, &other, &tok, out);
	scfs_transport_get_stats(T->t, &st1);
	pr_info("transport test: peer reads: valid %d, forged %d, unknown %d; served %llu, refused %llu\n",
		e1, e2, e3, st1.peer_served_blocks - st0.peer_served_blocks,
		st1.peer_refused - st0.peer_refused);
	err = 0;
	if (e1 || e2 != -EACCES || e3 != -ENOENT ||
	    st1.peer_served_blocks - st0.peer_served_blocks != 1 ||
	    st1.peer_refused - st0.peer_refused != 1) {
		fail("peer reads: want 0, %d, %d; served 1, refused 1",
		     -EACCES, -ENOENT);
		err = -EIO;
	}
out:
	kvfree(out);
	sc_mac_free(m);
	sc_hasher_free(hs);
	return err;
}

/* Connections of the peer bounds test: one more than an address may have. */
#define BOUND_CONNS (SC_PEER_MAX_CONNS_PER_ADDR + 1)

/*
 * What sock's peer server does within timeout_ms: 0 if it closed the
 * connection, -EAGAIN if it kept it open and silent.
 */
static int peer_conn_state(struct socket *sock, unsigned int timeout_ms)
{
	struct msghdr msg = {};
	struct kvec v;
	u8 byte;
	int n;

	sock->sk->sk_rcvtimeo = msecs_to_jiffies(timeout_ms);
	v.iov_base = &byte;
	v.iov_len = 1;
	n = kernel_recvmsg(sock, &msg, &v, 1, 1, 0);
	return n == -ECONNRESET ? 0 : n;
}

/*
 * The peer server's bounds (PROTOCOL.md §9.6): of BOUND_CONNS connections
 * from this address it closes at once those past
 * SC_PEER_MAX_CONNS_PER_ADDR (counted), keeps the others, and closes one
 * that began a request and stopped, by its record timeout.
 */
static int test_peer_bounds(struct test *T)
{
	struct socket *socks[BOUND_CONNS] = {};
	struct scfs_transport_stats st0, st1;
	struct sockaddr_storage ss = {};
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct csi_peer_addr self;
	unsigned int i, closed = 0, open_at = BOUND_CONNS;
	u8 half_mark[2] = { 0x80, 0 };
	struct kvec v = { half_mark, sizeof(half_mark) };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int err = 0, st;

	scfs_transport_peer_addr(T->t, &self);
	in4->sin_family = AF_INET;
	in4->sin_port = htons(self.port);
	memcpy(&in4->sin_addr, self.addr, 4);
	scfs_transport_get_stats(T->t, &st0);
	for (i = 0; i < BOUND_CONNS && !err; i++) {
		err = sock_create_kern(&init_net, AF_INET, SOCK_STREAM,
				       IPPROTO_TCP, &socks[i]);
		if (!err)
			err = kernel_connect(socks[i], (struct sockaddr *)&ss,
					     sizeof(*in4), 0);
	}
	for (i = 0; i < BOUND_CONNS && !err; i++) {
		st = peer_conn_state(socks[i], 1000);
		if (!st)
			closed++;
		else if (st == -EAGAIN && open_at == BOUND_CONNS)
			open_at = i;
		else if (st != -EAGAIN)
			err = st;
	}
	scfs_transport_get_stats(T->t, &st1);
	pr_info("transport test: peer bounds: %u connections, %u closed at once (%llu refused)\n",
		BOUND_CONNS, closed,
		st1.peer_conns_refused - st0.peer_conns_refused);
	if (err || !closed || open_at == BOUND_CONNS ||
	    st1.peer_conns_refused - st0.peer_conns_refused != closed) {
		fail("peer bounds: want at least one of %u connections refused, and counted (%d)",
		     BOUND_CONNS, err);
		err = -EIO;
		goto out;
	}
	/* half a record mark, then nothing: closed by the record timeout */
	if (kernel_sendmsg(socks[open_at], &msg, &v, 1, v.iov_len) !=
	    v.iov_len ||
	    peer_conn_state(socks[open_at],
			    2 * SC_PEER_RECORD_TIMEOUT_MS) != 0) {
		fail("peer bounds: a half-sent request was not closed within %u ms",
		     2 * SC_PEER_RECORD_TIMEOUT_MS);
		err = -EIO;
	}
out:
	for (i = 0; i < BOUND_CONNS; i++)
		if (socks[i])
			sock_release(socks[i]);
	return err;
}

/* The host side restarts the service; the host must come back. */
static int test_restart(struct test *T, u8 *buf)
{
	struct scfs_transport_stats st;
	struct sc_host_stats hs;
	struct csi_fileattr at;
	u64 regs;
	int i;

	sc_host_get_stats(T->h, &hs);
	regs = hs.registrations;
	pr_info("SEACACHE-TRANSPORT: restart-now\n");
	for (i = 0; i < RESTART_WAIT_S * 5; i++) {
		/* fails while the service is down; re-registers after */
		if (!sc_host_getattr(T->h, T->file, &at)) {
			sc_host_get_stats(T->h, &hs);
			if (hs.registrations > regs)
				break;
		}
		msleep(200);
	}
	scfs_transport_get_stats(T->t, &st);
	pr_info("transport test: after the restart: %llu registrations, %llu reconnects\n",
		hs.registrations, st.reconnects);
	if (hs.registrations == regs || !st.reconnects) {
		fail("no new connection and registration after the restart");
		return -EIO;
	}
	return read_data_file(T, buf);
}

static int run(struct test *T)
{
	struct sc_host_config hc = {
		.name = "transport-test", .variant = SC_VARIANT_SEACACHE,
		.cache_blocks = CACHE_BLOCKS,
	};
	struct sockaddr_storage srv = {}, pl = {};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&srv;
	struct sockaddr_in *p4 = (struct sockaddr_in *)&pl;
	struct csi_fileattr at;
	u8 *buf;
	int err;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(csi_port);
	p4->sin_family = AF_INET;
	p4->sin_port = htons(peer_port);
	if (!csi_port || !in4_pton(server, -1, (u8 *)&s4->sin_addr, -1, NULL) ||
	    !in4_pton(peer, -1, (u8 *)&p4->sin_addr, -1, NULL) ||
	    strlen(data_sha256) != 2 * SC_HASH_LEN) {
		fail("bad parameters");
		return -EINVAL;
	}
	err = scfs_transport_create(&init_net, &srv, &pl, BS, TIMEOUT_MS, &T->t);
	if (err) {
		fail("transport: %d", err);
		return err;
	}
	scfs_transport_bind(T->t, &T->inner);
	hc.tr = (struct sc_host_transport){
		.call = test_call, .release = test_release,
		.peer_fetch = test_peer_fetch, .identity = test_identity,
		.ctx = &T->inner,
	};
	scfs_transport_peer_addr(T->t, &hc.peer);
	get_random_bytes(hc.uuid, sizeof(hc.uuid));
	err = sc_host_create(&hc, &T->h);
	if (err) {
		fail("host (HELLO to %s:%u): %d", server, csi_port, err);
		return err;
	}
	scfs_transport_set_host(T->t, T->h);
	err = sc_host_lookup(T->h, export, data_path, &at);
	if (err) {
		fail("LOOKUP %s %s: %d", export, data_path, err);
		return err;
	}
	T->file = at.file;
	T->size = at.size;
	T->data = kvmalloc(T->size, GFP_KERNEL);
	buf = kvmalloc(T->size, GFP_KERNEL);
	err = T->data && buf && T->size ? 0 : -ENOMEM;
	if (!err)
		err = read_data_file(T, T->data);
	if (!err)
		pr_info("transport test: %s read and verified (%zu bytes)\n",
			data_path, T->size);
	if (!err)
		err = test_write(T);
	if (!err)
		err = test_peer(T);
	if (!err)
		err = test_peer_bounds(T);
	if (!err)
		err = test_concurrent(T);
	if (!err && restart)
		err = test_restart(T, buf);
	kvfree(buf);
	return err;
}

/*
 * The verdict, for the guest script: the module always loads (busybox's
 * insmod would load a failing one a second time, with init_module).
 */
static char *result = "none";
module_param(result, charp, 0444);
MODULE_PARM_DESC(result, "after loading: passed or FAILED");

static int __init transport_test_init(void)
{
	struct test *T = kzalloc(sizeof(*T), GFP_KERNEL);
	struct scfs_transport_stats st = {};
	int err;

	if (!T)
		return -ENOMEM;
	err = run(T);
	if (T->t)
		scfs_transport_set_host(T->t, NULL);
	sc_host_destroy(T->h);
	if (T->t)
		scfs_transport_get_stats(T->t, &st);
	scfs_transport_destroy(T->t);
	kvfree(T->data);
	kfree(T);
	if (!err)
		err = transport_fault_test();
	result = err ? "FAILED" : "passed";
	pr_info("transport test: %s (%llu calls, %llu reconnects, %llu timeouts, %llu errors)\n",
		result, st.calls, st.reconnects, st.timeouts, st.errors);
	return 0;
}

static void __exit transport_test_exit(void)
{
	transport_fault_test_end();
}

module_init(transport_test_init);
module_exit(transport_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("seacache.ko's CSI transport against a real CSI service");
