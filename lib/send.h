/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sending a case's packet from the node under test: byte-exact on a raw
 * socket, or built by the kernel from an ordinary socket (UDP, UDP over
 * IPv4, TCP in repair mode). Shared by ila-inject (guest-init/inject.c) and
 * the kselftest runner (kselftest/runner/).
 */
#ifndef ILA_LIB_SEND_H
#define ILA_LIB_SEND_H

#include <netinet/in.h>
#include <stddef.h>

#include "pkt.h"

/* The socket options of a send that are not packet fields. */
struct send_opts {
	int no_check6_tx;	/* UDP_NO_CHECK6_TX */
	struct in_addr dst4;	/* udp4 */
};

/*
 * Parse a case's [packet] fields as ila-inject takes them (FIELD=VALUE,
 * plus no_check6_tx= and dst4=). Returns 0, or -1 with @err set.
 */
int send_parse(int argc, char **argv, struct pkt_spec *spec,
	       struct send_opts *opts, char *err, size_t errlen);

/*
 * Send the packet: @kind is raw, udp, udp4 or tcp. Returns 0, 2 when the
 * spec cannot be built, or 1 when a socket call failed; @err then says
 * which call and why ("sendto: Invalid argument").
 */
int send_packet(const char *kind, const struct pkt_spec *spec,
		const struct send_opts *opts, char *err, size_t errlen);

/* A UDP datagram "ila-mark SEQ" from port 9 to [@dst]:9. */
int send_mark(const struct in6_addr *dst, unsigned int seq, char *err,
	      size_t errlen);

#endif
