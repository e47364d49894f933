// SPDX-License-Identifier: GPL-2.0
/*
 * ila-nl: the control-plane test tool, for what iproute2 cannot send or show.
 *
 *   ila-nl add PREFIX [dev IF] [via ADDR] [table N] [encap-type N|none]
 *              [no-encap] [locator LOC] [attr TYPE:HEX]... [watch]
 *       One RTM_NEWROUTE built attribute by attribute: RTA_ENCAP holds the
 *       locator and raw attributes in the order given (none: an empty
 *       RTA_ENCAP; no-encap: none at all). watch also reads the kernel's
 *       RTM_NEWROUTE notification and checks it is well formed.
 *   ila-nl bulk add|del COUNT BASE dev IF [locator LOC]
 *       COUNT /128 routes from BASE up, one request each; prints the time.
 *   ila-nl watch 4|6 CMD ARG...
 *       Runs CMD (a path) while subscribed to the family's route
 *       notifications, then checks each one as dump does.
 *   ila-nl dump 4|6
 *       Dumps the routes of a family, checks every message and attribute,
 *       and prints the ILA routes per locator.
 *   ila-nl as-nobody CMD ARG...   runs CMD as uid/gid 65534, no capability
 *   ila-nl in-userns CMD ARG...   runs CMD as root of a new user namespace,
 *                                 which owns no network namespace
 *
 * A kernel error prints "nlerr NAME (-N)" and, if any, "extack MESSAGE",
 * and exits 1; usage errors exit 2.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/ila.h>
#include <linux/lwtunnel.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/addr.h"
#include "../lib/nl.h"

#define RECV_BUF (1 << 16)
#define MAX_LOCATORS 128

static uint32_t seq = 1;

static void __attribute__((noreturn, format(printf, 1, 2)))
usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ila-nl: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see the comment at the top of guest-init/ila-nl.c)\n");
	va_end(ap);
	exit(2);
}

static void __attribute__((noreturn)) sys_fail(const char *what)
{
	fprintf(stderr, "ila-nl: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int nl_open(uint32_t groups)
{
	int fd = nl_route_socket(groups);

	if (fd < 0)
		sys_fail("netlink socket");
	return fd;
}

/* strerrorname_np() is too new for this libc; the errnos routes give. */
static const char *errno_name(int err)
{
	static const struct { int err; const char *name; } names[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
		{ ENOMEM, "ENOMEM" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" },
		{ ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ERANGE, "ERANGE" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { EAFNOSUPPORT, "EAFNOSUPPORT" },
		{ ENETUNREACH, "ENETUNREACH" }, { EMSGSIZE, "EMSGSIZE" },
		{ ENOBUFS, "ENOBUFS" }, { EAGAIN, "EAGAIN" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	return "E?";
}

/* Send one request and wait for its ack: 0, or the negative errno. */
static int transact(int fd, struct nl_msg *m, int quiet)
{
	char extack[512];
	int err = 0, rc = nl_transact(fd, m, &err, extack, sizeof(extack));

	if (rc == -1)
		sys_fail("netlink request");
	if (rc == -2) {
		fprintf(stderr, "ila-nl: malformed netlink reply\n");
		exit(2);
	}
	if (err && !quiet) {
		printf("nlerr %s (%d)\n", errno_name(-err), err);
		if (extack[0])
			printf("extack %s\n", extack);
	}
	return err;
}

static int parse_prefix(const char *text, int *family, void *addr,
			unsigned char *len)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	*family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*family, buf, addr) != 1)
		return -1;
	*len = slash ? (unsigned char)atoi(slash + 1) :
		       (*family == AF_INET6 ? 128 : 32);
	return 0;
}

/* "TYPE:HEX" to an attribute (inside the open nest, if one is). */
static void put_raw_attr(struct nl_msg *m, const char *spec)
{
	const char *why = nl_attr_put_spec(m, spec);

	if (why)
		usage("attr '%s': %s", spec, why);
}

static void route_msg(struct nl_msg *m, uint16_t type, uint16_t flags,
		      int family, const void *dst, unsigned char dst_len,
		      uint32_t table)
{
	struct rtmsg rtm = {
		.rtm_family = (unsigned char)family,
		.rtm_dst_len = dst_len,
		.rtm_table = RT_TABLE_UNSPEC,
		.rtm_protocol = RTPROT_BOOT,
		.rtm_scope = RT_SCOPE_UNIVERSE,
		.rtm_type = RTN_UNICAST,
	};

	nl_msg_init(m, type, NLM_F_REQUEST | NLM_F_ACK | flags, seq++);
	nl_msg_put(m, &rtm, sizeof(rtm));
	nl_attr_put(m, RTA_DST, dst, family == AF_INET6 ? 16 : 4);
	nl_attr_put(m, RTA_TABLE, &table, sizeof(table));
}

static uint32_t ifindex(const char *name)
{
	uint32_t i = if_nametoindex(name);

	if (!i)
		usage("no interface '%s'", name);
	return i;
}

/* The ILA routes a dump or notification carries, counted per locator. */
struct route_census {
	unsigned int messages, routes, ila, malformed, exact_size, pads;
	unsigned int aligned8, datagrams;
	uint64_t locator[MAX_LOCATORS];
	unsigned int per_locator[MAX_LOCATORS];
	size_t max_len;
};

static void count_locator(struct route_census *c, uint64_t loc)
{
	int i;

	for (i = 0; i < MAX_LOCATORS; i++) {
		if (c->per_locator[i] && c->locator[i] != loc)
			continue;
		c->locator[i] = loc;
		c->per_locator[i]++;
		return;
	}
	c->malformed++;
}

/* Sum of the aligned attribute lengths: where a tight message ends. */
static size_t attrs_end(const unsigned char *attrs, size_t len)
{
	size_t at = 0;

	while (at + NLA_HDRLEN <= len) {
		const struct nlattr *a = (const void *)(attrs + at);

		at += NLA_ALIGN(a->nla_len);
	}
	return at;
}

/* The encap of one nexthop: RTA_ENCAP_TYPE and RTA_ENCAP among @attrs. */
static void census_encap(struct route_census *c, const unsigned char *attrs,
			 size_t len, const struct nlmsghdr *h)
{
	const struct nlattr *type, *encap, *loc;
	uint64_t v;

	type = nl_attr_find(attrs, len, RTA_ENCAP_TYPE);
	if (!type || nl_attr_len(type) != 2 ||
	    *(const uint16_t *)nl_attr_data(type) != LWTUNNEL_ENCAP_ILA)
		return;
	c->ila++;
	encap = nl_attr_find(attrs, len, RTA_ENCAP);
	if (!encap || nl_attrs_valid(nl_attr_data(encap), nl_attr_len(encap))) {
		c->malformed++;
		return;
	}
	if (nl_attr_find(nl_attr_data(encap), nl_attr_len(encap), ILA_ATTR_PAD))
		c->pads++;
	loc = nl_attr_find(nl_attr_data(encap), nl_attr_len(encap),
			   ILA_ATTR_LOCATOR);
	if (!loc || nl_attr_len(loc) != 8) {
		c->malformed++;
		return;
	}
	if (((uintptr_t)nl_attr_data(loc) - (uintptr_t)h) % 8 == 0)
		c->aligned8++;
	memcpy(&v, nl_attr_data(loc), 8);
	count_locator(c, v);
}

/* Each struct rtnexthop of RTA_MULTIPATH, with the attributes it holds. */
static void census_multipath(struct route_census *c, const struct nlattr *mp,
			     const struct nlmsghdr *h)
{
	const unsigned char *p = nl_attr_data(mp);
	size_t left = nl_attr_len(mp);

	while (left >= sizeof(struct rtnexthop)) {
		const struct rtnexthop *nh = (const void *)p;
		size_t step = RTNH_ALIGN(nh->rtnh_len);

		if (nh->rtnh_len < sizeof(*nh) || nh->rtnh_len > left ||
		    nl_attrs_valid(p + RTNH_LENGTH(0),
				   nh->rtnh_len - RTNH_LENGTH(0))) {
			c->malformed++;
			return;
		}
		census_encap(c, p + RTNH_LENGTH(0),
			     nh->rtnh_len - RTNH_LENGTH(0), h);
		if (step >= left)
			break;
		p += step;
		left -= step;
	}
}

static void census_route(struct route_census *c, const struct nlmsghdr *h)
{
	const unsigned char *attrs = (const unsigned char *)NLMSG_DATA(h) +
				     NLMSG_ALIGN(sizeof(struct rtmsg));
	const struct nlattr *mp;
	size_t len;

	c->messages++;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg))) {
		c->malformed++;
		return;
	}
	len = h->nlmsg_len - (size_t)(attrs - (const unsigned char *)h);
	if (h->nlmsg_len > c->max_len)
		c->max_len = h->nlmsg_len;
	c->routes++;
	if (nl_attrs_valid(attrs, len)) {
		c->malformed++;
		return;
	}
	if (attrs_end(attrs, len) == NLA_ALIGN(len))
		c->exact_size++;
	census_encap(c, attrs, len, h);
	mp = nl_attr_find(attrs, len, RTA_MULTIPATH);
	if (mp)
		census_multipath(c, mp, h);
}

