"""Random ILA routes and packets for make fuzz, from one seed.

Every packet is a catalog case (catalog/cases.py's Case): the same packet
fields as a case file's [packet] table, its route as the ip command line a
user types, its path and its expected outcome. So the oracle that judges the
catalog judges it, the deviations files match it by its properties, and a
failure is written out as a case file as it stands.

The edges are the ones the implementations branch on (kernel/ila/xlat.c,
net/ipv6/ila/ila_common.c and ila_lwt.c):
- prefix lengths 0 to 128, with weight on 0, 63, 64, 65, 67, 68 (the in-tree
  use-format needs 67 bits), 127 and 128, and route prefixes written with
  bits set past their length (the in-tree module keeps the prefix as written
  as its locator_match and precomputes the checksum difference from it);
- locators 0, all ones, the packet's own (no change), a permutation of its
  16-bit words (the same one's complement sum), one bit flipped;
- identifiers 0, all ones, LUID-typed (the in-tree default accepts only
  those), with the checksum-neutral C-bit set;
- next headers TCP, UDP, ICMPv6 and others, chains of extension headers
  (hop-by-hop, destination options, routing with and without segments left,
  first and later fragments), transport headers cut short, payload lengths
  that lie, odd lengths, checksum fields of 0, 0xffff and random values,
  UDP zero, and payloads (or, without one, a port or an echo's sequence
  number) chosen so that the adjusted checksum is 0 or 0xffff;
- locators sharing 16, 32 or 48 upper bits with the packet's, or its lower
  bits; UDP socket sends whose CHECKSUM_PARTIAL seed is zero, before or
  after the translation;
- raw and kernel-built (UDP socket) sends on output; input and forward
  packets in every receive layout;
- a route's checksum mode: adj-transport (the default) on most, else
  neutral-map, neutral-map-auto, or on output and forward no-action. Drawn
  from a generator of its own, so that a seed's routes and packets are the
  same with and without it. Under neutral-map a route's output and forward
  destinations keep the C-bit clear: the catalog's C-bit cases
  (ILA-NEUTRAL-2) say what the in-tree module does to the others, a WARN
  that ends an in-tree guest under panic_on_warn.
"""

import random
from dataclasses import dataclass, field
from ipaddress import IPv6Address, IPv6Network, ip_network
from pathlib import Path

from .. import topology
from ..catalog import layouts
from ..catalog.cases import PACKET_DEFAULTS, Case, default_teardown, fill
from ..oracle import packets

PATHS = ("output", "input", "forward")
# Where a fuzzed destination must not fall: the links, the guest's and the
# host's own addresses, link-local, multicast, loopback and the unspecified.
AVOID = [ip_network(n) for n in (
    "2401:db00:20:911a::/64", "2401:db00:20:911b::/64", "fe80::/10", "ff00::/8", "::/127",
    "::ffff:0:0/96", f"{topology.GUEST_SIR}/128")]
PREFIX_EDGES = (0, 1, 16, 48, 63, 64, 65, 67, 68, 96, 127, 128)
OTHER_PROTOS = (59, 132, 47, 253, 254, 4, 41, 0x88, 255)
EXT_KINDS = ("hbh", "dst", "rt0", "rt0-left", "frag-first", "frag-later", "ah")
UDP_DPORT_AVOID = {topology.MARK_PORT}
RELAY_PORT = 7777


