"""The oracle's packets, built by scapy independently of the guest's C builder.

Expected bytes are always made by building the packet with the destination it
should have and letting scapy compute the checksum in full; the kernel's
incremental formula is never reused. Where a case sends a deliberately wrong
checksum, the expected checksum is the full recompute plus the same error
(one's complement), so the error must be preserved exactly.
"""

from scapy.layers.inet import TCP, UDP
from scapy.layers.ipsec import AH
from scapy.layers.inet6 import (ICMPv6DestUnreach, ICMPv6EchoReply, ICMPv6EchoRequest,
                                ICMPv6Unknown, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, in6_chksum)
from ipaddress import IPv6Address
from socket import AF_INET6, inet_pton

from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from .. import topology

PROTO_NUMBERS = {"tcp": 6, "udp": 17, "icmpv6": 58}
CSUM_OFFSET = {6: 16, 17: 6, 58: 2}  # of the checksum field in the transport header
IPV6_MIN_MTU = 1280
# The guest's own addresses: the source of an ICMPv6 error about a packet to one of them.
GUEST_ADDRESSES = {str(IPv6Address(a)) for a in (topology.GUEST_ADDR, topology.GUEST_SIR,
                                                 topology.NICS[1].guest_addr)}


def proto_number(proto: object) -> int:
    if isinstance(proto, int):
        return proto
    if str(proto) in PROTO_NUMBERS:
        return PROTO_NUMBERS[str(proto)]
    return int(str(proto), 0)


def payload(spec: dict[str, object]) -> bytes:
    """payload_hex, else the pattern of lib/pkt.c: bytes 0, 1, 2, ... modulo 256."""
    if spec.get("payload_hex"):
        return bytes.fromhex(str(spec["payload_hex"]))
    return bytes(i & 0xFF for i in range(int(spec["payload_len"])))


def ext_headers(text: str) -> list[Packet]:
    """ext=hbh,dst,rt0/SEGLEFT/ADDR[/ADDR],frag/OFFSET/M/ID, as lib/pkt.c reads it."""
    out: list[Packet] = []
    for item in filter(None, text.split(",")):
        kind, *args = item.split("/")
        if kind == "hbh" and not args:
            out.append(IPv6ExtHdrHopByHop())
        elif kind == "dst" and not args:
            out.append(IPv6ExtHdrDestOpt())
        elif kind == "rt0" and len(args) >= 2:
            out.append(IPv6ExtHdrRouting(type=0, segleft=int(args[0]), addresses=args[1:]))
        elif kind == "frag" and len(args) == 3:
            out.append(IPv6ExtHdrFragment(offset=int(args[0]), m=int(args[1]), id=int(args[2])))
        elif kind == "ah" and len(args) == 2:
            out.append(AH(payloadlen=4, spi=int(args[0]), seq=int(args[1]), icv=bytes(12)))
        else:
            raise ValueError(f"bad extension header {item!r}")
    return out


def l4_layer(spec: dict[str, object], proto: int, csum: int | None) -> Packet | None:
    """The transport header of the spec; None for protocols built as payload only."""
    if proto == 6:
        return TCP(sport=int(spec["sport"]), dport=int(spec["dport"]), seq=int(spec["seq"]),
                   ack=int(spec["ack"]), flags=str(spec["flags"]), window=int(spec["window"]),
                   urgptr=int(spec["urgptr"]), dataofs=5, chksum=csum)
    if proto == 17:
        return UDP(sport=int(spec["sport"]), dport=int(spec["dport"]), chksum=csum)
    if proto == 58:
        t, code, ident, seq = (int(spec[k]) for k in ("type", "code", "id", "icmp_seq"))
        if t in (128, 129):
            kind = ICMPv6EchoRequest if t == 128 else ICMPv6EchoReply
            return kind(code=code, id=ident, seq=seq, cksum=csum)
        # Other types: type, code, checksum, then the 4 bytes lib/pkt.c fills with id, seq.
        return ICMPv6Unknown(type=t, code=code, cksum=csum,
                             msgbody=ident.to_bytes(2, "big") + seq.to_bytes(2, "big"))
    return None


