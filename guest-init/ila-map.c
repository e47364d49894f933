// SPDX-License-Identifier: GPL-2.0
/*
 * ila-map: the ILA mapping table's generic netlink family ("ILA",
 * net/ipv6/ila/ila_main.c), message by message, for what `ip ila` cannot
 * send or does not show.
 *
 *   ila-map add|del|get [loc_match LOC] [loc LOC] [ifindex N | dev IF]
 *                       [csum-mode N] [ident-type N] [attr TYPE:HEX]...
 *       One ILA_CMD_ADD, _DEL or _GET with the attributes given, in order
 *       (a LOC is four 16-bit groups, 2001:0:0:1; attr puts raw bytes).
 *       get prints the mapping the kernel answers with.
 *   ila-map flush        ILA_CMD_FLUSH
 *   ila-map dump         every mapping (an ILA_CMD_GET dump), each message
 *                        checked; "mappings N, duplicates D, malformed M"
 *                        and one line per mapping, sorted
 *   ila-map bulk COUNT LOC_BASE PER_MATCH
 *       COUNT mappings: loc_match LOC_BASE + i / PER_MATCH, each match
 *       PER_MATCH times with ifindex 0, 1, ... (a chain of entries under one
 *       hash key), loc 3333:0:0:i. Prints how many were acknowledged.
 *
 * A kernel error prints "nlerr NAME (-N)" and, if any, "extack MESSAGE",
 * and exits 1; usage errors exit 2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/ila.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/nl.h"

#define MAX_MAPPINGS 4096

static uint32_t seq = 1;
static uint16_t family;

static void __attribute__((noreturn, format(printf, 1, 2)))
usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ila-map: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see the comment at the top of guest-init/ila-map.c)\n");
	va_end(ap);
	exit(2);
}

static void __attribute__((noreturn)) sys_fail(const char *what)
{
	fprintf(stderr, "ila-map: %s: %s\n", what, strerror(errno));
	exit(2);
}

static const char *errno_name(int err)
{
	static const struct { int err; const char *name; } names[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { ESRCH, "ESRCH" },
		{ ENOMEM, "ENOMEM" }, { EEXIST, "EEXIST" }, { EINVAL, "EINVAL" },
		{ ERANGE, "ERANGE" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ EMSGSIZE, "EMSGSIZE" }, { EAGAIN, "EAGAIN" },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].err == err)
			return names[i].name;
	return "E?";
}

/* "2001:0:0:1" to its 8 bytes in network order. */
static int parse_locator(const char *text, uint8_t loc[8])
{
	unsigned int g[4];
	char end;
	int i;

	if (sscanf(text, "%x:%x:%x:%x%c", &g[0], &g[1], &g[2], &g[3], &end) != 4)
		return -1;
	for (i = 0; i < 4; i++) {
		if (g[i] > 0xffff)
			return -1;
		loc[2 * i] = (uint8_t)(g[i] >> 8);
		loc[2 * i + 1] = (uint8_t)g[i];
	}
	return 0;
}

/* Append to @out, a buffer of @len bytes of which @at are used. */
static void __attribute__((format(printf, 4, 5)))
append(char *out, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at = *at + (size_t)n < len ? *at + (size_t)n : len - 1;
}

static void append_locator(char *out, size_t len, size_t *at, const char *name,
			   const struct nlattr *a)
{
	const uint8_t *b = nl_attr_data(a);

	if (nl_attr_len(a) != 8)
		append(out, len, at, " %s (%zu bytes)", name, nl_attr_len(a));
	else
		append(out, len, at, " %s %x:%x:%x:%x", name, b[0] << 8 | b[1],
		       b[2] << 8 | b[3], b[4] << 8 | b[5], b[6] << 8 | b[7]);
}

/* "TYPE:HEX" to an attribute (inside the open nest, if one is). */
static void put_raw_attr(struct nl_msg *m, const char *spec)
{
	const char *why = nl_attr_put_spec(m, spec);

	if (why)
		usage("attr '%s': %s", spec, why);
}

/* The ILA family's id, from the generic netlink controller. */
static uint16_t resolve_family(int fd)
{
	static unsigned char buf[8192];
	struct nl_msg m;
	ssize_t n;
	int id;

	nl_genl_init(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_REQUEST, seq);
	nl_attr_put(&m, CTRL_ATTR_FAMILY_NAME, ILA_GENL_NAME, sizeof(ILA_GENL_NAME));
	if (send(fd, &m, m.hdr.nlmsg_len, 0) < 0)
		sys_fail("send (CTRL_CMD_GETFAMILY)");
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0)
		sys_fail("recv (CTRL_CMD_GETFAMILY)");
	id = nl_genl_family_id(buf, (size_t)n, seq++);
	if (id < 0) {
		printf("no generic netlink family '%s' (is the ila module loaded?)\n",
		       ILA_GENL_NAME);
		exit(1);
	}
	return (uint16_t)id;
}

