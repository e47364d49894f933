"""Receive layouts: how the packet of an input or forward case reaches the stack.

`linear` is the host's frame through virtio-net, which copies it into one
buffer. Every other layout has the guest's ila-rx hand the same frame to the
stack through a tap opened with IFF_NAPI_FRAGS (guest-init/ila-rx.c): the
bytes before the first split are the skb's head, each later piece a page
fragment, as a NIC driver with header split or page-based receive gives
them. A case may name its layout (`layout = "transport-in-frag"`) or give the
split offsets in the Ethernet frame (`layout = [14, 60]`); every input and
forward case that names none also runs in each named layout, as the
generated case CASE@LAYOUT, judged by the same oracle and golden capture:
the expected bytes are those of the linear run.

Receive checksum states the guest can produce, and how:
- CHECKSUM_UNNECESSARY: TCP and UDP through GRO, which validates the
  checksum before any hook and marks the skb (tcp6_gro_receive,
  udp6_gro_receive: skb_gro_checksum_validate). That is the linear path
  (virtio-net calls napi_gro_receive) and the `gro` layout. A translation
  that breaks the checksum is then never caught by the receiving stack.
- CHECKSUM_NONE: every GRO-off layout, and ICMPv6 on every path (no GRO
  handler): the stack verifies the checksum after the translation.
- Not produced: CHECKSUM_COMPLETE, which no driver of a NIC model QEMU 7.2
  offers sets (virtio_net, e1000, e1000e, e100, 8139too, 8139cp, ne2k-pci,
  pcnet32, vmxnet3 in 6.1: none mentions CHECKSUM_COMPLETE); CHECKSUM_PARTIAL
  and a chosen CHECKSUM_UNNECESSARY on receive, since tun ignores the
  virtio_net_hdr's DATA_VALID flag (only drivers/net/virtio_net.c reads it)
  and a NEEDS_CSUM packet's field holds the pseudo-header sum, so an input
  case's quoted packet would differ from the linear run's.
"""

from dataclasses import dataclass

from ..oracle import packets

ETH_HLEN = 14


@dataclass(frozen=True)
class Layout:
    name: str
    why: str
    split: str  # "eth", "l4", "l4+hdr", or "" (linear)
    gro: bool = False
    clone: bool = False
    csum: str = "none"


LAYOUTS = {
    layout.name: layout for layout in (
        Layout("headers-in-frags", "only the Ethernet header in the head: the IPv6 and "
               "transport headers in a page fragment, GRO off", "eth"),
        Layout("transport-in-frag", "Ethernet and IPv6 headers in the head, the transport "
               "header in a page fragment, GRO off", "l4"),
        Layout("payload-in-frags", "every header in the head, the payload in a page "
               "fragment, GRO off", "l4+hdr"),
        Layout("gro", "only the Ethernet header in the head, GRO on: GRO pulls the "
               "headers it parses, as on a real NIC", "eth", gro=True),
        Layout("cloned", "linear, with a packet socket on the receiving device (as "
               "tcpdump): the stack's skb is a clone sharing its data", "", clone=True),
        Layout("cloned-transport-in-frag", "the transport header in a page fragment "
               "and the skb cloned: a pull must reallocate the head "
               "(CVE-2026-68127)", "l4", clone=True),
    )
}
HEADER_LEN = {6: 20, 17: 8, 58: 8}


def names() -> list[str]:
    return ["linear", *LAYOUTS]


def split_offsets(layout: "str | list[int]", spec: dict[str, object]) -> list[int] | None:
    """The split offsets in the Ethernet frame for a layout; None: this packet
    has no such split (no transport header, no payload)."""
    if isinstance(layout, list):
        return layout
    kind = LAYOUTS[layout].split
    if not kind:
        return []
    if kind == "eth":
        return [ETH_HLEN]
    sent = packets.sent_packet(spec)
    off, proto = packets._l4_offset(sent)  # noqa: SLF001 (the oracle's own parse)
    if off >= len(sent):
        return None
    if kind == "l4":
        return [ETH_HLEN + off]
    end = off + HEADER_LEN.get(proto, 0)
    return [ETH_HLEN + end] if HEADER_LEN.get(proto) and end < len(sent) else None


def rx_args(layout: "str | list[int]", spec: dict[str, object]) -> list[str]:
    """ila-rx's options for the layout (the packet fields follow)."""
    split = split_offsets(layout, spec) or []
    named = LAYOUTS.get(layout) if isinstance(layout, str) else None
    args = [f"split={','.join(map(str, split))}"] if split else []
    if named:
        args += [f"gro={int(named.gro)}", f"clone={int(named.clone)}", f"csum={named.csum}"]
    return args


def clones(layout: "str | list[int]") -> bool:
    return isinstance(layout, str) and layout in LAYOUTS and LAYOUTS[layout].clone
