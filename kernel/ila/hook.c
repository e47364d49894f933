// SPDX-License-Identifier: GPL-2.0
/*
 * Our netfilter hooks at PRE_ROUTING, one pair per network namespace:
 *
 *  - first of all, the quotes of ICMPv6 errors about translated packets are
 *    translated back (icmp.c), so that conntrack, like the socket, relates
 *    an error to the flow it is about: that flow's packets left with their
 *    SIR destination as the conntrack of LOCAL_OUT saw them;
 *  - last of all, after raw, conntrack, mangle and every filter chain, the
 *    packets of local input routes are translated ahead of the route lookup
 *    (early.c). There, PRE_ROUTING and conntrack see the ILA destination
 *    whether a packet takes this early path or the route's input hook after
 *    the lookup; the early path comes and goes with policy rules, and a
 *    flow's conntrack entry and rule matches must not change with it.
 */
#include <linux/netfilter.h>
#include <linux/netfilter_ipv6.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>

#include "ila_ref.h"

static unsigned int ila_ref_icmp_hook(void *priv, struct sk_buff *skb,
				      const struct nf_hook_state *state)
{
	u8 nexthdr = ipv6_hdr(skb)->nexthdr;

	/* Only ICMPv6, maybe past extension headers, can be an error. */
	if (nexthdr != IPPROTO_TCP && nexthdr != IPPROTO_UDP)
		ila_ref_icmp_quote(state->net, skb);
	return NF_ACCEPT;
}

static unsigned int ila_ref_early_hook(void *priv, struct sk_buff *skb,
				       const struct nf_hook_state *state)
{
	return ila_ref_early_input(state->net, skb);
}

static const struct nf_hook_ops ila_ref_hook_ops[] = {
	{
		.hook		= ila_ref_icmp_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_PRE_ROUTING,
		.priority	= NF_IP6_PRI_FIRST + 1,
	},
	{
		.hook		= ila_ref_early_hook,
		.pf		= NFPROTO_IPV6,
		.hooknum	= NF_INET_PRE_ROUTING,
		.priority	= NF_IP6_PRI_LAST - 1,
	},
};

static int __net_init ila_ref_hook_net_init(struct net *net)
{
	return nf_register_net_hooks(net, ila_ref_hook_ops, ARRAY_SIZE(ila_ref_hook_ops));
}

static void __net_exit ila_ref_hook_net_exit(struct net *net)
{
	nf_unregister_net_hooks(net, ila_ref_hook_ops, ARRAY_SIZE(ila_ref_hook_ops));
}

static struct pernet_operations ila_ref_hook_net_ops = {
	.init = ila_ref_hook_net_init,
	.exit = ila_ref_hook_net_exit,
};

int ila_ref_hook_init(void)
{
	return register_pernet_subsys(&ila_ref_hook_net_ops);
}

void ila_ref_hook_exit(void)
{
	unregister_pernet_subsys(&ila_ref_hook_net_ops);
}
