"""Command line: python3 -m ilaconf run|summary ... (the Makefile calls it)."""

import argparse
import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

from . import impls, leave_one_out
from .bench import driver as bench
from .bench import report as benchreport
from .catalog import cases, deviations, newcase
from .kselftest import collection, patch_series
from .reliability import detectors as reliability
from .reports import junit, matrix, report
from .running import columns
from .oracle.golden import golden_column
from .running.session import Paths, Session
from .strength import fuzz, mutation


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


def columns_and_deviations(a: argparse.Namespace) -> tuple[list[impls.Impl],
                                                           list[tuple[Path, str | None]]]:
    """IMPL= as columns (less those not built for this kernel), and the
    deviations files that judge them (conformance/deviations/, EXPECT=)."""
    selected = impls.parse_impls(a.impl, Path(a.externals))
    for name in a.no_column:
        if name in a.impl.split(","):
            raise ValueError(f"IMPL={name}: that column is not built for this kernel")
        if any(i.name == name for i in selected):
            print(f"# {name}: not built for this kernel, left out of IMPL={a.impl}")
        selected = [i for i in selected if i.name != name]
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
    return selected, files


def cmd_run(a: argparse.Namespace) -> int:
    try:
        selected, files = columns_and_deviations(a)
        chosen = cases.discover(Path(a.cases), a.case, files, fixed=set(a.fixed.split()),
                                kernel_version=a.kernel_version)
    except ValueError as e:
        print(f"ilaconf: {e}", file=sys.stderr)
        return 2
    if not inputs_exist(a):
        return 2
    paths = Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path(a.golden),
                         debug_kernel=a.detectors)
    rep = report.Reporter(Path(a.out), len(chosen) * len(selected)
                          + (2 * len(selected) if a.detectors else 0),
                          kernel=a.kernel_label, kernel_version=a.kernel_version)
    scanned: set[str] = set()

    def detectors(session: Session, impl: impls.Impl) -> list[report.Result]:
        # the debug kernel: a kmemleak scan after each column's cases
        scanned.add(impl.name)
        return list(reliability.kmemleak(session, owner=impl.module_name, column=impl.name))
    for old in (Path(a.out) / "logs").glob("serial-*"):
        old.unlink()  # a stale log of an earlier run must not be scanned
    columns.run_columns(selected, chosen, paths, rep, a.accel, a.bless,
                        after=detectors if a.detectors else None, jobs=a.jobs)
    if a.detectors:
        for impl in selected:
            if impl.name not in scanned:
                rep.add(reliability.result("detectors/kmemleak", "fail",
                                           "not scanned: the column's guest died", impl=impl.name))
        for r in reliability.scan_logs(sorted((Path(a.out) / "logs").glob("serial-[0-9]*.log")),
                                       [i.name for i in selected]):
            rep.add(r)
    rep.finish()
    if a.bless:
        return bless_status(chosen, selected, rep.results)
    return print_summary([Path(a.out) / "results.ktap"])


def bless_status(chosen: list, selected: list[impls.Impl], results: list[report.Result]) -> int:
    """make golden: 0 when every case was blessed from its golden column. The
    other columns' results are printed above but do not decide it."""
    golden = {c.id: golden_column(c) for c in chosen}
    mine = [r for r in results if golden.get(r.case) == r.impl]
    bad = [r for r in mine if r.status != "pass"]
    others = [r for r in results if golden.get(r.case) != r.impl]
    missing = sorted(set(golden) - {r.case for r in mine})
    if missing:
        names = ", ".join(sorted({golden[c] for c in missing}))
        print(f"golden: not blessed, IMPL= leaves out the golden column ({names}) of: "
              f"{', '.join(missing)}")
    for r in bad:
        print(f"golden: {r.case} NOT blessed: {r.impl} {r.status}: {r.detail}")
    t = report.totals(others)
    print(f"golden: blessed {len(mine) - len(bad)} of {len(golden)} case(s); other columns "
          f"(not part of this status): {t['pass'] + t['xfail']} passed, {t['fail']} failed"
          + (f", {t['skip']} skipped" if t['skip'] else ""))
    return 1 if bad or missing else 0


