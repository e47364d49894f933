"""make kselftest-run: our QEMU boots the kselftest collection and the host
only reads the serial console. No frame sockets, no NICs, no scapy: this
module and the ones it imports use Python's standard library only.

The guest's initramfs is the harness's (init, iproute2, the modules) with a
second archive appended, which the kernel unpacks over the first:

    /kselftest/                 make kselftest's tarball, unpacked (the kernel
                                tree's run_kselftest.sh, kselftest/, net/ila/)
    /kselftest-RELEASE/         a kernel tree's runner (run_kselftest.sh,
                                kselftest/) over the same net/ila/
    /bin/busybox and applets    the shell the runners need (not its ip)
    /usr/bin/timeout            coreutils', so that settings' timeout= holds
                                (where the kernel has CONFIG_POSIX_TIMERS)
    /etc/ila-kselftest/         the columns and runners to run, CASE=, options
    /bin/ila-kselftest-guest    kselftest/guest-run.sh, which init runs

init (ila.run=) runs the last with its output on the control port, a file
here, and powers off.
"""

import gzip
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

GUEST_PROGRAM = "/bin/ila-kselftest-guest"
KEEP_OURS = {"ip"}  # busybox applets that must not shadow the real tool


class RunError(RuntimeError):
    pass


@dataclass(frozen=True)
class Column:
    label: str  # its results' section: the column, or a mutant's module
    name: str  # the bundle's column it is judged as
    module_path: str  # in the guest
    module_name: str
    rival_path: str


@dataclass(frozen=True)
class Runner:
    label: str  # the kernel tree it comes from ("6.1")
    tree: Path  # its tools/testing/selftests


def cpio_list(install: Path, runners: list[Runner], columns: list[Column],
              ours: Column, program: Path, conf_dir: Path, cases: str = "*",
              args: str = "", runner_cases: str = "*", timeout: bool = True) -> list[str]:
    """gen_init_cpio's list for the appended archive. timeout: the kernel has
    POSIX timers, which coreutils' timeout needs (the runners use it if there)."""
    lines = ["dir /usr 0755 0 0", "dir /usr/bin 0755 0 0", "dir /etc 0755 0 0",
             "dir /etc/ila-kselftest 0755 0 0", "dir /run 0755 0 0"]
    busybox = shutil.which("busybox") or "/bin/busybox"
    lines.append(f"file /bin/busybox {busybox} 0755 0 0")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    lines += [f"slink /bin/{a} /bin/busybox 0777 0 0" for a in sorted(applets)
              if a not in KEEP_OURS and a != "busybox"]
    if timeout:
        lines.append("file /usr/bin/timeout /usr/bin/timeout 0755 0 0")
    lines.append(f"file {GUEST_PROGRAM} {program} 0755 0 0")

    def tree(src: Path, dest: str) -> None:
        lines.append(f"dir {dest} 0755 0 0")
        for f in sorted(src.rglob("*")):
            name = f"{dest}/{f.relative_to(src).as_posix()}"
            mode = f.stat().st_mode & 0o777
            if f.is_dir():
                lines.append(f"dir {name} {mode:o} 0 0")
            else:
                lines.append(f"file {name} {f} {mode:o} 0 0")
    tree(install, "/kselftest")
    runner_lines = []
    for r in runners:  # each tree's runner over the one collection
        dest = f"/kselftest-{r.label}"
        lines.append(f"dir {dest} 0755 0 0")
        tree(r.tree / "kselftest", f"{dest}/kselftest")
        lines.append(f"file {dest}/run_kselftest.sh {r.tree / 'run_kselftest.sh'} 0755 0 0")
        lines.append(f"file {dest}/kselftest-list.txt {install / 'kselftest-list.txt'} 0644 0 0")
        lines.append(f"dir {dest}/net 0755 0 0")
        lines.append(f"slink {dest}/net/ila /kselftest/net/ila 0777 0 0")
        runner_lines.append(f"{r.label} {dest} {ours.module_path} {ours.module_name} "
                            f"{ours.rival_path}")
    (conf_dir / "columns").write_text("".join(
        f"{c.label} {c.name} {c.module_path} {c.module_name} {c.rival_path}\n" for c in columns))
    (conf_dir / "runners").write_text("".join(f"{line}\n" for line in runner_lines))
    (conf_dir / "cases").write_text(f"{cases}\n")
    (conf_dir / "args").write_text(f"{args}\n")
    (conf_dir / "runner-cases").write_text(f"{runner_cases}\n")
    lines.append(f"file /etc/ila-kselftest/columns {conf_dir / 'columns'} 0644 0 0")
    lines.append(f"file /etc/ila-kselftest/runners {conf_dir / 'runners'} 0644 0 0")
    lines.append(f"file /etc/ila-kselftest/cases {conf_dir / 'cases'} 0644 0 0")
    lines.append(f"file /etc/ila-kselftest/args {conf_dir / 'args'} 0644 0 0")
    lines.append(f"file /etc/ila-kselftest/runner-cases {conf_dir / 'runner-cases'} 0644 0 0")
    return lines


def initramfs(base: Path, gen_init_cpio: Path, lines: list[str], out: Path) -> None:
    """The harness's initramfs with the kselftest archive appended."""
    listing = out.with_suffix(".list")
    listing.write_text("\n".join(lines) + "\n")
    cpio = subprocess.run([str(gen_init_cpio), "-t", "0", str(listing)], capture_output=True,
                          check=False)
    if cpio.returncode != 0:
        raise RunError(f"gen_init_cpio failed: {cpio.stderr.decode(errors='replace')[-500:]}")
    with open(out, "wb") as f:
        f.write(base.read_bytes())
        f.write(gzip.compress(cpio.stdout, compresslevel=6, mtime=0))


def boot(kernel: Path, initrd: Path, out: Path, accel: str, timeout: float, cpus: int) -> Path:
    """Boot, run, power off; the control port's text is out/tap.log. With
    several CPUs the guest runs each column's cases side by side; under TCG
    that needs thread=multi, which this QEMU (7.2) does not choose by
    itself: without it one host thread runs every vCPU in turn."""
    out.mkdir(parents=True, exist_ok=True)
    tap, console = out / "tap.log", out / "serial.log"
    for f in (tap, console):
        f.unlink(missing_ok=True)
    cmd = ["qemu-system-x86_64", "-nodefaults", "-no-reboot", "-display", "none",
           "-accel", f"{accel},thread=multi" if accel == "tcg" and cpus > 1 else accel,
           "-m", "256M", "-smp", str(cpus), "-nic", "none",
           "-kernel", str(kernel), "-initrd", str(initrd),
           "-append", "console=ttyS0 rdinit=/init panic=-1 panic_on_warn=1 oops=panic "
                      f"ila.run={GUEST_PROGRAM}",
           "-serial", f"file:{console}", "-serial", f"file:{tap}"]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunError(f"the guest did not power off in {timeout:.0f} s" + tail(console))
    if done.returncode != 0:
        raise RunError(f"QEMU exited {done.returncode}: "
                       f"{done.stderr.decode(errors='replace')[-500:]}" + tail(console))
    print(f"kselftest-run: the guest ran for {time.monotonic() - started:.0f} s")
    return tap


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        text = ["(no serial log)"]
    return f"\n--- last {lines} lines of {path} ---\n" + "\n".join(text)
