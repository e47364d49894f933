// SPDX-License-Identifier: GPL-2.0
/*
 * Input translation before early demux.
 *
 * An input route (type local, in table local: "encap ila LOCATOR" on the
 * host's own ILA address) translates in its lwtunnel input hook, which runs
 * after the input route lookup. Until then the packet carries the ILA
 * address, which no socket is bound to: early demux finds no socket, and
 * every packet pays the route lookup that a plain flow's packets skip by
 * reusing their socket's cached route (make bench: a TCP flow loses about
 * ten points to it).
 *
 * The PRE_ROUTING hook (hook.c) therefore translates the packets of such a
 * route first, found by their destination in a hash of the /128 local
 * routes, where translating first cannot change what becomes of the packet:
 *  - the namespace has neither policy rules of its own nor source-specific
 *    routes, so the route lookup depends on the destination alone;
 *  - a lookup of the destination returns this very route, and a lookup of
 *    the address it translates to returns a plain local route, so the packet
 *    is delivered here either way, translated once.
 * Those lookups are made again after any change that can alter a lookup's
 * result (a FIB notifier event, or the FIB's serial number moving: a route,
 * rule or address added, replaced or removed), not per packet. Any other
 * packet takes the lwtunnel hook as before.
 */
#include <linux/hashtable.h>
#include <linux/netfilter.h>
#include <net/fib_notifier.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/lwtunnel.h>
#include <net/netns/generic.h>

#include "ila_ref.h"

struct ila_ref_early {
	struct ila_ref_hentry h;	/* its link, walked by ila_ref_hash_entries() */
	struct rcu_head rcu;
	struct in6_addr dst;		/* the route's destination */
	/* Its state: freed after an RCU grace period, and after this entry. */
	const struct lwtunnel_state *lwt;
	unsigned long verdict;		/* generation << 1 | translate here */
};

static const struct ila_ref_params *ila_ref_early_params(const struct ila_ref_early *e)
{
	return (const struct ila_ref_params *)e->lwt->data;
}

static DEFINE_HASHTABLE(ila_ref_earlies, 8);
static DEFINE_SPINLOCK(ila_ref_early_lock);
static atomic_t ila_ref_early_count = ATOMIC_INIT(0);

/* Moved by every FIB event of any namespace: a verdict of another is stale. */
static atomic_long_t ila_ref_fib_gen = ATOMIC_LONG_INIT(1);
static unsigned int ila_ref_early_net_id __read_mostly;

static u32 ila_ref_early_key(const struct net *net, const struct in6_addr *dst)
{
	return ipv6_addr_hash(dst) ^ net_hash_mix(net);
}

/* Called from build_state, in process context, for a local /128 route. */
int ila_ref_early_add(struct net *net, struct lwtunnel_state *lwt,
		      const struct in6_addr *dst)
{
	struct ila_ref_params *p = (struct ila_ref_params *)lwt->data;
	struct ila_ref_early *e;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	write_pnet(&e->h.net, net);
	e->dst = *dst;
	e->lwt = lwt;
	spin_lock_bh(&ila_ref_early_lock);
	hash_add_rcu(ila_ref_earlies, &e->h.node, ila_ref_early_key(net, dst));
	atomic_inc(&ila_ref_early_count);
	spin_unlock_bh(&ila_ref_early_lock);
	p->early = e;
	return 0;
}

/* Called from destroy_state, which may run in softirq context. */
void ila_ref_early_del(struct ila_ref_params *p)
{
	if (!p->early)
		return;
	spin_lock_bh(&ila_ref_early_lock);
	hash_del_rcu(&p->early->h.node);
	WARN_ON_ONCE(atomic_dec_return(&ila_ref_early_count) < 0);
	spin_unlock_bh(&ila_ref_early_lock);
	kfree_rcu(p->early, rcu);
	p->early = NULL;
}

/*
 * How many local routes of @net are in the hash, for /proc/net/ila_ref_stats:
 * counted by a walk, not kept, so that an entry left behind shows.
 */
unsigned int ila_ref_early_entries(const struct net *net)
{
	return ila_ref_hash_entries(ila_ref_earlies, HASH_SIZE(ila_ref_earlies), net);
}

