// SPDX-License-Identifier: GPL-2.0
/*
 * ICMPv6 errors about translated packets (draft-herbert-intarea-ila, its
 * section on ICMP error handling).
 *
 * A packet sent or forwarded to a SIR address leaves with the locator in
 * its destination, so an ICMPv6 error about it quotes the ILA address. The
 * stack matches an error to its socket by the quoted addresses and finds
 * none: a Packet Too Big then never lowers the path MTU, and the flow stalls
 * (a PMTU black hole). The PRE_ROUTING hook (hook.c), which sees the input
 * and the forward path alike, translates the quoted destination back to the
 * SIR address before the stack reads it, and keeps the quoted transport
 * checksum and the ICMPv6 checksum consistent.
 *
 * The SIR address is found through a reverse map kept with the routes: each
 * output ILA route of 64 bits or more gives (its locator -> the upper 64 bits
 * of its destination). A candidate is taken only if a route lookup for it
 * returns an ILA route writing that very locator. Routes that give the same
 * pair share one entry: the many /128 routes of one SIR prefix to one
 * locator cost an error one candidate, not one route lookup each.
 */
#include <linux/hashtable.h>
#include <linux/icmpv6.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/lwtunnel.h>

#include "ila_ref.h"

struct ila_ref_rmap {
	struct ila_ref_hentry h;	/* its link, walked by ila_ref_hash_entries() */
	struct rcu_head rcu;
	__be64 locator;		/* what the route writes */
	__be64 sir;		/* the upper 64 bits of its destination */
	u8 csum_mode;		/* how it writes it */
	unsigned int routes;	/* the routes that share it, under the lock */
};

static DEFINE_HASHTABLE(ila_ref_rmaps, 8);
static DEFINE_SPINLOCK(ila_ref_rmap_lock);
static atomic_t ila_ref_rmap_count = ATOMIC_INIT(0);

static u64 ila_ref_rmap_key(const struct net *net, __be64 locator)
{
	return (__force u64)locator ^ net_hash_mix(net);
}

