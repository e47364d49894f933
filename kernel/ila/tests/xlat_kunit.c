// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of ila_ref_xlat() on sk_buffs the packet path cannot easily
 * produce: each checksum state, paged and cloned skbs, and buffers with no
 * room to spare. Every expected checksum comes from a full recompute over
 * the bytes after the call (csum_partial() and csum_ipv6_magic()), never
 * from the incremental formula under test.
 *
 * The translation's source is included so that the test links its own copy:
 * this module is independent of ila_ref.ko and needs no exported symbol.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <net/ip6_checksum.h>

#include "../xlat.c"

#define TEST_PAYLOAD 24

static const struct in6_addr test_src = {
	{ { 0x24, 0x01, 0xdb, 0x00, 0, 0x20, 0x91, 0x1a,
	    0xfa, 0xce, 0, 0, 0, 0x25, 0, 0 } } };
/* 3333:0:0:1:5555:0:2:0, the seed's SIR address, routed to 2001:0:0:2 */
static const struct in6_addr test_dst = {
	{ { 0x33, 0x33, 0, 0, 0, 0, 0, 1, 0x55, 0x55, 0, 0, 0, 2, 0, 0 } } };
static const u8 test_loc[8] = { 0x20, 0x01, 0, 0, 0, 0, 0, 2 };

static struct ila_ref_params test_params(void)
{
	struct ila_ref_params p = { };
	__be64 loc;

	memcpy(&loc, test_loc, sizeof(loc));
	ila_ref_params_init(&p, loc);
	return p;
}

static unsigned int l4_hdr_len(u8 proto)
{
	return proto == IPPROTO_TCP ? sizeof(struct tcphdr) :
	       proto == IPPROTO_UDP ? sizeof(struct udphdr) :
				      sizeof(struct icmp6hdr);
}

static __sum16 *csum_field(struct sk_buff *skb, u8 proto)
{
	u8 *l4 = skb_transport_header(skb);

	return (__sum16 *)(l4 + (proto == IPPROTO_TCP ? offsetof(struct tcphdr, check) :
				proto == IPPROTO_UDP ? offsetof(struct udphdr, check) :
				offsetof(struct icmp6hdr, icmp6_cksum)));
}

/* The full checksum over the transport bytes for the current addresses. */
static __sum16 full_csum(struct sk_buff *skb, u8 proto)
{
	struct ipv6hdr *ip6h = ipv6_hdr(skb);
	unsigned int len = skb->len - skb_transport_offset(skb);
	__wsum sum = skb_checksum(skb, skb_transport_offset(skb), len, 0);

	return csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr, len, proto, sum);
}

/*
 * A linear IPv6 packet of @proto with a correct checksum, @head bytes of
 * headroom and no tailroom beyond what alloc_skb() rounds to.
 */
static struct sk_buff *build(struct kunit *test, u8 proto, unsigned int head)
{
	unsigned int l4len = l4_hdr_len(proto) + TEST_PAYLOAD;
	struct sk_buff *skb = alloc_skb(head + sizeof(struct ipv6hdr) + l4len,
					GFP_KERNEL);
	struct ipv6hdr *ip6h;
	u8 *l4;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, head);
	skb_reset_network_header(skb);
	ip6h = skb_put_zero(skb, sizeof(*ip6h));
	ip6h->version = 6;
	ip6h->payload_len = htons(l4len);
	ip6h->nexthdr = proto;
	ip6h->hop_limit = 64;
	ip6h->saddr = test_src;
	ip6h->daddr = test_dst;
	skb_set_transport_header(skb, skb->len);
	l4 = skb_put_zero(skb, l4len);
	for (i = 0; i < l4len; i++)
		l4[i] = (u8)(i * 7 + 1);
	if (proto == IPPROTO_UDP)
		((struct udphdr *)l4)->len = htons(l4len);
	*csum_field(skb, proto) = 0;
	*csum_field(skb, proto) = full_csum(skb, proto);
	skb->protocol = htons(ETH_P_IPV6);
	skb->ip_summed = CHECKSUM_NONE;
	return skb;
}

static void expect_translated(struct kunit *test, struct sk_buff *skb)
{
	KUNIT_EXPECT_EQ(test, memcmp(&ipv6_hdr(skb)->daddr, test_loc, 8), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&ipv6_hdr(skb)->daddr.s6_addr[8],
				     &test_dst.s6_addr[8], 8), 0);
}

