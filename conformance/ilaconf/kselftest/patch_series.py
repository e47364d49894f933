"""make patch-series: each series of kernel/patches/ as it would be mailed.

For each series (net/, net-next/): a git-initialized copy of the kernel
source's net/ipv6/ila and selftests Makefile, the series applied with
`git am`, then one more commit generated here, never kept in the
repository: the selftest, tools/testing/selftests/net/ila/, the kselftest
collection (make kselftest) cut down to the cases the series fixes
(fixes.cases_fixed_by), judged in the in-tree module's own columns with the
series held. `git format-patch --cover-letter` then writes
out/patches/<series>/, the cover letter taking its subject and text from
the committed kernel/patches/<series>/0000-cover-letter.patch, and
checkpatch.pl --strict of the kernel source reads every patch.
"""

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

from .. import fixes, impls, patches
from ..catalog import cases as catalog
from . import collection

# The in-tree module's columns a series' selftest runs, as a tree holding
# the series: the adj-transport configurations for the packet fixes (its
# defaults adjust no checksum at all), the mapping table as shipped for its
# netlink (the columns that run control cases).
TREE_COLUMNS = {"net": ["intree-luid", "intree-map-adj"], "net-next": ["intree-map"]}
# The patched columns whose changed expectations pick the selftest's cases.
PATCHED_COLUMNS = ["intree+patches", "intree+patches-map"]
IDENTITY = ["-c", "user.name=ILA conformance suite", "-c", "user.email=ila-conformance@invalid"]
SELFTEST_SUBJECT = "selftests: net: add an ILA test of the fixed translations"
SELFTEST_SUBJECT_NETLINK = "selftests: net: add an ILA test of the mapping table's netlink"


class SeriesError(RuntimeError):
    pass


