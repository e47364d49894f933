"""make lava: the kselftest collection as LAVA jobs, one per (kernel,
column) or per batch of mutants, on the local lab or a user's own.

    python3 -m ilaconf.lava.run --set DIR [--set DIR ...] --out DIR
        (--local LAVA_HOME | --url URL --token TOKEN) [--serve HOST:PORT
        --artifacts http://HOST:PORT] [--cpus N] [--minutes N] [--batch N]

Each --set is a kernel's artifacts (ilaconf.lava.artifacts). The host
fetches every job's log and parses the guest's TAP itself: that is the
source of truth, and each column's verdicts must be make conformance's
(out/lava/agreement.*; every verdict in out/lava/results.*, named as make
conformance names them). A job that times out, whose guest panics, or whose
worker goes offline fails its column with the console's tail; a job that
ends in LAVA's Infrastructure class is resubmitted once, and the report
says so. Ctrl-C cancels every job submitted and not finished.
"""

import argparse
import functools
import http.server
import json
import math
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..kselftest import results
from ..kselftest import run as kselftest
from ..reports import report
from . import client, job

POLL = 2.0  # seconds between two looks at the running jobs
OFFLINE_GRACE = 30.0  # a worker offline this long has lost its job
UNREACHABLE = 300.0  # the lab answering nothing this long ends the run


@dataclass
class KernelSet:
    """One kernel's artifacts, and what judges their verdicts."""
    dir: Path
    label: str
    version: str
    kernel: job.Artifact
    initrd: job.Artifact
    columns: list[str]
    names: dict[str, tuple[str, str]]  # TAP name -> (case, column)
    case: str
    conformance: dict[tuple[str, str], report.Result] | None
    mutants: dict[str, dict]
    fates: dict[str, str]


@dataclass
class Share:
    """What one job runs: some columns (or mutants) of one kernel."""
    kset: KernelSet
    labels: list[str]
    name: str
    attempt: int = 0
    job_id: int = 0
    started: float = 0.0  # when LAVA said Running
    offline_since: float = 0.0
    notes: list[str] = field(default_factory=list)


def load_set(d: Path, base_url: str) -> KernelSet:
    m = json.loads((d / "manifest.json").read_text())
    theirs = kselftest.conformance_verdicts(Path(m["conformance"])) if m["conformance"] and \
        Path(m["conformance"]).exists() else None
    fates = json.loads(Path(m["fates"]).read_text()) if m["fates"] and \
        Path(m["fates"]).exists() else {}
    prefix = f"{base_url.rstrip('/')}/{m['kernel_label']}" if base_url else ""
    return KernelSet(d, m["kernel_label"], m["kernel_version"],
                     job.artifact(Path(m["kernel"]), prefix), job.artifact(Path(m["initrd"]), prefix),
                     m["columns"], results.index(Path(m["bundle"])), m["case"], theirs,
                     {mu["module"]: mu for mu in m["mutants"]}, fates)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:  # a line per download would drown the TAP
        pass


