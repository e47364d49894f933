// SPDX-License-Identifier: GPL-2.0
/*
 * ila-relay: send, from inside the guest, packets the host hands it over
 * UDP, each followed by a mark, so that a host can push thousands of
 * packets through an implementation without one agent command each.
 *
 *   ila-relay PORT MARK_DST
 *
 * Binds UDP PORT and reads datagrams from the host, in order:
 *   'R' SEQ(4) PACKET         send PACKET (a whole IPv6 packet) on a raw
 *                             socket with the header included (IPPROTO_RAW)
 *   'U' SEQ(4) SRC(16) SPORT(2) DST(16) DPORT(2) FLAGS(1) PAYLOAD
 *                             send PAYLOAD from an ordinary UDP socket bound
 *                             to SRC:SPORT, so the kernel builds the packet;
 *                             FLAGS bit 0 sets UDP_NO_CHECK6_TX
 *   'N' SEQ(4)                nothing: only the mark (the host's "are you
 *                             there yet?", since the port is bound late)
 *   'E' SEQ(4)                print what was relayed and exit
 * After each packet it sends "ila-relay SEQ ERRNO" (0: sent) to MARK_DST,
 * port 9, on a plain route: once the host sees that mark, every frame the
 * packet caused has left the guest. Numbers are big-endian.
 *
 * With no datagram for 60 s it gives up (exit 1), so a host that died never
 * leaves the guest's agent waiting.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define MARK_PORT 9
#define IDLE_SECONDS 60
#define RELAY_MAX 65536

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif

static int raw_fd, mark_fd;
static struct sockaddr_in6 mark_to = { .sin6_family = AF_INET6 };

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "ila-relay: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int send_raw(const uint8_t *pkt, size_t len)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };

	if (len < 40)
		return EINVAL;
	memcpy(&to.sin6_addr, pkt + 24, 16);
	if (sendto(raw_fd, pkt, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return errno;
	return 0;
}

static int send_udp(const uint8_t *body, size_t len)
{
	struct sockaddr_in6 from = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	int fd, one = 1, err = 0;

	if (len < 37)
		return EINVAL;
	memcpy(&from.sin6_addr, body, 16);
	memcpy(&from.sin6_port, body + 16, 2);
	memcpy(&to.sin6_addr, body + 18, 16);
	memcpy(&to.sin6_port, body + 34, 2);
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		return errno;
	if ((body[36] & 1) &&
	    setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, &one, sizeof(one)))
		err = errno;
	else if (bind(fd, (struct sockaddr *)&from, sizeof(from)))
		err = errno;
	else if (sendto(fd, body + 37, len - 37, 0, (struct sockaddr *)&to,
			sizeof(to)) < 0)
		err = errno;
	close(fd);
	return err;
}

static void mark(uint32_t seq, int err)
{
	char msg[48];
	int len = snprintf(msg, sizeof(msg), "ila-relay %u %d", seq, err);

	if (sendto(mark_fd, msg, (size_t)len, 0, (struct sockaddr *)&mark_to,
		   sizeof(mark_to)) != len)
		die("sendto (mark)");
}

int main(int argc, char **argv)
{
	static uint8_t buf[RELAY_MAX];
	struct sockaddr_in6 me = { .sin6_family = AF_INET6 };
	struct timeval idle = { .tv_sec = IDLE_SECONDS };
	unsigned long relayed = 0, refused = 0;
	int fd, rcvbuf = 4 << 20;

	if (argc != 3 || inet_pton(AF_INET6, argv[2], &mark_to.sin6_addr) != 1) {
		fprintf(stderr, "usage: ila-relay PORT MARK_DST\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	mark_to.sin6_port = htons(MARK_PORT);
	me.sin6_port = htons((uint16_t)atoi(argv[1]));
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	raw_fd = socket(AF_INET6, SOCK_RAW, IPPROTO_RAW);
	mark_fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 || raw_fd < 0 || mark_fd < 0)
		die("socket");
	/* A burst from the host must never overflow the queue. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof(idle)))
		die("SO_RCVTIMEO");
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)))
		die("bind");
	printf("ila-relay: listening on port %s\n", argv[1]);
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		uint32_t seq;
		int err;

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			fprintf(stderr, "ila-relay: no datagram in %d s: giving up\n",
				IDLE_SECONDS);
			return 1;
		}
		if (n < 0)
			die("recv");
		if (n < 5) {
			fprintf(stderr, "ila-relay: short datagram (%zd bytes)\n", n);
			return 1;
		}
		seq = get32(buf + 1);
		if (buf[0] == 'E')
			break;
		if (buf[0] == 'N') {
			mark(seq, 0);
			continue;
		}
		if (buf[0] == 'R')
			err = send_raw(buf + 5, (size_t)n - 5);
		else if (buf[0] == 'U')
			err = send_udp(buf + 5, (size_t)n - 5);
		else {
			fprintf(stderr, "ila-relay: unknown command 0x%02x\n", buf[0]);
			return 1;
		}
		relayed++;
		refused += err != 0;
		mark(seq, err);
	}
	printf("ila-relay: relayed %lu, refused %lu\n", relayed, refused);
	return 0;
}
