"""make mutation: how many deliberate bugs in our module the suite catches.

Every mutant of kernel/ila/*.c (mutants.py), and every hand-written broken
copy in conformance/strength/broken/*.patch, is built against the cached
kernel as a module of its own name (ila_mNNNN), all in one kbuild run: the
unmutated files' objects are shipped in, only the mutated file compiles.
One boot then loads each in turn in place of ours and runs the catalog
against it, as IMPL=external would, stopping at the first failing case: a
killed mutant costs seconds, and the case that killed it moves to the front
for the next. A mutant that does not compile is stillborn; one the catalog
cannot kill is a survivor, unless conformance/strength/equivalent-mutants.toml
lists it as equivalent, with the reason no packet can tell it apart.
"""

import fnmatch
import json
import re
import shutil
import subprocess
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..impls import Impl
from ..reliability import detectors
from ..reports.report import Reporter, Result
from ..running.columns import COLUMN_MARK
from ..running.guest import Guest, GuestError
from ..running.session import UNLOAD_WAIT, Paths, Session, boot
from .mutants import KINDS as OPERATOR_KINDS, OPERATORS, Mutant, generate

STATS = "/proc/net/ila_ref_stats"
GUEST_DIR = "/lib/modules/mutants"


@dataclass
class Built:
    id: str
    module: str  # its module name, ila_mNNNN
    what: str  # the change, for the report
    ko: Path | None
    error: str = ""


class MutationError(ValueError):
    pass


class Done(Exception):
    """The detector phase has its verdict for the mutant."""


# An [[equivalent]] mutant behaves as the original wherever it runs; an
# [[untestable]] one does not, but only on a path no case can reach (an
# allocation failure, without fault injection) or in a way no detector sees
# (a per-CPU leak): it counts against the score.
KINDS = ("equivalent", "untestable")


def load_equivalents(file: Path) -> dict[str, tuple[str, str, str]]:
    """id -> (the mutated line, the reason, its kind), from the [[equivalent]]
    and [[untestable]] tables."""
    if not file.exists():
        return {}
    try:
        data = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise MutationError(f"{file}: not valid TOML: {e}")
    if set(data) - set(KINDS):
        raise MutationError(f"{file}: unknown tables {sorted(set(data) - set(KINDS))}; "
                            f"known: {', '.join(KINDS)}")
    out = {}
    for kind in KINDS:
        for n, t in enumerate(data.get(kind, []), 1):
            if set(t) != {"id", "mutant", "reason"}:
                raise MutationError(f"{file}: {kind} {n} needs exactly id, mutant and reason")
            if t["id"] in out:
                raise MutationError(f"{file}: {t['id']} is listed twice")
            out[t["id"]] = (t["mutant"], t["reason"], kind)
    return out


def module_objects(src: Path) -> list[str]:
    """The objects of ila_ref, as src/Kbuild lists them (ila_ref-y := ...)."""
    m = re.search(r"^ila_ref-y\s*:=\s*(.+)$", (src / "Kbuild").read_text(), re.M)
    if not m:
        raise MutationError(f"{src / 'Kbuild'} has no 'ila_ref-y :=' line to take the objects from")
    return [o.removesuffix(".o") for o in m.group(1).split()]


