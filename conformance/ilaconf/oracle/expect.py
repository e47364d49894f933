"""What the oracle expects of a packet case: the frames scapy builds with the
destination the case says, every checksum computed in full, never the
kernel's incremental formula (packets.py), and the judgement of captured
frames against them."""

import dataclasses
from ipaddress import IPv6Address

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import (ICMPv6DestUnreach, ICMPv6PacketTooBig, ICMPv6TimeExceeded, IPv6,
                                in6_chksum)
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from .. import topology
from ..catalog import properties
from ..catalog.cases import Case
from ..catalog.deviations import Deviation
from . import compare, packets, tunnels

ETH_IPV4 = b"\x08\x00"
ETH_ZLEN = 60  # the shortest Ethernet frame, without its FCS


def oracle_spec(case: Case) -> dict[str, object]:
    """The packet the guest's kernel builds for a socket send, as raw fields."""
    spec = dict(case.packet)
    if case.send == "udp":
        spec.update(csum="0" if spec.get("no_check6_tx") else "auto")
    return spec


def frame_on(nic: str, l3: bytes) -> bytes:
    n = topology.NICS[topology.nic_index(nic)]
    frame = packets.ether(l3, n.guest_mac, n.host_mac)
    return frame.ljust(ETH_ZLEN, b"\0") if n.pads else frame


# Wrong adjustments a deviation may declare (catalog/deviations.py, CSUMS):
# the checksum moved from one locator to another, (from, to) of moved_locators.
MOVED = ("reversed", "from-route", "reversed-from-route", "incremental")


def moved_locators(case: Case) -> tuple[str, str]:
    """The (from, to) addresses whose upper 64 bits a wrong adjustment uses:
    reversed, new to old (old minus new: the sign error); from-route, the
    route's destination's upper 64 bits as the kernel got them to new (a
    difference precomputed from the route, not the packet); reversed-from-
    route, both errors at once; incremental, old to new, applied even when
    they are the same."""
    old, new = str(case.packet["dst"]), str(case.expect_dst)
    route = properties.ila_route(case.routes)
    written = str(IPv6Address(properties.route_destination(route[0]))) if route else old
    return {"reversed": (new, old), "from-route": (written, new),
            "reversed-from-route": (new, written), "incremental": (old, new)}[case.csum]


def expected_frames(case: Case) -> list[bytes] | None:
    """The oracle's frames, or None where only validity can be judged (send = tcp)."""
    if case.outcome == "dropped":
        return []
    if case.send == "tcp":
        return None
    if case.send == "udp4" and str(case.packet["dst4"]) != topology.HOST_ADDR4:
        # Only the host is a static neighbour: any other next hop is
        # resolved first, and the datagram waits for an answer that never comes.
        arp = ARP(op=1, hwsrc=topology.GUEST_MAC, psrc=topology.GUEST_ADDR4,
                  hwdst="00:00:00:00:00:00", pdst=str(case.packet["dst4"]))
        return [bytes(Ether(src=topology.GUEST_MAC, dst="ff:ff:ff:ff:ff:ff") / arp)]
    if case.send == "udp4":
        p = case.packet
        l3 = bytes(IP(src=topology.GUEST_ADDR4, dst=str(p["dst4"]), id=0, flags="DF", ttl=64)
                   / UDP(sport=int(p["sport"]), dport=int(p["dport"]))
                   / Raw(packets.payload(p)))
        return [packets.ether(l3, topology.GUEST_MAC, topology.HOST_MAC)[:12] + ETH_IPV4 + l3]
    spec = oracle_spec(case)
    if case.quote is not None:  # an ICMPv6 error: its quote as the guest must leave it
        spec = {**spec, "payload_hex": quote_after(case).hex(), "payload_len": 0}
    if case.outcome == "error":
        quoted = packets.sent_packet(spec)
        if case.error_quote == "translated":
            quoted = translated_l3(case, spec)
        elif case.error_quote == "csum-only":  # the checksum translated, not the address
            quoted = quoted[:40] + translated_l3(case, spec)[40:]
        return [node_error(case, spec, quoted)]
    if case.tunnel is not None:
        l3 = tunnels.translated(case, spec) if case.outcome == "translated" else \
            tunnels.outer(case, spec, case.tunnel.remote)
        return [frame_on(case.nic, l3)]
    l3 = translated_l3(case, spec) if case.outcome == "translated" else packets.sent_packet(spec)
    if case.path == "input":
        return [packets.local_reply(spec, l3)]
    if case.path == "forward":
        l3 = l3[:7] + bytes([l3[7] - 1]) + l3[8:]  # the hop limit a router decrements
    return [frame_on(case.nic, l3)]


def translated_l3(case: Case, spec: dict[str, object]) -> bytes:
    """The packet translated to the case's expect_dst, its checksum as the
    case's rule (or its deviation's) says."""
    if case.csum == "untouched":
        return packets.untouched_packet(spec, str(case.expect_dst))
    if case.csum == "locator-only":
        return packets.locator_only_packet(spec, str(case.expect_dst))
    if case.csum in ("neutral", "neutral-auto"):
        return packets.neutral_packet(spec, str(case.expect_dst), c_bit=case.csum == "neutral")
    if case.csum in ("neutral-from-route", "neutral-auto-from-route"):
        # the difference from the route prefix's upper 64 bits as written
        written = properties.route_destination(properties.ila_route(case.routes)[0])
        return packets.neutral_packet(spec, str(case.expect_dst),
                                      c_bit=case.csum == "neutral-from-route", old_locator=written)
    if case.csum in MOVED:
        return packets.moved_packet(spec, str(case.expect_dst), *moved_locators(case))
    return packets.translated_packet(spec, str(case.expect_dst))


