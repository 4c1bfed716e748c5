// SPDX-License-Identifier: GPL-2.0-only
/*
 * The transport against a fake CSI server in the guest (on its loopback):
 * replies out of order and to calls nobody made, malformed and oversized
 * replies, a connection closed under a call, a server that never answers
 * (the call times out).  Each must give the caller the error the transport
 * documents and leave it usable.  Then a call that only a kill can end
 * stays ready: writing the parameter "hang" makes one in the writer's
 * process (the guest script kills it with SIGKILL, as a VM's thread on a
 * dead server would be) and "hang_result" tells how it ended.
 */
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <net/sock.h>
#include <asm/unaligned.h>

#include "seacache.h"
#include "seacache/rpc_msg.h"
#include "transport_test.h"

#define FAKE_PORT 12070
#define SHORT_TIMEOUT_MS 1500u
/* long enough that only a kill ends the call */
#define LONG_TIMEOUT_MS 600000u

enum fake_mode {
	FAKE_ANSWER,	/* a stray reply, then the right one */
	FAKE_REVERSE,	/* two calls, answered last first */
	FAKE_GARBAGE,	/* a record that is no reply */
	FAKE_SHORT,	/* a record too short to hold an xid */
	FAKE_HUGE,	/* a record mark over any limit */
	FAKE_CLOSE,	/* the connection closed under the call */
	FAKE_SILENT,	/* never an answer */
};

struct fake {
	struct socket *lsock;
	struct socket *conn;		/* under lock */
	struct mutex lock;
	struct task_struct *task;
	enum fake_mode mode;		/* set between calls */
};

static int fake_reply(struct socket *sock, u32 xid)
{
	struct sc_rpc_reply_hdr rh = { .xid = xid,
				       .reply_stat = SC_RPC_MSG_ACCEPTED,
				       .accept_stat = SC_RPC_SUCCESS };
	struct scfs_rec_buf b = {};
	int err = scfs_rec_encode(false, &rh, CSI_MSG_VOID, NULL, SIZE_MAX,
				  &b);

	if (!err)
		err = scfs_sock_send(sock, b.p, b.len);
	scfs_rec_buf_free(&b);
	return err;
}

static int fake_recv_xid(struct socket *sock, u32 *xid)
{
	size_t len;
	u8 *rec;
	int err = scfs_rec_recv(sock, 4096, 0, 0, &rec, &len);

	if (err)
		return err;
	*xid = len >= 4 ? get_unaligned_be32(rec) : 0;
	kvfree(rec);
	return 0;
}

/* One call (two for FAKE_REVERSE) answered per the mode; <0: drop. */
static int fake_serve(struct fake *f, struct socket *sock)
{
	static const u8 short_rec[] = { 0x80, 0, 0, 2, 0, 0 };
	u8 garbage[16] = { 0x80, 0, 0, 12 };
	u8 huge[4] = { 0xff, 0xff, 0xff, 0xff };
	u32 xid, xid2;
	int err = fake_recv_xid(sock, &xid);

	if (err)
		return err;
	switch (f->mode) {
	case FAKE_ANSWER:
		err = fake_reply(sock, xid + 1000);
		return err ? err : fake_reply(sock, xid);
	case FAKE_REVERSE:
		err = fake_recv_xid(sock, &xid2);
		if (!err)
			err = fake_reply(sock, xid2);
		return err ? err : fake_reply(sock, xid);
	case FAKE_GARBAGE:
		/* the xid, then a CALL where a REPLY must be */
		put_unaligned_be32(xid, garbage + 4);
		return scfs_sock_send(sock, garbage, sizeof(garbage));
	case FAKE_SHORT:
		return scfs_sock_send(sock, short_rec, sizeof(short_rec));
	case FAKE_HUGE:
		return scfs_sock_send(sock, huge, sizeof(huge));
	case FAKE_CLOSE:
		return -ECONNRESET;
	case FAKE_SILENT:
		/* the guest script waits for this line */
		pr_info("transport test: fake server: a call, not answered\n");
		return 0;
	}
	return -EINVAL;
}

static int fake_main(void *arg)
{
	struct fake *f = arg;
	struct socket *sock;

	while (!kthread_should_stop()) {
		if (kernel_accept(f->lsock, &sock, 0)) {
			/* stopping, or a transient failure: do not spin */
			schedule_timeout_interruptible(HZ / 10);
			continue;
		}
		mutex_lock(&f->lock);
		f->conn = sock;
		mutex_unlock(&f->lock);
		while (!kthread_should_stop() && !fake_serve(f, sock))
			;
		mutex_lock(&f->lock);
		f->conn = NULL;
		mutex_unlock(&f->lock);
		sock_release(sock);
	}
	return 0;
}

static int fake_start(struct fake *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(FAKE_PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int err;

	mutex_init(&f->lock);
	err = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP,
			       &f->lsock);
	if (err)
		return err;
	sock_set_reuseaddr(f->lsock->sk);
	err = kernel_bind(f->lsock, (struct sockaddr *)&a, sizeof(a));
	if (!err)
		err = kernel_listen(f->lsock, 4);
	if (!err) {
		f->task = kthread_run(fake_main, f, "scfs_fake");
		err = PTR_ERR_OR_ZERO(f->task);
	}
	if (err) {
		sock_release(f->lsock);
		return err;
	}
	get_task_struct(f->task);
	return 0;
}

static void fake_stop(struct fake *f)
{
	kernel_sock_shutdown(f->lsock, SHUT_RDWR);
	mutex_lock(&f->lock);
	if (f->conn)
		kernel_sock_shutdown(f->conn, SHUT_RDWR);
	mutex_unlock(&f->lock);
	kthread_stop(f->task);
	put_task_struct(f->task);
	sock_release(f->lsock);
}

