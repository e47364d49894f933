"""A case's UDP tunnel ([tunnel] of a case file): what the guest sends goes
inside it, and the outer packet, addressed to a SIR address, takes the ILA
route. The table makes the device (so that the oracle and the set-up lines
come from one place) and lets the oracle build the outer packet:

    [tunnel]
    kind = "vxlan"               # vxlan, or fou (an ip6tnl in FOU)
    remote = "3333:0:0:1:5555:0:2:0"   # the outer destination (a SIR address)
    port = 4789                  # the outer UDP ports, source and destination
    outer_csum = "full"          # full, or zero (udp6zerocsumtx): its checksum on transmit
    vni = 42                     # vxlan: the network identifier

The guest's side of the tunnel is fd00:42::1/64 on a device of fixed MAC,
the inner peer fd00:42::2 a static neighbour; the case's packet goes from
the first to the second.
"""

from dataclasses import dataclass
from typing import Callable

KINDS = ("vxlan", "fou")
DEV = "ilatun0"
MAC, PEER_MAC = "02:00:00:00:42:01", "02:00:00:00:42:02"
ADDR, PEER = "fd00:42::1", "fd00:42::2"


class TunnelError(ValueError):
    pass


@dataclass(frozen=True)
class Tunnel:
    kind: str
    remote: str
    local: str
    port: int
    outer_csum: str  # full, zero
    vni: int = 42

    def setup(self) -> list[str]:
        zero = " udp6zerocsumtx" if self.outer_csum == "zero" else ""
        if self.kind == "vxlan":
            # a one-port source range: the flow-hashed source port is fixed
            dev = (f"ip link add {DEV} address {MAC} type vxlan id {self.vni} "
                   f"remote {self.remote} local {self.local} dstport {self.port} "
                   f"srcport {self.port} {self.port + 1}{zero}")
            lines = [dev, f"ip link set {DEV} up",
                     f"ip -6 neigh add {PEER} lladdr {PEER_MAC} dev {DEV} nud permanent"]
        else:
            zero = " noencap-csum6" if self.outer_csum == "zero" else " encap-csum6"
            dev = (f"ip -6 link add {DEV} type ip6tnl mode ip6ip6 remote {self.remote} "
                   f"local {self.local} encaplimit none encap fou encap-sport {self.port} "
                   f"encap-dport {self.port}{zero}")
            lines = [dev, f"ip link set {DEV} up"]
        return [lines[0], lines[1], f"ip -6 addr add {ADDR}/64 dev {DEV} nodad", *lines[2:]]

    def teardown(self) -> list[str]:
        return [f"ip link del {DEV}"]

    def inner_at(self) -> int:
        """Where the inner IPv6 header starts in the outer UDP payload."""
        return 8 + 14 if self.kind == "vxlan" else 0

    def payload(self, inner: bytes) -> bytes:
        """The outer UDP payload: the inner IPv6 packet, framed as the tunnel frames it."""
        if self.kind == "vxlan":  # RFC 7348: flags with I set, the VNI in bits 8-31
            header = bytes([0x08, 0, 0, 0]) + (self.vni << 8).to_bytes(4, "big")
            ether = bytes.fromhex(PEER_MAC.replace(":", "") + MAC.replace(":", "")) + b"\x86\xdd"
            return header + ether + inner
        return inner  # FOU: the IPv6 packet itself (ipproto 41)

    def outer_spec(self, inner: bytes) -> dict[str, object]:
        """The outer packet as a case's [packet] fields: what the ILA route
        translates, for the case's properties (deviations match on them)."""
        return {"proto": "udp", "src": self.local, "dst": self.remote, "sport": self.port,
                "dport": self.port, "payload_hex": self.payload(inner).hex(),
                "csum": "0" if self.outer_csum == "zero" else "auto"}


def load(file: object, data: object, fill: Callable[[str], str]) -> Tunnel:
    if not isinstance(data, dict) or set(data) - {"kind", "remote", "port", "outer_csum", "vni"} \
            or data.get("kind") not in KINDS or "remote" not in data:
        raise TunnelError(f"{file}: [tunnel] is kind ({', '.join(KINDS)}), remote, and "
                          "optionally port, outer_csum (full, zero) and vni")
    if data.get("outer_csum", "full") not in ("full", "zero"):
        raise TunnelError(f"{file}: tunnel.outer_csum is full or zero")
    return Tunnel(str(data["kind"]), fill(str(data["remote"])), fill("{guest}"),
                  int(data.get("port", 4789 if data["kind"] == "vxlan" else 5555)),
                  str(data.get("outer_csum", "full")), int(data.get("vni", 42)))
