"""Run cases against implementations: one boot per implementation, all its cases in turn.

For each case: install its routes with the guest's real iproute2, inject the
packet, send an end-of-case marker, collect the case's frames, remove the
routes, then judge the frames against the oracle and the golden capture.
"""

from dataclasses import dataclass
from ipaddress import IPv6Address
from pathlib import Path

from . import compare, packets, pcapng, topology
from .cases import Case
from .guest import Guest, GuestError
from .impls import Impl
from .report import Reporter, Result

INJECT = "/bin/ila-inject"


@dataclass
class Paths:
    kernel: Path
    initrd: Path
    out: Path  # out/
    golden: Path  # pcaps/


def golden_file(paths: Paths, case: Case) -> Path:
    return paths.golden / f"{case.id}.pcapng"


def ip_argv(line: str) -> list[str]:
    words = line.split()
    if not words or words[0] != "ip":
        raise ValueError(f"route lines must be ip commands, got {line!r}")
    return [topology.IP, *words[1:]]


def is_mark(seq: int):
    want = f"ila-mark {seq}".encode()

    def check(frame: bytes) -> bool:
        # Ethernet(14) + IPv6(40, next header UDP) + UDP(8, dport 9) + payload
        return (frame[12:14] == b"\x86\xdd" and frame[20] == 17
                and int.from_bytes(frame[56:58], "big") == topology.MARK_PORT
                and frame[62:] == want)
    return check


def in_flow(case: Case, frame: bytes) -> bool:
    """The case's own frames: IPv6 whose destination identifier is the packet's."""
    if frame[12:14] != b"\x86\xdd" or len(frame) < 54:
        return False
    iid = IPv6Address(str(case.packet["dst"])).packed[8:]
    return frame[46:54] == iid


def expected_frames(case: Case) -> list[bytes]:
    dst = case.expect_dst if case.outcome == "translated" else str(case.packet["dst"])
    return [packets.frame_from_guest(packets.build_l3(case.packet, str(dst)))]


def judge(case: Case, frames: list[bytes], paths: Paths, bless: bool) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics) from the oracle and the golden capture."""
    expected = expected_frames(case)
    if len(frames) != len(expected):
        diag = [f"frame {i}: {bytes(f).hex()}" for i, f in enumerate(frames)]
        return "fail", (f"expected {len(expected)} frame(s) of the flow, captured {len(frames)}"), diag
    for i, (exp, got) in enumerate(zip(expected, frames)):
        lines = compare.diff(exp, got)
        if lines:
            return "fail", f"frame {i} differs from the oracle (scapy, full checksum recompute)", lines
    golden = golden_file(paths, case)
    if bless:
        comment = (f"{case.id} [{', '.join(case.requirements)}]: {case.verifies}"
                   + (f" Look at: {case.look}" if case.look else ""))
        pcapng.write(golden, frames, [comment] * len(frames))
        return "pass", "", [f"blessed {golden}"]
    if not golden.exists():
        return "fail", (f"no golden capture {golden}: check out/pcaps/<impl>/{case.id}.pcapng in "
                        f"Wireshark, then bless it with: make golden CASE={case.id}"), []
    want = pcapng.read(golden)
    if len(want) != len(frames):
        return "fail", f"golden {golden} holds {len(want)} frame(s), captured {len(frames)}", []
    for i, (exp, got) in enumerate(zip(want, frames)):
        lines = compare.diff(exp, got)
        if lines:
            return "fail", f"frame {i} differs from the golden capture {golden}", lines
    return "pass", "", []


class Session:
    """One booted guest with one implementation loaded."""

    def __init__(self, guest: Guest, impl: Impl, paths: Paths) -> None:
        self.guest, self.impl, self.paths = guest, impl, paths
        self.mark = 0

    def must(self, verb: str, args: list[str]) -> None:
        reply = self.guest.run(verb, args)
        if reply.rc != 0:
            raise GuestError(f"'{verb} {' '.join(args)}' failed ({reply.rc}): " + " | ".join(reply.out))

    def setup(self) -> None:
        for verb, args in topology.setup_steps():
            self.must(verb, args)
        self.must("insmod", [self.impl.module_path])

    def leftover_ila_routes(self) -> list[str]:
        reply = self.guest.run("exec", [topology.IP, "-6", "route", "show", "table", "all"])
        return [line for line in reply.out if "encap ila" in line]

    def run_case(self, case: Case, bless: bool) -> Result:
        diag: list[str] = []

        def fail(detail: str) -> Result:
            return Result(case.id, self.impl.name, "fail", detail, case.requirements, diag)

        for line in case.routes:
            reply = self.guest.run("exec", ip_argv(line))
            if reply.rc != 0:
                self.teardown(case)
                return fail(f"route set-up failed ({reply.rc}): {line}: {' | '.join(reply.out)}")
        args = packets.injector_args(case.packet)
        reply = self.guest.run("exec", [INJECT, "raw", *args])
        self.mark += 1
        self.must("exec", [INJECT, "mark", f"dst={topology.HOST_ADDR}", f"seq={self.mark}"])
        frames = [f for f in self.guest.frames_until(is_mark(self.mark)) if in_flow(case, f)]
        left = self.teardown(case)
        out = self.paths.out / "pcaps" / self.impl.name / f"{case.id}.pcapng"
        pcapng.write(out, frames, [f"{case.id} as captured from {self.impl.name}"] * len(frames))
        if reply.rc != 0:
            return fail(f"injector failed ({reply.rc}): {' | '.join(reply.out)}")
        if left:
            return fail(f"ILA routes left after the teardown: {left}")
        status, detail, diag = judge(case, frames, self.paths, bless)
        return Result(case.id, self.impl.name, status, detail, case.requirements, diag)

    def teardown(self, case: Case) -> list[str]:
        for line in case.teardown:
            self.guest.run("exec", ip_argv(line))
        return self.leftover_ila_routes()


def run_impl(impl: Impl, cases: list[Case], paths: Paths, reporter: Reporter, accel: str,
             bless: bool) -> None:
    """Boot once for impl and run every case; a dead guest fails what is left, loudly."""
    log = paths.out / "logs" / f"serial-{impl.name}.log"
    dump = paths.out / "pcaps" / impl.name / "all-frames.pcap"
    done = 0
    guest = None
    try:
        guest = Guest(paths.kernel, paths.initrd, log, dump, accel)
        session = Session(guest, impl, paths)
        session.setup()
        for case in cases:
            reporter.add(session.run_case(case, bless))
            done += 1
    except GuestError as e:
        detail = str(e).splitlines()
        where = cases[done].id if done < len(cases) else "shutdown"
        reporter.add(Result(cases[done].id if done < len(cases) else "guest", impl.name, "fail",
                            f"guest failed during {where}: {detail[0]}", [], detail[1:]))
        for case in cases[done + 1:]:
            reporter.add(Result(case.id, impl.name, "fail",
                                f"not run: the guest died during {where}", case.requirements))
    finally:
        if guest:
            guest.close()
