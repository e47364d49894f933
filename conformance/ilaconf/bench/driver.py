"""make bench: what ILA costs on the data path and at scale, in one boot.

Data path. Every workload runs two flows in one ila-bench process, in
alternating 20 ms slices: one to a destination on a plain route, one to a
destination on an ILA route, with the same prefix lengths and next hops.
Whatever slows the host down slows both alike; each run gives one
ILA/plain ratio, and the result is the median and min-max over the rounds
(which flow starts alternates from round to round). This is done for our
module, for the in-tree module's routes (adj-transport, patched), for the
in-tree mapping table on the receive side and for the floor, ours with the
translation compiled out (IMPLS_BENCHED), loaded in turn, and for any
external implementation IMPL=external:DIR names (a column each).
Absolute rates go to out/bench.json but are not the result: TCG and a noisy
host move them.

    bench-a (client)            veth            bench-b (server)
    va fd00:be::a  <-------------------------->  vb fd00:be::b
       3333:0:0:1:7777:0:3:0 (plain flow)           lo 3333:0:0:1:7777:0:1:0 (plain)
       3333:0:0:1:7777:0:4:0 (ILA flow)             lo 3333:0:0:1:7777:0:2:0 (ILA)

As in the seed, both ends use SIR addresses, and on the ILA flow every
packet is translated twice: on output at its sender to the peer's locator
(2001:0:0:2 for bench-b, 2001:0:0:3 for bench-a), and back to the SIR on
input at its receiver, whose socket only ever sees SIR addresses. A
request/response is four translations. The virtio workloads send from the
root namespace through eth0 to this process, which counts the datagrams or
echoes them from the SIR address (one translation per transaction: the
host translates nothing).

Translation. ila_ref_bench.ko times ila_ref_xlat() against an IPv6 route
lookup in the same module load. Scale: ila-nl installs, dumps and deletes
N plain and N ILA routes, and ila_ref_bench times lookups cycling over them
(the median of 3 loads). make bench-profile runs perf in the guest instead.
"""

import contextlib
import fnmatch
import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from ipaddress import IPv6Address

from .. import topology
from ..impls import IMPLS, Impl
from ..oracle import packets
from ..running.guest import GuestError
from ..running.session import Paths, Session, boot, ip_argv
from . import report as benchreport

BENCH = "/bin/ila-bench"
NL = "/bin/ila-nl"
BENCH_MODULE = "/lib/modules/ila_ref_bench.ko"
NS_A, NS_B = "bench-a", "bench-b"
MAC_A, MAC_B = "02:00:00:be:00:0a", "02:00:00:be:00:0b"
LINK_A, LINK_B = "fd00:be::a", "fd00:be::b"
SIR_LOCATOR = "3333:0:0:1"
LOCATOR_B, LOCATOR_A = "2001:0:0:2", "2001:0:0:3"  # bench-b's (and the host's), bench-a's
# SIR addresses: (plain flow, ILA flow)
SERVER = ("3333:0:0:1:7777:0:1:0", "3333:0:0:1:7777:0:2:0")  # bench-b, on lo
CLIENT = ("3333:0:0:1:7777:0:3:0", "3333:0:0:1:7777:0:4:0")  # bench-a, on va
HOST = ("3333:0:0:1:7777:0:5:0", "3333:0:0:1:7777:0:6:0")  # this process, through eth0
SERVER_PLAIN2 = "3333:0:0:1:7777:0:7:0"  # bench-b: the plain/plain control's second flow
PORT = 9000
SCALE_BASE = "3333:0:0:1:6666:1:0:0"  # ila-nl bulk counts up from here
# The in-tree module as patched: unpatched, adj-transport gets every
# checksum wrong (CONFORMANCE.md), and costs the same.
IMPLS_BENCHED = benchreport.IMPLS_BENCHED  # ours, in-tree routes, in-tree mapping table, floor
# What any lwtunnel ILA module costs at the least: ours built with
# CONFIG_ILA_REF_BENCH_FLOOR, whose output hook hands the packet on untranslated
# (to the SIR address, which the receiver holds). Only make bench has it.
FLOOR = Impl("floor", "/lib/modules/floor/ila_ref.ko", "ila_ref",
             "ours with the translation compiled out: the lwtunnel output redirect alone",
             "/proc/net/ila_ref_stats")


