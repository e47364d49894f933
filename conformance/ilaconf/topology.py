"""The fixed test topology: one guest NIC on a link to the host.

    guest (QEMU, ila under test)              host (this process, scapy)
    eth0 52:54:00:12:34:56                    52:54:00:00:00:02
    2401:db00:20:911a:face:0:25:0/64  <---->  2401:db00:20:911a:face:0:27:0
    SIR address 3333:0:0:1:5555:0:1:0/128

The addresses are the seed's own (001 and 005): its ILA routes go "via"
2401:db00:20:911a:face:0:27:0, here the host. Cases refer to them by the
placeholders {guest}, {host}, {guest_sir} and {dev} and never repeat them.
"""

GUEST_MAC = "52:54:00:12:34:56"
HOST_MAC = "52:54:00:00:00:02"
GUEST_ADDR = "2401:db00:20:911a:face:0:25:0"
HOST_ADDR = "2401:db00:20:911a:face:0:27:0"
GUEST_SIR = "3333:0:0:1:5555:0:1:0"
PREFIX_LEN = 64
GUEST_DEV = "eth0"
IP = "/sbin/ip"  # the host's iproute2, copied into the initramfs

PLACEHOLDERS = {
    "guest": GUEST_ADDR,
    "host": HOST_ADDR,
    "guest_sir": GUEST_SIR,
    "dev": GUEST_DEV,
}

# Marker datagrams (UDP to this port on the host) end each case's capture.
MARK_PORT = 9


def setup_steps() -> list[tuple[str, list[str]]]:
    """Agent commands that bring the guest's network up deterministically."""
    conf = f"/proc/sys/net/ipv6/conf/{GUEST_DEV}"
    steps: list[tuple[str, list[str]]] = []
    # Before the link goes up, or they do not apply (NOTES.md).
    for path, value in [
        ("/proc/sys/net/ipv6/conf/all/accept_dad", "0"),
        ("/proc/sys/net/ipv6/conf/default/accept_dad", "0"),
        (f"{conf}/accept_dad", "0"),
        (f"{conf}/router_solicitations", "0"),
        (f"{conf}/accept_ra", "0"),
        (f"{conf}/autoconf", "0"),
    ]:
        steps.append(("write", [path, value]))
    for cmd in [
        f"link set lo up",
        f"link set {GUEST_DEV} up",
        f"-6 addr add {GUEST_ADDR}/{PREFIX_LEN} dev {GUEST_DEV} nodad",
        f"-6 addr add {GUEST_SIR}/128 dev {GUEST_DEV} nodad",
        f"-6 neigh add {HOST_ADDR} lladdr {HOST_MAC} dev {GUEST_DEV} nud permanent",
    ]:
        steps.append(("exec", [IP, *cmd.split()]))
    return steps
