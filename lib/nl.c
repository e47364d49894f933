// SPDX-License-Identifier: GPL-2.0
/* Minimal rtnetlink and generic netlink requests and acks (see nl.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nl.h"

void nl_msg_init(struct nl_msg *m, uint16_t type, uint16_t flags,
		 uint32_t seq)
{
	memset(m, 0, sizeof(*m));
	m->hdr.nlmsg_len = NLMSG_HDRLEN;
	m->hdr.nlmsg_type = type;
	m->hdr.nlmsg_flags = flags;
	m->hdr.nlmsg_seq = seq;
}

static void *nl_msg_reserve(struct nl_msg *m, size_t len)
{
	size_t at = NLMSG_ALIGN(m->hdr.nlmsg_len);

	if (at + NLMSG_ALIGN(len) > sizeof(m->buf))
		return NULL;
	m->hdr.nlmsg_len = (uint32_t)(at + NLMSG_ALIGN(len));
	return m->buf + at;
}

void *nl_msg_put(struct nl_msg *m, const void *data, size_t len)
{
	void *p = nl_msg_reserve(m, len);

	if (p && len)
		memcpy(p, data, len);
	return p;
}

struct nlattr *nl_attr_put(struct nl_msg *m, uint16_t type, const void *data,
			   size_t len)
{
	struct nlattr *a = nl_msg_reserve(m, NLA_HDRLEN + len);

	if (!a)
		return NULL;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy((unsigned char *)a + NLA_HDRLEN, data, len);
	return a;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

const char *nl_attr_put_spec(struct nl_msg *m, const char *spec)
{
	unsigned char data[NL_MSG_MAX];
	const char *hex = strchr(spec, ':');
	unsigned long type;
	char *end;
	size_t n = 0;

	if (!hex)
		return "wants TYPE:HEX";
	type = strtoul(spec, &end, 10);
	if (end != hex || end == spec || type > 0xffff)
		return "its type is not a number from 0 to 65535";
	for (hex++; *hex; hex += 2) {
		int hi = hexval(hex[0]), lo = hex[1] ? hexval(hex[1]) : -1;

		if (!hex[1])
			return "odd number of hex digits";
		if (hi < 0 || lo < 0)
			return "not hex";
		if (n == sizeof(data))
			return "too long for a message";
		data[n++] = (unsigned char)(hi << 4 | lo);
	}
	if (!nl_attr_put(m, (uint16_t)type, data, n))
		return "message full";
	return NULL;
}

struct nlattr *nl_nest_start(struct nl_msg *m, uint16_t type)
{
	return nl_attr_put(m, type, NULL, 0);
}

void nl_nest_end(struct nl_msg *m, struct nlattr *nest)
{
	nest->nla_len = (uint16_t)(m->buf + m->hdr.nlmsg_len -
				   (unsigned char *)nest);
}

int nl_attrs_valid(const void *attrs, size_t len)
{
	const unsigned char *p = attrs;

	while (len > 0) {
		const struct nlattr *a = (const void *)p;
		size_t step;

		if (len < NLA_HDRLEN || a->nla_len < NLA_HDRLEN ||
		    a->nla_len > len)
			return -1;
		step = NLA_ALIGN(a->nla_len);
		if (step > len)	/* the last attribute may omit its padding */
			step = len;
		p += step;
		len -= step;
	}
	return 0;
}

const struct nlattr *nl_attr_find(const void *attrs, size_t len,
				  uint16_t type)
{
	const unsigned char *p = attrs;

	if (nl_attrs_valid(attrs, len))
		return NULL;
	while (len >= NLA_HDRLEN) {
		const struct nlattr *a = (const void *)p;
		size_t step = NLA_ALIGN(a->nla_len);

		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		if (step >= len)
			break;
		p += step;
		len -= step;
	}
	return NULL;
}

static void copy_extack(const struct nlmsghdr *h, const struct nlmsgerr *e,
			char *extack, size_t extack_len)
{
	size_t off = NLMSG_HDRLEN + sizeof(*e);
	const struct nlattr *msg;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (off > h->nlmsg_len)
		return;
	msg = nl_attr_find((const unsigned char *)h + off,
			   h->nlmsg_len - off, NLMSGERR_ATTR_MSG);
	if (msg && extack_len) {
		size_t n = nl_attr_len(msg);

		if (n >= extack_len)
			n = extack_len - 1;
		memcpy(extack, nl_attr_data(msg), n);
		extack[n] = '\0';
		extack[strnlen(extack, n)] = '\0';
	}
}

int nl_parse_ack(const void *buf, size_t len, uint32_t seq, int *err,
		 char *extack, size_t extack_len)
{
	const unsigned char *p = buf;

	if (extack_len)
		extack[0] = '\0';
	while (len >= NLMSG_HDRLEN) {
		const struct nlmsghdr *h = (const void *)p;
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len)
			return -1;
		if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == seq) {
			if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
				return -1;
			*err = e->error;
			copy_extack(h, e, extack, extack_len);
			return 1;
		}
		if (NLMSG_ALIGN(h->nlmsg_len) >= len)
			break;
		len -= NLMSG_ALIGN(h->nlmsg_len);
		p += NLMSG_ALIGN(h->nlmsg_len);
	}
	return 0;
}

int nl_socket(int protocol, uint32_t groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int one = 1, fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

int nl_route_socket(uint32_t groups)
{
	return nl_socket(NETLINK_ROUTE, groups);
}

void nl_genl_init(struct nl_msg *m, uint16_t family, uint8_t cmd,
		  uint8_t version, uint16_t flags, uint32_t seq)
{
	struct genlmsghdr g = { .cmd = cmd, .version = version };

	nl_msg_init(m, family, flags, seq);
	nl_msg_put(m, &g, sizeof(g));
}

int nl_genl_family_id(const void *buf, size_t len, uint32_t seq)
{
	const struct nlmsghdr *h;
	size_t hlen = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct genlmsghdr));

	for (h = buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		const struct nlattr *id;

		if (h->nlmsg_seq != seq || h->nlmsg_type != GENL_ID_CTRL ||
		    h->nlmsg_len < hlen)
			continue;
		if (nl_attrs_valid((const char *)h + hlen, h->nlmsg_len - hlen))
			return -1;
		id = nl_attr_find((const char *)h + hlen, h->nlmsg_len - hlen,
				  CTRL_ATTR_FAMILY_ID);
		if (!id || nl_attr_len(id) != sizeof(uint16_t))
			return -1;
		return *(const uint16_t *)nl_attr_data(id);
	}
	return -1;
}

int nl_transact(int fd, const struct nl_msg *m, int *err, char *extack,
		size_t extack_len)
{
	static unsigned char buf[1 << 16];

	if (send(fd, m, m->hdr.nlmsg_len, 0) < 0)
		return -1;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		int found;

		if (n < 0)
			return -1;
		found = nl_parse_ack(buf, (size_t)n, m->hdr.nlmsg_seq, err,
				     extack, extack_len);
		if (found < 0)
			return -2;
		if (found)
			return 0;
	}
}
