"""make kselftest-run: boot the collection in our QEMU, read its TAP, and
check that every (case, column) got the verdict make conformance gave it.

    python3 -m ilaconf.kselftest.run --kernel BZIMAGE --initrd BASE --gen-init-cpio PATH
        --tarball KSELFTEST.TAR.GZ --bundle DIR --out DIR [--impl COLUMNS] [--no-column NAME ...]
        --runner LABEL=SELFTESTS_DIR ... [--conformance RESULTS.json]

The agreement (out/.../kselftest-run/agreement.ktap, one result per column
and per runner) fails on any (case, column) whose verdict differs. A case
the collection cannot run without the host (a step that needs the far side
to answer) is a SKIP there, listed with its reason, never a disagreement
hidden as a pass. Standard library only: no scapy is needed here.
"""

import argparse
import fnmatch
import json
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from .. import impls, side_by_side
from ..reports import report
from . import bundle, qemu, results

# A SKIP the kselftest mode reports where make conformance runs the case:
# the reasons steps.c gives, each for a kind of case that needs the host.
NEEDS_HOST = ("needs the far side to answer",)


def conformance_verdicts(path: Path) -> dict[tuple[str, str], report.Result]:
    return {(r["case"], r["impl"]): report.Result(**r) for r in json.loads(path.read_text())}


def chosen(case: str, globs: str) -> bool:
    """ila_conformance's --case: named by a glob, and by no !GLOB."""
    words = [g for g in globs.split(",") if g]
    keep = [g for g in words if not g.startswith("!")]
    drop = [g[1:] for g in words if g.startswith("!")]
    return (not keep or any(fnmatch.fnmatch(case, g) for g in keep)) and \
        not any(fnmatch.fnmatch(case, g) for g in drop)


def agreement(section: results.Section, names: dict[str, tuple[str, str]],
              theirs: dict[tuple[str, str], report.Result] | None,
              globs: str = "*", name: str = "kselftest/agrees-with-conformance"
              ) -> report.Result:
    """One column's run against make conformance's verdicts."""
    mine = {names[n]: v for n, v in section.verdicts.items() if n in names}
    wanted = [k for k in names.values() if k[1] == section.label and chosen(k[0], globs)]
    problems, host, warns, compared = [], [], [], 0
    for key in sorted(wanted):
        case = key[0]
        v = mine.get(key)
        if v is None:
            problems.append(f"{case}: no result in the kselftest run")
            continue
        if theirs is None:
            continue
        ref = theirs.get(key)
        if ref is None:
            problems.append(f"{case}: no make conformance result to compare with")
            continue
        compared += 1
        if v.status == ref.status:
            continue
        if v.status == "skip" and v.detail.startswith(NEEDS_HOST):
            host.append(f"{case}: {v.detail}")
            continue
        if v.status == "skip" and v.detail.startswith(bundle.WARNS_KERNEL) and ref.status == "xfail":
            warns.append(f"{case}: {v.detail}")
            continue
        problems.append(f"{case}: make conformance {ref.status}, kselftest {v.status}"
                        + (f" ({v.detail})" if v.detail else "")
                        + "".join(f"\n    {d}" for d in v.diagnostics[:12]))
    bad = [e for e in section.exits if e not in (0, 1, 4)]
    if bad or not section.exits:
        problems.insert(0, f"ila_conformance exited {bad[0]} (0, 1 or 4 expected)"
                        if bad else "ila_conformance did not finish")
    counts = {s: sum(v.status == s for k, v in mine.items()) for s in report.STATUSES}
    detail = (f"{compared} verdicts compared with make conformance, {len(problems)} differ; "
              f"kselftest: {counts['pass']} pass, {counts['xfail']} xfail, {counts['skip']} skip, "
              f"{counts['fail']} fail; {len(host)} need the host (SKIP)"
              + (f", {len(warns)} declared to warn the kernel (SKIP)" if warns else ""))
    if theirs is None:
        detail = "no make conformance results to compare with (run make conformance first)"
    diag = [*(p for text in problems for p in text.splitlines()),
            *(f"needs the host: {h}" for h in host),
            *(f"judged by make conformance alone: {w}" for w in warns)]
    status = "fail" if problems or theirs is None else "pass"
    return report.Result(name, section.label, status,
                         detail if status == "pass" else f"{detail}: {problems[0] if problems else detail}",
                         ["ILA-KSELFTEST-1"], diag)


