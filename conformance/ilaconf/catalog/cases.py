"""Case files: one TOML file per case under conformance/cases/<protocol>/.

A case says what it verifies, which requirements it tests, the ILA routes to
install (as the ip command lines a user types), the packet to send (fields of
lib/pkt.h, shared with the scapy oracle) and the outcome expected.
"""

import dataclasses
import difflib
import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import patches, topology
from ..impls import PATCHED
from ..oracle import packets
from . import control, layouts, tunnel
from .deviations import (ERROR, OUTCOMES, ColumnEntry, Deviation, DeviationError, kernel_holds,
                         load_column_file, load_deviations)

# output: the guest sends; input: the host sends to an ILA address the guest
# owns; forward: the host sends through the guest, out of eth1.
PATHS = ("output", "input", "forward")
# raw: byte-exact from lib/pkt.c; udp, udp4, tcp: built by the guest kernel.
SENDS = ("raw", "udp", "udp4", "tcp")
PACKET_FIELDS = {
    "proto", "src", "dst", "hlim", "tc", "flow", "sport", "dport", "seq",
    "ack", "flags", "window", "urgptr", "type", "code", "id", "icmp_seq",
    "payload_len", "payload_hex", "csum", "ext", "l4_len", "plen",
    "no_check6_tx", "dst4",
}
# Every field is sent explicitly, so the C builder's defaults never matter.
PACKET_DEFAULTS: dict[str, object] = {
    "hlim": 64, "tc": 0, "flow": 0, "sport": 0, "dport": 0,
    "seq": 0, "ack": 0, "flags": "S", "window": 8192, "urgptr": 0, "type": 128,
    "code": 0, "id": 0, "icmp_seq": 0, "payload_len": 0, "payload_hex": "",
    "csum": "auto", "ext": "", "l4_len": "auto", "plen": "auto",
}
DEFAULT_SRC = {"output": "{guest}", "input": "{host}", "forward": "{host}"}


class CaseError(ValueError):
    """A case file that cannot be used; the message names the file."""




@dataclass
class Case:
    id: str  # "<protocol>/<file stem>"
    file: Path
    verifies: str
    requirements: list[str]
    path: str
    send: str
    nic: str  # where the packet leaves the guest (output, forward)
    routes: list[str]
    packet: dict[str, object]
    outcome: str
    expect_dst: str | None
    look: str
    inject_error: str | None
    stats: dict[str, int] | None  # ila_ref counter deltas; {}: all must stay
    teardown: list[str] = field(default_factory=list)
    csum: str = "adjusted"
    deviations: dict[str, Deviation] = field(default_factory=dict)
    needs: list[str] = field(default_factory=list)  # features an implementation must have
    layout: "str | list[int]" = "linear"  # how the packet is received (layouts.py)
    no_mapping: str = ""  # why the mapping-table columns must not run it (running/mapping.py)
    no_layouts: str = ""  # why no CASE@LAYOUT variants are generated from it
    rx_nic: str = "eth0"  # where the host sends, on the input and forward paths
    # An ICMPv6 error case: the packet its body quotes, how many of its bytes,
    # and the quoted destination expected after the guest
    quote: dict[str, object] | None = None
    quote_len: int = 1232
    quote_dst: str | None = None
    error: str | None = None  # outcome error: "time-exceeded" or "packet-too-big MTU"
    error_quote: str = "sent"  # what that error quotes: the packet as sent, or "translated"
    # the packet travels inside this UDP tunnel, whose outer packet the ILA
    # route translates (expect.dst is the outer destination)
    tunnel: "tunnel.Tunnel | None" = None
    base: str = ""  # a generated layout variant: the case it comes from
    # per column: what a shared (cloned) skb's other holder sees instead of
    # its data intact, when an implementation writes into it
    clone_deviations: dict[str, Deviation] = field(default_factory=dict)

    @property
    def protocol(self) -> str:
        return self.id.split("/")[0]

    @property
    def interface(self) -> str:
        """mapping when its routes add ip ila mappings of their own, else route."""
        return "mapping" if any(r.split()[:2] == ["ip", "ila"] for r in self.routes) else "route"

    @property
    def golden_id(self) -> str:
        """A layout variant is judged by its case's golden capture."""
        return self.base or self.id


