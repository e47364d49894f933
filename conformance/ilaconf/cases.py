"""Case files: one TOML file per case under conformance/cases/<protocol>/.

A case says what it verifies, which requirements it tests, the ILA routes to
install (as the ip command lines a user types), the packet to send (fields of
lib/pkt.h, shared with the scapy oracle) and the outcome expected.
"""

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import control, topology
from .deviations import (OUTCOMES, ColumnEntry, Deviation, DeviationError, load_column_file,
                         load_deviations)

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

    @property
    def protocol(self) -> str:
        return self.id.split("/")[0]


def fill(text: str) -> str:
    """Substitute the topology's placeholders ({host}, {guest}, ...)."""
    try:
        return text.format(**topology.PLACEHOLDERS)
    except KeyError as e:
        raise CaseError(f"unknown placeholder {e} (known: {', '.join(topology.PLACEHOLDERS)})")


ROUTE_TYPES = {"unicast", "local", "broadcast", "multicast", "throw", "unreachable",
               "prohibit", "blackhole", "nat", "anycast"}


def default_teardown(route: str) -> str:
    """'ip -6 route add [table T] [TYPE] PREFIX ...' -> 'ip -6 route del [table T] [TYPE] PREFIX'."""
    words = route.split()
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
             "expect", "look", "deviation", "needs"}
    extra = set(data) - known
    if extra:
        raise CaseError(f"{file}: unknown keys {sorted(extra)} (known: {sorted(known)})")
    path = need("path", str)
    if path not in PATHS:
        raise CaseError(f"{file}: path '{path}' is not one of {PATHS}")
    packet = dict(need("packet", dict))
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
    if nic not in {n.dev for n in topology.NICS}:
        raise CaseError(f"{file}: nic '{nic}' is not one of {[n.dev for n in topology.NICS]}")
    packet = {**PACKET_DEFAULTS, "src": DEFAULT_SRC[path], **packet}
    packet = {k: fill(v) if isinstance(v, str) else v for k, v in packet.items()}
    expect = need("expect", dict)
    outcome = expect.get("outcome")
    if outcome not in OUTCOMES:
        raise CaseError(f"{file}: expect.outcome must be one of {OUTCOMES}")
    if outcome == "translated" and "dst" not in expect:
        raise CaseError(f"{file}: a translated outcome needs expect.dst")
    bad = set(expect) - {"outcome", "dst", "inject_error", "ila_ref_stats", "csum"}
    if bad:
        raise CaseError(f"{file}: unknown expect keys {sorted(bad)}")
    stats = expect.get("ila_ref_stats")
    if stats is not None and not isinstance(stats, dict) or not all(isinstance(v, int) for v in (stats or {}).values()):
        raise CaseError(f"{file}: expect.ila_ref_stats must map counter names to integers")
    routes = [fill(r) for r in need("routes", list)]
    teardown = [fill(t) for t in data.get("teardown", [])] or [default_teardown(r) for r in routes]
    reqs = need("requirements", list)
    if not reqs:
        raise CaseError(f"{file}: list at least one requirement ID")
    return Case(
        id=cid, file=file, verifies=str(need("verifies", str)), requirements=[str(r) for r in reqs],
        path=path, send=send, nic=nic, routes=routes, teardown=teardown, packet=packet,
        outcome=outcome, expect_dst=expect.get("dst"), look=str(data.get("look", "")),
        inject_error=expect.get("inject_error"), stats=stats,
        deviations=deviations(file, data.get("deviation")),
        csum=checksum_rule(file, expect.get("csum", "adjusted")),
        needs=[str(n) for n in data.get("needs", [])],
    )


# What happens to the transport checksum of a translated packet. The case's
# own expectation may be adjusted, or one of the checksum-neutral mappings.
EXPECT_CSUMS = ("adjusted", "neutral", "neutral-auto")


def checksum_rule(file: Path, value: object) -> str:
    if value not in EXPECT_CSUMS:
        raise CaseError(f"{file}: expect.csum must be one of {EXPECT_CSUMS}")
    return str(value)


def deviations(file: Path, data: object) -> dict[str, Deviation]:
    try:
        return load_deviations(file, data, packet=True, fill=fill)
    except DeviationError as e:
        raise CaseError(str(e))


def discover(root: Path, pattern: str = "*",
             deviation_files: "list[tuple[Path, str | None]] | None" = None
             ) -> "list[Case | control.ControlCase]":
    """All cases whose id matches the glob; none matching is an error naming the valid ones.

    deviation_files are (file, default column) pairs (conformance/deviations/,
    EXPECT=): their entries apply to the cases that declare none of their own.
    """
    files = sorted(root.glob("*/*.toml"))
    cases = [load(f, root) for f in files]
    chosen = [c for c in cases if fnmatch.fnmatch(c.id, pattern)]
    if not chosen:
        valid = ", ".join(c.id for c in cases) or "(none)"
        raise CaseError(f"no case matches CASE={pattern!r}; valid cases: {valid}")
    try:
        entries = [e for f, col in deviation_files or [] for e in load_column_file(f, col)]
    except DeviationError as e:
        raise CaseError(str(e))
    columns = {c for e in entries for c in e.columns}
    for column in sorted(columns):
        mine = [e for e in entries if column in e.columns]
        for case in cases:
            entry = next((e for e in mine if e.covers(case.id)), None)
            if entry and column not in case.deviations:
                attach(case, column, entry)
    for e in entries:
        if not e.used:
            raise CaseError(f"{e.file}: the deviation for {e.cases} covers no case that "
                            "does not declare its own: remove it")
    return chosen


def attach(case: "Case | control.ControlCase", column: str, entry: ColumnEntry) -> None:
    entry.used += 1
    where = f"{entry.file} (for {case.id})"
    try:
        if isinstance(case, control.ControlCase):
            keys = control.STOP_KEYS | {"requirement", "reason"}
            table = {k: v for k, v in entry.table.items() if k in keys}
            dev, stop = control.load_deviation(Path(where), column, table, case.steps)
            case.deviations[column] = dev
            if stop:
                case.stops[column] = stop
            elif not any(column in s.deviation for s in case.steps):
                raise CaseError(f"{where}: a control case needs 'step' and what it gives instead")
        else:
            table = {k: v for k, v in entry.table.items() if k not in control.STOP_KEYS}
            case.deviations[column] = load_deviations(Path(where), {column: table},
                                                      packet=True, fill=fill)[column]
    except (DeviationError, control.ControlError) as e:
        raise CaseError(str(e))