@dataclass
class FuzzRoute:
    """One ILA route and the packets sent through it."""
    index: int
    path: str
    prefix: str  # as written, maybe with bits set past its length
    length: int
    locator: str
    items: list[Case] = field(default_factory=list)
    csum_mode: str = ""  # empty: the implementation's default (adj-transport)

    @property
    def options(self) -> str:
        """The route's own options after its locator, as a user writes them."""
        if not self.csum_mode:
            return ""
        hook = " hook-type input" if self.path == "input" else ""
        return f" csum-mode {self.csum_mode} ident-type luid{hook}"

    @property
    def line(self) -> str:
        net = f"{self.prefix}/{self.length}"
        if self.path == "input":
            return (f"ip -6 route add table local local {net} encap ila {self.locator}"
                    f"{self.options} dev lo")
        via = "{host2} dev eth1" if self.path == "forward" else "{host}"
        return f"ip -6 route add {net} encap ila {self.locator}{self.options} via {via}"

    def translated(self, dst: int) -> str:
        """What the route makes of dst, as the requirements say."""
        if self.csum_mode.startswith("neutral-map"):
            locator = IPv6Address(translated_dst(0, self.locator)).packed[:8]
            return str(IPv6Address(packets.neutral_address(
                IPv6Address(_addr(dst)).packed, locator, self.csum_mode == "neutral-map")))
        return translated_dst(dst, self.locator)

    @property
    def expect_csum(self) -> str:
        return {"neutral-map": "neutral", "neutral-map-auto": "neutral-auto",
                "no-action": "untouched"}.get(self.csum_mode, "adjusted")

    @property
    def network(self) -> IPv6Network:
        return ip_network(f"{self.prefix}/{self.length}", strict=False)


def _addr(value: int) -> str:
    return str(IPv6Address(value & ((1 << 128) - 1)))


def _locator_text(value: int) -> str:
    """The upper 64 bits as ip writes a locator: four 16-bit groups."""
    return ":".join(f"{(value >> s) & 0xFFFF:x}" for s in (48, 32, 16, 0))


def _overlaps(net: IPv6Network, avoid: IPv6Network) -> bool:
    return net.overlaps(avoid)


def _random_identifier(rng: random.Random) -> int:
    kind = rng.randrange(10)
    if kind == 0:
        return 0
    if kind == 1:
        return (1 << 64) - 1
    value = rng.getrandbits(64)
    if kind in (2, 3, 4):  # LUID type (001 in the top 3 bits), which use-format accepts
        value = (value & ~(7 << 61)) | (1 << 61)
    if kind == 5:  # the checksum-neutral C-bit (bit 4 of the identifier's first byte)
        value |= 1 << 60
    return value


def _random_locator(rng: random.Random, dst: int, prefix: int) -> int:
    old = dst >> 64
    kind = rng.randrange(14)
    if kind == 0:
        return 0
    if kind == 1:
        return (1 << 64) - 1
    if kind == 2:
        return old  # already the packet's: no change at all
    if kind == 3:  # the same one's complement sum, another value
        words = [(old >> s) & 0xFFFF for s in (48, 32, 16, 0)]
        rng.shuffle(words)
        return (words[0] << 48) | (words[1] << 32) | (words[2] << 16) | words[3]
    if kind == 4:
        return old ^ (1 << rng.randrange(64))
    if kind == 5:
        return prefix >> 64  # the route prefix's own upper bits
    if kind in (6, 7):
        # Sharing 16, 32 or 48 upper bits with the packet's own, as locators
        # and SIR prefixes numbered out of one operator prefix do; or its
        # lower bits, differing only above them. A comparison narrowed to
        # part of the locator tells these apart from "no change".
        keep = rng.choice((16, 32, 48))
        if kind == 6:
            low = (1 << (64 - keep)) - 1
            return (old & ~low) | (rng.getrandbits(64 - keep) or 1)
        high_mask = ((1 << keep) - 1) << (64 - keep)
        return old ^ high_mask if rng.random() < 0.5 else \
            (old & ((1 << (64 - keep)) - 1)) | ((rng.getrandbits(keep) or 1) << (64 - keep))
    return rng.getrandbits(64)


def _bad(addr: int, extra: list[IPv6Network] = ()) -> bool:
    a = IPv6Address(addr)
    return any(a in n for n in (*AVOID, *extra))


