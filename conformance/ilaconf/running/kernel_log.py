"""The kernel's own reports in its log: a warning, a bug, a detector's finding.

A packet case starts with the log empty and reads it after the packet, so
that a WARN_ON a packet can reach (on a router, a remote sender's packet)
fails the case that sent it, with the log's lines, whatever the frames say.
"""

import re

DETECTOR_REPORT = re.compile(
    r"BUG:|WARNING:|KASAN:|KFENCE:|suspected memory leak|possible recursive locking|possible circular locking"
    r"|inconsistent lock state|sleeping function called from invalid context|Kernel panic|Oops")

TAIL = 30  # lines of the log a failure shows from its first report on


def reports(log: list[str]) -> list[str]:
    """The log from its first report on, or nothing when it holds none."""
    first = next((i for i, line in enumerate(log) if DETECTOR_REPORT.search(line)), None)
    return [] if first is None else log[first:first + TAIL]


def judge(verdict: tuple[str, str, list[str]], log: list[str], declared: str | None
          ) -> tuple[str, str, list[str]]:
    """A packet case's verdict with its kernel log: a report fails it unless
    its deviation declares the report (kernel_log, a regex) and it is there."""
    status, detail, diag = verdict
    seen = reports(log)
    if declared:
        if any(re.search(declared, line) for line in log):
            return verdict
        return "fail", (f"the declared deviation's kernel report ({declared}) was not in the "
                        f"kernel log: {detail or status}"), [*diag, *(seen or log[-TAIL:])]
    if seen:
        return "fail", (f"the kernel reported while the case ran: {seen[0].strip()} "
                        "[no packet may make the kernel warn: read the trace below]"), [*diag, *seen]
    return verdict