@dataclass(frozen=True)
class Workload:
    path: str  # veth or virtio
    mode: str  # an ila-bench mode
    size: int  # payload bytes
    # A diagnostic: with early demux off, the plain flow also pays the route
    # lookup on input that the ILA flow's translated destination costs it.
    early_demux: bool = True
    # A control: the second flow on a plain route too, so the ratio shows
    # what the method itself gives when nothing differs (ideally 1.000).
    plain_vs_plain: bool = False

    @property
    def name(self) -> str:
        return (f"{self.path} {self.mode} {self.size}B" + ("" if self.early_demux else " no-demux")
                + (" plain/plain" if self.plain_vs_plain else ""))

    @property
    def unit(self) -> str:
        return {"udp-pps": "pps", "tcp-stream": "msg/s"}.get(self.mode, "tps")


WORKLOADS = [
    *(Workload("veth", m, s) for m in ("udp-pps", "udp-rr", "tcp-stream", "tcp-rr")
      for s in (64, 1400)),
    *(Workload("virtio", m, s) for m in ("udp-pps", "udp-rr") for s in (64, 1400)),
    *(Workload("veth", m, 64, early_demux=False) for m in ("udp-rr", "tcp-rr")),
    *(Workload("veth", m, 64, plain_vs_plain=True) for m in ("udp-pps", "tcp-rr")),
]
EARLY_DEMUX = ("/proc/sys/net/ipv4/tcp_early_demux", "/proc/sys/net/ipv4/udp_early_demux")


@dataclass
class Settings:
    rounds: int = 7  # pairs per implementation and workload
    seconds: float = 0.5
    scale_counts: tuple[int, ...] = (1000, 10_000, 100_000)
    iterations: int = 200_000  # per ila_ref_bench measurement
    quick: bool = False
    profile: bool = False  # make bench-profile: perf in the guest instead
    # BENCH_ONLY: the workloads whose names match one of these globs, and no
    # scale figures: a focused run while working on one row (partial).
    only: tuple[str, ...] = ()
    # The columns: IMPLS_BENCHED, then the externals IMPL=external:DIR built.
    externals: tuple[Impl, ...] = ()

    @property
    def columns(self) -> list[str]:
        return [*IMPLS_BENCHED, *(e.name for e in self.externals)]

    @property
    def workloads(self) -> list[Workload]:
        return [w for w in WORKLOADS
                if not self.only or any(fnmatch.fnmatchcase(w.name, g) for g in self.only)]


@dataclass
class Figures:
    rates: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # workload -> config
    lost: dict[str, dict[str, int]] = field(default_factory=dict)
    delivered: dict[str, dict[str, int]] = field(default_factory=dict)  # virtio: host's count
    xlat: list[dict[str, float]] = field(default_factory=list)
    scale: list[dict[str, object]] = field(default_factory=list)


class BenchError(RuntimeError):
    pass


def ila_addr(locator: str, sir: str) -> str:
    """The SIR address with a locator written in, as an output route does."""
    return str(IPv6Address(IPv6Address(locator + "::").packed[:8] + IPv6Address(sir).packed[8:]))


def plain_routes() -> list[str]:
    """The plain flow's routes, the same for every implementation."""
    return [f"ip -n {NS_A} -6 route add {SERVER[0]}/128 via {LINK_B} dev va src {CLIENT[0]}",
            f"ip -n {NS_A} -6 route add {SERVER_PLAIN2}/128 via {LINK_B} dev va src {CLIENT[0]}",
            f"ip -n {NS_B} -6 route add {CLIENT[0]}/128 via {LINK_A} dev vb",
            f"ip -6 route add {HOST[0]}/128 via {topology.HOST_ADDR} dev eth0"]