def runner_check(section: results.Section, direct: results.Section | None) -> report.Result:
    """A kernel tree's run_kselftest.sh over the collection: every program ran
    and exited 0, and its cases gave the verdicts of the direct run."""
    problems = [line for _, line in section.programs if not line.startswith("ok ")]
    if not section.programs:
        problems.append("run_kselftest.sh reported no program")
    if section.exits != [0]:
        problems.append(f"run_kselftest.sh exited {section.exits or 'never'}")
    if section.programs and not section.verdicts:
        problems.append("no program's own TAP reached the log (the runner appends it to "
                        "/dev/stdout)")
    if direct is not None:
        for name, v in sorted(section.verdicts.items()):
            d = direct.verdicts.get(name)
            if d is None or d.status != v.status:
                problems.append(f"{name}: {v.status} here, {d.status if d else 'absent'} in the "
                                "direct run")
    detail = (f"{len(section.programs)} programs, {len(section.verdicts)} results"
              + (f"; {problems[0]}" if problems else ""))
    return report.Result(f"kselftest/runner-{section.label}", "module",
                         "fail" if problems else "pass", detail, ["ILA-KSELFTEST-1"],
                         problems[1:] + section.lines[:3] + ["..."] + section.lines[-5:])


def columns_of(impl: str, no_column: list[str]) -> list[qemu.Column]:
    """IMPL='s columns (make conformance's names), less those not built here."""
    return [qemu.Column(i.name, i.name, i.module_path, i.module_name, impls.rival(i).module_path)
            for i in impls.parse_impls(impl) if i.name not in no_column]


MUTANT_DIR = "/lib/modules/mutants"  # strength/mutation.py: GUEST_DIR


def mutant_columns(manifest: Path) -> tuple[list[qemu.Column], dict[str, dict]]:
    """Each built mutant of make mutation's manifest, judged as ours (module)."""
    built = [m for m in json.loads(manifest.read_text()) if m["ko"]]
    rival = impls.rival(impls.IMPLS["module"]).module_path
    return ([qemu.Column(m["module"], "module", f"{MUTANT_DIR}/{m['module']}.ko", m["module"], rival)
             for m in built], {m["module"]: m for m in built})


def finished(section: results.Section | None) -> bool:
    """A mutant's run came to its end: its first failure, or both parts."""
    return section is not None and bool(section.exits) and (
        len(section.exits) == 2 or any(v.status == "fail" for v in section.verdicts.values()))


def run_mutants(a: argparse.Namespace, columns: list[qemu.Column]) -> dict[str, object]:
    """Each mutant's section of the guest's TAP. A mutant that crashes the
    guest is killed by it ("crash"); a fresh guest then takes the rest."""
    done: dict[str, object] = {}
    todo = list(columns)
    while todo:
        sections = {s.label: s for s in results.parse(run_guest(a, todo, todo[0], [],
                                                                 "--stop-on-fail"))}
        for c in todo:
            if finished(sections.get(c.label)):
                done[c.label] = sections[c.label]
                continue
            done[c.label] = "crash"  # the guest died running it
            break
        todo = [c for c in todo if c.label not in done]
    return done


def mutant_check(section: "results.Section | str | None", mutant: dict, fates: dict[str, str]
                 ) -> report.Result:
    """Killed in the kselftest mode exactly when make mutation's catalog phase
    killed it (fates.json: the killer, or "survived")."""
    fate = fates.get(mutant["id"])
    name = f"kselftest/mutant/{mutant['id']}"
    if section == "crash":
        section, mine = None, "the guest died (kernel panic: see serial.log)"
    else:
        failed = [v for v in section.verdicts.values() if v.status == "fail"] if section else []
        mine = f"{failed[0].name}: {failed[0].detail}" if failed else "survived"
    if section is None and not mine.startswith("the guest died"):
        return report.Result(name, "module", "fail", "the guest printed no run of this mutant",
                             ["ILA-KSELFTEST-1"], [mutant["what"]])
    if fate is None:
        return report.Result(name, "module", "fail", "make mutation has no fate for it: run "
                             "make mutation MUTANTS=... first", ["ILA-KSELFTEST-1"], [mutant["what"]])
    same = (fate == "survived") == (mine == "survived")
    return report.Result(name, "module", "pass" if same else "fail",
                         f"make mutation: {fate.splitlines()[0][:160]}; kselftest: {mine[:160]}",
                         ["ILA-KSELFTEST-1"], [mutant["what"]])


