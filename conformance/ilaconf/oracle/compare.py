"""Field-by-field comparison with Wireshark's field names, for humans."""

from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6, _ICMPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet

# scapy field -> Wireshark display filter field, per layer.
WIRESHARK_NAMES: dict[type, dict[str, str]] = {
    Ether: {"dst": "eth.dst", "src": "eth.src", "type": "eth.type"},
    IPv6: {"version": "ipv6.version", "tc": "ipv6.tclass", "fl": "ipv6.flow",
           "plen": "ipv6.plen", "nh": "ipv6.nxt", "hlim": "ipv6.hlim",
           "src": "ipv6.src", "dst": "ipv6.dst"},
    TCP: {"sport": "tcp.srcport", "dport": "tcp.dstport", "seq": "tcp.seq_raw",
          "ack": "tcp.ack_raw", "dataofs": "tcp.hdr_len", "reserved": "tcp.flags.res",
          "flags": "tcp.flags", "window": "tcp.window_size_value",
          "chksum": "tcp.checksum", "urgptr": "tcp.urgent_pointer", "options": "tcp.options"},
    UDP: {"sport": "udp.srcport", "dport": "udp.dstport", "len": "udp.length",
          "chksum": "udp.checksum"},
}
ICMPV6_NAMES = {"type": "icmpv6.type", "code": "icmpv6.code", "cksum": "icmpv6.checksum",
                "id": "icmpv6.echo.identifier", "seq": "icmpv6.echo.sequence_number"}


def _names(layer: Packet) -> dict[str, str]:
    if isinstance(layer, _ICMPv6):
        return ICMPV6_NAMES
    return WIRESHARK_NAMES.get(type(layer), {})


def _fmt(layer: Packet, name: str) -> str:
    value = layer.getfieldval(name)
    if name in ("chksum", "cksum", "type") and isinstance(value, int):
        return f"0x{value:04x}"
    return str(value)


def fields(frame: bytes) -> list[tuple[str, str]]:
    """(Wireshark field name, value) for every decoded field of a frame."""
    out: list[tuple[str, str]] = []
    layer: Packet | None = Ether(frame)
    while layer is not None and layer.__class__.__name__ not in ("NoPayload",):
        names = _names(layer)
        prefix = layer.__class__.__name__.lower()
        for f in layer.fields_desc:
            if layer.__class__.__name__ in ("Raw", "Padding"):
                out.append((f"{prefix}.data", bytes(layer.load).hex()))
                break
            out.append((names.get(f.name, f"{prefix}.{f.name}"), _fmt(layer, f.name)))
        layer = layer.payload if layer.payload else None
    return out


def diff(expected: bytes, observed: bytes) -> list[str]:
    """Side-by-side lines, fields that differ marked with '<>'; empty if equal."""
    if expected == observed:
        return []
    exp, obs = fields(expected), fields(observed)
    width = max([len(n) for n, _ in exp + obs] + [5])
    lines = [f"{'field':<{width}}  {'expected':<40}  observed"]
    for i in range(max(len(exp), len(obs))):
        en, ev = exp[i] if i < len(exp) else ("", "(absent)")
        on, ov = obs[i] if i < len(obs) else ("", "(absent)")
        mark = "  " if (en, ev) == (on, ov) else "<>"
        lines.append(f"{en or on:<{width}}  {ev[:40]:<40}  {ov[:60]} {mark}".rstrip())
    first = next((i for i, (a, b) in enumerate(zip(expected, observed)) if a != b),
                 min(len(expected), len(observed)))
    lines.append(f"first differing byte at offset {first} (frame lengths {len(expected)} "
                 f"expected, {len(observed)} observed)")
    return lines


def field_map(frame: bytes) -> list[tuple[int, int, str]]:
    """(offset, length, Wireshark field name) of every byte range of a frame,
    for a reader without scapy (the kselftest runner) to name the field that
    holds a differing byte. Bit fields that share bytes are one range, named
    after all of them ("tcp.hdr_len/tcp.flags.res/tcp.flags")."""
    _, layers = Ether(frame).build_ps()
    out: list[tuple[int, int, str]] = []
    at = 0
    for layer, built in reversed(layers):  # build_ps lists the innermost layer first
        names = _names(layer)
        prefix = layer.__class__.__name__.lower()
        pending: list[str] = []
        for fld, _, raw in built:
            name = (f"{prefix}.data" if prefix in ("raw", "padding")
                    else names.get(fld.name, f"{prefix}.{fld.name}"))
            pending.append(name)
            if isinstance(raw, bytes) and raw:
                out.append((at, len(raw), "/".join(dict.fromkeys(pending))))
                at += len(raw)
                pending = []
    if at < len(frame):
        out.append((at, len(frame) - at, "frame.trailer"))
    return out
