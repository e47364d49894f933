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
#include <net/checksum.h>
#include <net/net_namespace.h>
#include <uapi/linux/ila.h>

/* What happened to one packet; each outcome has a per-netns counter. */
enum ila_ref_outcome {
	ILA_REF_XLAT_CSUM,	/* locator written, L4 checksum adjusted */
	ILA_REF_XLAT_NOCSUM,	/* locator written, no checksum to adjust */
	ILA_REF_XLAT_NEUTRAL,	/* locator written, the identifier absorbed it */
	ILA_REF_XLAT_NOOP,	/* destination already had the locator */
	ILA_REF_ICMP_ERROR,	/* an ICMPv6 error's quote translated back */
	ILA_REF_DROP_NOT_IPV6,	/* not an IPv6 packet (IPv4 route) */
	ILA_REF_DROP_BAD_IPV6,	/* IPv6 header truncated */
	ILA_REF_DROP_NOMEM,	/* could not make the headers writable */
	ILA_REF_OUTCOME_MAX,
};

/* Counted besides a packet's outcome. */
enum ila_ref_event {
	/* translated on input ahead of the route lookup (early.c) */
	ILA_REF_EARLY_INPUT = ILA_REF_OUTCOME_MAX,
	ILA_REF_COUNTER_MAX,
};

struct ila_ref_rmap;
struct ila_ref_early;
struct lwtunnel_state;

/* The head of an entry of our hash tables: its link and its namespace. */
struct ila_ref_hentry {
	struct hlist_node node;
	possible_net_t net;
};

/* The state of one ILA route, kept in lwtunnel_state::data. */
struct ila_ref_params {
	__be64 locator;
	__wsum locator_sum;		/* its one's complement sum */
	u8 csum_mode;			/* ILA_CSUM_*, adj-transport by default */
	struct ila_ref_rmap *rmap;	/* its ICMP errors' way back, or NULL */
	struct ila_ref_early *early;	/* its input before the lookup, or NULL */
	/*
	 * Its namespace's counters, so that the data path counts without a
	 * call. They outlive the route's packets: a namespace's devices are
	 * gone before its counters are freed (stats.c).
	 */
	u64 __percpu *counters;
};

static inline bool ila_ref_outcome_is_drop(enum ila_ref_outcome outcome)
{
	return outcome >= ILA_REF_DROP_NOT_IPV6;
}

/* A locator's one's complement sum, as two words: no call to csum_partial(). */
static inline __wsum ila_ref_sum64(const __be64 *v)
{
	const __be32 *w = (const __be32 *)v;

	return csum_add((__force __wsum)w[0], (__force __wsum)w[1]);
}

/*
 * The C-bit of draft-herbert-intarea-ila's identifier format, after its
 * 3-bit type: set while an address carries a checksum-neutral adjustment.
 */
#define ILA_REF_C_BIT 0x1000	/* in the address's fifth 16-bit word */

void ila_ref_params_init(struct ila_ref_params *p, __be64 locator);
__wsum ila_ref_xlat_addr(struct in6_addr *addr, const struct ila_ref_params *p);
enum ila_ref_outcome ila_ref_xlat(struct sk_buff *skb,
				  const struct ila_ref_params *p);
/*
 * The offset of the transport checksum of the packet an ICMPv6 error quotes,
 * whose IPv6 header is at @qoff and its next header @qnexthdr (*@proto its
 * protocol), or -1 where no checksum covers its destination.
 */
int ila_ref_quote_csum_offset(const struct sk_buff *skb, int qoff, u8 qnexthdr, u8 *proto);

int ila_ref_rmap_add(struct net *net, struct ila_ref_params *p,
		     const struct in6_addr *dst, int plen);
void ila_ref_rmap_del(struct ila_ref_params *p);
unsigned int ila_ref_rmap_entries(const struct net *net);
void ila_ref_icmp_quote(struct net *net, struct sk_buff *skb);

int ila_ref_early_add(struct net *net, struct lwtunnel_state *lwt,
		      const struct in6_addr *dst);
void ila_ref_early_del(struct ila_ref_params *p);
unsigned int ila_ref_early_entries(const struct net *net);
unsigned int ila_ref_early_input(struct net *net, struct sk_buff *skb);
int ila_ref_early_init(void);
void ila_ref_early_exit(void);

int ila_ref_hook_init(void);
void ila_ref_hook_exit(void);

/*
 * How many entries of the hash table @table (@size buckets) of struct
 * ila_ref_hentry belong to @net: counted by a walk, not kept, so that an
 * entry left behind shows in /proc/net/ila_ref_stats.
 */
unsigned int ila_ref_hash_entries(struct hlist_head *table, unsigned int size,
				  const struct net *net);

/* @counter: an enum ila_ref_outcome or enum ila_ref_event */
void ila_ref_count(struct net *net, unsigned int counter);
/* The per-CPU counters of @net, ILA_REF_COUNTER_MAX each, for a route's state. */
u64 __percpu *ila_ref_counters(struct net *net);
int ila_ref_stats_init(void);
void ila_ref_stats_exit(void);

int ila_ref_lwt_init(void);
void ila_ref_lwt_exit(void);

#endif /* _ILA_REF_H */
