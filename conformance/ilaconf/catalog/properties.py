"""What a packet case is, as properties a deviation can select it by.

An implementation's deviation is a behaviour ("adj-transport reverses every
checksum adjusted right after the IPv6 header"), so a deviations file says
which cases it covers by what they are, not by their names:

    [[deviation]]
    columns = ["intree-luid"]
    when = { csum_at = "direct", csum_change = "adjusted", path = ["output", "forward"] }

A new case with those properties is then covered with no edit. Every value is
derived from the case file by the oracle's own parse of the packet it sends
(packets.py), never from a case's name. PROPERTIES documents them.
"""

import fnmatch
import re
from ipaddress import IPv6Address, ip_network

from ..oracle import packets

PROPERTIES = {
    "protocol": "the packet's next protocol: tcp, udp, icmpv6, or its number (47)",
    "family": "ipv6, or ipv4 when the case's ILA route is an IPv4 one",
    "path": "output, input or forward",
    "send": "raw, udp, udp4 or tcp",
    "outcome": "the case's expected outcome: translated, unchanged, dropped or error",
    "tunnel": "the UDP tunnel the packet travels in (vxlan, fou), or none",
    "expect_csum": "the case's expect.csum: adjusted, neutral, neutral-auto or untouched",
    "csum_at": "where the transport checksum field is: direct (right after the IPv6 "
               "header), behind-ext (after extension headers) or absent (no transport "
               "checksum field in the packet)",
    "csum_change": "adjusted when the oracle's translated packet has another checksum "
                   "than the sent one, unchanged when not (UDP zero, a routing header's "
                   "final destination, the same locator), same-sum when only the field's "
                   "form changes (0xffff to 0x0000) because the new locator's 16-bit words "
                   "sum to the old one's, n/a when not translated",
    "ext": "the extension headers before the transport, as the case's ext kinds "
           "(hbh, dst, rt0, frag), comma separated; empty for none",
    "transport_len": "how many bytes of the transport header and payload the packet holds",
    "transport_header": "complete, truncated (shorter than the header Linux pulls: TCP 20, "
                        "UDP 8, ICMPv6 8 bytes) or absent",
    "ident_type": "the type field of the route prefix's identifier (top 3 bits): iid, "
                  "luid, virt-v4, virt-uni-v6, virt-multi-v6, nonlocal-addr, reserved-6, "
                  "reserved-7",
    "prefix_len": "the ILA route's prefix length",
    "layout": "how the guest receives the packet (layouts.py): linear, headers-in-frags, "
              "transport-in-frag, payload-in-frags, gro, cloned, cloned-transport-in-frag, "
              "csum-unnecessary, or the split offsets as '14,60'",
    "rx_gro": "input and forward: on when the packet goes through GRO before the stack "
              "(linear, over virtio-net, and the gro layout), off for the other layouts; "
              "n/a on output",
    "rx_csum": "input and forward: the receive checksum state at the ILA hook: unnecessary "
               "for TCP and UDP through GRO (which validated the checksum before any hook), "
               "none otherwise; n/a on output",
    "route_locator": "the upper 64 bits of the ILA route's destination as the kernel gets "
                     "it (route_destination) against the packet's destination: same, zero "
                     "(all zero bits), other (a prefix shorter than 64 bits); n/a for IPv4",
    "csum_field": "the sent packet's transport checksum field: zero (0x0000), ones "
                  "(0xffff), other, or n/a when the packet holds none",
    "dst_change": "changed when the route's locator is not the packet destination's upper "
                  "64 bits, none when it is (nothing to translate); n/a without an IPv6 "
                  "ILA route whose prefix holds the packet's destination",
    "quote_change": "ICMPv6 error cases: changed when the quoted destination must be "
                    "translated back, none when it must pass as received; n/a otherwise",
    "c_bit": "the C-bit (checksum-neutral mapping, bit 4 of the identifier's first byte) "
             "of the packet's destination: set or clear; n/a when the ILA route does not "
             "cover the destination (an ICMPv6 error's, IPv4)",
    "route_c_bit": "the C-bit of the ILA route prefix's identifier: set, clear, or n/a for "
                   "a prefix shorter than 68 bits or an IPv4 route",
    "locator_sum": "where the destination changes: same when the new locator's 16-bit "
                   "words sum to the old one's (one's complement), so that writing it alone "
                   "leaves every checksum valid; other when not; n/a otherwise",
    "route_options": "the case's own options after 'encap ila LOCATOR' (csum-mode, "
                     "ident-type, hook-type with their values), space separated; empty "
                     "for none",
}