/* Does the route lookup of @addr give a local route with the state @lwt? */
static bool ila_ref_local_route(struct net *net, const struct in6_addr *addr,
				const struct lwtunnel_state *lwt)
{
	struct rt6_info *rt = rt6_lookup(net, addr, NULL, 0, NULL, 0);
	const struct lwtunnel_state *has;
	bool local;

	if (!rt)
		return false;
	has = rt->dst.lwtstate;
	local = has == lwt &&
		(has ? has->orig_input : rt->dst.input) == ip6_input;
	ip6_rt_put(rt);
	return local;
}

/* Does the route lookup depend on the destination alone? */
static bool ila_ref_lookup_by_dst(const struct net *net)
{
#ifdef CONFIG_IPV6_MULTIPLE_TABLES
	if (net->ipv6.fib6_has_custom_rules)
		return false;
#ifdef CONFIG_IPV6_SUBTREES
	if (net->ipv6.fib6_routes_require_src)
		return false;
#endif
#endif
	return true;
}

/*
 * The generation a verdict holds for: FIB events of any namespace, whose
 * notifiers run before a new or replacing route is published, plus @net's
 * FIB serial number, which fib6_add() moves once it is. A verdict made
 * between the two, from the route being replaced, is stale when the new
 * one is in place.
 */
static unsigned long ila_ref_early_gen(struct net *net)
{
	return (unsigned long)atomic_long_read(&ila_ref_fib_gen) +
	       (unsigned int)atomic_read(&net->ipv6.fib6_sernum);
}

/* Is translating before the route lookup the same as after it? */
static bool ila_ref_early_allowed(struct net *net, struct ila_ref_early *e)
{
	unsigned long gen = ila_ref_early_gen(net) << 1;
	unsigned long verdict = READ_ONCE(e->verdict);
	struct in6_addr sir;
	bool ok;

	if ((verdict & ~1UL) == gen)
		return verdict & 1;
	sir = e->dst;
	ila_ref_xlat_addr(&sir, ila_ref_early_params(e));
	ok = ila_ref_lookup_by_dst(net) &&
	     ila_ref_local_route(net, &e->dst, e->lwt) &&
	     ila_ref_local_route(net, &sir, NULL);
	/* Read before the lookups: a change during them makes it stale. */
	WRITE_ONCE(e->verdict, gen | ok);
	return ok;
}

/* Translate a local route's packet before early demux: a netfilter verdict. */
unsigned int ila_ref_early_input(struct net *net, struct sk_buff *skb)
{
	const struct in6_addr *daddr = &ipv6_hdr(skb)->daddr;
	const struct ila_ref_params *p;
	enum ila_ref_outcome outcome;
	struct ila_ref_early *e;

	if (!atomic_read(&ila_ref_early_count))
		return NF_ACCEPT;
	hash_for_each_possible_rcu(ila_ref_earlies, e, h.node, ila_ref_early_key(net, daddr)) {
		if (!ipv6_addr_equal(&e->dst, daddr) || !net_eq(read_pnet(&e->h.net), net) ||
		    !ila_ref_early_allowed(net, e))
			continue;
		p = ila_ref_early_params(e);
		outcome = ila_ref_xlat(skb, p);
		this_cpu_inc(p->counters[outcome]);
		if (ila_ref_outcome_is_drop(outcome))
			return NF_DROP;
		this_cpu_inc(p->counters[ILA_REF_EARLY_INPUT]);
		return NF_ACCEPT;
	}
	return NF_ACCEPT;
}

static int ila_ref_fib_event(struct notifier_block *nb, unsigned long event,
			     void *info)
{
	atomic_long_inc(&ila_ref_fib_gen);
	return NOTIFY_DONE;
}

static int __net_init ila_ref_early_net_init(struct net *net)
{
	struct notifier_block *nb = net_generic(net, ila_ref_early_net_id);

	nb->notifier_call = ila_ref_fib_event;
	return register_fib_notifier(net, nb, NULL, NULL);
}

static void __net_exit ila_ref_early_net_exit(struct net *net)
{
	unregister_fib_notifier(net, net_generic(net, ila_ref_early_net_id));
}

static struct pernet_operations ila_ref_early_net_ops = {
	.init = ila_ref_early_net_init,
	.exit = ila_ref_early_net_exit,
	.id   = &ila_ref_early_net_id,
	.size = sizeof(struct notifier_block),
};

int ila_ref_early_init(void)
{
	return register_pernet_subsys(&ila_ref_early_net_ops);
}

void ila_ref_early_exit(void)
{
	unregister_pernet_subsys(&ila_ref_early_net_ops);
}