def cmd_kselftest(a: argparse.Namespace) -> int:
    """make kselftest: out/kselftest/ and out/kselftest.tar.gz."""
    files = [(f, None) for f in sorted(Path(a.deviations).glob("*.toml"))]
    try:
        count = collection.build(Path.cwd(), Path(a.out), Path(a.ksrc), Path(a.kconfig), files,
                                 set(a.fixed.split()))
    except (collection.CollectionError, OSError) as e:
        print(f"kselftest: {e}", file=sys.stderr)
        return 1
    print(f"kselftest: {a.out}/kselftest/ ({count} results over every column) and "
          f"{a.out}/kselftest.tar.gz")
    return 0


def cmd_patch_series(a: argparse.Namespace) -> int:
    """make patch-series: out/patches/<series>/, as it would be mailed."""
    try:
        written = patch_series.build(Path.cwd(), Path(a.ksrc), Path(a.out), a.kernel_version)
    except (patch_series.SeriesError, collection.CollectionError, cases.CaseError, OSError) as e:
        print(f"patch-series: {e}", file=sys.stderr)
        return 1
    for d in written:
        n = len([p for p in d.glob("0*.patch")])
        print(f"patch-series: {d}/ ({n} mails with the cover letter; checkpatch.pl --strict "
              f"in {d}/checkpatch.txt)")
    return 0


def cmd_new_case(a: argparse.Namespace) -> int:
    try:
        path = newcase.create(Path(a.cases), Path(a.template), a.proto, a.name, a.dir)
    except (ValueError, OSError) as e:
        print(f"new-case: {e}", file=sys.stderr)
        return 2
    cid = path.relative_to(Path(a.cases)).with_suffix("").as_posix()
    print(f"new-case: wrote {path}; edit 'verifies', 'requirements' and the packet, then:\n"
          f"  make conformance CASE={cid}   (fails 'no golden capture' once the oracle agrees)\n"
          f"  make golden CASE={cid}")
    return 0


def cmd_list_cases(a: argparse.Namespace) -> int:
    """The ids CASE= can name, one a line, with what each verifies."""
    try:
        chosen = cases.choose(cases.catalog(Path(a.cases)), a.case)
    except cases.CaseError as e:
        print(f"list-cases: {e}", file=sys.stderr)
        return 2
    for c in chosen:
        print(f"{c.id:60} {' '.join(c.verifies.split())[:100]}")
    print(f"{len(chosen)} case(s)", file=sys.stderr)
    return 0


def cmd_merge(a: argparse.Namespace) -> int:
    """Several kernels' runs as one report, and the differences between kernels."""
    results = []
    for f in map(Path, a.results):
        if not f.exists():
            print(f"merge: {f} is missing (that kernel's run did not finish)", file=sys.stderr)
            results.append(report.Result("run", f.parent.name, "fail", f"{f} missing"))
            continue
        results += [report.Result(**r) for r in json.loads(f.read_text())]
    rep = report.Reporter(Path(a.out), len(results))
    for r in results:
        rep.add(r)
    rep.finish()
    kernels = sorted({r.kernel for r in results})
    by: dict[tuple[str, str], dict[str, str]] = {}
    for r in results:
        by.setdefault((r.impl, r.case), {})[r.kernel] = r.status
    differ = [(k, v) for k, v in sorted(by.items()) if len(set(v.values())) > 1]
    print(f"# kernels {', '.join(kernels)}: {len(differ)} case(s) whose result differs "
          "between kernels (each a finding to explain)")
    for (impl, case), v in differ:
        print(f"#   {impl}:{case}: " + ", ".join(f"{k} {s}" for k, s in sorted(v.items())))
    return print_summary([Path(a.out) / "results.ktap"])


def cmd_junit_check(a: argparse.Namespace) -> int:
    """make test: the JUnit file, read by a real consumer, agrees with the KTAP."""
    problems = junit.check(Path(a.junit), Path(a.ktap))
    rep = report.Reporter(Path(a.out), 1, name="junit-check")
    rep.add(report.Result("junit/parses-and-matches-ktap", "junitparser",
                          "fail" if problems else "pass", problems[0] if problems else "",
                          ["ILA-REPORT-1"], problems[1:]))
    rep.finish()
    return 1 if problems else 0


def deviation_files(a: argparse.Namespace) -> list[tuple[Path, str | None]]:
    return [(f, None) for f in sorted(Path(a.deviations).glob("*.toml"))]


