// SPDX-License-Identifier: GPL-2.0
/*
 * ila-churn: replace an ILA route again and again while traffic crosses it,
 * and check that no packet takes the replaced route's locator once the
 * replace has returned (ILA-ROUTE-REPLACE-1).
 *
 *   ila-churn output DEV DST REPLACES -- ROUTE_A -- ROUTE_B
 *       A thread sends UDP datagrams "churn SEQ" to [DST]:9 as fast as it
 *       can; ROUTE_A and ROUTE_B (ip command lines replacing DST's ILA
 *       route, with two locators) run in turn, REPLACES times. A packet
 *       socket on DEV sees each datagram leave with its locator.
 *
 *   ila-churn input NETNS ILA_ADDR REPLACES -- ROUTE_A -- ROUTE_B
 *       The same towards a local ILA address in NETNS: the datagrams go to
 *       [ILA_ADDR]:9 from here, and NETNS receives them on a socket bound
 *       to each SIR address the two routes translate to (their locators,
 *       ILA_ADDR's identifier), which says which locator delivered each.
 *
 * Every datagram whose send began after a replace returned must carry (or
 * be delivered by) the new locator; one begun earlier may carry either,
 * unless no replace was under way since it began. Prints
 *   churn: N datagrams, R replaces, S after a replace with the old locator, L not seen
 * and exits 1 when S > 0 (a datagram not seen is reported, not judged: the
 * guest may drop under load).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/addr.h"

#define PORT 9
#define MAX_SEQ 200000
#define MAX_WORDS 64

struct route_cmd {
	char *argv[MAX_WORDS];
	uint8_t locator[8];
};

/*
 * The sender's progress: the datagram whose send has begun (started) and
 * the last whose send returned (sent). A datagram begun after a replace
 * returned is looked up after it; one begun before may go either way.
 */
static atomic_uint started, sent;
static atomic_int stop;
static struct in6_addr dst;
static int send_fd;
/* per seq: the locator's index (0 or 1) that must carry it, or -1 either */
static signed char want[MAX_SEQ];
/* per seq: what was seen (0 or 1), -1 not seen */
static signed char seen[MAX_SEQ];

static void *sender(void *arg)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_port = htons(PORT) };
	char msg[32];

	(void)arg;
	to.sin6_addr = dst;
	while (!atomic_load(&stop) && atomic_load(&sent) < MAX_SEQ - 1) {
		unsigned int seq = atomic_load(&sent) + 1;
		int len = snprintf(msg, sizeof(msg), "churn %u", seq);

		atomic_store(&started, seq);
		if (sendto(send_fd, msg, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 &&
		    errno != ENOBUFS && errno != EAGAIN)
			break;
		atomic_store(&sent, seq);
		if (!(seq % 64))
			usleep(1000);	/* a steady flow, not a flood the guest drops */
	}
	return NULL;
}

/* Run a route command (ip ...) to its end; its exit status. */
static int run(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "ila-churn: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The locator a route command writes: the word after "encap ila". */
static int parse_route(char **words, int n, struct route_cmd *r)
{
	int i;

	for (i = 0; i < n && i < MAX_WORDS - 1; i++)
		r->argv[i] = words[i];
	r->argv[i] = NULL;
	for (i = 0; i + 2 < n; i++)
		if (!strcmp(words[i], "encap") && !strcmp(words[i + 1], "ila"))
			return ila_parse_locator(words[i + 2], r->locator);
	return -1;
}

static unsigned int seq_of(const uint8_t *p, size_t len)
{
	char text[32];

	if (len < 7 || len >= sizeof(text) || memcmp(p, "churn ", 6))
		return 0;
	memcpy(text, p, len);
	text[len] = '\0';
	return (unsigned int)strtoul(text + 6, NULL, 10);
}

struct output_watch {
	struct route_cmd r[2];
	int fd;		/* packet socket on DEV */
};

/* Output: the datagrams as they leave DEV, and the locator each carries. */
static void *watch_output(void *arg)
{
	const struct output_watch *w = arg;
	const struct route_cmd *routes = w->r;
	static uint8_t f[2048];
	int fd = w->fd;

	while (!atomic_load(&stop)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		unsigned int seq;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, f, sizeof(f), 0);
		/* Ethernet, IPv6 (no extension header), UDP to port 9 */
		if (n < 14 + 40 + 8 || f[12] != 0x86 || f[13] != 0xdd || f[20] != 17 ||
		    f[56] != 0 || f[57] != PORT)
			continue;
		seq = seq_of(f + 62, (size_t)n - 62);
		if (!seq || seq >= MAX_SEQ)
			continue;
		seen[seq] = !memcmp(f + 38, routes[0].locator, 8) ? 0 :
			    !memcmp(f + 38, routes[1].locator, 8) ? 1 : 2;
	}
	return NULL;
}

struct input_watch {
	int fd[2];
};

