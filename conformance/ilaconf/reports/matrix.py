"""Rewrite CONFORMANCE.md's results matrix from out/results.json (make matrix).

The matrix sits between two marker comments, so the committed table is
always the output of the last real run, never typed by hand.
"""

import json
import re
import sys
from pathlib import Path

from ..impls import IMPLS

BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"


STATUSES = ("pass", "xfail", "fail", "skip")


def keyed(results: list[dict]) -> list[dict]:
    """Each result with its column: the implementation, or KERNEL/IMPL when the
    results hold more than one kernel."""
    many = len({r.get("kernel", "") for r in results}) > 1
    return [{**r, "col": f"{r.get('kernel', '')}/{r['impl']}" if many else r["impl"]}
            for r in results]


def columns_of(results: list[dict]) -> list[str]:
    order = {name: i for i, name in enumerate(IMPLS)}
    present = {(r.get("kernel", ""), r["impl"], r["col"]) for r in results}
    return [c for _, _, c in sorted(present, key=lambda p: (p[0], order.get(p[1], len(order)),
                                                            p[1]))]


def describe(col: str) -> str:
    impl = col.split("/", 1)[-1] if col.split("/", 1)[-1] in IMPLS else col
    return f"**{col}**: {IMPLS[impl].description}" if impl in IMPLS else f"**{col}**"


def link(case: str) -> str:
    return f"[{case}](conformance/cases/{case}.toml)"


def render(results: list[dict]) -> str:
    results = keyed(results)
    cols = columns_of(results)
    kernels = sorted({f"{r['kernel']} ({r['kernel_version']})" for r in results
                      if r.get("kernel")})
    totals = {c: {s: sum(r["col"] == c and r["status"] == s for r in results) for s in STATUSES}
              for c in cols}
    out = ([f"Kernels: {', '.join(kernels)}.", ""] if kernels else [])
    out += ["Columns: " + "; ".join(describe(c) for c in cols) + ".", ""]
    out += ["| | " + " | ".join(cols) + " |", "|" + " --- |" * (len(cols) + 1)]
    out.append("| all cases | " + " | ".join(
        ", ".join(f"{n} {s}" for s, n in totals[c].items() if n) for c in cols) + " |")
    out += ["", "### Requirements", "",
            "| requirement | " + " | ".join(cols) + " | cases |", "|" + " --- |" * (len(cols) + 2)]
    for q in sorted({q for r in results for q in r["requirements"]}):
        cells = []
        for c in cols:
            mine = [r for r in results if r["col"] == c and q in r["requirements"]]
            counts = {s: sum(r["status"] == s for r in mine) for s in STATUSES}
            cells.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "untested")
        ids = sorted({r["case"] for r in results if q in r["requirements"]})
        out.append(f"| {q} | " + " | ".join(cells) + " | " + ", ".join(map(link, ids)) + " |")
    out += ["", "### Deviations observed (xfail), by requirement and cause", ""]
    causes: dict[str, dict[str, list[str]]] = {}
    for r in results:
        if r["status"] == "xfail":
            causes.setdefault(r["detail"], {}).setdefault(r["col"], []).append(r["case"])
    for cause in sorted(causes):
        where = "; ".join(f"{c}: {len(ids)} case(s)" for c, ids in causes[cause].items())
        ids = sorted({i for v in causes[cause].values() for i in v})
        shown = ", ".join(map(link, ids[:6])) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")
        out.append(f"- **{cause}** ({where}): {shown}")
    fails = [r for r in results if r["status"] == "fail"]
    out += ["", f"Failures: {len(fails)}" + (": " + ", ".join(
        f"{r['col']}:{r['case']}" for r in fails) if fails else ".")]
    out += ["", "### Cases", "", "| case | " + " | ".join(cols) + " |", "|" + " --- |" * (len(cols) + 1)]
    by_case: dict[str, dict[str, str]] = {}
    for r in results:
        by_case.setdefault(r["case"], {})[r["col"]] = r["status"]
    for case in sorted(by_case):
        out.append(f"| {link(case)} | " + " | ".join(by_case[case].get(c, "") for c in cols) + " |")
    return "\n".join(out)


def update_section(doc: Path, begin: str, end: str, body: str) -> str | None:
    """Replace what lies between two marker lines of doc; why not, if it cannot."""
    text = doc.read_text()
    if begin not in text or end not in text:
        return f"{doc} lacks the {begin} / {end} markers"
    doc.write_text(re.sub(re.escape(begin) + ".*?" + re.escape(end),
                          lambda _: f"{begin}\n{body}\n{end}", text, flags=re.S))
    return None


def main() -> int:
    results_file, doc = Path(sys.argv[1]), Path(sys.argv[2])
    if not results_file.exists():
        print(f"matrix: {results_file} missing: run make conformance first", file=sys.stderr)
        return 2
    problem = update_section(doc, BEGIN, END, render(json.loads(results_file.read_text())))
    if problem:
        print(f"matrix: {problem}", file=sys.stderr)
        return 2
    print(f"matrix: {doc} updated from {results_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
