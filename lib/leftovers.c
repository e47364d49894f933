// SPDX-License-Identifier: GPL-2.0
/*
 * Whether a case left ILA state behind: an encap ila route in any table
 * (IPv6 or IPv4, a multipath nexthop's too) or a mapping of the in-tree
 * table. Asked over netlink, since it is asked after every case: the
 * machine's ip, a dynamically linked program that takes about 40 ms to
 * start under TCG, is run only when something is left, to show and
 * delete it. Shared by the kselftest runner and the guest agent's
 * "leftovers" verb.
 */
#include <errno.h>
#include <linux/ila.h>
#include <linux/lwtunnel.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "leftovers.h"
#include "nl.h"

static unsigned char buf[1 << 16];

/* Whether a route message's RTA_ENCAP_TYPE, or a nexthop's, is ILA. */
static int route_is_ila(const struct nlmsghdr *h)
{
	const struct rtmsg *rtm = NLMSG_DATA(h);
	const void *attrs = (const char *)rtm + NLMSG_ALIGN(sizeof(*rtm));
	size_t len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*rtm));
	const struct nlattr *a = nl_attr_find(attrs, len, RTA_ENCAP_TYPE);
	const struct nlattr *mp = nl_attr_find(attrs, len, RTA_MULTIPATH);

	if (a && nl_attr_len(a) >= 2 && *(const uint16_t *)nl_attr_data(a) == LWTUNNEL_ENCAP_ILA)
		return 1;
	if (mp) {
		const unsigned char *p = nl_attr_data(mp);
		size_t left = nl_attr_len(mp);

		while (left >= sizeof(struct rtnexthop)) {
			const struct rtnexthop *nh = (const void *)p;

			if (nh->rtnh_len < sizeof(*nh) || nh->rtnh_len > left)
				break;
			a = nl_attr_find(p + RTNH_ALIGN(sizeof(*nh)),
					 nh->rtnh_len - RTNH_ALIGN(sizeof(*nh)), RTA_ENCAP_TYPE);
			if (a && nl_attr_len(a) >= 2 &&
			    *(const uint16_t *)nl_attr_data(a) == LWTUNNEL_ENCAP_ILA)
				return 1;
			left -= RTNH_ALIGN(nh->rtnh_len);
			p += RTNH_ALIGN(nh->rtnh_len);
		}
	}
	return 0;
}

/* Dump @m's request on @fd; the number of messages @is_left accepts, -1 on error. */
static int count(int fd, struct nl_msg *m, int (*is_left)(const struct nlmsghdr *))
{
	int found = 0;

	if (send(fd, m, m->hdr.nlmsg_len, 0) < 0)
		return -1;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;
		size_t left;

		if (n < 0)
			return -1;
		for (h = (void *)buf, left = (size_t)n; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != m->hdr.nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE)
				return found;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error ? -1 : found;
			found += is_left(h);
		}
	}
}

static int any(const struct nlmsghdr *h)
{
	(void)h;
	return 1;
}

static int ila_routes(void)
{
	static const unsigned char families[] = { AF_INET6, AF_INET };
	int fd = nl_route_socket(0), total = 0, n;
	struct rtmsg rtm = { 0 };
	struct nl_msg m;
	size_t i;

	if (fd < 0)
		return -1;
	for (i = 0; i < sizeof(families); i++) {
		nl_msg_init(&m, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, 100 + (uint32_t)i);
		rtm.rtm_family = families[i];
		nl_msg_put(&m, &rtm, sizeof(rtm));
		n = count(fd, &m, route_is_ila);
		if (n < 0) {
			close(fd);
			return -1;
		}
		total += n;
	}
	close(fd);
	return total;
}

/* Mappings of the in-tree table; 0 when no module offers one. */
static int ila_mappings(void)
{
	int fd = nl_socket(NETLINK_GENERIC, 0), id, n;
	struct nl_msg m;
	ssize_t got;

	if (fd < 0)
		return -1;
	nl_genl_init(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_REQUEST, 200);
	nl_attr_put(&m, CTRL_ATTR_FAMILY_NAME, ILA_GENL_NAME, sizeof(ILA_GENL_NAME));
	got = send(fd, &m, m.hdr.nlmsg_len, 0) < 0 ? -1 : recv(fd, buf, sizeof(buf), 0);
	if (got < 0) {
		close(fd);
		return -1;
	}
	id = nl_genl_family_id(buf, (size_t)got, 200);
	if (id < 0) {
		close(fd);
		return 0;
	}
	nl_genl_init(&m, (uint16_t)id, ILA_CMD_GET, ILA_GENL_VERSION, NLM_F_REQUEST | NLM_F_DUMP,
		     201);
	n = count(fd, &m, any);
	close(fd);
	return n;
}

int ila_state_left(void)
{
	int routes = ila_routes(), mappings = ila_mappings();

	if (routes < 0 || mappings < 0)
		return -1;
	return routes + mappings;
}
