// SPDX-License-Identifier: GPL-2.0
/*
 * ila-rx: hand the guest's stack one received packet laid out the way a NIC
 * driver or GRO would, instead of the linear skb that virtio-net copies.
 *
 *   ila-rx [split=OFF,OFF...] [csum=none|unnecessary] [gro=0|1] [clone=0|1]
 *          FIELD=VALUE...
 *
 * The packet (fields of lib/pkt.h, as ila-inject raw takes them) is put in
 * an Ethernet frame to a tap device opened with IFF_NAPI | IFF_NAPI_FRAGS,
 * so that each piece of the frame becomes its own page fragment: the bytes
 * before the first split offset are the skb's linear head, each later piece
 * one frag (drivers/net/tun.c: tun_napi_alloc_frags). A virtio_net_hdr sets
 * the receive checksum state: csum=none gives CHECKSUM_NONE, unnecessary
 * (VIRTIO_NET_HDR_F_DATA_VALID) CHECKSUM_UNNECESSARY. gro=0 (the default)
 * turns GRO off on the tap, so that the layout reaches the protocols as
 * written; gro=1 lets GRO pull the headers first, as it does on a real NIC.
 *
 * clone=1 opens a packet socket on the tap first, as tcpdump does, so that
 * the stack's skb is a clone sharing its data with the socket's copy. After
 * the write, the copy is compared with the frame sent: "clone: intact", or
 * "clone: modified at byte N" when something wrote into shared data.
 *
 * The write returns once the stack has processed the packet (tun runs
 * napi_gro_frags() and napi_complete() in it), so the guest's answer, if
 * any, is on its way out of eth0 or eth1 when ila-rx exits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../lib/pkt.h"

#define TAP_NAME "ilarx0"
#define MAX_PIECES 16

/* The tap's address, and the made-up sender on its far side. */
static const uint8_t tap_mac[ETH_ALEN] = { 0x02, 0x11, 0xa0, 0x00, 0x00, 0x99 };
static const uint8_t peer_mac[ETH_ALEN] = { 0x02, 0x11, 0xa0, 0x00, 0x00, 0x98 };

struct rx_opts {
	size_t split[MAX_PIECES];
	int nsplit;
	int csum_valid;
	int gro;
	int clone;
};

static int usage(void)
{
	fprintf(stderr, "usage: ila-rx [split=OFF,...] [csum=none|unnecessary] "
			"[gro=0|1] [clone=0|1] FIELD=VALUE...\n");
	return 2;
}

static int fail(const char *what)
{
	fprintf(stderr, "ila-rx: %s: %s\n", what, strerror(errno));
	return 1;
}

static int parse_split(const char *text, struct rx_opts *o)
{
	char *end;

	while (*text) {
		if (o->nsplit == MAX_PIECES - 1) {
			fprintf(stderr, "ila-rx: at most %d split offsets\n",
				MAX_PIECES - 1);
			return -1;
		}
		o->split[o->nsplit] = strtoul(text, &end, 10);
		if (end == text || (*end && *end != ',') ||
		    (o->nsplit && o->split[o->nsplit] <= o->split[o->nsplit - 1])) {
			fprintf(stderr, "ila-rx: split= wants increasing byte offsets: %s\n",
				text);
			return -1;
		}
		o->nsplit++;
		text = *end ? end + 1 : end;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct rx_opts *o,
		      struct pkt_spec *spec)
{
	char err[256];
	int i;

	pkt_spec_init(spec);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "split=", 6)) {
			if (parse_split(a + 6, o))
				return -1;
		} else if (!strcmp(a, "csum=none")) {
			o->csum_valid = 0;
		} else if (!strcmp(a, "csum=unnecessary")) {
			o->csum_valid = 1;
		} else if (!strcmp(a, "gro=0") || !strcmp(a, "gro=1")) {
			o->gro = a[4] == '1';
		} else if (!strcmp(a, "clone=0") || !strcmp(a, "clone=1")) {
			o->clone = a[6] == '1';
		} else if (pkt_spec_set(spec, a, err, sizeof(err))) {
			fprintf(stderr, "ila-rx: %s\n", err);
			return -1;
		}
	}
	return 0;
}

static void write_sysctl(const char *name, const char *value)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", TAP_NAME, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, value, strlen(value)) < 0)
		fprintf(stderr, "ila-rx: %s: %s\n", path, strerror(errno));
	close(fd);
}

