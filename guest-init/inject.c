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
#include <stdio.h>
#include <string.h>

#include "../lib/send.h"

static int usage(void)
{
	fprintf(stderr, "usage: ila-inject raw|udp|tcp FIELD=VALUE...\n"
			"       ila-inject udp4 dst=A.B.C.D sport=N dport=N payload_len=N\n"
			"       ila-inject mark dst=ADDR seq=N\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct send_opts opts;
	struct pkt_spec spec;
	char err[256];
	int rc;

	if (argc < 2)
		return usage();
	if (send_parse(argc - 2, argv + 2, &spec, &opts, err, sizeof(err))) {
		fprintf(stderr, "ila-inject: %s\n", err);
		return 2;
	}
	if (!strcmp(argv[1], "mark")) {
		if (!spec.have_dst) {
			fprintf(stderr, "ila-inject: mark needs dst=\n");
			return 2;
		}
		rc = send_mark(&spec.dst, spec.seq, err, sizeof(err));
	} else if (!strcmp(argv[1], "raw") || !strcmp(argv[1], "udp") ||
		   !strcmp(argv[1], "udp4") || !strcmp(argv[1], "tcp")) {
		rc = send_packet(argv[1], &spec, &opts, err, sizeof(err));
	} else {
		return usage();
	}
	if (rc)
		fprintf(stderr, "ila-inject: %s\n", err);
	else if (!strcmp(argv[1], "raw"))
		printf("sent\n");
	return rc;
}