def git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, "-c", "core.abbrev=12", *args], cwd=tree,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SeriesError(f"git {' '.join(args)} in {tree}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def cover_text(cover: Path) -> tuple[str, str]:
    """The subject (without its [PATCH ...] tag) and the text of a committed cover letter."""
    text = cover.read_text()
    m = re.search(r"^Subject: \[[^\]]*\] (.+(?:\n .+)*)$", text, re.M)
    if not m:
        raise SeriesError(f"{cover}: no 'Subject: [PATCH ...] ...' line")
    body = text[text.index("\n\n", m.end()) + 2:]
    end = re.search(r"^\S.* \(\d+\):$", body, re.M)  # git shortlog's first author line
    return " ".join(m.group(1).split()), (body[:end.start()] if end else body).rstrip() + "\n"


def selftest_cases(repo: Path, files: list[tuple[Path, str | None]], names: list[str],
                   kernel_version: str) -> list[str]:
    """The cases the series fixes, each once: a case in its plain layout, and a
    receive layout (case@layout) only where the plain case shows nothing of
    that patch (a shared skb), its first such layout. The whole catalog is
    make kselftest's; a patch's selftest stays small enough to mail."""
    ids: set[str] = set()
    for name in names:
        fixed = set(fixes.cases_fixed_by(repo / "conformance" / "cases", files, name,
                                         PATCHED_COLUMNS, kernel_version))
        plain = {i for i in fixed if "@" not in i}
        ids |= plain
        firsts: dict[str, str] = {}
        for i in sorted(fixed - plain):
            firsts.setdefault(i.split("@")[0], i)
        ids |= {v for k, v in firsts.items() if k not in plain}
    return sorted(ids)


def selftest_message(ids: list[str], series: str) -> str:
    folders = sorted({i.split("/")[0] for i in ids})
    if series == "net-next":
        return SELFTEST_SUBJECT_NETLINK + "\n\n" + "\n\n".join(textwrap.fill(t, width=72) for t in [
            f"Add tools/testing/selftests/net/ila/ with {len(ids)} cases of the ILA conformance "
            f"suite that this series changes: requests to the ILA mapping table's generic "
            f"netlink family that must be refused (no loc_match or loc, an unknown attribute, "
            f"a short locator, an unknown csum-mode) and deletes of mappings that do not "
            f"exist. Each case runs its commands (ip ila, and ila-map, a small generic netlink "
            f"client that can send malformed requests) in a network namespace of its own and "
            f"checks their exit status and output.",
            "The programs (ila_control.sh) are the runner of the suite's kselftest collection, "
            "ila_conformance, reading the case bundle (bundle/) the suite generates from its "
            "case files.",
            "Without the series the cases fail; with it they pass."]) + "\n"
    paragraphs = [
        f"Add tools/testing/selftests/net/ila/, which checks, frame by frame, what the ILA "
        f"translations of net/ipv6/ila do to {len(ids)} packets: the cases of the ILA "
        f"conformance suite that the fixes of this series change. Each case sends its frames "
        f"through veth or tun devices in network namespaces of its own, sets up its routes "
        f"(\"csum-mode adj-transport ident-type luid\") or mappings (the same) with the "
        f"machine's ip, captures the far side with AF_PACKET and compares it byte for byte "
        f"with the suite's golden capture; where the module differs from the suite's "
        f"requirements by design (the mapping table translates ahead of a router's own "
        f"errors), the case expects exactly that and reports it as XFAIL.",
        f"One program per group of cases ({', '.join(f'ila_{f}.sh' for f in folders)}), all "
        f"of them the same runner, ila_conformance, reading the case bundle (bundle/), which "
        f"the suite generates from its case files and captures.",
        "Without the fixes, the cases of each fail; with them, every case passes or is an "
        "XFAIL of a design difference.",
    ]
    return SELFTEST_SUBJECT + "\n\n" + "\n\n".join(textwrap.fill(t, width=72)
                                                   for t in paragraphs) + "\n"


# The columns a cover letter compares: the module as shipped, then built with the series.
BEFORE_AFTER = {"net": [("intree-luid", "intree+patches"), ("intree-map-adj", "intree+patches-map")],
                "net-next": [("intree-map", "intree+patches-map")]}


def results_table(repo: Path, files: list[tuple[Path, str | None]], names: list[str],
                  series: str, results: Path) -> str:
    """Before and after, per kernel, from the last make conformance over both kernels."""
    if not results.exists():
        return (f"    (no {results}: run make conformance KVER=6.1,6.12, then make "
                f"patch-series)")
    rows = json.loads(results.read_text())
    cases_dir = repo / "conformance" / "cases"
    out = ["    kernel  column              all cases: pass xfail skip fail  "
           "the series' cases: pass xfail fail"]
    for kernel in sorted({r["kernel"] for r in rows}):
        version = next(r["kernel_version"] for r in rows if r["kernel"] == kernel)
        unfixed = catalog.discover(cases_dir, "*", files, set(), version, series=set())
        fixed = catalog.discover(cases_dir, "*", files, set(names), version, series=set())
        for base, after in BEFORE_AFTER[series]:
            # the cases whose expectation the series changes, in the module as shipped
            mine = {a.id for a, b in zip(unfixed, fixed)
                    if fixes.expectation(a, base) != fixes.expectation(b, base)}
            for column in (base, after):
                got = [r for r in rows if r["kernel"] == kernel and r["impl"] == column
                       and (series == "net" or r["case"].startswith("control/map-"))]
                if not got:
                    continue
                n = {k: sum(1 for r in got if r["status"] == k)
                     for k in ("pass", "xfail", "skip", "fail")}
                m = {k: sum(1 for r in got if r["status"] == k and r["case"] in mine)
                     for k in ("pass", "xfail", "fail")}
                out.append(f"    {kernel:6}  {column:18}  {n['pass']:15} {n['xfail']:5} "
                           f"{n['skip']:4} {n['fail']:4}  {m['pass']:23} {m['xfail']:5} "
                           f"{m['fail']:4}")
    return "\n".join(out)


def write_selftest(repo: Path, tree: Path, files: list[tuple[Path, str | None]],
                   ids: list[str], held: set[str], names: list[str]) -> None:
    dest = tree / "tools" / "testing" / "selftests" / "net" / "ila"
    columns = [impls.IMPLS[c] for c in names]
    collection.write(repo, dest, files, held, ",".join(ids), columns,
                     program_args=f"--impl {','.join(names)} ")
    mk = tree / "tools" / "testing" / "selftests" / "Makefile"
    text = mk.read_text()
    if "TARGETS += net/ila\n" not in text:
        anchor = "TARGETS += net/hsr\n"
        if anchor not in text:
            raise SeriesError(f"{mk}: no '{anchor.strip()}' line to add net/ila after")
        mk.write_text(text.replace(anchor, anchor + "TARGETS += net/ila\n", 1))


def build(repo: Path, ksrc: Path, out: Path, kernel_version: str) -> list[Path]:
    """out/patches/<series>/ for every series with patches; returns the directories."""
    files = [(f, None) for f in sorted((repo / "conformance" / "deviations").glob("*.toml"))]
    every = {p.name for p in patches.all_patches()}
    written = []
    for series in patches.SERIES:
        mine = [p for p in patches.all_patches() if p.parent.name == series]
        if not mine:
            continue
        cover = patches.PATCH_DIR / series / patches.COVER
        if not cover.exists():
            raise SeriesError(f"{cover} is missing: each series has its cover letter")
        subject, blurb = cover_text(cover)
        tree = out / "tree" / series
        if tree.exists():
            shutil.rmtree(tree)
        (tree / "net" / "ipv6").mkdir(parents=True)
        shutil.copytree(ksrc / "net" / "ipv6" / "ila", tree / "net" / "ipv6" / "ila")
        (tree / "tools" / "testing" / "selftests").mkdir(parents=True)
        shutil.copy2(ksrc / "tools" / "testing" / "selftests" / "Makefile",
                     tree / "tools" / "testing" / "selftests" / "Makefile")
        git(tree, "init", "-q")
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", f"base: {ksrc.name}")
        base = git(tree, "rev-parse", "HEAD").strip()
        git(tree, "am", "-q", *[str(p) for p in mine])
        ids = selftest_cases(repo, files, [p.name for p in mine], kernel_version)
        if ids:
            write_selftest(repo, tree, files, ids, every, TREE_COLUMNS[series])
            git(tree, "add", "-A")
            msg = selftest_message(ids, series)
            msg += "\nSigned-off-by: ILA conformance suite <ila-conformance@invalid>\n"
            subprocess.run(["git", *IDENTITY, "commit", "-q", "-F", "-"], cwd=tree,
                           input=msg, text=True, check=True)
        dest = out / series
        if dest.exists():
            shutil.rmtree(dest)
        git(tree, "format-patch", "-q", "--cover-letter", f"--subject-prefix=PATCH {series}",
            f"--base={base}", "-o", str(dest.resolve()), f"{base}..HEAD")
        generated = dest / patches.COVER
        text = generated.read_text()
        blurb = blurb.replace("@RESULTS@", results_table(
            repo, files, [p.name for p in mine], series, repo / "out" / "kernels" / "results.json"))
        text = text.replace("*** SUBJECT HERE ***", subject).replace("*** BLURB HERE ***",
                                                                      blurb.rstrip())
        generated.write_text(text)
        checkpatch = ksrc / "scripts" / "checkpatch.pl"
        report = []
        for p in sorted(dest.glob("0*.patch")):
            if p.name == patches.COVER:
                continue
            done = subprocess.run([str(checkpatch), "--strict", "--no-tree", str(p)],
                                  capture_output=True, text=True)
            report.append(f"== {p.name}\n{done.stdout.strip()}\n")
        (dest / "checkpatch.txt").write_text("\n".join(report))
        written.append(dest)
    return written
