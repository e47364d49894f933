/* SPDX-License-Identifier: GPL-2.0 */
/* ILA addresses: a 64-bit locator followed by a 64-bit identifier. */
#ifndef ILA_LIB_ADDR_H
#define ILA_LIB_ADDR_H

#include <netinet/in.h>
#include <stdint.h>

/* Parse "2001:0:0:2" (four hex groups, as iproute2 writes a locator). */
int ila_parse_locator(const char *text, uint8_t locator[8]);

/* Parse a full IPv6 address; 0 on success, -1 on error. */
int ila_parse_addr(const char *text, struct in6_addr *addr);

/* Overwrite the upper 64 bits of @addr. */
void ila_set_locator(struct in6_addr *addr, const uint8_t locator[8]);

#endif
