"""One QEMU guest: boot it, drive its agent, exchange raw Ethernet frames.

Every wait has a deadline; a guest that panics, hangs or goes silent raises
GuestError carrying the tail of its serial console.
"""

import contextlib
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import topology

BOOT_TIMEOUT = 120.0  # TCG boots in about 3 s here; a cold CI machine is slower
COMMAND_TIMEOUT = 60.0


class GuestError(RuntimeError):
    pass


@dataclass
class Reply:
    rc: int
    out: list[str]


class Guest:
    def __init__(self, kernel: Path, initrd: Path, serial_log: Path, dump_dir: Path,
                 accel: str = "tcg", tag: str = "1", memory: str = "256M",
                 cmdline: str = "") -> None:
        self.serial_log = serial_log
        self.tmp = Path(tempfile.mkdtemp(prefix="ilaconf-"))  # short paths for unix sockets
        self.frames: list[socket.socket] = []
        netdevs: list[str] = []
        for i, nic in enumerate(topology.NICS):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(self.tmp / f"host{i}.sock"))
            self.frames.append(sock)
            netdevs += [
                "-netdev", (f"dgram,id=n{i},local.type=unix,local.path={self.tmp / f'guest{i}.sock'},"
                            f"remote.type=unix,remote.path={self.tmp / f'host{i}.sock'}"),
                "-device", f"{nic.model},netdev=n{i},mac={nic.guest_mac},romfile=",
                "-object", f"filter-dump,id=f{i},netdev=n{i},file={dump_dir / f'all-frames-boot{tag}-{nic.dev}.pcap'}",
            ]
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.tmp / "ctl.sock"))
        listener.listen(1)
        serial_log.parent.mkdir(parents=True, exist_ok=True)
        dump_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            "qemu-system-x86_64", "-nodefaults", "-no-reboot", "-display", "none",
            "-accel", accel, "-m", memory,
            "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", f"console=ttyS0 rdinit=/init panic=-1 panic_on_warn=1 oops=panic {cmdline}".strip(),
            "-chardev", f"file,id=con,path={serial_log}", "-serial", "chardev:con",
            "-chardev", f"socket,id=ctl,path={self.tmp / 'ctl.sock'}", "-serial", "chardev:ctl",
            *netdevs,
        ]
        self.qemu_log = serial_log.with_suffix(".qemu.log")
        with open(self.qemu_log, "wb") as log:
            self.qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)
        self.next_id = 1
        self.buf = b""
        try:
            self._connect(listener, accel)
        except BaseException:
            self.close()
            raise

    def _connect(self, listener: socket.socket, accel: str) -> None:
        hint = " (KVM guests hang on these machines: use the default QEMU_ACCEL=tcg)" \
            if accel != "tcg" else ""
        listener.settimeout(BOOT_TIMEOUT)
        try:
            self.ctl, _ = listener.accept()
        except socket.timeout:
            raise GuestError(f"QEMU did not connect its control port in {BOOT_TIMEOUT:.0f} s"
                             + self._qemu_output())
        finally:
            listener.close()
        ready = self._read_line(BOOT_TIMEOUT, "boot" + hint)
        if " ready " not in ready:
            raise GuestError(f"unexpected first line from the guest agent: {ready!r}" + self.tail())
        self.release = ready.split(" ready ", 1)[1]

    def _qemu_output(self) -> str:
        try:
            text = self.qemu_log.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f"\nQEMU said: {text}" if text else ""

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.serial_log.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            text = ["(no serial log)"]
        return (f"\n--- last {lines} lines of the serial console {self.serial_log} ---\n"
                + "\n".join(text) + self._qemu_output())

    def _read_line(self, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuestError(f"guest timed out after {timeout:.0f} s during {what}" + self.tail())
            ready, _, _ = select.select([self.ctl], [], [], min(left, 0.5))
            if ready:
                chunk = self.ctl.recv(65536)
                if not chunk:
                    time.sleep(0.2)  # let QEMU finish writing the log
                    raise GuestError(f"guest went away during {what}" + self.tail())
                self.buf += chunk
            elif self.qemu.poll() is not None:
                raise GuestError(f"QEMU exited ({self.qemu.returncode}) during {what}" + self.tail())
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def run(self, verb: str, args: list[str], timeout: float = COMMAND_TIMEOUT) -> Reply:
        """Run one agent command and wait for its status."""
        if any(" " in a or "\n" in a or not a for a in args):
            raise ValueError(f"agent arguments may not be empty or hold spaces: {args}")
        cid = str(self.next_id)
        self.next_id += 1
        text = " ".join([cid, verb, *args])
        try:
            self.ctl.sendall(text.encode() + b"\n")
        except OSError as e:
            time.sleep(0.2)  # let QEMU finish writing the log
            raise GuestError(f"guest went away before '{verb} {' '.join(args)}' ({e})" + self.tail())
        out: list[str] = []
        while True:
            line = self._read_line(timeout, f"'{verb} {' '.join(args)}'")
            rid, kind, rest = (line.split(" ", 2) + ["", ""])[:3]
            if rid != cid:
                raise GuestError(f"agent answered {line!r} to command {cid}" + self.tail())
            if kind == "out":
                out.append(rest)
            elif kind == "rc":
                return Reply(int(rest), out)
            else:
                raise GuestError(f"agent sent {line!r}" + self.tail())

    def send_frame(self, frame: bytes, nic: int = 0) -> None:
        self.frames[nic].sendto(frame, str(self.tmp / f"guest{nic}.sock"))

    def frames_until(self, is_last: Callable[[bytes], bool], fence_nic: int = 0,
                     timeout: float = 30.0) -> list[list[bytes]]:
        """Frames from the guest per NIC, up to the first on fence_nic that is_last accepts.

        QEMU hands each frame to its socket as the guest sends it, so once the
        fence has arrived, every frame the guest sent before it on any NIC is
        already queued: the other NICs are then drained without waiting.
        """
        deadline = time.monotonic() + timeout
        got: list[list[bytes]] = [[] for _ in self.frames]
        fence = self.frames[fence_nic]
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuestError(f"no end-of-case fence from the guest in {timeout:.0f} s" + self.tail())
            ready, _, _ = select.select(self.frames, [], [], min(left, 0.5))
            if not ready and self.qemu.poll() is not None:
                raise GuestError("QEMU exited while waiting for frames" + self.tail())
            for sock in ready:
                frame = sock.recv(65536)
                if sock is fence and is_last(frame):
                    for i, other in enumerate(self.frames):
                        got[i] += self._drain(other) if other is not fence else []
                    return got
                got[self.frames.index(sock)].append(frame)

    @contextlib.contextmanager
    def serving_frames(self, answer: Callable[[bytes], bytes | None] = lambda frame: None
                       ) -> Iterator[list[int]]:
        """Read the guest's frames in a thread while a long command runs, so
        that bulk traffic never backs up in the sockets; a frame answer()
        returns goes back on the NIC the guest sent on. Yields a frame count."""
        count = [0]
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                ready, _, _ = select.select(self.frames, [], [], 0.1)
                for sock in ready:
                    reply = answer(sock.recv(65536))
                    count[0] += 1
                    if reply is not None:
                        self.send_frame(reply, self.frames.index(sock))
        t = threading.Thread(target=serve, daemon=True)
        t.start()
        try:
            yield count
        finally:
            stop.set()
            t.join()

    def discarding_frames(self) -> contextlib.AbstractContextManager[list[int]]:
        """Drop the guest's frames while a long command runs."""
        return self.serving_frames()

    @staticmethod
    def _drain(sock: socket.socket) -> list[bytes]:
        out = []
        sock.setblocking(False)
        try:
            while True:
                out.append(sock.recv(65536))
        except BlockingIOError:
            return out
        finally:
            sock.setblocking(True)

    def close(self) -> None:
        """Ask the agent to reboot (QEMU then exits), kill QEMU if it does not."""
        if self.qemu.poll() is None and hasattr(self, "ctl"):
            try:
                self.ctl.sendall(b"0 reboot\n")
            except OSError:
                pass
        try:
            self.qemu.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.qemu.kill()
            self.qemu.wait()
        if hasattr(self, "ctl"):
            self.ctl.close()
        for sock in self.frames:
            sock.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