def write_tree(out: Path, src: Path, mutants: list[Mutant], patches: list[Path],
               kunit: bool = False) -> list[Built]:
    """The kbuild tree: base/ (ours, unmutated), mNNNN/ per mutant."""
    objects = module_objects(src)
    shutil.rmtree(out, ignore_errors=True)
    base = out / "base"
    base.mkdir(parents=True)
    for f in src.glob("*.[ch]"):
        shutil.copy(f, base)
    (base / "Kbuild").write_text(f"obj-m := ila_mbase.o\nila_mbase-y := "
                                 f"{' '.join(s + '.o' for s in objects)}\n")
    built = []
    for i, m in enumerate(mutants, 1):
        name = f"ila_m{i:04d}"
        d = out / name
        d.mkdir()
        for f in src.glob("*.h"):
            shutil.copy(f, d)
        (d / m.file).write_text(m.apply((src / m.file).read_text()))
        for s in objects:
            if f"{s}.c" != m.file:  # built once in base/, shipped in as an object
                (d / f"{s}.o_shipped").symlink_to(base / f"{s}.o")
        kbuild = f"obj-m := {name}.o\n{name}-y := {' '.join(s + '.o' for s in objects)}\n"
        if kunit and m.file == "xlat.c":  # the KUnit tests, with this xlat.c included
            (d / "tests").mkdir()
            shutil.copy(src / "tests" / "xlat_kunit.c", d / "tests")
            kbuild += f"obj-m += {kunit_name(name)}.o\n{kunit_name(name)}-y := tests/xlat_kunit.o\n"
        (d / "Kbuild").write_text(kbuild)
        change = (f"{m.original.strip()} deleted" if m.operator == "delete-stmt"
                  else m.mutated.strip())
        built.append(Built(m.id, name, f"{m.file}:{m.line}: {change}", None))
    for j, patch in enumerate(patches, len(mutants) + 1):
        name = f"ila_m{j:04d}"
        d = out / name
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("tests", "bench", "Kbuild", "Makefile"))
        kbuild = f"obj-m := {name}.o\n{name}-y := {' '.join(s + '.o' for s in objects)}\n"
        if kunit and "\n+++ b/xlat.c" in patch.read_text():  # its KUnit tests, as a mutant's
            (d / "tests").mkdir()
            shutil.copy(src / "tests" / "xlat_kunit.c", d / "tests")
            kbuild += f"obj-m += {kunit_name(name)}.o\n{kunit_name(name)}-y := tests/xlat_kunit.o\n"
        (d / "Kbuild").write_text(kbuild)
        r = subprocess.run(["patch", "-p1", "--batch", "--quiet", "-d", str(d)],
                           stdin=patch.open(), capture_output=True, text=True)
        built.append(Built(f"broken:{patch.stem}", name, f"{patch.name}: "
                           f"{first_line(patch)}", None,
                           "" if r.returncode == 0 else f"does not apply: {r.stdout}{r.stderr}"))
    return built


def first_line(patch: Path) -> str:
    """A patch's subject line."""
    for line in patch.read_text().splitlines():
        if line.startswith("Subject:"):
            return line.split("]", 1)[-1].strip() if "]" in line else line[8:].strip()
    return patch.stem


def kbuild(kdir: Path, tree: Path, names: list[str], jobs: int = 2) -> str:
    """Build the given subdirectories of tree (base/ first); the log."""
    (tree / "Kbuild").write_text("obj-m += " + " ".join(f"{n}/" for n in names) + "\n")
    r = subprocess.run(["make", "-C", str(kdir), f"M={tree}", f"-j{jobs}", "-k", "modules"],
                       capture_output=True, text=True)
    return r.stdout + r.stderr


def kunit_name(module: str) -> str:
    return module.replace("ila_m", "ila_k")


