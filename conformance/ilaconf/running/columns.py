"""The matrix in one boot: every case against every column, loading each
implementation in turn; a guest that dies is replaced for the next column."""

from collections.abc import Callable

from ..impls import Impl
from ..oracle.golden import golden_column
from ..reports.report import Reporter, Result
from .guest import Guest, GuestError
from .session import Paths, Session, boot

# Written to /dev/kmsg as each column starts: the serial log's sections.
COLUMN_MARK = "ilaconf-column:"


def run_columns(columns: list[Impl], cases: list, paths: Paths, reporter: Reporter, accel: str,
                bless: bool, after: Callable[["Session", Impl], None] | None = None) -> None:
    """Every case against every column, in one boot, loading each implementation in turn.

    A module that does not load fails its column's cases with the kernel's
    log; a guest that dies fails the case that was running and the rest of
    that column, and the next column boots a fresh guest.
    """
    guest: Guest | None = None
    session: Session | None = None
    boots = 0
    try:
        for impl in columns:
            done, started = 0, False
            try:
                if guest is None:
                    boots += 1
                    guest, session = boot(paths, accel, str(boots))
                why = session.load(impl)
                if why:
                    head, *kernel = why.splitlines()
                    for i, case in enumerate(cases):
                        reporter.add(Result(case.id, impl.name, "fail",
                                            f"not run: {impl.module_path} {head}",
                                            case.requirements, kernel if i == 0 else []))
                    continue
                started = True
                # marks the serial log, so that a detector's report is the column's
                session.guest.run("write", ["/dev/kmsg", f"{COLUMN_MARK}{impl.name}"])
                for case in cases:
                    reporter.add(session.run_case(case, bless and impl.name == golden_column(case)))
                    done += 1
                if after:
                    after(session, impl)
            except GuestError as e:
                detail = str(e).splitlines()
                where = cases[done].id if started and done < len(cases) else "boot and set-up"
                for i, case in enumerate(cases[done:]):
                    reporter.add(Result(case.id, impl.name, "fail",
                                        f"guest failed during {where}: {detail[0]}" if i == 0
                                        else f"not run: the guest died during {where}",
                                        case.requirements, detail[1:] if i == 0 else []))
                guest.close() if guest else None
                guest = session = None
    finally:
        if guest:
            guest.close()
