// SPDX-License-Identifier: GPL-2.0
/*
 * ila-fuzz: bounded, seeded fuzzing of an ILA implementation from the guest.
 *
 *   ila-fuzz packets COUNT SEED DST_PREFIX
 *       COUNT random IPv6 packets (random next-header chains, lengths,
 *       truncations, checksums, flags) sent through IPPROTO_RAW to random
 *       identifiers under DST_PREFIX (a /64 routed through ILA). Prints
 *       "sent N refused M" (M: sendto() refused the packet).
 *   ila-fuzz netlink COUNT SEED
 *       COUNT mutated RTM_NEWROUTE messages with an ILA encap, each to its
 *       own 3333:0:0:1:5555:HI:LO:0/128; then dumps the table and checks that
 *       the ILA routes are exactly those the kernel acknowledged, with their
 *       locators, and deletes them. Prints "accepted A refused R; table
 *       matches" or what differs.
 *   ila-fuzz cycles COUNT MODULE.ko NAME DEV TRAFFIC_DST
 *       COUNT times: add an ILA route, delete it, remove the module and load
 *       it again, while a child process keeps sending UDP to TRAFFIC_DST on
 *       a plain route. (A route that carried packets keeps the module busy
 *       until its cached dst entries go, seconds later: not sent through.)
 *
 * The generator is xorshift64* from SEED, so a failing run replays exactly.
 * Exit status 0 when every check holds, 1 otherwise, 2 on usage errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ila.h>
#include <linux/lwtunnel.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/addr.h"
#include "../lib/nl.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static unsigned int below(unsigned int n)
{
	return n ? (unsigned int)(rnd() % n) : 0;
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "ila-fuzz: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void seed_from(const char *text)
{
	rng_state = strtoull(text, NULL, 0);
	if (!rng_state)
		rng_state = 1;
}

/* Next headers worth generating: extension headers, transports, others. */
static const uint8_t next_headers[] = { 0, 43, 44, 60, 6, 17, 58, 59, 132, 47, 136, 253 };

/* One random packet into @buf; returns its length. */
static size_t random_packet(uint8_t *buf, size_t cap, const uint8_t prefix[8])
{
	size_t len = 40, i;
	uint8_t nh = next_headers[below(sizeof(next_headers))];
	unsigned int hops = below(4);

	memset(buf, 0, 40);
	buf[0] = 0x60 | (uint8_t)below(16);
	buf[1] = (uint8_t)rnd();
	buf[7] = (uint8_t)(1 + below(255));
	/* source: the guest's address, so replies have somewhere to go */
	inet_pton(AF_INET6, "2401:db00:20:911a:face:0:25:0", buf + 8);
	memcpy(buf + 24, prefix, 8);
	for (i = 32; i < 40; i++)
		buf[i] = (uint8_t)rnd();
	buf[6] = nh;
	/* nh is the type of the header written next; each names its successor */
	while (hops-- && (nh == 0 || nh == 43 || nh == 44 || nh == 60) && len + 64 < cap) {
		uint8_t *h = buf + len;
		size_t hl = nh == 44 ? 8 : 8 * (1 + below(3));

		for (i = 0; i < hl; i++)
			h[i] = (uint8_t)rnd();
		if (nh != 44)
			h[1] = (uint8_t)(hl / 8 - 1);
		if (nh == 43)
			h[3] = (uint8_t)below(3);	/* segments left 0..2 */
		nh = next_headers[below(sizeof(next_headers))];
		h[0] = nh;
		len += hl;
	}
	{
		size_t body = below(80), max = cap - len;

		if (body > max)
			body = max;
		for (i = 0; i < body; i++)
			buf[len + i] = (uint8_t)rnd();
		len += body;
	}
	/* payload length: right most of the time, sometimes anything */
	{
		unsigned int plen = below(8) ? (unsigned int)(len - 40) : below(200);

		buf[4] = (uint8_t)(plen >> 8);
		buf[5] = (uint8_t)plen;
	}
	return len;
}