def quoted_packet(file: Path, packet: dict) -> tuple[dict[str, object] | None, int]:
    """An ICMPv6 error's [packet.quote] (the packet it quotes, fields as a
    [packet]'s) and quote_len (how many of its bytes), taken out of packet."""
    quote = packet.pop("quote", None)
    quote_len = packet.pop("quote_len", 1232)
    if quote is None:
        return None, 1232
    if not isinstance(quote, dict) or set(quote) - PACKET_FIELDS or "proto" not in quote \
            or "dst" not in quote:
        raise CaseError(f"{file}: [packet.quote] is a packet (proto, dst and fields of "
                        f"{sorted(PACKET_FIELDS)})")
    if not isinstance(quote_len, int) or quote_len < 0:
        raise CaseError(f"{file}: packet.quote_len is a number of bytes")
    spec = {**PACKET_DEFAULTS, "src": "{host}", **quote}
    return {k: fill(v) if isinstance(v, str) else v for k, v in spec.items()}, quote_len


def fill(text: str) -> str:
    """Substitute the topology's placeholders ({host}, {guest}, ...)."""
    try:
        return text.format(**topology.PLACEHOLDERS)
    except KeyError as e:
        raise CaseError(f"unknown placeholder {e} (known: {', '.join(topology.PLACEHOLDERS)})")


ROUTE_TYPES = {"unicast", "local", "broadcast", "multicast", "throw", "unreachable",
               "prohibit", "blackhole", "nat", "anycast"}


def default_teardown(route: str) -> str:
    """'ip -6 route add [table T] [TYPE] PREFIX ...' -> 'ip -6 route del [table T] [TYPE] PREFIX';
    'ip ila add loc_match M loc L [dev D] OPTIONS' -> 'ip ila del loc_match M loc L [dev D]'."""
    words = route.split()
    if words[:3] == ["ip", "ila", "add"]:
        keys = {"loc_match", "loc", "dev"}
        pairs = zip(words[3::2], words[4::2])
        return " ".join(["ip", "ila", "del", *[w for k, v in pairs if k in keys for w in (k, v)]])
    if "add" not in words:
        raise CaseError(f"cannot derive a teardown from {route!r}: give 'teardown'")
    i = words.index("add")
    out, rest = words[:i] + ["del"], words[i + 1:]
    while rest:
        word = rest.pop(0)
        if word == "table" and rest:
            out += [word, rest.pop(0)]
        elif word in ROUTE_TYPES:
            out.append(word)
        else:  # the prefix; a table named after it still selects the route
            out.append(word)
            if "table" in rest[:-1]:
                t = rest.index("table")
                out += rest[t:t + 2]
            break
    return " ".join(out)


