// SPDX-License-Identifier: GPL-2.0
/*
 * ila-bench: the load generator of make bench (netperf is not packaged).
 *
 *   ila-bench MODE dst=ADDR [port=N] [size=BYTES] [seconds=S]
 *             [client-ns=NAME] [server-ns=NAME|none]
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
 * what was sent. After a warm-up of a tenth of the run, it prints
 *
 *   MODE size=N seconds=S ops=N rate=R lost=N
 *
 * rate is operations (datagrams, messages or transactions) per second;
 * lost counts what did not arrive within a second. Errors exit 1, usage 2.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BURST 16
#define MAX_SIZE 65536
#define WAIT_MS 1000

struct opts {
	const char *mode, *client_ns, *server_ns;
	struct sockaddr_in6 dst;
	size_t size;
	double seconds;
};

struct tally {
	unsigned long ops, lost;
	double seconds;
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
 * Bound to the destination itself, so that responses come from the address
 * the client is connected to (with ILA, the SIR address the input route
 * restored), not from whatever source address selection picks.
 */
static int server_udp(const struct opts *o)
{
	int fd = socket_in(o->server_ns, SOCK_DGRAM);

	set_int(fd, SOL_SOCKET, SO_RCVBUF, 4 << 20, "SO_RCVBUF");
	if (bind(fd, (const struct sockaddr *)&o->dst, sizeof(o->dst)))
		die("bind");
	return fd;
}

static int client_connected(const struct opts *o, int type)
{
	int fd = socket_in(o->client_ns, type);

	if (type == SOCK_STREAM)
		set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	if (connect(fd, (const struct sockaddr *)&o->dst, sizeof(o->dst)))
		die("connect");
	return fd;
}

