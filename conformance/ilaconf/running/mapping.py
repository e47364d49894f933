"""A case's ILA route as a mapping of the in-tree mapping table (ila_xlat.c).

The table translates in a netfilter hook at NF_INET_PRE_ROUTING
(ila_nf_input), so only received packets: input and forward cases. A
mapping is keyed by a whole 64-bit locator (loc_match) and an optional
ifindex, so the route

    ip -6 route add [table local local] PREFIX/LEN encap ila LOC [OPTIONS] REST

becomes

    ip ila add loc_match <PREFIX's upper 64 bits> loc LOC <the column's options>
    ip -6 route add [table local local] <PREFIX with LOC>/LEN REST

the second a plain route for the translated destination, so that the packet
goes where the ILA route sent it: out of eth1 on the forward path, to the
local stack on the input path (not needed when the translated address is
one the guest has). A case opts out with `no_mapping = "why"`; a case whose
routes hold `ip ila` lines of their own is a mapping case, run as written
by mapping columns only.
"""

from ipaddress import IPv6Address, ip_network

from ..catalog import properties
from ..catalog.cases import Case, default_teardown
from ..impls import Impl
from ..oracle.packets import GUEST_ADDRESSES, neutral_address

RECEIVE_ONLY = ("the mapping table translates received packets only (ila_xlat.c: ila_nf_input, "
                "an NF_INET_PRE_ROUTING hook)")
ROUTE_OPTIONS = ("csum-mode", "ident-type")


def is_mapping_case(case: Case) -> bool:
    return case.interface == "mapping"


def locator_text(b: bytes) -> str:
    return ":".join(f"{int.from_bytes(b[i:i + 2], 'big'):x}" for i in range(0, 8, 2))


def derive(case: Case, impl: Impl) -> tuple[list[str], list[str]] | str:
    """(set-up lines, teardown lines) for a mapping column, or why the case
    does not apply to one."""
    if is_mapping_case(case):
        return case.routes, case.teardown
    if getattr(case, "no_mapping", ""):
        return f"the case opts out of the mapping columns: {case.no_mapping}"
    if case.path == "output":
        return RECEIVE_ONLY
    ila = [line for line in case.routes if "encap ila" in line]
    if len(ila) != 1:
        return "a mapping stands for one ILA route; the case has " + str(len(ila))
    words = ila[0].split()
    prefix, options = properties.ila_route(ila)
    if ":" not in prefix:
        return "the mapping table is IPv6 only; the case's ILA route is IPv4"
    net = ip_network(prefix if "/" in prefix else prefix + "/128", strict=False)
    if net.prefixlen < 64:
        return (f"a mapping matches a whole 64-bit locator (ila_xlat.c: ila_lookup_wildcards); "
                f"the case's /{net.prefixlen} route has none")
    at = words.index("encap")
    locator = words[at + 2]
    mine = " ".join(f"{k} {v}" for k, v in zip(options.split()[::2], options.split()[1::2])
                    if k in ROUTE_OPTIONS)
    match = locator_text(properties.route_destination(prefix)[:8])
    setup = [f"ip ila add loc_match {match} loc {locator} {mine or impl.mapping_options}".strip()]
    rest = words[at + 3 + len(options.split()):]
    translated = IPv6Address(properties.route_locator_of(ila) + net.network_address.packed[8:])
    plen = net.prefixlen
    mode = dict(zip(options.split()[::2], options.split()[1::2])).get("csum-mode", "")
    if mode.startswith("neutral-map"):
        # The identifier changes too: a /128 goes where ours maps it, as the
        # requirement says; a shorter prefix, and whatever a column maps
        # instead, stays inside the locator's /64.
        translated = IPv6Address(neutral_address(net.network_address.packed,
                                                 properties.route_locator_of(ila),
                                                 mode == "neutral-map"))
        if plen < 128 or case.path != "input":
            translated, plen = IPv6Address(translated.packed[:8] + bytes(8)), 64
    plain = " ".join([*words[:words.index(prefix)], f"{translated}/{plen}", *rest])
    mine_routes = [line for line in case.routes if line is not ila[0]]
    teardown = [f"ip ila del loc_match {match} loc {locator}"]
    if not (case.path == "input" and plen == 128 and str(translated) in GUEST_ADDRESSES):
        setup.append(plain)
        teardown.append(default_teardown(plain))
    others = [t for t in case.teardown if t != default_teardown(ila[0])]
    return setup + mine_routes, teardown + others