def ila_routes(impl: Impl) -> list[str]:
    """The ILA flow's routes in impl's configuration: output and input, both ways.

    A mapping-table column translates on input with a mapping instead of the
    input route, in a PRE_ROUTING hook, so before early demux; its output
    routes are the in-tree module's, with the same options.
    """
    if impl.interface == "mapping":
        inputs = [f"ip -n {ns} ila add loc_match {loc} loc {SIR_LOCATOR} {impl.mapping_options}"
                  for ns, loc in ((NS_B, LOCATOR_B), (NS_A, LOCATOR_A))]
        outputs = [re.sub(r"(encap ila \S+)", rf"\1 {impl.mapping_options}", line)
                   for line in ila_routes(IMPLS["module"]) if " local " not in line]
        return outputs + inputs
    lines = [
        f"ip -n {NS_A} -6 route add {SERVER[1]}/128 encap ila {LOCATOR_B} via {LINK_B} dev va "
        f"src {CLIENT[1]}",
        f"ip -n {NS_B} -6 route add table local local {ila_addr(LOCATOR_B, SERVER[1])}/128 "
        f"encap ila {SIR_LOCATOR} dev lo",
        f"ip -n {NS_B} -6 route add {CLIENT[1]}/128 encap ila {LOCATOR_A} via {LINK_A} dev vb",
        f"ip -n {NS_A} -6 route add table local local {ila_addr(LOCATOR_A, CLIENT[1])}/128 "
        f"encap ila {SIR_LOCATOR} dev lo",
        f"ip -6 route add {HOST[1]}/128 encap ila {LOCATOR_B} via {topology.HOST_ADDR} dev eth0",
    ]
    return [impl.route(line) for line in lines]


def unroute(line: str) -> str:
    """The 'ip route del' of an 'ip route add' line: its prefix and table
    (the 'ip ila del' of an 'ip ila add': its loc_match and loc)."""
    words = line.split()
    at = words.index("add")
    if words[at - 1] == "ila":
        return " ".join([*words[:at], "del", *words[at + 1:at + 5]])
    key = words[at + 1:at + (5 if words[at + 1] == "table" else 2)]  # [table local local] PREFIX
    return " ".join([*words[:at], "del", *key])


def veth_setup() -> list[str]:
    return [
        f"ip netns add {NS_A}", f"ip netns add {NS_B}",
        f"ip link add va address {MAC_A} netns {NS_A} type veth "
        f"peer name vb address {MAC_B} netns {NS_B}",
        *(f"ip -n {ns} link set lo up" for ns in (NS_A, NS_B)),
        f"ip -n {NS_A} link set va up", f"ip -n {NS_B} link set vb up",
        f"ip -n {NS_A} -6 addr add {LINK_A}/64 dev va nodad",
        f"ip -n {NS_B} -6 addr add {LINK_B}/64 dev vb nodad",
        f"ip -n {NS_A} -6 neigh add {LINK_B} lladdr {MAC_B} dev va nud permanent",
        f"ip -n {NS_B} -6 neigh add {LINK_A} lladdr {MAC_A} dev vb nud permanent",
        *(f"ip -n {NS_B} -6 addr add {addr}/128 dev lo nodad" for addr in (*SERVER, SERVER_PLAIN2)),
        *(f"ip -n {NS_A} -6 addr add {addr}/128 dev va nodad" for addr in CLIENT),
        *plain_routes(),
    ]


