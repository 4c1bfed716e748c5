// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-fuse SERVER:/EXPORT MOUNTPOINT [-o OPTIONS]
 *
 * The SeaCache host without a kernel module: mounts an export of the
 * SeaCache server as `mount -t seacache` stacks on its NFS mount, with
 * the same options where they mean the same (sf.h has the layout).  Also
 * mount.fuse3's helper: in fstab,
 *   10.0.0.1:/vdi /srv/vdi fuse.seacache-fuse csi_port=20050,cache=4G 0 0
 */
#include <arpa/inet.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>

#include <seacache/defaults.h>
#include <seacache/host_uuid.h>
#include <seacache/policy.h>
#include <seacache/variant.h>

#include "sf.h"

#define SF_NFS_CONNS_DEFAULT 8
#define SF_NFS_CONNS_MAX 64
#define SF_WORKERS_MAX 256

/* What the command line gives: fuse_opt_parse fills it whole. */
struct sf_cmdline {
	struct sf_opts o;
	char *source;
	char *cache;
	int help;
};

#define SF_OPT(t, field) { t, offsetof(struct sf_cmdline, o.field), 1 }
static const struct fuse_opt sf_opt_spec[] = {
	SF_OPT("server=%s", server),
	SF_OPT("csi_port=%u", csi_port),
	SF_OPT("policy=%s", policy),
	SF_OPT("variant=%s", variant),
	SF_OPT("peer=%s", peer),
	SF_OPT("csi_timeo=%u", csi_timeo),
	SF_OPT("nfsport=%u", nfsport),
	SF_OPT("mountport=%u", mountport),
	SF_OPT("uuid_file=%s", uuid_file),
	SF_OPT("stats_dir=%s", stats_dir),
	SF_OPT("nfs_conns=%u", nfs_conns),
	SF_OPT("direct_io", direct_io),
	FUSE_OPT_KEY("cache=", 1),
	FUSE_OPT_KEY("-h", 2),
	FUSE_OPT_KEY("--help", 2),
	FUSE_OPT_END
};

static void usage(const char *prog)
{
	printf("usage: %s SERVER:/EXPORT MOUNTPOINT [-f] [-o OPTION[,OPTION...]]\n"
	       "\n"
	       "Mounts EXPORT of a SeaCache server (NFS-Ganesha with FSAL_DEDUP) with\n"
	       "file data served through the SeaCache host: one content cache for\n"
	       "every VM of this host, the namespace and attributes through NFSv3,\n"
	       "and every read and write through NFS while the CSI service is down.\n"
	       "The user-space twin of `mount -t seacache`, for hosts that cannot\n"
	       "load seacache.ko.\n"
	       "\n"
	       "SeaCache options (seacache.ko's, where they mean the same):\n"
	       "  server=ADDR      the CSI service's numeric address (default: SERVER)\n"
	       "  csi_port=N       its DEDUP { CSI_Port } (default %u)\n"
	       "  cache=SIZE       content cache, K/M/G (default 256M, at least 64K)\n"
	       "  policy=SPEC      eviction policy (default %s)\n"
	       "  variant=NAME     protocol variant (default seacache)\n"
	       "  peer=ADDR:PORT   serve other hosts' delegated reads there\n"
	       "  csi_timeo=DS     tenths of a second a CSI call may go unanswered\n"
	       "                   before the service is marked down (default %u)\n"
	       "  uuid_file=FILE   keep the host's identity there across restarts\n"
	       "                   (default: a new one each mount, as seacache.ko)\n"
	       "Its own:\n"
	       "  nfsport=N,mountport=N  NFS and MOUNT ports (default: rpcbind's)\n"
	       "  nfs_conns=N      NFS connections for the namespace (default %u)\n"
	       "  max_threads=N    workers answering the kernel: a fixed pool (default\n"
	       "                   10; clone_fd and max_idle_threads are not used)\n"
	       "  direct_io        bypass the page cache on every open (default:\n"
	       "                   O_DIRECT opens only, e.g. QEMU's cache=none)\n"
	       "  stats_dir=DIR    statistics at DIR/MAJOR:MINOR/, one value a file\n"
	       "                   (default %s; seacachectl stats --mount MOUNTPOINT)\n"
	       "\n"
	       "FUSE options:\n",
	       prog, SC_CSI_PORT, SC_HOST_POLICY_DEFAULT,
	       SC_CSI_FALLBACK_TIMEOUT_MS / 100, SF_NFS_CONNS_DEFAULT,
	       SC_FUSE_STATS_DIR);
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct sf_cmdline *cl = data;

	(void)outargs;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (!cl->source) {
			cl->source = strdup(arg);
			return 0;
		}
		return 1;	/* the mount point, for fuse_parse_cmdline */
	case 1:
		free(cl->cache);
		cl->cache = strdup(arg + strlen("cache="));
		return 0;
	case 2:
		cl->help = 1;
		return 1;
	default:
		return 1;
	}
}