def build(kdir: Path, src: Path, out: Path, patches: list[Path],
          only: set[str] | None = None, kunit: bool = False, pick: str = "*") -> list[Built]:
    """Every mutant (or those named in only, or whose ids match one of pick's
    comma-separated globs), built; with kunit, a mutant of xlat.c also gets
    its KUnit module (ila_kNNNN, CONFIG_KUNIT kernels)."""
    mutants = generate(src)
    built = everything = write_tree(out, src, mutants, patches, kunit)
    if only is not None:
        built = [b for b in built if b.id in only]
        if only and not built:
            raise MutationError(f"none of the {len(only)} survivors the catalog phase named is a "
                                f"mutant of today's sources (did the ids change since? ids look "
                                f"like {', '.join(b.id for b in everything[:3])}): run make "
                                "mutation again")
    globs = [g.strip() for g in pick.split(",") if g.strip()] or ["*"]
    picked = [b for b in built if any(fnmatch.fnmatch(b.id, g) for g in globs)]
    if not picked:
        raise MutationError(f"MUTANTS={pick} names no mutant; ids look like "
                            f"{', '.join(b.id for b in everything[:3])}")
    built = picked
    log = kbuild(kdir, out, ["base"])
    if not (out / "base" / "ila_mbase.ko").exists():
        raise MutationError(f"our module itself does not build in {out / 'base'}:\n{log[-3000:]}")
    todo = [b for b in built if not b.error]
    # One kbuild run for all: -k goes on past the mutants that do not
    # compile, but then skips modpost; a second run over the ones that
    # linked finds their objects built and makes their modules.
    text = kbuild(kdir, out, [b.module for b in todo])
    linked = [b.module for b in todo if (out / b.module / f"{b.module}.o").exists()]
    text += kbuild(kdir, out, linked) if linked else ""
    for b in todo:
        ko = out / b.module / f"{b.module}.ko"
        if ko.exists():
            b.ko = ko
        else:
            lines = [line for line in text.splitlines() if f"/{b.module}/" in line
                     and "error" in line.lower()]
            b.error = "does not compile: " + (lines[0].strip() if lines else "(see build.log)")
    (out / "build.log").write_text(text)
    return built


def save(built: list[Built], manifest: Path) -> None:
    """The manifest make mutation's later steps read, and mkinitramfs's
    arguments beside it (every built mutant under /lib/modules/mutants/)."""
    manifest.write_text(json.dumps([{**vars(b), "ko": str(b.ko) if b.ko else None}
                                    for b in built], indent=1) + "\n")
    kos = [b.ko for b in built if b.ko] + [k for b in built if b.ko and (k := kunit_ko(b)).exists()]
    manifest.with_suffix(".kos").write_text("".join(f"mutants={k}\n" for k in kos))


def kunit_ko(b: Built) -> Path:
    return b.ko.with_name(f"{kunit_name(b.module)}.ko") if b.ko else Path("/nonexistent")


def load(manifest: Path) -> list[Built]:
    if not manifest.exists():
        raise MutationError(f"{manifest} is missing: make mutation builds the mutants first")
    return [Built(**{**d, "ko": Path(d["ko"]) if d["ko"] else None})
            for d in json.loads(manifest.read_text())]


def impl_of(b: Built) -> Impl:
    return Impl(b.module, f"{GUEST_DIR}/{b.module}.ko", b.module, f"mutant {b.id}: {b.what}", STATS)


# Phase 2, the debug kernel: the cases that reach the module's control and
# drop paths, its ICMPv6 hook and one packet of each kind, then the
# detectors (KUnit first, kmemleak and the serial log after).
# (Not the slow control cases: 10,000 routes, user namespaces, the mapping
# table's, which ours skips.) Each mutant gets a guest of its own here, so
# that a leak or a module left busy is blamed on the mutant that made it.
DETECTOR_CASES = ("control/netlink-*", "control/netns-*", "control/module-*", "control/family-*",
                  "control/iproute2-*", "control/input-*", "control/icmperr-udp-refused",
                  "control/icmperr-reverse-map",
                  "ipv4/*", "malformed/*",
                  "tcp/output-syn", "tcp/input-syn", "udp/input-port-unreachable",
                  "udp/output-datagram", "icmperr/forward-ptb-tcp", "ext/output-ah-tcp")


