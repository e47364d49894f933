"""Expected deviations: what a column of the matrix is expected to do instead
of a case's expectation, with the requirement it breaks and why.

    [deviation.intree-defaults]
    requirement = "ILA-OUT-TCP-1"
    reason = "csum-mode defaults to no-action (net/ipv6/ila/ila_lwt.c: ila_build_state)"
    outcome = "translated"   # packet cases: what is observed instead
    dst = "2001:0:0:2:5555:0:2:0"
    csum = "untouched"

A control case declares requirement and reason here, and the alternative
expectations on the steps that differ ([step.deviation.COLUMN]).
"""

import fnmatch
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .impls import IMPLS

OUTCOMES = ("translated", "unchanged", "dropped")


class DeviationError(ValueError):
    pass


# Columns a deviation may name: ours and the in-tree ones, and the externals
# of this run (registered by the command line).
COLUMNS = set(IMPLS)


def register_columns(names: list[str]) -> None:
    COLUMNS.update(names)


# adjusted: as the requirement says; untouched: only the destination is
# rewritten; reversed: adjusted by old minus new locator (a sign error).
CSUMS = ("adjusted", "untouched", "reversed")


@dataclass(frozen=True)
class Deviation:
    """What one column is expected to do instead, and which requirement that breaks.

    Reported as xfail only when observed exactly; the case's own expectation
    holding instead is a failure too (the deviation is stale).
    """
    requirement: str
    reason: str
    outcome: str | None = None  # packet cases: the outcome observed instead
    dst: str | None = None
    csum: str = "adjusted"  # one of CSUMS
    inject_error: str | None = None
    route_error: str | None = None  # the route set-up fails with this output

    @property
    def label(self) -> str:
        return f"{self.requirement}: {self.reason}"


DEVIATION_KEYS = {"requirement", "reason", "outcome", "dst", "csum", "inject_error", "route_error"}


def load_deviations(file: Path, data: object, packet: bool,
                    fill: Callable[[str], str]) -> dict[str, Deviation]:
    """[deviation.COLUMN] tables; for control cases only requirement and reason."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise DeviationError(f"{file}: 'deviation' must be a table of [deviation.COLUMN] tables")
    out = {}
    for col, d in data.items():
        if col not in COLUMNS:
            raise DeviationError(f"{file}: deviation for unknown column '{col}' "
                                 f"(known: {', '.join(sorted(COLUMNS))})")
        if not isinstance(d, dict):
            raise DeviationError(f"{file}: [deviation.{col}] must be a table")
        allowed = DEVIATION_KEYS if packet else {"requirement", "reason"}
        bad = set(d) - allowed
        if bad or "requirement" not in d or "reason" not in d:
            raise DeviationError(f"{file}: [deviation.{col}] needs requirement and reason; "
                            f"unknown keys {sorted(bad)} (known: {sorted(allowed)})")
        if packet and not ({"outcome", "route_error", "inject_error"} & set(d)):
            raise DeviationError(f"{file}: [deviation.{col}] must say what is observed instead "
                            "(outcome, route_error or inject_error)")
        if d.get("outcome") not in (None, *OUTCOMES) or d.get("csum", "adjusted") not in CSUMS:
            raise DeviationError(f"{file}: [deviation.{col}]: outcome must be one of {OUTCOMES}, "
                            f"csum one of {CSUMS}")
        out[col] = Deviation(**{k: (fill(v) if isinstance(v, str) else v) for k, v in d.items()})
    return out


@dataclass
class ColumnEntry:
    """One [[deviation]] of a deviations file: the columns and cases it covers."""
    file: Path
    columns: list[str]
    cases: list[str]  # globs over case ids
    table: dict  # the deviation's keys, as a case would write them
    used: int = 0

    def covers(self, case_id: str) -> bool:
        return any(fnmatch.fnmatch(case_id, g) for g in self.cases)


def load_column_file(file: Path, default_column: str | None = None) -> list[ColumnEntry]:
    """A file of expected deviations (conformance/deviations/*.toml, or a user's EXPECT=):

        [[deviation]]
        columns = ["intree-luid"]      # optional in an EXPECT= file: its column
        cases = ["tcp/*", "udp/output-datagram"]
        requirement = "..."
        reason = "..."
        route_error = "..."            # and the other keys of a [deviation.COLUMN]

    The first entry that covers a case applies, unless the case declares its
    own [deviation.COLUMN]; an entry that covers no case is an error (stale).
    """
    try:
        data = tomllib.loads(file.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise DeviationError(f"{file}: cannot be read as TOML: {e}")
    if set(data) - {"deviation"} or not isinstance(data.get("deviation", []), list):
        raise DeviationError(f"{file}: holds only [[deviation]] tables")
    out = []
    for n, t in enumerate(data.get("deviation", []), 1):
        globs = t.get("cases")
        if not isinstance(globs, list) or not globs or not all(isinstance(g, str) for g in globs):
            raise DeviationError(f"{file}: deviation {n}: 'cases' must list case ids or globs")
        columns = t.get("columns", [default_column] if default_column else None)
        if not columns or not all(isinstance(c, str) for c in columns):
            raise DeviationError(f"{file}: deviation {n}: 'columns' must list matrix columns")
        out.append(ColumnEntry(file, columns, globs,
                               {k: v for k, v in t.items() if k not in ("cases", "columns")}))
    return out
