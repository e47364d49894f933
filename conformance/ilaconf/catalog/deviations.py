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
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import properties
from .. import patches
from ..impls import IMPLS

# error: the node itself answers the sender with an ICMPv6 error about the
# packet (expect.error), as a router does for a hop limit run out or a link
# too small, quoting the packet as its sender sent it
OUTCOMES = ("translated", "unchanged", "dropped", "error")
# expect.error (and a deviation's error): the node's own ICMPv6 error
ERROR = re.compile(r"^(time-exceeded|packet-too-big \d+|unreachable \d+)$")
# What an ICMPv6 error case's quote shows instead: the quote passed as it came
# (untouched), or the node's own error quotes the packet translated
# (or, a release before the CVE-2026-68127 fix, "csum-only": the destination
# as sent, the checksum translated: the locator went to a stale header)
QUOTES = ("untouched", "translated", "csum-only")


class DeviationError(ValueError):
    pass


# Columns a deviation may name: ours and the in-tree ones, and the externals
# of this run (registered by the command line).
COLUMNS = set(IMPLS)


def register_columns(names: list[str]) -> None:
    COLUMNS.update(names)


# adjusted: as the requirement says; untouched: only the destination is
# rewritten; reversed: adjusted by old minus new locator (a sign error);
# from-route: by the new locator minus the route prefix's upper 64 bits as
# written instead of the packet's; reversed-from-route: both errors;
# incremental: updated by RFC 1624 eqn. 3 even when the destination does not
# change, which turns a field of 0xffff into 0x0000 (oracle/expect.py,
# moved_locators).
# as-partial, reversed-as-partial (a tunnel's outer checksum): adjusted as if
# the field held a CHECKSUM_PARTIAL pseudo-header sum (oracle/tunnels.py).
# locator-only: a checksum-neutral mapping not done, the locator written and
# the identifier, like every checksum, left as sent; neutral-from-route,
# neutral-auto-from-route: the identifier made to absorb the difference from
# the route prefix's upper 64 bits instead of the packet's locator.
CSUMS = ("adjusted", "untouched", "reversed", "from-route", "reversed-from-route",
         "incremental", "as-partial", "reversed-as-partial", "locator-only",
         "neutral-from-route", "neutral-auto-from-route")


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
    clone: str | None = None  # cloned layouts: "modified", the shared data is written
    quote: str | None = None  # ICMPv6 errors: "untouched" (passes as received), "translated"
    error: str | None = None  # outcome error: the node's error instead ("unreachable 0")
    kernel_log: str | None = None  # a regex: the kernel's report (a WARN) the packet makes
    source: str = ""  # the deviations file entry it came from; empty: the case's own table

    @property
    def label(self) -> str:
        return f"{self.requirement}: {self.reason}"

    def stale_hint(self, column: str) -> str:
        """What to edit when the deviation is no longer observed."""
        if self.source:
            return (f"the entry {self.source} no longer holds for {column}: narrow its 'when' or "
                    "'columns', or give it 'fixed_by' or 'kernel' if a patch or a release fixed it")
        return f"remove [deviation.{column}] from the case file"


DEVIATION_KEYS = {"requirement", "reason", "outcome", "dst", "csum", "inject_error", "route_error",
                  "clone", "quote", "error", "kernel_log"}


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
        if packet and not ({"outcome", "route_error", "inject_error", "clone", "quote",
                            "kernel_log"} & set(d)):
            raise DeviationError(f"{file}: [deviation.{col}] must say what is observed instead "
                            "(outcome, route_error, inject_error, clone, quote or kernel_log)")
        if d.get("error") is not None and not ERROR.match(str(d["error"])):
            raise DeviationError(f"{file}: [deviation.{col}]: error is \"time-exceeded\", "
                                 "\"packet-too-big MTU\" or \"unreachable CODE\"")
        if d.get("quote") not in (None, *QUOTES):
            raise DeviationError(f"{file}: [deviation.{col}]: quote = \"untouched\" says an "
                                 "ICMPv6 error passes with the quote it came with, "
                                 "\"translated\" that the node's own error quotes the "
                                 "packet translated")
        if "clone" in d and (d["clone"] != "modified" or set(d) - {"requirement", "reason", "clone"}):
            raise DeviationError(f"{file}: [deviation.{col}]: clone = \"modified\" stands alone "
                                 "(with requirement and reason): it says a cloned skb's shared "
                                 "data is written, beside whatever the packet deviation says")
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
    cases: list[str] | None  # globs over case ids; None: any id
    when: list[dict[str, list[str | int]]] | None  # any of these tables of case properties
    table: dict  # the deviation's keys, as a case would write them
    fixed_by: tuple[str, ...] = ()  # kernel/patches/ files, any of which fixes it
    kernel: str | None = None  # a version constraint ("<6.1.183"): only such kernels
    used: int = 0

    @property
    def is_clone(self) -> bool:
        return "clone" in self.table

    def covers(self, case) -> bool:
        if self.cases is not None and not any(fnmatch.fnmatch(case.id, g) for g in self.cases):
            return False
        if self.when is None:
            return True
        if not hasattr(case, "packet"):  # control cases have no packet properties
            return False
        props = properties.of_case(case)
        return any(properties.matches(w, props) for w in self.when)

    def describe(self) -> str:
        parts = []
        if self.cases is not None:
            parts.append(f"cases {self.cases}")
        if self.when is not None:
            parts.append("when " + " or ".join(
                "{" + ", ".join(f"{k} = {v if len(v) > 1 else v[0]!r}" for k, v in w.items()) + "}"
                for w in self.when))
        return " and ".join(parts)


