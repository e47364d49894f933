// SPDX-License-Identifier: GPL-2.0
/*
 * The lightweight-tunnel side: netlink configuration of "encap ila LOCATOR"
 * routes and the output/input hooks that translate packets on them.
 */
#include <linux/lwtunnel.h>
#include <linux/module.h>
#include <net/lwtunnel.h>
#include <net/ip6_fib.h>
#include <net/ipv6.h>
#include <net/netlink.h>
#include <uapi/linux/ila.h>

#include "ila_ref.h"

static struct ila_ref_params *ila_ref_params(struct lwtunnel_state *lwt)
{
	return (struct ila_ref_params *)lwt->data;
}

/*
 * The locator and the checksum mode are implemented. ident-type and
 * hook-type are accepted only where they say what ours does anyway; the
 * other attributes of the uapi belong to the mapping table. Refusing them by
 * name tells a user which feature is missing instead of silently ignoring it.
 */
#define ILA_REF_REJECT(msg) { .type = NLA_REJECT, .reject_message = (msg) }
#define ILA_REF_NOT_IN_ROUTE ILA_REF_REJECT("ila_ref: attribute not valid in a route")

static const struct nla_policy ila_ref_nl_policy[ILA_ATTR_MAX + 1] = {
	[ILA_ATTR_LOCATOR] = { .type = NLA_U64 },
	[ILA_ATTR_CSUM_MODE] = NLA_POLICY_MAX(NLA_U8, ILA_CSUM_NEUTRAL_MAP_AUTO),
	[ILA_ATTR_IDENT_TYPE] = { .type = NLA_U8 },
	[ILA_ATTR_HOOK_TYPE] = { .type = NLA_U8 },
	[ILA_ATTR_IDENTIFIER] = ILA_REF_NOT_IN_ROUTE,
	[ILA_ATTR_LOCATOR_MATCH] = ILA_REF_NOT_IN_ROUTE,
	[ILA_ATTR_IFINDEX] = ILA_REF_NOT_IN_ROUTE,
	[ILA_ATTR_DIR] = ILA_REF_NOT_IN_ROUTE,
	[ILA_ATTR_PAD] = ILA_REF_NOT_IN_ROUTE,
};

/*
 * ident-type and hook-type, as the in-tree module's users write them: ours
 * reads no identifier type (an identifier is opaque, but for the C-bit of
 * csum-mode neutral-map), and translates a local route's input and any
 * other route's output. Either is accepted when it says just that.
 */
static int ila_ref_check_options(struct nlattr **tb, bool local,
				 struct netlink_ext_ack *extack)
{
	if (tb[ILA_ATTR_IDENT_TYPE] &&
	    nla_get_u8(tb[ILA_ATTR_IDENT_TYPE]) != ILA_ATYPE_LUID) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ILA_ATTR_IDENT_TYPE],
				    "ila_ref: only ident-type luid is supported (the identifier is not typed)");
		return -EINVAL;
	}
	if (!tb[ILA_ATTR_HOOK_TYPE])
		return 0;
	if (local && nla_get_u8(tb[ILA_ATTR_HOOK_TYPE]) != ILA_HOOK_ROUTE_INPUT) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ILA_ATTR_HOOK_TYPE],
				    "ila_ref: a local route translates on input (hook-type input)");
		return -EINVAL;
	}
	if (!local && nla_get_u8(tb[ILA_ATTR_HOOK_TYPE]) != ILA_HOOK_ROUTE_OUTPUT) {
		NL_SET_ERR_MSG_ATTR(extack, tb[ILA_ATTR_HOOK_TYPE],
				    "ila_ref: a route translates on output (hook-type output); local routes on input");
		return -EINVAL;
	}
	return 0;
}

/*
 * The generic parser keeps the last of repeated attributes. Two locators
 * in one route are a client bug, and which one wins would be an accident
 * of the parser: refuse the route instead.
 */
static int ila_ref_reject_repeated(const struct nlattr *nla,
				   struct netlink_ext_ack *extack)
{
	const struct nlattr *pos;
	int rem, seen = 0;

