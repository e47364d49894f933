"""make reliability: our module, then every in-tree column, under the debug kernel's detectors.

One boot of the KERNEL=debug guest (KASAN, KFENCE, kmemleak, lockdep,
DEBUG_ATOMIC_SLEEP; panic_on_warn=1 oops=panic on the command line), then:
KUnit tests of the translation, seeded packet fuzzing with every packet
accounted for by the module's counters, seeded netlink fuzzing with the
route table checked afterwards, load/unload cycles under traffic, a kmemleak
scan, and a scan of the serial log for any detector's report.
"""

import re
import time
from pathlib import Path

from .. import topology
from ..impls import IMPLS
from ..reports.report import Reporter, Result
from ..running.columns import COLUMN_MARK
from ..running.kernel_log import DETECTOR_REPORT
from ..running.guest import GuestError
from ..running.session import Paths, Session, boot

FUZZ = "/bin/ila-fuzz"
KUNIT_MODULE = "/lib/modules/ila_ref_kunit.ko"
KMEMLEAK = "/sys/kernel/debug/kmemleak"
PACKETS, MESSAGES, CYCLES = 100_000, 10_000, 200
OTHER_PACKETS = 20_000  # per in-tree column: detectors only, so fewer suffice
FUZZ_PREFIX = "3333:0:0:1::"
REQ = ["ILA-RELIABILITY-1"]


def result(name: str, status: str, detail: str = "", diag: list[str] | None = None,
           impl: str = "module") -> Result:
    return Result(name, impl, status, detail, REQ, diag or [])


def kunit(session: Session, module: str = KUNIT_MODULE, name: str = "ila_ref_kunit"
          ) -> list[Result]:
    """Load the KUnit module; its tests run at load and print KTAP to the log."""
    session.guest.run("dmesg", [])
    reply = session.guest.run("insmod", [module])
    if reply.rc != 0:
        return [result("kunit/ila_ref_xlat", "fail",
                       f"insmod {module}: {' | '.join(reply.out)} (built only for KERNEL=debug)")]
    log = session.guest.run("dmesg", []).out
    session.guest.run("rmmod", [name])
    plan = next((int(m.group(1)) for line in log
                 if (m := re.match(r"^\s+1\.\.(\d+)$", line))), None)
    out = []
    for line in log:
        m = re.match(r"^\s+(not ok|ok) \d+ (?:- )?(xlat_\w+)(.*)$", line)
        if m:
            ok = m.group(1) == "ok"
            out.append(result(f"kunit/{m.group(2)}", "pass" if ok else "fail",
                              "" if ok else "KUnit test failed",
                              [] if ok else [x for x in log if m.group(2) in x or "Expected" in x]))
    if plan is None or len(out) != plan:
        out.append(result("kunit/ila_ref_xlat", "fail",
                          f"KUnit planned {plan} tests, printed {len(out)} results", log[-20:]))
    return out


def module_refs(session: Session) -> int:
    for line in session.must("cat", ["/proc/modules"]):
        name, _, refs, *_ = line.split()
        if name == "ila_ref":
            return int(refs)
    return -1


def fuzz_packets(session: Session, seed: int) -> list[Result]:
    route = [topology.IP, "-6", "route", "add", f"{FUZZ_PREFIX}/64", "encap", "ila", "2001:0:0:2",
             "via", topology.HOST_ADDR]
    session.must("exec", route)
    before = session.stats()
    with session.guest.discarding_frames() as frames:
        reply = session.guest.run("exec", [FUZZ, "packets", str(PACKETS), str(seed), FUZZ_PREFIX],
                                  timeout=1800)
    after = session.stats()
    session.guest.run("exec", [topology.IP, "-6", "route", "del", f"{FUZZ_PREFIX}/64"])
    name = "fuzz/packets"
    m = re.search(r"sent (\d+) refused (\d+)", " ".join(reply.out))
    if reply.rc != 0 or not m:
        return [result(name, "fail", f"ila-fuzz failed ({reply.rc})", reply.out)]
    sent, refused = int(m.group(1)), int(m.group(2))
    deltas = {k: after[k] - before.get(k, 0) for k in after}
    diag = [f"seed {seed}: {PACKETS} packets generated, {sent} sent, {refused} refused by sendto()",
            *(f"{k:<28} +{v}" for k, v in deltas.items()), f"frames the host received: {frames[0]}"]
    if sum(deltas.values()) != sent:
        return [result(name, "fail", f"{sent} packets sent but the counters account for "
                       f"{sum(deltas.values())}", diag)]
    if sent + refused != PACKETS:
        return [result(name, "fail", "ila-fuzz lost count of its packets", diag)]
    return [result(name, "pass", "", diag)]