VERSION_RULE = re.compile(r"^(<=|>=|<|>|==)\s*(\d+(?:\.\d+)*)$")


def version_tuple(text: str) -> tuple[int, ...]:
    """6.1.176-1 (Debian), v6.12-rc3-5-gabc (git describe), 6.12.118: its numbers."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", text)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def kernel_holds(rule: str | None, version: str) -> bool:
    """Whether a kernel of this version is one an entry's 'kernel' rule names."""
    if rule is None:
        return True
    m = VERSION_RULE.match(rule)
    have, want = version_tuple(version), version_tuple(m.group(2)) if m else ()
    if not have or not m:
        return False
    return {"<": have < want, "<=": have <= want, ">": have > want, ">=": have >= want,
            "==": have == want}[m.group(1)]


def load_column_file(file: Path, default_column: str | None = None) -> list[ColumnEntry]:
    """A file of expected deviations (conformance/deviations/*.toml, or a user's EXPECT=):

        [[deviation]]
        columns = ["intree-luid"]      # optional in an EXPECT= file: its column
        when = { csum_at = "direct", path = ["output", "forward"] }   # case properties
                                       # (or a list of such tables, any of which may hold)
        cases = ["tcp/*", "udp/output-datagram"]                      # and/or case ids
        requirement = "..."            # with 'when', optional: a list of globs naming the
                                       # case's own requirement it breaks (properties.py)
        reason = "..."
        fixed_by = "0001-....patch"    # optional: a column holding this patch lacks it (a
                                       # list: a column holding any of them, for two bugs
                                       # that show together)
        kernel = "<6.1.183"            # optional: only kernels this old have it
        route_error = "..."            # and the other keys of a [deviation.COLUMN]

    'when' selects cases by what they are (properties.PROPERTIES), so a new
    case is covered with no edit; 'cases' names true one-offs and the control
    cases. The first entry that covers a case applies, unless the case
    declares its own [deviation.COLUMN]; an entry that covers no case is an
    error (stale).
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
        if globs is not None and (not isinstance(globs, list) or not globs
                                  or not all(isinstance(g, str) for g in globs)):
            raise DeviationError(f"{file}: deviation {n}: 'cases' must list case ids or globs")
        when = None
        if "when" in t:
            try:
                tables = t["when"] if isinstance(t["when"], list) else [t["when"]]
                when = [properties.check_when(f"{file}: deviation {n}", w) for w in tables]
                if not when:
                    raise properties.PropertyError(f"{file}: deviation {n}: 'when' lists no table")
            except properties.PropertyError as e:
                raise DeviationError(str(e))
        if globs is None and when is None:
            raise DeviationError(f"{file}: deviation {n}: say which cases it covers: 'when' "
                                 "(case properties) or 'cases' (ids or globs)")
        if when is None and "requirement" not in t:
            raise DeviationError(f"{file}: deviation {n}: a 'cases' entry needs its requirement")
        columns = t.get("columns", [default_column] if default_column else None)
        if not columns or not all(isinstance(c, str) for c in columns):
            raise DeviationError(f"{file}: deviation {n}: 'columns' must list matrix columns")
        fixed_by = t.get("fixed_by", [])
        fixed_by = [fixed_by] if isinstance(fixed_by, str) else fixed_by
        known = {q.name for q in patches.all_patches()}
        if not isinstance(fixed_by, list) or not all(isinstance(f, str) and f in known
                                                      for f in fixed_by):
            raise DeviationError(f"{file}: deviation {n}: fixed_by names patches of "
                                 f"kernel/patches/ (one of {', '.join(sorted(known))}), "
                                 f"not {fixed_by!r}")
        kernel = t.get("kernel")
        if kernel is not None and not (isinstance(kernel, str) and VERSION_RULE.match(kernel)):
            raise DeviationError(f"{file}: deviation {n}: kernel must be a version constraint "
                                 "such as \"<6.1.183\" (the kernels older than a fix)")
        out.append(ColumnEntry(file, columns, globs, when,
                               {k: v for k, v in t.items()
                                if k not in ("cases", "columns", "when", "fixed_by", "kernel")},
                               fixed_by=tuple(fixed_by), kernel=kernel))
    return out
