// SPDX-License-Identifier: GPL-2.0
/*
 * ila-inject: send test packets from inside the guest.
 *
 *   ila-inject raw FIELD=VALUE...   one byte-exact IPv6 packet, built by
 *                                   lib/pkt.c and sent on a raw socket with
 *                                   the header included (IPPROTO_RAW), so
 *                                   the kernel routes it but builds nothing
 *   ila-inject mark dst=ADDR seq=N  a UDP datagram "ila-mark N" to port 9
 *                                   on a plain route: once the host sees it,
 *                                   every frame sent before it has arrived
 *
 * Fields are those of a case file's [packet] table (see lib/pkt.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/pkt.h"

#define MARK_PORT 9

static int usage(void)
{
	fprintf(stderr, "usage: ila-inject raw FIELD=VALUE...\n"
			"       ila-inject mark dst=ADDR seq=N\n");
	return 2;
}

static int parse_spec(int argc, char **argv, struct pkt_spec *spec)
{
	char err[256];
	int i;

	pkt_spec_init(spec);
	for (i = 0; i < argc; i++) {
		if (pkt_spec_set(spec, argv[i], err, sizeof(err))) {
			fprintf(stderr, "ila-inject: %s\n", err);
			return -1;
		}
	}
	return 0;
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
	if (fd < 0) {
		perror("ila-inject: socket(AF_INET6, SOCK_RAW, IPPROTO_RAW)");
		return 1;
	}
	to.sin6_addr = spec->dst;
	if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to,
		   sizeof(to)) != len) {
		fprintf(stderr, "ila-inject: sendto: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	printf("sent %ld bytes\n", len);
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
	if (fd < 0) {
		perror("ila-inject: socket(AF_INET6, SOCK_DGRAM)");
		return 1;
	}
	if (bind(fd, (struct sockaddr *)&from, sizeof(from))) {
		perror("ila-inject: bind to the marker port");
		close(fd);
		return 1;
	}
	if (sendto(fd, msg, (size_t)len, 0, (struct sockaddr *)&to,
		   sizeof(to)) != len) {
		fprintf(stderr, "ila-inject: mark: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
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
	if (!strcmp(argv[1], "mark")) {
		if (!spec.have_dst) {
			fprintf(stderr, "ila-inject: mark needs dst=\n");
			return 2;
		}
		return send_mark(&spec);
	}
	return usage();
}