def ones_adjust(csum: int, old: bytes, new: bytes) -> int:
    """A checksum field after old 16-bit words are replaced by new (RFC 1624, eqn. 3)."""
    total = ~csum & 0xFFFF
    for i in range(0, len(old), 2):
        total += (~int.from_bytes(old[i:i + 2], "big") & 0xFFFF) + int.from_bytes(new[i:i + 2], "big")
    return ~packets.ones_fold(total) & 0xFFFF or 0xFFFF  # UDP sends a zero as 0xffff


class Peer:
    """The host end of the virtio workloads: counts the guest's datagrams to
    either HOST address (under any locator) and, when echoing, answers each
    from its SIR address, as a peer whose input route restored it would."""

    def __init__(self) -> None:
        self.echo = False
        self.count = 0
        self.iids = {IPv6Address(a).packed[8:] for a in HOST}
        self.sir_locator = IPv6Address(SIR_LOCATOR + "::").packed[:8]
        self.port = PORT.to_bytes(2, "big")

    def answer(self, f: bytes) -> bytes | None:
        if (len(f) < 62 or f[12:14] != b"\x86\xdd" or f[20] != 17 or f[56:58] != self.port
                or f[46:54] not in self.iids):
            return None
        self.count += 1
        if not self.echo:
            return None
        csum = int.from_bytes(f[60:62], "big")
        if csum:  # the pseudo-header's source is now the SIR, its destination the sender
            csum = ones_adjust(csum, f[38:46], self.sir_locator)
        return (f[6:12] + f[0:6] + f[12:21] + b"\x40" + self.sir_locator + f[46:54] + f[22:38]
                + f[56:58] + f[54:56] + f[58:60] + csum.to_bytes(2, "big") + f[62:])


RESULT = re.compile(r"^(\S+) flow=([12]) size=(\d+) seconds=([\d.]+) ops=(\d+) rate=([\d.]+) "
                    r"lost=(\d+)$")
MICRO = re.compile(r"ila_ref_bench: calls=(\d+) xlat_total_ns=(\d+) lookup_total_ns=(\d+) "
                   r"lookup_count=(\d+)")


