// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/: checksums, addresses and the packet builder.
 * Prints KTAP; the known answers come from independent sources (RFC 1071's
 * worked example, and scapy 2.5 for whole packets), never from lib/ itself.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "../addr.h"
#include "../csum.h"
#include "../nl.h"
#include "../pkt.h"

static int test_no, failures;
static char diag[512];

static void result(const char *name, int ok)
{
	test_no++;
	if (!ok) {
		failures++;
		printf("# %s\n", diag);
	}
	printf("%sok %d %s\n", ok ? "" : "not ", test_no, name);
	diag[0] = '\0';
}

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		snprintf(diag, sizeof(diag), __VA_ARGS__);		\
		return 0;						\
	}								\
} while (0)

static int rfc1071_example(void)
{
	/* RFC 1071 section 3: the sum of these words is 0xddf2. */
	static const unsigned char data[] = {
		0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint16_t c = ntohs(csum_fold(csum_add_bytes(0, data, sizeof(data))));

	CHECK(c == (uint16_t)~0xddf2, "checksum 0x%04x, want 0x%04x", c,
	      (uint16_t)~0xddf2);
	return 1;
}

static int odd_length_pads_with_zero(void)
{
	static const unsigned char odd[] = { 0x12, 0x34, 0x56 };
	static const unsigned char even[] = { 0x12, 0x34, 0x56, 0x00 };

	CHECK(csum_add_bytes(0, odd, 3) == csum_add_bytes(0, even, 4),
	      "odd length not padded with a zero byte");
	return 1;
}

static int build(const char **fields, int n, uint8_t *buf, long *len)
{
	struct pkt_spec spec;
	char err[256];
	int i;

	pkt_spec_init(&spec);
	for (i = 0; i < n; i++)
		CHECK(!pkt_spec_set(&spec, fields[i], err, sizeof(err)),
		      "pkt_spec_set(%s): %s", fields[i], err);
	*len = pkt_build(&spec, buf, PKT_MAX, err, sizeof(err));
	CHECK(*len > 0, "pkt_build: %s", err);
	return 1;
}

#define ADDRS "src=2401:db00:20:911a:face:0:25:0", "dst=3333:0:0:1:5555:0:2:0"
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int known_packet(const char **fields, int n, size_t len_want,
			int csum_off, uint16_t csum_want)
{
	static uint8_t buf[PKT_MAX];
	struct in6_addr src, dst;
	uint16_t got;
	long len;

	if (!build(fields, n, buf, &len))
		return 0;
	CHECK((size_t)len == len_want, "length %ld, want %zu", len, len_want);
	got = (uint16_t)(buf[40 + csum_off] << 8 | buf[41 + csum_off]);
	CHECK(got == csum_want, "checksum 0x%04x, scapy says 0x%04x", got,
	      csum_want);
	/* A correct checksum makes the whole sum verify to zero. */
	memcpy(&src, buf + 8, 16);
	memcpy(&dst, buf + 24, 16);
	CHECK(csum_ipv6_l4(&src, &dst, buf[6], buf + 40,
			   (size_t)len - 40) == 0,
	      "packet does not verify");
	return 1;
}

static int tcp_syn_matches_scapy(void)
{
	const char *f[] = { ADDRS, "proto=tcp", "sport=40000", "dport=80",
			    "seq=1000", "flags=S", "window=65535" };

	return known_packet(f, N(f), 60, 16, 0xfbae);
}

static int udp_odd_payload_matches_scapy(void)
{
	const char *f[] = { ADDRS, "proto=udp", "sport=5000", "dport=6000",
			    "payload_len=5" };

	return known_packet(f, N(f), 53, 6, 0xbb1c);
}

static int icmpv6_echo_matches_scapy(void)
{
	const char *f[] = { ADDRS, "proto=icmpv6", "type=128", "id=7",
			    "icmp_seq=1", "payload_len=3" };

	return known_packet(f, N(f), 51, 2, 0x69f5);
}

static int fixed_checksum_is_kept(void)
{
	static uint8_t buf[PKT_MAX];
	const char *f[] = { ADDRS, "proto=udp", "csum=0" };
	long len;

	if (!build(f, N(f), buf, &len))
		return 0;
	CHECK(buf[46] == 0 && buf[47] == 0, "csum=0 not sent as zero");
	return 1;
}

static int ipv6_header_layout(void)
{
	static uint8_t buf[PKT_MAX];
	const char *f[] = { ADDRS, "proto=59", "tc=0xb8", "flow=0x12345",
			    "hlim=7", "payload_len=4" };
	long len;

	if (!build(f, N(f), buf, &len))
		return 0;
	CHECK(len == 44, "length %ld", len);
	CHECK(buf[0] == 0x6b && buf[1] == 0x81 && buf[2] == 0x23 &&
	      buf[3] == 0x45, "version/class/flow %02x%02x%02x%02x",
	      buf[0], buf[1], buf[2], buf[3]);
	CHECK(buf[4] == 0 && buf[5] == 4 && buf[6] == 59 && buf[7] == 7,
	      "plen/nh/hlim wrong");
	CHECK(buf[40] == 0 && buf[43] == 3, "payload pattern wrong");
	return 1;
}

static int bad_fields_are_refused(void)
{
	const char *bad[] = { "sport=65536", "flags=SX", "proto=tcpx", "dst=::g",
			      "colour=red", "seq=-1", "noequals", "hlim=" };
	struct pkt_spec spec;
	char err[256];
	size_t i;

	pkt_spec_init(&spec);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(pkt_spec_set(&spec, bad[i], err, sizeof(err)) == -1,
		      "'%s' accepted", bad[i]);
		CHECK(err[0], "'%s' refused without a message", bad[i]);
	}
	return 1;
}

