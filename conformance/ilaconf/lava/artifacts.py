"""make lava's artifacts for one kernel: its bzImage and one kselftest
initramfs holding every column of IMPL= (or every mutant of the last make
mutation), and a manifest saying what they hold. Each job then boots the
same two files and picks its share with ila.columns= on the kernel command
line, so that a lab downloads (and pins by sha256) two files per kernel.

    python3 -m ilaconf.lava.artifacts --kernel BZIMAGE --initrd BASE --gen-init-cpio PATH
        --tarball KSELFTEST.TAR.GZ --bundle DIR --out DIR [--impl COLUMNS]
        [--mutants MUTANTS.json --fates FATES.json] --conformance RESULTS.json ...
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..kselftest import run as kselftest


def main() -> int:
    p = argparse.ArgumentParser(prog="ilaconf.lava.artifacts")
    for name in ("--kernel", "--initrd", "--gen-init-cpio", "--tarball", "--bundle", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--kconfig", default="")
    p.add_argument("--program", default="kselftest/guest-run.sh")
    p.add_argument("--impl", default="all")
    p.add_argument("--no-column", action="append", default=[])
    p.add_argument("--case", default="*")
    p.add_argument("--mutants", default="")
    p.add_argument("--fates", default="")
    p.add_argument("--conformance", default="")
    p.add_argument("--kernel-label", default="")
    p.add_argument("--kernel-version", default="")
    a = p.parse_args()
    a.runner_case = "*"
    try:
        columns = kselftest.columns_of(a.impl, a.no_column)
    except ValueError as e:
        print(f"lava: {e}", file=sys.stderr)
        return 2
    args, mutants = "", []
    if a.mutants:
        columns, by_label = kselftest.mutant_columns(Path(a.mutants))
        mutants, args = list(by_label.values()), "--stop-on-fail"
    if not columns:
        print("lava: no column to run (IMPL=, or make mutation built no mutant)", file=sys.stderr)
        return 2
    ours = next((c for c in columns if c.name == "module"), columns[0])
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    initrd = kselftest.build_initrd(a, columns, ours, [], args, out)
    kernel = out / "bzImage"
    shutil.copyfile(a.kernel, kernel)
    manifest = {
        "kernel_label": a.kernel_label, "kernel_version": a.kernel_version,
        "kernel": str(kernel.resolve()), "initrd": str(initrd.resolve()),
        "bundle": str(Path(a.bundle).resolve()), "case": a.case,
        "columns": [c.label for c in columns],
        "conformance": str(Path(a.conformance).resolve()) if a.conformance else "",
        "mutants": mutants, "fates": str(Path(a.fates).resolve()) if a.fates else "",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"lava: {out}/: bzImage, {initrd.name} ({initrd.stat().st_size // 1024} KiB), "
          f"{len(columns)} {'mutants' if mutants else 'columns'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