def random_route(rng: random.Random, index: int, path: str) -> FuzzRoute:
    """A route whose prefix no guest or host address needs, on path."""
    for _ in range(1000):
        length = rng.choice(PREFIX_EDGES) if rng.random() < 0.6 else rng.randrange(129)
        if path == "input" and length < 32:
            continue  # a local route that short would swallow the links' addresses
        prefix = rng.getrandbits(128)
        net = ip_network(f"{_addr(prefix)}/{length}", strict=False)
        if any(net.subnet_of(n) for n in AVOID) or \
                (path == "input" and any(_overlaps(net, n) for n in AVOID)):
            continue
        if path != "input" and length < 64 and any(net.supernet_of(n) for n in AVOID[:2]):
            # it may cover the links: their more specific routes still win
            pass
        written = prefix if rng.random() < 0.3 else int(net.network_address)
        return FuzzRoute(index, path, _addr(written), length, "")
    raise RuntimeError("no usable random route prefix found")


def random_dst(rng: random.Random, route: FuzzRoute) -> int | None:
    """A destination inside the route that the guest routes through it."""
    net = route.network
    host_bits = 128 - route.length
    written = int(IPv6Address(route.prefix))
    for _ in range(50):
        ident = _random_identifier(rng)
        upper = rng.getrandbits(64)
        if route.length < 64 and rng.random() < 0.3:
            upper = written >> 64  # the packet's locator is the route's as written
        value = (upper << 64) | ident
        mask = (1 << host_bits) - 1 if host_bits else 0
        value = int(net.network_address) | (value & mask)
        if not _bad(value):
            return value
    return None


def _ext_chain(rng: random.Random, path: str) -> list[str]:
    """Extension headers as catalog 'ext' items; input and forward keep
    hop-by-hop first and leave routing headers out (the guest would process
    them as their destination)."""
    if rng.random() < 0.55:
        return []
    out: list[str] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(EXT_KINDS)
        if path != "output":
            kind = rng.choice(("hbh", "dst")) if not out else "dst"
            if kind == "hbh" and out:
                continue
        if kind in ("hbh", "dst"):
            out.append(kind)
        elif kind == "rt0":
            out.append(f"rt0/0/{_addr(rng.getrandbits(128) | (0x2001 << 112))}")
        elif kind == "rt0-left":
            out.append(f"rt0/{rng.randint(1, 2)}/{_addr((0x4444 << 112) | rng.getrandbits(64))}")
        elif kind == "ah":
            out.append(f"ah/{rng.getrandbits(32)}/{rng.getrandbits(32)}")
        elif kind == "frag-first":
            out.append(f"frag/0/{rng.randint(0, 1)}/{rng.getrandbits(32)}")
        else:
            out.append(f"frag/{rng.randint(1, 8000)}/{rng.randint(0, 1)}/{rng.getrandbits(32)}")
    return out


def random_packet(rng: random.Random, path: str, dst: int) -> dict[str, object]:
    """A [packet] table for one packet to dst on path."""
    spec: dict[str, object] = {**PACKET_DEFAULTS, "dst": _addr(dst)}
    spec["src"] = topology.GUEST_ADDR if path == "output" else topology.HOST_ADDR
    weights = (30, 30, 25, 15) if path != "input" else (35, 35, 30, 0)
    proto = rng.choices(("tcp", "udp", "icmpv6", "other"), weights)[0]
    spec["proto"] = proto if proto != "other" else rng.choice(OTHER_PROTOS)
    spec["hlim"] = rng.randint(2, 255)
    spec["tc"] = rng.getrandbits(8) if rng.random() < 0.3 else 0
    spec["flow"] = rng.getrandbits(20) if rng.random() < 0.3 else 0
    spec["ext"] = ",".join(_ext_chain(rng, path))
    size = rng.choice((0, 1, 2, 3, 7, 8, 9, 15, 16, 17)) if rng.random() < 0.4 else \
        rng.randint(0, 1200 if rng.random() < 0.1 else 160)
    if rng.random() < 0.5:
        spec["payload_hex"] = rng.randbytes(min(size, 1024)).hex()
    else:
        spec["payload_len"] = size
    if proto == "tcp":
        flags = "S" if path == "input" else "".join(
            f for f in "FSRPAUEC" if rng.random() < 0.3) or "A"
        if path == "input":
            flags += "".join(f for f in "PUEC" if rng.random() < 0.2)
        spec.update(sport=rng.randrange(1, 65536), dport=rng.randrange(1, 65536),
                    seq=rng.getrandbits(32), ack=rng.getrandbits(32) if "A" in flags else 0,
                    flags=flags, window=rng.getrandbits(16), urgptr=rng.getrandbits(16)
                    if "U" in flags else 0)
    elif proto == "udp":
        spec.update(sport=rng.randrange(1, 65536), dport=rng.randrange(1, 65536))
        while path == "input" and spec["dport"] in (*UDP_DPORT_AVOID, RELAY_PORT):
            spec["dport"] = rng.randrange(1, 65536)
    elif proto == "icmpv6":
        kind = 128 if path == "input" else rng.choice((128, 129, 1, 2, 3, 4, 135, 136, 200,
                                                        rng.randrange(256)))
        spec.update(type=kind, code=rng.randrange(256) if path != "input" and rng.random() < 0.3
                    else 0, id=rng.getrandbits(16), icmp_seq=rng.getrandbits(16))
    _checksum_edge(rng, spec, path)
    if path == "output":
        _malform(rng, spec)
    return spec