def run_guest(a: argparse.Namespace, columns: list[qemu.Column], ours: qemu.Column,
              runners: list[qemu.Runner], args: str) -> Path:
    """The kselftest initramfs, booted; the guest's TAP log."""
    initrd = build_initrd(a, columns, ours, runners, args, Path(a.out))
    return qemu.boot(Path(a.kernel), initrd, Path(a.out), a.accel, a.timeout, a.cpus)


def run_guests(a: argparse.Namespace, columns: list[qemu.Column], ours: qemu.Column,
               runners: list[qemu.Runner]) -> Path:
    """Guests side by side, each booting the collection with its share of
    the columns (the first also runs the kernel trees' runners): the
    catalog's guest is uniprocessor, so a second CPU needs a second guest.
    Their TAP logs, in share order, make out/tap.log, as one guest's would."""
    work: dict[str, int] = {}
    if a.conformance and Path(a.conformance).exists():
        for r in json.loads(Path(a.conformance).read_text()):
            work[r["impl"]] = work.get(r["impl"], 0) + (r["status"] != "skip")
    # the work of a column: the cases it ran in make conformance (1 without)
    groups = side_by_side.balance(columns, a.guests, lambda c: work.get(c.name, 1))
    if len(groups) == 1:
        return run_guest(a, columns, ours, runners, "")
    out = Path(a.out)

    def one(k: int) -> None:
        sub = out / f"guest-{k + 1}"
        initrd = build_initrd(a, groups[k], ours, runners if k == 0 else [], "", sub)
        qemu.boot(Path(a.kernel), initrd, sub, a.accel, a.timeout, a.cpus)
    try:
        side_by_side.run_all([lambda k=k: one(k) for k in range(len(groups))])
    finally:
        for name in ("tap.log", "serial.log"):
            with open(out / name, "w") as joined:
                for k in range(len(groups)):
                    part = out / f"guest-{k + 1}" / name
                    if part.exists():
                        joined.write(part.read_text(errors="replace"))
    return out / "tap.log"


def build_initrd(a: argparse.Namespace, columns: list[qemu.Column], ours: qemu.Column,
                 runners: list[qemu.Runner], args: str, out: Path) -> Path:
    """The harness's initramfs with the collection, its columns and runners."""
    out.mkdir(parents=True, exist_ok=True)
    initrd = out / "initramfs-kselftest.cpio.gz"
    with tempfile.TemporaryDirectory(prefix="ila-kselftest-") as tmp:
        # the tarball itself, unpacked, as a lab would (its layout is the install's)
        unpacked = Path(tmp) / "kselftest"
        with tarfile.open(a.tarball) as tar:
            tar.extractall(unpacked)
        timers = a.kconfig and "CONFIG_POSIX_TIMERS=y" in Path(a.kconfig).read_text()
        lines = qemu.cpio_list(unpacked, runners, columns, ours, Path(a.program),
                               Path(tmp), a.case, args, a.runner_case, bool(timers))
        qemu.initramfs(Path(a.initrd), Path(a.gen_init_cpio), lines, initrd)
    return initrd


