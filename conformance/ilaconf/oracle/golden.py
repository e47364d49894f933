"""Golden captures: pcaps/<protocol>/<case>.pcapng, each frame commented with
its case and requirements, judged byte for byte after the oracle."""

from pathlib import Path

from ..catalog.cases import Case
from ..impls import IMPLS, MAPPING_TABLE
from . import compare
from ..reports import pcapng


def golden_file(golden_dir: Path, case: Case) -> Path:
    return golden_dir / f"{case.golden_id}.pcapng"


def golden_comment(case: Case) -> str:
    return (f"{case.id} [{', '.join(case.requirements)}]: {case.verifies}"
            + (f" Look at: {case.look}" if case.look else ""))


def empty_comment(case: Case) -> str:
    """Why a golden capture holds no frame, for the Wireshark user who opens it."""
    if case.path == "input":
        why = ("the host's packet must be dropped by the guest, so the guest sends "
               "no reply and nothing comes back")
    elif case.path == "forward":
        why = "the packet must be dropped by the guest instead of being forwarded out of eth1"
    else:
        why = "the packet must be dropped by the guest instead of leaving it"
    return f"No frame is expected: {why} (expect.outcome = \"dropped\"). {golden_comment(case)}"


def mask_tcp_window(frame: bytes) -> bytes:
    at = 14 + 40  # Ethernet, IPv6 (kernel-built segments carry no extension header)
    return frame[:at + 14] + b"\0\0\0\0" + frame[at + 18:]


def golden_column(case) -> str:
    """The column whose captures are blessed as the case's golden: ours, unless
    the case needs a feature ours lacks (checksum-neutral mapping, or the
    mapping table: the in-tree module's then)."""
    needs = set(getattr(case, "needs", []))
    if getattr(case, "interface", "route") == "mapping":
        needs.add(MAPPING_TABLE)
    return next(name for name, impl in IMPLS.items() if needs <= impl.features)


def judge(case: Case, frames: list[bytes], golden_dir: Path, bless: bool,
          debug_kernel: bool = False) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics) against the case's golden capture, or
    with bless, write it."""
    golden = golden_file(golden_dir, case)
    if bless:
        comment = golden_comment(case)
        pcapng.write(golden, frames, [comment] * len(frames),
                     section_comment=None if frames else empty_comment(case))
        return "pass", "", [f"blessed {golden}"]
    if not golden.exists():
        return "fail", (f"no golden capture {golden}: check out/pcaps/<impl>/{case.id}.pcapng in "
                        f"Wireshark, then bless it with: make golden CASE={case.golden_id}"), []
    want = pcapng.read(golden)
    if not want and not pcapng.section_comment(golden):
        return "fail", (f"golden {golden} holds no frame and no comment saying why: bless it "
                        f"again with: make golden CASE={case.id}"), []
    if len(want) != len(frames):
        return "fail", f"golden {golden} holds {len(want)} frame(s), captured {len(frames)}", []
    masked = ""
    if case.send == "tcp" and debug_kernel:
        # the window and the checksum over it; the checksum was verified by the oracle
        want, frames = [mask_tcp_window(f) for f in want], [mask_tcp_window(f) for f in frames]
        masked = " (TCP window and checksum not compared on the debug kernel)"
    for i, (exp, got) in enumerate(zip(want, frames)):
        lines = compare.diff(exp, got)
        if lines:
            return "fail", f"frame {i} differs from the golden capture {golden}{masked}", lines
    return "pass", "", []