def _build(spec: dict[str, object], dst: str, csum: int | None) -> bytes:
    proto = proto_number(spec["proto"])
    headers: list[Packet] = [IPv6(src=str(spec["src"]), dst=dst, hlim=int(spec["hlim"]),
                                  tc=int(spec["tc"]), fl=int(spec["flow"]))]
    headers += ext_headers(str(spec.get("ext", "")))
    l4 = l4_layer(spec, proto, csum)
    if l4 is None:  # an opaque payload: the last header must name its protocol
        headers[-1].nh = proto
    else:
        headers.append(l4)
    for h, nxt in zip(headers, headers[1:]):
        if isinstance(h, AH):  # scapy names the next header of the IPv6 ones only
            h.nh = nxt.overload_fields.get(IPv6, {}).get("nh", proto) \
                if not isinstance(nxt, AH) else 51
    pkt = headers[0]
    for h in headers[1:]:
        pkt = pkt / h
    pkt = pkt / Raw(payload(spec))
    if l4 is not None and csum is None and isinstance(pkt[l4.__class__].underlayer, AH):
        # scapy's TCP and UDP compute their checksum only right behind an
        # IPv6 header or one of its extension headers: right behind AH,
        # in6_chksum does it over the same pseudo-header (RFC 8200 8.1)
        body = bytearray(bytes(pkt[l4.__class__]))
        body[CSUM_OFFSET[proto]:CSUM_OFFSET[proto] + 2] = b"\0\0"
        value = in6_chksum(proto, pkt[l4.__class__].underlayer, bytes(body))
        value = 0xFFFF if proto == 17 and value == 0 else value
        setattr(pkt[l4.__class__], "chksum" if proto != 58 else "cksum", value)
    return _truncate(spec, bytes(pkt))


def _l4_offset(raw: bytes) -> tuple[int, int]:
    """(offset, protocol) of the header after the IPv6 extension headers."""
    nh, off = raw[6], 40
    while nh in (0, 43, 44, 51, 60):
        nxt = raw[off]
        off += 8 if nh == 44 else (raw[off + 1] + 2) * 4 if nh == 51 else (raw[off + 1] + 1) * 8
        nh = nxt
    return off, nh


def _truncate(spec: dict[str, object], raw: bytes) -> bytes:
    """l4_len keeps only that many transport bytes; plen overrides the length field."""
    if str(spec.get("l4_len", "auto")) != "auto":
        off, _ = _l4_offset(raw)
        raw = raw[:off + int(spec["l4_len"])]
    plen = len(raw) - 40 if str(spec.get("plen", "auto")) == "auto" else int(spec["plen"])
    return raw[:4] + plen.to_bytes(2, "big") + raw[6:]


def ones_fold(value: int) -> int:
    """A sum folded to 16 bits with end-around carries (one's complement)."""
    while value > 0xFFFF:
        value = (value & 0xFFFF) + (value >> 16)
    return value


def word_sum(value: int, bits: int = 128) -> int:
    """The plain sum of value's 16-bit words (an address: 128 bits)."""
    return sum((value >> s) & 0xFFFF for s in range(0, bits, 16))


def ones_add(a: int, b: int) -> int:
    return ones_fold(a + b)


def correct_checksum(spec: dict[str, object], dst: str) -> int:
    """The checksum a full recompute gives for the whole (untruncated) packet."""
    full = {**spec, "l4_len": "auto", "plen": "auto"}
    raw = _build(full, dst, None)
    off, proto = _l4_offset(raw)
    return int.from_bytes(raw[off + CSUM_OFFSET[proto]:off + CSUM_OFFSET[proto] + 2], "big")


def expected_checksum(spec: dict[str, object], new_dst: str) -> int | None:
    """The checksum field after translation to new_dst; None: a full recompute.

    A UDP checksum of 0 means none and stays 0 (RFC 6935/6936, seed 005:171).
    Otherwise the sent value's error against the correct checksum is carried
    over to the correct checksum for new_dst, in the form a one's complement
    adder yields (0x0000, not 0xffff), and UDP sends a 0 as 0xffff (RFC 768).
    """
    proto = proto_number(spec["proto"])
    if spec["csum"] == "auto" or proto not in CSUM_OFFSET:
        return None
    sent = int(str(spec["csum"]), 0)
    if proto == 17 and sent == 0:
        return 0
    error = ones_add(sent, ~correct_checksum(spec, str(spec["dst"])) & 0xFFFF)
    value = ones_add(correct_checksum(spec, new_dst), error)
    value = 0 if value == 0xFFFF else value
    return 0xFFFF if proto == 17 and value == 0 else value