def main() -> int:
    p = argparse.ArgumentParser(prog="ilaconf.kselftest.run")
    p.add_argument("--kernel", required=True)
    p.add_argument("--kconfig", default="", help="its .config (POSIX timers: the runners' timeout)")
    p.add_argument("--initrd", required=True, help="the harness's initramfs")
    p.add_argument("--gen-init-cpio", required=True)
    p.add_argument("--tarball", required=True, help="make kselftest's kselftest.tar.gz")
    p.add_argument("--bundle", required=True)
    p.add_argument("--program", default="kselftest/guest-run.sh")
    p.add_argument("--out", required=True)
    p.add_argument("--accel", default="tcg")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--cpus", type=int, default=1,
                   help="each guest's vCPUs: a column's cases run side by side (an SMP kernel)")
    p.add_argument("--guests", type=int, default=os.cpu_count() or 1,
                   help="guests side by side, the columns shared out among them")
    p.add_argument("--impl", default="all", help="the columns, as make conformance's IMPL=")
    p.add_argument("--no-column", action="append", default=[], help="a column not built here")
    p.add_argument("--runner", action="append", default=[], help="LABEL=SELFTESTS_DIR")
    p.add_argument("--conformance", default="", help="make conformance's results.json")
    p.add_argument("--case", default="*", help="globs over case ids, comma separated")
    p.add_argument("--runner-case", default="*", help="the cases the kernel trees' runners run "
                   "(ILA_CASE), every one by default")
    p.add_argument("--mutants", default="", help="make mutation's mutants.json: run each built "
                   "mutant as the module column, stopping at its first failure, instead of IMPL=")
    p.add_argument("--fates", default="", help="with --mutants: make mutation's fates.json")
    p.add_argument("--tap-log", default="", help="judge this earlier run's tap.log; no boot")
    p.add_argument("--kernel-label", default="")
    p.add_argument("--kernel-version", default="")
    a = p.parse_args()
    out = Path(a.out)
    try:
        columns = columns_of(a.impl, a.no_column)
    except ValueError as e:
        print(f"kselftest-run: {e}", file=sys.stderr)
        return 2
    runners = [qemu.Runner(*(lambda k, v: (k, Path(v)))(*r.split("=", 1))) for r in a.runner]
    ours = next((c for c in columns if c.name == "module"), None)
    mutants: dict[str, dict] = {}
    if a.mutants:
        columns, mutants = mutant_columns(Path(a.mutants))
        ours, runners = columns[0] if columns else None, []
    if not columns or ours is None:
        print("kselftest-run: IMPL= must include module (ours: the kernel trees' runners "
              "run the collection with it)", file=sys.stderr)
        return 2
    by_mutant: dict[str, object] = {}
    try:
        if mutants:
            by_mutant = run_mutants(a, columns)
            log = Path(a.out) / "tap.log"
        else:
            log = Path(a.tap_log) if a.tap_log else run_guests(a, columns, ours, runners)
    except (qemu.RunError, OSError) as e:
        print(f"kselftest-run: {e}", file=sys.stderr)
        rep = report.Reporter(out, 1, name="agreement", kernel=a.kernel_label,
                              kernel_version=a.kernel_version)
        rep.add(report.Result("kselftest/run", "all", "fail", str(e).splitlines()[0],
                              ["ILA-KSELFTEST-1"], str(e).splitlines()[1:]))
        rep.finish()
        return 1
    names = results.index(Path(a.bundle))
    sections = results.parse(log)
    theirs = conformance_verdicts(Path(a.conformance)) if a.conformance and \
        Path(a.conformance).exists() else None
    # every verdict of the direct runs, as make conformance reports them
    rep = report.Reporter(out, None, name="results", kernel=a.kernel_label,
                          kernel_version=a.kernel_version)
    # in the bundle's order, however the guest shared a column's cases out
    order = {name: n for n, name in enumerate(names)}
    for s in (s for s in sections if s.kind == "column"):
        for name, v in sorted(s.verdicts.items(), key=lambda kv: order.get(kv[0], len(order))):
            case, impl = names.get(name, (name, s.label))
            rep.add(report.Result(case, impl, v.status, v.detail, [], v.diagnostics))
    rep.finish()
    agree = report.Reporter(out, None, name="agreement", kernel=a.kernel_label,
                            kernel_version=a.kernel_version)
    if mutants:
        fates = json.loads(Path(a.fates).read_text()) if a.fates and Path(a.fates).exists() else {}
        for label, m in mutants.items():
            agree.add(mutant_check(by_mutant.get(label), m, fates))
        return 1 if agree.finish() else 0
    seen = {s.label for s in sections if s.kind == "column"}
    for c in columns:
        section = next((s for s in sections if s.kind == "column" and s.label == c.name), None)
        if section is None:
            agree.add(report.Result("kselftest/agrees-with-conformance", c.name, "fail",
                                    "the guest printed no run of this column" +
                                    (" (it stopped early: see serial.log)" if c.name not in seen
                                     else ""), ["ILA-KSELFTEST-1"]))
            continue
        agree.add(agreement(section, names, theirs, a.case))
    direct = next((s for s in sections if s.kind == "column" and s.label == "module"), None)
    for r in runners:
        section = next((s for s in sections if s.kind == "runner" and s.label == r.label), None)
        if section is None:
            agree.add(report.Result(f"kselftest/runner-{r.label}", "module", "fail",
                                    "the guest printed no run of this runner", ["ILA-KSELFTEST-1"]))
            continue
        agree.add(runner_check(section, direct))
    return 1 if agree.finish() else 0


if __name__ == "__main__":
    sys.exit(main())
