/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Byte-exact IPv6 packet builder for the injector. A packet is described by
 * key=value fields, the same names a case file uses in its [packet] table,
 * so the host oracle (scapy) can build the same bytes independently.
 */
#ifndef ILA_LIB_PKT_H
#define ILA_LIB_PKT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define PKT_MAX 65575	/* IPv6 header + the largest payload length */

struct pkt_spec {
	struct in6_addr src, dst;
	uint8_t proto;		/* next header: 6 tcp, 17 udp, 58 icmpv6, ... */
	uint8_t hlim, tclass;
	uint32_t flow;
	uint16_t sport, dport;	/* tcp, udp */
	uint32_t seq, ack;	/* tcp */
	uint8_t tcp_flags;
	uint16_t window, urgptr;
	uint8_t icmp_type, icmp_code;
	uint16_t icmp_id, icmp_seq;
	size_t payload_len;	/* bytes 0, 1, 2, ... modulo 256 */
	int csum_auto;		/* compute the checksum, else use csum */
	uint16_t csum;
	int have_src, have_dst;
};

void pkt_spec_init(struct pkt_spec *spec);

/*
 * Set one field from "key=value"; returns 0, or -1 with a message in @err.
 */
int pkt_spec_set(struct pkt_spec *spec, const char *kv, char *err,
		 size_t errlen);

/* Write the packet into @buf; returns its length, or -1 (@err says why). */
long pkt_build(const struct pkt_spec *spec, uint8_t *buf, size_t cap,
	       char *err, size_t errlen);

#endif