class Bench:
    def __init__(self, session: Session, settings: Settings, log: Callable[[str], None]) -> None:
        self.s, self.settings, self.log = session, settings, log
        self.impls = {**IMPLS, FLOOR.name: FLOOR, **{e.name: e for e in settings.externals}}
        self.fig = Figures()
        self.peer = Peer()
        self.demux: bool | None = None  # as the namespaces have it; None: never set

    def ip(self, line: str) -> list[str]:
        return self.exec(ip_argv(line))

    @contextlib.contextmanager
    def routes(self, lines: list[str]) -> Iterator[None]:
        """ip route add lines installed while the block runs, deleted after it."""
        done: list[str] = []
        try:
            for line in lines:
                self.ip(line)
                done.append(line)
            yield
        finally:
            for line in reversed(done):
                self.ip(unroute(line))

    def exec(self, argv: list[str], timeout: float = 60) -> list[str]:
        reply = self.s.guest.run("exec", argv, timeout=timeout)
        if reply.rc != 0:
            raise BenchError(f"'{' '.join(argv)}' failed ({reply.rc}): {' | '.join(reply.out)}")
        return reply.out

    def use(self, name: str) -> None:
        """Make the column name's implementation the loaded one."""
        if self.s.impl and self.s.impl.name == name:
            return
        impl = self.impls[name]
        if self.s.impl and self.s.impl.module_path != impl.module_path:
            self.unload()
        why = self.s.load(impl)
        if why:
            raise BenchError(f"{name}: {why}")

    def unload(self) -> None:
        why = self.s.unload()
        if why:
            raise BenchError(why)

    def workload(self, w: Workload, impl: str, first: int) -> None:
        """One run of both flows: plain (flow 1) and ILA (flow 2)."""
        ends = [f"client-ns={NS_A}", f"server-ns={NS_B}"] if w.path == "veth" else ["server-ns=none"]
        dst = HOST if w.path == "virtio" else (SERVER[0], SERVER_PLAIN2) if w.plain_vs_plain \
            else SERVER
        argv = [BENCH, w.mode, f"dst={dst[0]}", f"dst2={dst[1]}", f"port={PORT}", f"size={w.size}",
                f"seconds={self.settings.seconds}", f"first={first}", *ends]
        self.peer.echo, self.peer.count = w.mode == "udp-rr", 0
        self.early_demux(w.early_demux)
        out = self.exec(argv, timeout=60 + 40 * self.settings.seconds)
        flows = [m for line in out if (m := RESULT.match(line))]
        if len(flows) != 2 or any(int(m.group(5)) == 0 for m in flows):
            raise BenchError(f"{' '.join(argv)}: no operations on a flow: {' | '.join(out)}")
        for m, key in zip(flows, (f"plain/{impl}", impl)):
            self.fig.rates.setdefault(w.name, {}).setdefault(key, []).append(float(m.group(6)))
            lost = self.fig.lost.setdefault(w.name, {})
            lost[key] = lost.get(key, 0) + int(m.group(7))
        if w.path == "virtio":
            got = self.fig.delivered.setdefault(w.name, {})
            got[impl] = got.get(impl, 0) + self.peer.count  # both flows

    def early_demux(self, on: bool) -> None:
        """The per-netns sysctls (net.ipv4.* also rule IPv6) in both namespaces."""
        if self.demux == on:
            return
        self.demux = on
        for ns in (NS_A, NS_B):
            for path in EARLY_DEMUX:
                self.exec([BENCH, "write", ns, path, "1" if on else "0"])

    def micro(self, count: int, base: str) -> dict[str, float]:
        """One ila_ref_bench load: ns per translation and per lookup over count routes."""
        self.s.guest.run("dmesg", [])
        reply = self.s.guest.run("insmod", [BENCH_MODULE, f"iterations={self.settings.iterations}",
                                            f"lookup_base={base}", f"lookup_count={count}"],
                                 timeout=600)
        log = self.s.guest.run("dmesg", []).out
        self.s.guest.run("rmmod", ["ila_ref_bench"])
        m = next((m for line in log if (m := MICRO.search(line))), None)
        if reply.rc != 0 or not m:
            raise BenchError(f"insmod {BENCH_MODULE}: {' | '.join(reply.out)}\n" + "\n".join(log[-10:]))
        calls = int(m.group(1))
        return {"xlat_ns": int(m.group(2)) / calls, "lookup_ns": int(m.group(3)) / calls}

    def rounds(self) -> None:
        """Each round loads each implementation in turn (A B, then B A) and
        runs every workload once under it, with its ILA routes."""
        for r in range(self.settings.rounds):
            columns = self.settings.columns
            order = columns if r % 2 == 0 else columns[::-1]
            for impl in order:
                self.use(impl)
                with self.routes(ila_routes(self.impls[impl])):
                    for w in self.settings.workloads:
                        self.workload(w, impl, first=1 + r % 2)
            self.log(f"bench: round {r + 1} of {self.settings.rounds} done ({', '.join(order)})")
        self.use("module")
        with self.routes([f"ip -6 route add {SCALE_BASE}/128 dev eth0"]):
            for _ in range(self.settings.rounds):
                self.fig.xlat.append(self.micro(1, SCALE_BASE))

    def scale(self) -> None:
        self.use("module")
        for n in () if self.settings.only else self.settings.scale_counts:
            row: dict[str, object] = {"routes": n}
            for kind in ("plain", "ila"):
                loc = ["locator", LOCATOR_B] if kind == "ila" else []
                timeout = 120 + n / 50
                add = self.exec([NL, "bulk", "add", str(n), SCALE_BASE, "dev", "eth0", *loc],
                                timeout=timeout)
                dump = self.exec([NL, "dump", "6"], timeout=timeout)
                held = next((int(m.group(1)) for line in dump
                             if (m := re.match(r"^routes \d+, ila (\d+), malformed 0", line))), None)
                if held != (n if kind == "ila" else 0):
                    raise BenchError(f"after adding {n} {kind} routes the dump holds {held} ILA "
                                     f"routes: {' | '.join(dump[-3:])}")
                lookup_ns = statistics.median(self.micro(n, SCALE_BASE)["lookup_ns"]
                                              for _ in range(3))
                gone = self.exec([NL, "bulk", "del", str(n), SCALE_BASE, "dev", "eth0"],
                                 timeout=timeout)
                row[kind] = {"add_ms": first_ms(add, "bulk add"), "dump_ms": first_ms(dump, "dump:"),
                             "del_ms": first_ms(gone, "bulk del"), "lookup_ns": lookup_ns}
            self.fig.scale.append(row)
            self.log(f"bench: scale {n} routes done")