/* A connected pair of TCP sockets, client end and server end. */
static void tcp_pair(const struct opts *o, int *c, int *s)
{
	struct sockaddr_in6 any = { .sin6_family = AF_INET6,
				    .sin6_port = o->dst.sin6_port };
	int l = socket_in(o->server_ns, SOCK_STREAM);

	set_int(l, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (bind(l, (struct sockaddr *)&any, sizeof(any)) || listen(l, 1))
		die("listen");
	*c = client_connected(o, SOCK_STREAM);
	if (!wait_in(l))
		die("accept (no connection within a second)");
	*s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (*s < 0)
		die("accept");
	set_int(*s, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
	close(l);
}

/* One operation of a mode; returns how many completed and how many were lost. */
typedef void (*step_fn)(int c, int s, const struct opts *o,
			unsigned long *ops, unsigned long *lost);

static void drain_udp(int s, unsigned long *ops)
{
	while (recv(s, rbuf, sizeof(rbuf), MSG_DONTWAIT) > 0)
		++*ops;
}

/*
 * Datagrams still in flight count as lost until they arrive, so "lost" is
 * what was sent and not received, or refused by the sender's queue.
 */
static void udp_pps(int c, int s, const struct opts *o, unsigned long *ops,
		    unsigned long *lost)
{
	static unsigned long sent, refused;
	int i;

	for (i = 0; i < BURST; i++) {
		if (send(c, buf, o->size, 0) >= 0)
			sent++;
		else if (errno == ENOBUFS || errno == EAGAIN)
			refused++;
		else
			die("send");
	}
	if (s >= 0)
		drain_udp(s, ops);
	else
		*ops = sent;	/* an external receiver counts for itself */
	*lost = refused + sent - *ops;
}

static void udp_rr(int c, int s, const struct opts *o, unsigned long *ops,
		   unsigned long *lost)
{
	struct sockaddr_in6 peer;
	socklen_t plen = sizeof(peer);
	ssize_t n;

	if (send(c, buf, o->size, 0) < 0)
		die("send request");
	if (s >= 0) {
		if (!wait_in(s)) {
			++*lost;
			return;
		}
		n = recvfrom(s, rbuf, sizeof(rbuf), 0, (struct sockaddr *)&peer, &plen);
		if (n < 0 || sendto(s, rbuf, n, 0, (struct sockaddr *)&peer, plen) < 0)
			die("server");
	}
	if (!wait_in(c) || recv(c, rbuf, sizeof(rbuf), 0) != (ssize_t)o->size) {
		++*lost;
		return;
	}
	++*ops;
}

static void tcp_stream(int c, int s, const struct opts *o, unsigned long *ops,
		       unsigned long *lost)
{
	static unsigned long long bytes;
	ssize_t n;
	int i;

	(void)lost;
	for (i = 0; i < BURST; i++)
		if (send(c, buf, o->size, MSG_DONTWAIT) < 0) {
			if (errno != EAGAIN)
				die("send");
			break;
		}
	while ((n = recv(s, rbuf, sizeof(rbuf), MSG_DONTWAIT)) > 0)
		bytes += n;
	if (n == 0) {
		errno = ECONNRESET;
		die("tcp read");
	}
	*ops = bytes / o->size;
}

static void tcp_rr(int c, int s, const struct opts *o, unsigned long *ops,
		   unsigned long *lost)
{
	if (send(c, buf, o->size, 0) != (ssize_t)o->size)
		die("send request");
	if (!read_full(s, rbuf, o->size) ||
	    send(s, rbuf, o->size, 0) != (ssize_t)o->size ||
	    !read_full(c, rbuf, o->size)) {
		++*lost;
		return;
	}
	++*ops;
}

/* Run @step for the warm-up, then count for o->seconds. */
static struct tally run(step_fn step, int c, int s, const struct opts *o)
{
	unsigned long ops = 0, lost = 0;
	double end, t0 = now();
	struct tally t;
	unsigned int i;

	end = t0 + o->seconds / 10;
	while (now() < end)
		for (i = 0; i < 8; i++)
			step(c, s, o, &ops, &lost);
	t.ops = ops;
	t.lost = lost;
	t0 = now();
	end = t0 + o->seconds;
	do {
		for (i = 0; i < 8; i++)
			step(c, s, o, &ops, &lost);
	} while (now() < end);
	t.seconds = now() - t0;
	t.ops = ops - t.ops;
	t.lost = lost - t.lost;
	return t;
}

static int usage(const char *why)
{
	fprintf(stderr, "ila-bench: %s\nusage: ila-bench udp-pps|udp-rr|tcp-stream|tcp-rr "
		"dst=ADDR [port=N] [size=BYTES] [seconds=S] [client-ns=NAME] "
		"[server-ns=NAME|none]\n", why);
	return 2;
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 64, .seconds = 1.0 };
	const char *dst = NULL;
	unsigned long port = 9000;
	int c = -1, s = -1, external = 0;
	step_fn step;
	struct tally t;
	size_t i;

	if (argc < 2)
		return usage("no mode");
	o.mode = argv[1];
	for (i = 2; i < (size_t)argc; i++) {
		char *eq = strchr(argv[i], '='), *end;
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);

#define KEY(k) (klen == strlen(k) && !strncmp(argv[i], k, klen))
		if (KEY("dst")) {
			dst = v;
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
		} else if (KEY("client-ns")) {
			o.client_ns = v;
		} else if (KEY("server-ns")) {
			external = !strcmp(v, "none");
			o.server_ns = external ? NULL : v;
		} else {
			return usage(argv[i]);
		}
#undef KEY
	}
	o.dst.sin6_family = AF_INET6;
	o.dst.sin6_port = htons(port);
	if (!dst || inet_pton(AF_INET6, dst, &o.dst.sin6_addr) != 1)
		return usage("dst must be an IPv6 address");
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 1);

	if (!strcmp(o.mode, "udp-pps") || !strcmp(o.mode, "udp-rr")) {
		step = o.mode[4] == 'p' ? udp_pps : udp_rr;
		if (!external)
			s = server_udp(&o);
		c = client_connected(&o, SOCK_DGRAM);
	} else if (!strcmp(o.mode, "tcp-stream") || !strcmp(o.mode, "tcp-rr")) {
		if (external)
			return usage("tcp modes need a local server-ns");
		step = o.mode[4] == 's' ? tcp_stream : tcp_rr;
		tcp_pair(&o, &c, &s);
	} else {
		return usage("unknown mode");
	}
	t = run(step, c, s, &o);
	printf("%s size=%zu seconds=%.3f ops=%lu rate=%.1f lost=%lu\n", o.mode,
	       o.size, t.seconds, t.ops, t.ops / t.seconds, t.lost);
	return 0;
}
