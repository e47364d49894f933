"""The columns of the matrix: an ILA implementation in one configuration.

A column names the module the guest loads, and the route options its
configuration appends to every `encap ila LOCATOR` of a packet case's routes.
Control-plane cases test the netlink interface itself, so they run in each
implementation's default configuration only; its other columns skip them,
saying so.
"""

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Impl:
    name: str  # the column, and "impl" in out/results.json
    module_path: str  # in the guest
    module_name: str  # for rmmod
    description: str
    stats_file: str | None  # per-netns counters, if the implementation has them
    route_options: str = ""  # appended after "encap ila LOCATOR"
    runs_control: bool = True  # the implementation's default configuration
    features: frozenset[str] = frozenset()  # optional features cases may need

    def route(self, line: str) -> str:
        """A case's route command in this column's configuration.

        The in-tree module translates on one hook per route, output by
        default: a route of type local (the input path) needs hook-type input.
        """
        if not self.route_options or "csum-mode" in line:  # a case's own options win
            return line
        options = self.route_options
        if re.search(r"\blocal\b.*\bencap ila\b", line):
            options += " hook-type input"
        return re.sub(r"(encap ila \S+)", rf"\1 {options}", line)


# The in-tree options closest to the seed: adjust the transport checksum,
# and treat the whole low 64 bits as the identifier (no type field).
INTREE_SEED_OPTIONS = "csum-mode adj-transport ident-type luid"

# Checksum-neutral mapping (csum-mode neutral-map, neutral-map-auto).
INTREE_FEATURES = frozenset({"neutral-map"})

IMPLS = {
    "module": Impl("module", "/lib/modules/ila_ref.ko", "ila_ref",
                   "ours: kernel/ila, module ila_ref", "/proc/net/ila_ref_stats"),
    "intree-defaults": Impl("intree-defaults", "/lib/modules/ila.ko", "ila",
                   "Linux 6.1 net/ipv6/ila, module ila, its defaults (the seed's commands verbatim)",
                   None, features=INTREE_FEATURES),
    "intree-luid": Impl("intree-luid", "/lib/modules/ila.ko", "ila",
                        f"Linux 6.1 net/ipv6/ila with '{INTREE_SEED_OPTIONS}' on every route",
                        None, INTREE_SEED_OPTIONS, runs_control=False,
                        features=INTREE_FEATURES),
    "intree+patches": Impl("intree+patches", "/lib/modules/patched/ila.ko", "ila",
                           f"net/ipv6/ila with kernel/patches/ applied, '{INTREE_SEED_OPTIONS}'",
                           None, INTREE_SEED_OPTIONS, runs_control=False,
                        features=INTREE_FEATURES),
}

# A released in-tree module from before the CVE-2026-68127 fix (6.1.183),
# built against the running kernel with kernel/patches/ applied, so that the
# CVE is its one difference from intree+patches (make intree-old).
PREFIX_RELEASE = "6.1.176-1"
IMPLS[f"intree-{PREFIX_RELEASE}"] = Impl(
    f"intree-{PREFIX_RELEASE}", f"/lib/modules/intree-{PREFIX_RELEASE}/ila.ko", "ila",
    f"net/ipv6/ila of Debian's linux-source-6.1 {PREFIX_RELEASE} (before the CVE-2026-68127 "
    f"fix) with kernel/patches/ applied, '{INTREE_SEED_OPTIONS}'", None, INTREE_SEED_OPTIONS,
    runs_control=False,
    features=INTREE_FEATURES)

# IMPL= names that select several columns.
GROUPS = {
    "all": list(IMPLS),
    "intree": ["intree-defaults", "intree-luid", f"intree-{PREFIX_RELEASE}"],
}


def read_externals(listing: Path | None) -> dict[str, Impl]:
    """The externals kernel/build-externals.sh built: 'NAME MODULE KO SRC' per line."""
    out = {}
    if listing and listing.exists():
        for line in listing.read_text().splitlines():
            name, module, ko, src = line.split(" ", 3)
            out[name] = Impl(name, ko, module, f"external: {src}", None)
    return out


def parse_impls(text: str, listing: Path | None = None) -> list[Impl]:
    """IMPL=all | a group | columns | external:DIR | external:NAME=DIR, comma
    separated; unknown names are an error naming the valid ones."""
    externals = read_externals(listing)
    by_src = {i.description.removeprefix("external: "): i for i in externals.values()}
    names: list[Impl] = []
    unknown = []
    for n in (n for n in text.split(",") if n):
        if n.startswith("external:"):
            spec = n.removeprefix("external:")
            name, _, src = spec.rpartition("=") if "=" in spec else ("", "", spec)
            found = externals.get(name) if name else by_src.get(str(Path(src).resolve()))
            if found is None and not name and len(externals) == 1:
                found = next(iter(externals.values()))  # named by NAME=
            if found is None:
                raise ValueError(f"{n}: not built (run through make, which builds it with "
                                 "kernel/build-externals.sh)")
            chosen = [found]
        else:
            chosen = [IMPLS[c] for c in GROUPS.get(n, [n]) if c in IMPLS]
            if not chosen:
                unknown.append(n)
        names += [c for c in chosen if c not in names]
    if unknown or not names:
        valid = ", ".join([*GROUPS, *(n for n in IMPLS if n not in GROUPS), "external:DIR"])
        raise ValueError(f"unknown IMPL {','.join(unknown) or repr(text)}: valid are {valid}")
    return names


def rival(impl: Impl) -> Impl:
    """The implementation that competes with impl for LWTUNNEL_ENCAP_ILA."""
    return IMPLS["module"] if impl.module_name != "ila_ref" else IMPLS["intree-defaults"]
