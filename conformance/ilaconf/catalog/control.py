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
    timeout = 600        # seconds the command may take (default 60)
    report = true        # the output is a figure: it goes into the report

cleanup = [...] runs after the steps whatever happened, its status ignored.
{module}, {module_name}, {other_module} and {other_module_name} name the
implementation under test and the one that competes with it for the ILA
encap type, {dev_ifindex} and {dev2_ifindex} the NICs' interface indexes;
the topology's placeholders ({host}, {dev}, ...) work too.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import topology
from .deviations import Deviation, DeviationError, load_deviations

BINARIES = {"ip": topology.IP, "ila-nl": "/bin/ila-nl", "ila-inject": "/bin/ila-inject",
            "ila-churn": "/bin/ila-churn",
            "ila-map": "/bin/ila-map", "ila-sock": "/bin/ila-sock"}
AGENT_VERBS = {"insmod", "rmmod", "cat", "mode", "write", "dmesg"}
STEP_KEYS = {"run", "rc", "stdout", "contains", "match", "absent", "json", "retry", "report",
             "timeout", "deviation", "respond"}
# what the host answers while a step runs (running/responders.py)
RESPOND = re.compile(r"^(ptb \d+|unreachable|tcp \d+ \S+)$")
# What only the running system knows: the implementation under test and its
# rival for the ILA encap type, and the NICs' interface indexes.
RUNTIME_PLACEHOLDERS = ("module", "module_name", "other_module", "other_module_name",
                        "dev_ifindex", "dev2_ifindex")


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
    timeout: float = 60  # seconds the command may take (the debug kernel is slow)
    respond: str = ""  # the host's part while the command runs (running/responders.py)
    # per column: the expectations that hold instead (a declared deviation)
    deviation: dict[str, "Step"] = field(default_factory=dict)


@dataclass
class ControlCase:
    id: str
    file: Path
    verifies: str
    requirements: list[str]
    steps: list[Step]
    cleanup: list[str]
    deviations: dict[str, Deviation] = field(default_factory=dict)
    # per column: (step number, what it gives instead); the case ends there
    stops: dict[str, tuple[int, Step]] = field(default_factory=dict)
    interface: str = "route"  # or mapping: the ip ila mapping table (runs in its columns)
    every_column: bool = False  # columns = "all": not only the default configurations

    @property
    def protocol(self) -> str:
        return self.id.split("/")[0]


def fill(text: str) -> str:
    keep = {k: "{" + k + "}" for k in RUNTIME_PLACEHOLDERS}
    try:
        return text.format(**topology.PLACEHOLDERS, **keep)
    except (KeyError, IndexError) as e:
        raise ControlError(f"unknown placeholder {e} (known: "
                           f"{', '.join([*topology.PLACEHOLDERS, *RUNTIME_PLACEHOLDERS])})")


def deep(v: object, fn: "Callable[[str], str]") -> object:
    """fn applied to every string in nested lists and tables."""
    if isinstance(v, str):
        return fn(v)
    if isinstance(v, list):
        return [deep(x, fn) for x in v]
    if isinstance(v, dict):
        return {k: deep(x, fn) for k, x in v.items()}
    return v


def fill_json(v: object) -> object:
    return deep(v, fill)


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


def load_step(file: Path, n: int, raw: dict, run: str | None = None) -> Step:
    """One [[step]], or (with run given) a [step.deviation.COLUMN] table of it."""
    allowed = STEP_KEYS - {"run", "deviation"} if run else STEP_KEYS
    bad = set(raw) - allowed
    if bad or (run is None and "run" not in raw):
        raise ControlError(f"{file}: step {n}: needs 'run'; unknown keys {sorted(bad)} "
                           f"(known: {sorted(STEP_KEYS)})")
    for rx in (*raw.get("match", []), *raw.get("absent", [])):
        try:
            re.compile(fill(rx))
        except re.error as e:
            raise ControlError(f"{file}: step {n}: bad regex {rx!r}: {e}")
    try:
        step = Step(run=run or fill(raw["run"]), rc=int(raw.get("rc", 0)),
                    stdout=[fill(s) for s in raw["stdout"]] if "stdout" in raw else None,
                    contains=[fill(s) for s in raw.get("contains", [])],
                    match=[fill(s) for s in raw.get("match", [])],
                    absent=[fill(s) for s in raw.get("absent", [])],
                    json=fill_json(raw["json"]) if "json" in raw else None,
                    retry=float(raw.get("retry", 0)), report=bool(raw.get("report", False)),
                    timeout=float(raw.get("timeout", 60)), respond=str(raw.get("respond", "")))
        if step.respond and not RESPOND.match(step.respond):
            raise ControlError(f"respond = {step.respond!r}: one of 'ptb MTU', 'unreachable', "
                               "'tcp MTU SIR'")
        wrapped(step.run)
    except ControlError as e:
        raise ControlError(f"{file}: step {n}: {e}")
    if run is None:
        for col, alt in raw.get("deviation", {}).items():
            step.deviation[col] = load_step(file, n, alt, run=step.run)
            step.deviation[col].retry = step.retry
    return step


