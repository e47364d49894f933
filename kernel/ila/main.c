// SPDX-License-Identifier: GPL-2.0
/*
 * ila_ref: module init and exit only. The counters come first so that no
 * packet can reach the data path before they exist, and go last; the ICMPv6
 * error hook comes before the routes whose errors it translates.
 */
#include <linux/module.h>

#include "ila_ref.h"

static int __init ila_ref_init(void)
{
	int err;

	err = ila_ref_stats_init();
	if (err)
		goto err_stats;

	err = ila_ref_icmp_init();
	if (err)
		goto err_icmp;

	err = ila_ref_lwt_init();
	if (err)
		goto err_lwt;

	return 0;

err_lwt:
	ila_ref_icmp_exit();
err_icmp:
	ila_ref_stats_exit();
err_stats:
	return err;
}

static void __exit ila_ref_exit(void)
{
	ila_ref_lwt_exit();
	ila_ref_icmp_exit();
	ila_ref_stats_exit();
}

module_init(ila_ref_init);
module_exit(ila_ref_exit);
MODULE_DESCRIPTION("Identifier-Locator Addressing (reference implementation for the ILA conformance suite)");
MODULE_LICENSE("GPL");