static int cmd_packets(int argc, char **argv)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	unsigned long count, n, sent = 0, refused = 0;
	uint8_t prefix[8], buf[256];
	struct in6_addr pfx;
	int fd;

	if (argc != 3 || inet_pton(AF_INET6, argv[2], &pfx) != 1) {
		fprintf(stderr, "ila-fuzz: packets COUNT SEED DST_PREFIX\n");
		return 2;
	}
	count = strtoul(argv[0], NULL, 0);
	seed_from(argv[1]);
	memcpy(prefix, &pfx, 8);
	fd = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0)
		die("socket(IPPROTO_RAW)");
	for (n = 0; n < count; n++) {
		size_t len = random_packet(buf, sizeof(buf), prefix);

		memcpy(&to.sin6_addr, buf + 24, 16);
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			refused++;
		else
			sent++;
	}
	printf("seed %s: sent %lu refused %lu\n", argv[1], sent, refused);
	return 0;
}

struct nl {
	int fd;
	uint32_t seq;
};

/* Send one request with the next sequence number: 0 or the kernel's -errno. */
static int nl_request(struct nl *nl, struct nl_msg *m)
{
	char extack[256];
	int err = 0, rc;

	m->hdr.nlmsg_seq = ++nl->seq;
	rc = nl_transact(nl->fd, m, &err, extack, sizeof(extack));
	if (rc == -1)
		die("netlink request");
	if (rc == -2) {
		fprintf(stderr, "ila-fuzz: malformed netlink ack\n");
		exit(1);
	}
	return err;
}

static void nl_open(struct nl *nl)
{
	nl->fd = nl_route_socket(0);
	if (nl->fd < 0)
		die("netlink socket");
	nl->seq = 0;
}

static void route_dst(unsigned long i, uint8_t dst[16])
{
	static const uint8_t base[16] = { 0x33, 0x33, 0, 0, 0, 0, 0, 1, 0x55, 0x55 };

	memcpy(dst, base, 16);
	dst[10] = (uint8_t)(i >> 24);
	dst[11] = (uint8_t)(i >> 16);
	dst[12] = (uint8_t)(i >> 8);
	dst[13] = (uint8_t)i;
}

static void route_head(struct nl_msg *m, uint16_t type, uint16_t flags, const uint8_t dst[16],
		       uint32_t oif)
{
	struct rtmsg rtm = {
		.rtm_family = AF_INET6, .rtm_dst_len = 128, .rtm_table = RT_TABLE_MAIN,
		.rtm_protocol = RTPROT_BOOT, .rtm_scope = RT_SCOPE_UNIVERSE,
		.rtm_type = RTN_UNICAST,
	};

	nl_msg_init(m, type, NLM_F_REQUEST | NLM_F_ACK | flags, 0);
	nl_msg_put(m, &rtm, sizeof(rtm));
	nl_attr_put(m, RTA_DST, dst, 16);
	nl_attr_put(m, RTA_OIF, &oif, sizeof(oif));
}

/*
 * A mutated ILA encap: mostly a good locator, plus random attributes.
 * Return: whether an accepted route would be an ILA route (type ILA and an
 * RTA_ENCAP; without RTA_ENCAP the kernel makes a plain route).
 */
static int random_encap(struct nl_msg *m, uint64_t *locator)
{
	uint16_t type = below(16) ? LWTUNNEL_ENCAP_ILA : (uint16_t)below(12);
	struct nlattr *nest;
	unsigned int k, extra = below(3);

	nl_attr_put(m, RTA_ENCAP_TYPE, &type, sizeof(type));
	if (!below(32))
		return 0;	/* no RTA_ENCAP at all */
	nest = nl_nest_start(m, RTA_ENCAP);
	if (below(8)) {
		*locator = rnd();
		nl_attr_put(m, ILA_ATTR_LOCATOR, locator, sizeof(*locator));
	}
	for (k = 0; k < extra; k++) {
		uint8_t junk[24];
		unsigned int i, len = below(sizeof(junk) + 1);

		for (i = 0; i < len; i++)
			junk[i] = (uint8_t)rnd();
		nl_attr_put(m, (uint16_t)below(ILA_ATTR_MAX + 3), junk, len);
	}
	nl_nest_end(m, nest);
	return type == LWTUNNEL_ENCAP_ILA;
}

/* The locator an accepted route must carry: the one ILA_ATTR_LOCATOR of its
 * RTA_ENCAP, wherever the mutation put it. */