def load(file: Path, root: Path) -> "Case | control.ControlCase":
    cid = file.relative_to(root).with_suffix("").as_posix()
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise CaseError(f"{file}: not valid TOML: {e}")
    if cid.startswith("control/"):
        try:
            return control.load(file, cid, data)
        except control.ControlError as e:
            raise CaseError(str(e))

    def need(key: str, typ: type) -> object:
        if key not in data:
            raise CaseError(f"{file}: missing '{key}'")
        if not isinstance(data[key], typ):
            raise CaseError(f"{file}: '{key}' must be {typ.__name__}")
        return data[key]

    known = {"verifies", "requirements", "path", "send", "nic", "routes", "teardown", "packet",
             "expect", "look", "deviation", "needs", "layout", "no_mapping", "no_layouts", "rx_nic",
             "tunnel"}
    extra = set(data) - known
    if extra:
        raise CaseError(f"{file}: unknown keys {sorted(extra)} (known: {sorted(known)})")
    path = need("path", str)
    if path not in PATHS:
        raise CaseError(f"{file}: path '{path}' is not one of {PATHS}")
    packet = dict(need("packet", dict))
    quote, quote_len = quoted_packet(file, packet)
    bad = set(packet) - PACKET_FIELDS
    if bad:
        raise CaseError(f"{file}: unknown packet fields {sorted(bad)} (known: {sorted(PACKET_FIELDS)})")
    if "proto" not in packet or not ("dst" in packet or "dst4" in packet):
        raise CaseError(f"{file}: packet needs 'proto' and 'dst' (or 'dst4' for send = 'udp4')")
    send = str(data.get("send", "raw"))
    if send not in SENDS:
        raise CaseError(f"{file}: send '{send}' is not one of {SENDS}")
    if path != "output" and send != "raw":
        raise CaseError(f"{file}: on the {path} path the host sends: send must be 'raw'")
    nic = str(data.get("nic", "eth1" if path == "forward" else "eth0"))
    rx_nic = str(data.get("rx_nic", "eth0"))
    if path == "output" and "rx_nic" in data:
        raise CaseError(f"{file}: rx_nic is where the host sends: not on the output path")
    if nic not in {n.dev for n in topology.NICS} or rx_nic not in {n.dev for n in topology.NICS}:
        raise CaseError(f"{file}: nic '{nic}' and rx_nic '{rx_nic}' must be one of "
                        f"{[n.dev for n in topology.NICS]}")
    packet = {**PACKET_DEFAULTS, "src": DEFAULT_SRC[path], **packet}
    packet = {k: fill(v) if isinstance(v, str) else v for k, v in packet.items()}
    if quote is not None:  # the error's body: the quoted packet, as built by the oracle
        packet["payload_hex"] = packets.sent_packet(quote)[:quote_len].hex()
        packet["payload_len"] = 0
    expect = need("expect", dict)
    outcome = expect.get("outcome")
    if outcome not in OUTCOMES:
        raise CaseError(f"{file}: expect.outcome must be one of {OUTCOMES}")
    if outcome == "translated" and "dst" not in expect:
        raise CaseError(f"{file}: a translated outcome needs expect.dst")
    error = expect.get("error")
    if (outcome == "error") != (error is not None) or \
            error is not None and not ERROR.match(str(error)):
        raise CaseError(f"{file}: outcome = \"error\" goes with expect.error, the node's own "
                        "ICMPv6 error: \"time-exceeded\", \"packet-too-big MTU\" or "
                        "\"unreachable CODE\"")
    if outcome == "error" and (path != "forward" or "dst" not in expect):
        raise CaseError(f"{file}: the node's own error is about a packet it forwards: "
                        "path = \"forward\", and expect.dst, where the route would send it")
    if ("quote_dst" in expect) != (quote is not None):
        raise CaseError(f"{file}: an ICMPv6 error case gives [packet.quote] and expect.quote_dst "
                        "(the quoted destination after the guest; the same to leave it)")
    bad = set(expect) - {"outcome", "dst", "inject_error", "ila_ref_stats", "csum", "quote_dst",
                         "error"}
    if bad:
        raise CaseError(f"{file}: unknown expect keys {sorted(bad)}")
    stats = expect.get("ila_ref_stats")
    if stats is not None and not isinstance(stats, dict) or not all(isinstance(v, int) for v in (stats or {}).values()):
        raise CaseError(f"{file}: expect.ila_ref_stats must map counter names to integers")
    try:
        tun = tunnel.load(file, data.get("tunnel"), fill) if "tunnel" in data else None
    except tunnel.TunnelError as e:
        raise CaseError(str(e))
    if tun and (path != "output" or send not in ("udp", "raw")):
        raise CaseError(f"{file}: a [tunnel] carries what the guest sends: path = \"output\", "
                        "send = \"udp\" or \"raw\"")
    routes = [fill(r) for r in need("routes", list)]
    teardown = [fill(t) for t in data.get("teardown", [])] or [default_teardown(r) for r in routes]
    if tun:  # the tunnel device first, gone last
        routes, teardown = [*tun.setup(), *routes], [*teardown, *tun.teardown()]
    reqs = need("requirements", list)
    if not reqs:
        raise CaseError(f"{file}: list at least one requirement ID")
    layout = data.get("layout", "linear")
    if path == "output" and layout != "linear":
        raise CaseError(f"{file}: a layout is how the guest receives: only input and forward "
                        "cases take one")
    if isinstance(layout, list):
        if not layout or not all(isinstance(o, int) and o >= 14 for o in layout) \
                or layout != sorted(set(layout)):
            raise CaseError(f"{file}: layout offsets must be increasing byte offsets in the "
                            "Ethernet frame, 14 or more (the head holds the Ethernet header)")
    elif layout not in layouts.names():
        raise CaseError(f"{file}: layout '{layout}' is not one of {layouts.names()} "
                        "or a list of split offsets")
    return Case(
        id=cid, file=file, verifies=str(need("verifies", str)), requirements=[str(r) for r in reqs],
        path=path, send=send, nic=nic, routes=routes, teardown=teardown, packet=packet,
        outcome=outcome, expect_dst=expect.get("dst"), look=str(data.get("look", "")),
        inject_error=expect.get("inject_error"), stats=stats,
        deviations=deviations(file, data.get("deviation")),
        csum=checksum_rule(file, expect.get("csum", "adjusted")),
        needs=[str(n) for n in data.get("needs", [])], layout=layout,
        no_mapping=str(data.get("no_mapping", "")), no_layouts=str(data.get("no_layouts", "")),
        rx_nic=rx_nic, quote=quote, quote_len=quote_len,
        quote_dst=fill(str(expect["quote_dst"])) if "quote_dst" in expect else None,
        error=str(error) if error is not None else None, tunnel=tun,
    )