def _checksum_edge(rng: random.Random, spec: dict[str, object], path: str) -> None:
    if spec["proto"] not in packets.PROTO_NUMBERS:
        return
    roll = rng.random()
    if roll < 0.06:
        spec["csum"] = "0"
    elif roll < 0.10:
        spec["csum"] = "0xffff"
    elif roll < 0.16:
        spec["csum"] = hex(rng.getrandbits(16))


def _malform(rng: random.Random, spec: dict[str, object]) -> None:
    """Output only: the guest's raw socket sends what it is given."""
    roll = rng.random()
    if roll < 0.05:
        spec["l4_len"] = rng.randrange(0, 24)
    elif roll < 0.08:
        spec["plen"] = rng.randrange(0, 400)


# A 16-bit header field each protocol's zero search may set when the packet
# has no payload word to spare: summed whole, free for the oracle.
SEARCH_FIELD = {6: "sport", 17: "sport", 58: "icmp_seq"}


def zero_checksum(spec: dict[str, object], dst: str) -> None:
    """Change one 16-bit payload word, or with no payload a header field, so
    that the transport checksum of the packet with destination dst comes out
    zero (sent as 0xffff by UDP): the sent packet's (dst its own) or the
    translated one's. An adjustment that folds wrongly gets exactly these
    wrong, and so does one that applies UDP's zero rules to TCP or ICMPv6."""
    proto = packets.proto_number(spec["proto"])
    body = bytearray(packets.payload(spec))
    at = len(body) - 2 - len(body) % 2  # an even offset: the word is summed whole
    if proto not in packets.CSUM_OFFSET or spec.get("csum", "auto") != "auto" \
            or spec.get("ext"):
        return
    if at < 0:
        # 0 in the field, then the checksum's value there: the sum is 0xffff
        name = SEARCH_FIELD[proto]
        spec[name] = 0
        value = packets.correct_checksum(spec, dst)
        # 0 (and UDP's 0xffff, its form of 0): the sum is 0xffff already, and
        # 0xffff, one's complement's other zero, keeps it there
        spec[name] = 0xFFFF if value == 0 or (proto == 17 and value == 0xFFFF) else value
        return
    body[at:at + 2] = b"\0\0"
    spec.pop("payload_len", None)
    spec["payload_hex"] = body.hex()
    # checksum c = ~s; adding the word c to the data makes the sum 0xffff,
    # whose complement is 0
    body[at:at + 2] = packets.correct_checksum(spec, dst).to_bytes(2, "big")
    spec["payload_hex"] = body.hex()


