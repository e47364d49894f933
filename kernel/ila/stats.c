// SPDX-License-Identifier: GPL-2.0
/*
 * Per-network-namespace counters of what the data path did, so that a test
 * can account for every packet: /proc/net/ila_ref_stats, one "name value"
 * line per outcome and one for the input packets translated ahead of the
 * route lookup, then the size of the ICMPv6 errors' reverse map.
 */
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "ila_ref.h"

struct ila_ref_net {
	u64 __percpu *counters;	/* ILA_REF_COUNTER_MAX per CPU */
};

static unsigned int ila_ref_net_id __read_mostly;

static const char *const ila_ref_counter_names[ILA_REF_COUNTER_MAX] = {
	[ILA_REF_XLAT_CSUM]	= "translated_csum_adjusted",
	[ILA_REF_XLAT_NOCSUM]	= "translated_csum_untouched",
	[ILA_REF_XLAT_NEUTRAL]	= "translated_csum_neutral",
	[ILA_REF_XLAT_NOOP]	= "translated_noop",
	[ILA_REF_ICMP_ERROR]	= "icmp_error_translated",
	[ILA_REF_DROP_NOT_IPV6]	= "dropped_not_ipv6",
	[ILA_REF_DROP_BAD_IPV6]	= "dropped_bad_ipv6_header",
	[ILA_REF_DROP_NOMEM]	= "dropped_nomem",
	[ILA_REF_EARLY_INPUT]	= "input_translated_before_lookup",
};

u64 __percpu *ila_ref_counters(struct net *net)
{
	struct ila_ref_net *in = net_generic(net, ila_ref_net_id);

	return in->counters;
}

void ila_ref_count(struct net *net, unsigned int counter)
{
	this_cpu_inc(ila_ref_counters(net)[counter]);
}

unsigned int ila_ref_hash_entries(struct hlist_head *table, unsigned int size,
				  const struct net *net)
{
	struct ila_ref_hentry *h;
	unsigned int n = 0, bkt;

	rcu_read_lock();
	for (bkt = 0; bkt < size; bkt++)
		hlist_for_each_entry_rcu(h, &table[bkt], node)
			n += net_eq(read_pnet(&h->net), net);
	rcu_read_unlock();
	return n;
}

static int ila_ref_stats_show(struct seq_file *seq, void *v)
{
	struct ila_ref_net *in = net_generic(seq_file_single_net(seq),
					     ila_ref_net_id);
	int cpu, i;

	for (i = 0; i < ILA_REF_COUNTER_MAX; i++) {
		u64 sum = 0;

		for_each_possible_cpu(cpu)
			sum += per_cpu_ptr(in->counters, cpu)[i];
		seq_printf(seq, "%s %llu\n", ila_ref_counter_names[i], sum);
	}
	/* Not a counter: the output routes whose ICMPv6 errors come back. */
	seq_printf(seq, "icmp_reverse_map_entries %u\n",
		   ila_ref_rmap_entries(seq_file_single_net(seq)));
	/* Nor this: the local /128 routes input may translate ahead of. */
	seq_printf(seq, "input_early_routes %u\n",
		   ila_ref_early_entries(seq_file_single_net(seq)));
	return 0;
}

static int __net_init ila_ref_net_init(struct net *net)
{
	struct ila_ref_net *in = net_generic(net, ila_ref_net_id);

	in->counters = __alloc_percpu(sizeof(u64) * ILA_REF_COUNTER_MAX,
				      __alignof__(u64));
	if (!in->counters)
		return -ENOMEM;

	if (!proc_create_net_single("ila_ref_stats", 0444, net->proc_net,
				    ila_ref_stats_show, NULL)) {
		free_percpu(in->counters);
		return -ENOMEM;
	}
	return 0;
}

/*
 * A subsystem's exit runs after the namespace's devices are unregistered
 * (register_pernet_device() ops exit first), so no packet of its routes,
 * which hold a pointer to the counters, can still be on the data path.
 */
static void __net_exit ila_ref_net_exit(struct net *net)
{
	struct ila_ref_net *in = net_generic(net, ila_ref_net_id);

	remove_proc_entry("ila_ref_stats", net->proc_net);
	free_percpu(in->counters);
}

static struct pernet_operations ila_ref_net_ops = {
	.init = ila_ref_net_init,
	.exit = ila_ref_net_exit,
	.id   = &ila_ref_net_id,
	.size = sizeof(struct ila_ref_net),
};

int ila_ref_stats_init(void)
{
	return register_pernet_subsys(&ila_ref_net_ops);
}

void ila_ref_stats_exit(void)
{
	unregister_pernet_subsys(&ila_ref_net_ops);
}