	nla_for_each_nested(pos, nla, rem) {
		if (nla_type(pos) == ILA_ATTR_LOCATOR && seen++) {
			NL_SET_ERR_MSG_ATTR(extack, pos, "ila_ref: locator (ILA_ATTR_LOCATOR) given more than once");
			return -EINVAL;
		}
	}
	return 0;
}

static int ila_ref_build_state(struct net *net, struct nlattr *nla,
			       unsigned int family, const void *cfg,
			       struct lwtunnel_state **ts,
			       struct netlink_ext_ack *extack)
{
	const struct fib6_config *cfg6 = cfg;
	struct nlattr *tb[ILA_ATTR_MAX + 1];
	struct lwtunnel_state *lwt;
	int err;

	/*
	 * Strict validation (unknown types, bad lengths, trailing bytes) but
	 * without insisting on NLA_F_NESTED, which RTA_ENCAP has never needed.
	 */
	err = __nla_parse(tb, ILA_ATTR_MAX, nla_data(nla), nla_len(nla),
			  ila_ref_nl_policy, NL_VALIDATE_STRICT, extack);
	if (err < 0)
		return err;
	err = ila_ref_reject_repeated(nla, extack);
	if (err < 0)
		return err;

	if (!tb[ILA_ATTR_LOCATOR]) {
		NL_SET_ERR_MSG_ATTR(extack, nla, "ila_ref: locator (ILA_ATTR_LOCATOR) is required");
		return -EINVAL;
	}
	err = ila_ref_check_options(tb, family == AF_INET6 && cfg6->fc_type == RTN_LOCAL,
				    extack);
	if (err < 0)
		return err;

	/*
	 * Either family is accepted, as in the original ILA module: packets
	 * of an IPv4 route are dropped and counted on the data path.
	 */
	lwt = lwtunnel_state_alloc(sizeof(struct ila_ref_params));
	if (!lwt)
		return -ENOMEM;

	lwt->type = LWTUNNEL_ENCAP_ILA;
	lwt->flags = LWTUNNEL_STATE_OUTPUT_REDIRECT |
		     LWTUNNEL_STATE_INPUT_REDIRECT;
	/* The attribute carries the locator's bytes in network order. */
	ila_ref_params_init(ila_ref_params(lwt),
			    (__force __be64)nla_get_u64(tb[ILA_ATTR_LOCATOR]));
	ila_ref_params(lwt)->counters = ila_ref_counters(net);
	if (tb[ILA_ATTR_CSUM_MODE])
		ila_ref_params(lwt)->csum_mode = nla_get_u8(tb[ILA_ATTR_CSUM_MODE]);

	/* An output route's ICMPv6 errors find their way back through it. */
	if (family == AF_INET6 && cfg6->fc_type != RTN_LOCAL)
		err = ila_ref_rmap_add(net, ila_ref_params(lwt), &cfg6->fc_dst,
				       cfg6->fc_dst_len);
	/* A local /128 route may translate ahead of the lookup (early.c). */
	else if (family == AF_INET6 && cfg6->fc_dst_len == 128 &&
		 !cfg6->fc_src_len)
		err = ila_ref_early_add(net, lwt, &cfg6->fc_dst);
	if (err) {
		kfree(lwt);
		return err;
	}

	*ts = lwt;
	return 0;
}

static void ila_ref_destroy_state(struct lwtunnel_state *lwt)
{
	ila_ref_rmap_del(ila_ref_params(lwt));
	ila_ref_early_del(ila_ref_params(lwt));
}

/*
 * Translate, then hand the packet on; a drop is counted and freed here.
 * Inline: it is the output and input hooks' whole work.
 */
static __always_inline int ila_ref_xlat_or_drop(struct sk_buff *skb)
{
	const struct ila_ref_params *p = ila_ref_params(skb_dst(skb)->lwtstate);
	enum ila_ref_outcome outcome;

	outcome = ila_ref_xlat(skb, p);
	this_cpu_inc(p->counters[outcome]);
	if (ila_ref_outcome_is_drop(outcome)) {
		kfree_skb(skb);
		return -EINVAL;
	}
	return 0;
}

