// SPDX-License-Identifier: GPL-2.0
/*
 * A micro-benchmark of the translation, run once at load time: the cost of
 * one ila_ref_xlat() call against one IPv6 route lookup in the same boot,
 * so that make bench reports a ratio and never an absolute time as the
 * result. The figures go to the kernel log as one "ila_ref_bench:" line of
 * key=value pairs; the module then stays loaded and does nothing.
 *
 * The translation alternates between two locators, so every call really
 * rewrites the address and adjusts the checksum; after an even number of
 * calls the packet must be bit for bit what it was, which is checked.
 *
 * The lookups cycle over lookup_count consecutive destinations from
 * lookup_base (as ila-nl bulk installs them), so with many routes installed
 * they measure the FIB rather than one hot path.
 *
 * Like the KUnit tests, it links its own copy of xlat.c.
 */
#include <linux/inet.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>

#include "../xlat.c"

static unsigned int iterations = 200000;
module_param(iterations, uint, 0444);
MODULE_PARM_DESC(iterations, "calls of each operation timed");

static char *lookup_base = "3333:0:0:1:5555:1:0:0";
module_param(lookup_base, charp, 0444);
MODULE_PARM_DESC(lookup_base, "first destination looked up");

static unsigned int lookup_count = 1;
module_param(lookup_count, uint, 0444);
MODULE_PARM_DESC(lookup_count, "consecutive destinations cycled through");

#define BENCH_PAYLOAD 64

static const struct in6_addr bench_src = {
	{ { 0x24, 0x01, 0xdb, 0x00, 0, 0x20, 0x91, 0x1a,
	    0xfa, 0xce, 0, 0, 0, 0x25, 0, 0 } } };
static const struct in6_addr bench_dst = {
	{ { 0x33, 0x33, 0, 0, 0, 0, 0, 1, 0x55, 0x55, 0, 0, 0, 2, 0, 0 } } };

/* A linear UDP datagram with a correct checksum, as a socket would build. */
static struct sk_buff *bench_skb(void)
{
	unsigned int l4len = sizeof(struct udphdr) + BENCH_PAYLOAD;
	struct sk_buff *skb = alloc_skb(LL_MAX_HEADER + sizeof(struct ipv6hdr) +
					l4len, GFP_KERNEL);
	struct ipv6hdr *ip6h;
	struct udphdr *uh;

	if (!skb)
		return NULL;
	skb_reserve(skb, LL_MAX_HEADER);
	skb_reset_network_header(skb);
	ip6h = skb_put_zero(skb, sizeof(*ip6h));
	ip6h->version = 6;
	ip6h->payload_len = htons(l4len);
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = 64;
	ip6h->saddr = bench_src;
	ip6h->daddr = bench_dst;
	skb_set_transport_header(skb, skb->len);
	uh = skb_put_zero(skb, l4len);
	uh->source = htons(40000);
	uh->dest = htons(9000);
	uh->len = htons(l4len);
	memset(uh + 1, 0xa5, BENCH_PAYLOAD);
	uh->check = csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr, l4len,
				    IPPROTO_UDP, csum_partial(uh, l4len, 0));
	skb->protocol = htons(ETH_P_IPV6);
	skb->ip_summed = CHECKSUM_NONE;
	return skb;
}

/* Nanoseconds for @n calls of ila_ref_xlat(); -1 if the packet went wrong. */
static s64 time_xlat(unsigned int n)
{
	struct ila_ref_params to = { }, back = { };
	struct sk_buff *skb = bench_skb();
	u8 before[sizeof(struct ipv6hdr) + sizeof(struct udphdr)];
	unsigned int i;
	__be64 home;
	u64 t0, t;

	if (!skb)
		return -1;
	ila_ref_params_init(&to, cpu_to_be64(0x2001000000000002ULL));
	memcpy(&home, &bench_dst, sizeof(home));
	ila_ref_params_init(&back, home);
	memcpy(before, skb->data, sizeof(before));
	n &= ~1U;	/* an even count brings the packet back */
	t0 = ktime_get_ns();
	for (i = 0; i < n; i += 2) {
		ila_ref_xlat(skb, &to);
		ila_ref_xlat(skb, &back);
	}
	t = ktime_get_ns() - t0;
	if (memcmp(before, skb->data, sizeof(before))) {
		pr_err("ila_ref_bench: the packet differs after %u translations\n", n);
		kfree_skb(skb);
		return -1;
	}
	kfree_skb(skb);
	return t;
}

/* Nanoseconds for @n ip6_route_output() and dst_release(); -1 on no route. */
static s64 time_lookup(const struct in6_addr *base, unsigned int n,
		       unsigned int count)
{
	struct flowi6 fl6 = { .flowi6_oif = 0 };
	u32 low = be32_to_cpu(base->s6_addr32[3]);
	unsigned int i;
	u64 t0 = 0, t;

	fl6.daddr = *base;
	/* A first pass allocates each route's per-cpu copy: not timed. */
	for (i = 0; i < count + n; i++) {
		struct dst_entry *dst;
		int err;

		fl6.daddr.s6_addr32[3] = cpu_to_be32(low + i % count);
		dst = ip6_route_output(&init_net, NULL, &fl6);
		err = dst->error;
		dst_release(dst);
		if (err) {
			pr_err("ila_ref_bench: no route to %pI6c (%d)\n",
			       &fl6.daddr, err);
			return -1;
		}
		if (!(i % 4096))
			cond_resched();
		if (i + 1 == count)
			t0 = ktime_get_ns();
	}
	t = ktime_get_ns() - t0;
	return t;
}

static int __init ila_ref_bench_init(void)
{
	struct in6_addr base;
	s64 xlat_ns, lookup_ns;

	if (!lookup_count || !iterations ||
	    in6_pton(lookup_base, -1, base.s6_addr, -1, NULL) != 1) {
		pr_err("ila_ref_bench: bad parameters\n");
		return -EINVAL;
	}
	xlat_ns = time_xlat(iterations);
	lookup_ns = time_lookup(&base, iterations & ~1U, lookup_count);
	if (xlat_ns < 0 || lookup_ns < 0)
		return -EINVAL;
	/* Totals: the host divides, so no precision is lost here. */
	pr_info("ila_ref_bench: calls=%u xlat_total_ns=%lld lookup_total_ns=%lld lookup_count=%u\n",
		iterations & ~1U, xlat_ns, lookup_ns, lookup_count);
	return 0;
}

static void __exit ila_ref_bench_exit(void)
{
}

module_init(ila_ref_bench_init);
module_exit(ila_ref_bench_exit);
MODULE_DESCRIPTION("ila_ref translation micro-benchmark (make bench)");
MODULE_LICENSE("GPL");