# The transport header sizes the in-tree module pulls before adjusting
# (sizeof(struct tcphdr), udphdr, icmp6hdr).
HEADER_PULL = {6: 20, 17: 8, 58: 8}
IDENT_TYPES = ("iid", "luid", "virt-v4", "virt-uni-v6", "virt-multi-v6", "nonlocal-addr",
               "reserved-6", "reserved-7")
ILA_OPTIONS = ("csum-mode", "ident-type", "hook-type")
PROTO_NAMES = {v: k for k, v in packets.PROTO_NUMBERS.items()}


class PropertyError(ValueError):
    pass


def ila_route(routes: list[str]) -> tuple[str, str] | None:
    """(prefix, options) of the first route with 'encap ila', None if none."""
    for line in routes:
        words = line.split()
        if "ila" not in words or "encap" not in words:
            continue
        i = words.index("add") if "add" in words else 0
        prefix = next((w for w in words[i + 1:] if "/" in w or ":" in w or "." in w), "")
        at = words.index("ila")
        opts = []
        rest = words[at + 2:]
        while len(rest) >= 2 and rest[0] in ILA_OPTIONS:
            opts += rest[:2]
            rest = rest[2:]
        return prefix, " ".join(opts)
    return None


def route_locator_of(routes: list[str]) -> bytes | None:
    """The 8 bytes of the first ILA route's locator ('encap ila 2001:0:0:2')."""
    for line in routes:
        words = line.split()
        if "encap" in words and words[words.index("encap") + 1:][:1] == ["ila"]:
            groups = words[words.index("encap") + 2].split(":")
            if len(groups) == 4 and all(g for g in groups):
                return b"".join(int(g, 16).to_bytes(2, "big") for g in groups)
    return None


def route_destination(prefix: str) -> bytes:
    """The route's destination as an lwtunnel's build_state sees it: the
    prefix's whole bytes as written, the rest zero (rtm_to_fib6_config copies
    (plen + 7) / 8 bytes of RTA_DST; bits past the length within the last
    byte stay as written)."""
    addr, _, length = prefix.partition("/")
    whole = (int(length or 128) + 7) // 8
    return IPv6Address(addr).packed[:whole].ljust(16, b"\0")


_memo: dict[tuple[str, str], dict[str, str | int]] = {}


def of_case(case) -> dict[str, str | int]:
    """Every property of a packet case (cases.Case), computed once per case."""
    key = (case.id, str(case.file))
    if key not in _memo:
        _memo[key] = _derive(case)
    return _memo[key]