def detect(session: Session, b: Built, cases: list) -> tuple[str, str]:
    """(killer, the case running) for a mutant on the debug kernel: its KUnit
    tests (a mutant of xlat.c), the detector cases, then a kmemleak scan and
    the serial log since the mutant was loaded."""
    if kunit_ko(b).exists():
        bad = [r for r in detectors.kunit(session, f"{GUEST_DIR}/{kunit_name(b.module)}.ko",
                                          kunit_name(b.module)) if r.status == "fail"]
        if bad:
            return f"KUnit {bad[0].case}: {bad[0].detail}", ""
    why = session.load(impl_of(b))
    if why:
        return f"did not load: {why.splitlines()[0]}", ""
    session.guest.run("write", ["/dev/kmsg", f"{COLUMN_MARK}{b.module}"])
    for case in cases:
        r = session.run_case(case, bless=False)
        if r.status == "fail":
            return f"{case.id}: {r.detail}", case.id
    for r in detectors.kmemleak(session, owner=b.module, column=b.module):
        if r.status == "fail":
            return f"kmemleak: {r.detail}", "kmemleak"
    for r in detectors.scan_logs([session.guest.serial_log], [b.module]):
        if r.status == "fail":
            return f"{r.case}: {r.detail}", "serial log"
    return "", ""


