// SPDX-License-Identifier: GPL-2.0
/*
 * ila_ref: module init and exit only. The counters come first so that no
 * packet can reach the data path before they exist, and go last; the
 * FIB notifier and the PRE_ROUTING hook come before the routes whose packets
 * they translate.
 */
#include <linux/module.h>

#include "ila_ref.h"

static int __init ila_ref_init(void)
{
	int err;

	err = ila_ref_stats_init();
	if (err)
		goto err_stats;

	err = ila_ref_early_init();
	if (err)
		goto err_early;

	err = ila_ref_hook_init();
	if (err)
		goto err_hook;

	err = ila_ref_lwt_init();
	if (err)
		goto err_lwt;

	return 0;

err_lwt:
	ila_ref_hook_exit();
err_hook:
	ila_ref_early_exit();
err_early:
	ila_ref_stats_exit();
err_stats:
	return err;
}

static void __exit ila_ref_exit(void)
{
	ila_ref_lwt_exit();
	ila_ref_hook_exit();
	ila_ref_early_exit();
	ila_ref_stats_exit();
}

module_init(ila_ref_init);
module_exit(ila_ref_exit);
MODULE_DESCRIPTION("Identifier-Locator Addressing (reference implementation for the ILA conformance suite)");
MODULE_LICENSE("GPL");