/* The tap, up, with our address and GRO as asked; returns its fd. */
static int open_tap(const struct rx_opts *o, int *ifindex)
{
	struct ethtool_value gro = { .cmd = ETHTOOL_SGRO, .data = (uint32_t)o->gro };
	struct ifreq ifr = { 0 };
	int fd, sk;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail("open /dev/net/tun"), -1;
	strcpy(ifr.ifr_name, TAP_NAME);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_NAPI | IFF_NAPI_FRAGS;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return fail("TUNSETIFF " TAP_NAME " (IFF_NAPI_FRAGS)"), close(fd), -1;
	/* No DAD, router solicitations or autoconf noise from the tap. */
	write_sysctl("accept_dad", "0");
	write_sysctl("router_solicitations", "0");
	write_sysctl("autoconf", "0");

	sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return fail("socket"), close(fd), -1;
	ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
	memcpy(ifr.ifr_hwaddr.sa_data, tap_mac, ETH_ALEN);
	if (ioctl(sk, SIOCSIFHWADDR, &ifr) < 0)
		goto err;
	ifr.ifr_data = (char *)&gro;
	if (ioctl(sk, SIOCETHTOOL, &ifr) < 0)
		goto err;
	if (ioctl(sk, SIOCGIFFLAGS, &ifr) < 0)
		goto err;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(sk, SIOCSIFFLAGS, &ifr) < 0 || ioctl(sk, SIOCGIFINDEX, &ifr) < 0)
		goto err;
	*ifindex = ifr.ifr_ifindex;
	close(sk);
	return fd;
err:
	fail("configuring " TAP_NAME);
	close(sk);
	close(fd);
	return -1;
}

static int open_listener(int ifindex)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (fd < 0)
		return fail("socket(AF_PACKET)"), -1;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return fail("bind(AF_PACKET)"), close(fd), -1;
	return fd;
}

/* The packet socket's copy of the frame we sent, against what we sent. */
static int check_clone(int fd, const uint8_t *frame, size_t len)
{
	static uint8_t copy[PKT_MAX + ETH_HLEN];
	struct sockaddr_ll from;
	socklen_t fromlen;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	size_t i;

	for (;;) {
		if (poll(&p, 1, 1000) <= 0) {
			printf("clone: no copy received\n");
			return 1;
		}
		fromlen = sizeof(from);
		n = recvfrom(fd, copy, sizeof(copy), 0, (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			return fail("recvfrom(AF_PACKET)");
		if (from.sll_pkttype != PACKET_OUTGOING)
			break;	/* our tap's own ND and MLD */
	}
	for (i = 0; i < len && i < (size_t)n; i++)
		if (copy[i] != frame[i])
			break;
	if (i == len && (size_t)n == len) {
		printf("clone: intact\n");
		return 0;
	}
	printf("clone: modified at byte %zu (of %zd): sent 0x%02x, the copy holds 0x%02x\n",
	       i, n, i < len ? frame[i] : 0, i < (size_t)n ? copy[i] : 0);
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t frame[PKT_MAX + ETH_HLEN];
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	struct iovec iov[MAX_PIECES + 1];
	struct rx_opts o = { 0 };
	struct pkt_spec spec;
	char err[256];
	int tap, listener = -1, ifindex = 0, n, i, rc = 0;
	size_t len, at;
	long plen;

	if (argc < 2 || parse_args(argc, argv, &o, &spec))
		return usage();
	plen = pkt_build(&spec, frame + ETH_HLEN, sizeof(frame) - ETH_HLEN, err, sizeof(err));
	if (plen < 0) {
		fprintf(stderr, "ila-rx: %s\n", err);
		return 2;
	}
	memcpy(frame, tap_mac, ETH_ALEN);
	memcpy(frame + ETH_ALEN, peer_mac, ETH_ALEN);
	frame[12] = 0x86;
	frame[13] = 0xdd;
	len = (size_t)plen + ETH_HLEN;
	if (o.nsplit && (o.split[0] < ETH_HLEN || o.split[o.nsplit - 1] >= len)) {
		fprintf(stderr, "ila-rx: split offsets must lie in %d..%zu (the linear part "
				"holds the Ethernet header at least)\n", ETH_HLEN, len - 1);
		return 2;
	}
	if (o.csum_valid)
		vh.flags = VIRTIO_NET_HDR_F_DATA_VALID;

	tap = open_tap(&o, &ifindex);
	if (tap < 0)
		return 1;
	if (o.clone) {
		listener = open_listener(ifindex);
		if (listener < 0)
			return 1;
	}
	iov[0].iov_base = &vh;
	iov[0].iov_len = sizeof(vh);
	for (n = 1, at = 0, i = 0; i <= o.nsplit; i++, n++) {
		size_t end = i < o.nsplit ? o.split[i] : len;

		iov[n].iov_base = frame + at;
		iov[n].iov_len = end - at;
		at = end;
	}
	if (writev(tap, iov, n) != (ssize_t)(len + sizeof(vh)))
		return fail("writev to " TAP_NAME);
	printf("rx: %zu bytes in %d piece(s), csum %s, gro %s\n", len, n - 1,
	       o.csum_valid ? "unnecessary" : "none", o.gro ? "on" : "off");
	if (listener >= 0)
		rc = check_clone(listener, frame, len);
	close(tap);
	return rc;
}
