// SPDX-License-Identifier: GPL-2.0
/* One frame through a tap, laid out as asked; see rxtap.h. */
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

#include "rxtap.h"

/* The tap's address, and the made-up sender on its far side. */
static const uint8_t tap_mac[ETH_ALEN] = { 0x02, 0x11, 0xa0, 0x00, 0x00, 0x99 };
static const uint8_t peer_mac[ETH_ALEN] = { 0x02, 0x11, 0xa0, 0x00, 0x00, 0x98 };

static int parse_split(const char *text, struct rxtap_opts *o, char *err,
		       size_t errlen)
{
	char *end;

	o->nsplit = 0;
	while (*text) {
		if (o->nsplit == RXTAP_MAX_PIECES - 1) {
			snprintf(err, errlen, "at most %d split offsets",
				 RXTAP_MAX_PIECES - 1);
			return -1;
		}
		o->split[o->nsplit] = strtoul(text, &end, 10);
		if (end == text || (*end && *end != ',') ||
		    (o->nsplit && o->split[o->nsplit] <= o->split[o->nsplit - 1])) {
			snprintf(err, errlen, "split= wants increasing byte offsets: %s",
				 text);
			return -1;
		}
		o->nsplit++;
		text = *end ? end + 1 : end;
	}
	return 1;
}

int rxtap_option(const char *a, struct rxtap_opts *o, char *err, size_t errlen)
{
	if (!strncmp(a, "split=", 6))
		return parse_split(a + 6, o, err, errlen);
	if (!strcmp(a, "csum=none") || !strcmp(a, "csum=unnecessary")) {
		o->csum_valid = a[5] == 'u';
		return 1;
	}
	if (!strcmp(a, "gro=0") || !strcmp(a, "gro=1")) {
		o->gro = a[4] == '1';
		return 1;
	}
	if (!strcmp(a, "clone=0") || !strcmp(a, "clone=1")) {
		o->clone = a[6] == '1';
		return 1;
	}
	/* csum= is also a packet field (the checksum to send): not ours then */
	if (!strncmp(a, "split", 5) || !strncmp(a, "gro=", 4) || !strncmp(a, "clone=", 6)) {
		snprintf(err, errlen, "bad option %s (split=OFF,... csum=none|unnecessary "
			 "gro=0|1 clone=0|1)", a);
		return -1;
	}
	return 0;
}

static int fail(const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, strerror(errno));
	return 1;
}

static void write_sysctl(const char *name, const char *value)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", RXTAP_NAME, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, value, strlen(value)) < 0)
		fprintf(stderr, "rxtap: %s: %s\n", path, strerror(errno));
	close(fd);
}

/* The tap, up, with our address and GRO as asked; returns its fd. */
static int open_tap(const struct rxtap_opts *o, int *ifindex, char *err, size_t errlen)
{
	struct ethtool_value gro = { .cmd = ETHTOOL_SGRO, .data = (uint32_t)o->gro };
	struct ifreq ifr = { 0 };
	int fd, sk;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return fail("open /dev/net/tun", err, errlen), -1;
	strcpy(ifr.ifr_name, RXTAP_NAME);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_NAPI | IFF_NAPI_FRAGS;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return fail("TUNSETIFF " RXTAP_NAME " (IFF_NAPI_FRAGS)", err, errlen),
		       close(fd), -1;
	/* No DAD, router solicitations or autoconf noise from the tap. */
	write_sysctl("accept_dad", "0");
	write_sysctl("router_solicitations", "0");
	write_sysctl("autoconf", "0");

	sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return fail("socket", err, errlen), close(fd), -1;
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
	fail("configuring " RXTAP_NAME, err, errlen);
	close(sk);
	close(fd);
	return -1;
}

static int open_listener(int ifindex, char *err, size_t errlen)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL),
		.sll_ifindex = ifindex,
	};
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));

	if (fd < 0)
		return fail("socket(AF_PACKET)", err, errlen), -1;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return fail("bind(AF_PACKET)", err, errlen), close(fd), -1;
	return fd;
}

