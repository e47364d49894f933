// SPDX-License-Identifier: GPL-2.0
#include "pkt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "csum.h"

#define TCP_HDR_LEN 20
#define UDP_HDR_LEN 8
#define ICMP6_ECHO_HDR_LEN 8
#define IPV6_HDR_LEN 40

void pkt_spec_init(struct pkt_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->proto = IPPROTO_TCP;
	spec->hlim = 64;
	spec->tcp_flags = 0x02;	/* SYN */
	spec->window = 8192;
	spec->csum_auto = 1;
}

static int parse_uint(const char *text, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(text, &end, 0);
	return (errno || end == text || *end || *out > max || text[0] == '-') ?
		       -1 : 0;
}

static int parse_tcp_flags(const char *text, uint8_t *flags)
{
	static const char letters[] = "FSRPAUEC";	/* bit 0 upwards */
	const char *p;

	*flags = 0;
	for (p = text; *p; p++) {
		const char *bit = strchr(letters, *p);

		if (!bit)
			return -1;
		*flags |= (uint8_t)(1u << (bit - letters));
	}
	return 0;
}

static int parse_proto(const char *text, uint8_t *proto)
{
	unsigned long n;

	if (!strcmp(text, "tcp"))
		*proto = IPPROTO_TCP;
	else if (!strcmp(text, "udp"))
		*proto = IPPROTO_UDP;
	else if (!strcmp(text, "icmpv6"))
		*proto = IPPROTO_ICMPV6;
	else if (!parse_uint(text, 255, &n))
		*proto = (uint8_t)n;
	else
		return -1;
	return 0;
}

int pkt_spec_set(struct pkt_spec *spec, const char *kv, char *err,
		 size_t errlen)
{
	const struct {
		const char *key;
		unsigned long max;
		size_t off, size;
	} ints[] = {
#define F(k, field, m) { k, m, offsetof(struct pkt_spec, field), \
			 sizeof(((struct pkt_spec *)0)->field) }
		F("hlim", hlim, 255), F("tc", tclass, 255),
		F("flow", flow, 0xfffff), F("sport", sport, 65535),
		F("dport", dport, 65535), F("seq", seq, 0xffffffff),
		F("ack", ack, 0xffffffff), F("window", window, 65535),
		F("urgptr", urgptr, 65535), F("type", icmp_type, 255),
		F("code", icmp_code, 255), F("id", icmp_id, 65535),
		F("icmp_seq", icmp_seq, 65535),
		F("payload_len", payload_len, PKT_MAX - IPV6_HDR_LEN),
#undef F
	};
	const char *eq = strchr(kv, '=');
	char key[32];
	const char *val;
	unsigned long n;
	size_t i;

	if (!eq || (size_t)(eq - kv) >= sizeof(key)) {
		snprintf(err, errlen, "'%s' is not key=value", kv);
		return -1;
	}
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	val = eq + 1;

	if (!strcmp(key, "src") || !strcmp(key, "dst")) {
		int is_src = key[0] == 's';

		if (ila_parse_addr(val, is_src ? &spec->src : &spec->dst))
			goto bad;
		*(is_src ? &spec->have_src : &spec->have_dst) = 1;
		return 0;
	}
	if (!strcmp(key, "proto")) {
		if (parse_proto(val, &spec->proto))
			goto bad;
		return 0;
	}
	if (!strcmp(key, "flags")) {
		if (parse_tcp_flags(val, &spec->tcp_flags))
			goto bad;
		return 0;
	}
	if (!strcmp(key, "csum")) {
		if (!strcmp(val, "auto")) {
			spec->csum_auto = 1;
			return 0;
		}
		if (parse_uint(val, 0xffff, &n))
			goto bad;
		spec->csum_auto = 0;
		spec->csum = (uint16_t)n;
		return 0;
	}
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		if (strcmp(key, ints[i].key))
			continue;
		if (parse_uint(val, ints[i].max, &n))
			goto bad;
		switch (ints[i].size) {
		case 1:
			*(uint8_t *)((char *)spec + ints[i].off) = (uint8_t)n;
			break;
		case 2:
			*(uint16_t *)((char *)spec + ints[i].off) = (uint16_t)n;
			break;
		case 4:
			*(uint32_t *)((char *)spec + ints[i].off) = (uint32_t)n;
			break;
		default:
			*(size_t *)((char *)spec + ints[i].off) = (size_t)n;
		}
		return 0;
	}
	snprintf(err, errlen, "unknown field '%s'", key);
	return -1;