PERF = "/bin/perf"
PROFILED = [Workload("veth", "udp-pps", 64), Workload("veth", "tcp-rr", 64)]
SAMPLE = re.compile(r"^\s*([\d.]+)%\s+\[([k.])\]\s+(\S+)")


def shares(report: list[str]) -> dict[str, float]:
    """perf report --sort sym lines -> {symbol: percent of the samples}."""
    return {m.group(3): float(m.group(1)) for line in report if (m := SAMPLE.match(line))}


def profile(bench: "Bench", seconds: float = 5.0) -> list[str]:
    """perf in the guest: where the time of one flow goes, plain or ILA.

    Each flow runs alone under 'perf record -a -e cpu-clock' (a software
    clock: TCG has no PMU): the plain flow and the ILA flow with ours, then
    the ILA flow with the floor (nothing translated). The report gives, per
    workload, the symbols whose share of the samples grew most from the
    plain to the ILA flow, with the floor's share beside them, then each
    flow's top symbols.
    """
    runs = (("plain", "module", SERVER[0]), ("ila", "module", SERVER[1]),
            ("floor", FLOOR.name, SERVER[1]))
    got: dict[str, dict[str, dict[str, float]]] = {w.name: {} for w in PROFILED}
    for flow, impl, dst in runs:
        bench.use(impl)
        with bench.routes(ila_routes(bench.impls[impl])):
            for w in PROFILED:
                data = f"/tmp/perf-{w.mode}-{flow}.data"
                # -N and --kallsyms: ours and the floor are both ila_ref, loaded
                # in turn; symbols cached from one would name the other's code.
                bench.exec([PERF, "record", "-q", "-N", "-a", "-F", "10000", "-e", "cpu-clock",
                            "-o", data,
                            "--", BENCH, w.mode, f"dst={dst}", f"port={PORT}", f"size={w.size}",
                            f"seconds={seconds}", f"client-ns={NS_A}", f"server-ns={NS_B}"],
                           timeout=120)
                got[w.name][flow] = shares(bench.exec([PERF, "report", "-i", data, "--stdio",
                                                       "--kallsyms", "/proc/kallsyms", "--sort",
                                                       "sym", "--percent-limit", "0", "-q"],
                                                      timeout=120))
    out: list[str] = []
    for w in PROFILED:
        plain, ila, floor = (got[w.name][f] for f in ("plain", "ila", "floor"))
        grew = sorted(set(plain) | set(ila), key=lambda k: plain.get(k, 0) - ila.get(k, 0))
        ours = sum(v for k, v in ila.items() if k.startswith(("ila_ref", "lwtunnel")))
        out += [f"## {w.name}: symbols whose share grew most, plain flow -> ILA flow (module), "
                "and the floor's ILA flow",
                f"{'symbol':<36}{'plain':>8}{'ILA':>8}{'floor':>8}",
                *(f"{k:<36}{plain.get(k, 0):>7.2f}%{ila.get(k, 0):>7.2f}%{floor.get(k, 0):>7.2f}%"
                  for k in grew[:12]),
                f"ila_ref_* and lwtunnel_* together: {ours:.2f}% of the ILA flow's samples", ""]
        for flow in ("plain", "ila", "floor"):
            top = sorted(got[w.name][flow].items(), key=lambda kv: -kv[1])[:15]
            out += [f"## {w.name}: {flow} flow alone, top symbols",
                    *(f"{v:>7.2f}%  {k}" for k, v in top), ""]
    return out


