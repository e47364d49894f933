"""The far side of the network during a control step (`respond = "..."`).

While the step's command runs in the guest, the host answers the guest's
frames on eth0 as the network beyond an ILA route would:

    ptb MTU             a router on a link of MTU bytes: every packet larger
                        gets an ICMPv6 Packet Too Big quoting it
    unreachable         every UDP datagram gets a Destination Unreachable
                        (port) quoting it
    tcp MTU SIR         the ILA node behind that link, holding the SIR
                        address SIR: it answers the handshake and acknowledges
                        data from SIR, as its own input translation would
                        deliver it, and refuses every segment larger than MTU
                        with a Packet Too Big, as the router before it would

Each error quotes the packet as it arrived, so with the translated (ILA)
destination. What the host did is appended to the step's output as
"host: ..." lines, for the step's expectations to check.
"""

from scapy.layers.inet import TCP
from scapy.layers.inet6 import ICMPv6DestUnreach, ICMPv6PacketTooBig, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from .. import topology

QUOTE = 1280 - 48  # the most of the offending packet an ICMPv6 error holds
ISN = 1000


def error(frame: bytes, icmp) -> bytes:
    """An ICMPv6 error from the host (a router) to the packet's sender."""
    sender = IPv6(frame[14:]).src
    l3 = IPv6(src=topology.HOST_ADDR, dst=sender, hlim=64) / icmp / Raw(frame[14:14 + QUOTE])
    return bytes(Ether(src=topology.HOST_MAC, dst=topology.GUEST_MAC) / l3)


def is_guest_ipv6(frame: bytes) -> bool:
    return frame[12:14] == b"\x86\xdd" and len(frame) >= 54 and frame[38:40] != b"\xff\x02"


class PacketTooBig:
    def __init__(self, mtu: int) -> None:
        self.mtu, self.sent = mtu, 0

    def answer(self, frame: bytes) -> bytes | None:
        if not is_guest_ipv6(frame) or len(frame) - 14 <= self.mtu or frame[20] == 58:
            return None
        self.sent += 1
        return error(frame, ICMPv6PacketTooBig(mtu=self.mtu))

    def summary(self) -> list[str]:
        return [f"host: {self.sent} packet(s) over {self.mtu} bytes answered with a "
                "Packet Too Big"]


class Unreachable:
    def __init__(self) -> None:
        self.sent = 0

    def answer(self, frame: bytes) -> bytes | None:
        if not is_guest_ipv6(frame) or IPv6(frame[14:]).nh != 17:
            return None
        self.sent += 1
        return error(frame, ICMPv6DestUnreach(code=4))

    def summary(self) -> list[str]:
        return [f"host: {self.sent} datagram(s) answered with a port unreachable"]


class TcpPeer:
    """One TCP connection's receiver, behind a link of mtu bytes."""

    def __init__(self, mtu: int, sir: str) -> None:
        self.mtu, self.sir = mtu, sir
        self.rcv_nxt = 0
        self.refused = self.accepted = self.largest = 0

    def reply(self, ip, flags: str, options: list | None = None) -> bytes:
        tcp = ip[TCP]
        out = IPv6(src=self.sir, dst=ip.src, hlim=64) / TCP(
            sport=tcp.dport, dport=tcp.sport, seq=ISN + (1 if "S" not in flags else 0),
            ack=self.rcv_nxt, flags=flags, window=65535, options=options or [])
        return bytes(Ether(src=topology.HOST_MAC, dst=topology.GUEST_MAC) / out)

    def answer(self, frame: bytes) -> bytes | None:
        if not is_guest_ipv6(frame):
            return None
        ip = IPv6(frame[14:])
        if ip.nh != 6:
            return None
        tcp = ip[TCP]
        if "S" in tcp.flags:
            self.rcv_nxt = (tcp.seq + 1) & 0xFFFFFFFF
            return self.reply(ip, "SA", [("MSS", 1440)])
        if len(frame) - 14 > self.mtu:
            self.refused += 1
            return error(frame, ICMPv6PacketTooBig(mtu=self.mtu))
        size = len(bytes(tcp.payload))
        if tcp.seq == self.rcv_nxt and size:
            self.rcv_nxt = (self.rcv_nxt + size) & 0xFFFFFFFF
            self.accepted += size
            self.largest = max(self.largest, len(frame) - 14)
        if "F" in tcp.flags:
            self.rcv_nxt = (self.rcv_nxt + 1) & 0xFFFFFFFF
            return self.reply(ip, "FA")
        return self.reply(ip, "A") if size or "F" in tcp.flags else None

    def summary(self) -> list[str]:
        return [f"host: {self.refused} segment(s) over {self.mtu} bytes refused with a Packet "
                f"Too Big; {self.accepted} bytes accepted, in packets of at most "
                f"{self.largest} bytes"]


def make(spec: str, fill):
    """A responder from a step's `respond` (placeholders filled by fill)."""
    words = fill(spec).split()
    if words[:1] == ["ptb"] and len(words) == 2:
        return PacketTooBig(int(words[1]))
    if words == ["unreachable"]:
        return Unreachable()
    if words[:1] == ["tcp"] and len(words) == 3:
        return TcpPeer(int(words[1]), words[2])
    raise ValueError(f"respond = {spec!r}: one of 'ptb MTU', 'unreachable', 'tcp MTU SIR'")