# What happens to the transport checksum of a translated packet. The case's
# own expectation may be adjusted, one of the checksum-neutral mappings, or
# untouched (csum-mode no-action: the locator alone is written).
EXPECT_CSUMS = ("adjusted", "neutral", "neutral-auto", "untouched")


def checksum_rule(file: Path, value: object) -> str:
    if value not in EXPECT_CSUMS:
        raise CaseError(f"{file}: expect.csum must be one of {EXPECT_CSUMS}")
    return str(value)


def deviations(file: Path, data: object) -> dict[str, Deviation]:
    try:
        return load_deviations(file, data, packet=True, fill=fill)
    except DeviationError as e:
        raise CaseError(str(e))


def catalog(root: Path) -> list:
    """Every case file under root, then each input and forward case's layout variants."""
    cases = [load(f, root) for f in sorted(root.glob("*/*.toml"))]
    return cases + [v for c in cases for v in layout_variants(c)]


def choose(cases: list, pattern: str) -> list:
    """The cases matching any of the comma-separated globs, in catalog order.

    A glob that matches nothing is an error naming the nearest case ids and
    the folders, so that a typo is never a silently smaller run.
    """
    globs = [g.strip() for g in pattern.split(",") if g.strip()] or ["*"]
    for g in globs:
        if not any(fnmatch.fnmatch(c.id, g) for c in cases):
            ids = [c.id for c in cases]
            near = difflib.get_close_matches(g, ids, n=5, cutoff=0.5)
            folders = sorted({i.split("/")[0] for i in ids})
            raise CaseError(f"no case matches CASE={g!r}"
                            + (f"; nearest: {', '.join(near)}" if near else "")
                            + f"; folders: {', '.join(f + '/*' for f in folders) or '(none)'}"
                            "; make list-cases prints every id")
    return [c for c in cases if any(fnmatch.fnmatch(c.id, g) for g in globs)]


def discover(root: Path, pattern: str = "*",
             deviation_files: "list[tuple[Path, str | None]] | None" = None,
             fixed: "set[str] | None" = None,
             kernel_version: str = "",
             series: "set[str] | None" = None) -> "list[Case | control.ControlCase]":
    """All cases whose id matches the glob; none matching is an error naming the valid ones.

    deviation_files are (file, default column) pairs (conformance/deviations/,
    EXPECT=): their entries apply to the cases that declare none of their own.
    An entry 'fixed_by' a patch of kernel/patches/ does not apply to a column
    that holds the patch: every column when the kernel under test holds it
    already (fixed), the patched in-tree columns (impls.PATCHED) when the
    series they are built with holds it (patches.in_patched_columns). Nor
    does one whose 'kernel' rule ("<6.1.183") this kernel_version does not meet.
    series overrides the latter (patches.py: what a leave-one-out build holds).
    """
    cases = catalog(root)
    chosen = choose(cases, pattern)
    entries = deviation_entries(deviation_files, fixed, kernel_version, series)
    attach_entries(cases, entries)
    # Under a leave-one-out series an entry may be shadowed by the bug that
    # came back: only the whole series (and unpatched columns) judge staleness.
    whole = {p.name for p in patches.all_patches()}
    leaving_out = (patches.in_patched_columns() if series is None else series) != whole
    for e in entries:
        if not e.used and not leaving_out:
            raise CaseError(f"{e.file}: the deviation for {e.describe()} covers no case that "
                            "does not declare its own: remove it")
    return chosen