def _derive(case) -> dict[str, str | int]:
    spec = dict(case.packet)
    if case.send == "udp":
        spec["csum"] = "0" if spec.get("no_check6_tx") else "auto"
    tunnel = getattr(case, "tunnel", None)
    if tunnel is not None:  # the route translates the outer packet: its properties
        spec = {**spec, **tunnel.outer_spec(packets.sent_packet(spec)), "payload_len": 0}
    route = ila_route(case.routes)
    prefix, options = route or ("", "")
    props: dict[str, str | int] = {
        "path": case.path, "send": case.send, "outcome": case.outcome,
        "expect_csum": case.csum, "route_options": options,
        "layout": (",".join(map(str, case.layout)) if isinstance(case.layout, list)
                   else case.layout),
        "family": "ipv4" if case.send == "udp4" or (route and "." in prefix) else "ipv6",
        "tunnel": tunnel.kind if tunnel is not None else "none",
    }
    props["route_locator"] = props["dst_change"] = "n/a"
    if prefix and ":" in prefix:
        net = ip_network(prefix if "/" in prefix else prefix + "/128", strict=False)
        props["prefix_len"] = net.prefixlen
        props["ident_type"] = IDENT_TYPES[IPv6Address(net.network_address).packed[8] >> 5]
        props["route_c_bit"] = "n/a" if net.prefixlen < 68 else \
            "set" if IPv6Address(net.network_address).packed[8] & 0x10 else "clear"
        written = route_destination(prefix)[:8]
        if "dst" in spec:
            props["route_locator"] = ("same" if written == IPv6Address(str(spec["dst"])).packed[:8]
                                      else "zero" if written == bytes(8) else "other")
    else:
        props["prefix_len"] = ip_network(prefix, strict=False).prefixlen if prefix else 0
        props["ident_type"] = ""
        props["route_c_bit"] = "n/a"
    quote = getattr(case, "quote", None)
    props["quote_change"] = "n/a" if quote is None else (
        "none" if IPv6Address(str(case.quote_dst)) == IPv6Address(str(quote["dst"])) else "changed")
    locator = route_locator_of(case.routes)
    covered = bool(prefix) and ":" in prefix and "dst" in spec and IPv6Address(str(spec["dst"])) \
        in ip_network(prefix if "/" in prefix else prefix + "/128", strict=False)
    props["c_bit"] = "n/a" if not covered else \
        "set" if IPv6Address(str(spec["dst"])).packed[8] & 0x10 else "clear"
    if locator is not None and covered:  # even when the stack drops it afterwards
        props["dst_change"] = ("none" if IPv6Address(str(spec["dst"])).packed[:8] == locator
                               else "changed")
    props["locator_sum"] = "n/a" if props["dst_change"] != "changed" or \
        ":" not in str(case.expect_dst) else (
            "same" if packets.locator_sum(str(case.expect_dst)) == packets.locator_sum(str(spec["dst"]))
            else "other")
    proto = packets.proto_number(spec["proto"])
    props["protocol"] = PROTO_NAMES.get(proto, str(proto))
    if case.path == "output":
        props.update(rx_gro="n/a", rx_csum="n/a")
    else:
        gro = case.layout in ("linear", "gro")
        props["rx_gro"] = "on" if gro else "off"
        props["rx_csum"] = "unnecessary" if gro and proto in (6, 17) else "none"
    props["ext"] = ",".join(e.split("/")[0] for e in str(spec.get("ext", "")).split(",") if e)
    if props["family"] == "ipv4":
        props.update(csum_at="absent", csum_change="n/a", transport_len=0,
                     transport_header="absent", csum_field="n/a")
        return props
    sent = packets.sent_packet(spec)
    off, nh = packets._l4_offset(sent)
    first_fragment = not any(e.startswith("frag/") and not e.startswith("frag/0/")
                             for e in str(spec.get("ext", "")).split(","))
    present = len(sent) - off if first_fragment else 0
    props["transport_len"] = present
    if nh in packets.CSUM_OFFSET and present >= packets.CSUM_OFFSET[nh] + 2:
        props["csum_at"] = "direct" if off == 40 else "behind-ext"
        at = off + packets.CSUM_OFFSET[nh]
        value = int.from_bytes(sent[at:at + 2], "big")
        props["csum_field"] = {0: "zero", 0xFFFF: "ones"}.get(value, "other")
    else:
        props["csum_at"] = "absent"
        props["csum_field"] = "n/a"
    if nh not in HEADER_PULL or present == 0:
        props["transport_header"] = "absent"
    else:
        props["transport_header"] = "complete" if present >= HEADER_PULL[nh] else "truncated"
    if case.outcome == "translated" and case.csum == "adjusted":
        dst = str(case.expect_dst)
        changed = packets.translated_packet(spec, dst) != packets.untouched_packet(spec, dst)
        same_sum = packets.locator_sum(dst) == packets.locator_sum(str(spec["dst"]))
        props["csum_change"] = ("unchanged" if not changed else "same-sum" if same_sum
                                else "adjusted")
    else:
        props["csum_change"] = "n/a"
    return props


def check_when(where: str, when: object) -> dict[str, list[str | int]]:
    """A 'when' table, each value a glob, an integer, a comparison ('<67') or a
    list of them (any may hold); unknown properties are an error."""
    if not isinstance(when, dict) or not when:
        raise PropertyError(f"{where}: 'when' must be a table of case properties")
    out = {}
    for key, value in when.items():
        if key not in PROPERTIES:
            raise PropertyError(f"{where}: unknown case property '{key}' (known: "
                                f"{', '.join(PROPERTIES)})")
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                 for v in values):
            raise PropertyError(f"{where}: when.{key} must be a string, an integer or a list")
        out[key] = values
    return out


COMPARE = re.compile(r"^(<=|>=|<|>|!=)\s*(-?\d+)$")


def holds(want: str | int, have: str | int) -> bool:
    if isinstance(want, int):
        return have == want
    m = COMPARE.match(want)
    if m and isinstance(have, int):
        op, n = m.group(1), int(m.group(2))
        return {"<": have < n, "<=": have <= n, ">": have > n, ">=": have >= n,
                "!=": have != n}[op]
    if want.startswith("!"):
        return not fnmatch.fnmatchcase(str(have), want[1:])
    return fnmatch.fnmatchcase(str(have), want)


def matches(when: dict[str, list[str | int]], props: dict[str, str | int]) -> bool:
    return all(any(holds(v, props[k]) for v in values) for k, values in when.items())
