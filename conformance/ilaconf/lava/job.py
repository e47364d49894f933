"""A make lava job: its definition, rendered from lava/kselftest-job.yaml,
and its log read back into what the guest printed and how the job ended.
"""

import hashlib
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

import yaml

TEMPLATE = Path(__file__).resolve().parents[3] / "lava" / "kselftest-job.yaml"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# the firmware's screen resets, whose ESC bytes LAVA's log has dropped
ESCAPE = re.compile(r"^\x1b?c?(?:\x1b?\[[0-9;?]*[hlJm])+")
PANIC = re.compile(r"Kernel panic - not syncing|BUG: |Oops: |general protection fault")


@dataclass(frozen=True)
class Artifact:
    path: Path
    url: str
    sha256: str


def artifact(path: Path, base_url: str) -> Artifact:
    """A file as a job's image: file:// for the local lab, or BASE_URL/NAME."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    url = f"{base_url.rstrip('/')}/{path.name}" if base_url else path.resolve().as_uri()
    return Artifact(path, url, digest)


def definition(name: str, kernel: Artifact, initrd: Artifact, columns: list[str],
               minutes: int, cpus: int, append: str = "", template: Path = TEMPLATE) -> str:
    """The job's YAML, checked to parse. APPEND: more kernel parameters."""
    text = string.Template(template.read_text()).substitute(
        job_name=name, suite=re.sub(r"[^A-Za-z0-9_-]", "_", name), minutes=minutes, cpus=cpus,
        kernel_url=kernel.url, kernel_sha256=kernel.sha256,
        initrd_url=initrd.url, initrd_sha256=initrd.sha256, columns=",".join(columns),
        append=append)
    yaml.safe_load(text)
    return text


@dataclass
class Outcome:
    """A finished job, read from its log."""
    console: list[str]  # the guest's serial output, line by line
    health: str
    error_type: str = ""  # LAVA's failure class (Infrastructure, Job, Test, Bug...)
    error: str = ""
    panic: str = ""  # the first line that says the kernel died
    guest: tuple[str, str] = ("", "")  # the console's first and last line's times
    problems: list[str] = field(default_factory=list)

    def tail(self, lines: int = 25) -> list[str]:
        return self.console[-lines:] or ["(the guest printed nothing)"]


def read_log(text: str, health: str) -> Outcome:
    """LAVA's log is a YAML list of {dt, lvl, msg}: the guest's console is
    the "target" entries, and the job's end is the lava/job result's
    metadata."""
    out = Outcome([], health)
    for n, raw in enumerate(text.splitlines(), 1):
        try:  # each entry is one line: "- " and a flow mapping (lava_common/log.py)
            e = yaml.load(raw[2:], Loader=LOADER) if raw.startswith("- ") else None
        except yaml.YAMLError:
            e = None
        if not isinstance(e, dict):
            out.problems.append(f"log line {n} is not an entry: {raw[:120]}")
            continue
        lvl, msg = e.get("lvl"), e.get("msg")
        if lvl == "target" and isinstance(msg, str):
            out.guest = (out.guest[0] or str(e.get("dt", "")), str(e.get("dt", "")))
            out.console += [ESCAPE.sub("", line).rstrip("\r") for line in msg.split("\n")]
        elif lvl == "results" and isinstance(msg, dict) and msg.get("definition") == "lava" \
                and msg.get("case") == "job":
            out.error_type = str(msg.get("error_type") or "")
            out.error = str(msg.get("error_msg") or "")
        elif lvl == "error" and isinstance(msg, str):
            out.problems.append(msg)
    out.panic = next((line for line in out.console if PANIC.search(line)), "")
    return out
