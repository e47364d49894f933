// SPDX-License-Identifier: GPL-2.0
/*
 * The translation itself: write the locator into the IPv6 destination and
 * keep the transport checksum valid.
 *
 * The transport checksum covers a pseudo-header holding the destination
 * (RFC 8200 section 8.1), so replacing 8 bytes of it changes the checksum by
 * the one's complement difference of those bytes. The transport header is
 * found past any extension headers, and the checksum is left alone where the
 * pseudo-header does not hold this destination (a routing header with
 * segments left names the final destination) or where the transport header
 * is absent (non-first fragments, no next header, unknown protocols).
 */
#include <linux/icmpv6.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ipv6.h>

#include "ila_ref.h"

/* Where the checksum to adjust is, if any. */
struct ila_ref_l4 {
	int csum_off;	/* offset of the checksum field from skb->data, or -1 */
	u8 proto;	/* transport protocol found */
};

/* Bound on the extension-header walk; a legitimate chain is far shorter. */
#define ILA_REF_MAX_EXTHDRS 16

/*
 * Walk the extension headers after the IPv6 header at @nhoff. Only reads
 * through skb_header_pointer(), so nothing here keeps a pointer into the skb.
 */
static void ila_ref_find_l4(const struct sk_buff *skb, int nhoff,
			    struct ila_ref_l4 *l4)
{
	const struct ipv6hdr *ip6h;
	struct ipv6hdr ip6buf;
	int off = nhoff + sizeof(struct ipv6hdr);
	int csum_field;
	int i;
	u8 nexthdr;

	l4->csum_off = -1;
	ip6h = skb_header_pointer(skb, nhoff, sizeof(ip6buf), &ip6buf);
	if (!ip6h)
		return;
	nexthdr = ip6h->nexthdr;

	for (i = 0; i < ILA_REF_MAX_EXTHDRS; i++) {
		struct ipv6_opt_hdr ext, *hp;
		int len;

		if (nexthdr != NEXTHDR_HOP && nexthdr != NEXTHDR_ROUTING &&
		    nexthdr != NEXTHDR_DEST && nexthdr != NEXTHDR_FRAGMENT &&
		    nexthdr != NEXTHDR_AUTH)
			break;

		hp = skb_header_pointer(skb, off, sizeof(ext), &ext);
		if (!hp)
			return;

		if (nexthdr == NEXTHDR_FRAGMENT) {
			struct frag_hdr fbuf, *fh;

			fh = skb_header_pointer(skb, off, sizeof(fbuf), &fbuf);
			if (!fh)
				return;
			/* Only the first fragment carries the transport header. */
			if (ntohs(fh->frag_off) & IP6_OFFSET)
				return;
			len = sizeof(struct frag_hdr);
		} else if (nexthdr == NEXTHDR_ROUTING) {
			struct ipv6_rt_hdr rbuf, *rh;

			rh = skb_header_pointer(skb, off, sizeof(rbuf), &rbuf);
			if (!rh)
				return;
			/* The pseudo-header then uses the final destination. */
			if (rh->segments_left)
				return;
			len = ipv6_optlen(hp);
		} else if (nexthdr == NEXTHDR_AUTH) {
			len = ipv6_authlen(hp);
		} else {
			len = ipv6_optlen(hp);
		}
		nexthdr = hp->nexthdr;
		off += len;
	}

	switch (nexthdr) {
	case IPPROTO_TCP:
		csum_field = offsetof(struct tcphdr, check);
		break;
	case IPPROTO_UDP:
		csum_field = offsetof(struct udphdr, check);
		break;
	case IPPROTO_ICMPV6:
		csum_field = offsetof(struct icmp6hdr, icmp6_cksum);
		break;
	default:
		return;
	}
	l4->proto = nexthdr;
	/* A transport header too short to hold its checksum: nothing to fix. */
	if (off + csum_field + sizeof(__sum16) > skb->len)
		return;
	l4->csum_off = off + csum_field;
}

/* One's complement difference between the old and the new upper 64 bits. */
static __wsum ila_ref_locator_diff(const struct in6_addr *daddr, __be64 loc)
{
	__be32 diff[] = {
		~daddr->s6_addr32[0], ~daddr->s6_addr32[1],
		((__be32 *)&loc)[0], ((__be32 *)&loc)[1],
	};

	return csum_partial(diff, sizeof(diff), 0);
}

/* Return: whether the checksum field was changed. */
static bool ila_ref_adjust_csum(struct sk_buff *skb, const struct ila_ref_l4 *l4,
				__wsum diff)
{
	__sum16 *sum = (__sum16 *)(skb->data + l4->csum_off);

	/* A zero UDP checksum means "none" (RFC 768, RFC 6935): keep it. */
	if (l4->proto == IPPROTO_UDP && !*sum &&
	    skb->ip_summed != CHECKSUM_PARTIAL)
		return false;

	inet_proto_csum_replace_by_diff(sum, skb, diff, true, true);

	/* Zero would now read as "no checksum": send its other form. */
	if (l4->proto == IPPROTO_UDP && !*sum)
		*sum = CSUM_MANGLED_0;
	return true;
}

/**
 * ila_ref_xlat - write the route's locator into an IPv6 packet
 * @skb: the packet, with its network header set
 * @p: the route's parameters
 *
 * Return: what was done; for a drop outcome the caller frees @skb.
 */
enum ila_ref_outcome ila_ref_xlat(struct sk_buff *skb,
				  const struct ila_ref_params *p)
{
	int nhoff = skb_network_offset(skb);
	int daddr_off = nhoff + offsetof(struct ipv6hdr, daddr);
	enum ila_ref_outcome outcome = ILA_REF_XLAT_NOCSUM;
	struct ila_ref_l4 l4;
	struct in6_addr *daddr;
	__wsum diff;
	int writable;

	if (skb->protocol != htons(ETH_P_IPV6))
		return ILA_REF_DROP_NOT_IPV6;
	if (!pskb_may_pull(skb, nhoff + sizeof(struct ipv6hdr)))
		return ILA_REF_DROP_BAD_IPV6;

	daddr = (struct in6_addr *)(skb->data + daddr_off);
	if (*(__be64 *)daddr == p->locator)
		return ILA_REF_XLAT_NOOP;

	ila_ref_find_l4(skb, nhoff, &l4);
	writable = l4.csum_off >= 0 ? l4.csum_off + sizeof(__sum16) :
				      daddr_off + sizeof(__be64);
	/* May reallocate the head: every pointer is taken after it. */
	if (skb_ensure_writable(skb, writable))
		return ILA_REF_DROP_NOMEM;

	daddr = (struct in6_addr *)(skb->data + daddr_off);
	diff = ila_ref_locator_diff(daddr, p->locator);
	if (l4.csum_off >= 0 && ila_ref_adjust_csum(skb, &l4, diff))
		outcome = ILA_REF_XLAT_CSUM;

	*(__be64 *)daddr = p->locator;
	/*
	 * With CHECKSUM_COMPLETE (receive), skb->csum covers the IPv6 header
	 * once it lies at or after skb->data. An adjusted checksum field moves
	 * by -diff and the address by +diff, so the sum is unchanged; only an
	 * address change without a checksum change must be accounted for.
	 */
	if (outcome != ILA_REF_XLAT_CSUM &&
	    skb->ip_summed == CHECKSUM_COMPLETE && daddr_off >= 0)
		skb->csum = csum_add(skb->csum, diff);

	return outcome;
}
