"""Rewrite CONFORMANCE.md's results matrix from out/results.json (make matrix).

The matrix sits between two marker comments, so the committed table is
always the output of the last real run, never typed by hand.
"""

import json
import re
import sys
from pathlib import Path

BEGIN, END = "<!-- matrix:begin -->", "<!-- matrix:end -->"


def render(results: list[dict]) -> str:
    impls = sorted({r["impl"] for r in results})
    reqs = sorted({q for r in results for q in r["requirements"]})
    head = "| requirement | " + " | ".join(impls) + " | cases |"
    rows = [head, "|" + " --- |" * (len(impls) + 2)]
    for q in reqs:
        cells = []
        for impl in impls:
            mine = [r for r in results if r["impl"] == impl and q in r["requirements"]]
            counts = {s: sum(r["status"] == s for r in mine) for s in ("pass", "xfail", "fail", "skip")}
            cells.append(" ".join(f"{n} {s}" for s, n in counts.items() if n) or "untested")
        ids = sorted({r["case"] for r in results if q in r["requirements"]})
        links = ", ".join(f"[{c}](conformance/cases/{c}.toml)" for c in ids)
        rows.append(f"| {q} | " + " | ".join(cells) + f" | {links} |")
    cases = sorted({(r["impl"], r["case"], r["status"]) for r in results})
    rows += ["", "| implementation | case | status |", "| --- | --- | --- |"]
    rows += [f"| {i} | [{c}](conformance/cases/{c}.toml) | {s} |" for i, c, s in cases]
    return "\n".join(rows)


def main() -> int:
    results_file, doc = Path(sys.argv[1]), Path(sys.argv[2])
    if not results_file.exists():
        print(f"matrix: {results_file} missing: run make conformance first", file=sys.stderr)
        return 2
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        print(f"matrix: {doc} lacks the {BEGIN} / {END} markers", file=sys.stderr)
        return 2
    table = render(json.loads(results_file.read_text()))
    text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END),
                  lambda _: f"{BEGIN}\n{table}\n{END}", text, flags=re.S)
    doc.write_text(text)
    print(f"matrix: {doc} updated from {results_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