def fuzz_other_column(session: Session, impl, seed: int) -> list[Result]:
    """The same seeded packets through another column's module, under the same
    detectors: it has no counters to account for them, so only the detectors
    (and the guest surviving) judge it."""
    name = "fuzz/packets"
    why = session.load(impl)
    if why:
        return [result(name, "fail", f"{impl.module_path} {why.splitlines()[0]}", impl=impl.name)]
    session.must("write", ["/dev/kmsg", f"{COLUMN_MARK}{impl.name}"])
    route = impl.route(f"ip -6 route add {FUZZ_PREFIX}/64 encap ila 2001:0:0:2 via "
                       f"{topology.HOST_ADDR}").split()
    session.must("exec", [topology.IP, *route[1:]])
    with session.guest.discarding_frames():
        reply = session.guest.run("exec", [FUZZ, "packets", str(OTHER_PACKETS), str(seed),
                                           FUZZ_PREFIX], timeout=1800)
    session.guest.run("exec", [topology.IP, "-6", "route", "del", f"{FUZZ_PREFIX}/64"])
    if reply.rc != 0:
        return [result(name, "fail", f"ila-fuzz failed ({reply.rc})", reply.out, impl=impl.name)]
    return [result(name, "pass", "", [f"seed {seed}: {OTHER_PACKETS} packets through "
                                      f"{impl.module_path} ({impl.route_options or 'defaults'})",
                                      *reply.out], impl=impl.name)]


def fuzz_netlink(session: Session, seed: int) -> list[Result]:
    reply = session.guest.run("exec", [FUZZ, "netlink", str(MESSAGES), str(seed)], timeout=1800)
    refs = module_refs(session)
    name = "fuzz/netlink"
    if reply.rc != 0:
        return [result(name, "fail", f"the route table does not hold exactly the accepted routes "
                       f"({reply.rc})", reply.out)]
    if refs != 0:
        return [result(name, "fail", f"module reference count {refs} after deleting every route",
                       reply.out)]
    return [result(name, "pass", "", [*reply.out, "module reference count back to 0"])]


def cycles(session: Session) -> list[Result]:
    with session.guest.discarding_frames():
        reply = session.guest.run("exec", [FUZZ, "cycles", str(CYCLES),
                                           IMPLS["module"].module_path, "ila_ref", "eth0",
                                           topology.HOST_ADDR], timeout=1800)
    refs = module_refs(session)
    if reply.rc != 0 or refs != 0:
        return [result("cycles/load-unload", "fail",
                       f"rc {reply.rc}, module reference count {refs}", reply.out)]
    return [result("cycles/load-unload", "pass", "", reply.out)]