def cmd_leave_one_out_cases(a: argparse.Namespace) -> int:
    """The case ids of one leave-one-out run, comma separated (CASE=)."""
    try:
        print(",".join(leave_one_out.subset(Path(a.cases), deviation_files(a), a.patch,
                                            a.kernel_version, set(a.fixed.split()))))
    except (ValueError, cases.CaseError) as e:
        print(f"leave-one-out: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_leave_one_out_check(a: argparse.Namespace) -> int:
    """One result per patch: its run fails exactly its own cases."""
    rep = report.Reporter(Path(a.out), len(a.patch), name="leave-one-out",
                          kernel=a.kernel_label, kernel_version=a.kernel_version)
    for name in a.patch:
        leave_one_out.check(Path(a.cases), deviation_files(a), name, a.kernel_version,
                            set(a.fixed.split()), Path(a.out) / leave_one_out.run_dir(name) / "results.json",
                            rep)
    rep.finish()
    return print_summary([Path(a.out) / "leave-one-out.ktap"])


def cmd_skip(a: argparse.Namespace) -> int:
    """A step make test cannot run here, counted as a skip with its reason."""
    rep = report.Reporter(Path(a.out), 1, name=a.name)
    rep.add(report.Result(a.what, "make-test", "skip", a.why))
    rep.finish()
    return 0


def cmd_reliability(a: argparse.Namespace) -> int:
    if not inputs_exist(a):
        return 2
    paths = Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path("pcaps"),
                         debug_kernel=True)
    rep = report.Reporter(Path(a.out), None, name="reliability", kernel=a.kernel_label,
                          kernel_version=a.kernel_version)
    print(f"# reliability: seed {a.seed} (replay with make reliability SEED={a.seed})")
    others = [impls.IMPLS[n] for n in ("intree-luid", "intree+patches", f"intree-{impls.PREFIX_RELEASE}")
              if n not in a.no_column]
    reliability.run(paths, rep, a.accel, a.seed, others)
    rep.finish()
    return print_summary([Path(a.out) / "reliability.ktap"])


def cmd_fuzz(a: argparse.Namespace) -> int:
    """make fuzz: random routes and packets against every column, judged by the oracle."""
    try:
        selected, files = columns_and_deviations(a)
        if a.count < 1:
            raise ValueError(f"N={a.count}: give a number of packets, 1 or more")
    except ValueError as e:
        print(f"ilaconf: {e}", file=sys.stderr)
        return 2
    if not inputs_exist(a):
        return 2
    out = Path(a.out)
    paths = Paths(Path(a.kernel), Path(a.initrd), out, Path(a.golden))
    rep = report.Reporter(out / "fuzz", len(selected), name="fuzz", kernel=a.kernel_label,
                          kernel_version=a.kernel_version)
    try:
        fuzz.run(paths, rep, a.accel, selected, a.seed, a.count, files, set(a.fixed.split()),
                 a.kernel_version)
    except ValueError as e:
        print(f"ilaconf: {e}", file=sys.stderr)
        return 2
    rep.finish()
    return print_summary([out / "fuzz" / "fuzz.ktap"])


def cmd_mutation_build(a: argparse.Namespace) -> int:
    """make mutation, step 1: every mutant and broken copy, built."""
    patches = sorted(Path(a.broken).glob("*.patch"))
    try:
        only = None
        if a.only:  # the debug phase: survivors the equivalents file does not explain
            listed = mutation.load_equivalents(Path(a.equivalents))
            only = {i for i, f in mutation.load_fates(Path(a.only)).items()
                    if f == "survived" and i not in listed}
        built = mutation.build(Path(a.kdir), Path(a.src).resolve(), Path(a.out).resolve(),
                               patches, only=only, kunit=a.kunit, pick=a.mutants)
    except mutation.MutationError as e:
        print(f"mutation: {e}", file=sys.stderr)
        return 2
    mutation.save(built, Path(a.out) / "mutants.json")
    bad = [b for b in built if not b.ko]
    print(f"# mutation: built {len(built) - len(bad)} of {len(built)} mutants"
          + (f" (the unlisted survivors of {a.only})" if a.only else
             f" (MUTANTS={a.mutants})" if a.mutants != "*" else
             f" ({len(built) - len(patches)} generated, {len(patches)} from {a.broken})")
          + f"; {len(bad)} do not compile")
    broken = [b for b in bad if b.id.startswith("broken:")]
    for b in broken:
        print(f"mutation: {b.id}: {b.error}", file=sys.stderr)
    return 2 if broken else 0


