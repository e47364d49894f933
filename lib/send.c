// SPDX-License-Identifier: GPL-2.0
/* Sending a case's packet; see send.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "send.h"

#define MARK_PORT 9

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif

static uint8_t buf[PKT_MAX];

int send_parse(int argc, char **argv, struct pkt_spec *spec,
	       struct send_opts *opts, char *err, size_t errlen)
{
	int i;

	pkt_spec_init(spec);
	memset(opts, 0, sizeof(*opts));
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "no_check6_tx=", 13) &&
		    (argv[i][13] == '0' || argv[i][13] == '1') && !argv[i][14]) {
			opts->no_check6_tx = argv[i][13] == '1';
			continue;
		}
		if (!strncmp(argv[i], "dst4=", 5)) {
			if (inet_pton(AF_INET, argv[i] + 5, &opts->dst4) != 1) {
				snprintf(err, errlen, "bad IPv4 address %s", argv[i] + 5);
				return -1;
			}
			continue;
		}
		if (pkt_spec_set(spec, argv[i], err, errlen))
			return -1;
	}
	return 0;
}

static int fail(const char *what, int fd, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, strerror(errno));
	if (fd >= 0)
		close(fd);
	return 1;
}

static int send_raw(const struct pkt_spec *spec, char *err, size_t errlen)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	long len;
	int fd;

	len = pkt_build(spec, buf, sizeof(buf), err, errlen);
	if (len < 0)
		return 2;
	fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return fail("socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)", fd, err, errlen);
	to.sin6_addr = spec->dst;
	if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to,
		   sizeof(to)) != len)
		return fail("sendto", fd, err, errlen);
	close(fd);
	return 0;
}

static void fill_payload(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)i;
}

/* Bind @fd to @from and send @len bytes of @p to @to; closes @fd. */
static int bind_and_send(int fd, const struct sockaddr *from, socklen_t fromlen,
			 const struct sockaddr *to, socklen_t tolen,
			 const void *p, size_t len, char *err, size_t errlen)
{
	if (bind(fd, from, fromlen))
		return fail("bind", fd, err, errlen);
	if (sendto(fd, p, len, 0, to, tolen) != (ssize_t)len)
		return fail("sendto", fd, err, errlen);
	close(fd);
	return 0;
}

int send_mark(const struct in6_addr *dst, unsigned int seq, char *err,
	      size_t errlen)
{
	struct sockaddr_in6 to = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(MARK_PORT),
		.sin6_addr = *dst,
	};
	/* A fixed source port keeps every capture deterministic. */
	struct sockaddr_in6 from = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(MARK_PORT),
	};
	char msg[64];
	int fd, len;

	len = snprintf(msg, sizeof(msg), "ila-mark %u", seq);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail("socket(AF_INET6, SOCK_DGRAM)", fd, err, errlen);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), msg, (size_t)len,
			     err, errlen);
}

/* The case's source and destination, as a socket binds and sends to them. */
static struct sockaddr_in6 spec_from(const struct pkt_spec *spec)
{
	return (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(spec->sport),
				      .sin6_addr = spec->src };
}

static struct sockaddr_in6 spec_to(const struct pkt_spec *spec)
{
	return (struct sockaddr_in6){ .sin6_family = AF_INET6, .sin6_port = htons(spec->dport),
				      .sin6_addr = spec->dst };
}

static int send_udp(const struct pkt_spec *spec, const struct send_opts *opts,
		    char *err, size_t errlen)
{
	struct sockaddr_in6 from = spec_from(spec), to = spec_to(spec);
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return fail("socket", fd, err, errlen);
	if (opts->no_check6_tx &&
	    setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, &opts->no_check6_tx,
		       sizeof(opts->no_check6_tx)))
		return fail("UDP_NO_CHECK6_TX", fd, err, errlen);
	fill_payload(buf, spec->payload_len);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), buf,
			     spec->payload_len, err, errlen);
}

