// SPDX-License-Identifier: GPL-2.0
/*
 * ila-inject: send test packets from inside the guest.
 *
 *   ila-inject raw FIELD=VALUE...   one byte-exact IPv6 packet, built by
 *                                   lib/pkt.c and sent on a raw socket with
 *                                   the header included (IPPROTO_RAW), so
 *                                   the kernel routes it but builds nothing
 *   ila-inject udp FIELD=VALUE...   a UDP datagram built by the kernel from
 *                                   an ordinary socket bound to src/sport
 *                                   (no_check6_tx=1: UDP_NO_CHECK6_TX)
 *   ila-inject udp4 dst=A.B.C.D sport=N dport=N payload_len=N
 *                                   the same over IPv4, with DF so that the
 *                                   IPv4 ID is 0
 *   ila-inject tcp FIELD=VALUE...   payload_len bytes on a TCP socket put in
 *                                   repair mode with seq/ack as its sequence
 *                                   numbers, so the kernel builds segments
 *                                   (CHECKSUM_PARTIAL, GSO) deterministically
 *                                   without a handshake; ends with a RST
 *   ila-inject mark dst=ADDR seq=N  a UDP datagram "ila-mark N" to port 9
 *                                   on a plain route: once the host sees it,
 *                                   every frame sent before it has arrived
 *
 * Fields are those of a case file's [packet] table (see lib/pkt.h).
 */
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/pkt.h"

#define MARK_PORT 9

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif

static int usage(void)
{
	fprintf(stderr, "usage: ila-inject raw|udp|tcp FIELD=VALUE...\n"
			"       ila-inject udp4 dst=A.B.C.D sport=N dport=N payload_len=N\n"
			"       ila-inject mark dst=ADDR seq=N\n");
	return 2;
}

/* Socket-mode options that are not packet fields. */
static int no_check6_tx;
static struct in_addr dst4;

static int parse_spec(int argc, char **argv, struct pkt_spec *spec)
{
	char err[256];
	int i;

	pkt_spec_init(spec);
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "no_check6_tx=", 13) &&
		    (argv[i][13] == '0' || argv[i][13] == '1') && !argv[i][14]) {
			no_check6_tx = argv[i][13] == '1';
			continue;
		}
		if (!strncmp(argv[i], "dst4=", 5)) {
			if (inet_pton(AF_INET, argv[i] + 5, &dst4) != 1) {
				fprintf(stderr, "ila-inject: bad IPv4 address %s\n",
					argv[i] + 5);
				return -1;
			}
			continue;
		}
		if (pkt_spec_set(spec, argv[i], err, sizeof(err))) {
			fprintf(stderr, "ila-inject: %s\n", err);
			return -1;
		}
	}
	return 0;
}

static int fail(const char *what, int fd)
{
	fprintf(stderr, "ila-inject: %s: %s\n", what, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 1;
}

static int send_raw(const struct pkt_spec *spec)
{
	static uint8_t buf[PKT_MAX];
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	char err[256];
	long len;
	int fd;

	len = pkt_build(spec, buf, sizeof(buf), err, sizeof(err));
	if (len < 0) {
		fprintf(stderr, "ila-inject: %s\n", err);
		return 2;
	}
	fd = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0)
		return fail("socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)", fd);
	to.sin6_addr = spec->dst;
	if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to,
		   sizeof(to)) != len)
		return fail("sendto", fd);
	close(fd);
	printf("sent %ld bytes\n", len);
	return 0;
}

static void fill_payload(uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)i;
}

/* Bind @fd to @from and send @len bytes of @buf to @to; closes @fd. */
static int bind_and_send(int fd, const struct sockaddr *from, socklen_t fromlen,
			 const struct sockaddr *to, socklen_t tolen,
			 const void *buf, size_t len)
{
	if (bind(fd, from, fromlen))
		return fail("bind", fd);
	if (sendto(fd, buf, len, 0, to, tolen) != (ssize_t)len)
		return fail("sendto", fd);
	close(fd);
	return 0;
}

static int send_mark(const struct pkt_spec *spec)
{
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(MARK_PORT),
		.sin6_addr = spec->dst,
	};
	/* A fixed source port keeps every capture deterministic. */
	struct sockaddr_in6 from = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(MARK_PORT),
	};
	char msg[64];
	int fd, len;

	len = snprintf(msg, sizeof(msg), "ila-mark %u", spec->seq);
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		return fail("socket(AF_INET6, SOCK_DGRAM)", fd);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), msg, (size_t)len);
}