def run(paths: Paths, reporter: Reporter, accel: str, built: list[Built], cases: list,
        equivalents: dict[str, tuple[str, str, str]], debug: bool = False, jobs: int = 1
        ) -> dict[str, str]:
    """Each mutant against the catalog (with debug, the detector cases and the
    detectors of the debug kernel), on jobs guests side by side, each taking
    the next mutant as it finishes one; returns id -> killed by / survived."""
    if debug:
        cases = [c for c in cases if any(fnmatch.fnmatch(c.id, g) for g in DETECTOR_CASES)]
    fate: dict[str, str] = {}
    todo = list(built)
    lock = threading.Lock()

    def record(b: Built, killer: str, result: Result) -> None:
        with lock:
            fate[b.id] = killer
            reporter.add(result)

    def worker(n: int) -> None:
        order = list(cases)  # each guest learns its own killer-first order
        guest: Guest | None = None
        session: Session | None = None
        boots = 0
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    b = todo.pop(0)
                if not b.ko:
                    record(b, "stillborn", Result(f"mutation/{b.id}", "module", "skip",
                                                  f"stillborn: {b.error}", [], [b.what]))
                    continue
                started = time.monotonic()
                current, killer = "loading", ""
                try:
                    if guest is None:
                        boots += 1
                        guest, session = boot(paths, accel, f"mutation-{n}.{boots}")
                    if debug:
                        killer, current = detect(session, b, order)
                        raise Done
                    current = "the catalog"
                    killer = catalog(session, b, order)
                    # Unloaded here, so that a module left busy is blamed on
                    # this mutant, never on the next one's load (a killed one
                    # gets a fresh guest rather than the full wait).
                    current = "rmmod"
                    why = session.unload(wait=5 if killer else UNLOAD_WAIT)
                    if why:
                        killer = killer or f"its module stays loaded after the catalog: {why}"
                        raise GuestError(why)
                except Done:
                    pass
                except GuestError as e:
                    if not killer:
                        killer = f"the guest died during {current}: {str(e).splitlines()[0]}"
                    guest.close() if guest else None
                    guest = session = None
                if debug and guest:
                    guest.close()
                    guest = session = None
                took = f"{time.monotonic() - started:.1f} s"
                record(b, killer or "survived", verdict(b, killer, took, equivalents))
        finally:
            if guest:
                guest.close()

    crashed: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            worker(n)
        except BaseException as e:  # re-raised below: no mutant goes unjudged
            with lock:
                crashed.append(e)
                todo.clear()

    threads = [threading.Thread(target=guarded, args=(n,), name=f"mutation-{n}")
               for n in range(1, max(1, min(jobs, len(built))) + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if crashed:
        raise crashed[0]
    return fate


def catalog(session: Session, b: Built, order: list) -> str:
    """The catalog against one mutant, stopping at its first failing case,
    which moves to the front of order for the next mutant; the killer."""
    why = session.load(impl_of(b))
    if why:
        return f"did not load: {why.splitlines()[0]}"
    for case in list(order):
        try:
            r = session.run_case(case, bless=False)
        except GuestError as e:
            raise GuestError(f"{case.id}: {e}") from e
        if r.status == "fail":
            order.remove(case)
            order.insert(0, case)
            return f"{case.id}: {r.detail}"
    return ""


def verdict(b: Built, killer: str, took: str, equivalents: dict[str, tuple[str, str, str]]) -> Result:
    eq = equivalents.get(b.id)
    name = f"mutation/{b.id}"
    if killer and eq:
        return Result(name, "module", "fail", f"listed as {eq[2]}, but killed by {killer}: "
                      "remove it from the equivalents file", [], [b.what])
    if killer:
        return Result(name, "module", "pass", "", [],
                      [f"killed{f' in {took}' if took else ''} by {killer}", b.what])
    if eq:
        mutated, reason, kind = eq
        if mutated.strip() not in b.what:
            return Result(name, "module", "fail", f"survives; its equivalents entry names another "
                          f"change ({mutated!r}): the source moved, check it again", [], [b.what])
        return Result(name, "module", "skip", f"{kind}: {reason}", [], [b.what])
    return Result(name, "module", "fail", "survives every case: add a case that kills it, or "
                  "list it as equivalent with the reason", [],
                  [b.what, f"ran every case in {took}" if took else "ran every case"])


def save_fates(fate: dict[str, str], file: Path) -> None:
    file.write_text(json.dumps(fate, indent=1) + "\n")


def load_fates(file: Path) -> dict[str, str]:
    if not file.exists():
        raise MutationError(f"{file} is missing: the catalog phase of make mutation runs first")
    return json.loads(file.read_text())


def summary(built: list[Built], fate: dict[str, str], equivalents: dict[str, tuple[str, str, str]]
            ) -> list[str]:
    n = len(built)
    stillborn = sum(f == "stillborn" for f in fate.values())
    killed = sum(f not in ("stillborn", "survived") for f in fate.values())
    listed = {b.id: equivalents[b.id][2] for b in built
              if fate.get(b.id) == "survived" and b.id in equivalents}
    equivalent = sum(kind == "equivalent" for kind in listed.values())
    untestable = sum(kind == "untestable" for kind in listed.values())
    survivors = [b for b in built if fate.get(b.id) == "survived" and b.id not in equivalents]
    scored = n - stillborn - equivalent
    score = 100.0 * killed / scored if scored else 100.0
    lines = [f"# mutation: {len(OPERATORS)} operators ({', '.join(OPERATORS)}); {n} mutants, "
             f"{stillborn} stillborn, {killed} killed, {equivalent} equivalent, "
             f"{untestable} untestable, {len(survivors)} survivors",
             f"# mutation score: {killed} of {scored} non-equivalent mutants killed ({score:.1f}%)"]
    lines += by_kind(built, fate, listed)
    lines += [f"# survivor {b.id}: {b.what}" for b in survivors]
    return lines


def kind_of(mutant_id: str) -> str:
    """The kind of bug a mutant stands for: its operator's, or a broken copy's."""
    if mutant_id.startswith("broken:"):
        return "hand-written broken copy"
    return OPERATOR_KINDS.get(mutant_id.split(":")[2], "syntactic")


def by_kind(built: list[Built], fate: dict[str, str], listed: dict[str, str]) -> list[str]:
    """The score per kind of bug, so that a weak kind shows."""
    tally: dict[str, list[int]] = {}
    for b in built:
        f = fate.get(b.id)
        if f is None or f == "stillborn" or listed.get(b.id) == "equivalent":
            continue
        t = tally.setdefault(kind_of(b.id), [0, 0])
        t[0] += f != "survived"
        t[1] += 1
    return [f"# mutation score, {kind}: {k} of {n} killed ({100.0 * k / n:.1f}%)"
            for kind, (k, n) in sorted(tally.items())]
