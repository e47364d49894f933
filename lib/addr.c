// SPDX-License-Identifier: GPL-2.0
#include "addr.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

int ila_parse_locator(const char *text, uint8_t locator[8])
{
	const char *p = text;
	int i;

	for (i = 0; i < 4; i++) {
		char *end;
		unsigned long group;

		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		      (*p >= 'A' && *p <= 'F')))
			return -1;
		group = strtoul(p, &end, 16);
		if (end - p > 4 || group > 0xffff)
			return -1;
		locator[2 * i] = (uint8_t)(group >> 8);
		locator[2 * i + 1] = (uint8_t)group;
		if (i < 3 && *end != ':')
			return -1;
		p = end + (i < 3);
	}
	return *p ? -1 : 0;
}

int ila_parse_addr(const char *text, struct in6_addr *addr)
{
	return inet_pton(AF_INET6, text, addr) == 1 ? 0 : -1;
}

void ila_set_locator(struct in6_addr *addr, const uint8_t locator[8])
{
	memcpy(addr->s6_addr, locator, 8);
}