static void xlat_checksum_none(struct kunit *test)
{
	static const u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMPV6 };
	struct ila_ref_params p = test_params();
	int i;

	for (i = 0; i < ARRAY_SIZE(protos); i++) {
		struct sk_buff *skb = build(test, protos[i], 64);

		KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
		expect_translated(test, skb);
		KUNIT_EXPECT_EQ_MSG(test, full_csum(skb, protos[i]), 0,
				    "protocol %u", protos[i]);
		KUNIT_EXPECT_EQ(test, (int)skb->ip_summed, CHECKSUM_NONE);
		kfree_skb(skb);
	}
}

static void xlat_checksum_unnecessary(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_TCP, 64);

	skb->ip_summed = CHECKSUM_UNNECESSARY;
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_TCP), 0);
	KUNIT_EXPECT_EQ(test, (int)skb->ip_summed, CHECKSUM_UNNECESSARY);
	kfree_skb(skb);
}

/* skb->csum covers skb->data..end and must still do so after the rewrite. */
static void xlat_checksum_complete(struct kunit *test)
{
	static const u8 protos[] = { IPPROTO_TCP, IPPROTO_NONE };
	struct ila_ref_params p = test_params();
	int i;

	for (i = 0; i < ARRAY_SIZE(protos); i++) {
		struct sk_buff *skb = build(test, IPPROTO_TCP, 64);

		ipv6_hdr(skb)->nexthdr = protos[i];
		skb->ip_summed = CHECKSUM_COMPLETE;
		skb->csum = csum_partial(skb->data, skb->len, 0);
		ila_ref_xlat(skb, &p);
		expect_translated(test, skb);
		KUNIT_EXPECT_EQ_MSG(test, csum_fold(skb->csum),
				    csum_fold(csum_partial(skb->data, skb->len, 0)),
				    "next header %u", protos[i]);
		kfree_skb(skb);
	}
}

/* The field holds the pseudo-header sum; the device completes the rest. */
static void xlat_checksum_partial(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_TCP, 64);
	struct ipv6hdr *ip6h = ipv6_hdr(skb);
	unsigned int len = skb->len - skb_transport_offset(skb);
	__sum16 *check = csum_field(skb, IPPROTO_TCP);

	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = skb_transport_header(skb) - skb->head;
	skb->csum_offset = offsetof(struct tcphdr, check);
	*check = ~csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr, len, IPPROTO_TCP, 0);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	expect_translated(test, skb);
	/* Complete it as skb_checksum_help() would, then verify it in full. */
	*check = csum_fold(skb_checksum(skb, skb_transport_offset(skb), len, 0));
	KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_TCP), 0);
	kfree_skb(skb);
}

/*
 * A UDP tunnel's outer header over an offloaded inner one: the skb is
 * CHECKSUM_PARTIAL for the inner field, while the outer UDP checksum is
 * whole (local checksum offload) or zero (udp6zerocsumtx). Here the inner
 * field is the last 2 payload bytes, which the translation must not touch.
 */
static void xlat_tunnel_outer_checksum(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	int zero;

	for (zero = 0; zero <= 1; zero++) {
		struct sk_buff *skb = build(test, IPPROTO_UDP, 64);
		__sum16 *outer = csum_field(skb, IPPROTO_UDP);
		u8 *inner = skb->data + skb->len - 2;
		u8 seed[2];

		if (zero)
			*outer = 0;
		memcpy(seed, inner, 2);
		skb->ip_summed = CHECKSUM_PARTIAL;
		skb->csum_start = inner - skb->head - 8;
		skb->csum_offset = 8;
		KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p),
				zero ? ILA_REF_XLAT_NOCSUM : ILA_REF_XLAT_CSUM);
		expect_translated(test, skb);
		if (zero)
			KUNIT_EXPECT_EQ(test, *outer, 0);
		else
			KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_UDP), 0);
		KUNIT_EXPECT_EQ(test, memcmp(inner, seed, 2), 0);
		kfree_skb(skb);
	}
}

static void xlat_udp_zero_rules(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_UDP, 64);

	*csum_field(skb, IPPROTO_UDP) = 0;	/* no checksum: stays none */
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_NOCSUM);
	KUNIT_EXPECT_EQ(test, *csum_field(skb, IPPROTO_UDP), 0);
	kfree_skb(skb);
}

/*
 * The transport header in a page fragment, and the linear part (the IPv6
 * header) ending exactly at the end of its buffer: pulling the header in
 * must reallocate the head, so a pointer kept across the pull would be
 * stale (KASAN reports the write).
 */