bad:
	snprintf(err, errlen, "bad value for %s: '%s'", key, val);
	return -1;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Returns the transport header length, and where its checksum goes. */
static size_t build_l4_header(const struct pkt_spec *spec, uint8_t *l4,
			      size_t l4_len, int *csum_off)
{
	switch (spec->proto) {
	case IPPROTO_TCP:
		put16(l4, spec->sport);
		put16(l4 + 2, spec->dport);
		put32(l4 + 4, spec->seq);
		put32(l4 + 8, spec->ack);
		l4[12] = (TCP_HDR_LEN / 4) << 4;
		l4[13] = spec->tcp_flags;
		put16(l4 + 14, spec->window);
		put16(l4 + 18, spec->urgptr);
		*csum_off = 16;
		return TCP_HDR_LEN;
	case IPPROTO_UDP:
		put16(l4, spec->sport);
		put16(l4 + 2, spec->dport);
		put16(l4 + 4, (uint16_t)l4_len);
		*csum_off = 6;
		return UDP_HDR_LEN;
	case IPPROTO_ICMPV6:
		l4[0] = spec->icmp_type;
		l4[1] = spec->icmp_code;
		put16(l4 + 4, spec->icmp_id);
		put16(l4 + 6, spec->icmp_seq);
		*csum_off = 2;
		return ICMP6_ECHO_HDR_LEN;
	default:
		*csum_off = -1;
		return 0;
	}
}

static size_t l4_header_len(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return TCP_HDR_LEN;
	case IPPROTO_UDP:
		return UDP_HDR_LEN;
	case IPPROTO_ICMPV6:
		return ICMP6_ECHO_HDR_LEN;
	default:
		return 0;
	}
}

long pkt_build(const struct pkt_spec *spec, uint8_t *buf, size_t cap,
	       char *err, size_t errlen)
{
	size_t l4_len = l4_header_len(spec->proto) + spec->payload_len;
	uint8_t *l4 = buf + IPV6_HDR_LEN;
	size_t hdr, i;
	int csum_off;

	if (!spec->have_src || !spec->have_dst) {
		snprintf(err, errlen, "src= and dst= are required");
		return -1;
	}
	if (l4_len > 0xffff || IPV6_HDR_LEN + l4_len > cap) {
		snprintf(err, errlen, "payload of %zu bytes is too large",
			 l4_len);
		return -1;
	}
	memset(buf, 0, IPV6_HDR_LEN + l4_len);
	put32(buf, 6u << 28 | (uint32_t)spec->tclass << 20 | spec->flow);
	put16(buf + 4, (uint16_t)l4_len);
	buf[6] = spec->proto;
	buf[7] = spec->hlim;
	memcpy(buf + 8, &spec->src, 16);
	memcpy(buf + 24, &spec->dst, 16);

	hdr = build_l4_header(spec, l4, l4_len, &csum_off);
	for (i = 0; i < spec->payload_len; i++)
		l4[hdr + i] = (uint8_t)i;

	if (csum_off >= 0) {
		uint16_t sum = spec->csum;

		if (spec->csum_auto) {
			sum = ntohs(csum_ipv6_l4(&spec->src, &spec->dst,
						 spec->proto, l4, l4_len));
			/* RFC 768: a computed zero is sent as all ones. */
			if (spec->proto == IPPROTO_UDP && sum == 0)
				sum = 0xffff;
		}
		put16(l4 + csum_off, sum);
	} else if (!spec->csum_auto) {
		snprintf(err, errlen, "csum= given for protocol %u, which has none",
			 spec->proto);
		return -1;
	}
	return (long)(IPV6_HDR_LEN + l4_len);
}