def kmemleak(session: Session, owner: str = "ila_ref", column: str = "module") -> list[Result]:
    """Two scans (kmemleak reports only objects older than 5 s), then the report;
    a leak whose backtrace names owner (the column's module) is the column's."""
    if session.guest.run("cat", [KMEMLEAK]).rc != 0:
        return [result("detectors/kmemleak", "fail", f"{KMEMLEAK} unreadable: not a KERNEL=debug guest?",
                       impl=column)]
    for _ in range(2):
        session.must("write", [KMEMLEAK, "scan"])
        time.sleep(6)
    report = session.must("cat", [KMEMLEAK])
    objects = sum(line.startswith("unreferenced object") for line in report)
    ours = [line for line in report if owner in line]
    if ours:
        return [result("detectors/kmemleak", "fail", f"{len(ours)} leaked allocation(s) from {owner}",
                       report[:60], impl=column)]
    return [result("detectors/kmemleak", "pass", "",
                   [f"{objects} unreferenced object(s) reported, none allocated by {owner}",
                    *report[:20]], impl=column)]


def scan_logs(logs: list[Path], columns: list[str] | None = None) -> list[Result]:
    """Every detector report in the guests' serial logs fails: with columns,
    the log is cut at each column's mark (running/columns.py: COLUMN_MARK) and a report
    is the column's that was running, its first lines in the result; a
    report before any mark (boot) fails every column of that boot."""
    names = columns or ["module"]
    hits: dict[str, list[str]] = {c: [] for c in names}
    lines = 0
    for log in logs:
        text = log.read_text(errors="replace").splitlines() if log.exists() else []
        lines += len(text)
        current = None if columns else names[0]
        for line in text:
            if COLUMN_MARK in line:
                current = line.split(COLUMN_MARK, 1)[1].strip()
                continue
            if DETECTOR_REPORT.search(line):
                for c in ([current] if current in hits else names):
                    hits[c].append(f"{log.name}: {line.strip()}")
    if not logs:
        return [result("detectors/serial-log", "fail", "no serial log to scan", impl=c) for c in names]
    out = []
    for c in names:
        if hits[c]:
            out.append(result("detectors/serial-log", "fail",
                              f"{len(hits[c])} detector report line(s): {hits[c][0]}", hits[c][:40],
                              impl=c))
        else:
            out.append(result("detectors/serial-log", "pass", "",
                              [f"{lines} lines of {', '.join(p.name for p in logs)}: no report"],
                              impl=c))
    return out


def run(paths: Paths, reporter: Reporter, accel: str, seed: int, others: list | None = None) -> None:
    """Ours through every step, then each of others (in-tree columns) through
    fuzzed packets and a kmemleak scan; the serial log is scanned per column."""
    others = others or []
    done_others: list[str] = []
    log = paths.out / "logs" / "serial-reliability.log"
    steps = [("kunit", lambda s: kunit(s)), ("fuzz/packets", lambda s: fuzz_packets(s, seed)),
             ("fuzz/netlink", lambda s: fuzz_netlink(s, seed)), ("cycles", cycles),
             ("detectors/kmemleak", kmemleak)]
    guest = None
    done = 0
    try:
        guest, session = boot(paths, accel, "reliability")
        why = session.load(IMPLS["module"])
        if why:
            raise GuestError(f"ila_ref: {why}")
        session.must("write", ["/dev/kmsg", f"{COLUMN_MARK}module"])
        for _, step in steps:
            for r in step(session):
                reporter.add(r)
            done += 1
        # every other column's module under the same detectors
        for impl in others:
            for r in fuzz_other_column(session, impl, seed):
                reporter.add(r)
            for r in kmemleak(session, owner=impl.module_name, column=impl.name):
                reporter.add(r)
            done_others.append(impl.name)
    except GuestError as e:
        lines = str(e).splitlines()
        for i, (name, _) in enumerate(steps[done:]):
            reporter.add(result(name, "fail", f"guest failed: {lines[0]}" if i == 0 else
                                "not run: the guest died", lines[1:] if i == 0 else []))
        for impl in others:
            if impl.name not in done_others:
                reporter.add(result("fuzz/packets", "fail", f"guest failed: {lines[0]}",
                                    lines[1:], impl=impl.name))
    finally:
        if guest:
            guest.close()
    for r in scan_logs([log], ["module", *(i.name for i in others)]):
        reporter.add(r)