static int locator_parse(void)
{
	static const uint8_t want[8] = { 0x20, 0x01, 0, 0, 0, 0, 0, 0x02 };
	const char *bad[] = { "2001:0:0", "2001:0:0:2:3", "12345:0:0:1",
			      "g:0:0:1", "", "2001::2", "1:2:3:4 " };
	uint8_t loc[8];
	size_t i;

	CHECK(!ila_parse_locator("2001:0:0:2", loc) && !memcmp(loc, want, 8),
	      "2001:0:0:2 parsed wrong");
	CHECK(!ila_parse_locator("FFFF:ffff:0:A", loc) && loc[0] == 0xff &&
	      loc[7] == 0x0a, "mixed case parsed wrong");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(ila_parse_locator(bad[i], loc) == -1, "'%s' accepted",
		      bad[i]);
	return 1;
}

static int set_locator_keeps_identifier(void)
{
	static const uint8_t loc[8] = { 0x20, 0x01, 0, 0, 0, 0, 0, 0x02 };
	struct in6_addr a, want;

	CHECK(!ila_parse_addr("3333:0:0:1:5555:0:2:0", &a), "parse");
	CHECK(!ila_parse_addr("2001:0:0:2:5555:0:2:0", &want), "parse");
	ila_set_locator(&a, loc);
	CHECK(!memcmp(&a, &want, 16), "address after set_locator differs");
	return 1;
}

/*
 * The known bytes below are written by hand from the netlink wire format
 * (RFC 3549, <linux/netlink.h>, <linux/rtnetlink.h>) on a little-endian
 * host: header, struct rtmsg, RTA_ENCAP_TYPE = ILA, RTA_ENCAP { LOCATOR }.
 */
static int nl_route_request_bytes(void)
{
	static const unsigned char want[] = {
		0x34, 0, 0, 0, 0x18, 0, 0x05, 0x06, 7, 0, 0, 0, 0, 0, 0, 0,
		0x0a, 0x80, 0, 0, 0, 3, 0, 1, 0, 0, 0, 0,
		0x06, 0, 0x15, 0, 0x02, 0, 0, 0,
		0x10, 0, 0x16, 0, 0x0c, 0, 0x01, 0,
		0x20, 0x01, 0, 0, 0, 0, 0, 0x02 };
	static const uint8_t loc[8] = { 0x20, 0x01, 0, 0, 0, 0, 0, 0x02 };
	static const unsigned char rtm[12] = { 0x0a, 0x80, 0, 0, 0, 3, 0, 1 };
	uint16_t type = 2;
	struct nl_msg m;
	struct nlattr *nest;

	nl_msg_init(&m, 24, 0x0605, 7);
	nl_msg_put(&m, rtm, sizeof(rtm));
	nl_attr_put(&m, 21, &type, sizeof(type));
	nest = nl_nest_start(&m, 22);
	nl_attr_put(&m, 1, loc, sizeof(loc));
	nl_nest_end(&m, nest);
	CHECK(m.hdr.nlmsg_len == sizeof(want), "length %u, expected %zu",
	      m.hdr.nlmsg_len, sizeof(want));
	CHECK(!memcmp(m.buf, want, sizeof(want)), "bytes differ");
	return 1;
}

/* An ack for seq 7: error -EINVAL, request capped, extack "bad". */
static int nl_ack_with_extack(void)
{
	static const unsigned char ack[] = {
		0x2c, 0, 0, 0, 0x02, 0, 0x00, 0x03, 7, 0, 0, 0, 0, 0, 0, 0,
		0xea, 0xff, 0xff, 0xff,
		0x34, 0, 0, 0, 0x18, 0, 0x05, 0x06, 7, 0, 0, 0, 0, 0, 0, 0,
		0x08, 0, 0x01, 0, 'b', 'a', 'd', 0 };
	char extack[64];
	int err = 0;

	CHECK(nl_parse_ack(ack, sizeof(ack), 7, &err, extack,
			   sizeof(extack)) == 1, "ack for seq 7 not found");
	CHECK(err == -22, "error %d, expected -22", err);
	CHECK(!strcmp(extack, "bad"), "extack '%s', expected 'bad'", extack);
	CHECK(nl_parse_ack(ack, sizeof(ack), 8, &err, extack,
			   sizeof(extack)) == 0, "an ack for seq 8 was found");
	CHECK(nl_parse_ack(ack, sizeof(ack) - 1, 7, &err, extack,
			   sizeof(extack)) == -1, "a truncated ack was accepted");
	return 1;
}

