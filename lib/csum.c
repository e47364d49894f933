// SPDX-License-Identifier: GPL-2.0
#include "csum.h"

#include <arpa/inet.h>

uint32_t csum_add_bytes(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = sum;
	size_t i;

	/* Big-endian 16-bit words; an odd last byte is padded with zero. */
	for (i = 0; i + 1 < len; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	while (acc >> 32)
		acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

uint16_t csum_ipv6_l4(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, const void *l4, size_t len)
{
	uint8_t tail[8] = {
		(uint8_t)(len >> 24), (uint8_t)(len >> 16),
		(uint8_t)(len >> 8), (uint8_t)len, 0, 0, 0, proto,
	};
	uint32_t sum = 0;

	sum = csum_add_bytes(sum, src, sizeof(*src));
	sum = csum_add_bytes(sum, dst, sizeof(*dst));
	sum = csum_add_bytes(sum, tail, sizeof(tail));
	sum = csum_add_bytes(sum, l4, len);
	return csum_fold(sum);
}
