/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal rtnetlink and generic netlink: build a request attribute by
 * attribute (so a test can send what iproute2 never would), read the
 * kernel's ack with its extack message, and check that a received message
 * is well formed.
 */
#ifndef ILA_LIB_NL_H
#define ILA_LIB_NL_H

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

#define NL_MSG_MAX 4096

struct nl_msg {
	union {
		struct nlmsghdr hdr;
		unsigned char buf[NL_MSG_MAX];
	};
};

/* A request header; the length grows as parts are appended. */
void nl_msg_init(struct nl_msg *m, uint16_t type, uint16_t flags,
		 uint32_t seq);

/* Append @len bytes (a family header such as struct rtmsg), 4-aligned. */
void *nl_msg_put(struct nl_msg *m, const void *data, size_t len);

/* Append one attribute; NULL when the message is full. */
struct nlattr *nl_attr_put(struct nl_msg *m, uint16_t type, const void *data,
			   size_t len);

/*
 * Append the attribute "TYPE:HEX" spells (a decimal type, then its data as
 * an even number of hex digits, perhaps none), as a test's command line
 * gives it. NULL when appended, else why not, for the caller's message.
 */
const char *nl_attr_put_spec(struct nl_msg *m, const char *spec);

/* Open a nested attribute; nl_nest_end() sets its length. */
struct nlattr *nl_nest_start(struct nl_msg *m, uint16_t type);
void nl_nest_end(struct nl_msg *m, struct nlattr *nest);

/*
 * The ack for @seq in a received buffer: 1 and *err (0 or a negative errno)
 * and the extack message (empty if none) when found, 0 when not, -1 when
 * the buffer is malformed.
 */
int nl_parse_ack(const void *buf, size_t len, uint32_t seq, int *err,
		 char *extack, size_t extack_len);

/*
 * 0 when @len bytes starting at @attrs are a sequence of attributes that
 * each fit, with every length at least the header's and the padding to the
 * next 4 bytes inside the buffer; -1 otherwise.
 */
int nl_attrs_valid(const void *attrs, size_t len);

/* A netlink socket of @protocol with extended acks, bound to @groups; -1 (errno). */
int nl_socket(int protocol, uint32_t groups);

/* A NETLINK_ROUTE socket with extended acks, bound to @groups; -1 (errno). */
int nl_route_socket(uint32_t groups);

/* A generic netlink request header: @family's id, then struct genlmsghdr. */
void nl_genl_init(struct nl_msg *m, uint16_t family, uint8_t cmd,
		  uint8_t version, uint16_t flags, uint32_t seq);

/*
 * The family id in the controller's reply to CTRL_CMD_GETFAMILY for @seq,
 * found in a received buffer; -1 when none is there or it is malformed.
 */
int nl_genl_family_id(const void *buf, size_t len, uint32_t seq);

/*
 * Send @m and read the replies up to its ack. Return: 0 with *err the
 * kernel's answer (0 or a negative errno, its extack message in @extack),
 * -1 when a system call failed (errno set), -2 when a reply was malformed.
 */
int nl_transact(int fd, const struct nl_msg *m, int *err, char *extack,
		size_t extack_len);

/* The first attribute of @type in a sequence, or NULL. */
const struct nlattr *nl_attr_find(const void *attrs, size_t len,
				  uint16_t type);

static inline const void *nl_attr_data(const struct nlattr *a)
{
	return (const unsigned char *)a + NLA_HDRLEN;
}

static inline size_t nl_attr_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

#endif
