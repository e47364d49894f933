"""Control-plane cases: a list of commands run in the guest, each with the
exact status and output it must give (conformance/cases/control/*.toml).

    [[step]]
    run = "ila-nl add 3333::1/128 dev {dev}"   # ip, ila-nl, insmod, rmmod, cat, dmesg
    rc = 1                                      # exit status (errno for insmod/rmmod)
    stdout = ["nlerr EINVAL (-22)", "extack ila_ref: ..."]  # the whole output, exactly
    contains = ["..."]   # lines that must appear, exactly
    match = ["regex"]    # each must match some line
    absent = ["regex"]   # none may match any line
    json = [{dst = "..."}]  # stdout is a JSON list; each table a subset of one element
    retry = 5            # seconds to repeat until it holds (asynchronous kernel work)
    report = true        # the output is a figure: it goes into the report

cleanup = [...] runs after the steps whatever happened, its status ignored.
{module}, {module_name}, {other_module} and {other_module_name} name the
implementation under test and the one that competes with it for the ILA
encap type; the topology's placeholders ({host}, {dev}, ...) work too.
"""

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import topology

BINARIES = {"ip": topology.IP, "ila-nl": "/bin/ila-nl", "ila-inject": "/bin/ila-inject"}
AGENT_VERBS = {"insmod", "rmmod", "cat", "write", "dmesg"}
STEP_KEYS = {"run", "rc", "stdout", "contains", "match", "absent", "json", "retry", "report"}
IMPL_PLACEHOLDERS = ("module", "module_name", "other_module", "other_module_name")


class ControlError(ValueError):
    pass


@dataclass
class Step:
    run: str
    rc: int = 0
    stdout: list[str] | None = None
    contains: list[str] = field(default_factory=list)
    match: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    json: list[dict] | None = None
    retry: float = 0
    report: bool = False


@dataclass
class ControlCase:
    id: str
    file: Path
    verifies: str
    requirements: list[str]
    steps: list[Step]
    cleanup: list[str]

    @property
    def protocol(self) -> str:
        return self.id.split("/")[0]


def fill(text: str) -> str:
    keep = {k: "{" + k + "}" for k in IMPL_PLACEHOLDERS}
    try:
        return text.format(**topology.PLACEHOLDERS, **keep)
    except (KeyError, IndexError) as e:
        raise ControlError(f"unknown placeholder {e} (known: "
                           f"{', '.join([*topology.PLACEHOLDERS, *IMPL_PLACEHOLDERS])})")


def fill_json(v: object) -> object:
    if isinstance(v, str):
        return fill(v)
    if isinstance(v, list):
        return [fill_json(x) for x in v]
    if isinstance(v, dict):
        return {k: fill_json(x) for k, x in v.items()}
    return v


def command(line: str) -> tuple[str, list[str]]:
    """A step's line as an agent request: (verb, args)."""
    words = line.split()
    if not words:
        raise ControlError("empty command")
    if words[0] in AGENT_VERBS:
        return words[0], words[1:]
    if words[0] in BINARIES:
        return "exec", [BINARIES[words[0]], *words[1:]]
    raise ControlError(f"'{words[0]}' is not a known command "
                       f"(known: {', '.join([*BINARIES, *AGENT_VERBS])})")


def wrapped(line: str) -> tuple[str, list[str]]:
    """ila-nl as-nobody, in-userns and watch take a command: give it its guest path."""
    verb, args = command(line)
    at = {"as-nobody": 2, "in-userns": 2, "watch": 3}.get(args[1] if len(args) > 1 else "")
    if verb == "exec" and args[0] == BINARIES["ila-nl"] and at and len(args) > at:
        args = [*args[:at], BINARIES.get(args[at], args[at]), *args[at + 1:]]
    return verb, args


def load(file: Path, cid: str, data: dict) -> ControlCase:
    known = {"verifies", "requirements", "step", "cleanup"}
    extra = set(data) - known
    if extra:
        raise ControlError(f"{file}: unknown keys {sorted(extra)} (known: {sorted(known)})")
    for key, typ in (("verifies", str), ("requirements", list), ("step", list)):
        if not isinstance(data.get(key), typ) or not data[key]:
            raise ControlError(f"{file}: '{key}' is missing or empty")
    steps = []
    for n, raw in enumerate(data["step"], 1):
        bad = set(raw) - STEP_KEYS
        if bad or "run" not in raw:
            raise ControlError(f"{file}: step {n}: needs 'run'; unknown keys {sorted(bad)} "
                               f"(known: {sorted(STEP_KEYS)})")
        for rx in (*raw.get("match", []), *raw.get("absent", [])):
            try:
                re.compile(fill(rx))
            except re.error as e:
                raise ControlError(f"{file}: step {n}: bad regex {rx!r}: {e}")
        try:
            step = Step(run=fill(raw["run"]), rc=int(raw.get("rc", 0)),
                        stdout=[fill(s) for s in raw["stdout"]] if "stdout" in raw else None,
                        contains=[fill(s) for s in raw.get("contains", [])],
                        match=[fill(s) for s in raw.get("match", [])],
                        absent=[fill(s) for s in raw.get("absent", [])],
                        json=fill_json(raw["json"]) if "json" in raw else None, retry=float(raw.get("retry", 0)),
                        report=bool(raw.get("report", False)))
            wrapped(step.run)
        except ControlError as e:
            raise ControlError(f"{file}: step {n}: {e}")
        steps.append(step)
    cleanup = [fill(c) for c in data.get("cleanup", [])]
    for c in cleanup:
        wrapped(c)
    return ControlCase(cid, file, data["verifies"], [str(r) for r in data["requirements"]],
                       steps, cleanup)


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
    def sub(v: object) -> object:
        if isinstance(v, str):
            return for_impl(v, names)
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v
    return Step(**{k: sub(v) for k, v in vars(step).items()})


def run(session, case: ControlCase) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics): the first step that differs fails the case.

    The cleanup runs after a pass or a failure; a guest that died (GuestError)
    propagates at once, since there is nothing left to clean.
    """
    names = session.impl_placeholders()
    session.guest.run("dmesg", [])  # start the case with an empty kernel log
    verdict = run_steps(session, case, names)
    for line in case.cleanup:
        session.guest.run(*wrapped(for_impl(line, names)))
    return verdict


def run_steps(session, case: ControlCase, names: dict[str, str]) -> tuple[str, str, list[str]]:
    notes: list[str] = []
    for n, step in enumerate((resolved(s, names) for s in case.steps), 1):
        verb, args = wrapped(step.run)
        deadline = time.monotonic() + step.retry
        while True:
            reply = session.guest.run(verb, args)
            bad = check(step, reply.rc, reply.out)
            if not bad or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        if step.report:
            notes += [f"{step.run}: {o}" for o in reply.out]
        if bad:
            return "fail", f"step {n}: {step.run}", [*bad, "output:", *reply.out, *notes]
    return "pass", "", notes