static int send_udp4(const struct pkt_spec *spec, const struct send_opts *opts,
		     char *err, size_t errlen)
{
	struct sockaddr_in from = {
		.sin_family = AF_INET, .sin_port = htons(spec->sport),
	};
	struct sockaddr_in to = {
		.sin_family = AF_INET, .sin_port = htons(spec->dport),
		.sin_addr = opts->dst4,
	};
	int pmtu = IP_PMTUDISC_DO;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return fail("socket", fd, err, errlen);
	/* DF on an unconnected socket makes the kernel send IPv4 ID 0. */
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)))
		return fail("IP_MTU_DISCOVER", fd, err, errlen);
	fill_payload(buf, spec->payload_len);
	return bind_and_send(fd, (struct sockaddr *)&from, sizeof(from),
			     (struct sockaddr *)&to, sizeof(to), buf,
			     spec->payload_len, err, errlen);
}

static int tcp_set(int fd, int opt, int val, const char *what, char *err,
		   size_t errlen)
{
	if (setsockopt(fd, IPPROTO_TCP, opt, &val, sizeof(val)))
		return fail(what, fd, err, errlen);
	return 0;
}

/*
 * TCP_REPAIR lets connect() establish the socket without a handshake and
 * with our sequence numbers; leaving repair mode sends one window probe.
 * The payload goes out in segments the kernel builds (CHECKSUM_PARTIAL,
 * GSO), and SO_LINGER 0 ends the connection with a RST.
 */
static int send_tcp(const struct pkt_spec *spec, char *err, size_t errlen)
{
	struct sockaddr_in6 from = spec_from(spec), to = spec_to(spec);
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	struct tcp_repair_window win;
	socklen_t winlen = sizeof(win);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return fail("socket", fd, err, errlen);
	if (tcp_set(fd, TCP_REPAIR, 1, "TCP_REPAIR", err, errlen) ||
	    tcp_set(fd, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE, "TCP_REPAIR_QUEUE", err, errlen) ||
	    tcp_set(fd, TCP_QUEUE_SEQ, (int)spec->seq, "TCP_QUEUE_SEQ send", err, errlen) ||
	    tcp_set(fd, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE, "TCP_REPAIR_QUEUE", err, errlen) ||
	    tcp_set(fd, TCP_QUEUE_SEQ, (int)spec->ack, "TCP_QUEUE_SEQ recv", err, errlen))
		return 1;
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)))
		return fail("bind", fd, err, errlen);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)))
		return fail("connect (repair mode)", fd, err, errlen);
	/* The peer never advertised a window: give it one, or nothing is sent. */
	if (getsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win, &winlen))
		return fail("TCP_REPAIR_WINDOW get", fd, err, errlen);
	win.snd_wnd = win.max_window = 65535;
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &win, sizeof(win)))
		return fail("TCP_REPAIR_WINDOW", fd, err, errlen);
	if (tcp_set(fd, TCP_REPAIR, 0, "TCP_REPAIR off", err, errlen) ||
	    tcp_set(fd, TCP_NODELAY, 1, "TCP_NODELAY", err, errlen))
		return 1;
	fill_payload(buf, spec->payload_len);
	if (spec->payload_len &&
	    send(fd, buf, spec->payload_len, 0) != (ssize_t)spec->payload_len)
		return fail("send", fd, err, errlen);
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)))
		return fail("SO_LINGER", fd, err, errlen);
	close(fd);
	return 0;
}

int send_packet(const char *kind, const struct pkt_spec *spec,
		const struct send_opts *opts, char *err, size_t errlen)
{
	if (!strcmp(kind, "raw"))
		return send_raw(spec, err, errlen);
	if (!strcmp(kind, "udp"))
		return send_udp(spec, opts, err, errlen);
	if (!strcmp(kind, "udp4"))
		return send_udp4(spec, opts, err, errlen);
	if (!strcmp(kind, "tcp"))
		return send_tcp(spec, err, errlen);
	snprintf(err, errlen, "unknown send kind '%s' (raw, udp, udp4, tcp)", kind);
	return 2;
}
