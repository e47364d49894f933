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
    # route: `encap ila` routes (lwtunnel); mapping: the `ip ila` mapping table,
    # each case's ILA route turned into a mapping (running/mapping.py)
    interface: str = "route"
    mapping_options: str = ""  # after `ip ila add loc_match M loc L`

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
OURS_FEATURES = frozenset({"neutral-map"})

IMPLS = {
    "module": Impl("module", "/lib/modules/ila_ref.ko", "ila_ref",
                   "ours: kernel/ila, module ila_ref", "/proc/net/ila_ref_stats",
                   features=OURS_FEATURES),
    "intree-defaults": Impl("intree-defaults", "/lib/modules/ila.ko", "ila",
                   "Linux net/ipv6/ila, module ila, its defaults (the seed's commands verbatim)",
                   None, features=INTREE_FEATURES),
    "intree-luid": Impl("intree-luid", "/lib/modules/ila.ko", "ila",
                        f"Linux net/ipv6/ila with '{INTREE_SEED_OPTIONS}' on every route",
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

# The in-tree module's other interface: the mapping table of ila_xlat.c,
# driven by `ip ila` over its generic netlink family, translating received
# packets in a netfilter hook. Ours implements none: its column skips every
# case, saying so.
MAPPING_TABLE = "mapping-table"
INTREE_MAP_FEATURES = INTREE_FEATURES | {MAPPING_TABLE}
for name, path, what, options, default in (
        ("module-map", "/lib/modules/ila_ref.ko", "ours: ila_ref implements no mapping table",
         "", True),
        ("intree-map", "/lib/modules/ila.ko", "Linux net/ipv6/ila's mapping table (ip ila), "
         "its defaults", "", True),
        ("intree-map-adj", "/lib/modules/ila.ko", "Linux net/ipv6/ila's mapping table with "
         f"'{INTREE_SEED_OPTIONS}'", INTREE_SEED_OPTIONS, False),
        ("intree+patches-map", "/lib/modules/patched/ila.ko", "the mapping table of net/ipv6/ila "
         f"with kernel/patches/ applied, '{INTREE_SEED_OPTIONS}' (and the mapping control cases, "
         "whose netlink the series fixes)", INTREE_SEED_OPTIONS, True),
        (f"intree-{PREFIX_RELEASE}-map", f"/lib/modules/intree-{PREFIX_RELEASE}/ila.ko",
         f"the mapping table of Debian {PREFIX_RELEASE}'s net/ipv6/ila (before the "
         f"CVE-2026-68127 fix) with kernel/patches/ applied, '{INTREE_SEED_OPTIONS}'",
         INTREE_SEED_OPTIONS, False)):
    ours = name == "module-map"
    IMPLS[name] = Impl(name, path, "ila_ref" if ours else "ila", what,
                       "/proc/net/ila_ref_stats" if ours else None, runs_control=default,
                       features=frozenset() if ours else INTREE_MAP_FEATURES,
                       interface="mapping", mapping_options=options)


# The columns built with kernel/patches/ applied: a deviation 'fixed_by' one
# of the patches does not apply to them (catalog/cases.py: deviation_entries).
PATCHED = frozenset({"intree+patches", "intree+patches-map", f"intree-{PREFIX_RELEASE}",
                     f"intree-{PREFIX_RELEASE}-map"})


def lacks_mapping_table(impl: Impl) -> str:
    """Why a mapping column cannot run at all; empty when it can."""
    if impl.interface == "mapping" and MAPPING_TABLE not in impl.features:
        return f"{impl.module_name} implements no mapping table (CONFORMANCE.md, ILA-MAP requirements)"
    return ""


# IMPL= names that select several columns.
GROUPS = {
    "all": list(IMPLS),
    "intree": ["intree-defaults", "intree-luid", f"intree-{PREFIX_RELEASE}"],
    "mapping": [n for n, i in IMPLS.items() if i.interface == "mapping"],
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
    """The implementation that competes with impl for LWTUNNEL_ENCAP_ILA: ours
    for the in-tree module, the in-tree module for any other (ours, an
    external, a mutant of ours, which could not share ila_ref's /proc file)."""
    return IMPLS["module"] if impl.module_name == "ila" else IMPLS["intree-defaults"]
