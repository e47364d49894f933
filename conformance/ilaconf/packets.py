"""The oracle's packets, built by scapy independently of the guest's C builder.

Expected bytes are always made by building the packet with the destination it
should have and letting scapy compute the checksum in full; the kernel's
incremental formula is never reused here.
"""

from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6, ICMPv6EchoRequest, ICMPv6EchoReply
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from . import topology

PROTO_NUMBERS = {"tcp": 6, "udp": 17, "icmpv6": 58}


def proto_number(proto: object) -> int:
    if isinstance(proto, int):
        return proto
    if str(proto) in PROTO_NUMBERS:
        return PROTO_NUMBERS[str(proto)]
    return int(str(proto), 0)


def payload(n: int) -> bytes:
    """The payload pattern of lib/pkt.c: bytes 0, 1, 2, ... modulo 256."""
    return bytes(i & 0xFF for i in range(n))


def build_l3(spec: dict[str, object], dst: str) -> Packet:
    """The IPv6 packet of a case's [packet] table, with destination dst."""
    proto = proto_number(spec["proto"])
    ip = IPv6(src=str(spec["src"]), dst=dst, hlim=int(spec["hlim"]), tc=int(spec["tc"]),
              fl=int(spec["flow"]), nh=proto)
    csum = None if spec["csum"] == "auto" else int(str(spec["csum"]), 0)
    data = Raw(payload(int(spec["payload_len"])))
    if proto == 6:
        l4: Packet = TCP(sport=int(spec["sport"]), dport=int(spec["dport"]), seq=int(spec["seq"]),
                         ack=int(spec["ack"]), flags=str(spec["flags"]), window=int(spec["window"]),
                         urgptr=int(spec["urgptr"]), dataofs=5, chksum=csum)
    elif proto == 17:
        l4 = UDP(sport=int(spec["sport"]), dport=int(spec["dport"]), chksum=csum)
    elif proto == 58:
        kind = {128: ICMPv6EchoRequest, 129: ICMPv6EchoReply}.get(int(spec["type"]))
        if kind is None:
            raise ValueError(f"icmpv6 type {spec['type']} is not an echo type the builder knows")
        l4 = kind(code=int(spec["code"]), id=int(spec["id"]), seq=int(spec["icmp_seq"]), cksum=csum)
    else:
        return ip / data
    return ip / l4 / data


def frame_from_guest(l3: Packet) -> bytes:
    """An IPv6 packet as the guest puts it on the wire to the host."""
    return bytes(Ether(src=topology.GUEST_MAC, dst=topology.HOST_MAC) / l3)


def injector_args(spec: dict[str, object]) -> list[str]:
    """The same packet as ila-inject fields (lib/pkt.h names)."""
    return [f"{k}={v}" for k, v in sorted(spec.items())]