def first_ms(lines: list[str], prefix: str) -> float:
    for line in lines:
        m = re.match(rf"^{re.escape(prefix)}.*?: (\d+) ms", line) or \
            re.match(rf"^{re.escape(prefix)} (\d+) ms", line)
        if m:
            return float(m.group(1))
    raise BenchError(f"no '{prefix} ... ms' line in: {' | '.join(lines)}")


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(fig: Figures, settings: Settings, release: str) -> dict[str, object]:
    workloads = []
    for w in settings.workloads:
        rates = fig.rates[w.name]
        ratios = {impl: [i / p for i, p in zip(rates[impl], rates[f"plain/{impl}"])]
                  for impl in settings.columns}
        workloads.append({
            "name": w.name, "path": w.path, "mode": w.mode, "size": w.size, "unit": w.unit,
            "rates": rates, "lost": fig.lost.get(w.name, {}),
            **({"host_received": fig.delivered[w.name]} if w.name in fig.delivered else {}),
            "ratio": {impl: {**spread(r), "rounds": r} for impl, r in ratios.items()},
        })
    per_call = [x["xlat_ns"] / x["lookup_ns"] for x in fig.xlat]
    return {
        "kernel": release, "rounds": settings.rounds, "seconds": settings.seconds,
        "quick": settings.quick, "only": list(settings.only),
        "load_generator": "guest-init/ila-bench.c (one process, both ends)",
        "workloads": workloads,
        "translation": {
            "xlat_ns": spread([x["xlat_ns"] for x in fig.xlat]),
            "lookup_ns": spread([x["lookup_ns"] for x in fig.xlat]),
            "xlat_per_lookup": {**spread(per_call), "rounds": per_call},
        },
        "scale": fig.scale,
    }


def run(paths: Paths, settings: Settings, accel: str) -> int:
    out = paths.out
    result = None
    guest = None
    t0 = time.monotonic()
    try:
        # Under TCG the timer interrupts lag, so the clocksource watchdog
        # finds the TSC "unstable" against jiffies and falls back to a 4 ms
        # clock. QEMU's TSC follows the host's clock: trust it.
        guest, session = boot(paths, accel, "bench", memory="1G", cmdline="tsc=reliable",
                              dump_dir=out / "pcaps")
        bench = Bench(session, settings, print)
        for line in veth_setup():
            bench.ip(line)
        if settings.profile:
            report = profile(bench)
            (out / "bench-profile.txt").write_text("\n".join(report) + "\n")
            print("\n".join(report))
            print(f"bench: wrote {out / 'bench-profile.txt'}")
            return 0
        with guest.serving_frames(bench.peer.answer):
            bench.rounds()
            bench.scale()
        result = summarize(bench.fig, settings, guest.release)
    except (GuestError, BenchError) as e:
        print(f"bench: FAILED: {e}")
        return 1
    finally:
        if guest:
            guest.close()
    result["wall_s"] = round(time.monotonic() - t0, 1)
    result["measured"] = time.strftime("%Y-%m-%d", time.gmtime())
    (out / "bench.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(benchreport.table(result)))
    problem = benchreport.plot(result, out / "bench.svg")
    print(f"bench: {problem}" if problem else f"bench: wrote {out / 'bench.json'} and {out / 'bench.svg'}")
    udp = next((w for w in result["workloads"] if w["name"] == "veth udp-pps 64B"), None)
    if udp:
        print(f"ila/plain ratio (module, udp pps): {udp['ratio']['module']['median']:.3f}")
    return 1 if problem else 0