static int ila_ref_output(struct net *net, struct sock *sk,
			  struct sk_buff *skb)
{
	/*
	 * make bench's floor column (a build of its own, with
	 * -DCONFIG_ILA_REF_BENCH_FLOOR=1: not a Kconfig option) translates
	 * nothing: what the lwtunnel output redirect costs alone. The packet
	 * goes out to the SIR address, which its receiver holds.
	 */
	if (!IS_ENABLED(CONFIG_ILA_REF_BENCH_FLOOR)) {
		int err = ila_ref_xlat_or_drop(skb);

		if (err)
			return err;
	}
	return skb_dst(skb)->lwtstate->orig_output(net, sk, skb);
}

/*
 * Input translates only what is delivered here. A forwarded packet goes
 * through ip6_forward() untranslated and is translated by the output hook:
 * an ICMPv6 error the forwarding itself makes (Time Exceeded, Packet Too
 * Big) then quotes the packet as its sender sent it, to the SIR address its
 * sender knows, and the packet is translated and counted once. (An IPv4
 * route's packets are dropped here, as on output.)
 */
static int ila_ref_input(struct sk_buff *skb)
{
	const struct lwtunnel_state *lwt = skb_dst(skb)->lwtstate;
	int err;

	if (lwt->orig_input != ip6_input && skb->protocol == htons(ETH_P_IPV6))
		return lwt->orig_input(skb);
	err = ila_ref_xlat_or_drop(skb);
	if (err)
		return err;
	return lwt->orig_input(skb);
}

/* A dump shows the checksum mode only where it is not the default. */
static bool ila_ref_csum_mode_shown(struct lwtunnel_state *lwt)
{
	return ila_ref_params(lwt)->csum_mode != ILA_CSUM_ADJUST_TRANSPORT;
}

static int ila_ref_fill_encap(struct sk_buff *skb, struct lwtunnel_state *lwt)
{
	/* A u64 attribute must be padded to 8-byte alignment for userspace. */
	if (nla_put_u64_64bit(skb, ILA_ATTR_LOCATOR,
			      (__force u64)ila_ref_params(lwt)->locator,
			      ILA_ATTR_PAD))
		return -EMSGSIZE;
	if (ila_ref_csum_mode_shown(lwt) &&
	    nla_put_u8(skb, ILA_ATTR_CSUM_MODE, ila_ref_params(lwt)->csum_mode))
		return -EMSGSIZE;
	return 0;
}

static int ila_ref_encap_size(struct lwtunnel_state *lwt)
{
	/* What ila_ref_fill_encap() puts, so that dumps are sized right. */
	return nla_total_size_64bit(sizeof(u64)) +
	       (ila_ref_csum_mode_shown(lwt) ? nla_total_size(sizeof(u8)) : 0);
}

static int ila_ref_cmp_encap(struct lwtunnel_state *a, struct lwtunnel_state *b)
{
	return ila_ref_params(a)->locator != ila_ref_params(b)->locator ||
	       ila_ref_params(a)->csum_mode != ila_ref_params(b)->csum_mode;
}

static const struct lwtunnel_encap_ops ila_ref_encap_ops = {
	.build_state	= ila_ref_build_state,
	.destroy_state	= ila_ref_destroy_state,
	.output		= ila_ref_output,
	.input		= ila_ref_input,
	.fill_encap	= ila_ref_fill_encap,
	.get_encap_size	= ila_ref_encap_size,
	.cmp_encap	= ila_ref_cmp_encap,
	/* Routes hold a module reference: no unload while they exist. */
	.owner		= THIS_MODULE,
};

int ila_ref_lwt_init(void)
{
	/* Only one module can own an encap type; the core says -1 if taken. */
	if (lwtunnel_encap_add_ops(&ila_ref_encap_ops, LWTUNNEL_ENCAP_ILA)) {
		pr_err("ila_ref: LWTUNNEL_ENCAP_ILA is already registered (is the in-tree ila module loaded?)\n");
		return -EBUSY;
	}
	return 0;
}

void ila_ref_lwt_exit(void)
{
	lwtunnel_encap_del_ops(&ila_ref_encap_ops, LWTUNNEL_ENCAP_ILA);
}