def load(file: Path, cid: str, data: dict) -> ControlCase:
    known = {"verifies", "requirements", "step", "cleanup", "deviation", "interface", "columns"}
    extra = set(data) - known
    if extra:
        raise ControlError(f"{file}: unknown keys {sorted(extra)} (known: {sorted(known)})")
    for key, typ in (("verifies", str), ("requirements", list), ("step", list)):
        if not isinstance(data.get(key), typ) or not data[key]:
            raise ControlError(f"{file}: '{key}' is missing or empty")
    steps = [load_step(file, n, raw) for n, raw in enumerate(data["step"], 1)]
    raw_devs = data.get("deviation", {})
    if not isinstance(raw_devs, dict):
        raise ControlError(f"{file}: 'deviation' must be a table of [deviation.COLUMN] tables")
    devs, stops = {}, {}
    for col, raw in raw_devs.items():
        dev, stop = load_deviation(file, col, raw, steps)
        devs[col] = dev
        if stop:
            stops[col] = stop
    for n, step in enumerate(steps, 1):
        for col in set(step.deviation) - set(devs):
            raise ControlError(f"{file}: step {n} deviates for '{col}', but the case declares "
                               f"no [deviation.{col}] with its requirement and reason")
    for col in set(devs) - {c for s in steps for c in s.deviation} - set(stops):
        raise ControlError(f"{file}: [deviation.{col}] is declared but says nothing of what "
                           f"{col} does instead (step = N and its expectations, or "
                           f"[step.deviation.{col}] tables)")
    if data.get("columns", "default") not in ("default", "all"):
        raise ControlError(f"{file}: columns is 'default' (the implementation's default "
                           "configuration only) or 'all' (every column, ILA routes in its options)")
    interface = data.get("interface", "route")
    if interface not in ("route", "mapping"):
        raise ControlError(f"{file}: interface '{interface}' is not route (encap ila routes) or "
                           "mapping (the ip ila mapping table)")
    cleanup = [fill(c) for c in data.get("cleanup", [])]
    for c in cleanup:
        wrapped(c)
    return ControlCase(cid, file, data["verifies"], [str(r) for r in data["requirements"]],
                       steps, cleanup, devs, stops, interface, data.get("columns") == "all")


STOP_KEYS = {"step", "rc", "stdout", "contains", "match", "absent", "json"}


def load_deviation(file: Path, col: str, raw: object,
                   steps: list[Step]) -> tuple[Deviation, tuple[int, Step] | None]:
    """[deviation.COLUMN]: requirement and reason, and optionally the step where
    the column stops, with what that step gives instead (step = N, rc, stdout...)."""
    if not isinstance(raw, dict):
        raise ControlError(f"{file}: [deviation.{col}] must be a table")
    stop_raw = {k: v for k, v in raw.items() if k in STOP_KEYS}
    try:
        dev = load_deviations(file, {col: {k: v for k, v in raw.items() if k not in STOP_KEYS}},
                              packet=False, fill=fill)[col]
    except DeviationError as e:
        raise ControlError(str(e))
    if not stop_raw:
        return dev, None
    n = stop_raw.pop("step", None)
    if not isinstance(n, int) or not 1 <= n <= len(steps):
        raise ControlError(f"{file}: [deviation.{col}]: 'step' must be a step number "
                           f"(1..{len(steps)}) when rc or output are given")
    return dev, (n, load_step(file, n, stop_raw, run=steps[n - 1].run))
