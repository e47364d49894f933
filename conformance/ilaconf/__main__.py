"""Command line: python3 -m ilaconf run|summary ... (the Makefile calls it)."""

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import bench, benchreport, cases, deviations, impls, matrix, reliability, report, runner


def inputs_exist(a: argparse.Namespace) -> bool:
    """The kernel and initramfs a guest boots, which make builds."""
    for f in (a.kernel, a.initrd):
        if not Path(f).exists():
            print(f"ilaconf: {f} is missing (run through make, which builds it)", file=sys.stderr)
            return False
    return True


def print_summary(ktap: list[Path]) -> int:
    """The 'N passed, N failed[, N skipped]' line over KTAP files; 1 on a failure."""
    passed, failed, skipped = report.summarize(ktap)
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


def cmd_run(a: argparse.Namespace) -> int:
    try:
        selected = impls.parse_impls(a.impl, Path(a.externals))
        files: list[tuple[Path, str | None]] = [
            (f, None) for f in sorted(Path(a.deviations).glob("*.toml"))]
        external = [i.name for i in selected if i.name not in impls.IMPLS]
        deviations.register_columns(external)
        if a.expect:
            if not Path(a.expect).is_file():
                raise ValueError(f"EXPECT={a.expect}: no such file")
            if len(external) != 1:
                raise ValueError(f"EXPECT= applies to one external implementation; IMPL names "
                                 f"{len(external)}")
            files.append((Path(a.expect), external[0]))
        chosen = cases.discover(Path(a.cases), a.case, files)
    except ValueError as e:
        print(f"ilaconf: {e}", file=sys.stderr)
        return 2
    if not inputs_exist(a):
        return 2
    paths = runner.Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path(a.golden),
                         debug_kernel=a.detectors)
    rep = report.Reporter(Path(a.out), len(chosen) * len(selected) + (2 if a.detectors else 0))

    scanned = []

    def detectors(session: runner.Session) -> None:
        # the debug kernel: a kmemleak scan after the cases, then the serial logs
        owner = session.impl.module_name if session.impl else "ila_ref"
        for r in reliability.kmemleak(session, owner=owner):
            rep.add(r)
        scanned.append(True)
    for old in (Path(a.out) / "logs").glob("serial-*"):
        old.unlink()  # a stale log of an earlier run must not be scanned
    runner.run_columns(selected, chosen, paths, rep, a.accel, a.bless,
                       after=detectors if a.detectors else None)
    if a.detectors and not scanned:
        rep.add(reliability.result("detectors/kmemleak", "fail",
                                   "not scanned: the last guest died"))
    if a.detectors:
        rep.add(reliability.scan_logs(sorted((Path(a.out) / "logs").glob("serial-[0-9]*.log"))))
    rep.finish()
    return print_summary([Path(a.out) / "results.ktap"])


def cmd_reliability(a: argparse.Namespace) -> int:
    if not inputs_exist(a):
        return 2
    paths = runner.Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path("pcaps"),
                         debug_kernel=True)
    rep = report.Reporter(Path(a.out), None, name="reliability")
    print(f"# reliability: seed {a.seed} (replay with make reliability SEED={a.seed})")
    reliability.run(paths, rep, a.accel, a.seed)
    rep.finish()
    return print_summary([Path(a.out) / "reliability.ktap"])


def cmd_bench(a: argparse.Namespace) -> int:
    if not inputs_exist(a):
        return 2
    paths = runner.Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path("pcaps"))
    settings = bench.Settings()
    if a.quick:  # a smoke check: every workload once, the smallest scale
        settings = bench.Settings(rounds=1, seconds=0.2, scale_counts=(1000,), iterations=20_000,
                                  quick=True)
    if a.profile:
        settings = bench.Settings(profile=True)
        print("# bench: perf profiles of the plain and the ILA flow, each alone")
        return bench.run(paths, settings, a.accel)
    print(f"# bench: {len(bench.WORKLOADS)} workloads x {settings.rounds} round(s) for each of "
          f"{', '.join(bench.IMPLS_BENCHED)}: a plain and an ILA flow in alternating slices, "
          f"{settings.seconds} s each; scale {', '.join(map(str, settings.scale_counts))} routes")
    return bench.run(paths, settings, a.accel)


def cmd_bench_doc(a: argparse.Namespace) -> int:
    """BENCH.md's figures and BENCH.svg from the last make bench."""
    data, doc = Path(a.json), Path(a.doc)
    if not data.exists():
        print(f"bench-doc: {data} missing: run make bench first", file=sys.stderr)
        return 2
    result = json.loads(data.read_text())
    problem = matrix.update_section(doc, benchreport.DOC_BEGIN, benchreport.DOC_END,
                                   benchreport.markdown(result))
    if problem:
        print(f"bench-doc: {problem}", file=sys.stderr)
        return 2
    shutil.copyfile(data.with_suffix(".svg"), doc.with_suffix(".svg"))
    print(f"bench-doc: {doc} and {doc.with_suffix('.svg')} updated from {data}")
    return 0


def cmd_summary(a: argparse.Namespace) -> int:
    return print_summary([Path(f) for f in a.ktap])


def main() -> int:
    p = argparse.ArgumentParser(prog="ilaconf")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="boot the guest and run cases")
    r.add_argument("--kernel", required=True)
    r.add_argument("--initrd", required=True)
    r.add_argument("--impl", default="all", help="all, intree, or columns: "
                   + ", ".join(impls.IMPLS))
    r.add_argument("--case", default="*", help="glob over case ids such as tcp/output-syn")
    r.add_argument("--cases", default="conformance/cases")
    r.add_argument("--golden", default="pcaps")
    r.add_argument("--externals", default="out/build/external/list",
                   help="the externals kernel/build-externals.sh built")
    r.add_argument("--expect", default="", help="deviations file for the external column")
    r.add_argument("--deviations", default="conformance/deviations",
                   help="directory of *.toml files of expected deviations")
    r.add_argument("--out", default="out")
    r.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    r.add_argument("--bless", action="store_true", help="write golden captures from this run")
    r.add_argument("--detectors", action="store_true",
                   help="the debug kernel: add a kmemleak scan and a serial-log scan, and do "
                   "not compare the TCP window of kernel-built segments with the golden")
    r.set_defaults(func=cmd_run)
    rel = sub.add_parser("reliability", help="the debug kernel's detectors over fuzzing and cycles")
    rel.add_argument("--kernel", required=True)
    rel.add_argument("--initrd", required=True)
    rel.add_argument("--out", default="out/debug")
    rel.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    rel.add_argument("--seed", type=lambda v: int(v, 0), default=20261203)
    rel.set_defaults(func=cmd_reliability)
    b = sub.add_parser("bench", help="ILA/plain ratios in one boot (not a test)")
    b.add_argument("--kernel", required=True)
    b.add_argument("--initrd", required=True)
    b.add_argument("--out", default="out")
    b.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    b.add_argument("--quick", action="store_true", help="one short round: a smoke check")
    b.add_argument("--profile", action="store_true", help="perf profiles instead (needs perf "
                   "in the initramfs)")
    b.set_defaults(func=cmd_bench)
    d = sub.add_parser("bench-doc", help="write the last bench's figures into BENCH.md")
    d.add_argument("json")
    d.add_argument("doc")
    d.set_defaults(func=cmd_bench_doc)
    s = sub.add_parser("summary", help="sum KTAP totals into 'N passed, N failed'")
    s.add_argument("ktap", nargs="+")
    s.set_defaults(func=cmd_summary)
    a = p.parse_args()
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
