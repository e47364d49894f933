"""kernel/patches/: the fix series the patched in-tree columns are built with.

Each series is a directory (net/, net-next/) of `git format-patch` output;
its 0000-cover-letter.patch is mail, not code. LEAVE_OUT= of make (the
environment's ILA_LEAVE_OUT) names patches the build left out, so that a
leave-one-out run expects exactly those patches' bugs back.
"""

import os
from pathlib import Path

PATCH_DIR = Path(__file__).resolve().parents[2] / "kernel" / "patches"
SERIES = ("net", "net-next")  # the order they apply in
COVER = "0000-cover-letter.patch"


def all_patches() -> list[Path]:
    """Every fix of every series, in the order they apply."""
    return [p for s in SERIES for p in sorted((PATCH_DIR / s).glob("[0-9][0-9][0-9][0-9]-*.patch"))
            if p.name != COVER]


def left_out() -> set[str]:
    """The patches LEAVE_OUT= names; an unknown name is an error naming the valid ones."""
    names = {n.strip() for n in os.environ.get("ILA_LEAVE_OUT", "").split(",") if n.strip()}
    every = all_patches()
    unknown = sorted(n for n in names if not any(named(p, n) for p in every))
    if unknown:
        raise ValueError(f"LEAVE_OUT={','.join(unknown)}: no such patch in kernel/patches/; "
                         f"the series: {', '.join(p.name for p in every)}")
    return {p.name for p in every if any(named(p, n) for n in names)}


def named(patch: Path, name: str) -> bool:
    """A patch is named by its file name or as SERIES/NNNN (net/0002), as kernel/series.sh does."""
    return name in (patch.name, f"{patch.parent.name}/{patch.name[:4]}")


def in_patched_columns() -> set[str]:
    """What the patched in-tree columns (impls.PATCHED) hold: the series minus LEAVE_OUT."""
    return {p.name for p in all_patches()} - left_out()