def cmd_mutation_run(a: argparse.Namespace) -> int:
    """make mutation, step 2: the catalog against each mutant."""
    try:
        built = mutation.load(Path(a.manifest))
        equivalents = mutation.load_equivalents(Path(a.equivalents))
        files = [(f, None) for f in sorted(Path(a.deviations).glob("*.toml"))]
        chosen = cases.discover(Path(a.cases), a.case, files, fixed=set(a.fixed.split()),
                                kernel_version=a.kernel_version)
    except ValueError as e:
        print(f"ilaconf: {e}", file=sys.stderr)
        return 2
    if not inputs_exist(a):
        return 2
    out = Path(a.out)
    paths = Paths(Path(a.kernel), Path(a.initrd), out, Path(a.golden), debug_kernel=a.debug)
    name = "mutation-detectors" if a.debug else "mutation"
    rep = report.Reporter(out / "mutation", len(built), name=name, kernel=a.kernel_label,
                          kernel_version=a.kernel_version)
    started = time.monotonic()
    fate = mutation.run(paths, rep, a.accel, built, chosen, equivalents, debug=a.debug,
                        jobs=a.jobs)
    rep.finish()
    everything = built
    if a.debug:  # the survivors' second chance: merge with the catalog phase
        phase1 = Path(a.phase1)
        everything = mutation.load(phase1 / "mutants.json")
        fate = {**mutation.load_fates(phase1 / "fates.json"),
                **{i: f"{f} (debug kernel)" if f != "survived" else f for i, f in fate.items()}}
    else:
        mutation.save_fates(fate, out / "mutation" / "fates.json")
    lines = mutation.summary(everything, fate, equivalents)
    lines.append(f"# mutation: {time.monotonic() - started:.0f} s for {len(built)} mutants "
                 f"against {len(chosen)} cases, {a.jobs} guest(s) side by side"
                 + (" on the debug kernel" if a.debug else ""))
    print("\n".join(lines))
    (out / "mutation" / "summary.txt").write_text("\n".join(lines) + "\n")
    if not a.debug:
        return print_summary([out / "mutation" / f"{name}.ktap"])
    # one verdict per mutant over both phases: what make mutation's status says
    final = report.Reporter(out / "mutation", len(everything), name="mutation-final",
                            kernel=a.kernel_label, kernel_version=a.kernel_version)
    for b in everything:
        f = fate.get(b.id, "stillborn")
        if f == "stillborn":
            final.add(report.Result(f"mutation/{b.id}", "module", "skip", f"stillborn: {b.error}"))
        else:
            final.add(mutation.verdict(b, "" if f == "survived" else f, "", equivalents))
    final.finish()
    return print_summary([out / "mutation" / "mutation-final.ktap"])


def cmd_bench(a: argparse.Namespace) -> int:
    if not inputs_exist(a):
        return 2
    paths = Paths(Path(a.kernel), Path(a.initrd), Path(a.out), Path("pcaps"))
    settings = bench.Settings()
    if a.quick:  # a smoke check: every workload once, the smallest scale
        settings = bench.Settings(rounds=1, seconds=0.2, scale_counts=(1000,), iterations=20_000,
                                  quick=True)
    try:  # IMPL=external:DIR adds a column; make's default IMPL=all adds none
        externals = tuple(i for i in impls.parse_impls(a.impl, Path(a.externals))
                          if i.description.startswith("external: "))
    except ValueError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    settings = dataclasses.replace(settings, externals=externals)
    if a.only or a.rounds:
        settings = dataclasses.replace(settings, only=tuple(g.strip() for g in a.only.split(",")
                                                            if g.strip()),
                                       rounds=a.rounds or settings.rounds)
        if a.only and not settings.workloads:
            print(f"bench: BENCH_ONLY={a.only!r} matches no workload; the workloads are:\n  "
                  + "\n  ".join(w.name for w in bench.WORKLOADS), file=sys.stderr)
            return 2
    if a.profile:
        settings = bench.Settings(profile=True)
        print("# bench: perf profiles of the plain and the ILA flow, each alone")
        return bench.run(paths, settings, a.accel)
    scale = ("no scale figures (BENCH_ONLY)" if settings.only
             else f"scale {', '.join(map(str, settings.scale_counts))} routes")
    print(f"# bench: {len(settings.workloads)} workloads x {settings.rounds} round(s) for each of "
          f"{', '.join(settings.columns)}: a plain and an ILA flow in alternating slices, "
          f"{settings.seconds} s each; {scale}")
    return bench.run(paths, settings, a.accel)