static uint8_t payload[PKT_MAX];

static int send_udp(const struct pkt_spec *spec)
{
	struct sockaddr_in6 from = {
		.sin6_family = AF_INET6, .sin6_port = htons(spec->sport),
		.sin6_addr = spec->src,
	};
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6, .sin6_port = htons(spec->dport),
		.sin6_addr = spec->dst,
	};
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);

	if (fd < 0)
		return fail("socket", fd);
	if (no_check6_tx && setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX,
				       &no_check6_tx, sizeof(no_check6_tx)))
		return fail("UDP_NO_CHECK6_TX", fd);
	fill_payload(payload, spec->payload_len);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), payload,
			     spec->payload_len);
}

static int send_udp4(const struct pkt_spec *spec)
{
	struct sockaddr_in from = {
		.sin_family = AF_INET, .sin_port = htons(spec->sport),
	};
	struct sockaddr_in to = {
		.sin_family = AF_INET, .sin_port = htons(spec->dport),
		.sin_addr = dst4,
	};
	int pmtu = IP_PMTUDISC_DO;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		return fail("socket", fd);
	/* DF on an unconnected socket makes the kernel send IPv4 ID 0. */
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		return fail("IP_MTU_DISCOVER", fd);
	fill_payload(payload, spec->payload_len);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), payload,
			     spec->payload_len);
}

static int tcp_set(int fd, int opt, int val, const char *what)
{
	if (setsockopt(fd, IPPROTO_TCP, opt, &val, sizeof(val))) {
		fprintf(stderr, "ila-inject: %s: %s\n", what, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * TCP_REPAIR lets connect() establish the socket without a handshake and
 * with our sequence numbers; leaving repair mode sends one window probe.
 */
static int send_tcp(const struct pkt_spec *spec)
{
	struct sockaddr_in6 from = {
		.sin6_family = AF_INET6, .sin6_port = htons(spec->sport),
		.sin6_addr = spec->src,
	};
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6, .sin6_port = htons(spec->dport),
		.sin6_addr = spec->dst,
	};
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	struct tcp_repair_window win;
	socklen_t winlen = sizeof(win);
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0)
		return fail("socket", fd);
	if (tcp_set(fd, TCP_REPAIR, 1, "TCP_REPAIR") ||
	    tcp_set(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE, "TCP_REPAIR_QUEUE") ||
	    tcp_set(fd, TCP_QUEUE_SEQ, (int)spec->seq, "TCP_QUEUE_SEQ send") ||
	    tcp_set(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE, "TCP_REPAIR_QUEUE") ||
	    tcp_set(fd, TCP_QUEUE_SEQ, (int)spec->ack, "TCP_QUEUE_SEQ recv")) {
		close(fd);
		return 1;
	}
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)))
		return fail("bind", fd);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)))
		return fail("connect (repair mode)", fd);
	/* The peer never advertised a window: give it one, or nothing is sent. */
	if (getsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win, &winlen))
		return fail("TCP_REPAIR_WINDOW get", fd);
	win.snd_wnd = win.max_window = 65535;
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win, sizeof(win)))
		return fail("TCP_REPAIR_WINDOW", fd);
	if (tcp_set(fd, TCP_REPAIR, 0, "TCP_REPAIR off") ||
	    tcp_set(fd, TCP_NODELAY, 1, "TCP_NODELAY")) {
		close(fd);
		return 1;
	}
	fill_payload(payload, spec->payload_len);
	if (spec->payload_len &&
	    send(fd, payload, spec->payload_len, 0) != (ssize_t)spec->payload_len)
		return fail("send", fd);
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)))
		return fail("SO_LINGER", fd);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct pkt_spec spec;

	if (argc < 2)
		return usage();
	if (parse_spec(argc - 2, argv + 2, &spec))
		return 2;
	if (!strcmp(argv[1], "raw"))
		return send_raw(&spec);
	if (!strcmp(argv[1], "udp"))
		return send_udp(&spec);
	if (!strcmp(argv[1], "udp4"))
		return send_udp4(&spec);
	if (!strcmp(argv[1], "tcp"))
		return send_tcp(&spec);
	if (!strcmp(argv[1], "mark")) {
		if (!spec.have_dst) {
			fprintf(stderr, "ila-inject: mark needs dst=\n");
			return 2;
		}
		return send_mark(&spec);
	}
	return usage();
}