static void expected_locator(const struct nl_msg *m, uint64_t *locator)
{
	const unsigned char *attrs = m->buf + NLMSG_LENGTH(sizeof(struct rtmsg));
	size_t len = m->hdr.nlmsg_len - NLMSG_LENGTH(sizeof(struct rtmsg));
	const struct nlattr *enc = nl_attr_find(attrs, len, RTA_ENCAP), *loc;

	loc = enc ? nl_attr_find(nl_attr_data(enc), nl_attr_len(enc), ILA_ATTR_LOCATOR) : NULL;
	if (loc && nl_attr_len(loc) == sizeof(*locator))
		memcpy(locator, nl_attr_data(loc), sizeof(*locator));
}

struct accepted {
	uint64_t locator;
	uint8_t ok;	/* acknowledged */
	uint8_t ila;	/* and an ILA route */
};

/* Dump IPv6 routes; compare each ILA route with what was acknowledged. */
static int check_table(struct nl *nl, struct accepted *acc, unsigned long count)
{
	static unsigned char buf[1 << 16];
	struct rtmsg rtm = { .rtm_family = AF_INET6 };
	unsigned long seen = 0, want = 0, i, bad = 0;
	struct nl_msg m;

	for (i = 0; i < count; i++)
		want += acc[i].ila;
	nl_msg_init(&m, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, ++nl->seq);
	nl_msg_put(&m, &rtm, sizeof(rtm));
	if (send(nl->fd, &m, m.hdr.nlmsg_len, 0) < 0)
		die("send(dump)");
	for (;;) {
		ssize_t n = recv(nl->fd, buf, sizeof(buf), 0);
		unsigned char *p = buf;

		if (n <= 0)
			die("recv(dump)");
		while (n >= (ssize_t)NLMSG_HDRLEN) {
			struct nlmsghdr *h = (struct nlmsghdr *)p;
			const unsigned char *a = (unsigned char *)NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(rtm));
			size_t alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(rtm));
			const struct nlattr *dst, *enc, *loc, *typ;

			if (h->nlmsg_type == NLMSG_DONE)
				goto done;
			dst = nl_attr_find(a, alen, RTA_DST);
			enc = nl_attr_find(a, alen, RTA_ENCAP);
			typ = nl_attr_find(a, alen, RTA_ENCAP_TYPE);
			if (!typ || *(const uint16_t *)nl_attr_data(typ) != LWTUNNEL_ENCAP_ILA)
				enc = NULL;	/* another encap type (ip, ip6) or none */
			if (dst && enc && !memcmp(nl_attr_data(dst), "\x33\x33\0\0\0\0\0\x01\x55\x55", 10)) {
				const uint8_t *d = nl_attr_data(dst);
				unsigned long idx = (unsigned long)d[10] << 24 | d[11] << 16 | d[12] << 8 | d[13];
				uint64_t v = 0;

				loc = nl_attr_find(nl_attr_data(enc), nl_attr_len(enc), ILA_ATTR_LOCATOR);
				if (loc)
					memcpy(&v, nl_attr_data(loc), 8);
				seen++;
				if (idx >= count || !acc[idx].ila || !loc || v != acc[idx].locator) {
					bad++;
					printf("unexpected ILA route %lu (acknowledged %d, ila %d, locator %s)\n",
					       idx, idx < count ? acc[idx].ok : -1, idx < count ? acc[idx].ila : -1,
					       loc ? "differs" : "missing");
				}
			}
			n -= NLMSG_ALIGN(h->nlmsg_len);
			p += NLMSG_ALIGN(h->nlmsg_len);
		}
	}
done:
	printf("table: %lu ILA routes, %lu acknowledged, %lu wrong\n", seen, want, bad);
	return seen == want && !bad ? 0 : 1;
}

static int cmd_netlink(int argc, char **argv)
{
	unsigned long count, i, accepted = 0;
	struct accepted *acc;
	uint32_t oif;
	struct nl nl;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "ila-fuzz: netlink COUNT SEED\n");
		return 2;
	}
	count = strtoul(argv[0], NULL, 0);
	seed_from(argv[1]);
	oif = if_nametoindex("lo");
	acc = calloc(count, sizeof(*acc));
	if (!acc)
		die("calloc");
	nl_open(&nl);
	for (i = 0; i < count; i++) {
		struct nl_msg m;
		uint8_t dst[16];
		int ila;

		route_dst(i, dst);
		route_head(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, dst, oif);
		ila = random_encap(&m, &acc[i].locator);
		expected_locator(&m, &acc[i].locator);
		if (!nl_request(&nl, &m)) {
			acc[i].ok = 1;
			acc[i].ila = (uint8_t)ila;
			accepted++;
		}
	}
	printf("seed %s: %lu messages, accepted %lu refused %lu\n", argv[1], count, accepted,
	       count - accepted);
	rc = check_table(&nl, acc, count);
	for (i = 0; i < count; i++) {
		struct nl_msg m;
		uint8_t dst[16];

		if (!acc[i].ok)
			continue;
		route_dst(i, dst);
		route_head(&m, RTM_DELROUTE, 0, dst, oif);
		if (nl_request(&nl, &m))
			rc = 1, printf("route %lu could not be deleted\n", i);
	}
	free(acc);
	return rc;
}

