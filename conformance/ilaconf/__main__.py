"""Command line: python3 -m ilaconf run|summary ... (the Makefile calls it)."""

import argparse
import sys
from pathlib import Path

from . import cases, deviations, impls, report, runner


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
    for f in (a.kernel, a.initrd):
        if not Path(f).exists():
            print(f"ilaconf: {f} is missing (run through make, which builds it)", file=sys.stderr)
            return 2
    paths = runner.Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path(a.golden))
    rep = report.Reporter(Path(a.out), len(chosen) * len(selected))
    runner.run_columns(selected, chosen, paths, rep, a.accel, a.bless)
    failed = rep.finish()
    passed, failed, skipped = report.summarize([Path(a.out) / "results.ktap"])
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


def cmd_summary(a: argparse.Namespace) -> int:
    passed, failed, skipped = report.summarize([Path(f) for f in a.ktap])
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


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
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("summary", help="sum KTAP totals into 'N passed, N failed'")
    s.add_argument("ktap", nargs="+")
    s.set_defaults(func=cmd_summary)
    a = p.parse_args()
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