def zero_seed(route: FuzzRoute, dst: int, spec: dict[str, object], after: bool) -> int:
    """dst with its last 16 bits chosen so that a socket send's
    CHECKSUM_PARTIAL seed, the pseudo-header's sum (udp6_set_csum()), folds
    to 0xffff: its complement, the seed's csum_ipv6_magic(), is zero. With
    after, the seed of the translated packet does (the sum that adjusting a
    partial field must reach); otherwise the one the socket writes. dst as
    it was where the route leaves those bits no freedom or the address is
    one to avoid."""
    if route.length > 112:
        return dst
    length = 8 + len(packets.payload(spec))
    src = int(IPv6Address(str(spec["src"])))
    words = packets.word_sum
    upper = (int(IPv6Address(translated_dst(dst, route.locator))) if after else dst) >> 64
    rest = packets.ones_fold(words(src) + words(upper << 64)
                             + words(dst & ((1 << 64) - 1) & ~0xFFFF) + length + 17)
    value = (dst & ~0xFFFF) | (0xFFFF - rest)
    return dst if _bad(value) else value


def outcome(spec: dict[str, object], path: str, new_dst: str) -> str:
    """What the oracle expects: translated, or (input) dropped when the stack
    must throw the packet away after a correct translation."""
    if path != "input":
        return "translated"
    proto = packets.proto_number(spec["proto"])
    csum = str(spec.get("csum", "auto"))
    if csum == "auto":
        return "translated"
    sent = int(csum, 0)
    if proto == 17 and sent == 0:
        return "dropped"  # IPv6 UDP without a checksum is refused (RFC 8200 8.1)
    right = packets.correct_checksum(spec, str(spec["dst"]))
    same = sent == right or {sent, right} == {0, 0xFFFF} and proto != 17
    return "translated" if same else "dropped"


def translated_dst(dst: int, locator: str) -> str:
    words = [int(w, 16) for w in locator.split(":")]
    upper = (words[0] << 48) | (words[1] << 32) | (words[2] << 16) | words[3]
    return _addr((upper << 64) | (dst & ((1 << 64) - 1)))


CSUM_MODES = ("", "neutral-map", "neutral-map-auto", "no-action")
CSUM_MODE_WEIGHTS = (70, 12, 12, 6)


def random_csum_mode(seed: int, index: int, path: str) -> str:
    """A route's checksum mode, from a generator of its own (seed, route):
    no-action only where the packet leaves (on input its checksum would be
    wrong for the SIR address, and the stack drops it)."""
    mode = random.Random(f"{seed}-csum-mode-{index}").choices(CSUM_MODES, CSUM_MODE_WEIGHTS)[0]
    return "" if mode == "no-action" and path == "input" else mode


def generate(seed: int, count: int, per_route: tuple[int, int] = (5, 30)) -> list[FuzzRoute]:
    """count packets over as many random routes as it takes, each route with
    per_route packets; the same seed gives the same routes and packets."""
    rng = random.Random(seed)
    routes: list[FuzzRoute] = []
    made = 0
    while made < count:
        path = rng.choices(PATHS, (50, 25, 25))[0]
        route = random_route(rng, len(routes), path)
        route.csum_mode = random_csum_mode(seed, route.index, path)
        c_bit = 1 << 60  # of the identifier: see the module's docstring
        if route.csum_mode == "neutral-map" and path != "input" and route.length > 67 \
                and int(route.network.network_address) & c_bit:
            route.csum_mode = "neutral-map-auto"  # every destination has it set
        dsts = []
        for _ in range(rng.randint(*per_route)):
            d = random_dst(rng, route)
            if d is not None and route.csum_mode == "neutral-map" and path != "input":
                d &= ~c_bit  # still in the route: its prefix leaves the bit free or clear
                d = None if _bad(d) else d
            if d is not None:
                dsts.append(d)
        if not dsts:
            continue
        loc = _random_locator(rng, dsts[0], int(IPv6Address(route.prefix)))
        route.locator = _locator_text(loc)
        if route.csum_mode.startswith("neutral-map"):
            # A destination that holds the locator already: the in-tree
            # module maps it all the same, as the catalog's
            # neutral/output-same-locator-neutral-map declares.
            dsts = [d for d in dsts if d >> 64 != loc]
            if not dsts:
                continue
        if path != "output":
            # the guest must receive or forward the translated packet as an
            # ordinary unicast one: not to ::, link-local, multicast or its links
            dsts = [d for d in dsts if not _bad(int(IPv6Address(route.translated(d))))]
            if not dsts:
                continue
        for d in dsts[:count - made]:
            route.items.append(make_case(rng, route, d, seed))
        made += len(route.items)
        routes.append(route)
    return routes


