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
 *
 * The common packet, a transport header right after the IPv6 header in a
 * private linear head, takes no walk and no call to make it writable.
 *
 * A route may instead map checksum-neutrally (csum-mode neutral-map or
 * neutral-map-auto, draft-herbert-intarea-ila): the identifier's last 16
 * bits absorb the locator's change, the address's sum stays what it was,
 * and no checksum is touched. Or it may leave checksums alone (no-action),
 * for a receiver that translates back before it verifies them.
 */
#include <linux/icmpv6.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ipv6.h>

#include "ila_ref.h"

void ila_ref_params_init(struct ila_ref_params *p, __be64 locator)
{
	p->locator = locator;
	p->locator_sum = ila_ref_sum64(&p->locator);
}

/*
 * @word less @diff in one's complement, for the identifier's last 16 bits.
 * A zero result is written 0x0000, not 0xffff as csum_fold() has it, so
 * that an identifier ending in zero, as most do, comes back exactly from a
 * round trip; the two forms have the same sum, and only one can come back.
 */
static __be16 ila_ref_absorb(__be16 word, __wsum diff)
{
	u16 v = (__force u16)~csum_fold(csum_sub(csum_unfold((__force __sum16)word), diff));

	return (__force __be16)(v == 0xffff ? 0 : v);
}

/**
 * ila_ref_xlat_addr - write a route's locator into an address
 * @addr: the address, in the packet or a copy
 * @p: the route's parameters
 *
 * For the checksum-neutral modes the identifier's last 16 bits absorb the
 * change. neutral-map also flips the C-bit and absorbs that too: it sets the
 * bit on the way to a locator and clears it on the way back, so that a round
 * trip gives back the address it began with, whichever way a route points.
 *
 * Return: what the address's one's complement sum moved by (0 when neutral).
 */
__wsum ila_ref_xlat_addr(struct in6_addr *addr, const struct ila_ref_params *p)
{
	__be64 *locator = (__be64 *)addr;
	__wsum diff = csum_sub(p->locator_sum, ila_ref_sum64(locator));
	__be16 *word = &addr->s6_addr16[4];

	*locator = p->locator;
	if (p->csum_mode != ILA_CSUM_NEUTRAL_MAP &&
	    p->csum_mode != ILA_CSUM_NEUTRAL_MAP_AUTO)
		return diff;
	if (p->csum_mode == ILA_CSUM_NEUTRAL_MAP) {
		__be16 old = *word;

		*word ^= htons(ILA_REF_C_BIT);
		diff = csum_add(diff, csum_sub(csum_unfold((__force __sum16)*word),
					       csum_unfold((__force __sum16)old)));
	}
	/* the sum is back where it was */
	addr->s6_addr16[7] = ila_ref_absorb(addr->s6_addr16[7], diff);
	return 0;
}

/* Offset of the checksum field in the transport header, or -1 for none. */
static int ila_ref_csum_field(u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP:
		return offsetof(struct tcphdr, check);
	case IPPROTO_UDP:
		return offsetof(struct udphdr, check);
	case IPPROTO_ICMPV6:
		return offsetof(struct icmp6hdr, icmp6_cksum);
	}
	return -1;
}

/*
 * Walk the extension headers from @off, whose type is @nexthdr, to the
 * transport header: its offset, or -1 where its checksum does not cover
 * this destination or the chain runs out. Reads only through
 * skb_header_pointer(), so nothing here keeps a pointer into the skb; each
 * header is 8 bytes or more, so the walk ends by the end of the packet.
 */
static noinline int ila_ref_skip_exthdrs(const struct sk_buff *skb, int off, u8 *nexthdr)
{
	for (;;) {
		struct ipv6_opt_hdr ext, *hp;
		u8 nh = *nexthdr;

		if (nh != NEXTHDR_HOP && nh != NEXTHDR_ROUTING && nh != NEXTHDR_DEST &&
		    nh != NEXTHDR_FRAGMENT && nh != NEXTHDR_AUTH)
			return off;
		hp = skb_header_pointer(skb, off, sizeof(ext), &ext);
		if (!hp)
			return -1;
		if (nh == NEXTHDR_FRAGMENT) {
			struct frag_hdr fbuf, *fh;

			fh = skb_header_pointer(skb, off, sizeof(fbuf), &fbuf);
			/* Only the first fragment carries the transport header. */
			if (!fh || (ntohs(fh->frag_off) & IP6_OFFSET))
				return -1;
			off += sizeof(struct frag_hdr);
		} else if (nh == NEXTHDR_ROUTING) {
			struct ipv6_rt_hdr rbuf, *rh;

			rh = skb_header_pointer(skb, off, sizeof(rbuf), &rbuf);
			/* The pseudo-header then holds the final destination. */
			if (!rh || rh->segments_left)
				return -1;
			off += ipv6_optlen(hp);
		} else if (nh == NEXTHDR_AUTH) {
			off += ipv6_authlen(hp);
		} else {
			off += ipv6_optlen(hp);
		}
		*nexthdr = hp->nexthdr;
	}
}

/*
 * The offset of the transport checksum of the IPv6 header at @nhoff whose
 * next header is @nexthdr (*@proto its protocol), or -1 where no checksum
 * covers its destination. Inline, for the data path: the walk above is the
 * only call, and only past extension headers.
 */