def deviation_entries(deviation_files: "list[tuple[Path, str | None]] | None",
                      fixed: "set[str] | None" = None,
                      kernel_version: str = "",
                      series: "set[str] | None" = None) -> list[ColumnEntry]:
    """The entries of the deviations files that apply to this kernel and its columns."""
    try:
        entries = [e for f, col in deviation_files or [] for e in load_column_file(f, col)
                   if kernel_holds(e.kernel, kernel_version)]
        series = patches.in_patched_columns() if series is None else series
    except (DeviationError, ValueError) as e:
        raise CaseError(str(e))
    kept = []
    for e in entries:
        e.columns = [c for c in e.columns
                     if not set(e.fixed_by) & ((fixed or set()) | (series if c in PATCHED else set()))]
        if e.columns:
            kept.append(e)
    return kept


def attach_entries(cases: list, entries: list[ColumnEntry]) -> None:
    """Give every case the first entry per column that covers it, unless it
    declares its own deviation for that column."""
    columns = {c for e in entries for c in e.columns}
    for column in sorted(columns):
        mine = [e for e in entries if column in e.columns and not e.is_clone]
        clone = [e for e in entries if column in e.columns and e.is_clone]
        for case in cases:
            entry = next((e for e in mine if e.covers(case)), None)
            if entry and column not in case.deviations:
                attach(case, column, entry)
            entry = next((e for e in clone if e.covers(case)), None)
            if entry and isinstance(case, Case) and layouts.clones(case.layout):
                attach_clone(case, column, entry)


def broken_requirement(case: "Case | control.ControlCase", wanted: object) -> str:
    """A deviation's requirement: an ID, or (a 'when' entry) a list of globs
    naming the case's own requirement it breaks, the first glob that matches
    one winning; left out, or none matching: the case's first requirement."""
    if isinstance(wanted, str) and not any(c in wanted for c in "*?["):
        return wanted
    globs = [wanted] if isinstance(wanted, str) else list(wanted or [])
    for g in globs:
        for r in case.requirements:
            if fnmatch.fnmatchcase(r, str(g)):
                return r
    return case.requirements[0]


def layout_variants(case: "Case | control.ControlCase") -> list[Case]:
    """CASE@LAYOUT for every named layout, for an input or forward case that
    names none; a layout the packet cannot have (no transport header to
    split off) is left out."""
    if not isinstance(case, Case) or case.path == "output" or case.layout != "linear" \
            or case.send != "raw" or case.no_layouts:
        return []
    out = []
    for name in layouts.LAYOUTS:
        if layouts.split_offsets(name, case.packet) is None:
            continue
        out.append(dataclasses.replace(case, id=f"{case.id}@{name}", layout=name, base=case.id,
                                       deviations=dict(case.deviations), clone_deviations={}))
    return out


def attach_clone(case: Case, column: str, entry: ColumnEntry) -> None:
    """A 'clone' entry: what the packet socket's copy shows instead of intact."""
    entry.used += 1
    table = dict(entry.table)
    table["requirement"] = broken_requirement(case, table.get("requirement"))
    try:
        case.clone_deviations[column] = load_deviations(
            Path(f"{entry.file} (for {case.id})"), {column: table}, packet=True, fill=fill)[column]
    except DeviationError as e:
        raise CaseError(str(e))


def attach(case: "Case | control.ControlCase", column: str, entry: ColumnEntry) -> None:
    entry.used += 1
    where = f"{entry.file} (for {case.id})"
    source = f"of {entry.file} ({entry.describe()})"
    table = dict(entry.table)
    table["requirement"] = broken_requirement(case, table.get("requirement"))
    try:
        if isinstance(case, control.ControlCase):
            keys = control.STOP_KEYS | {"requirement", "reason"}
            table = {k: v for k, v in table.items() if k in keys}
            dev, stop = control.load_deviation(Path(where), column, table, case.steps)
            case.deviations[column] = dataclasses.replace(dev, source=source)
            if stop:
                case.stops[column] = stop
            elif not any(column in s.deviation for s in case.steps):
                raise CaseError(f"{where}: a control case needs 'step' and what it gives instead")
        else:
            table = {k: v for k, v in table.items() if k not in control.STOP_KEYS}
            dev = load_deviations(Path(where), {column: table}, packet=True, fill=fill)[column]
            case.deviations[column] = dataclasses.replace(dev, source=source)
    except (DeviationError, control.ControlError) as e:
        raise CaseError(str(e))