/* Called from build_state, in process context, for an output route. */
int ila_ref_rmap_add(struct net *net, struct ila_ref_params *p,
		     const struct in6_addr *dst, int plen)
{
	__be64 sir = *(const __be64 *)dst;
	struct ila_ref_rmap *e, *fresh;
	u64 key;

	/* A shorter prefix does not say what the SIR's upper bits were. */
	if (plen < 64)
		return 0;
	/* Allocated ahead, outside the lock; freed if the pair has an entry. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	key = ila_ref_rmap_key(net, p->locator);
	spin_lock_bh(&ila_ref_rmap_lock);
	hash_for_each_possible(ila_ref_rmaps, e, h.node, key) {
		if (e->locator == p->locator && e->sir == sir &&
		    e->csum_mode == p->csum_mode && net_eq(read_pnet(&e->h.net), net))
			break;
	}
	if (!e) {
		e = fresh;
		fresh = NULL;
		write_pnet(&e->h.net, net);
		e->locator = p->locator;
		e->sir = sir;
		e->csum_mode = p->csum_mode;
		hash_add_rcu(ila_ref_rmaps, &e->h.node, key);
		atomic_inc(&ila_ref_rmap_count);
	}
	e->routes++;
	spin_unlock_bh(&ila_ref_rmap_lock);
	kfree(fresh);
	p->rmap = e;
	return 0;
}

/* Called from destroy_state, which may run in softirq context. */
void ila_ref_rmap_del(struct ila_ref_params *p)
{
	struct ila_ref_rmap *e = p->rmap;

	if (!e)
		return;
	spin_lock_bh(&ila_ref_rmap_lock);
	if (!--e->routes) {
		hash_del_rcu(&e->h.node);
		WARN_ON_ONCE(atomic_dec_return(&ila_ref_rmap_count) < 0);
		kfree_rcu(e, rcu);
	}
	spin_unlock_bh(&ila_ref_rmap_lock);
	p->rmap = NULL;
}

/*
 * How many reverse-map entries @net holds, for /proc/net/ila_ref_stats: one
 * per (locator, SIR prefix) pair of its output routes.
 */
unsigned int ila_ref_rmap_entries(const struct net *net)
{
	return ila_ref_hash_entries(ila_ref_rmaps, HASH_SIZE(ila_ref_rmaps), net);
}

/* Does the route for @sir translate it to @ila, as the entry @e says? */
static bool ila_ref_routes_to(struct net *net, const struct in6_addr *sir,
			      const struct in6_addr *ila, const struct ila_ref_rmap *e)
{
	struct flowi6 fl6 = { .daddr = *sir };
	struct dst_entry *dst = ip6_route_output(net, NULL, &fl6);
	struct lwtunnel_state *lwt = dst->lwtstate;
	const struct ila_ref_params *p;
	struct in6_addr to = *sir;
	bool ours = false;

	if (!dst->error && lwt && lwt->type == LWTUNNEL_ENCAP_ILA) {
		p = (const struct ila_ref_params *)lwt->data;
		ours = p->locator == e->locator && p->csum_mode == e->csum_mode;
		if (ours) {
			ila_ref_xlat_addr(&to, p);
			ours = ipv6_addr_equal(&to, ila);
		}
	}
	dst_release(dst);
	return ours;
}

/*
 * The SIR address that the ILA address @ila was translated from, if any,
 * and its entry: the route's translation undone (a neutral mapping's
 * identifier too), taken only if the route for it gives @ila back.
 */
static const struct ila_ref_rmap *ila_ref_sir_of(struct net *net, const struct in6_addr *ila,
						 struct in6_addr *sir)
{
	__be64 locator = *(const __be64 *)ila;
	struct ila_ref_params back = { };
	struct ila_ref_rmap *e;

	hash_for_each_possible_rcu(ila_ref_rmaps, e, h.node, ila_ref_rmap_key(net, locator)) {
		if (e->locator != locator || !net_eq(read_pnet(&e->h.net), net))
			continue;
		*sir = *ila;
		ila_ref_params_init(&back, e->sir);
		back.csum_mode = e->csum_mode;
		ila_ref_xlat_addr(sir, &back);
		if (ila_ref_routes_to(net, sir, ila, e))
			return e;
	}
	return NULL;
}

/* A checksum field moved by @diff, as data (the quote is no skb of its own). */
static __sum16 ila_ref_moved(__sum16 field, u8 proto, __wsum diff)
{
	if (proto == IPPROTO_UDP && !field)
		return field;	/* no checksum stays none */
	field = csum_fold(csum_add(diff, ~csum_unfold(field)));
	return proto == IPPROTO_UDP && !field ? CSUM_MANGLED_0 : field;
}

/* Translate the quote of an ICMPv6 error back; whether it was. */
static bool ila_ref_icmp_error(struct net *net, struct sk_buff *skb)
{
	int off = skb_network_offset(skb) + sizeof(struct ipv6hdr), qoff, csum_off;
	u8 nexthdr = ipv6_hdr(skb)->nexthdr, qnexthdr, proto = 0;
	struct in6_addr qbuf, *qdst, sir;
	const struct ila_ref_rmap *e;
	struct icmp6hdr ibuf, *ih;
	__sum16 old = 0, new = 0;
	__wsum diff, delta;
	__be16 frag_off;
	u8 *qnh, nhbuf;

	off = ipv6_skip_exthdr(skb, off, &nexthdr, &frag_off);
	if (off < 0 || nexthdr != IPPROTO_ICMPV6 || (frag_off & htons(IP6_OFFSET)))
		return false;
	ih = skb_header_pointer(skb, off, sizeof(ibuf), &ibuf);
	if (!ih || (ih->icmp6_type & ICMPV6_INFOMSG_MASK))
		return false;
	qoff = off + sizeof(struct icmp6hdr);
	/* A quote too short to hold the destination is left as it is. */
	qdst = skb_header_pointer(skb, qoff + offsetof(struct ipv6hdr, daddr),
				  sizeof(qbuf), &qbuf);
	if (!qdst)
		return false;
	e = ila_ref_sir_of(net, qdst, &sir);
	if (!e)
		return false;
	qnh = skb_header_pointer(skb, qoff + offsetof(struct ipv6hdr, nexthdr),
				 sizeof(nhbuf), &nhbuf);
	qnexthdr = *qnh;
	/* Only adj-transport changed the quoted packet's own checksum. */
	csum_off = e->csum_mode != ILA_CSUM_ADJUST_TRANSPORT ? -1 :
		   ila_ref_quote_csum_offset(skb, qoff, qnexthdr, &proto);
	if (skb_ensure_writable(skb, max_t(int, csum_off + sizeof(__sum16),
					   qoff + sizeof(struct ipv6hdr))))
		return false;

	qdst = (struct in6_addr *)(skb->data + qoff + offsetof(struct ipv6hdr, daddr));
	diff = csum_sub(csum_partial(&sir, sizeof(sir), 0), csum_partial(qdst, sizeof(*qdst), 0));
	*qdst = sir;
	delta = diff;
	if (csum_off >= 0) {
		__sum16 *field = (__sum16 *)(skb->data + csum_off);

		old = *field;
		new = ila_ref_moved(old, proto, diff);
		*field = new;
		delta = csum_add(delta, csum_sub(csum_unfold(new), csum_unfold(old)));
	}
	/*
	 * The ICMPv6 checksum covers the quote: it moves by what the quote's
	 * sum moved, the address's difference less the quoted field's. Both
	 * changes together leave the data's sum as it was, so a
	 * CHECKSUM_COMPLETE skb->csum needs nothing.
	 */
	ih = (struct icmp6hdr *)(skb->data + off);
	ih->icmp6_cksum = csum_fold(csum_add(~csum_unfold(ih->icmp6_cksum), delta));
	return true;
}

/* Called by the PRE_ROUTING hook for every packet (hook.c). */
void ila_ref_icmp_quote(struct net *net, struct sk_buff *skb)
{
	if (atomic_read(&ila_ref_rmap_count) && ila_ref_icmp_error(net, skb))
		ila_ref_count(net, ILA_REF_ICMP_ERROR);
}