/* Feed one received datagram of route messages; 1 at NLMSG_DONE. */
static int census_datagram(struct route_census *c, const unsigned char *p,
			   size_t n)
{
	c->datagrams++;
	while (n >= NLMSG_HDRLEN) {
		const struct nlmsghdr *h = (const void *)p;

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > n) {
			c->malformed++;
			return 1;
		}
		if (h->nlmsg_type == NLMSG_DONE)
			return 1;
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);

			printf("nlerr %s (%d)\n", errno_name(-e->error),
			       e->error);
			exit(1);
		}
		if (h->nlmsg_type == RTM_NEWROUTE)
			census_route(c, h);
		if (NLMSG_ALIGN(h->nlmsg_len) >= n)
			break;
		n -= NLMSG_ALIGN(h->nlmsg_len);
		p += NLMSG_ALIGN(h->nlmsg_len);
	}
	return 0;
}

static void print_census(const struct route_census *c)
{
	int i;

	printf("routes %u, ila %u, malformed %u, exactly sized %u of %u\n",
	       c->routes, c->ila, c->malformed, c->exact_size, c->messages);
	printf("ila locator attributes: 8-byte aligned %u of %u, ILA_ATTR_PAD %u\n",
	       c->aligned8, c->ila, c->pads);
	for (i = 0; i < MAX_LOCATORS && c->per_locator[i]; i++) {
		struct in6_addr a = { 0 };

		memcpy(&a, &c->locator[i], 8);
		/* four groups, as iproute2 prints a locator */
		printf("locator %x:%x:%x:%x: %u routes\n",
		       ntohs(a.s6_addr16[0]), ntohs(a.s6_addr16[1]),
		       ntohs(a.s6_addr16[2]), ntohs(a.s6_addr16[3]),
		       c->per_locator[i]);
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Read the notification of the route just added, on a group socket. */
static int watch_notification(int fd)
{
	static unsigned char buf[RECV_BUF];
	struct route_census c = { 0 };
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0) {
		printf("notify none: %s\n", strerror(errno));
		return 1;
	}
	census_datagram(&c, buf, (size_t)n);
	printf("notify: ");
	print_census(&c);
	return c.malformed ? 1 : 0;
}

static int cmd_add(int argc, char **argv)
{
	unsigned char dst[16], gw[16];
	int family, gw_family, i, encap = 1, watch = 0, watch_fd = -1, err;
	uint16_t encap_type = LWTUNNEL_ENCAP_ILA;
	uint32_t table = RT_TABLE_MAIN, oif = 0;
	const char *via = NULL;
	unsigned char len;
	struct nl_msg m;
	struct nlattr *nest = NULL;

	if (argc < 1 || parse_prefix(argv[0], &family, dst, &len))
		usage("add wants a PREFIX first");
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "watch"))
			watch = 1;
	}
	if (watch)
		watch_fd = nl_open(family == AF_INET6 ? RTMGRP_IPV6_ROUTE :
							RTMGRP_IPV4_ROUTE);
	for (i = 1; i < argc; i++) {	/* attributes outside RTA_ENCAP */
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "dev") && next)
			oif = ifindex(argv[++i]);
		else if (!strcmp(argv[i], "via") && next)
			via = argv[++i];
		else if (!strcmp(argv[i], "table") && next)
			table = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "encap-type") && next)
			encap_type = !strcmp(next, "none") ? 0 :
				     (uint16_t)atoi(next), i++;
		else if (!strcmp(argv[i], "no-encap"))
			encap = 0;
		else if ((!strcmp(argv[i], "locator") ||
			  !strcmp(argv[i], "attr")) && next)
			i++;
		else if (strcmp(argv[i], "watch"))
			usage("add: unknown or incomplete '%s'", argv[i]);
	}
	route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, family, dst,
		  len, table);
	if (oif)
		nl_attr_put(&m, RTA_OIF, &oif, sizeof(oif));
	if (via) {
		unsigned char dummy;

		if (parse_prefix(via, &gw_family, gw, &dummy) ||
		    gw_family != family)
			usage("via '%s' is not an address of the family", via);
		nl_attr_put(&m, RTA_GATEWAY, gw, family == AF_INET6 ? 16 : 4);
	}
	if (encap_type)
		nl_attr_put(&m, RTA_ENCAP_TYPE, &encap_type,
			    sizeof(encap_type));
	if (encap)
		nest = nl_nest_start(&m, RTA_ENCAP);
	for (i = 1; i < argc && nest; i++) {	/* RTA_ENCAP, in order */
		uint8_t loc[8];

		if (!strcmp(argv[i], "locator") && i + 1 < argc) {
			if (ila_parse_locator(argv[++i], loc))
				usage("locator '%s' is not four hex groups",
				      argv[i]);
			nl_attr_put(&m, ILA_ATTR_LOCATOR, loc, sizeof(loc));
		} else if (!strcmp(argv[i], "attr") && i + 1 < argc) {
			put_raw_attr(&m, argv[++i]);
		}
	}
	if (nest)
		nl_nest_end(&m, nest);
	err = transact(nl_open(0), &m, 0);
	if (err)
		return 1;
	printf("ok\n");
	return watch ? watch_notification(watch_fd) : 0;
}