def cmd_bench_doc(a: argparse.Namespace) -> int:
    """BENCH.md's figures and BENCH.svg from the last make bench."""
    data, doc = Path(a.json), Path(a.doc)
    if not data.exists():
        print(f"bench-doc: {data} missing: run make bench first", file=sys.stderr)
        return 2
    result = json.loads(data.read_text())
    if result.get("only"):
        print(f"bench-doc: {data} is a partial run (BENCH_ONLY={','.join(result['only'])}): "
              "BENCH.md takes the figures of a full make bench", file=sys.stderr)
        return 2
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


def guest_options(sp: argparse.ArgumentParser, out: str = "out") -> None:
    """What every command that boots a guest takes: its kernel and initramfs,
    the output directory and the accelerator."""
    sp.add_argument("--kernel", required=True)
    sp.add_argument("--initrd", required=True)
    sp.add_argument("--out", default=out)
    sp.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])


def main() -> int:
    p = argparse.ArgumentParser(prog="ilaconf")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="boot the guest and run cases")
    guest_options(r)
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
    r.add_argument("--bless", action="store_true", help="write golden captures from this run")
    r.add_argument("--jobs", type=int, default=1,
                   help="guests side by side, the columns shared out among them")
    r.add_argument("--kernel-label", default="", help="the kernel's name in the results (6.12)")
    r.add_argument("--no-column", action="append", default=[],
                   help="a column the build did not make for this kernel")
    r.add_argument("--kernel-version", default="", help="its full version")
    r.add_argument("--fixed", default="", help="kernel/patches/ the kernel's source holds "
                   "already: deviations 'fixed_by' one of them do not apply")
    r.add_argument("--detectors", action="store_true",
                   help="the debug kernel: add a kmemleak scan and a serial-log scan, and do "
                   "not compare the TCP window of kernel-built segments with the golden")
    r.set_defaults(func=cmd_run)
    f = sub.add_parser("fuzz", help="random routes and packets against every column")
    guest_options(f)
    f.add_argument("--impl", default="all")
    f.add_argument("--externals", default="out/build/external/list")
    f.add_argument("--expect", default="")
    f.add_argument("--deviations", default="conformance/deviations")
    f.add_argument("--golden", default="pcaps")
    f.add_argument("--kernel-label", default="")
    f.add_argument("--kernel-version", default="")
    f.add_argument("--no-column", action="append", default=[])
    f.add_argument("--fixed", default="")
    f.add_argument("--seed", type=lambda v: int(v, 0), default=20261204)
    f.add_argument("--count", type=int, default=10_000, help="packets in all")
    f.set_defaults(func=cmd_fuzz)
    mb = sub.add_parser("mutation-build", help="build every mutant of our module")
    mb.add_argument("--kdir", required=True)
    mb.add_argument("--src", default="kernel/ila")
    mb.add_argument("--out", required=True)
    mb.add_argument("--broken", default="conformance/strength/broken")
    mb.add_argument("--only", default="", help="a fates.json: build only its unlisted survivors")
    mb.add_argument("--equivalents", default="conformance/strength/equivalent-mutants.toml")
    mb.add_argument("--kunit", action="store_true", help="and each xlat.c mutant's KUnit module")
    mb.add_argument("--mutants", default="*", help="comma-separated globs over mutant ids")
    mb.set_defaults(func=cmd_mutation_build)
    mr = sub.add_parser("mutation-run", help="the catalog against every built mutant")
    mr.add_argument("--manifest", required=True)
    mr.add_argument("--case", default="*")
    mr.add_argument("--cases", default="conformance/cases")
    mr.add_argument("--deviations", default="conformance/deviations")
    mr.add_argument("--equivalents", default="conformance/strength/equivalent-mutants.toml")
    mr.add_argument("--golden", default="pcaps")
    guest_options(mr)
    mr.add_argument("--kernel-label", default="")
    mr.add_argument("--kernel-version", default="")
    mr.add_argument("--fixed", default="")
    mr.add_argument("--debug", action="store_true", help="the detector phase, on the debug kernel")
    mr.add_argument("--phase1", default="", help="with --debug: the catalog phase's directory")
    mr.add_argument("--jobs", type=int, default=1, help="guests side by side, one mutant each")
    mr.set_defaults(func=cmd_mutation_run)
    rel = sub.add_parser("reliability", help="the debug kernel's detectors over fuzzing and cycles")
    guest_options(rel, out="out/debug")
    rel.add_argument("--seed", type=lambda v: int(v, 0), default=20261203)
    rel.add_argument("--kernel-label", default="")
    rel.add_argument("--no-column", action="append", default=[])
    rel.add_argument("--kernel-version", default="")
    rel.set_defaults(func=cmd_reliability)
    b = sub.add_parser("bench", help="ILA/plain ratios in one boot (not a test)")
    guest_options(b)
    b.add_argument("--quick", action="store_true", help="one short round: a smoke check")
    b.add_argument("--profile", action="store_true", help="perf profiles instead (needs perf "
                   "in the initramfs)")
    b.add_argument("--only", default="", help="comma-separated globs of workload names; "
                   "no scale figures")
    b.add_argument("--rounds", type=int, default=0, help="rounds instead of the default")
    b.add_argument("--impl", default="all", help="external:DIR[,...]: a column each, besides "
                   "ours and the in-tree module's")
    b.add_argument("--externals", default="out/build/external/list")
    b.set_defaults(func=cmd_bench)
    d = sub.add_parser("bench-doc", help="write the last bench's figures into BENCH.md")
    d.add_argument("json")
    d.add_argument("doc")
    d.set_defaults(func=cmd_bench_doc)
    n = sub.add_parser("new-case", help="a new case file from the commented template")
    n.add_argument("--proto", required=True)
    n.add_argument("--name", required=True)
    n.add_argument("--dir", default="", help="the folder, if not the protocol's (e.g. ext)")
    n.add_argument("--cases", default="conformance/cases")
    n.add_argument("--template", default="conformance/templates/case.toml")
    n.set_defaults(func=cmd_new_case)
    lc = sub.add_parser("list-cases", help="the case ids CASE= can name")
    lc.add_argument("--case", default="*")
    lc.add_argument("--cases", default="conformance/cases")
    lc.set_defaults(func=cmd_list_cases)
    m = sub.add_parser("merge", help="one report over several kernels' results.json")
    m.add_argument("--out", required=True)
    m.add_argument("results", nargs="+")
    m.set_defaults(func=cmd_merge)
    j = sub.add_parser("junit-check", help="read a JUnit file with junitparser against KTAP")
    j.add_argument("junit")
    j.add_argument("ktap")
    j.add_argument("--out", required=True, help="where to write the check's own KTAP")
    j.set_defaults(func=cmd_junit_check)
    ps = sub.add_parser("patch-series", help="each series with its selftest, as mailed")
    ps.add_argument("--ksrc", required=True)
    ps.add_argument("--out", required=True)
    ps.add_argument("--kernel-version", default="")
    ps.set_defaults(func=cmd_patch_series)
    lc1 = sub.add_parser("leave-one-out-cases", help="the cases of one leave-one-out run")
    lc1.add_argument("--patch", required=True)
    lc2 = sub.add_parser("leave-one-out-check", help="each run without a patch fails its cases")
    lc2.add_argument("--patch", action="append", required=True)
    lc2.add_argument("--out", required=True)
    lc2.add_argument("--kernel-label", default="")
    for x in (lc1, lc2):
        x.add_argument("--cases", default="conformance/cases")
        x.add_argument("--deviations", default="conformance/deviations")
        x.add_argument("--kernel-version", default="")
        x.add_argument("--fixed", default="")
    lc1.set_defaults(func=cmd_leave_one_out_cases)
    lc2.set_defaults(func=cmd_leave_one_out_check)
    k = sub.add_parser("skip", help="a KTAP file holding one reported skip")
    k.add_argument("--out", required=True)
    k.add_argument("--name", required=True)
    k.add_argument("--what", required=True)
    k.add_argument("--why", required=True)
    k.set_defaults(func=cmd_skip)
    ks = sub.add_parser("kselftest", help="the catalog as a kselftest collection and tarball")
    ks.add_argument("--out", required=True)
    ks.add_argument("--ksrc", required=True, help="the kernel source (its selftests framework)")
    ks.add_argument("--kconfig", required=True, help="the kernel's .config")
    ks.add_argument("--deviations", default="conformance/deviations")
    ks.add_argument("--fixed", default="")
    ks.set_defaults(func=cmd_kselftest)
    s = sub.add_parser("summary", help="sum KTAP totals into 'N passed, N failed'")
    s.add_argument("ktap", nargs="+")
    s.set_defaults(func=cmd_summary)
    a = p.parse_args()
    return a.func(a)


if __name__ == "__main__":
    sys.exit(main())
