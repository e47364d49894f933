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
#define PKT_MAX_EXT 8	/* extension headers in one packet */
#define PKT_MAX_RT_ADDRS 4
#define PKT_MAX_PAYLOAD_HEX 2048

/* One extension header, in the order they follow the IPv6 header. */
struct pkt_ext {
	uint8_t type;		/* 0 hop-by-hop, 43 routing, 44 fragment, 51 AH, 60 dst */
	uint8_t segleft;	/* routing (type 0) */
	int naddr;
	struct in6_addr addr[PKT_MAX_RT_ADDRS];
	uint16_t frag_offset;	/* fragment: in 8-byte units */
	uint8_t frag_more;
	uint32_t frag_id;
	uint32_t ah_spi, ah_seq;	/* authentication header */
};

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
	uint8_t payload[PKT_MAX_PAYLOAD_HEX];	/* payload_hex= instead */
	size_t payload_hex_len;
	int have_payload_hex;
	int csum_auto;		/* compute the checksum, else use csum */
	uint16_t csum;
	struct pkt_ext ext[PKT_MAX_EXT];	/* ext=hbh,dst,rt0/SL/ADDR,frag/OFF/M/ID,ah/SPI/SEQ */
	int n_ext;
	long l4_len;		/* keep only this many transport bytes; -1 all */
	long plen;		/* payload length field; -1 the real one */
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