def make_case(rng: random.Random, route: FuzzRoute, dst: int, seed: int) -> Case:
    path = route.path
    spec = random_packet(rng, path, dst)
    new_dst = route.translated(dst)
    send = "raw"
    if path == "output" and spec["proto"] == "udp" and not spec["ext"] and \
            spec.get("csum", "auto") == "auto" and spec["l4_len"] == "auto" and spec["plen"] == "auto" \
            and rng.random() < 0.25:
        send = "udp"  # built by the guest's kernel from a socket
        spec.update(hlim=64, tc=0, flow=0, src=topology.GUEST_ADDR)
        spec["sport"] = rng.randrange(1024, 65536)
        if rng.random() < 0.2:
            spec["no_check6_tx"] = True
    if rng.random() < 0.10 and send == "raw":
        zero_checksum(spec, rng.choice((new_dst, str(spec["dst"]))))
    if send == "udp" and rng.random() < 0.3:
        dst = zero_seed(route, dst, spec, rng.choice((new_dst, str(spec["dst"]))) == new_dst)
        spec["dst"], new_dst = _addr(dst), route.translated(dst)
    layout: "str | list[int]" = "linear"
    if path != "output" and rng.random() < 0.15:
        name = rng.choice(list(layouts.LAYOUTS))
        if layouts.split_offsets(name, spec) is not None:
            layout = name
    n = len(route.items)
    if path == "forward":  # how exchange.py tells forwarded frames apart
        spec["flow"] = 0x80000 | n
    case = Case(id=f"fuzz/{seed}-r{route.index}-p{n}", file=Path(f"<make fuzz SEED={seed}>"),
                verifies="", requirements=[], path=path, send=send,
                nic="eth1" if path == "forward" else "eth0", routes=[fill(route.line)],
                teardown=[default_teardown(fill(route.line))], packet=spec,
                outcome=outcome(spec, path, new_dst), expect_dst=new_dst, look="",
                inject_error=None, stats=None, layout=layout, csum=route.expect_csum,
                needs=["neutral-map"] if route.csum_mode.startswith("neutral") else [])
    case.requirements = requirements(case)
    return case


def requirements(case: Case) -> list[str]:
    """The requirements a packet of this shape tests (CONFORMANCE.md)."""
    spec = case.packet
    proto = packets.proto_number(spec["proto"])
    out = {"output": ["ILA-OUT-ADDR-1"], "input": ["ILA-IN-ADDR-1"],
           "forward": ["ILA-FWD-1"]}[case.path]
    way = "IN" if case.path == "input" else "OUT"
    out.append({6: f"ILA-{way}-TCP-1", 17: f"ILA-{way}-UDP-1", 58: f"ILA-{way}-ICMP6-1"}
               .get(proto, "ILA-OUT-OTHER-1"))
    ext = str(spec.get("ext", ""))
    if "frag" in ext:
        out.append("ILA-EXT-FRAG-1")
    elif "rt0" in ext:
        out.append("ILA-EXT-RH-1")
    elif ext:
        out.append("ILA-EXT-1")
    if str(spec.get("csum", "auto")) != "auto":
        out.append("ILA-CSUM-ERR-1" if proto != 17 or str(spec["csum"]) != "0"
                   else "ILA-OUT-UDP-ZERO-1")
    if str(spec.get("l4_len", "auto")) != "auto" or str(spec.get("plen", "auto")) != "auto":
        out.append("ILA-MALFORMED-1")
    if case.layout != "linear":
        out.append("ILA-RX-LAYOUT-1")
        if layouts.clones(case.layout):
            out.append("ILA-SHARED-1")
    out.append("ILA-ROUTE-1")
    return list(dict.fromkeys(out))