/* Input: the socket a datagram arrives on says which locator delivered it. */
static void *watch_input(void *arg)
{
	struct input_watch *w = arg;
	static uint8_t buf[64];

	while (!atomic_load(&stop)) {
		struct pollfd p[2] = { { .fd = w->fd[0], .events = POLLIN },
				       { .fd = w->fd[1], .events = POLLIN } };
		int i;

		if (poll(p, 2, 100) <= 0)
			continue;
		for (i = 0; i < 2; i++) {
			ssize_t n;
			unsigned int seq;

			if (!(p[i].revents & POLLIN))
				continue;
			n = recv(w->fd[i], buf, sizeof(buf), 0);
			seq = n > 0 ? seq_of(buf, (size_t)n) : 0;
			if (seq && seq < MAX_SEQ)
				seen[seq] = (signed char)i;
		}
	}
	return NULL;
}

/* A UDP socket in @netns bound to [@addr]:9; -1 on failure. */
static int bound_in(const char *netns, const struct in6_addr *addr)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(PORT),
				   .sin6_addr = *addr };
	int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), there, fd = -1;
	char path[128];

	snprintf(path, sizeof(path), "/run/netns/%s", netns);
	there = open(path, O_RDONLY | O_CLOEXEC);
	if (home < 0 || there < 0 || setns(there, CLONE_NEWNET))
		goto out;
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		fd = -1;
	}
	if (setns(home, CLONE_NEWNET)) {
		perror("ila-churn: back to our namespace");
		exit(2);
	}
out:
	if (home >= 0)
		close(home);
	if (there >= 0)
		close(there);
	return fd;
}

static int usage(void)
{
	fprintf(stderr, "usage: ila-churn output DEV DST REPLACES -- ROUTE_A -- ROUTE_B\n"
			"       ila-churn input NETNS ILA_ADDR REPLACES -- ROUTE_A -- ROUTE_B\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct output_watch out = { 0 };
	struct input_watch in = { { -1, -1 } };
	unsigned int after, total, stale = 0, missing = 0, i;
	pthread_t tx, rx;
	int replaces, k, sep[2], nsep = 0, input;

	setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 0);
	if (argc < 9)
		return usage();
	input = !strcmp(argv[1], "input");
	if (!input && strcmp(argv[1], "output"))
		return usage();
	for (k = 5; k < argc && nsep < 2; k++)
		if (!strcmp(argv[k], "--"))
			sep[nsep++] = k;
	replaces = atoi(argv[4]);
	if (nsep != 2 || sep[0] != 5 || ila_parse_addr(argv[3], &dst) || replaces < 1 ||
	    parse_route(argv + sep[0] + 1, sep[1] - sep[0] - 1, &out.r[0]) ||
	    parse_route(argv + sep[1] + 1, argc - sep[1] - 1, &out.r[1]))
		return usage();
	memset(want, 0, sizeof(want));	/* the first route's, until a replace */
	memset(seen, -1, sizeof(seen));
	if (input) {
		for (k = 0; k < 2; k++) {
			struct in6_addr sir = dst;

			ila_set_locator(&sir, out.r[k].locator);
			in.fd[k] = bound_in(argv[2], &sir);
			if (in.fd[k] < 0) {
				fprintf(stderr, "ila-churn: cannot bind [SIR]:9 in %s: %s\n", argv[2],
					strerror(errno));
				return 2;
			}
		}
	} else {
		struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
					   .sll_ifindex = (int)if_nametoindex(argv[2]) };

		out.fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
		if (out.fd < 0 || !sll.sll_ifindex ||
		    bind(out.fd, (struct sockaddr *)&sll, sizeof(sll))) {
			fprintf(stderr, "ila-churn: packet socket on %s: %s\n", argv[2], strerror(errno));
			return 2;
		}
	}
	send_fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (send_fd < 0 || run(out.r[0].argv)) {
		fprintf(stderr, "ila-churn: the first route does not take\n");
		return 2;
	}
	pthread_create(&rx, NULL, input ? watch_input : watch_output, input ? (void *)&in : (void *)&out);
	pthread_create(&tx, NULL, sender, NULL);
	usleep(50000);
	for (k = 1; k <= replaces; k++) {
		int now = k % 2;

		if (run(out.r[now].argv)) {
			fprintf(stderr, "ila-churn: replace %d failed\n", k);
			atomic_store(&stop, 1);
			return 2;
		}
		after = atomic_load(&started);
		for (i = after + 1; i < MAX_SEQ; i++)
			want[i] = (signed char)now;
		for (i = 1; i <= after; i++)
			if (want[i] >= 0 && want[i] != now)
				want[i] = -1;	/* begun before it returned: either */
		usleep(20000);
	}
	usleep(50000);
	atomic_store(&stop, 1);
	pthread_join(tx, NULL);
	usleep(200000);	/* the last datagrams' way through */
	pthread_join(rx, NULL);
	total = atomic_load(&sent);
	for (i = 1; i <= total; i++) {
		if (seen[i] < 0)
			missing++;
		else if (want[i] >= 0 && seen[i] != want[i])
			stale++;
	}
	printf("churn: %u datagrams, %d replaces, %u after a replace with the old locator, "
	       "%u not seen\n", total, replaces, stale, missing);
	return stale ? 1 : 0;
}