static __always_inline int ila_ref_csum_offset(const struct sk_buff *skb, int nhoff,
					       u8 nexthdr, u8 *proto)
{
	int off = nhoff + sizeof(struct ipv6hdr), field;

	field = ila_ref_csum_field(nexthdr);
	if (field < 0) {
		off = ila_ref_skip_exthdrs(skb, off, &nexthdr);
		field = off < 0 ? -1 : ila_ref_csum_field(nexthdr);
		if (field < 0)
			return -1;
	}
	*proto = nexthdr;
	/* A transport header too short to hold its checksum: nothing to fix. */
	if (off + field + sizeof(__sum16) > skb->len)
		return -1;
	return off + field;
}

/*
 * Does the checksum field at @csum_off hold a pseudo-header sum that the
 * device or GSO completes, rather than a whole checksum? Only the field a
 * CHECKSUM_PARTIAL skb names does, and the outer UDP checksum of a GSO UDP
 * tunnel with checksums (udp6_set_csum() seeds it, the segmentation
 * completes it). A UDP tunnel that offloads its inner checksum computes its
 * outer one whole (local checksum offload, lco_csum()), or sends none
 * (udp6zerocsumtx): the packet is CHECKSUM_PARTIAL all the same, for the
 * inner field.
 */
static bool ila_ref_csum_is_partial(const struct sk_buff *skb, int csum_off, u8 proto)
{
	if (skb->ip_summed != CHECKSUM_PARTIAL)
		return false;
	if (skb_checksum_start_offset(skb) + skb->csum_offset == csum_off)
		return true;
	return proto == IPPROTO_UDP && skb_is_gso(skb) &&
	       (skb_shinfo(skb)->gso_type & SKB_GSO_UDP_TUNNEL_CSUM);
}

/* Adjust the writable checksum at @csum_off by @diff; whether it changed. */
static bool ila_ref_adjust_csum(struct sk_buff *skb, int csum_off, u8 proto, __wsum diff)
{
	__sum16 *sum = (__sum16 *)(skb->data + csum_off);
	bool partial = ila_ref_csum_is_partial(skb, csum_off, proto);

	/* A zero UDP checksum means "none" (RFC 768, RFC 6935): keep it. */
	if (proto == IPPROTO_UDP && !*sum && !partial)
		return false;

	/*
	 * inet_proto_csum_replace_by_diff(..., pseudohdr, ipv6), inline:
	 * a partial checksum's field holds the pseudo-header's sum, not
	 * complemented; a full one's the complemented sum of everything.
	 * Neither touches a CHECKSUM_COMPLETE skb->csum (see below).
	 */
	if (partial)
		*sum = ~csum_fold(csum_add(diff, csum_unfold(*sum)));
	else
		csum_replace_by_diff(sum, diff);

	/* Zero would now read as "no checksum": send its other form. */
	if (proto == IPPROTO_UDP && !*sum)
		*sum = CSUM_MANGLED_0;
	return true;
}

/* The same for the packet an ICMPv6 error quotes at @qoff (icmp.c). */
int ila_ref_quote_csum_offset(const struct sk_buff *skb, int qoff, u8 qnexthdr, u8 *proto)
{
	return ila_ref_csum_offset(skb, qoff, qnexthdr, proto);
}

/* Make the first @len bytes private and linear; 0, or -ENOMEM. */
static int ila_ref_writable(struct sk_buff *skb, unsigned int len)
{
	/*
	 * What skb_ensure_writable() checks first, without the call: a
	 * linear head that is ours, or a clone's whose headers are private
	 * (TCP's clones, which keep the payload shared).
	 */
	if (likely(skb_headlen(skb) >= len &&
		   (!skb_cloned(skb) || skb_clone_writable(skb, len))))
		return 0;
	return skb_ensure_writable(skb, len);
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
	int csum_off = -1, end;
	struct ipv6hdr *ip6h;
	__wsum diff;
	u8 proto;

	if (unlikely(skb->protocol != htons(ETH_P_IPV6)))
		return ILA_REF_DROP_NOT_IPV6;
	if (unlikely(!pskb_may_pull(skb, nhoff + sizeof(struct ipv6hdr))))
		return ILA_REF_DROP_BAD_IPV6;

	ip6h = (struct ipv6hdr *)(skb->data + nhoff);
	if (*(__be64 *)&ip6h->daddr == p->locator)
		return ILA_REF_XLAT_NOOP;

	if (likely(p->csum_mode == ILA_CSUM_ADJUST_TRANSPORT))
		csum_off = ila_ref_csum_offset(skb, nhoff, ip6h->nexthdr, &proto);
	end = csum_off >= 0 ? csum_off + sizeof(__sum16) : daddr_off + sizeof(struct in6_addr);
	/* May reallocate the head: every pointer is taken after it. */
	if (ila_ref_writable(skb, end))
		return ILA_REF_DROP_NOMEM;

	diff = ila_ref_xlat_addr((struct in6_addr *)(skb->data + daddr_off), p);
	if (p->csum_mode == ILA_CSUM_NEUTRAL_MAP ||
	    p->csum_mode == ILA_CSUM_NEUTRAL_MAP_AUTO)
		outcome = ILA_REF_XLAT_NEUTRAL;
	else if (csum_off >= 0 && ila_ref_adjust_csum(skb, csum_off, proto, diff))
		outcome = ILA_REF_XLAT_CSUM;

	/*
	 * With CHECKSUM_COMPLETE (receive), skb->csum covers the IPv6 header
	 * once it lies at or after skb->data. An adjusted checksum field moves
	 * by -diff and the address by +diff, so the sum is unchanged; only an
	 * address change without a checksum change must be accounted for (a
	 * neutral mapping's diff is 0).
	 */
	if (outcome != ILA_REF_XLAT_CSUM &&
	    skb->ip_summed == CHECKSUM_COMPLETE && daddr_off >= 0)
		skb->csum = csum_add(skb->csum, diff);

	return outcome;
}
