// SPDX-License-Identifier: GPL-2.0
/*
 * ila-rx: hand the guest's stack one received packet laid out the way a NIC
 * driver or GRO would, instead of the linear skb that virtio-net copies.
 *
 *   ila-rx [split=OFF,OFF...] [csum=none|unnecessary] [gro=0|1] [clone=0|1]
 *          FIELD=VALUE...
 *
 * The packet (fields of lib/pkt.h, as ila-inject raw takes them) goes in an
 * Ethernet frame to a tap opened with IFF_NAPI_FRAGS, each piece its own
 * page fragment (lib/rxtap.h says how, and what each option does).
 *
 * With clone=1 it prints "clone: intact", or "clone: modified at byte N"
 * when something wrote into the data the packet socket's copy shares. The
 * write returns once the stack has processed the packet, so the guest's
 * answer, if any, is on its way out of eth0 or eth1 when ila-rx exits.
 */
#include <net/ethernet.h>
#include <stdio.h>
#include <string.h>

#include "../lib/pkt.h"
#include "../lib/rxtap.h"

static int usage(void)
{
	fprintf(stderr, "usage: ila-rx [split=OFF,...] [csum=none|unnecessary] "
			"[gro=0|1] [clone=0|1] FIELD=VALUE...\n");
	return 2;
}

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
}

int main(int argc, char **argv)
{
	static uint8_t frame[PKT_MAX + ETH_HLEN];
	struct rxtap_opts o = { 0 };
	struct pkt_spec spec;
	char err[256];
	long plen;
	int i, rc;

	if (argc < 2)
		return usage();
	pkt_spec_init(&spec);
	for (i = 1; i < argc; i++) {
		rc = rxtap_option(argv[i], &o, err, sizeof(err));
		if (rc == 0 && pkt_spec_set(&spec, argv[i], err, sizeof(err)))
			rc = -1;
		if (rc < 0) {
			fprintf(stderr, "ila-rx: %s\n", err);
			return usage();
		}
	}
	plen = pkt_build(&spec, frame + ETH_HLEN, sizeof(frame) - ETH_HLEN, err, sizeof(err));
	if (plen < 0) {
		fprintf(stderr, "ila-rx: %s\n", err);
		return 2;
	}
	frame[12] = 0x86;
	frame[13] = 0xdd;
	rc = rxtap_deliver(&o, frame, (size_t)plen + ETH_HLEN, print_line, NULL,
			   err, sizeof(err));
	if (rc)
		fprintf(stderr, "ila-rx: %s\n", err);
	return rc;
}
