// SPDX-License-Identifier: GPL-2.0
/*
 * ila-bench: the load generator of make bench (netperf is not packaged).
 *
 *   ila-bench MODE dst=ADDR [dst2=ADDR] [port=N] [size=BYTES] [seconds=S]
 *             [slice-ms=N] [first=1|2] [client-ns=NAME] [server-ns=NAME|none]
 *
 *   udp-pps     datagrams of size bytes, sent in bursts of 16 and received
 *   udp-rr      one datagram request, one datagram response of size bytes
 *   tcp-stream  size-byte writes on a TCP_NODELAY connection, counted as
 *               messages received
 *   tcp-rr      one size-byte request, one size-byte response on a
 *               TCP_NODELAY connection
 *
 * Both ends live in this one process: each socket is opened in its network
 * namespace (ip netns NAME), so one loop drives sender and receiver and no
 * scheduler sits between them. server-ns=none has no local receiver: the
 * peer is the host, which echoes udp-rr datagrams; udp-pps then counts
 * what was sent.
 *
 * With dst2, two flows run in alternating time slices of slice-ms (20 ms),
 * flow "first" first: one to a destination on a plain route, one to a
 * destination on an ILA route, say. Whatever slows the machine down then
 * slows both alike, and their ratio is what make bench reports. Each flow
 * gets a warm-up of a tenth of the run, then seconds of its own slices,
 * and prints
 *
 *   MODE flow=N size=N seconds=S ops=N rate=R lost=N
 *
 * rate is operations (datagrams, messages or transactions) per second;
 * lost counts what did not arrive within a second.
 *
 *   ila-bench write NS PATH VALUE
 *
 * writes VALUE to PATH from inside network namespace NS, for the per-netns
 * sysctls under /proc/sys/net. Errors exit 1, usage 2.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BURST 16
#define MAX_SIZE 65536
#define WAIT_MS 1000

struct opts {
	const char *mode, *client_ns, *server_ns;
	size_t size;
	double seconds, slice;
	int external;	/* server-ns=none: the peer is the host */
};

/* One client-server pair and what it has done. */
struct flow {
	struct sockaddr_in6 dst;
	int c, s;	/* client and server sockets; s < 0 when external */
	unsigned long ops, lost, sent, refused;
	unsigned long long bytes;
	double busy;	/* seconds of its own slices */
};

static unsigned char buf[MAX_SIZE], rbuf[MAX_SIZE];

static int die(const char *what)
{
	fprintf(stderr, "ila-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int enter_ns(const char *name)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/run/netns/%s", name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		die(name);
	if (setns(fd, CLONE_NEWNET))
		die("setns");
	return close(fd);
}

/* A socket of @type in network namespace @ns (NULL: the current one). */
static int socket_in(const char *ns, int type)
{
	int self = -1, fd;

	if (ns) {
		self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (self < 0)
			die("/proc/self/ns/net");
		enter_ns(ns);
	}
	fd = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	if (ns && (setns(self, CLONE_NEWNET) || close(self)))
		die("setns back");
	return fd;
}

static void set_int(int fd, int level, int opt, int val, const char *what)
{
	if (setsockopt(fd, level, opt, &val, sizeof(val)))
		die(what);
}

static int wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, WAIT_MS) == 1;
}

/* Read exactly @len bytes; 0 if they did not come within WAIT_MS. */
static int read_full(int fd, unsigned char *to, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, to + got, len - got, MSG_DONTWAIT);

		if (n > 0) {
			got += n;
		} else if (n == 0) {
			errno = ECONNRESET;
			die("tcp read");
		} else if (errno != EAGAIN || !wait_in(fd)) {
			return 0;
		}
	}
	return 1;
}

/*
 * The server is bound to the destination itself, so that responses come
 * from the address the client is connected to (with ILA, the SIR address
 * the input route restored), not from what source selection picks.
 */
static int server_bound(const struct opts *o, const struct flow *f, int type)
{
	int fd = socket_in(o->server_ns, type);

	if (type == SOCK_DGRAM)
		set_int(fd, SOL_SOCKET, SO_RCVBUF, 4 << 20, "SO_RCVBUF");
	else
		set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (bind(fd, (const struct sockaddr *)&f->dst, sizeof(f->dst)))
		die("bind");
	return fd;
}

static int client_connected(const struct opts *o, const struct flow *f, int type)
{
	int fd = socket_in(o->client_ns, type);

	if (type == SOCK_STREAM)
		set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (connect(fd, (const struct sockaddr *)&f->dst, sizeof(f->dst)))
		die("connect");
	return fd;
}

