// SPDX-License-Identifier: GPL-2.0
/*
 * The far side of the DUT's NICs: a packet socket on each veth peer sends
 * the frames the host would, and captures what the DUT sends, as the host
 * harness's QEMU sockets do. A case's capture ends at a fence:
 *
 *   output   the DUT's own "ila-mark N" datagram to the far side's port 9 on
 *            eth0: every frame sent before it has arrived (a veth hands a
 *            frame to its peer before the send returns)
 *   input,   the far side's echo request (identifier 0xf3ce, sequence N) on
 *   forward  the NIC the packet came in by, and the DUT's reply to it
 *
 * The sockets read the virtio-net header (PACKET_VNET_HDR) so that a frame
 * whose transmit checksum was offloaded (CHECKSUM_PARTIAL on eth1, the
 * e1000's stand-in) gets it completed here, as the NIC completes it on the
 * wire; a NIC model that pads short frames has them padded to 60 bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/csum.h"
#include "../../lib/send.h"
#include "runner.h"

#define FENCE_ECHO_ID 0xf3ce	/* conformance/ilaconf/topology.py */
#define MARK_PORT 9
#define ETH_ZLEN_NO_FCS 60
#define FENCE_WAIT_MS 10000
#define FRAME_MAX 65536

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

int wire_open(struct ks_topology *t, char *err, size_t errlen)
{
	int i, one = 1;

	for (i = 0; i < t->nnics; i++) {
		struct sockaddr_ll sll = {
			.sll_family = AF_PACKET,
			.sll_protocol = htons(ETH_P_ALL),
			.sll_ifindex = (int)if_nametoindex(t->nic[i].peer),
		};
		int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
				htons(ETH_P_ALL));

		if (fd < 0 || !sll.sll_ifindex ||
		    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
		    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
		    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
			snprintf(err, errlen, "packet socket on %s: %s", t->nic[i].peer,
				 strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		t->nic[i].fd = fd;
	}
	return 0;
}

void capture_free(struct ks_capture *cap)
{
	int i, j;

	for (i = 0; i < KS_MAX_NICS; i++) {
		for (j = 0; j < cap->n[i]; j++)
			free(cap->frame[i][j]);
		free(cap->frame[i]);
		free(cap->len[i]);
	}
	memset(cap, 0, sizeof(*cap));
}

static void capture_add(struct ks_capture *cap, int nic, const uint8_t *f, size_t len)
{
	if (cap->n[nic] == cap->cap[nic]) {
		cap->cap[nic] = cap->cap[nic] ? 2 * cap->cap[nic] : 8;
		cap->frame[nic] = realloc(cap->frame[nic], (size_t)cap->cap[nic] * sizeof(uint8_t *));
		cap->len[nic] = realloc(cap->len[nic], (size_t)cap->cap[nic] * sizeof(size_t));
		if (!cap->frame[nic] || !cap->len[nic]) {
			fprintf(stderr, "ila_conformance: out of memory\n");
			exit(1);
		}
	}
	cap->frame[nic][cap->n[nic]] = xcalloc(len, 1);
	memcpy(cap->frame[nic][cap->n[nic]], f, len);
	cap->len[nic][cap->n[nic]++] = len;
}

int wire_inject(struct ks_topology *t, int nic, const uint8_t *frame, size_t len,
		char *err, size_t errlen)
{
	struct virtio_net_hdr vh = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	static uint8_t buf[sizeof(vh) + FRAME_MAX];

	if (len > FRAME_MAX) {
		snprintf(err, errlen, "a frame of %zu bytes is too long", len);
		return -1;
	}
	memcpy(buf, &vh, sizeof(vh));
	memcpy(buf + sizeof(vh), frame, len);
	if (send(t->nic[nic].fd, buf, sizeof(vh) + len, 0) != (ssize_t)(sizeof(vh) + len)) {
		snprintf(err, errlen, "send on %s: %s", t->nic[nic].peer, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The checksum the NIC writes for a CHECKSUM_PARTIAL frame: the sum from
 * csum_start (the field holds the pseudo-header's), never 0x0000 (QEMU's
 * e1000: net_checksum_finish_nozero; Linux's skb_checksum_help alike).
 */
static int complete_csum(uint8_t *f, size_t len, const struct virtio_net_hdr *vh)
{
	size_t start = vh->csum_start, at = start + vh->csum_offset;
	uint16_t sum;

	if (at + 2 > len || start > len)
		return -1;
	sum = csum_fold(csum_add_bytes(0, f + start, len - start));
	if (!sum)
		sum = 0xffff;
	memcpy(f + at, &sum, 2);
	return 0;
}

/*
 * One frame from @nic's socket into @f (@len); 0 when there was none,
 * -1 (with @err) on a frame the far side could not have received.
 */
static int receive(struct ks_nic *n, uint8_t *f, size_t *len, char *err, size_t errlen)
{
	static uint8_t buf[sizeof(struct virtio_net_hdr) + FRAME_MAX];
	struct virtio_net_hdr vh;
	ssize_t got = recv(n->fd, buf, sizeof(buf), 0);

	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (got < (ssize_t)sizeof(vh)) {
		snprintf(err, errlen, "recv on %s: %s", n->peer, got < 0 ? strerror(errno)
			 : "short read");
		return -1;
	}
	memcpy(&vh, buf, sizeof(vh));
	*len = (size_t)got - sizeof(vh);
	memcpy(f, buf + sizeof(vh), *len);
	if (vh.gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		snprintf(err, errlen, "%s sent a GSO packet of %zu bytes: the NIC model "
			 "segments, so TSO must be off on %s", n->dev, *len, n->dev);
		return -1;
	}
	if ((vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && complete_csum(f, *len, &vh)) {
		snprintf(err, errlen, "%s: checksum offset %u+%u past the frame's %zu bytes",
			 n->dev, vh.csum_start, vh.csum_offset, *len);
		return -1;
	}
	if (n->pads && *len < ETH_ZLEN_NO_FCS) {
		memset(f + *len, 0, ETH_ZLEN_NO_FCS - *len);
		*len = ETH_ZLEN_NO_FCS;
	}
	return 1;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

typedef int (*is_last_fn)(const uint8_t *f, size_t len, unsigned int seq);

/* Frames per NIC up to the first on @last_nic that @is_last accepts. */
static int until(struct ks_topology *t, int last_nic, is_last_fn is_last, unsigned int seq,
		 struct ks_capture *cap, char *err, size_t errlen)
{
	static uint8_t f[FRAME_MAX];
	long deadline = now_ms() + FENCE_WAIT_MS;
	struct pollfd p[KS_MAX_NICS];
	int i, got;
	size_t len;

	for (;;) {
		long left = deadline - now_ms();

		if (left <= 0) {
			snprintf(err, errlen, "no end-of-case fence on %s in %d s",
				 t->nic[last_nic].dev, FENCE_WAIT_MS / 1000);
			return -1;
		}
		for (i = 0; i < t->nnics; i++)
			p[i] = (struct pollfd){ .fd = t->nic[i].fd, .events = POLLIN };
		if (poll(p, (nfds_t)t->nnics, (int)left) < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		for (i = 0; i < t->nnics; i++) {
			while ((got = receive(&t->nic[i], f, &len, err, errlen)) > 0) {
				if (i == last_nic && is_last(f, len, seq))
					goto drain;
				capture_add(cap, i, f, len);
			}
			if (got < 0)
				return -1;
		}
	}
drain:
	/* what the other NICs carried before the fence is queued already */
	for (i = 0; i < t->nnics; i++) {
		if (i == last_nic)
			continue;
		while ((got = receive(&t->nic[i], f, &len, err, errlen)) > 0)
			capture_add(cap, i, f, len);
		if (got < 0)
			return -1;
	}
	return 0;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int is_mark(const uint8_t *f, size_t len, unsigned int seq)
{
	char want[32];
	int n = snprintf(want, sizeof(want), "ila-mark %u", seq);

	return len == 62 + (size_t)n && get16(f + 12) == ETHERTYPE_IPV6 && f[20] == 17 &&
	       get16(f + 56) == MARK_PORT && !memcmp(f + 62, want, (size_t)n);
}

static int is_fence_reply(const uint8_t *f, size_t len, unsigned int seq)
{
	return len >= 62 && get16(f + 12) == ETHERTYPE_IPV6 && f[20] == 58 && f[54] == 129 &&
	       get16(f + 58) == FENCE_ECHO_ID && get16(f + 60) == (uint16_t)seq;
}

int wire_until_mark(struct ks_topology *t, unsigned int seq, struct ks_capture *cap,
		    char *err, size_t errlen)
{
	if (send_mark(&t->nic[0].host_addr, seq, err, errlen))
		return -1;
	return until(t, 0, is_mark, seq, cap, err, errlen);
}

/* The far side's echo request to the DUT's address on @nic. */
static size_t fence_request(const struct ks_nic *n, unsigned int seq, uint8_t *f)
{
	uint8_t *ip = f + ETH_HLEN, *icmp = ip + 40;
	uint16_t sum;

	memcpy(f, n->guest_mac, 6);
	memcpy(f + 6, n->host_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	memset(ip, 0, 48);
	ip[0] = 0x60;
	ip[5] = 8;	/* payload length */
	ip[6] = 58;
	ip[7] = 64;
	memcpy(ip + 8, &n->host_addr, 16);
	memcpy(ip + 24, &n->guest_addr, 16);
	icmp[0] = 128;
	icmp[4] = FENCE_ECHO_ID >> 8;
	icmp[5] = FENCE_ECHO_ID & 0xff;
	icmp[6] = (uint8_t)(seq >> 8);
	icmp[7] = (uint8_t)seq;
	sum = csum_ipv6_l4(&n->host_addr, &n->guest_addr, 58, icmp, 8);
	memcpy(icmp + 2, &sum, 2);
	return ETH_HLEN + 48;
}

int wire_until_fence(struct ks_topology *t, int nic, unsigned int seq,
		     struct ks_capture *cap, char *err, size_t errlen)
{
	uint8_t f[ETH_HLEN + 48];
	size_t len = fence_request(&t->nic[nic], seq, f);

	if (wire_inject(t, nic, f, len, err, errlen))
		return -1;
	return until(t, nic, is_fence_reply, seq, cap, err, errlen);
}

void wire_drain(struct ks_topology *t)
{
	static uint8_t f[FRAME_MAX];
	char err[16];
	size_t len;
	int i;

	for (i = 0; i < t->nnics; i++)
		while (receive(&t->nic[i], f, &len, err, sizeof(err)) > 0)
			;
}
