"""The ILA implementations the suite can judge, and how each is loaded in the guest."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Impl:
    name: str
    module_path: str  # in the guest
    module_name: str  # for rmmod
    description: str
    stats_file: str | None  # per-netns counters, if the implementation has them


IMPLS = {
    "module": Impl("module", "/lib/modules/ila_ref.ko", "ila_ref",
                   "ours: kernel/ila, module ila_ref", "/proc/net/ila_ref_stats"),
    "intree": Impl("intree", "/lib/modules/ila.ko", "ila",
                   "Linux 6.1 net/ipv6/ila, module ila", None),
}


def parse_impls(text: str) -> list[Impl]:
    """IMPL=module[,other]; an unknown name is an error naming the valid ones."""
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in IMPLS]
    if unknown or not names:
        valid = ", ".join(IMPLS)
        raise ValueError(f"unknown IMPL {','.join(unknown) or repr(text)}: valid are {valid}")
    return [IMPLS[n] for n in names]
