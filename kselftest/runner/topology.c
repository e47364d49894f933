// SPDX-License-Identifier: GPL-2.0
/*
 * The network around the node under test (the DUT), made of namespaces:
 *
 *   DUT namespace (ILA under test)          far-side namespace (the runner's
 *                                           packet sockets; no IPv6 stack)
 *     eth0 52:54:00:12:34:56  <-- veth -->  h0 52:54:00:00:00:02
 *     eth1 52:54:00:12:34:57  <-- veth -->  h1 52:54:00:00:00:03
 *
 * It stands for the QEMU guest of the host harness, whose frames the
 * golden captures hold: the NICs, their addresses and the set-up commands
 * come from the bundle's topology file, which conformance/ilaconf/topology.py
 * writes. Each veth is given its NIC model's offloads: eth0 is virtio-net
 * over a socket (no checksum offload, no TSO), eth1 an e1000 (transmit
 * checksum offload, so the DUT's stack builds CHECKSUM_PARTIAL packets, but
 * no TSO for IPv6); the far side completes offloaded checksums as the NIC
 * would (wire.c). Both receive through GRO, as the NIC drivers do.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/verbs.h"
#include "runner.h"

#define TOPOLOGY_FORMAT "ila-kselftest-topology 1"
#define CARRIER_WAIT_MS 10000

static struct ks_topology *active;	/* for the signal handler */

