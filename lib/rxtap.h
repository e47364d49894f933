/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Receiving one frame the way a NIC driver or GRO lays it out, instead of
 * the linear skb that virtio-net or veth gives: a tap opened with
 * IFF_NAPI | IFF_NAPI_FRAGS turns each piece of a write into its own page
 * fragment (drivers/net/tun.c: tun_napi_alloc_frags), so the bytes before
 * the first split offset are the skb's linear head. A virtio_net_hdr sets
 * the receive checksum state (csum=none: CHECKSUM_NONE; unnecessary:
 * VIRTIO_NET_HDR_F_DATA_VALID, CHECKSUM_UNNECESSARY); gro=0 turns GRO off
 * on the tap so that the layout reaches the protocols as written.
 *
 * clone=1 opens a packet socket on the tap first, as tcpdump does, so that
 * the stack's skb is a clone sharing its data with the socket's copy; the
 * copy is then compared with the frame sent.
 *
 * Shared by ila-rx (guest-init/ila-rx.c) and the kselftest runner.
 */
#ifndef ILA_LIB_RXTAP_H
#define ILA_LIB_RXTAP_H

#include <stddef.h>
#include <stdint.h>

#define RXTAP_NAME "ilarx0"
#define RXTAP_MAX_PIECES 16

struct rxtap_opts {
	size_t split[RXTAP_MAX_PIECES];
	int nsplit;
	int csum_valid;
	int gro;
	int clone;
};

/*
 * One option (split=OFF,OFF... csum=none|unnecessary gro=0|1 clone=0|1):
 * 1 when @arg is one and was taken, 0 when it is not an option (csum=auto
 * and csum=0x1234 are a packet's checksum field), -1 (with @err) when it is
 * one but malformed.
 */
int rxtap_option(const char *arg, struct rxtap_opts *o, char *err, size_t errlen);

/* Report lines ("rx: ...", "clone: intact" or "clone: modified at byte N ..."). */
typedef void (*rxtap_line_fn)(void *ctx, const char *line);

/*
 * Hand the stack @frame (an Ethernet frame; its addresses are replaced by
 * the tap's) through a new tap, laid out as @o says, then remove the tap.
 * The write returns once the stack has processed the packet (tun runs
 * napi_gro_frags() and napi_complete() in it). Returns 0, or 1 (2 for bad
 * options) with @err.
 */
int rxtap_deliver(const struct rxtap_opts *o, uint8_t *frame, size_t len,
		  rxtap_line_fn out, void *ctx, char *err, size_t errlen);

#endif
