"""A fuzz finding, shrunk and written out as a catalog case.

The packet is simplified one step at a time (an extension header dropped, the
payload halved, a field set to its default, the route made plain) and each
step is kept only if the case, run alone through the catalog's own path
(Session.run_packet: routes with iproute2, the packet from the guest's C
builder), still fails the same way: the same kind of difference in the same
fields. The result is a case file with its seed, ready for conformance/cases/.
"""

import dataclasses
import json
from pathlib import Path

from .. import topology
from ..catalog.cases import PACKET_DEFAULTS, Case, attach_entries, load
from ..catalog.deviations import ColumnEntry
from ..oracle import packets
from ..running.session import Session
from .generate import outcome

ADDRESS_PLACEHOLDERS = ("guest_sir", "guest2", "host2", "guest", "host", "guest4", "host4")
MAX_STEPS = 60


def signature(status: str, detail: str, diag: list[str]) -> tuple[str, frozenset[str]] | None:
    """How a case fails: the kind of difference and the fields marked '<>'."""
    if status != "fail":
        return None
    kind = detail.split(" (")[0].split(":")[0]
    fields = frozenset(line.split()[0] for line in diag if line.endswith("<>") and line.split())
    return kind, fields


def rerun(session: Session, case: Case, entries: list[ColumnEntry]) -> tuple | None:
    """The case alone through the catalog's path; its failure signature or None."""
    case.deviations = {}
    case.clone_deviations = {}
    attach_entries([case], entries)
    return signature(*session.run_packet(case, bless=False, golden=False))


def candidates(case: Case) -> list[Case]:
    """Simpler variants of case, each one change away."""
    spec = case.packet
    out: list[dict] = []

    def variant(**changes: object) -> None:
        new = {**spec, **changes}
        if new != spec:
            out.append(new)
    ext = [e for e in str(spec.get("ext", "")).split(",") if e]
    for i in range(len(ext)):
        variant(ext=",".join(ext[:i] + ext[i + 1:]))
    body = packets.payload(spec)
    if body:
        variant(payload_hex="", payload_len=0)
        variant(payload_hex=body[:len(body) // 2].hex(), payload_len=0)
    for key in ("csum", "l4_len", "plen", "flags", "seq", "ack", "window", "urgptr", "tc",
                "flow", "hlim", "code", "id", "icmp_seq"):
        variant(**{key: PACKET_DEFAULTS[key]})
    # what the oracle expects may change with the packet (an input packet
    # with a wrong checksum is dropped): it is derived again for each
    cases = [dataclasses.replace(case, packet=s, outcome=outcome(s, case.path,
                                                                 str(case.expect_dst)))
             for s in out]
    if case.layout != "linear":
        cases.append(dataclasses.replace(case, layout="linear"))
    if case.send == "udp":
        cases.append(dataclasses.replace(case, send="raw"))
    return cases


def minimize(session: Session, case: Case, entries: list[ColumnEntry]) -> Case | None:
    """The smallest variant that fails as case does; None if case passes alone."""
    want = rerun(session, case, entries)
    if want is None:
        return None
    current, n = case, 0
    improved = True
    while improved and n < MAX_STEPS:
        improved = False
        for cand in candidates(current):
            n += 1
            cand = dataclasses.replace(cand, id=f"{case.id}-m{n}")
            if rerun(session, cand, entries) == want:
                current, improved = cand, True
                break
    return current


def unfill(text: str) -> str:
    """The topology's addresses back into placeholders ({host}, {guest}, ...)."""
    for name in ADDRESS_PLACEHOLDERS:
        text = text.replace(topology.PLACEHOLDERS[name], "{" + name + "}")
    return text


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return json.dumps(unfill(str(v)))


def folder(case: Case) -> str:
    if case.packet.get("ext"):
        return "ext"
    proto = case.packet["proto"]
    return proto if proto in packets.PROTO_NUMBERS else "other"


def case_text(case: Case, seed: int, column: str, detail: str) -> str:
    spec = case.packet
    default_src = {"output": topology.GUEST_ADDR}.get(case.path, topology.HOST_ADDR)
    keep = {k: v for k, v in spec.items()
            if k in ("proto", "dst") or (k == "src" and v != default_src)
            or (k not in ("src", "dst") and PACKET_DEFAULTS.get(k, None) != v and v != "")}
    route = unfill(case.routes[0])
    lines = [
        f"# Found by make fuzz SEED={seed} against the {column} column, minimized:",
        f"#   {detail}",
        "# Copy it into conformance/cases/<folder>/, check it, and bless its golden",
        "# capture with make golden CASE=<folder>/<name> (CONFORMANCE.md, Adding a case).",
        f"verifies = {json.dumps(verifies(case))}",
        f"requirements = {json.dumps(case.requirements)}",
        f'path = "{case.path}"',
        'look = "the fields the fuzzer saw differ: compare with the oracle\'s frame"',
        f"routes = [\n  {json.dumps(route)},\n]",
    ]
    if case.needs:
        lines.append(f"needs = {json.dumps(case.needs)}")
    if case.send != "raw":
        lines.append(f'send = "{case.send}"')
    if case.layout != "linear":
        lines.append(f"layout = {json.dumps(case.layout)}")
    lines += ["", "[packet]"] + [f"{k} = {toml_value(v)}" for k, v in keep.items()]
    lines += ["", "[expect]", f'outcome = "{case.outcome}"']
    if case.outcome == "translated":
        lines.append(f"dst = {json.dumps(str(case.expect_dst))}")
        if case.csum != "adjusted":
            lines.append(f"csum = {json.dumps(case.csum)}")
    return "\n".join(lines) + "\n"


def verifies(case: Case) -> str:
    proto = case.packet["proto"]
    name = proto if isinstance(proto, str) else f"next header {proto}"
    net = case.routes[0].split()[case.routes[0].split().index("ila") - 2]
    how = {"neutral": "the identifier mapped checksum-neutrally with its C-bit flipped",
           "neutral-auto": "the identifier mapped checksum-neutrally",
           "untouched": "the identifier and the checksum kept (no-action)"}.get(
        case.csum, "the identifier kept, the checksum adjusted by the difference")
    return (f"Verify that a {name} packet on the {case.path} path through the ILA route "
            f"{net} leaves as the oracle builds it: the locator replaced, {how}, the "
            f"payload kept.")


def minimize_and_write(session: Session, case: Case, entries: list[ColumnEntry],
                       out_dir: Path, seed: int, detail: str) -> Path | None:
    """Shrink a finding, write it as out_dir/<folder>/fuzz-<seed>-<n>.toml and
    check that the file loads as a case; None when it does not fail alone."""
    small = minimize(session, case, entries)
    if small is None:
        return None
    name = f"fuzz-{seed}-{case.id.rsplit('-', 2)[-2]}-{case.id.rsplit('-', 1)[-1]}"
    path = out_dir / folder(small) / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case_text(small, seed, session.impl.name, detail))
    load(path, out_dir)  # the file must be a valid case as written
    return path