static int cmd_bulk(int argc, char **argv)
{
	unsigned char base[16];
	uint8_t loc[8];
	int family, add, fd, has_loc = 0;
	unsigned long count, i;
	uint32_t oif = 0;
	unsigned char len;
	double t0, ms;

	if (argc < 5 || (strcmp(argv[0], "add") && strcmp(argv[0], "del")) ||
	    parse_prefix(argv[2], &family, base, &len) ||
	    family != AF_INET6 || strcmp(argv[3], "dev"))
		usage("bulk wants add|del COUNT BASE dev IF [locator LOC]");
	add = !strcmp(argv[0], "add");
	count = strtoul(argv[1], NULL, 0);
	oif = ifindex(argv[4]);
	if (argc >= 7 && !strcmp(argv[5], "locator")) {
		if (ila_parse_locator(argv[6], loc))
			usage("locator '%s' is not four hex groups", argv[6]);
		has_loc = 1;
	}
	fd = nl_open(0);
	t0 = now_ms();
	for (i = 0; i < count; i++) {
		unsigned char dst[16];
		uint32_t low;
		uint16_t type = LWTUNNEL_ENCAP_ILA;
		struct nl_msg m;

		memcpy(dst, base, 16);
		memcpy(&low, dst + 12, 4);
		low = htonl(ntohl(low) + (uint32_t)i);
		memcpy(dst + 12, &low, 4);
		route_msg(&m, add ? RTM_NEWROUTE : RTM_DELROUTE,
			  add ? NLM_F_CREATE | NLM_F_EXCL : 0, family, dst, 128,
			  RT_TABLE_MAIN);
		nl_attr_put(&m, RTA_OIF, &oif, sizeof(oif));
		if (has_loc && add) {
			struct nlattr *nest;

			nl_attr_put(&m, RTA_ENCAP_TYPE, &type, sizeof(type));
			nest = nl_nest_start(&m, RTA_ENCAP);
			nl_attr_put(&m, ILA_ATTR_LOCATOR, loc, sizeof(loc));
			nl_nest_end(&m, nest);
		}
		if (transact(fd, &m, 0)) {
			printf("bulk %s stopped at route %lu of %lu\n",
			       argv[0], i + 1, count);
			return 1;
		}
	}
	ms = now_ms() - t0;
	printf("bulk %s %lu%s routes: %.0f ms, %.0f routes/s\n", argv[0],
	       count, !add ? "" : has_loc ? " ila" : " plain", ms,
	       ms > 0 ? count * 1e3 / ms : 0.0);
	return 0;
}

