/* SPDX-License-Identifier: GPL-2.0 */
/* Internet checksum (RFC 1071) and the IPv6 pseudo-header (RFC 8200 8.1). */
#ifndef ILA_LIB_CSUM_H
#define ILA_LIB_CSUM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* One's complement sum of @len bytes added to @sum, not yet folded. */
uint32_t csum_add_bytes(uint32_t sum, const void *data, size_t len);

/* Fold a 32-bit partial sum to 16 bits and complement it (network order). */
uint16_t csum_fold(uint32_t sum);

/* Checksum of an upper-layer packet, pseudo-header included. */
uint16_t csum_ipv6_l4(const struct in6_addr *src, const struct in6_addr *dst,
		      uint8_t proto, const void *l4, size_t len);

#endif
