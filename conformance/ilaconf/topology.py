"""The fixed test topology: two guest NICs, each on a link to the host.

    guest (QEMU, ILA under test)                host (this process, scapy)
    eth0 virtio-net 52:54:00:12:34:56           52:54:00:00:00:02
      2401:db00:20:911a:face:0:25:0/64  <---->  2401:db00:20:911a:face:0:27:0   {host}
      SIR address 3333:0:0:1:5555:0:1:0/128
      192.0.2.25/24                     <---->  192.0.2.27                      {host4}
    eth1 e1000 52:54:00:12:34:57                52:54:00:00:00:03
      2401:db00:20:911b:face:0:25:0/64  <---->  2401:db00:20:911b:face:0:27:0   {host2}

The IPv6 addresses of the first link are the seed's own (001 and 005): its
ILA routes go "via" 2401:db00:20:911a:face:0:27:0, here the host. eth1 is
an emulated e1000, whose checksum offload gives the guest's stack
CHECKSUM_PARTIAL packets (virtio-net over a datagram socket offers none), and
the second link for forwarding. IPv4 uses TEST-NET-1 (RFC 5737). Cases refer
to all of them by placeholders and never repeat them.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Nic:
    dev: str
    model: str  # QEMU device
    guest_mac: str
    host_mac: str
    guest_addr: str
    host_addr: str
    # the driver pads a frame shorter than 60 bytes with zeros (e1000_xmit_frame:
    # eth_skb_pad); virtio-net sends it as it is
    pads: bool = False
    # the NIC computes the transmit checksum (the guest's stack hands it
    # CHECKSUM_PARTIAL packets); virtio-net over a datagram socket offers none
    tx_csum: bool = False


NICS = (
    Nic("eth0", "virtio-net-pci", "52:54:00:12:34:56", "52:54:00:00:00:02",
        "2401:db00:20:911a:face:0:25:0", "2401:db00:20:911a:face:0:27:0"),
    Nic("eth1", "e1000", "52:54:00:12:34:57", "52:54:00:00:00:03",
        "2401:db00:20:911b:face:0:25:0", "2401:db00:20:911b:face:0:27:0", pads=True,
        tx_csum=True),
)
GUEST_MAC, HOST_MAC = NICS[0].guest_mac, NICS[0].host_mac
GUEST_ADDR, HOST_ADDR = NICS[0].guest_addr, NICS[0].host_addr
GUEST_SIR = "3333:0:0:1:5555:0:1:0"
GUEST_ADDR4, HOST_ADDR4 = "192.0.2.25", "192.0.2.27"
PREFIX_LEN = 64
IP = "/sbin/ip"  # the host's iproute2, copied into the initramfs

PLACEHOLDERS = {
    "guest": GUEST_ADDR,
    "host": HOST_ADDR,
    "guest2": NICS[1].guest_addr,
    "host2": NICS[1].host_addr,
    "guest_sir": GUEST_SIR,
    "guest4": GUEST_ADDR4,
    "host4": HOST_ADDR4,
    "dev": NICS[0].dev,
    "dev2": NICS[1].dev,
}

# The guest's marker datagrams (UDP to this port on the host) end an output
# case's capture; the host's echo requests with this identifier end the
# others'. Both ride on plain routes of eth0.
MARK_PORT = 9
FENCE_ECHO_ID = 0xF3CE


def nic_index(dev: str) -> int:
    for i, nic in enumerate(NICS):
        if nic.dev == dev:
            return i
    raise ValueError(f"no NIC {dev!r} (have {', '.join(n.dev for n in NICS)})")


def setup_steps() -> list[tuple[str, list[str]]]:
    """Agent commands that bring the guest's network up deterministically."""
    steps: list[tuple[str, list[str]]] = []
    sysctls = [
        # Deterministic replies: no random flow labels, no ICMPv6 rate limit.
        ("net/ipv6/auto_flowlabels", "0"),
        ("net/ipv6/icmp/ratelimit", "0"),
        ("net/ipv6/conf/all/forwarding", "1"),
        ("net/ipv6/conf/all/accept_dad", "0"),
        ("net/ipv6/conf/default/accept_dad", "0"),
    ]
    for nic in NICS:  # before the link goes up, or they do not apply (NOTES.md)
        for key in ("accept_dad", "router_solicitations", "accept_ra", "autoconf"):
            sysctls.append((f"net/ipv6/conf/{nic.dev}/{key}", "0"))
    steps += [("write", [f"/proc/sys/{key}", value]) for key, value in sysctls]
    cmds = ["link set lo up"]
    for nic in NICS:
        cmds += [
            f"link set {nic.dev} up",
            f"-6 addr add {nic.guest_addr}/{PREFIX_LEN} dev {nic.dev} nodad",
            f"-6 neigh add {nic.host_addr} lladdr {nic.host_mac} dev {nic.dev} nud permanent",
        ]
    cmds += [
        f"-6 addr add {GUEST_SIR}/128 dev {NICS[0].dev} nodad",
        f"-4 addr add {GUEST_ADDR4}/24 dev {NICS[0].dev}",
        f"-4 neigh add {HOST_ADDR4} lladdr {HOST_MAC} dev {NICS[0].dev} nud permanent",
    ]
    steps += [("exec", [IP, *cmd.split()]) for cmd in cmds]
    return steps