def sent_packet(spec: dict[str, object]) -> bytes:
    """The IPv6 packet exactly as the case sends it."""
    csum = None if spec["csum"] == "auto" else int(str(spec["csum"]), 0)
    return _build(spec, str(spec["dst"]), csum)


def translated_packet(spec: dict[str, object], new_dst: str) -> bytes:
    """The packet as it must leave an ILA translation to new_dst.

    A packet whose destination holds the locator already leaves unchanged.
    Only the destination changes where no checksum covers it: behind a
    routing header with segments left, whose pseudo-header holds the final
    destination (RFC 8200 8.1), in a non-first fragment, which carries no
    transport header (RFC 8200 4.5), and where the transport header ends
    before its checksum field does (ILA-MALFORMED-1).
    """
    if inet_pton(AF_INET6, new_dst) == inet_pton(AF_INET6, str(spec["dst"])):
        return sent_packet(spec)  # nothing to translate: byte for byte (ILA-ADDR-NOOP-1)
    ext = ext_headers(str(spec.get("ext", "")))
    if any(e.haslayer(IPv6ExtHdrFragment) and e.offset for e in ext) or \
            any(e.haslayer(IPv6ExtHdrRouting) and e.segleft for e in ext):
        return untouched_packet(spec, new_dst)
    sent = sent_packet(spec)
    off, proto = _l4_offset(sent)
    if proto in CSUM_OFFSET and len(sent) - off < CSUM_OFFSET[proto] + 2:
        return untouched_packet(spec, new_dst)
    return _build(spec, new_dst, expected_checksum(spec, new_dst))


def untouched_packet(spec: dict[str, object], new_dst: str) -> bytes:
    """The packet with only its destination rewritten: no checksum adjusted."""
    raw = bytearray(sent_packet(spec))
    raw[24:40] = inet_pton(AF_INET6, new_dst)
    return bytes(raw)


def locator_sum(addr: str) -> int:
    """The one's complement sum of an address's upper 64 bits."""
    b = inet_pton(AF_INET6, addr)[:8]
    total = 0
    for i in range(0, 8, 2):
        total = ones_add(total, int.from_bytes(b[i:i + 2], "big"))
    return total


def moved(field: int, frm: str, to: str) -> int:
    """A checksum field updated as if the upper 64 bits of its pseudo-header's
    destination went from frm's to to's (RFC 1624, eqn. 3), in the form a one's
    complement adder yields. An implementation that adjusts by the wrong
    difference is modelled by the pair it uses instead: (new, old) is the
    sign error, (route prefix, new) a difference from the route's locator."""
    total = ones_add(ones_add(~field & 0xFFFF, ~locator_sum(frm) & 0xFFFF), locator_sum(to))
    return ~total & 0xFFFF


def moved_packet(spec: dict[str, object], new_dst: str, frm: str, to: str) -> bytes:
    """The packet with its destination rewritten and the transport checksum
    right after the IPv6 header moved from frm to to (moved()); a UDP 0 stays
    0 and a result of 0 is sent as 0xffff."""
    raw = bytearray(untouched_packet(spec, new_dst))
    proto = raw[6]
    at = 40 + CSUM_OFFSET.get(proto, 0)
    if proto not in CSUM_OFFSET or len(raw) < at + 2:
        return bytes(raw)
    field = int.from_bytes(raw[at:at + 2], "big")
    if proto == 17 and field == 0:
        return bytes(raw)
    value = moved(field, frm, to)
    value = 0xFFFF if proto == 17 and value == 0 else value
    raw[at:at + 2] = value.to_bytes(2, "big")
    return bytes(raw)


def neutral_address(addr: bytes, locator: bytes, c_bit: bool) -> bytes:
    """Checksum-neutral mapping of one address (draft-herbert-intarea-ila):
    the locator becomes the given 8 bytes, the C-bit of the identifier flips
    if c_bit (set on the way to a locator, cleared on the way back), and the
    identifier's last 16 bits change so that the address's one's complement
    sum, and with it every checksum over it, stays what it was. Derived from
    that property, not from any implementation's formula. Where the last 16
    bits come out as zero, one's complement has two forms of it: 0x0000 is
    expected, so that an identifier ending in zero, as most do, comes back
    exactly from a round trip (only one form can). An address that holds the
    locator already is left as it is (ILA-ADDR-NOOP-1)."""
    if addr[:8] == locator[:8]:
        return bytes(addr[:16])
    new = bytearray(locator[:8] + addr[8:16])
    if c_bit:
        new[8] ^= 0x10

    def sum14(b: bytes) -> int:  # every 16-bit word but the last
        total = 0
        for i in range(0, 14, 2):
            total = ones_add(total, int.from_bytes(b[i:i + 2], "big"))
        return total
    # sum(old) == sum(new): last_new = sum14(old) + last_old - sum14(new)
    last = ones_add(ones_add(sum14(addr), int.from_bytes(addr[14:16], "big")), ~sum14(new) & 0xFFFF)
    new[14:16] = (0 if last == 0xFFFF else last).to_bytes(2, "big")
    return bytes(new)