static void open_flow(const struct opts *o, struct flow *f)
{
	int l;

	if (o->mode[0] == 'u') {
		f->s = o->external ? -1 : server_bound(o, f, SOCK_DGRAM);
		f->c = client_connected(o, f, SOCK_DGRAM);
		return;
	}
	l = server_bound(o, f, SOCK_STREAM);
	if (listen(l, 1))
		die("listen");
	f->c = client_connected(o, f, SOCK_STREAM);
	if (!wait_in(l))
		die("accept (no connection within a second)");
	f->s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (f->s < 0)
		die("accept");
	set_int(f->s, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	close(l);
}

/* One operation of a mode on one flow. */
typedef void (*step_fn)(struct flow *f, const struct opts *o);

static void drain(struct flow *f)
{
	ssize_t n;

	while ((n = recv(f->s, rbuf, sizeof(rbuf), MSG_DONTWAIT)) > 0) {
		f->bytes += n;
		f->ops++;
	}
	if (n == 0) {
		errno = ECONNRESET;
		die("tcp read");
	}
}

/*
 * Datagrams still in flight count as lost until they arrive, so "lost" is
 * what was sent and not received, or refused by the sender's queue.
 */
static void udp_pps(struct flow *f, const struct opts *o)
{
	int i;

	for (i = 0; i < BURST; i++) {
		if (send(f->c, buf, o->size, 0) >= 0)
			f->sent++;
		else if (errno == ENOBUFS || errno == EAGAIN)
			f->refused++;
		else
			die("send");
	}
	if (f->s >= 0)
		drain(f);
	else
		f->ops = f->sent;	/* an external receiver counts for itself */
	f->lost = f->refused + f->sent - f->ops;
}

static void udp_rr(struct flow *f, const struct opts *o)
{
	struct sockaddr_in6 peer;
	socklen_t plen = sizeof(peer);
	ssize_t n;

	if (send(f->c, buf, o->size, 0) < 0)
		die("send request");
	if (f->s >= 0) {
		if (!wait_in(f->s)) {
			f->lost++;
			return;
		}
		n = recvfrom(f->s, rbuf, sizeof(rbuf), 0, (struct sockaddr *)&peer, &plen);
		if (n < 0 || sendto(f->s, rbuf, n, 0, (struct sockaddr *)&peer, plen) < 0)
			die("server");
	}
	if (!wait_in(f->c) || recv(f->c, rbuf, sizeof(rbuf), 0) != (ssize_t)o->size) {
		f->lost++;
		return;
	}
	f->ops++;
}

static void tcp_stream(struct flow *f, const struct opts *o)
{
	int i;

	for (i = 0; i < BURST; i++)
		if (send(f->c, buf, o->size, MSG_DONTWAIT) < 0) {
			if (errno != EAGAIN)
				die("send");
			break;
		}
	drain(f);
	f->ops = f->bytes / o->size;	/* messages, not reads */
}

static void tcp_rr(struct flow *f, const struct opts *o)
{
	if (send(f->c, buf, o->size, 0) != (ssize_t)o->size)
		die("send request");
	if (!read_full(f->s, rbuf, o->size) ||
	    send(f->s, rbuf, o->size, 0) != (ssize_t)o->size ||
	    !read_full(f->c, rbuf, o->size)) {
		f->lost++;
		return;
	}
	f->ops++;
}

/*
 * End a tcp-stream slice with nothing of its flow left to send or to
 * read, so that none of its segments or ACKs are processed in the next
 * flow's slice.
 */
static void settle(struct flow *f, const struct opts *o)
{
	double give_up = now() + WAIT_MS / 1e3;
	int unsent = 0;

	if (o->mode[4] != 's')
		return;
	do {
		drain(f);
		f->ops = f->bytes / o->size;
		if (ioctl(f->c, SIOCOUTQ, &unsent))
			die("SIOCOUTQ");
	} while (unsent && now() < give_up);
}

/* Run @step on @f for @seconds. */
static void slice(step_fn step, struct flow *f, const struct opts *o, double seconds)
{
	double t0 = now(), end = t0 + seconds;
	unsigned int i;

	do {
		for (i = 0; i < 8; i++)
			step(f, o);
	} while (now() < end);
	settle(f, o);
	f->busy += now() - t0;
}

/*
 * Warm both flows up, forget what they did, then alternate slices until
 * each has had o->seconds.
 */
static void run(step_fn step, struct flow *flows, int n, int first,
		const struct opts *o)
{
	int i, turn;

	for (i = 0; i < n; i++)
		slice(step, &flows[(first + i) % n], o, o->seconds / 10);
	for (i = 0; i < n; i++) {
		struct flow *f = &flows[i];

		f->ops = f->lost = f->sent = f->refused = 0;
		f->bytes = 0;
		f->busy = 0;
	}
	for (turn = first; flows[turn % n].busy < o->seconds; turn++)
		slice(step, &flows[turn % n], o, o->slice);
	/* The other flow finishes its last slice too. */
	for (i = 0; i < n; i++)
		while (flows[i].busy < o->seconds)
			slice(step, &flows[i], o, o->slice);
}

static int usage(const char *why)
{
	fprintf(stderr, "ila-bench: %s\nusage: ila-bench udp-pps|udp-rr|tcp-stream|tcp-rr "
		"dst=ADDR [dst2=ADDR] [port=N] [size=BYTES] [seconds=S] [slice-ms=N] "
		"[first=1|2] [client-ns=NAME] [server-ns=NAME|none]\n"
		"       ila-bench write NS PATH VALUE\n", why);
	return 2;
}

/* ila-bench write NS PATH VALUE: @argv holds NS, PATH and VALUE. */
static int write_in_ns(char **argv)
{
	size_t len = strlen(argv[2]);
	int fd;

	enter_ns(argv[0]);
	fd = open(argv[1], O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		die(argv[1]);
	if (write(fd, argv[2], len) != (ssize_t)len || close(fd))
		die(argv[1]);
	return 0;
}

static int parse_addr(const char *text, unsigned long port, struct flow *f)
{
	f->dst.sin6_family = AF_INET6;
	f->dst.sin6_port = htons(port);
	return inet_pton(AF_INET6, text, &f->dst.sin6_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct { const char *name; step_fn step; } modes[] = {
		{ "udp-pps", udp_pps }, { "udp-rr", udp_rr },
		{ "tcp-stream", tcp_stream }, { "tcp-rr", tcp_rr },
	};
	struct opts o = { .size = 64, .seconds = 1.0, .slice = 0.02 };
	const char *dst[2] = { NULL, NULL };
	struct flow flows[2] = { { .c = -1 }, { .c = -1 } };
	unsigned long port = 9000, first = 1;
	step_fn step = NULL;
	int i, n;

	if (argc < 2)
		return usage("no mode");
	o.mode = argv[1];
	if (!strcmp(o.mode, "write"))
		return argc == 5 ? write_in_ns(argv + 2) : usage("write wants NS PATH VALUE");
	for (i = 0; i < (int)(sizeof(modes) / sizeof(modes[0])); i++)
		if (!strcmp(o.mode, modes[i].name))
			step = modes[i].step;
	if (!step)
		return usage("unknown mode");
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '='), *end;
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);

#define KEY(k) (klen == strlen(k) && !strncmp(argv[i], k, klen))
		if (KEY("dst") || KEY("dst2")) {
			dst[klen == 4] = v;
		} else if (KEY("port")) {
			port = strtoul(v, &end, 0);
			if (*end || !port || port > 65535)
				return usage("port must be 1..65535");
		} else if (KEY("size")) {
			o.size = strtoul(v, &end, 0);
			if (*end || !o.size || o.size > MAX_SIZE)
				return usage("size must be 1..65536");
		} else if (KEY("seconds")) {
			o.seconds = strtod(v, &end);
			if (*end || o.seconds <= 0 || o.seconds > 600)
				return usage("seconds must be in (0, 600]");
		} else if (KEY("slice-ms")) {
			o.slice = strtoul(v, &end, 0) / 1e3;
			if (*end || o.slice <= 0 || o.slice > 10)
				return usage("slice-ms must be 1..10000");
		} else if (KEY("first")) {
			first = strtoul(v, &end, 0);
			if (*end || first < 1 || first > 2)
				return usage("first must be 1 or 2");
		} else if (KEY("client-ns")) {
			o.client_ns = v;
		} else if (KEY("server-ns")) {
			o.external = !strcmp(v, "none");
			o.server_ns = o.external ? NULL : v;
		} else {
			return usage(argv[i]);
		}
#undef KEY
	}
	if (o.external && o.mode[0] == 't')
		return usage("tcp modes need a local server-ns");
	n = dst[1] ? 2 : 1;
	for (i = 0; i < n; i++) {
		if (!dst[i] || parse_addr(dst[i], port, &flows[i]))
			return usage("dst and dst2 must be IPv6 addresses");
	}
	if (first > (unsigned long)n)
		return usage("first=2 needs dst2");
	for (i = 0; i < (int)sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < n; i++)
		open_flow(&o, &flows[i]);
	run(step, flows, n, first - 1, &o);
	for (i = 0; i < n; i++)
		printf("%s flow=%d size=%zu seconds=%.3f ops=%lu rate=%.1f lost=%lu\n",
		       o.mode, i + 1, o.size, flows[i].busy, flows[i].ops,
		       flows[i].ops / flows[i].busy, flows[i].lost);
	return 0;
}