static int parse_mac(const char *text, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(text, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

int topology_read(struct ks_topology *t, const char *path, char *err, size_t errlen)
{
	char line[1024], dev[16], gmac[32], hmac[32], gaddr[64], haddr[64];
	int lineno = 0, csum, pads;
	FILE *f = fopen(path, "re");

	memset(t, 0, sizeof(*t));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct ks_nic *n;

		line[strcspn(line, "\n")] = '\0';
		if (++lineno == 1) {
			if (strcmp(line, TOPOLOGY_FORMAT))
				goto bad;
			continue;
		}
		if (!strncmp(line, "write ", 6) || !strncmp(line, "exec ", 5)) {
			strv_push(&t->setup, line);
			continue;
		}
		if (sscanf(line, "nic %15s %31s %31s %63s %63s tx-csum=%d pads=%d", dev,
			   gmac, hmac, gaddr, haddr, &csum, &pads) != 7 ||
		    t->nnics == KS_MAX_NICS)
			goto bad;
		n = &t->nic[t->nnics];
		snprintf(n->dev, sizeof(n->dev), "%s", dev);
		snprintf(n->peer, sizeof(n->peer), "h%d", t->nnics);
		if (parse_mac(gmac, n->guest_mac) || parse_mac(hmac, n->host_mac) ||
		    inet_pton(AF_INET6, gaddr, &n->guest_addr) != 1 ||
		    inet_pton(AF_INET6, haddr, &n->host_addr) != 1)
			goto bad;
		n->tx_csum = csum;
		n->pads = pads;
		n->fd = -1;
		t->nnics++;
	}
	fclose(f);
	if (!t->nnics) {
		snprintf(err, errlen, "%s: no nic line", path);
		return -1;
	}
	return 0;
bad:
	fclose(f);
	snprintf(err, errlen, "%s:%d: malformed line: %s", path, lineno, line);
	return -1;
}

int topology_nic(const struct ks_topology *t, const char *dev)
{
	int i;

	for (i = 0; dev && i < t->nnics; i++)
		if (!strcmp(t->nic[i].dev, dev))
			return i;
	return -1;
}

static void collect(void *ctx, const char *line)
{
	strv_push(ctx, line);
}

/* Run a command; on failure, its output in @err. */
static int must(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int must(char *err, size_t errlen, const char *fmt, ...)
{
	char cmd[512], copy[512], *argv[32], *save, *w;
	struct strv out = { 0 };
	int argc = 0, rc;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(copy, sizeof(copy), "%s", cmd);
	for (w = strtok_r(copy, " ", &save); w && argc < 31; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	rc = verb_run(argv[0], argv + 1, 30, collect, &out);
	if (rc)
		snprintf(err, errlen, "'%s %s' failed (%d): %s", argv[0],
			 argc > 1 ? cmd + strlen(argv[0]) + 1 : "", rc,
			 out.n ? out.v[out.n - 1] : "(no output)");
	strv_free(&out);
	return rc ? -1 : 0;
}

/* Enter the namespace of "ip netns add @name"; keeps @home to come back. */
static int enter(const char *name, char *err, size_t errlen)
{
	char path[128];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	rc = setns(fd, CLONE_NEWNET);
	if (rc)
		snprintf(err, errlen, "setns %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

static int write_file(const char *path, const char *value, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = write(fd, value, strlen(value));
	close(fd);
	if (n != (ssize_t)strlen(value)) {
		snprintf(err, errlen, "write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* One offload on or off, as "ethtool -K DEV FEATURE on|off" would. */
static int offload(int sk, const char *dev, unsigned int cmd, unsigned int on,
		   const char *what, char *err, size_t errlen)
{
	struct ethtool_value v = { .cmd = cmd, .data = on };
	struct ifreq ifr = { 0 };

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (char *)&v;
	if (ioctl(sk, SIOCETHTOOL, &ifr) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s %s: %s", dev, what, on ? "on" : "off", strerror(errno));
	return -1;
}

/*
 * The offloads of each veth, set in the namespace it is in. The DUT's side
 * gets its NIC model's, with GRO on (the drivers receive through GRO, which
 * validates TCP and UDP checksums before any hook). The far side gets TSO
 * and GRO off: it sends single frames, which veth then hands to the DUT's
 * NAPI (veth_skb_is_eligible_for_gro), and it captures what the DUT sent,
 * frame by frame.
 */
static int set_offloads(struct ks_topology *t, int far, char *err, size_t errlen)
{
	int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), i, rc = 0;

	if (sk < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	for (i = 0; far && i < t->nnics && !rc; i++)
		rc = offload(sk, t->nic[i].peer, ETHTOOL_STSO, 0, "tso", err, errlen) ||
		     offload(sk, t->nic[i].peer, ETHTOOL_SGRO, 0, "gro", err, errlen);
	for (i = 0; !far && i < t->nnics && !rc; i++) {
		const char *d = t->nic[i].dev;

		rc = offload(sk, d, ETHTOOL_STSO, 0, "tso", err, errlen) ||
		     offload(sk, d, ETHTOOL_STXCSUM, (unsigned int)t->nic[i].tx_csum,
			     "tx-checksumming", err, errlen) ||
		     offload(sk, d, ETHTOOL_SGRO, 1, "gro", err, errlen);
		if (!rc && !t->nic[i].tx_csum)
			rc = offload(sk, d, ETHTOOL_SSG, 0, "sg", err, errlen) ||
			     offload(sk, d, ETHTOOL_SGSO, 0, "gso", err, errlen);
	}
	close(sk);
	return rc ? -1 : 0;
}

/*
 * Whether @dev has carrier (IFF_RUNNING), asked of the current namespace:
 * /sys/class/net shows the namespace that mounted sysfs, not ours.
 */
static int carrier(const char *dev)
{
	struct ifreq ifr = { 0 };
	int sk = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), up = 0;

	if (sk < 0)
		return 0;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (!ioctl(sk, SIOCGIFFLAGS, &ifr))
		up = !!(ifr.ifr_flags & IFF_RUNNING);
	close(sk);
	return up;
}

static int wait_carrier(struct ks_topology *t, char *err, size_t errlen)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int i, waited;

	for (i = 0; i < t->nnics; i++) {
		for (waited = 0; !carrier(t->nic[i].dev); waited += 20) {
			if (waited > CARRIER_WAIT_MS) {
				snprintf(err, errlen, "%s has no carrier after %d s",
					 t->nic[i].dev, CARRIER_WAIT_MS / 1000);
				return -1;
			}
			nanosleep(&pause, NULL);
		}
	}
	return 0;
}

/* The bundle's set-up lines ("write PATH VALUE", "exec ip ...") in the DUT. */
static int run_setup(struct ks_topology *t, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < t->setup.n; i++) {
		char *line = t->setup.v[i];

		if (!strncmp(line, "write ", 6)) {
			char path[256], value[64];

			if (sscanf(line + 6, "%255s %63s", path, value) != 2) {
				snprintf(err, errlen, "topology: bad line %s", line);
				return -1;
			}
			if (write_file(path, value, err, errlen))
				return -1;
		} else if (must(err, errlen, "exec %s", line + 5)) {
			return -1;
		}
	}
	return 0;
}

/* Unmount and remove the namespaces: safe in a signal handler. */
static void remove_netns(const struct ks_topology *t)
{
	const char *names[] = { t->dut, t->peer };
	char path[128];
	size_t i;

	for (i = 0; i < 2; i++) {
		if (!names[i][0])
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", names[i]);
		umount2(path, MNT_DETACH);
		unlink(path);
	}
}

static void on_signal(int sig)
{
	if (active)
		remove_netns(active);
	signal(sig, SIG_DFL);
	raise(sig);
}

int topology_up(struct ks_topology *t, char *err, size_t errlen)
{
	int i;

	snprintf(t->dut, sizeof(t->dut), "ila-dut-%d", (int)getpid());
	snprintf(t->peer, sizeof(t->peer), "ila-far-%d", (int)getpid());
	if (must(err, errlen, "exec ip netns add %s", t->dut))
		return t->dut[0] = '\0', t->peer[0] = '\0', -1;
	if (must(err, errlen, "exec ip netns add %s", t->peer)) {
		t->peer[0] = '\0';
		topology_down(t);
		return -1;
	}
	active = t;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGHUP, on_signal);
	for (i = 0; i < t->nnics; i++) {
		struct ks_nic *n = &t->nic[i];
		char g[18], h[18];

		snprintf(g, sizeof(g), "%02x:%02x:%02x:%02x:%02x:%02x", n->guest_mac[0],
			 n->guest_mac[1], n->guest_mac[2], n->guest_mac[3], n->guest_mac[4],
			 n->guest_mac[5]);
		snprintf(h, sizeof(h), "%02x:%02x:%02x:%02x:%02x:%02x", n->host_mac[0],
			 n->host_mac[1], n->host_mac[2], n->host_mac[3], n->host_mac[4],
			 n->host_mac[5]);
		if (must(err, errlen, "exec ip -n %s link add %s address %s type veth peer "
			 "name %s address %s netns %s", t->dut, n->dev, g, n->peer, h, t->peer))
			goto fail;
	}
	/* The far side is only the runner's packet sockets: no IPv6 of its own. */
	if (enter(t->peer, err, errlen) ||
	    write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1", err, errlen) ||
	    write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1", err, errlen))
		goto fail;
	if (set_offloads(t, 1, err, errlen))
		goto fail;
	for (i = 0; i < t->nnics; i++)
		if (must(err, errlen, "exec ip link set %s up", t->nic[i].peer))
			goto fail;
	if (wire_open(t, err, errlen))
		goto fail;
	if (enter(t->dut, err, errlen) || set_offloads(t, 0, err, errlen) ||
	    run_setup(t, err, errlen) || wait_carrier(t, err, errlen))
		goto fail;
	return 0;
fail:
	topology_down(t);
	return -1;
}

void topology_down(struct ks_topology *t)
{
	int i;

	for (i = 0; i < t->nnics; i++) {
		if (t->nic[i].fd >= 0)
			close(t->nic[i].fd);
		t->nic[i].fd = -1;
	}
	remove_netns(t);
	active = NULL;
	t->dut[0] = t->peer[0] = '\0';
}