/* One mapping message: " loc_match X loc Y ifindex I csum-mode C ident-type T". */
static int describe(const struct nlmsghdr *h, char *out, size_t len)
{
	size_t hlen = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct genlmsghdr)), at = 0;
	const void *attrs = (const char *)h + hlen;
	size_t alen = h->nlmsg_len - hlen;
	const struct nlattr *a;

	out[0] = '\0';
	if (h->nlmsg_len < hlen || nl_attrs_valid(attrs, alen))
		return -1;
	a = nl_attr_find(attrs, alen, ILA_ATTR_LOCATOR_MATCH);
	if (a)
		append_locator(out, len, &at, "loc_match", a);
	a = nl_attr_find(attrs, alen, ILA_ATTR_LOCATOR);
	if (a)
		append_locator(out, len, &at, "loc", a);
	a = nl_attr_find(attrs, alen, ILA_ATTR_IFINDEX);
	if (a && nl_attr_len(a) == 4)
		append(out, len, &at, " ifindex %d", *(const int32_t *)nl_attr_data(a));
	a = nl_attr_find(attrs, alen, ILA_ATTR_CSUM_MODE);
	if (a && nl_attr_len(a) == 1)
		append(out, len, &at, " csum-mode %u", *(const uint8_t *)nl_attr_data(a));
	a = nl_attr_find(attrs, alen, ILA_ATTR_IDENT_TYPE);
	if (a && nl_attr_len(a) == 1)
		append(out, len, &at, " ident-type %u", *(const uint8_t *)nl_attr_data(a));
	return 0;
}

/*
 * Read until the ack of @want (or NLMSG_DONE of a dump), handing each
 * message of the family to @each. Returns the kernel's error (0 or -errno).
 */
static int receive(int fd, uint32_t want, void (*each)(const struct nlmsghdr *))
{
	static unsigned char buf[1 << 16];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		size_t len;
		const struct nlmsghdr *h;

		if (n < 0)
			sys_fail("recv");
		len = (size_t)n;
		for (h = (const void *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != want)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				char extack[512];
				int err = 0;

				if (nl_parse_ack(h, h->nlmsg_len, want, &err, extack,
						 sizeof(extack)) != 1)
					usage("malformed ack");
				if (err) {
					printf("nlerr %s (%d)\n", errno_name(-err), err);
					if (extack[0])
						printf("extack %s\n", extack);
				}
				return err;
			}
			if (h->nlmsg_type == family && each)
				each(h);
		}
	}
}

static char mappings[MAX_MAPPINGS][160];
static unsigned int n_mappings, malformed;

