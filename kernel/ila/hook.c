// SPDX-License-Identifier: GPL-2.0
/*
 * One netfilter hook at PRE_ROUTING per network namespace, ahead of the
 * route lookup and of early demux: it translates the quotes of ICMPv6
 * errors about translated packets (icmp.c), then the packets of local input
 * routes (early.c). One hook rather than two, because it runs for every
 * packet the namespace receives, translated or not.
 */
#include <linux/netfilter.h>
#include <linux/netfilter_ipv6.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>

#include "ila_ref.h"

static unsigned int ila_ref_prerouting(void *priv, struct sk_buff *skb,
				       const struct nf_hook_state *state)
{
	u8 nexthdr = ipv6_hdr(skb)->nexthdr;

	/* Only ICMPv6, maybe past extension headers, can be an error. */
	if (nexthdr != IPPROTO_TCP && nexthdr != IPPROTO_UDP)
		ila_ref_icmp_quote(state->net, skb);
	return ila_ref_early_input(state->net, skb);
}

static const struct nf_hook_ops ila_ref_hook_ops = {
	.hook		= ila_ref_prerouting,
	.pf		= NFPROTO_IPV6,
	.hooknum	= NF_INET_PRE_ROUTING,
	.priority	= NF_IP6_PRI_FIRST + 1,
};

static int __net_init ila_ref_hook_net_init(struct net *net)
{
	return nf_register_net_hook(net, &ila_ref_hook_ops);
}

static void __net_exit ila_ref_hook_net_exit(struct net *net)
{
	nf_unregister_net_hook(net, &ila_ref_hook_ops);
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
