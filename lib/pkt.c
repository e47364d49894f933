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
	spec->l4_len = -1;
	spec->plen = -1;
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

static int parse_hex(const char *text, uint8_t *out, size_t cap, size_t *len)
{
	size_t n = strlen(text), i;

	if (n % 2 || n / 2 > cap)
		return -1;
	for (i = 0; i < n / 2; i++) {
		unsigned int byte;

		if (sscanf(text + 2 * i, "%2x", &byte) != 1 ||
		    !strchr("0123456789abcdefABCDEF", text[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", text[2 * i + 1]))
			return -1;
		out[i] = (uint8_t)byte;
	}
	*len = n / 2;
	return 0;
}

/* One of: hbh, dst, rt0/SEGLEFT/ADDR[/ADDR...], frag/OFFSET/M/ID, ah/SPI/SEQ */
static int parse_one_ext(char *text, struct pkt_ext *ext)
{
	char *save, *tok = strtok_r(text, "/", &save);
	unsigned long n;

	memset(ext, 0, sizeof(*ext));
	if (!tok)
		return -1;
	if (!strcmp(tok, "hbh") || !strcmp(tok, "dst")) {
		ext->type = tok[0] == 'h' ? 0 : 60;
		return strtok_r(NULL, "/", &save) ? -1 : 0;
	}
	if (!strcmp(tok, "rt0")) {
		ext->type = 43;
		tok = strtok_r(NULL, "/", &save);
		if (!tok || parse_uint(tok, 255, &n))
			return -1;
		ext->segleft = (uint8_t)n;
		while ((tok = strtok_r(NULL, "/", &save))) {
			if (ext->naddr == PKT_MAX_RT_ADDRS ||
			    ila_parse_addr(tok, &ext->addr[ext->naddr]))
				return -1;
			ext->naddr++;
		}
		return ext->naddr ? 0 : -1;
	}
	if (!strcmp(tok, "ah")) {
		unsigned long v[2];
		int i;

		ext->type = 51;
		for (i = 0; i < 2; i++) {
			tok = strtok_r(NULL, "/", &save);
			if (!tok || parse_uint(tok, 0xffffffff, &v[i]))
				return -1;
		}
		ext->ah_spi = (uint32_t)v[0];
		ext->ah_seq = (uint32_t)v[1];
		return strtok_r(NULL, "/", &save) ? -1 : 0;
	}
	if (!strcmp(tok, "frag")) {
		unsigned long v[3];
		const unsigned long max[3] = { 0x1fff, 1, 0xffffffff };
		int i;

		ext->type = 44;
		for (i = 0; i < 3; i++) {
			tok = strtok_r(NULL, "/", &save);
			if (!tok || parse_uint(tok, max[i], &v[i]))
				return -1;
		}
		ext->frag_offset = (uint16_t)v[0];
		ext->frag_more = (uint8_t)v[1];
		ext->frag_id = (uint32_t)v[2];
		return strtok_r(NULL, "/", &save) ? -1 : 0;
	}
	return -1;
}

static int parse_ext(const char *text, struct pkt_spec *spec)
{
	char buf[1024], *save, *tok;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	spec->n_ext = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (spec->n_ext == PKT_MAX_EXT ||
		    parse_one_ext(tok, &spec->ext[spec->n_ext]))
			return -1;
		spec->n_ext++;
	}
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
	if (!strcmp(key, "ext")) {
		if (parse_ext(val, spec))
			goto bad;
		return 0;
	}
	if (!strcmp(key, "payload_hex")) {
		if (parse_hex(val, spec->payload, sizeof(spec->payload),
			      &spec->payload_hex_len))
			goto bad;
		spec->have_payload_hex = 1;
		return 0;
	}
	if (!strcmp(key, "l4_len") || !strcmp(key, "plen")) {
		if (!strcmp(val, "auto")) {
			*(key[0] == 'l' ? &spec->l4_len : &spec->plen) = -1;
			return 0;
		}
		if (parse_uint(val, 0xffff, &n))
			goto bad;
		*(key[0] == 'l' ? &spec->l4_len : &spec->plen) = (long)n;
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

/* Write one extension header at @p; returns its length. */
static size_t build_ext(const struct pkt_ext *ext, uint8_t next, uint8_t *p)
{
	int i;

	p[0] = next;
	switch (ext->type) {
	case 43:	/* routing type 0: reserved word, then the addresses */
		p[1] = (uint8_t)(2 * ext->naddr);
		p[2] = 0;
		p[3] = ext->segleft;
		memset(p + 4, 0, 4);
		for (i = 0; i < ext->naddr; i++)
			memcpy(p + 8 + 16 * i, &ext->addr[i], 16);
		return 8 + 16 * (size_t)ext->naddr;
	case 44:
		p[1] = 0;
		put16(p + 2, (uint16_t)(ext->frag_offset << 3 | ext->frag_more));
		put32(p + 4, ext->frag_id);
		return 8;
	case 51:	/* authentication header: a 12-byte ICV of zeros, length in 4-byte units - 2 */
		p[1] = 4;
		put16(p + 2, 0);
		put32(p + 4, ext->ah_spi);
		put32(p + 8, ext->ah_seq);
		memset(p + 12, 0, 12);
		return 24;
	default:	/* hop-by-hop or destination options: one PadN */
		p[1] = 0;
		p[2] = 1;
		p[3] = 4;
		memset(p + 4, 0, 4);
		return 8;
	}
}

/* RFC 8200 8.1: the pseudo-header holds the final destination. */
static const struct in6_addr *final_destination(const struct pkt_spec *spec)
{
	int i;

	for (i = 0; i < spec->n_ext; i++)
		if (spec->ext[i].type == 43 && spec->ext[i].segleft)
			return &spec->ext[i].addr[spec->ext[i].naddr - 1];
	return &spec->dst;
}

long pkt_build(const struct pkt_spec *spec, uint8_t *buf, size_t cap,
	       char *err, size_t errlen)
{
	size_t payload_len = spec->have_payload_hex ? spec->payload_hex_len :
						      spec->payload_len;
	size_t l4_len = l4_header_len(spec->proto) + payload_len;
	size_t off = IPV6_HDR_LEN, hdr, i, total;
	uint8_t *next = buf + 6, *l4;
	int csum_off;

	if (!spec->have_src || !spec->have_dst) {
		snprintf(err, errlen, "src= and dst= are required");
		return -1;
	}
	if (IPV6_HDR_LEN + PKT_MAX_EXT * 72 + l4_len > cap) {
		snprintf(err, errlen, "payload of %zu bytes is too large",
			 l4_len);
		return -1;
	}
	memset(buf, 0, IPV6_HDR_LEN);
	put32(buf, 6u << 28 | (uint32_t)spec->tclass << 20 | spec->flow);
	buf[7] = spec->hlim;
	memcpy(buf + 8, &spec->src, 16);
	memcpy(buf + 24, &spec->dst, 16);

	for (i = 0; i < (size_t)spec->n_ext; i++) {
		*next = spec->ext[i].type;
		next = buf + off;
		off += build_ext(&spec->ext[i], 0, buf + off);
	}
	*next = spec->proto;

	l4 = buf + off;
	memset(l4, 0, l4_len);
	hdr = build_l4_header(spec, l4, l4_len, &csum_off);
	for (i = 0; i < payload_len; i++)
		l4[hdr + i] = spec->have_payload_hex ? spec->payload[i] :
						       (uint8_t)i;

	if (csum_off >= 0) {
		uint16_t sum = spec->csum;

		if (spec->csum_auto) {
			sum = ntohs(csum_ipv6_l4(&spec->src,
						 final_destination(spec),
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

	if (spec->l4_len >= 0) {
		if ((size_t)spec->l4_len > l4_len) {
			snprintf(err, errlen, "l4_len=%ld is longer than the %zu transport bytes",
				 spec->l4_len, l4_len);
			return -1;
		}
		l4_len = (size_t)spec->l4_len;
	}
	total = off + l4_len;
	if (total - IPV6_HDR_LEN > 0xffff) {
		snprintf(err, errlen, "packet of %zu bytes is too large", total);
		return -1;
	}
	put16(buf + 4, (uint16_t)(spec->plen >= 0 ? (size_t)spec->plen :
						       total - IPV6_HDR_LEN));
	return (long)total;
}
