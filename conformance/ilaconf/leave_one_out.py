"""make leave-one-out: each patch of kernel/patches/ earns its place.

For each patch, the in-tree module is built with the series less that patch
and judged as if it held the whole series, on a subset of cases: the
patch's own cases (fixes.cases_fixed_by) and a few of every other patch's.
The run must fail exactly the patch's own cases, in exactly the columns the
patch changes: a patch whose cases still pass without it fixes nothing the
suite can see, and a failure elsewhere is a dependency between patches.
"""

import json
from pathlib import Path

from . import fixes, patches
from .reports import report

COLUMNS = ["intree+patches", "intree+patches-map"]
OTHERS = 3  # cases of each other patch kept in the subset, which must still pass


def subset(cases_dir: Path, files: list[tuple[Path, str | None]], patch: str,
           kernel_version: str, fixed: set[str]) -> list[str]:
    """The case ids one leave-one-out run takes."""
    mine = fixes.cases_fixed_by(cases_dir, files, patch, COLUMNS, kernel_version, fixed=fixed)
    chosen = set(mine)
    for other in patches.all_patches():
        if other.name != patch:
            theirs = fixes.cases_fixed_by(cases_dir, files, other.name, COLUMNS, kernel_version,
                                          fixed=fixed)
            chosen |= set(sorted(set(theirs) - set(mine))[:OTHERS])
    return sorted(chosen)


def run_dir(patch: str) -> str:
    """The patch's run, as make leave-one-out names it: SERIES-NNNN (net-0002)."""
    series = next((p.parent.name for p in patches.all_patches() if p.name == patch), "unknown")
    return f"{series}-{patch[:4]}"


def check(cases_dir: Path, files: list[tuple[Path, str | None]], patch: str, kernel_version: str,
          fixed: set[str], results: Path, rep: report.Reporter) -> None:
    """One KTAP line per patch: the failures of its run against its own cases."""
    mine = fixes.cases_fixed_by(cases_dir, files, patch, COLUMNS, kernel_version, fixed=fixed)
    want = {(c, col) for c, cols in mine.items() for col in cols}
    name = f"leave-one-out/{run_dir(patch)}"
    if not results.exists():
        rep.add(report.Result(name, "intree+patches", "fail",
                              f"{results} is missing: the run without {patch} did not finish"))
        return
    rows = json.loads(results.read_text())
    ran = {(r["case"], r["impl"]) for r in rows}
    failed = {(r["case"], r["impl"]) for r in rows if r["status"] in ("fail", "error")}
    want &= ran
    if not want:
        rep.add(report.Result(name, "intree+patches", "fail",
                              f"the run held none of {patch}'s cases: nothing to judge"))
        return
    extra, missing = sorted(failed - want), sorted(want - failed)
    diags = [f"failed, though {patch} does not change it: {c} [{col}]" for c, col in extra[:20]]
    diags += [f"passed without {patch}, which should have broken it: {c} [{col}]"
              for c, col in missing[:20]]
    ok = not extra and not missing
    detail = (f"without {patch}: exactly its {len(want)} results fail, of {len(ran)} run"
              if ok else f"without {patch}: {len(failed)} results fail, {len(want)} expected "
              f"({len(extra)} unexpected, {len(missing)} missing); the run: {results}")
    rep.add(report.Result(name, "intree+patches", "pass" if ok else "fail", detail,
                          diagnostics=diags))
