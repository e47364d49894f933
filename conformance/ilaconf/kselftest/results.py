"""The TAP that make kselftest-run's guest printed, read back: the results
of each column's run of ila_conformance, and of each kernel tree's runner
(run_kselftest.sh, whose programs' output it prefixes with "# ").

Standard library only (make kselftest-run needs no scapy on the host).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

SECTION = re.compile(r"^ila-kselftest-run: (column|runner) (\S+)$")
EXIT = re.compile(r"^ila-kselftest-run: exit (\d+)$")
RESULT = re.compile(r"^(not )?ok (\d+) (\S+)(?: # (XFAIL|SKIP|TIMEOUT)\s*(.*))?$")
PROGRAM = re.compile(r"^(not )?ok (\d+) selftests: (\S+): (\S+)(?: # (.*))?$")


@dataclass
class Verdict:
    name: str
    status: str  # pass, fail, xfail, skip
    detail: str = ""
    diagnostics: list[str] = field(default_factory=list)


@dataclass
class Section:
    kind: str  # column or runner
    label: str  # the column's name, or the runner's kernel tree
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    programs: list[tuple[str, str]] = field(default_factory=list)  # runner: (program, "ok ...")
    exits: list[int] = field(default_factory=list)  # a column runs in parts, one exit each
    head: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def status_of(negated: bool, directive: str | None) -> str:
    if directive == "XFAIL":
        return "xfail" if not negated else "fail"
    if directive == "SKIP":
        return "skip"
    return "fail" if negated or directive == "TIMEOUT" else "pass"


def parse(log: Path) -> list[Section]:
    sections: list[Section] = []
    cur: Section | None = None
    diag: list[str] = []
    for raw in log.read_text(errors="replace").splitlines():
        line = raw.rstrip("\r")
        m = SECTION.match(line)
        if m:  # a column's parts (packet cases, then control cases) join
            cur = next((s for s in sections if (s.kind, s.label) == m.groups()), None)
            if cur is None:
                cur = Section(m.group(1), m.group(2))
                sections.append(cur)
            diag = []
            continue
        if cur is None:
            continue
        cur.lines.append(line)
        m = EXIT.match(line)
        if m:
            cur.exits.append(int(m.group(1)))
            continue
        inner = line
        if cur.kind == "runner":
            p = PROGRAM.match(line)
            if p:
                cur.programs.append((p.group(4), line))
                continue
            if not line.startswith("# "):
                continue
            inner = line[2:]
        r = RESULT.match(inner)
        if r:
            cur.verdicts[r.group(3)] = Verdict(r.group(3), status_of(bool(r.group(1)), r.group(4)),
                                               r.group(5) or "", diag)
            diag = []
        elif inner.startswith("#"):
            diag.append(inner[1:].strip())
    return sections


def index(bundle: Path) -> dict[str, tuple[str, str]]:
    """TAP name -> (case id, column), from the bundle make kselftest wrote."""
    entries = json.loads((bundle / "index.json").read_text())
    return {e["name"]: (e["case"], e["impl"]) for e in entries}
