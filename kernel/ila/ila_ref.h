/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ila_ref: Identifier-Locator Addressing as a lightweight tunnel.
 *
 * An "encap ila LOCATOR" route overwrites the upper 64 bits of a packet's
 * IPv6 destination with LOCATOR and fixes the transport checksum by the
 * difference, so no encapsulation is needed.
 */
#ifndef _ILA_REF_H
#define _ILA_REF_H

#include <linux/skbuff.h>
#include <linux/types.h>
#include <net/net_namespace.h>

/* What happened to one packet; each outcome has a per-netns counter. */
enum ila_ref_outcome {
	ILA_REF_XLAT_CSUM,	/* locator written, L4 checksum adjusted */
	ILA_REF_XLAT_NOCSUM,	/* locator written, no checksum to adjust */
	ILA_REF_XLAT_NOOP,	/* destination already had the locator */
	ILA_REF_ICMP_ERROR,	/* an ICMPv6 error's quote translated back */
	ILA_REF_DROP_NOT_IPV6,	/* not an IPv6 packet (IPv4 route) */
	ILA_REF_DROP_BAD_IPV6,	/* IPv6 header truncated */
	ILA_REF_DROP_NOMEM,	/* could not make the headers writable */
	ILA_REF_OUTCOME_MAX,
};

struct ila_ref_rmap;

/* The state of one ILA route, kept in lwtunnel_state::data. */
struct ila_ref_params {
	__be64 locator;
	__wsum locator_sum;		/* csum_partial() of the locator */
	struct ila_ref_rmap *rmap;	/* its ICMP errors' way back, or NULL */
};

static inline bool ila_ref_outcome_is_drop(enum ila_ref_outcome outcome)
{
	return outcome >= ILA_REF_DROP_NOT_IPV6;
}

void ila_ref_params_init(struct ila_ref_params *p, __be64 locator);
enum ila_ref_outcome ila_ref_xlat(struct sk_buff *skb,
				  const struct ila_ref_params *p);
/*
 * The offset of the transport checksum of the IPv6 header at @nhoff whose
 * next header is @nexthdr (*@proto its protocol), or -1 where no checksum
 * covers its destination.
 */
int ila_ref_csum_offset(const struct sk_buff *skb, int nhoff, u8 nexthdr, u8 *proto);
/* Adjust the writable checksum at @csum_off by @diff; whether it changed. */
bool ila_ref_adjust_csum(struct sk_buff *skb, int csum_off, u8 proto, __wsum diff);

int ila_ref_rmap_add(struct net *net, struct ila_ref_params *p,
		     const struct in6_addr *dst, int plen);
void ila_ref_rmap_del(struct ila_ref_params *p);
unsigned int ila_ref_rmap_entries(const struct net *net);
int ila_ref_icmp_init(void);
void ila_ref_icmp_exit(void);

void ila_ref_count(struct net *net, enum ila_ref_outcome outcome);
int ila_ref_stats_init(void);
void ila_ref_stats_exit(void);

int ila_ref_lwt_init(void);
void ila_ref_lwt_exit(void);

#endif /* _ILA_REF_H */
