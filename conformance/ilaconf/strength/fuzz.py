"""make fuzz: differential testing of every column against the oracle.

Random routes and packets (generate.py) go through each column in one boot
(exchange.py); every frame that comes out is judged by the oracle with a
full checksum recompute, exactly as a catalog case is. A difference the
deviations files already declare for the column (matched by the packet's
properties) is reported as that deviation; any other difference is a
finding: it is minimized (minimize.py) and written out as a case file that
can be dropped into conformance/cases/.
"""

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.cases import Case, CaseError, attach_entries, deviation_entries
from ..catalog.deviations import ColumnEntry, Deviation
from ..impls import Impl, lacks_mapping_table
from ..oracle import expect
from ..reports.report import Reporter, Result
from ..running import mapping
from ..running.guest import Guest, GuestError
from ..running.session import Paths, Session, boot, ip_argv
from . import exchange, minimize
from .generate import FuzzRoute, generate

# Every error the guest owes the fuzzer's packets is sent: no rate limit.
SYSCTLS = (("net/ipv4/icmp_msgs_per_sec", "1000000"), ("net/ipv4/icmp_msgs_burst", "1000000"))
MINIMIZE_PER_COLUMN = 4
SHOWN_PER_COLUMN = 10


@dataclass
class Finding:
    case: Case
    detail: str
    diag: list[str]


@dataclass
class Tally:
    packets: int = 0
    passed: int = 0
    deviations: Counter = field(default_factory=Counter)
    not_applicable: Counter = field(default_factory=Counter)  # reason -> packets
    findings: list[Finding] = field(default_factory=list)


def route_lines(impl: Impl, route: FuzzRoute) -> tuple[list[str], list[str]] | str:
    """The route's set-up and teardown lines in this column: the ILA route
    itself, or in a mapping column the mapping derived from it as for a
    catalog case (running/mapping.py); a string when it does not apply."""
    first = route.items[0]
    if impl.interface == "mapping":
        return mapping.derive(first, impl)
    return [impl.route(first.routes[0])], []


def judge_route(session: Session, route: FuzzRoute, tally: Tally) -> None:
    impl = session.impl
    lines = route_lines(impl, route)
    if isinstance(lines, str):
        tally.not_applicable[lines] += len(route.items)
        return
    setup, teardown = lines
    for line in setup:
        reply = session.guest.run("exec", ip_argv(line))
        if reply.rc == 0:
            continue
        text = " | ".join(reply.out)
        for case in route.items:
            tally.packets += 1
            dev = case.deviations.get(impl.name)
            if dev and dev.route_error and dev.route_error in text:
                tally.deviations[dev.label] += 1
            else:
                tally.findings.append(Finding(case, f"route refused: {line}: {text}", []))
        session.teardown(teardown)
        return
    try:
        sent = exchange.send_all(session, route.items)
    except GuestError as e:
        raise GuestError(f"while sending the packets of route {setup[0]} "
                         f"({route.items[0].id} on): {e}")
    # the route (or the mapping) itself is expected to be there until now
    expected = 1 if impl.interface == "route" else 0
    left = session.teardown(teardown)
    for case, s in zip(route.items, sent):
        tally.packets += 1
        dev = case.deviations.get(impl.name)
        if indistinguishable(case, dev):
            dev = None  # the packet cannot show it: judged by the requirement alone
        status, detail, diag = session.judge_packet(case, dev, s.rc, s.out, s.frames, ({}, {}),
                                                    golden=False)
        if status == "pass":
            tally.passed += 1
        elif status == "xfail":
            tally.deviations[dev.label if dev else detail] += 1
        else:
            tally.findings.append(Finding(case, detail, diag))
    if len(left) > expected:
        raise GuestError(f"ILA routes or mappings left after the fuzz route's teardown: {left}")


def indistinguishable(case: Case, dev: "Deviation | None") -> bool:
    """Does the deviation predict, for this packet, exactly the frames the
    requirement does? Two rules can coincide for a random packet (a wrong
    difference that happens to equal the right one); the deviation then
    cannot show, and is not stale for it."""
    if dev is None or dev.route_error or dev.kernel_log or dev.inject_error:
        return False
    want = expect.expected_frames(case)
    alt = expect.expected_frames(expect.as_deviation(case, dev))
    return want is not None and want == alt


def differing(diag: list[str]) -> list[str]:
    """The lines of a field-by-field diff that matter: the header, the fields
    marked '<>' and where the bytes first differ; other diagnostics whole."""
    if not diag or not diag[0].startswith("field"):
        return diag[:12]
    return [diag[0], *[d for d in diag[1:] if d.endswith("<>") or d.startswith("first")]][:16]