def node_error(case: Case, spec: dict[str, object], quoted: bytes) -> bytes:
    """The guest's own ICMPv6 error about a packet it forwards (outcome
    error), as a router sends it: from its address on the link the packet
    came in by, to the packet's source, quoting as much of the packet as
    fits in the minimum MTU (RFC 4443 2.4(c)): ip6_forward() answers a hop
    limit of 1 with Time Exceeded and a packet larger than the next link
    with Packet Too Big, both before it decrements the hop limit."""
    kind, *arg = str(case.error).split()
    icmp = ICMPv6TimeExceeded(code=0) if kind == "time-exceeded" else \
        ICMPv6PacketTooBig(mtu=int(arg[0])) if kind == "packet-too-big" else \
        ICMPv6DestUnreach(code=int(arg[0]))
    rx = topology.NICS[topology.nic_index(case.rx_nic)]
    l3 = IPv6(src=rx.guest_addr, dst=str(spec["src"]), hlim=64) / icmp / \
        Raw(quoted[:packets.IPV6_MIN_MTU - 48])
    return packets.ether(bytes(l3), rx.guest_mac, rx.host_mac)


def quote_after(case: Case) -> bytes:
    """The quoted packet with its destination quote_dst: the transport
    checksum adjusted as a translation adjusts it, where the quote holds the
    whole field (packets.translated_packet), else only the address. A route
    that maps checksum-neutrally, or leaves checksums alone, changed no
    checksum on the way out: the way back changes none either."""
    quote, dst = case.quote, str(case.quote_dst)
    sent = packets.sent_packet(quote)[:case.quote_len]
    if IPv6Address(dst) == IPv6Address(str(quote["dst"])) or len(sent) < 40:
        return sent
    if case.csum != "adjusted":
        return packets.untouched_packet(quote, dst)[:case.quote_len]
    full = packets.translated_packet(quote, dst)
    off, proto = packets._l4_offset(full)  # noqa: SLF001 (the oracle's own parse)
    holds = proto in packets.CSUM_OFFSET and len(sent) >= off + packets.CSUM_OFFSET[proto] + 2
    return full[:case.quote_len] if holds else \
        packets.untouched_packet(quote, dst)[:case.quote_len]


def check_valid(case: Case, frames: list[bytes]) -> tuple[str, list[str]] | None:
    """For kernel-built TCP: every frame translated, its checksum a full recompute's."""
    if not frames:
        return "no frame of the flow was captured", []
    want = IPv6Address(str(case.expect_dst))
    for i, f in enumerate(frames):
        ip = Ether(f)[IPv6]
        if IPv6Address(ip.dst) != want:
            return f"frame {i}: ipv6.dst {ip.dst}, expected {want}", []
        l4 = bytes(ip.payload)
        if case.csum in MOVED:  # the wrong adjustment of the right value
            ip.dst = str(case.packet["dst"])
            right = in6_chksum(ip.nh, ip, l4[:16] + b"\0\0" + l4[18:])
            wrong = packets.moved(right, *moved_locators(case))
            got = int.from_bytes(l4[16:18], "big")
            if got != wrong:
                return (f"frame {i}: tcp.checksum 0x{got:04x}, the {case.csum} adjustment "
                        f"gives 0x{wrong:04x}", [])
            continue
        if case.csum == "untouched":  # still the checksum of the original destination
            ip.dst = str(case.packet["dst"])
        if in6_chksum(ip.nh, ip, l4) != 0:  # a correct checksum sums to zero
            fixed = in6_chksum(ip.nh, ip, l4[:16] + b"\0\0" + l4[18:])
            return (f"frame {i}: tcp.checksum 0x{int.from_bytes(l4[16:18], 'big'):04x} is wrong, "
                    f"a full recompute gives 0x{fixed:04x}", [])
    return None


def judge(case: Case, frames: list[bytes]) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics): the frames against the oracle's."""
    expected = expected_frames(case)
    if expected is None:
        bad = check_valid(case, frames)
        if bad:
            return "fail", bad[0], bad[1]
    elif len(frames) != len(expected):
        diag = [f"captured frame {i}: {f.hex()}" for i, f in enumerate(frames)]
        return "fail", f"expected {len(expected)} frame(s) of the flow, captured {len(frames)}", diag
    else:
        for i, (exp, got) in enumerate(zip(expected, frames)):
            lines = compare.diff(exp, got)
            if lines:
                return "fail", f"frame {i} differs from the oracle (scapy, full checksum recompute)", lines
    return "pass", "", []


def as_deviation(case: Case, dev: Deviation) -> Case:
    """The case as a declared deviation says the column behaves instead."""
    return dataclasses.replace(
        case, outcome=dev.outcome or case.outcome, expect_dst=dev.dst or case.expect_dst,
        csum=dev.csum, inject_error=dev.inject_error, stats=None,
        quote_dst=case.quote["dst"] if dev.quote == "untouched" and case.quote else case.quote_dst,
        error_quote=dev.quote if dev.quote in ("translated", "csum-only") else case.error_quote,
        error=dev.error or case.error)