/* "256M": bytes, or 0 if it is not a size of at least 64K. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;

	switch (*end) {
	case 'G': case 'g': shift += 10; /* fall through */
	case 'M': case 'm': shift += 10; /* fall through */
	case 'K': case 'k': shift += 10; end++; break;
	default: break;
	}
	if (end == s || *end || v > (~0ull >> shift))
		return 0;
	v <<= shift;
	return v < SC_HOST_CACHE_BYTES_MIN ? 0 : v;
}

static bool numeric_addr(const char *s)
{
	unsigned char a[16];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static bool policy_ok(const char *spec)
{
	static const uint32_t share[64];
	struct sc_policy p;

	if (sc_policy_create(&p, spec, 64, share))
		return false;
	sc_policy_destroy(&p);
	return true;
}

/* Options whole and sound, or false with what to do said. */
static bool opts_check(struct sf_opts *o, struct sf_cmdline *cl)
{
	enum sc_variant v;
	char *colon;

	if (!cl->source || !(colon = strchr(cl->source, ':')) ||
	    colon[1] != '/') {
		fprintf(stderr, "seacache-fuse: give the export as SERVER:/EXPORT (see --help)\n");
		return false;
	}
	*colon = '\0';
	o->nfs_server = cl->source;
	o->export = colon + 1;
	if (!o->server)
		o->server = strdup(o->nfs_server);
	if (!numeric_addr(o->server)) {
		fprintf(stderr, "seacache-fuse: server=%s: the CSI service's numeric IPv4 or IPv6 address\n",
			o->server);
		return false;
	}
	if (!o->csi_port)
		o->csi_port = SC_CSI_PORT;
	if (o->csi_port > 65535) {
		fprintf(stderr, "seacache-fuse: csi_port=%u: a TCP port\n", o->csi_port);
		return false;
	}
	o->cache_bytes = cl->cache ? parse_size(cl->cache) :
				     SC_HOST_CACHE_BYTES_DEFAULT;
	if (!o->cache_bytes) {
		fprintf(stderr, "seacache-fuse: cache=%s: a size of at least 64K (suffixes K, M, G)\n",
			cl->cache);
		return false;
	}
	if (!o->policy)
		o->policy = strdup(SC_HOST_POLICY_DEFAULT);
	if (!policy_ok(o->policy)) {
		fprintf(stderr, "seacache-fuse: policy=%s: an eviction policy (lru, elru:N)\n",
			o->policy);
		return false;
	}
	if (!o->variant)
		o->variant = strdup("seacache");
	if (sc_variant_parse(o->variant, &v)) {
		fprintf(stderr, "seacache-fuse: variant=%s: one of baseline, readhash, tracker, push, coop, dedup-rw, seacache\n",
			o->variant);
		return false;
	}
	if (o->peer && (!strrchr(o->peer, ':') ||
			atoi(strrchr(o->peer, ':') + 1) <= 0 ||
			atoi(strrchr(o->peer, ':') + 1) > 65535)) {
		fprintf(stderr, "seacache-fuse: peer=%s: ADDR:PORT\n", o->peer);
		return false;
	}
	if (!o->csi_timeo)
		o->csi_timeo = SC_CSI_FALLBACK_TIMEOUT_MS / 100;
	if (o->csi_timeo > SC_HOST_CSI_TIMEO_MAX) {
		fprintf(stderr, "seacache-fuse: csi_timeo=%u: 1 to %u tenths of a second\n",
			o->csi_timeo, SC_HOST_CSI_TIMEO_MAX);
		return false;
	}
	if (!o->nfs_conns)
		o->nfs_conns = SF_NFS_CONNS_DEFAULT;
	if (o->nfs_conns > SF_NFS_CONNS_MAX) {
		fprintf(stderr, "seacache-fuse: nfs_conns=%u: 1 to %u\n",
			o->nfs_conns, SF_NFS_CONNS_MAX);
		return false;
	}
	if (!o->stats_dir)
		o->stats_dir = strdup(SC_FUSE_STATS_DIR);
	return true;
}

/*
 * The session's workers: each takes the next request from /dev/fuse and
 * answers it.  A fixed pool, not libfuse 3.14's fuse_session_loop_mt,
 * under which cached 4 KiB O_DIRECT reads ran at a fifth of the
 * single-threaded loop's rate (perf: thread creation and /dev/fuse
 * clones on the hot path; scripts/bench-fuse).  A worker cannot be
 * cancelled while it answers, so none stops holding a lock.
 */
struct worker {
	pthread_t thread;
	struct fuse_session *se;
	sem_t *done;
};

static void buf_free(void *buf)
{
	free(((struct fuse_buf *)buf)->mem);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct fuse_buf buf = { 0 };
	int res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(buf_free, &buf);
	while (!fuse_session_exited(w->se)) {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(w->se, &buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (res == -EINTR)
			continue;
		if (res <= 0) {		/* unmounted (0, -ENODEV) or broken */
			fuse_session_exit(w->se);
			break;
		}
		fuse_session_process_buf(w->se, &buf);
	}
	sem_post(w->done);
	pthread_cleanup_pop(1);
	return NULL;
}

/* Serves se with n workers until it is unmounted or told to exit. */
static int serve(struct fuse_session *se, unsigned int n)
{
	struct worker *w = calloc(n, sizeof(*w));
	sigset_t block, old;
	unsigned int k = 0;
	sem_t done;

	if (!w || !n || n > SF_WORKERS_MAX) {
		fprintf(stderr, "seacache-fuse: max_threads=%u: 1 to %u workers\n",
			n, SF_WORKERS_MAX);
		free(w);
		return 1;
	}
	sem_init(&done, 0, 0);
	/* signals (fuse_set_signal_handlers) reach this thread only */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (k = 0; k < n; k++) {
		w[k] = (struct worker){ .se = se, .done = &done };
		if (pthread_create(&w[k].thread, NULL, worker_main, &w[k])) {
			fuse_session_exit(se);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (!fuse_session_exited(se)) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 200000000;
		if (t.tv_nsec >= 1000000000) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000;
		}
		sem_timedwait(&done, &t);
	}
	/* the others wait in read(): cancelled there, never while answering */
	for (unsigned int i = 0; i < k; i++)
		pthread_cancel(w[i].thread);
	for (unsigned int i = 0; i < k; i++)
		pthread_join(w[i].thread, NULL);
	sem_destroy(&done);
	free(w);
	return k == n ? 0 : 1;
}

/* The inode table with the export's root in it. */
static int root_init(struct sf_fs *fs)
{
	struct sf_nfs *held;
	struct nfs_stat_64 n;
	int err = nfs_lstat64(sf_nfs_get(&fs->pool, 0, 0, &held), "/", &n);

	sf_nfs_put(held);
	if (!err)
		err = sf_itab_init(&fs->itab, n.nfs_ino);
	if (err)
		fprintf(stderr, "seacache-fuse: %s:%s: cannot read the export's root: %s\n",
			fs->o.nfs_server, fs->o.export, strerror(-err));
	return err;
}

/* Large requests (1 MiB), so an image's I/O reaches the host whole. */
static void sf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_lowlevel_ops ops = sf_ops;
	struct sf_cmdline cl = { 0 };
	struct fuse_cmdline_opts fo = { 0 };
	static struct sf_fs fs;
	char err[512], fsname[600];
	int rc = 1;

	if (fuse_opt_parse(&args, &cl, sf_opt_spec, opt_proc))
		return 2;
	if (cl.help) {
		usage(argv[0]);
		return 0;
	}
	if (fuse_parse_cmdline(&args, &fo))
		return 2;
	if (fo.show_version) {
		printf("seacache-fuse, FUSE library %s\n", fuse_pkgversion());
		return 0;
	}
	if (!fo.mountpoint) {
		fprintf(stderr, "seacache-fuse: no mount point (see --help)\n");
		return 2;
	}
	if (!opts_check(&cl.o, &cl)) {
		free(cl.cache);
		return 2;
	}
	free(cl.cache);
	fs.o = cl.o;
	fs.mountpoint = fo.mountpoint;
	if (host_uuid(fs.o.uuid_file, fs.uuid, err, sizeof(err)) ||
	    sf_nfs_pool_open(&fs.pool, &fs.o, err, sizeof(err))) {
		fprintf(stderr, "seacache-fuse: %s\n", err);
		goto out;
	}
	if (root_init(&fs))
		goto out_pool;
	/* the kernel checks access from the attributes; every VM user may use it */
	snprintf(fsname, sizeof(fsname),
		 "-osubtype=seacache-fuse,fsname=%s:%s,default_permissions,allow_other",
		 fs.o.nfs_server, fs.o.export);
	fuse_opt_add_arg(&args, fsname);
	ops.init = sf_init;
	fs.se = fuse_session_new(&args, &ops, sizeof(ops), &fs);
	if (!fs.se)
		goto out_itab;
	if (fuse_set_signal_handlers(fs.se))
		goto out_session;
	if (fuse_session_mount(fs.se, fo.mountpoint))
		goto out_signals;
	fuse_daemonize(fo.foreground);
	if (sf_host_start(&fs, err, sizeof(err))) {
		fprintf(stderr, "seacache-fuse: %s\n", err);
		goto out_unmount;
	}
	/* -s: one worker; else -o max_threads (fuse_parse_cmdline's 10) */
	rc = serve(fs.se, fo.singlethread ? 1 : fo.max_threads);
	rc = rc ? 1 : 0;
	sf_host_stop(&fs);
out_unmount:
	fuse_session_unmount(fs.se);
out_signals:
	fuse_remove_signal_handlers(fs.se);
out_session:
	fuse_session_destroy(fs.se);
out_itab:
	sf_itab_destroy(&fs.itab);
out_pool:
	sf_nfs_pool_close(&fs.pool);
out:
	free(fo.mountpoint);
	fuse_opt_free_args(&args);
	return rc;
}