def distinct(findings: list[Finding]) -> list[Finding]:
    """One finding per kind (path, protocol, layout, what differed)."""
    seen, out = set(), []
    for f in findings:
        key = (f.case.path, str(f.case.packet["proto"]), f.case.layout,
               f.detail.split(":")[0][:60], tuple(d.split()[0] for d in f.diag[:3] if d))
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def run_column(session: Session, impl: Impl, routes: list[FuzzRoute], out: Path,
               seed: int, entries: list[ColumnEntry]) -> Result:
    started = time.monotonic()
    tally = Tally()
    for route in routes:
        judge_route(session, route, tally)
    diag = [f"seed {seed}: {tally.packets} packets over {len(routes)} routes in "
            f"{time.monotonic() - started:.0f} s: {tally.passed} as the requirements say, "
            f"{sum(tally.deviations.values())} as declared deviations, "
            f"{len(tally.findings)} other differences"]
    diag += [f"declared: {n} x {label[:160]}" for label, n in tally.deviations.most_common()]
    diag += [f"not applicable: {n} packet(s): {why}" for why, n in tally.not_applicable.most_common()]
    if not tally.findings and not tally.packets:
        return Result("fuzz/differential", impl.name, "skip",
                      "no packet of this seed applies to the column", ["ILA-ROUTE-1"], diag)
    if not tally.findings:
        return Result("fuzz/differential", impl.name, "pass", "", ["ILA-ROUTE-1"], diag)
    kinds = distinct(tally.findings)
    written = []
    for f in kinds[:MINIMIZE_PER_COLUMN]:
        path = minimize.minimize_and_write(session, f.case, entries,
                                           out / "fuzz" / "cases" / impl.name,
                                           seed, f.detail)
        written.append(f"{f.case.id}: minimized into {path}" if path else
                       f"{f.case.id}: did not fail again alone (see its diagnostics)")
    for f in kinds[:SHOWN_PER_COLUMN]:
        diag += [f"{f.case.id} ({f.case.path}, route {f.case.routes[0]}): {f.detail}",
                 *[f"  {d}" for d in differing(f.diag)]]
    diag += written
    diag.append(f"{len(tally.findings)} packets differ in all: "
                + ", ".join(f.case.id for f in tally.findings[:40]))
    return Result("fuzz/differential", impl.name, "fail",
                  f"{len(tally.findings)} packet(s) differ from the oracle beyond the declared "
                  f"deviations ({len(kinds)} kind(s)); replay with make fuzz SEED={seed}",
                  sorted({r for f in tally.findings for r in f.case.requirements}), diag)


def run(paths: Paths, reporter: Reporter, accel: str, columns: list[Impl], seed: int,
        count: int, deviation_files: list[tuple[Path, str | None]], fixed: set[str],
        kernel_version: str) -> None:
    routes = generate(seed, count)
    cases = [c for r in routes for c in r.items]
    try:
        entries = deviation_entries(deviation_files, fixed, kernel_version)
    except CaseError as e:
        raise ValueError(str(e))
    attach_entries(cases, entries)
    print(f"# fuzz: seed {seed}: {len(cases)} packets over {len(routes)} routes "
          f"({', '.join(f'{n} {p}' for p, n in Counter(r.path for r in routes).items())}) "
          f"against {', '.join(i.name for i in columns)}", flush=True)
    guest: Guest | None = None
    boots = 0
    try:
        for impl in columns:
            if lacks_mapping_table(impl):
                reporter.add(Result("fuzz/differential", impl.name, "skip", lacks_mapping_table(impl)))
                continue
            try:
                if guest is None:
                    boots += 1
                    guest, session = boot(paths, accel, f"fuzz-{boots}")
                    for key, value in SYSCTLS:
                        session.must("write", [f"/proc/sys/{key}", value])
                why = session.load(impl)
                if why:
                    reporter.add(Result("fuzz/differential", impl.name, "fail",
                                        f"not run: {impl.module_path} {why.splitlines()[0]}"))
                    continue
                reporter.add(run_column(session, impl, routes, paths.out, seed, entries))
            except GuestError as e:
                lines = str(e).splitlines()
                reporter.add(Result("fuzz/differential", impl.name, "fail",
                                    f"the guest died: {lines[0]}", [], lines[1:]))
                guest.close() if guest else None
                guest = None
    finally:
        if guest:
            guest.close()
