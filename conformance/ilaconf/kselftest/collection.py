"""make kselftest: the catalog as a kselftest collection, out/kselftest/, and
the tarball KernelCI's kselftest jobs and tuxrun take, out/kselftest.tar.gz.

out/kselftest/ is what tools/testing/selftests/net/ila/ of a kernel tree
would hold: the Makefile (lib.mk's TEST_PROGS, TEST_GEN_FILES, TEST_FILES),
config, settings, one program per folder of the catalog (ila_tcp.sh ...),
the runner's C sources and the case bundle. The tarball is made by the
kernel tree's own kselftest install rule, run on a copy of its selftests
framework with the collection in it, so its layout is kselftest_install.sh's:
run_kselftest.sh, kselftest/, kselftest-list.txt and net/ila/.
"""

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

from ..catalog import cases as catalog
from ..impls import Impl
from . import bundle

COLLECTION = "net/ila"
# The kernel tree's kselftest framework that the install rule needs.
FRAMEWORK = ["Makefile", "lib.mk", "kselftest", "kselftest.h", "kselftest_harness.h",
             "run_kselftest.sh", "kselftest_install.sh"]
PROGRAM = """#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The ILA conformance catalog's {folder}/ cases (make list-cases CASE='{folder}/*').
exec "$(dirname "$0")/ila_conformance" {args}--folder {folder} "$@"
"""


class CollectionError(RuntimeError):
    pass


def copy_sources(repo: Path, out: Path) -> None:
    """The C the collection builds, at the same relative paths as in the repository."""
    src = out / "src"
    for sub, pattern in (("lib", "*.[ch]"), ("kselftest/runner", "*.[ch]")):
        (src / sub).mkdir(parents=True, exist_ok=True)
        for f in sorted((repo / sub).glob(pattern)):
            shutil.copy2(f, src / sub / f.name)
    (src / "guest-init").mkdir(parents=True, exist_ok=True)
    for name in ("inject.c", "ila-nl.c", "ila-map.c", "ila-sock.c", "ila-churn.c"):
        shutil.copy2(repo / "guest-init" / name, src / "guest-init" / name)


def write(repo: Path, out: Path, files: list[tuple[Path, str | None]], fixed: set[str],
          pattern: str = "*", columns: "list[Impl] | None" = None,
          program_args: str = "") -> int:
    """out/kselftest/ (or the cases of CASE= globs, in some columns): returns
    the number of (case, column) results it names."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("Makefile", "config", "settings"):
        shutil.copy2(repo / "kselftest" / name, out / name)
    copy_sources(repo, out)
    names = bundle.write(out / "bundle", repo / "conformance" / "cases", repo / "pcaps", files,
                         fixed, columns or bundle.columns_for_bundle(), pattern)
    (out / "bundle" / "topology").write_text("\n".join(bundle.topology_lines()) + "\n")
    (out / "bundle" / "index.json").write_text(json.dumps(
        [{"name": n, "case": c, "impl": i} for (c, i), n in sorted(names.items())], indent=1) + "\n")
    folders = sorted(p.name for p in (out / "bundle").iterdir() if p.is_dir())
    for folder in folders:
        prog = out / f"ila_{folder}.sh"
        prog.write_text(PROGRAM.format(folder=folder, args=program_args))
        prog.chmod(0o755)
    return len(names)


def check_config(collection: Path, kernel_config: Path) -> list[str]:
    """The collection's config options the kernel under test lacks."""
    have = {}
    for line in kernel_config.read_text().splitlines():
        if line.startswith("CONFIG_") and "=" in line:
            k, v = line.split("=", 1)
            have[k] = v
    missing = []
    for line in (collection / "config").read_text().splitlines():
        if "=" not in line:
            continue
        k, v = line.split("=", 1)
        if have.get(k) not in ({"y", "m"} if v == "m" else {v}):
            missing.append(f"{line} (the kernel has {k}={have.get(k, 'unset')})")
    return missing


def install(collection: Path, ksrc: Path, stage: Path, dest: Path, cflags: str) -> None:
    """The kernel tree's install rule over a copy of its selftests framework with
    the collection in it: dest/ is then what kselftest_install.sh makes."""
    selftests = stage / "tools" / "testing" / "selftests"
    if stage.exists():
        shutil.rmtree(stage)
    selftests.mkdir(parents=True)
    tree = ksrc / "tools" / "testing" / "selftests"
    for name in FRAMEWORK:
        src = tree / name
        if src.is_dir():
            shutil.copytree(src, selftests / name)
        elif src.exists():
            shutil.copy2(src, selftests / name)
    (stage / "scripts").mkdir()
    shutil.copy2(ksrc / "scripts" / "subarch.include", stage / "scripts" / "subarch.include")
    shutil.copytree(collection, selftests / COLLECTION, symlinks=True)
    if dest.exists():
        shutil.rmtree(dest)
    cmd = ["make", "--no-print-directory", "-C", str(selftests), f"TARGETS={COLLECTION}",
           f"KSFT_INSTALL_PATH={dest.resolve()}", f"USERCFLAGS={cflags}", "USERLDFLAGS=-static", "install"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not (dest / COLLECTION / "ila_conformance").exists():
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise CollectionError(f"the kselftest install rule failed ({' '.join(cmd)}):\n{tail}")


def tarball(dest: Path, path: Path) -> None:
    """What gen_tar makes of the install directory (tar -C dest .), made
    deterministic: sorted names, no owners, time 0."""
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info
    tmp = path.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz", compresslevel=9) as tar:
        for f in sorted(dest.rglob("*")):
            tar.add(f, arcname="./" + f.relative_to(dest).as_posix(), recursive=False,
                    filter=clean)
    tmp.rename(path)


def build(repo: Path, out: Path, ksrc: Path, kernel_config: Path,
          files: list[tuple[Path, str | None]], fixed: set[str]) -> int:
    """make kselftest: the collection, its install and the tarball. Returns the
    number of results a run over every column would report."""
    collection = out / "kselftest"
    try:
        count = write(repo, collection, files, fixed)
    except (bundle.BundleError, catalog.CaseError) as e:
        raise CollectionError(str(e))
    missing = check_config(collection, kernel_config)
    if missing:
        raise CollectionError(f"{kernel_config} lacks options the collection's config asks "
                              f"for (kernel/config/base.config must have them): "
                              + "; ".join(missing))
    dest = out / "build" / "kselftest-install"
    install(collection, ksrc, out / "build" / "kselftest-tree", dest,
            "-Werror -Wextra")
    tarball(dest, out / "kselftest.tar.gz")
    return count
