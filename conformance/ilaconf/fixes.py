"""What each patch of kernel/patches/ fixes, as the deviations files say it.

A patch's cases, for a patched column (impls.PATCHED), are those whose
expectation changes when the series is read without it: a deviation
'fixed_by' it comes back. The selftest patch (patch_series.py) carries
exactly the union of them, and a leave-one-out run (make leave-one-out)
checks that a build without the patch fails exactly its own.
"""

from pathlib import Path

from . import impls, patches
from .catalog import cases as catalog
from .running import applies


def expectation(case, column: str) -> tuple:
    """What a case expects of a column: its deviation, its stop, its clone deviation."""
    return (getattr(case, "deviations", {}).get(column),
            getattr(case, "stops", {}).get(column),
            getattr(case, "clone_deviations", {}).get(column))


def cases_fixed_by(cases_dir: Path, files: list[tuple[Path, str | None]], patch: str,
                   columns: list[str], kernel_version: str, pattern: str = "*",
                   fixed: "set[str] | None" = None) -> dict[str, list[str]]:
    """case id -> the columns that run the case and whose expectation this patch changes."""
    every = {p.name for p in patches.all_patches()}
    if patch not in every:
        raise ValueError(f"{patch}: no such patch in kernel/patches/ ({', '.join(sorted(every))})")
    held = catalog.discover(cases_dir, pattern, files, fixed, kernel_version, series=every)
    without = catalog.discover(cases_dir, pattern, files, fixed, kernel_version,
                               series=every - {patch})
    out: dict[str, list[str]] = {}
    for a, b in zip(held, without):
        assert a.id == b.id
        changed = [c for c in columns if expectation(a, c) != expectation(b, c)
                   and not applies.skip_reason(impls.IMPLS[c], a)]
        if changed:
            out[a.id] = changed
    return out
