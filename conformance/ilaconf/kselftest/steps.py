"""Control-plane cases in the kselftest bundle: each step's command and the
exact status and output it must give, as running/steps.py checks them, for
the C runner (kselftest/runner/steps.c).

A step's block, inside a column's:

    step ip -6 route add ... encap ila 2001:0:0:2 ... csum-mode adj-transport
    rc 0                  exit status (for insmod and rmmod, the errno)
    stdout 2              the whole output, exactly: the next 2 "line" lines
    line ...
    contains TEXT         a line that must appear
    match ERE             POSIX extended regex that some line must match
    absent ERE            no line may match
    json TEXT             the output is a JSON array; each element of TEXT a subset of one
    retry 10              seconds to repeat until it holds
    timeout 60            seconds the command may take
    respond ptb 1280      the far side's part (the runner has none: the case is a skip)
    alt ...               the column's declared deviation of this step (same keys)
    stop ...              the column stops here, the step giving this instead

and after the steps, "cleanup LINE" for each cleanup command and
"deviation LABEL" when the column declares one. {module}, {module_name},
{other_module} and {other_module_name} stay as placeholders: the runner
knows the machine's modules, the host does not.
"""

import json
import re

from ..catalog.control import ControlCase, Step
from ..impls import Impl
from ..running import applies

# Python's regex classes that POSIX ERE (regcomp) spells otherwise.
ERE_CLASSES = {r"\d": "[0-9]", r"\s": "[[:space:]]", r"\S": "[^[:space:]]", r"\w": "[[:alnum:]_]"}


class StepError(ValueError):
    pass


def ere(python_regex: str) -> str:
    """A Python regex of a case file as POSIX ERE; refuses what has no equal."""
    out = python_regex
    for py, posix in ERE_CLASSES.items():
        out = out.replace(py, posix)
    if re.search(r"\\[AbBZdDsSwW]|\(\?|\*\?|\+\?", out):
        raise StepError(f"regex {python_regex!r} has no POSIX ERE form")
    return out


def head(case: ControlCase) -> list[str]:
    return [f"case {case.id}", f"verifies {' '.join(case.verifies.split())}",
            f"requirements {' '.join(case.requirements)}", "path control"]


def expectations(step: Step) -> list[str]:
    out = [f"rc {step.rc}"]
    if step.stdout is not None:
        out.append(f"stdout {len(step.stdout)}")
        out += [f"line {s}" for s in step.stdout]
    out += [f"contains {c}" for c in step.contains]
    out += [f"match {ere(m)}" for m in step.match]
    out += [f"absent {ere(a)}" for a in step.absent]
    if step.json is not None:
        out.append(f"json {json.dumps(step.json, separators=(',', ':'))}")
    return out


def block(case: ControlCase, impl: Impl) -> list[str]:
    why = applies.skip_reason(impl, case)
    if why:
        return [f"skip {' '.join(why.split())}"]
    out = []
    for n, step in enumerate(case.steps, 1):
        run = impl.route(step.run) if "encap ila" in step.run else step.run
        out.append(f"step {run}")
        out += expectations(step)
        if step.retry:
            out.append(f"retry {step.retry:g}")
        out.append(f"timeout {step.timeout:g}")
        if step.respond:
            out.append(f"respond {step.respond}")
        alt = step.deviation.get(impl.name)
        if alt:
            out += [f"alt {line}" for line in expectations(alt)]
        stop = case.stops.get(impl.name)
        if stop and stop[0] == n:
            out += [f"stop {line}" for line in expectations(stop[1])]
    out += [f"cleanup {line}" for line in case.cleanup]
    dev = case.deviations.get(impl.name)
    if dev:
        out.append(f"deviation {' '.join(dev.label.split())}")
    return out