def serve(sets: list[KernelSet], where: str) -> http.server.ThreadingHTTPServer:
    """The artifacts over HTTP for a remote lab: LABEL/bzImage and so on."""
    root = Path(tempfile.mkdtemp(prefix="ila-lava-serve-"))
    for s in sets:
        (root / s.label).mkdir()
        for a in (s.kernel, s.initrd):
            (root / s.label / a.path.name).symlink_to(a.path.resolve())
    host, _, port = where.rpartition(":")
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer((host or "0.0.0.0", int(port)), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(f"lava: serving the artifacts on {where} from {root}")
    return httpd


def shares_of(sets: list[KernelSet], batch: int) -> list[Share]:
    """A job per column; mutants in batches of BATCH."""
    out = []
    for s in sets:
        step = batch if s.mutants else 1
        for i in range(0, len(s.columns), step):
            labels = s.columns[i:i + step]
            what = labels[0] if step == 1 else f"mutants-{i // step + 1:03d}"
            out.append(Share(s, labels, f"ila-{s.label}-{what}"))
    return out


class Runner:
    def __init__(self, lab: client.Lab, a: argparse.Namespace, out: Path) -> None:
        self.lab, self.a, self.out = lab, a, out
        self.active: list[Share] = []
        self.done: list[tuple[Share, job.Outcome | None, str]] = []  # (share, outcome, fault)
        self.timings: list[dict[str, object]] = []

    def submit(self, sh: Share) -> None:
        text = job.definition(sh.name, sh.kset.kernel, sh.kset.initrd, sh.labels,
                              self.a.minutes, self.a.cpus, self.a.append)
        (self.out / "jobs").mkdir(parents=True, exist_ok=True)
        (self.out / "jobs" / f"{sh.name}.yaml").write_text(text)
        sh.job_id, sh.started, sh.offline_since = self.lab.submit(text), 0.0, 0.0
        print(f"lava: job {sh.job_id}: {sh.name} ({len(sh.labels)} "
              f"{'mutants' if sh.kset.mutants else 'column'})", flush=True)
        self.active.append(sh)

    def cancel_all(self, *_: object, code: int = 130) -> None:
        """Ctrl-C, or a lab that stopped answering: no job of ours left behind."""
        for sh in self.active:
            try:
                self.lab.cancel(sh.job_id)
                print(f"lava: job {sh.job_id} ({sh.name}) canceled", file=sys.stderr)
            except client.LabError as e:
                print(f"lava: job {sh.job_id}: cancel failed: {e}", file=sys.stderr)
        sys.exit(code)

    def watch(self) -> None:
        """Until every job is judged; a lab that answers nothing for
        UNREACHABLE seconds ends the run (its jobs canceled if it can)."""
        silent_since = 0.0
        while self.active:
            time.sleep(POLL)
            for sh in list(self.active):
                try:
                    self.look(sh)
                    silent_since = 0.0
                except client.LabError as e:
                    print(f"lava: job {sh.job_id}: {e}", file=sys.stderr)
                    silent_since = silent_since or time.monotonic()
                    if time.monotonic() - silent_since > UNREACHABLE:
                        raise

    def look(self, sh: Share) -> None:
        j = self.lab.job(sh.job_id)
        now = time.monotonic()
        if j.state == "Running" and not sh.started:
            sh.started = now
        fault = ""
        if j.state == "Running" and j.device:
            worker = self.lab.worker_of(j.device)
            if self.lab.worker_state(worker) == "Offline":
                sh.offline_since = sh.offline_since or now
                if now - sh.offline_since > OFFLINE_GRACE:
                    fault = f"worker {worker} went offline during the job (device {j.device})"
            else:
                sh.offline_since = 0.0
        if sh.started and now - sh.started > self.a.minutes * 60 + 120:
            fault = f"no end after {self.a.minutes} min + 2 min running (LAVA's own timeout did not end it)"
        if fault:
            try:
                self.lab.cancel(sh.job_id)
            except client.LabError as e:
                fault += f"; canceling it failed: {e}"
            self.active.remove(sh)
            self.finish(sh, self.outcome(sh, j.health), fault)
            return
        if j.state != "Finished":
            return
        self.active.remove(sh)
        o = self.outcome(sh, j.health)
        self.timing(sh, j, o)
        if o.error_type == "Infrastructure" and not o.panic and sh.attempt == 0:
            note = (f"job {sh.job_id} ended in LAVA's Infrastructure class ({o.error}): "
                    "resubmitted once")
            print(f"lava: {note}", flush=True)
            sh.attempt += 1
            sh.notes.append(note)
            self.submit(sh)
            return
        self.finish(sh, o, "")

    def timing(self, sh: Share, j: client.Job, o: job.Outcome) -> None:
        """Where a job's time went: queued, LAVA's own work, the guest."""
        def secs(a: str, b: str) -> float:
            return (datetime.fromisoformat(b.replace("Z", "+00:00")) -
                    datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds() \
                if a and b else float("nan")
        submitted, started, ended = j.times
        guest = secs(*o.guest) if all(o.guest) else float("nan")
        t = {"job": sh.job_id, "name": sh.name, "health": j.health, "device": j.device,
             "queued": secs(submitted, started), "running": secs(started, ended), "guest": guest}
        self.timings.append(t)
        print(f"lava: job {sh.job_id} ({sh.name}) {j.health} on {j.device}: queued "
              f"{t['queued']:.0f} s, running {t['running']:.0f} s, of which the guest's "
              f"console {guest:.0f} s", flush=True)

    def outcome(self, sh: Share, health: str) -> job.Outcome:
        try:
            o = job.read_log(self.lab.log(sh.job_id), health)
        except client.LabError as e:
            o = job.Outcome([], health, error=f"the log could not be read: {e}")
        log = self.log_of(sh)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(o.console) + "\n")
        return o

    def finish(self, sh: Share, o: job.Outcome, fault: str) -> None:
        if not fault and sh.kset.mutants:
            # the guest died (or hung) running the first unfinished mutant,
            # which that kills; a new job takes the ones after it
            sections = {s.label: s for s in results.parse(self.log_of(sh))}
            left = [lb for lb in sh.labels if not kselftest.finished(sections.get(lb))]
            if len(left) > 1:
                batch = sh.name.split("-from-")[0]
                rest = Share(sh.kset, left[1:], f"{batch}-from-{left[1]}")
                sh.labels = [lb for lb in sh.labels if lb not in rest.labels]
                self.submit(rest)
        self.done.append((sh, o, fault))

    def log_of(self, sh: Share) -> Path:
        """The console of the share's last job (an earlier attempt's stays)."""
        return self.out / sh.kset.label / f"{sh.name}-job{sh.job_id}.log"


def why_not(sh: Share, o: job.Outcome | None, fault: str) -> str:
    """The job's fault as a user reads it: first what stopped the guest."""
    if fault:
        return fault
    if o is None:
        return "no outcome"
    if o.panic:
        return f"the guest's kernel died: {o.panic.strip()}"
    if o.error_type:
        return f"LAVA: {o.error_type} error: {o.error} (job health {o.health})"
    return f"job health {o.health}"


def judge(runner: Runner, out: Path) -> int:
    rep = report.Reporter(out, None, name="results")
    agree = report.Reporter(out, None, name="agreement")
    mutants = killed = 0
    for sh, o, fault in runner.done:
        ks = sh.kset
        sections = {s.label: s for s in results.parse(runner.log_of(sh)) if s.kind == "column"}
        tail = [f"console: {line}" for line in (o.tail() if o else [])]
        for label in sh.labels:
            section = sections.get(label)
            if ks.mutants:
                mutants += 1
                if fault:
                    r = report.Result(f"lava/mutant/{ks.mutants[label]['id']}", "module", "fail",
                                      f"job {sh.job_id}: {fault}", ["ILA-LAVA-1"], tail)
                else:
                    done = section if kselftest.finished(section) else "crash"
                    r = kselftest.mutant_check(done, ks.mutants[label], ks.fates)
                    r.case = r.case.replace("kselftest/", "lava/", 1)
                    killed += done == "crash" or any(
                        v.status == "fail" for v in section.verdicts.values())
                r.kernel, r.kernel_version = ks.label, ks.version
                agree.add(r)
                continue
            # a column runs in two parts (packet cases, control cases)
            ended = section is not None and len(section.exits) == 2 and not fault
            if section is not None:
                for name, v in section.verdicts.items():
                    case, impl = ks.names.get(name, (name, label))
                    rep.add(report.Result(case, impl, v.status, v.detail, [], v.diagnostics,
                                          ks.label, ks.version))
            if runner.a.expect_panic:  # make test: a dead guest must be reported as such
                dead = not ended and o is not None and bool(o.panic)
                r = report.Result("lava/reports-a-dead-guest", label, "pass" if dead else "fail",
                                  f"job {sh.job_id}: " + (why_not(sh, o, fault) if not ended else
                                                          "the column ended: no panic to report"),
                                  ["ILA-LAVA-1"], [] if dead else sh.notes + tail)
            elif not ended:
                r = report.Result("lava/agrees-with-conformance", label, "fail",
                                  f"job {sh.job_id} ({sh.name}): {why_not(sh, o, fault)}",
                                  ["ILA-LAVA-1"], sh.notes + tail)
            else:
                r = kselftest.agreement(section, ks.names, ks.conformance, ks.case,
                                        name="lava/agrees-with-conformance")
                r.requirements = ["ILA-LAVA-1"]
                r.diagnostics = sh.notes + [f"job {sh.job_id} ({sh.name})"] + r.diagnostics
            r.kernel, r.kernel_version = ks.label, ks.version
            agree.add(r)
    rep.finish()
    failed = agree.finish()
    if mutants:
        print(f"# lava: {killed} of {mutants} mutants killed")
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(prog="ilaconf.lava.run")
    p.add_argument("--set", action="append", required=True, help="a kernel's artifacts")
    p.add_argument("--out", required=True)
    p.add_argument("--local", default="", help="the local lab's LAVA_HOME (make lava-up)")
    p.add_argument("--url", default="")
    p.add_argument("--token", default="")
    p.add_argument("--serve", default="", help="HOST:PORT: serve the artifacts over HTTP")
    p.add_argument("--artifacts", default="", help="the URL the lab's workers fetch them from")
    p.add_argument("--cpus", type=int, default=1, help="each guest's vCPUs")
    p.add_argument("--minutes", type=int, default=30, help="a job's timeout")
    p.add_argument("--append", default="", help="more kernel parameters for every job")
    p.add_argument("--expect-panic", action="store_true", help="a check of the fault path: "
                   "each column passes only if its guest's kernel died and was reported so")
    p.add_argument("--batch", type=int, default=0, help="mutants per job (default: spread "
                   "over 2 jobs per device)")
    a = p.parse_args()
    if a.local:
        try:
            env = dict(line.split("=", 1) for line in
                       (Path(a.local) / "env").read_text().splitlines() if "=" in line)
            a.url, a.token = env["LAVA_URL"], env["LAVA_TOKEN"]
        except (OSError, KeyError):
            print(f"lava: no local lab in {a.local}: run make lava-up", file=sys.stderr)
            return 2
    if not a.url or not a.token:
        print("lava: LAVA_URL= and LAVA_TOKEN= name a lab, or make lava-up starts one",
              file=sys.stderr)
        return 2
    if a.url and not a.local and not a.artifacts:
        print("lava: a remote lab's workers cannot read file://: give LAVA_ARTIFACTS=http://... "
              "(and LAVA_SERVE=HOST:PORT to serve them from here)", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [load_set(Path(d), a.artifacts) for d in a.set]
    if a.serve:
        serve(sets, a.serve)
    n = sum(len(s.columns) for s in sets if s.mutants)
    batch = a.batch or max(1, math.ceil(n / 4))
    lab = client.Lab(a.url, a.token)
    runner = Runner(lab, a, out)
    signal.signal(signal.SIGINT, runner.cancel_all)
    signal.signal(signal.SIGTERM, runner.cancel_all)
    started = time.monotonic()
    try:
        for sh in shares_of(sets, batch):
            runner.submit(sh)
        runner.watch()
    except client.LabError as e:
        print(f"lava: {e}", file=sys.stderr)
        runner.cancel_all(code=1)
    wall = time.monotonic() - started
    (out / "jobs.json").write_text(json.dumps({"wall": wall, "jobs": runner.timings}, indent=2))
    print(f"lava: {len(runner.done)} jobs in {wall:.0f} s")
    return judge(runner, out)


if __name__ == "__main__":
    sys.exit(main())
