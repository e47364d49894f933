"""make reliability: our module under the debug kernel's detectors.

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

from . import topology
from .guest import Guest, GuestError
from .impls import IMPLS
from .report import Reporter, Result
from .runner import Paths, Session, guest_memory

FUZZ = "/bin/ila-fuzz"
KUNIT_MODULE = "/lib/modules/ila_ref_kunit.ko"
KMEMLEAK = "/sys/kernel/debug/kmemleak"
PACKETS, MESSAGES, CYCLES = 100_000, 10_000, 200
FUZZ_PREFIX = "3333:0:0:1::"
DETECTOR_REPORT = re.compile(
    r"BUG:|WARNING:|KASAN:|KFENCE:|suspected memory leak|possible recursive locking|possible circular locking"
    r"|inconsistent lock state|sleeping function called from invalid context|Kernel panic|Oops")
REQ = ["ILA-RELIABILITY-1"]


def result(name: str, status: str, detail: str = "", diag: list[str] | None = None) -> Result:
    return Result(name, "module", status, detail, REQ, diag or [])


def kunit(session: Session) -> list[Result]:
    """Load the KUnit module; its tests run at load and print KTAP to the log."""
    session.guest.run("dmesg", [])
    reply = session.guest.run("insmod", [KUNIT_MODULE])
    if reply.rc != 0:
        return [result("kunit/ila_ref_xlat", "fail",
                       f"insmod {KUNIT_MODULE}: {' | '.join(reply.out)} (built only for KERNEL=debug)")]
    log = session.guest.run("dmesg", []).out
    session.guest.run("rmmod", ["ila_ref_kunit"])
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


def kmemleak(session: Session, owner: str = "ila_ref") -> list[Result]:
    """Two scans (kmemleak reports only objects older than 5 s), then the report."""
    if session.guest.run("cat", [KMEMLEAK]).rc != 0:
        return [result("detectors/kmemleak", "fail", f"{KMEMLEAK} unreadable: not a KERNEL=debug guest?")]
    for _ in range(2):
        session.must("write", [KMEMLEAK, "scan"])
        time.sleep(6)
    report = session.must("cat", [KMEMLEAK])
    objects = sum(line.startswith("unreferenced object") for line in report)
    ours = [line for line in report if owner in line]
    if ours:
        return [result("detectors/kmemleak", "fail", f"{len(ours)} leaked allocation(s) from {owner}",
                       report[:60])]
    return [result("detectors/kmemleak", "pass", "",
                   [f"{objects} unreferenced object(s) reported, none allocated by {owner}",
                    *report[:20]])]


def scan_logs(logs: list[Path]) -> Result:
    """Every detector report in the guests' serial logs fails the run."""
    hits, lines = [], 0
    for log in logs:
        text = log.read_text(errors="replace").splitlines() if log.exists() else []
        lines += len(text)
        hits += [f"{log.name}: {line}" for line in text if DETECTOR_REPORT.search(line)]
    if not logs:
        return result("detectors/serial-log", "fail", "no serial log to scan")
    if hits:
        return result("detectors/serial-log", "fail", f"{len(hits)} detector report line(s)", hits[:40])
    return result("detectors/serial-log", "pass", "",
                  [f"{lines} lines of {', '.join(p.name for p in logs)}: no report"])


def run(paths: Paths, reporter: Reporter, accel: str, seed: int) -> None:
    log = paths.out / "logs" / "serial-reliability.log"
    steps = [("kunit", lambda s: kunit(s)), ("fuzz/packets", lambda s: fuzz_packets(s, seed)),
             ("fuzz/netlink", lambda s: fuzz_netlink(s, seed)), ("cycles", cycles),
             ("detectors/kmemleak", kmemleak)]
    guest = None
    done = 0
    try:
        guest = Guest(paths.kernel, paths.initrd, log, paths.out / "pcaps", accel, tag="reliability",
                      memory=guest_memory(paths))
        session = Session(guest, paths)
        session.setup()
        why = session.load(IMPLS["module"])
        if why:
            raise GuestError(f"ila_ref: {why}")
        for _, step in steps:
            for r in step(session):
                reporter.add(r)
            done += 1
    except GuestError as e:
        lines = str(e).splitlines()
        for i, (name, _) in enumerate(steps[done:]):
            reporter.add(result(name, "fail", f"guest failed: {lines[0]}" if i == 0 else
                                "not run: the guest died", lines[1:] if i == 0 else []))
    finally:
        if guest:
            guest.close()
    reporter.add(scan_logs([log]))
