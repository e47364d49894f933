/* SPDX-License-Identifier: GPL-2.0 */
/* Whether ILA state is left behind; see leftovers.c. */
#ifndef ILA_LIB_LEFTOVERS_H
#define ILA_LIB_LEFTOVERS_H

/* How many ILA routes and mappings there are (netlink, no program run); -1 on error. */
int ila_state_left(void);

#endif