static void xlat_paged_transport_header(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *ref = build(test, IPPROTO_TCP, 64);
	unsigned int l4len = ref->len - sizeof(struct ipv6hdr);
	struct sk_buff *skb = alloc_skb(64 + sizeof(struct ipv6hdr), GFP_KERNEL);
	struct page *page = alloc_page(GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	KUNIT_ASSERT_NOT_NULL(test, page);
	skb_reserve(skb, skb_tailroom(skb) - sizeof(struct ipv6hdr));
	skb_reset_network_header(skb);
	skb_put_data(skb, ref->data, sizeof(struct ipv6hdr));
	KUNIT_ASSERT_EQ(test, skb_tailroom(skb), 0);
	memcpy(page_address(page), ref->data + sizeof(struct ipv6hdr), l4len);
	skb_fill_page_desc(skb, 0, page, 0, l4len);
	skb->len += l4len;
	skb->data_len += l4len;
	skb->truesize += PAGE_SIZE;
	skb_set_transport_header(skb, sizeof(struct ipv6hdr));
	skb->protocol = htons(ETH_P_IPV6);
	KUNIT_ASSERT_TRUE(test, skb_is_nonlinear(skb));

	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	expect_translated(test, skb);
	KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_TCP), 0);
	kfree_skb(skb);
	kfree_skb(ref);
}

/* A clone shares the data: writing must copy it first, leaving the clone's. */
static void xlat_cloned_skb(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_UDP, 64);
	struct sk_buff *clone = skb_clone(skb, GFP_KERNEL);
	__sum16 before;

	KUNIT_ASSERT_NOT_NULL(test, clone);
	before = *csum_field(clone, IPPROTO_UDP);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	expect_translated(test, skb);
	KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_UDP), 0);
	KUNIT_EXPECT_EQ(test, memcmp(&ipv6_hdr(clone)->daddr, &test_dst, 16), 0);
	KUNIT_EXPECT_EQ(test, *csum_field(clone, IPPROTO_UDP), before);
	kfree_skb(clone);
	kfree_skb(skb);
}

/* No headroom, the buffer cut right after the checksum field, and too short. */
static void xlat_room_edges(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_TCP, 0);
	unsigned int cut = sizeof(struct ipv6hdr) + offsetof(struct tcphdr, check) + 2;
	u8 before[40];

	KUNIT_EXPECT_EQ(test, skb_headroom(skb), 0);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	KUNIT_EXPECT_EQ(test, full_csum(skb, IPPROTO_TCP), 0);
	kfree_skb(skb);

	/* The checksum field is the last thing in the packet: still adjusted. */
	skb = build(test, IPPROTO_TCP, 0);
	skb_trim(skb, cut);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_CSUM);
	kfree_skb(skb);

	/* One byte short of the field: only the destination changes. */
	skb = build(test, IPPROTO_TCP, 0);
	skb_trim(skb, cut - 1);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_NOCSUM);
	expect_translated(test, skb);
	kfree_skb(skb);

	/* A truncated IPv6 header is dropped, untouched. */
	skb = build(test, IPPROTO_TCP, 0);
	skb_trim(skb, sizeof(struct ipv6hdr) - 1);
	memcpy(before, skb->data, skb->len);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_DROP_BAD_IPV6);
	KUNIT_EXPECT_EQ(test, memcmp(before, skb->data, skb->len), 0);
	kfree_skb(skb);
}

static void xlat_not_ipv6_and_noop(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_TCP, 64);
	u8 before[128];

	skb->protocol = htons(ETH_P_IP);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_DROP_NOT_IPV6);
	skb->protocol = htons(ETH_P_IPV6);
	memcpy(&ipv6_hdr(skb)->daddr, test_loc, 8);
	memcpy(before, skb->data, skb->len);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_NOOP);
	KUNIT_EXPECT_EQ(test, memcmp(before, skb->data, skb->len), 0);
	kfree_skb(skb);
}

/* The one's complement sum of an address, folded. */
static u16 addr_sum(const struct in6_addr *a)
{
	return (__force u16)csum_fold(csum_partial(a, sizeof(*a), 0));
}

/*
 * Checksum-neutral mapping: the checksum field is left as it was and is
 * still right, the address's sum is kept, the C-bit flips for neutral-map
 * only, and translating back gives the address it began with.
 */