/*
 * The packet socket's copy of the frame we sent, against what we sent;
 * 1 when there is no copy to compare.
 */
static int check_clone(int fd, const uint8_t *frame, size_t len,
			rxtap_line_fn out, void *ctx)
{
	static uint8_t copy[65536 + ETH_HLEN];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct sockaddr_ll from;
	socklen_t fromlen;
	char line[160];
	ssize_t n;
	size_t i;

	for (;;) {
		if (poll(&p, 1, 1000) <= 0) {
			out(ctx, "clone: no copy received");
			return 1;
		}
		fromlen = sizeof(from);
		n = recvfrom(fd, copy, sizeof(copy), 0, (struct sockaddr *)&from, &fromlen);
		if (n < 0) {
			snprintf(line, sizeof(line), "clone: recvfrom(AF_PACKET): %s",
				 strerror(errno));
			out(ctx, line);
			return 1;
		}
		if (from.sll_pkttype != PACKET_OUTGOING)
			break;	/* our tap's own ND and MLD */
	}
	for (i = 0; i < len && i < (size_t)n; i++)
		if (copy[i] != frame[i])
			break;
	if (i == len && (size_t)n == len) {
		out(ctx, "clone: intact");
		return 0;
	}
	snprintf(line, sizeof(line),
		 "clone: modified at byte %zu (of %zd): sent 0x%02x, the copy holds 0x%02x",
		 i, n, i < len ? frame[i] : 0, i < (size_t)n ? copy[i] : 0);
	out(ctx, line);
	return 0;
}

int rxtap_deliver(const struct rxtap_opts *o, uint8_t *frame, size_t len,
		  rxtap_line_fn out, void *ctx, char *err, size_t errlen)
{
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	struct iovec iov[RXTAP_MAX_PIECES + 1];
	int tap, listener = -1, ifindex = 0, n, i, rc = 0;
	char line[128];
	size_t at;

	if (len < ETH_HLEN || (o->nsplit && (o->split[0] < ETH_HLEN ||
					      o->split[o->nsplit - 1] >= len))) {
		snprintf(err, errlen, "split offsets must lie in %d..%zu (the linear part "
			 "holds the Ethernet header at least)", ETH_HLEN, len - 1);
		return 2;
	}
	memcpy(frame, tap_mac, ETH_ALEN);
	memcpy(frame + ETH_ALEN, peer_mac, ETH_ALEN);
	if (o->csum_valid)
		vh.flags = VIRTIO_NET_HDR_F_DATA_VALID;

	tap = open_tap(o, &ifindex, err, errlen);
	if (tap < 0)
		return 1;
	if (o->clone) {
		listener = open_listener(ifindex, err, errlen);
		if (listener < 0) {
			close(tap);
			return 1;
		}
	}
	iov[0].iov_base = &vh;
	iov[0].iov_len = sizeof(vh);
	for (n = 1, at = 0, i = 0; i <= o->nsplit; i++, n++) {
		size_t end = i < o->nsplit ? o->split[i] : len;

		iov[n].iov_base = frame + at;
		iov[n].iov_len = end - at;
		at = end;
	}
	if (writev(tap, iov, n) != (ssize_t)(len + sizeof(vh))) {
		fail("writev to " RXTAP_NAME, err, errlen);
		if (listener >= 0)
			close(listener);
		close(tap);
		return 1;
	}
	snprintf(line, sizeof(line), "rx: %zu bytes in %d piece(s), csum %s, gro %s",
		 len, n - 1, o->csum_valid ? "unnecessary" : "none", o->gro ? "on" : "off");
	out(ctx, line);
	if (listener >= 0) {
		rc = check_clone(listener, frame, len, out, ctx);
		if (rc)
			snprintf(err, errlen, "the packet socket on " RXTAP_NAME
				 " received no copy of the frame");
		close(listener);
	}
	close(tap);
	return rc;
}
