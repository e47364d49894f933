"""Results: KTAP on stdout and in out/results.ktap, JSON in out/results.json,
JUnit in out/results.junit.xml (junit.py). A column is a kernel and an
implementation: KTAP names each result KERNEL/IMPL:CASE."""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import junit

STATUSES = ("pass", "fail", "xfail", "skip")


@dataclass
class Result:
    case: str
    impl: str
    status: str
    detail: str
    requirements: list[str] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    kernel: str = ""  # the kernel's label (6.1, 6.12, ksrc-...), set by the Reporter
    kernel_version: str = ""  # its full version (Debian's, or the tree's git describe)

    @property
    def column(self) -> str:
        return f"{self.kernel}/{self.impl}" if self.kernel else self.impl


def ktap_line(n: int, r: Result) -> str:
    name = f"{r.column}:{r.case}"
    if r.status == "pass":
        return f"ok {n} {name}"
    if r.status == "skip":
        return f"ok {n} {name} # SKIP {r.detail}"
    if r.status == "xfail":  # kselftest.h's form: CI parsers take any "not ok" as a failure
        return f"ok {n} {name} # XFAIL {r.detail}"
    return f"not ok {n} {name}"


def totals(results: list[Result]) -> dict[str, int]:
    return {s: sum(r.status == s for r in results) for s in STATUSES}


class Reporter:
    """Prints each result as it comes, writes the files at the end."""

    def __init__(self, out: Path, planned: int | None, name: str = "results",
                 kernel: str = "", kernel_version: str = "") -> None:
        """planned None: the plan line comes last, once the count is known."""
        self.out, self.name, self.planned = out, name, planned
        self.kernel, self.kernel_version = kernel, kernel_version
        self.results: list[Result] = []
        self.lines = ["KTAP version 1"] + ([f"1..{planned}"] if planned is not None else [])
        for line in self.lines:
            print(line, flush=True)

    def add(self, r: Result) -> None:
        r.kernel = r.kernel or self.kernel
        r.kernel_version = r.kernel_version or self.kernel_version
        self.results.append(r)
        lines = [f"# {d}" if d else "#" for d in r.diagnostics]
        if r.status not in ("pass", "skip") and r.detail:
            ran = r.status == "fail" and r.requirements and not r.detail.startswith("not run")
            reqs = f" [breaks {', '.join(r.requirements)}]" if ran else ""
            lines.insert(0, f"# {r.column}:{r.case}: {r.detail}{reqs}")
        lines.append(ktap_line(len(self.results), r))
        self.lines += lines
        print("\n".join(lines), flush=True)

    def finish(self) -> int:
        t = totals(self.results)
        summary = (f"# Totals: pass:{t['pass']} fail:{t['fail']} xfail:{t['xfail']} xpass:0 "
                   f"skip:{t['skip']} error:0")
        if self.planned is None:
            self.lines.append(f"1..{len(self.results)}")
            print(self.lines[-1])
        self.lines.append(summary)
        print(summary)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"{self.name}.ktap").write_text("\n".join(self.lines) + "\n")
        (self.out / f"{self.name}.json").write_text(
            json.dumps([asdict(r) for r in self.results], indent=2) + "\n")
        junit.write(self.out / f"{self.name}.junit.xml", self.results, self.name)
        return t["fail"]


def summarize(ktap_files: list[Path]) -> tuple[int, int, int]:
    """Sum the '# Totals:' lines of KTAP files: (passed, failed, skipped).

    xfail counts as passed (the declared deviation was observed exactly); a
    file without a totals line counts as one failure, never as nothing.
    """
    passed = failed = skipped = 0
    for f in ktap_files:
        lines = [line for line in f.read_text().splitlines() if line.startswith("# Totals:")] \
            if f.exists() else []
        if not lines:
            print(f"summary: {f} has no '# Totals:' line (the run did not finish)")
            failed += 1
            continue
        t = dict(kv.split(":") for kv in lines[-1].removeprefix("# Totals:").split())
        passed += int(t["pass"]) + int(t.get("xfail", 0))
        failed += int(t["fail"]) + int(t.get("error", 0)) + int(t.get("xpass", 0))
        skipped += int(t.get("skip", 0))
    return passed, failed, skipped