/*
 * The controller's reply to CTRL_CMD_GETFAMILY "ILA" for seq 3, by hand:
 * header (type GENL_ID_CTRL 0x10), genlmsghdr (NEWFAMILY, version 2),
 * CTRL_ATTR_FAMILY_NAME "ILA", CTRL_ATTR_FAMILY_ID 0x1d.
 */
static int nl_genl_family_reply(void)
{
	static const unsigned char reply[] = {
		0x24, 0, 0, 0, 0x10, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
		0x01, 0x02, 0, 0,
		0x08, 0, 0x02, 0, 'I', 'L', 'A', 0,
		0x06, 0, 0x01, 0, 0x1d, 0, 0, 0 };
	struct nl_msg m;

	CHECK(nl_genl_family_id(reply, sizeof(reply), 3) == 0x1d, "family id not read");
	CHECK(nl_genl_family_id(reply, sizeof(reply), 4) == -1, "a reply for seq 4 was found");
	CHECK(nl_genl_family_id(reply, sizeof(reply) - 4, 3) == -1,
	      "a reply cut inside its attributes was accepted");
	nl_genl_init(&m, 0x1d, 1, 1, 0x0005, 9);
	CHECK(m.hdr.nlmsg_len == 20 && m.hdr.nlmsg_type == 0x1d && m.buf[16] == 1 &&
	      m.buf[17] == 1, "genl request header differs");
	return 1;
}

static int nl_attrs_bounds(void)
{
	/* type 1 len 5 (last, unpadded) is fine; len 12 in 8 bytes is not */
	static const unsigned char ok[] = { 8, 0, 2, 0, 1, 2, 3, 4,
					    5, 0, 1, 0, 9 };
	static const unsigned char over[] = { 12, 0, 1, 0, 1, 2, 3, 4 };
	static const unsigned char under[] = { 3, 0, 1, 0 };

	CHECK(!nl_attrs_valid(ok, sizeof(ok)), "valid attributes refused");
	CHECK(nl_attr_find(ok, sizeof(ok), 1) == (const void *)(ok + 8),
	      "second attribute not found");
	CHECK(nl_attrs_valid(over, sizeof(over)), "overlong attribute accepted");
	CHECK(nl_attrs_valid(under, sizeof(under)), "short length accepted");
	return 1;
}

/* "TYPE:HEX" from a command line: the bytes, and each malformed spelling refused. */
static int nl_attr_spec_parse(void)
{
	static const unsigned char want[] = { 7, 0, 3, 0, 0xab, 0x01, 0xff };
	static const char *const bad[] = { "3", "x:00", ":00", "3:0", "3:zz",
					   "70000:00", "3 :00" };
	struct nl_msg m;
	size_t i;

	nl_msg_init(&m, 16, 0, 1);
	CHECK(!nl_attr_put_spec(&m, "3:aB01fF"), "a valid spec refused");
	CHECK(m.hdr.nlmsg_len == NLMSG_HDRLEN + NLA_ALIGN(sizeof(want)),
	      "length %u", m.hdr.nlmsg_len);
	CHECK(!memcmp(m.buf + NLMSG_HDRLEN, want, sizeof(want)),
	      "bytes differ");
	CHECK(!nl_attr_put_spec(&m, "7:"), "an empty attribute refused");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(nl_attr_put_spec(&m, bad[i]), "'%s' accepted", bad[i]);
	return 1;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "csum_rfc1071_example", rfc1071_example },
		{ "csum_odd_length_pads_with_zero", odd_length_pads_with_zero },
		{ "pkt_tcp_syn_matches_scapy", tcp_syn_matches_scapy },
		{ "pkt_udp_odd_payload_matches_scapy", udp_odd_payload_matches_scapy },
		{ "pkt_icmpv6_echo_matches_scapy", icmpv6_echo_matches_scapy },
		{ "pkt_fixed_checksum_is_kept", fixed_checksum_is_kept },
		{ "pkt_ipv6_header_layout", ipv6_header_layout },
		{ "pkt_bad_fields_are_refused", bad_fields_are_refused },
		{ "addr_locator_parse", locator_parse },
		{ "addr_set_locator_keeps_identifier", set_locator_keeps_identifier },
		{ "nl_route_request_bytes", nl_route_request_bytes },
		{ "nl_ack_with_extack", nl_ack_with_extack },
		{ "nl_attrs_bounds", nl_attrs_bounds },
		{ "nl_genl_family_reply", nl_genl_family_reply },
		{ "nl_attr_spec_parse", nl_attr_spec_parse },
	};
	size_t i, n = sizeof(tests) / sizeof(tests[0]);

	printf("KTAP version 1\n1..%zu\n", n);
	for (i = 0; i < n; i++)
		result(tests[i].name, tests[i].fn());
	printf("# Totals: pass:%zu fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       n - (size_t)failures, failures);
	return failures ? 1 : 0;
}