static int load(const char *ko)
{
	int fd = open(ko, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = (int)syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	return rc;
}

/* A child that sends UDP on a plain route until it is killed. */
static pid_t background_traffic(const char *dst)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	pid_t pid;

	if (inet_pton(AF_INET6, dst, &to.sin6_addr) != 1)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = socket(AF_INET6, SOCK_DGRAM, 0);

		for (;;) {
			sendto(fd, "bg", 2, 0, (struct sockaddr *)&to, sizeof(to));
			usleep(1000);
		}
	}
	return pid;
}

static int cmd_cycles(int argc, char **argv)
{
	unsigned long count, i, waits = 0;
	uint8_t dst[16], loc[8] = { 0x20, 0x01, 0, 0, 0, 0, 0, 2 };
	uint64_t locator;
	uint32_t oif;
	pid_t bg;

	if (argc != 5) {
		fprintf(stderr, "ila-fuzz: cycles COUNT MODULE.ko NAME DEV TRAFFIC_DST\n");
		return 2;
	}
	count = strtoul(argv[0], NULL, 0);
	oif = if_nametoindex(argv[3]);
	memcpy(&locator, loc, 8);
	bg = background_traffic(argv[4]);
	if (!oif || bg < 0) {
		fprintf(stderr, "ila-fuzz: bad DEV or TRAFFIC_DST\n");
		return 2;
	}
	rng_state = 1;
	for (i = 0; i < count; i++) {
		struct nl_msg m;
		struct nlattr *nest;
		uint16_t type = LWTUNNEL_ENCAP_ILA;
		struct nl nl;
		int k;

		nl_open(&nl);
		route_dst(i, dst);
		route_head(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, dst, oif);
		nl_attr_put(&m, RTA_ENCAP_TYPE, &type, sizeof(type));
		nest = nl_nest_start(&m, RTA_ENCAP);
		nl_attr_put(&m, ILA_ATTR_LOCATOR, &locator, sizeof(locator));
		nl_nest_end(&m, nest);
		if (nl_request(&nl, &m)) {
			printf("cycle %lu: route refused\n", i);
			goto fail;
		}
		route_head(&m, RTM_DELROUTE, 0, dst, oif);
		if (nl_request(&nl, &m)) {
			printf("cycle %lu: route not deleted\n", i);
			goto fail;
		}
		close(nl.fd);
		/* The route's reference on the module goes after an RCU grace
		 * period: retry for up to 5 s before calling it a leak. */
		for (k = 0; syscall(SYS_delete_module, argv[2], O_NONBLOCK); k++) {
			if (errno != EAGAIN || k == 500) {
				printf("cycle %lu: delete_module: %s\n", i, strerror(errno));
				goto fail;
			}
			usleep(10000);
			waits++;
		}
		if (load(argv[1])) {
			printf("cycle %lu: finit_module: %s\n", i, strerror(errno));
			goto fail;
		}
	}
	kill(bg, SIGKILL);
	waitpid(bg, NULL, 0);
	printf("cycles %lu: route added and deleted, module removed and reloaded "
	       "(%lu waits of 10 ms for RCU to drop the route's reference)\n", count, waits);
	return 0;
fail:
	kill(bg, SIGKILL);
	waitpid(bg, NULL, 0);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "packets"))
		return cmd_packets(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "netlink"))
		return cmd_netlink(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "cycles"))
		return cmd_cycles(argc - 2, argv + 2);
	fprintf(stderr, "ila-fuzz: packets|netlink|cycles ... (see guest-init/ila-fuzz.c)\n");
	return 2;
}
