// SPDX-License-Identifier: GPL-2.0
/*
 * ila-sock: what a socket sees of ICMPv6 errors about its packets, while
 * the host answers the guest's packets (the control step's `respond`).
 *
 *   ila-sock udp-pmtu DST PORT SIZE
 *       A UDP socket connected to DST:PORT with IPV6_MTU_DISCOVER set to
 *       IPV6_PMTUDISC_DO sends SIZE bytes, then again every 50 ms until a
 *       send fails with EMSGSIZE (a Packet Too Big reached the socket) or
 *       3 s pass. Prints "first send: ok", then "send: EMSGSIZE, path MTU N"
 *       or "send: still sent after 3 s, path MTU N".
 *   ila-sock udp-refused DST PORT
 *       A connected UDP socket sends one datagram and waits 3 s to receive:
 *       "recv: ECONNREFUSED" when a port unreachable reached it, else
 *       "recv: timed out".
 *   ila-sock tcp-send DST PORT BYTES
 *       Connects (3 s), writes BYTES and waits up to 4 s for the peer to
 *       acknowledge them all: "connected", then "acked A of BYTES" and the
 *       socket's path MTU.
 *
 * Every wait has a deadline, so a black hole shows as a stall, never a hang.
 * Exit status 0 when the socket saw what the first line of each mode
 * describes, 1 otherwise, 2 on usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static unsigned char data[65536];

static int usage(void)
{
	fprintf(stderr, "usage: ila-sock udp-pmtu DST PORT SIZE | udp-refused DST PORT | "
			"tcp-send DST PORT BYTES\n");
	return 2;
}

static int fail(const char *what)
{
	printf("%s: %s\n", what, strerror(errno));
	return 1;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int path_mtu(int fd)
{
	int mtu = 0;
	socklen_t len = sizeof(mtu);

	return getsockopt(fd, IPPROTO_IPV6, IPV6_MTU, &mtu, &len) ? -1 : mtu;
}

/* A socket of @type connected to DST:PORT; -1 after printing why not. */
static int connected(int type, const char *dst, const char *port, int timeout_ms)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	struct pollfd p;
	int fd, err = 0;
	socklen_t len = sizeof(err);

	to.sin6_port = htons((unsigned short)atoi(port));
	if (inet_pton(AF_INET6, dst, &to.sin6_addr) != 1) {
		printf("bad address %s\n", dst);
		return -1;
	}
	fd = socket(AF_INET6, type | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail("socket"), -1;
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) && errno != EINPROGRESS)
		return fail("connect"), -1;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, timeout_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		printf("connect: %s\n", err ? strerror(err) : "timed out");
		return -1;
	}
	return fd;
}

static int udp_pmtu(const char *dst, const char *port, size_t size)
{
	int fd = connected(SOCK_DGRAM, dst, port, 1000), pmtu = IPV6_PMTUDISC_DO;
	long deadline = now_ms() + 3000;

	if (fd < 0)
		return 1;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		return fail("IPV6_MTU_DISCOVER");
	if (send(fd, data, size, 0) != (ssize_t)size)
		return fail("first send");
	printf("first send: ok\n");
	while (now_ms() < deadline) {
		usleep(50000);
		if (send(fd, data, size, 0) < 0 && errno == EMSGSIZE) {
			printf("send: EMSGSIZE, path MTU %d\n", path_mtu(fd));
			return 0;
		}
	}
	printf("send: still sent after 3 s, path MTU %d\n", path_mtu(fd));
	return 1;
}

static int udp_refused(const char *dst, const char *port)
{
	int fd = connected(SOCK_DGRAM, dst, port, 1000);
	struct pollfd p;

	if (fd < 0)
		return 1;
	if (send(fd, data, 32, 0) != 32)
		return fail("send");
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, 3000) == 1 && recv(fd, data, sizeof(data), 0) < 0) {
		printf("recv: %s\n", errno == ECONNREFUSED ? "ECONNREFUSED" : strerror(errno));
		return errno == ECONNREFUSED ? 0 : 1;
	}
	printf("recv: timed out\n");
	return 1;
}

static int tcp_send(const char *dst, const char *port, size_t bytes)
{
	int fd = connected(SOCK_STREAM, dst, port, 3000), queued = 0, one = 1;
	long deadline = now_ms() + 4000;
	size_t sent = 0;

	if (fd < 0)
		return 1;
	printf("connected\n");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (sent < bytes && now_ms() < deadline) {
		ssize_t n = send(fd, data, bytes - sent, 0);

		if (n > 0)
			sent += (size_t)n;
		else if (errno == EAGAIN)
			usleep(10000);
		else
			return fail("send");
	}
	do {
		if (ioctl(fd, SIOCOUTQ, &queued))
			return fail("SIOCOUTQ");
		if (sent == bytes && !queued)
			break;
		usleep(10000);
	} while (now_ms() < deadline);
	printf("acked %zu of %zu, path MTU %d\n", sent - (size_t)queued, bytes, path_mtu(fd));
	return sent == bytes && !queued ? 0 : 1;
}

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)i;
	if (argc == 5 && !strcmp(argv[1], "udp-pmtu"))
		return udp_pmtu(argv[2], argv[3], (size_t)atoi(argv[4]) % sizeof(data));
	if (argc == 4 && !strcmp(argv[1], "udp-refused"))
		return udp_refused(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "tcp-send"))
		return tcp_send(argv[2], argv[3], (size_t)atoi(argv[4]) % sizeof(data));
	return usage();
}