static void xlat_neutral_modes(struct kunit *test)
{
	static const u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMPV6 };
	static const u8 modes[] = { ILA_CSUM_NEUTRAL_MAP, ILA_CSUM_NEUTRAL_MAP_AUTO };
	/* 3333:0:0:1:2000:0:2:1234, type LUID with the C-bit clear */
	static const struct in6_addr sir = {
		{ { 0x33, 0x33, 0, 0, 0, 0, 0, 1, 0x20, 0, 0, 0, 0, 2, 0x12, 0x34 } } };
	int i, m;

	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		for (i = 0; i < ARRAY_SIZE(protos); i++) {
			struct ila_ref_params p = test_params(), back = { };
			struct sk_buff *skb = build(test, protos[i], 64);
			struct in6_addr *daddr = &ipv6_hdr(skb)->daddr;
			__sum16 sent;

			*daddr = sir;
			*csum_field(skb, protos[i]) = 0;
			sent = full_csum(skb, protos[i]);
			*csum_field(skb, protos[i]) = sent;
			p.csum_mode = modes[m];
			KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_NEUTRAL);
			KUNIT_EXPECT_EQ(test, memcmp(daddr, test_loc, 8), 0);
			KUNIT_EXPECT_EQ(test, addr_sum(daddr), addr_sum(&sir));
			KUNIT_EXPECT_EQ(test, *csum_field(skb, protos[i]), sent);
			KUNIT_EXPECT_EQ_MSG(test, full_csum(skb, protos[i]), 0,
					    "mode %u protocol %u", modes[m], protos[i]);
			KUNIT_EXPECT_EQ(test, daddr->s6_addr[8] ^ sir.s6_addr[8],
					modes[m] == ILA_CSUM_NEUTRAL_MAP ? 0x10 : 0);
			KUNIT_EXPECT_EQ(test, memcmp(&daddr->s6_addr[9], &sir.s6_addr[9], 5), 0);

			ila_ref_params_init(&back, *(const __be64 *)&sir);
			back.csum_mode = modes[m];
			KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &back), ILA_REF_XLAT_NEUTRAL);
			KUNIT_EXPECT_TRUE(test, ipv6_addr_equal(daddr, &sir));
			kfree_skb(skb);
		}
	}
}

/*
 * An identifier that ends in zero: one's complement has two forms of zero,
 * and the adjustment writes 0x0000, so that a round trip gives back the
 * address it began with, not ...:ffff.
 */
static void xlat_neutral_zero_word(struct kunit *test)
{
	struct ila_ref_params p = test_params(), back = { };
	struct in6_addr a = test_dst, sir = test_dst;
	int m;

	for (m = ILA_CSUM_NEUTRAL_MAP; m <= ILA_CSUM_NEUTRAL_MAP_AUTO; m += 2) {
		p.csum_mode = m;
		KUNIT_EXPECT_EQ(test, (u32)(__force u32)ila_ref_xlat_addr(&a, &p), 0U);
		KUNIT_EXPECT_EQ(test, addr_sum(&a), addr_sum(&sir));
		ila_ref_params_init(&back, *(const __be64 *)&sir);
		back.csum_mode = m;
		ila_ref_xlat_addr(&a, &back);
		KUNIT_EXPECT_TRUE_MSG(test, ipv6_addr_equal(&a, &sir), "mode %d: %pI6c", m, &a);
	}
}

/* no-action writes the locator alone; a CHECKSUM_COMPLETE sum follows it. */
static void xlat_no_action(struct kunit *test)
{
	struct ila_ref_params p = test_params();
	struct sk_buff *skb = build(test, IPPROTO_TCP, 64);
	__sum16 sent = *csum_field(skb, IPPROTO_TCP);

	p.csum_mode = ILA_CSUM_NO_ACTION;
	skb->ip_summed = CHECKSUM_COMPLETE;
	skb->csum = skb_checksum(skb, 0, skb->len, 0);
	KUNIT_EXPECT_EQ(test, ila_ref_xlat(skb, &p), ILA_REF_XLAT_NOCSUM);
	expect_translated(test, skb);
	KUNIT_EXPECT_EQ(test, *csum_field(skb, IPPROTO_TCP), sent);
	KUNIT_EXPECT_EQ(test, csum_fold(skb->csum),
			csum_fold(skb_checksum(skb, 0, skb->len, 0)));
	kfree_skb(skb);
}

static struct kunit_case ila_ref_xlat_cases[] = {
	KUNIT_CASE(xlat_checksum_none),
	KUNIT_CASE(xlat_checksum_unnecessary),
	KUNIT_CASE(xlat_checksum_complete),
	KUNIT_CASE(xlat_checksum_partial),
	KUNIT_CASE(xlat_tunnel_outer_checksum),
	KUNIT_CASE(xlat_udp_zero_rules),
	KUNIT_CASE(xlat_paged_transport_header),
	KUNIT_CASE(xlat_cloned_skb),
	KUNIT_CASE(xlat_room_edges),
	KUNIT_CASE(xlat_not_ipv6_and_noop),
	KUNIT_CASE(xlat_neutral_modes),
	KUNIT_CASE(xlat_neutral_zero_word),
	KUNIT_CASE(xlat_no_action),
	{}
};

static struct kunit_suite ila_ref_xlat_suite = {
	.name = "ila_ref_xlat",
	.test_cases = ila_ref_xlat_cases,
};
kunit_test_suite(ila_ref_xlat_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests of ila_ref's translation");