static int null_call(struct sc_host_transport *tr)
{
	void *reply = NULL;
	int res, err;

	err = tr->call(tr->ctx, CSI_PROC_NULL, NULL, &res, &reply);
	if (!err)
		tr->release(tr->ctx, reply);
	return err;
}

struct caller {
	struct sc_host_transport *tr;
	struct completion done;
	int err;
};

static int caller_main(void *arg)
{
	struct caller *c = arg;

	c->err = null_call(c->tr);
	complete(&c->done);
	/* stay until stopped: the test holds our task */
	while (!kthread_should_stop())
		schedule_timeout_interruptible(HZ);
	return 0;
}

static struct task_struct *caller_start(struct caller *c,
					struct sc_host_transport *tr)
{
	struct task_struct *k;

	c->tr = tr;
	init_completion(&c->done);
	k = kthread_run(caller_main, c, "scfs_tcaller");
	if (!IS_ERR(k))
		get_task_struct(k);
	return k;
}

static void caller_end(struct task_struct *k)
{
	kthread_stop(k);
	put_task_struct(k);
}

static int transport_open(u32 timeout_ms, struct scfs_transport **t,
			  struct sc_host_transport *tr)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *a = (struct sockaddr_in *)&ss;
	int err;

	a->sin_family = AF_INET;
	a->sin_port = htons(FAKE_PORT);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	err = scfs_transport_create(&init_net, &ss, NULL, 4096, timeout_ms, t);
	if (!err)
		scfs_transport_bind(*t, tr);
	return err;
}

static int expect(const char *what, int got, int want)
{
	pr_info("transport test: fake server, %s: %d\n", what, got);
	if (got == want)
		return 0;
	pr_err("transport test: FAIL: fake server, %s: %d, not %d\n", what, got,
	       want);
	return -EIO;
}

/* Two calls in flight at once, answered in the reverse order. */
static int test_reverse(struct fake *f, struct sc_host_transport *tr)
{
	struct caller c[2];
	struct task_struct *k[2];
	int i, err = 0;

	f->mode = FAKE_REVERSE;
	for (i = 0; i < 2; i++) {
		k[i] = caller_start(&c[i], tr);
		if (IS_ERR(k[i]))
			return PTR_ERR(k[i]);
	}
	for (i = 0; i < 2; i++) {
		wait_for_test_thread(&c[i].done);
		err |= expect("two calls answered last first", c[i].err, 0);
		caller_end(k[i]);
	}
	return err;
}

/* The call "hang" makes: on a server that never answers, for 10 min. */
static struct fake hang_fake;
static struct scfs_transport *hang_t;
static struct sc_host_transport hang_tr;
static int hang_result = 1;

static int hang_set(const char *val, const struct kernel_param *kp)
{
	if (!hang_t)
		return -ENODEV;
	hang_result = null_call(&hang_tr);
	pr_info("transport test: the call that never gets an answer: %d\n",
		hang_result);
	return 0;
}

static const struct kernel_param_ops hang_ops = { .set = hang_set };
module_param_cb(hang, &hang_ops, NULL, 0200);
MODULE_PARM_DESC(hang, "write: a call that only a kill ends, in the writer");
module_param(hang_result, int, 0444);
MODULE_PARM_DESC(hang_result, "how it ended: -EINTR when killed (1: none)");

int transport_fault_test(void)
{
	struct scfs_transport_stats st;
	struct sc_host_transport tr;
	struct scfs_transport *t;
	struct fake *f = &hang_fake;
	int err;

	err = fake_start(f);
	if (err)
		return err;
	err = transport_open(SHORT_TIMEOUT_MS, &t, &tr);
	if (err)
		goto stop;
	f->mode = FAKE_ANSWER;
	err |= expect("a stray reply, then the call's", null_call(&tr), 0);
	err |= test_reverse(f, &tr);
	f->mode = FAKE_GARBAGE;
	err |= expect("no reply header", null_call(&tr), -EBADMSG);
	f->mode = FAKE_SHORT;
	err |= expect("a 2-byte record", null_call(&tr), -EBADMSG);
	f->mode = FAKE_HUGE;
	err |= expect("a 2 GiB record mark", null_call(&tr), -EBADMSG);
	f->mode = FAKE_CLOSE;
	err |= expect("the connection closed", null_call(&tr), -ECONNRESET);
	f->mode = FAKE_ANSWER;
	err |= expect("and an answer again", null_call(&tr), 0);
	f->mode = FAKE_SILENT;
	err |= expect("no answer", null_call(&tr), -ETIMEDOUT);
	scfs_transport_get_stats(t, &st);
	pr_info("transport test: fake server: %llu calls, %llu reconnects, %llu timeouts, %llu errors\n",
		st.calls, st.reconnects, st.timeouts, st.errors);
	if (st.timeouts != 1 || st.reconnects < 3) {
		pr_err("transport test: FAIL: fake server: want 1 timeout and 3 reconnects\n");
		err = -EIO;
	}
	scfs_transport_destroy(t);
	if (!err)
		err = transport_open(LONG_TIMEOUT_MS, &hang_t, &hang_tr);
	if (!err)
		return 0;
stop:
	fake_stop(f);
	return err < 0 ? err : -EIO;
}

void transport_fault_test_end(void)
{
	if (!hang_t)
		return;
	scfs_transport_destroy(hang_t);
	hang_t = NULL;
	fake_stop(&hang_fake);
}
