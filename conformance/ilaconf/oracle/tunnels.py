"""The oracle's outer packet of a case sent through a UDP tunnel ([tunnel],
catalog/tunnel.py): the inner packet as the guest's kernel builds it, inside
VXLAN or FOU, inside IPv6 and UDP to the tunnel's remote, which the ILA
route translates. scapy computes the outer UDP checksum in full over the
translated destination; a tunnel with udp6zerocsumtx sends none.

What a wrong translation makes of the outer checksum (a deviation's csum):
untouched (still the checksum for the SIR destination), or as-partial and
reversed-as-partial: adjusted as if the field held a CHECKSUM_PARTIAL
pseudo-header sum, which it does not when the offload is the inner
header's (local checksum offload computes the outer one whole, lco_csum()),
by new minus old or old minus new.
"""

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

from ..catalog.cases import Case
from . import packets

OUTER_CSUM = 14 + 40 + 6  # the outer UDP checksum in the frame


def outer(case: Case, spec: dict[str, object], dst: str) -> bytes:
    """The outer IPv6 packet to dst, its UDP checksum full or zero."""
    t = case.tunnel
    udp = UDP(sport=t.port, dport=t.port, chksum=0 if t.outer_csum == "zero" else None)
    return bytes(IPv6(src=t.local, dst=dst, hlim=64) / udp /
                 Raw(t.payload(packets.sent_packet(spec))))


def partial_adjust(field: int, frm: str, to: str) -> int:
    """A UDP field adjusted as a CHECKSUM_PARTIAL pseudo-header sum is
    (inet_proto_csum_replace_by_diff): the difference of the locators added
    to it, not to its complement; a result of 0 sent as 0xffff."""
    total = packets.ones_add(packets.ones_add(field, ~packets.locator_sum(frm) & 0xFFFF),
                             packets.locator_sum(to))
    return total or 0xFFFF


def translated(case: Case, spec: dict[str, object]) -> bytes:
    """The outer packet as it must leave, or as the case's deviation says."""
    t, dst = case.tunnel, str(case.expect_dst)
    if case.csum == "adjusted":
        return outer(case, spec, dst)
    raw = bytearray(outer(case, spec, t.remote))  # the field as the tunnel made it
    raw[24:40] = bytes(IPv6(dst=dst))[24:40]
    at = OUTER_CSUM - 14
    field = int.from_bytes(raw[at:at + 2], "big")
    if case.csum in ("as-partial", "reversed-as-partial"):
        frm, to = (t.remote, dst) if case.csum == "as-partial" else (dst, t.remote)
        field = partial_adjust(field, frm, to)
    elif case.csum != "untouched":
        raise ValueError(f"{case.id}: no tunnel form for csum = {case.csum}")
    raw[at:at + 2] = field.to_bytes(2, "big")
    return bytes(raw)
