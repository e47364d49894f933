"""The matrix: every case against every column, loading each implementation
in turn; a guest that dies is replaced, and its column goes on.

TCG runs a guest's vCPU on one host thread, and the guest, not the host's
oracle, is where a case's time goes. So with jobs > 1 the columns are
shared out among that many guests, side by side, each running its share in
the order given; the results are reported in column order all the same, so
the KTAP, JSON and JUnit files do not depend on the number of guests.
"""

import re
import threading
from collections.abc import Callable

from .. import side_by_side
from ..impls import Impl
from ..oracle.golden import golden_column
from ..reports.report import Reporter, Result
from . import applies
from .guest import Guest, GuestError
from .session import Paths, Session, boot

# Written to /dev/kmsg as each column starts: the serial log's sections.
COLUMN_MARK = "ilaconf-column:"


class InColumnOrder:
    """Hands results to the reporter column after column, whichever guest
    finishes first: a later column's results wait until the earlier ones
    are complete."""

    def __init__(self, columns: list[Impl], reporter: Reporter) -> None:
        self.reporter = reporter
        self.order = [impl.name for impl in columns]
        self.pending: dict[str, list[Result]] = {name: [] for name in self.order}
        self.finished: set[str] = set()
        self.next = 0
        self.lock = threading.Lock()

    def add(self, column: str, result: Result) -> None:
        with self.lock:
            self.pending[column].append(result)
            self._flush()

    def finish(self, column: str) -> None:
        with self.lock:
            self.finished.add(column)
            self._flush()

    def _flush(self) -> None:
        while self.next < len(self.order):
            name = self.order[self.next]
            for result in self.pending[name]:
                self.reporter.add(result)
            self.pending[name] = []
            if name not in self.finished:
                return
            self.next += 1


def shares(columns: list[Impl], cases: list, jobs: int) -> list[list[Impl]]:
    """The columns split into at most jobs shares of about equal work (the
    cases each column runs, not skips), each share in the given order."""
    work = {impl.name: sum(not applies.skip_reason(impl, c) for c in cases) for impl in columns}
    return side_by_side.balance(columns, jobs, lambda impl: work[impl.name])


def run_columns(columns: list[Impl], cases: list, paths: Paths, reporter: Reporter, accel: str,
                bless: bool, after: Callable[["Session", Impl], list[Result]] | None = None,
                jobs: int = 1) -> None:
    """Every case against every column, loading each implementation in turn,
    in jobs guests side by side.

    A module that does not load fails its column's cases with the kernel's
    log; a guest that dies fails the case that was running, and a fresh
    guest goes on with the rest of the column (run_share).
    """
    ordered = InColumnOrder(columns, reporter)
    boots = [0]
    lock = threading.Lock()

    def next_tag() -> str:
        with lock:
            boots[0] += 1
            return str(boots[0])

    groups = shares(columns, cases, jobs)
    if len(groups) == 1:
        run_share(groups[0], cases, paths, ordered, accel, bless, after, next_tag)
        return
    side_by_side.run_all([
        lambda g=g: run_share(g, cases, paths, ordered, accel, bless, after, next_tag)
        for g in groups])


# A column whose guest dies this often where no deviation declares it runs no
# further: the rest is "not run".
MAX_DEATHS = 3


def died(case, impl: Impl, where: str, detail: list[str]) -> Result:
    """The result of the case a guest died during: a failure, unless the
    case's deviation for the column declares the kernel report that killed it
    (kernel_log, found in the serial log's tail; panic_on_warn makes a WARN
    fatal)."""
    dev = getattr(case, "deviations", {}).get(impl.name)
    declared = getattr(dev, "kernel_log", None)
    if declared and any(re.search(declared, line) for line in detail):
        return Result(case.id, impl.name, "xfail", dev.label,
                      case.requirements, [f"the guest died as declared ({declared})", *detail[1:]])
    return Result(case.id, impl.name, "fail", f"guest failed during {where}: {detail[0]}",
                  case.requirements, detail[1:])


def run_share(columns: list[Impl], cases: list, paths: Paths, ordered: InColumnOrder,
              accel: str, bless: bool, after: Callable[["Session", Impl], list[Result]] | None,
              next_tag: Callable[[], str]) -> None:
    """One guest's share of the columns, one after the other. A guest that
    dies fails the case it was running; the column goes on from the next
    case in a fresh guest (up to MAX_DEATHS times)."""
    guest: Guest | None = None
    session: Session | None = None
    try:
        for impl in columns:
            pending, deaths = list(cases), 0
            try:
                while True:
                    done, started = 0, False
                    try:
                        if guest is None:
                            guest, session = boot(paths, accel, next_tag())
                        why = session.load(impl)
                        if why:
                            head, *kernel = why.splitlines()
                            for i, case in enumerate(pending):
                                ordered.add(impl.name, Result(
                                    case.id, impl.name, "fail", f"not run: {impl.module_path} {head}",
                                    case.requirements, kernel if i == 0 else []))
                            break
                        started = True
                        # marks the serial log, so that a detector's report is the column's
                        session.guest.run("write", ["/dev/kmsg", f"{COLUMN_MARK}{impl.name}"])
                        for case in pending:
                            ordered.add(impl.name, session.run_case(
                                case, bless and impl.name == golden_column(case)))
                            done += 1
                        for result in after(session, impl) if after else []:
                            ordered.add(impl.name, result)
                        break
                    except GuestError as e:
                        detail = str(e).splitlines()
                        guest.close() if guest else None
                        guest = session = None
                        result = died(pending[done], impl, pending[done].id, detail) \
                            if started and done < len(pending) else None
                        deaths += result is None or result.status != "xfail"
                        if result is None or deaths >= MAX_DEATHS:
                            where = pending[done].id if started and done < len(pending) \
                                else "boot and set-up"
                            for i, case in enumerate(pending[done:]):
                                ordered.add(impl.name, Result(
                                    case.id, impl.name, "fail",
                                    f"guest failed during {where}: {detail[0]}" if i == 0
                                    else f"not run: the guest died during {where}"
                                    + (f" ({deaths} deaths in this column)" if deaths > 1 else ""),
                                    case.requirements, detail[1:] if i == 0 else []))
                            break
                        ordered.add(impl.name, result)
                        pending = pending[done + 1:]
                        if not pending:
                            break
            finally:
                ordered.finish(impl.name)
    finally:
        if guest:
            guest.close()
