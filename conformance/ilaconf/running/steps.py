"""Running a control-plane case: each step's command in the guest, its exit
status and output checked against the step (catalog/control.py loads them)."""

import json
import re
import time

from ..catalog.control import ControlCase, Step, deep, fill, wrapped
from . import responders


def json_subset(want: object, got: object) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and json_subset(v, got[k])
                                             for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and all(any(json_subset(w, g) for g in got) for w in want)
    return want == got


def check(step: Step, rc: int, out: list[str]) -> list[str]:
    """What differs from the step's expectations; empty when it holds."""
    bad = []
    if rc != step.rc:
        bad.append(f"status: expected {step.rc}, observed {rc}")
    if step.stdout is not None and out != step.stdout:
        bad.append("output differs (expected | observed):")
        for i in range(max(len(out), len(step.stdout))):
            e = step.stdout[i] if i < len(step.stdout) else "(none)"
            o = out[i] if i < len(out) else "(none)"
            bad += [f"  {e!r}", f"  {o!r}{'' if e == o else '  <>'}"]
    bad += [f"missing line: {c}" for c in step.contains if c not in out]
    bad += [f"no line matches: {m}" for m in step.match
            if not any(re.search(m, line) for line in out)]
    bad += [f"unexpected line: {line}" for a in step.absent for line in out if re.search(a, line)]
    if step.json is not None:
        try:
            got = json.loads("\n".join(out))
        except json.JSONDecodeError as e:
            bad.append(f"output is not JSON: {e}")
        else:
            bad += [f"no JSON element holds {w}" for w in step.json if not json_subset([w], got)]
    return bad


def for_impl(line: str, names: dict[str, str]) -> str:
    for k, v in names.items():
        line = line.replace("{" + k + "}", v)
    return line


def resolved(step: Step, names: dict[str, str]) -> Step:
    """The step with the implementation's names in its command and expectations."""
    fields = {k: deep(v, lambda t: for_impl(t, names))
              for k, v in vars(step).items() if k != "deviation"}
    return Step(**fields, deviation={c: resolved(a, names) for c, a in step.deviation.items()})


def run(session, case: ControlCase) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics): the first step that differs fails the case.

    A step that differs may match its declared deviation for the column
    instead; the case is then xfail, and a declared deviation that no step
    needed is a failure (it is stale). The cleanup runs after a pass or a
    failure; a guest that died (GuestError) propagates at once, since there
    is nothing left to clean.
    """
    names = session.impl_placeholders()
    session.guest.run("dmesg", [])  # start the case with an empty kernel log
    verdict = run_steps(session, case, names)
    for line in case.cleanup:
        session.guest.run(*wrapped(for_impl(line, names)))
    return verdict


def run_one(session, step: Step, verb: str, args: list[str]):
    """The step's command, with the host's responder (respond) serving the
    guest's frames while it runs; the responder's account joins the output."""
    if not step.respond:
        return session.guest.run(verb, args, timeout=step.timeout)
    host = responders.make(step.respond, fill)
    with session.guest.serving_frames(host.answer):
        reply = session.guest.run(verb, args, timeout=step.timeout)
    reply.out += host.summary()
    return reply


def run_steps(session, case: ControlCase, names: dict[str, str]) -> tuple[str, str, list[str]]:
    col = session.impl.name
    notes: list[str] = []
    deviated = []
    for n, step in enumerate((resolved(s, names) for s in case.steps), 1):
        # the column's options on ILA routes (a no-op in default configurations),
        # also where a tool runs the ip commands (ila-churn)
        verb, args = wrapped(session.impl.route(step.run) if "encap ila" in step.run
                             else step.run)
        alt = step.deviation.get(col)
        deadline = time.monotonic() + step.retry
        while True:
            reply = run_one(session, step, verb, args)
            bad = check(step, reply.rc, reply.out)
            alt_bad = check(alt, reply.rc, reply.out) if alt and bad else ["no deviation"]
            if not bad or not alt_bad or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if step.report:
            notes += [f"{step.run}: {o}" for o in reply.out]
        stop = case.stops.get(col)
        if bad and stop and stop[0] == n:
            stop_bad = check(resolved(stop[1], names), reply.rc, reply.out)
            if not stop_bad:
                return "xfail", case.deviations[col].label, [
                    f"stopped at step {n} as declared: {' | '.join(reply.out) or '(no output)'}",
                    *notes]
            return "fail", f"step {n}: {step.run}", [
                *bad, "nor does it stop as the declared deviation says:", *stop_bad,
                "output:", *reply.out, *notes]
        if bad and not alt_bad:
            deviated.append(n)
        elif bad:
            extra = ["declared deviation for this column:", *alt_bad] if alt else []
            return "fail", f"step {n}: {step.run}", [*bad, *extra, "output:", *reply.out, *notes]
    dev = case.deviations.get(col)
    if dev and not deviated and col in case.stops:
        return "fail", (f"the declared deviation ({dev.label}) was not observed: step "
                        f"{case.stops[col][0]} holds; {dev.stale_hint(col)}"), notes
    if dev and not deviated:
        return "fail", (f"the declared deviation ({dev.label}) was not observed: every step "
                        f"holds; {dev.stale_hint(col)}"), notes
    if dev:
        return "xfail", dev.label, [f"deviating steps: {deviated}", *notes]
    return "pass", "", notes