def neutral_packet(spec: dict[str, object], new_dst: str, c_bit: bool,
                   old_locator: bytes | None = None) -> bytes:
    """The packet with its destination mapped checksum-neutrally to new_dst's
    locator (neutral_address); the payload is not touched. With old_locator,
    the identifier absorbs the difference from it instead of from the
    packet's own locator (a difference precomputed from a route)."""
    raw = bytearray(sent_packet(spec))
    addr = bytes(raw[24:40]) if old_locator is None else old_locator[:8] + bytes(raw[32:40])
    raw[24:40] = neutral_address(addr, inet_pton(AF_INET6, new_dst)[:8], c_bit)
    return bytes(raw)


def locator_only_packet(spec: dict[str, object], new_dst: str) -> bytes:
    """The packet with new_dst's locator written and nothing else: the
    identifier and every checksum as sent."""
    raw = bytearray(sent_packet(spec))
    raw[24:32] = inet_pton(AF_INET6, new_dst)[:8]
    return bytes(raw)


def ether(l3: bytes, src: str, dst: str) -> bytes:
    return bytes(Ether(src=src, dst=dst, type=0x86DD)) + l3


def from_guest(l3: bytes) -> bytes:
    return ether(l3, topology.GUEST_MAC, topology.HOST_MAC)


def from_host(l3: bytes) -> bytes:
    return ether(l3, topology.HOST_MAC, topology.GUEST_MAC)


def local_reply(spec: dict[str, object], delivered: bytes) -> bytes:
    """What the guest's stack answers to a packet delivered to it (input path).

    A TCP SYN to a closed port gets a RST/ACK, a UDP datagram an ICMPv6 port
    unreachable quoting the packet as delivered (after translation), an echo
    request an echo reply. The RST and the echo reply come from the address
    the packet was delivered to and carry its traffic class (the RST without
    the ECN bits: tcp_v6_send_reset, tcp_v6_send_response; icmpv6_echo_reply).
    The port unreachable comes from that address only if the guest owns it,
    else from the address the guest would send to the sender from (icmp6_send:
    ipv6_chk_addr, then source address selection), with traffic class 0.
    """
    ip = IPv6(delivered)
    me, peer = ip.dst, ip.src
    proto = proto_number(spec["proto"])
    tclass = int(spec.get("tc", 0))
    if proto == 6:
        syn = 1 if "S" in str(spec["flags"]) else 0
        seg = len(payload(spec))
        reply: Packet = IPv6(src=me, dst=peer, hlim=64, tc=tclass & ~3) / \
            TCP(sport=int(spec["dport"]), dport=int(spec["sport"]), seq=0,
                ack=(int(spec["seq"]) + syn + seg) & 0xFFFFFFFF, flags="RA", window=0, dataofs=5)
    elif proto == 17:
        quote = delivered[:IPV6_MIN_MTU - 48]
        src = me if me in GUEST_ADDRESSES else topology.GUEST_ADDR
        reply = IPv6(src=src, dst=peer, hlim=64) / ICMPv6DestUnreach(code=4) / Raw(quote)
    elif proto == 58 and int(spec["type"]) == 128:
        reply = IPv6(src=me, dst=peer, hlim=64, tc=tclass) / \
            ICMPv6EchoReply(id=int(spec["id"]), seq=int(spec["icmp_seq"])) / Raw(payload(spec))
    else:
        raise ValueError(f"no local reply is defined for protocol {proto} on the input path")
    return from_guest(bytes(reply))


def injector_args(spec: dict[str, object]) -> list[str]:
    """The same packet as ila-inject fields (lib/pkt.h names)."""
    def text(v: object) -> str:
        return str(int(v)) if isinstance(v, bool) else str(v)
    return [f"{k}={text(v)}" for k, v in sorted(spec.items()) if v != ""]