static void collect(const struct nlmsghdr *h)
{
	if (n_mappings >= MAX_MAPPINGS)
		usage("more than %d mappings", MAX_MAPPINGS);
	if (describe(h, mappings[n_mappings], sizeof(mappings[0])))
		malformed++;
	else
		n_mappings++;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int cmd_dump(int fd)
{
	struct nl_msg m;
	unsigned int i, dup = 0;
	int err;

	nl_genl_init(&m, family, ILA_CMD_GET, ILA_GENL_VERSION,
		     NLM_F_REQUEST | NLM_F_DUMP, seq);
	if (send(fd, &m, m.hdr.nlmsg_len, 0) < 0)
		sys_fail("send (dump)");
	err = receive(fd, seq++, collect);
	qsort(mappings, n_mappings, sizeof(mappings[0]), by_text);
	for (i = 1; i < n_mappings; i++)
		dup += !strcmp(mappings[i], mappings[i - 1]);
	printf("mappings %u, duplicates %u, malformed %u\n", n_mappings, dup, malformed);
	for (i = 0; i < n_mappings; i++)
		printf("mapping%s\n", mappings[i]);
	return err || dup || malformed ? 1 : 0;
}

static void print_reply(const struct nlmsghdr *h)
{
	char text[160];

	if (describe(h, text, sizeof(text)))
		printf("malformed reply\n");
	else
		printf("mapping%s\n", text);
}

static uint8_t command(const char *name)
{
	if (!strcmp(name, "add"))
		return ILA_CMD_ADD;
	if (!strcmp(name, "del"))
		return ILA_CMD_DEL;
	if (!strcmp(name, "get"))
		return ILA_CMD_GET;
	if (!strcmp(name, "flush"))
		return ILA_CMD_FLUSH;
	usage("unknown command '%s'", name);
}

/* One request built from the words after the command. */
static int cmd_request(int fd, uint8_t cmd, int argc, char **argv)
{
	struct nl_msg m;
	uint8_t loc[8];
	int i;

	nl_genl_init(&m, family, cmd, ILA_GENL_VERSION, NLM_F_REQUEST | NLM_F_ACK, seq);
	for (i = 0; i < argc; i++) {
		const char *key = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(key, "attr") && val) {
			put_raw_attr(&m, val);
		} else if ((!strcmp(key, "loc_match") || !strcmp(key, "loc")) && val) {
			if (parse_locator(val, loc))
				usage("%s: '%s' is not a locator (2001:0:0:1)", key, val);
			nl_attr_put(&m, key[3] == '_' ? ILA_ATTR_LOCATOR_MATCH : ILA_ATTR_LOCATOR,
				    loc, sizeof(loc));
		} else if ((!strcmp(key, "ifindex") || !strcmp(key, "dev")) && val) {
			int32_t ifx = key[0] == 'd' ? (int32_t)if_nametoindex(val) : atoi(val);

			if (key[0] == 'd' && !ifx)
				usage("no interface '%s'", val);
			nl_attr_put(&m, ILA_ATTR_IFINDEX, &ifx, sizeof(ifx));
		} else if ((!strcmp(key, "csum-mode") || !strcmp(key, "ident-type")) && val) {
			uint8_t v = (uint8_t)atoi(val);

			nl_attr_put(&m, key[0] == 'c' ? ILA_ATTR_CSUM_MODE : ILA_ATTR_IDENT_TYPE,
				    &v, sizeof(v));
		} else {
			usage("unknown or incomplete argument '%s'", key);
		}
		i++;
	}
	if (send(fd, &m, m.hdr.nlmsg_len, 0) < 0)
		sys_fail("send");
	return receive(fd, seq++, cmd == ILA_CMD_GET ? print_reply : NULL) ? 1 : 0;
}

static int cmd_bulk(int fd, int argc, char **argv)
{
	unsigned long count, per, i, acked = 0;
	uint8_t base[8];

	if (argc != 3 || parse_locator(argv[1], base))
		usage("bulk COUNT LOC_BASE PER_MATCH");
	count = strtoul(argv[0], NULL, 0);
	per = strtoul(argv[2], NULL, 0);
	if (!per)
		usage("PER_MATCH must be 1 or more");
	for (i = 0; i < count; i++) {
		struct nl_msg m;
		uint8_t match[8], loc[8] = { 0x33, 0x33, 0, 0, 0, 0 };
		uint16_t low = (uint16_t)((base[6] << 8 | base[7]) + i / per);
		int32_t ifx = (int32_t)(i % per);

		memcpy(match, base, 8);
		match[6] = (uint8_t)(low >> 8);
		match[7] = (uint8_t)low;
		loc[6] = (uint8_t)(i >> 8);
		loc[7] = (uint8_t)i;
		nl_genl_init(&m, family, ILA_CMD_ADD, ILA_GENL_VERSION,
			     NLM_F_REQUEST | NLM_F_ACK, seq);
		nl_attr_put(&m, ILA_ATTR_LOCATOR_MATCH, match, sizeof(match));
		nl_attr_put(&m, ILA_ATTR_LOCATOR, loc, sizeof(loc));
		nl_attr_put(&m, ILA_ATTR_IFINDEX, &ifx, sizeof(ifx));
		if (send(fd, &m, m.hdr.nlmsg_len, 0) < 0)
			sys_fail("send (bulk)");
		if (receive(fd, seq++, NULL))
			break;
		acked++;
	}
	printf("bulk: %lu of %lu mappings acknowledged\n", acked, count);
	return acked == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage("add|del|get|flush|dump|bulk ...");
	fd = nl_socket(NETLINK_GENERIC, 0);
	if (fd < 0)
		sys_fail("socket(NETLINK_GENERIC)");
	family = resolve_family(fd);
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(fd);
	if (!strcmp(argv[1], "bulk"))
		return cmd_bulk(fd, argc - 2, argv + 2);
	return cmd_request(fd, command(argv[1]), argc - 2, argv + 2);
}