static int cmd_dump(int argc, char **argv)
{
	static unsigned char buf[RECV_BUF];
	struct rtmsg rtm = { 0 };
	struct route_census c = { 0 };
	struct nl_msg m;
	double t0;
	int fd;

	if (argc != 1 || (strcmp(argv[0], "4") && strcmp(argv[0], "6")))
		usage("dump wants 4 or 6");
	rtm.rtm_family = argv[0][0] == '6' ? AF_INET6 : AF_INET;
	nl_msg_init(&m, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq++);
	nl_msg_put(&m, &rtm, sizeof(rtm));
	fd = nl_open(0);
	t0 = now_ms();
	if (send(fd, &m, m.hdr.nlmsg_len, 0) < 0)
		sys_fail("send(netlink)");
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0)
			sys_fail("recv(netlink)");
		if (census_datagram(&c, buf, (size_t)n))
			break;
	}
	printf("dump: %.0f ms in %u datagrams, largest message %zu bytes\n",
	       now_ms() - t0, c.datagrams, c.max_len);
	print_census(&c);
	return c.malformed ? 1 : 0;
}

/* Run a command while subscribed, then check every notification it caused. */
static int cmd_watch(char **argv)
{
	static unsigned char buf[RECV_BUF];
	struct route_census c = { 0 };
	int fd, status, got = 0;
	pid_t pid;

	if (!argv[0] || (strcmp(argv[0], "4") && strcmp(argv[0], "6")) ||
	    !argv[1])
		usage("watch wants 4|6 CMD ARG...");
	fd = nl_open(argv[0][0] == '6' ? RTMGRP_IPV6_ROUTE : RTMGRP_IPV4_ROUTE);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		sys_fail("fork");
	if (pid == 0) {
		execv(argv[1], argv + 1);
		sys_fail(argv[1]);
	}
	if (waitpid(pid, &status, 0) < 0)
		sys_fail("waitpid");
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0)
			break;
		got++;
		census_datagram(&c, buf, (size_t)n);
	}
	printf("notifications %d: ", got);
	print_census(&c);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return got && !c.malformed ? 0 : 1;
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		sys_fail(path);
	close(fd);
}

static int cmd_exec_as(const char *how, char **argv)
{
	if (!argv[0])
		usage("%s wants a command", how);
	if (!strcmp(how, "as-nobody")) {
		/* Leaving uid 0 without keepcaps clears every capability. */
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			sys_fail("dropping to uid 65534");
	} else {
		if (unshare(CLONE_NEWUSER))
			sys_fail("unshare(CLONE_NEWUSER)");
		write_file("/proc/self/setgroups", "deny");
		write_file("/proc/self/uid_map", "0 0 1");
		write_file("/proc/self/gid_map", "0 0 1");
	}
	fflush(stdout);
	execv(argv[0], argv);
	sys_fail(argv[0]);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage("no command");
	if (!strcmp(argv[1], "add"))
		return cmd_add(argc - 2, argv + 2);
	if (!strcmp(argv[1], "bulk"))
		return cmd_bulk(argc - 2, argv + 2);
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 2, argv + 2);
	if (!strcmp(argv[1], "watch"))
		return cmd_watch(argv + 2);
	if (!strcmp(argv[1], "as-nobody") || !strcmp(argv[1], "in-userns"))
		return cmd_exec_as(argv[1], argv + 2);
	usage("unknown command '%s'", argv[1]);
}
