"""The kselftest collection's case bundle: every case of the catalog, per
column, in the form the C runner (kselftest/runner/) reads inside any booted
kernel, with no scapy and no host.

Nothing in it is written by hand. The expected frames are the golden
captures (pcaps/), and a column's declared deviation gets the frames the
oracle builds for it, so the bundle is made anew from the case files, the
deviations and pcaps/ by `make kselftest`, never kept as a second copy.

One file per case id, bundle/<folder>/<name>.case, lines of "key value":

    case tcp/input-syn@gro               the case id, then what the runner needs
    path input                           output, input, forward
    rx eth0                              where the far side sends (input, forward)
    frame 525400123456...                the Ethernet frame it sends, in hex
    layout split=14 gro=1 clone=0        received through a tap as page fragments
    send raw                             output: how the DUT sends (raw, udp, udp4, tcp)
    sock dst=... proto=6 ...             output: the packet's fields (lib/pkt.h)
    mask tcp-window                      kernel-built TCP: the window is the machine's
    flow 12=86dd 30=55550000000200       an AND of byte matches; the flow is any line
    frameset golden                      a named list of expected frames:
    expected 525400...                     one frame, in hex
    fields 0:6:eth.dst 6:6:eth.src ...     its byte ranges, for a diagnostic
    column module                        one block per column, to "end"
    name tcp_input-syn_at_gro_module       the TAP name
    module ila_ref                         the column's module, and its rival's
    rival ila
    kernel >=6.1.183                       only for kernels the range names
    skip REASON                            or what follows:
    setup ip -6 route add ...              the set-up and teardown command lines
    teardown ip -6 route del ...
    stats translated_input=1               counter deltas (all others stay); none: unchecked
    inject-error Invalid argument          the send must fail with this message
    expect golden                          the frames the requirement expects
    deviation ILA-OUT-TCP-1: bug: ...      a declared deviation, observed exactly:
    dev-route-error RTNETLINK answers: ...   the route refused with this, or
    dev-inject-error ...                     the send failing with this, and
    dev-expect dev1                          these frames
    clone-deviation ILA-SHARED-1: ...      the packet socket's copy is written
    end
"""

import hashlib
import re
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

from scapy.layers.inet6 import IPv6, in6_chksum
from scapy.layers.l2 import Ether

from .. import impls, topology
from ..catalog import cases as catalog
from ..catalog import control, deviations, layouts
from ..catalog.cases import Case
from ..impls import Impl
from ..oracle import compare, expect, golden, packets
from ..reports import pcapng
from ..running import applies, session
from . import steps as control_steps

FORMAT = "ila-kselftest-bundle 1"
ETH = 14
TCP_CSUM = ETH + 40 + 16


class BundleError(ValueError):
    """A case the bundle cannot express; the message names it."""


def sanitize(text: str) -> str:
    """A TAP name in [A-Za-z0-9_-] (KernelCI slugifies anything else)."""
    text = text.replace("/", "_").replace("@", "_at_").replace("+", "_plus_")
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def tap_name(case_id: str, column: str) -> str:
    return f"{sanitize(case_id)}_{sanitize(column)}"


def one_line(text: str) -> str:
    return " ".join(str(text).split())


@dataclass
class Frames:
    """The named frame lists of one case, shared by its columns."""
    sets: dict[str, list[bytes]] = field(default_factory=dict)

    def name(self, frames: list[bytes], hint: str) -> str:
        for name, have in self.sets.items():
            if have == frames:
                return name
        digest = hashlib.sha256(b"".join(frames)).hexdigest()[:8]
        name = hint if hint not in self.sets else f"{hint}-{digest}"
        self.sets[name] = frames
        return name

    def lines(self) -> list[str]:
        out = []
        for name, frames in self.sets.items():
            out.append(f"frameset {name} {len(frames)}")
            for f in frames:
                out.append(f"expected {f.hex()}")
                out.append("fields " + " ".join(f"{o}:{n}:{w}" for o, n, w in
                                                 compare.field_map(f)))
        return out


def flow_lines(case: Case) -> list[str]:
    """session.in_flow as byte matches: the case's own frames, told from the
    DUT's ND and MLD noise."""
    if case.send == "udp4":
        dst4 = IPv4Address(str(case.packet["dst4"])).packed.hex()
        return [f"flow 12=0800 30={dst4}", f"flow 12=0806 38={dst4}"]
    if case.tunnel:  # its outer packets, to its remote, carrying the case's packet
        inner = IPv6Address(str(case.packet["dst"])).packed[8:]
        return [f"flow 12=86dd 46={IPv6Address(case.tunnel.remote).packed[8:].hex()} "
                f"{session.tunnel_iid_at(case)}={inner.hex()}"]
    iid = IPv6Address(str(case.packet["dst"])).packed[8:]
    at = ETH + (8 if case.path == "input" else 24) + 8  # the iid of the source, or destination
    errors = [f"flow 12=86dd 20=3a {session.ERROR_TYPE_AT}={t:02x} "
              f"{session.QUOTED_IID_AT}={iid.hex()}" for t in range(1, 5)] \
        if case.outcome == "error" else []
    if case.csum.startswith("neutral"):  # the C-bit and the last 16 bits change
        return [*errors, f"flow 12=86dd {at + 1}={iid[1:6].hex()}"]
    return [*errors, f"flow 12=86dd {at}={iid.hex()}"]


def send_lines(case: Case) -> list[str]:
    if case.path == "output":
        return [f"nic {case.nic}", f"send {case.send}",
                "sock " + " ".join(packets.injector_args(case.packet))]
    n = topology.NICS[topology.nic_index(case.rx_nic)]
    frame = packets.ether(packets.sent_packet(case.packet), n.host_mac, n.guest_mac)
    out = [f"nic {case.nic}", f"rx {case.rx_nic}", f"frame {frame.hex()}"]
    if case.layout != "linear":
        out.append("layout " + " ".join(layouts.rx_args(case.layout, case.packet)))
    return out


def tcp_moved(frames: list[bytes], alt: Case) -> list[bytes]:
    """Kernel-built TCP under a deviation: the golden frames (right for the
    requirement) with the checksum the deviation makes of them. The oracle
    cannot build them itself: the kernel chooses the segments."""
    if alt.outcome == "dropped":
        return []
    if alt.outcome != "translated" or alt.csum not in ("adjusted", "untouched", *expect.MOVED):
        raise BundleError(f"{alt.id}: no kselftest form for a kernel-built TCP deviation "
                          f"with outcome {alt.outcome}, csum {alt.csum}")
    out = []
    for f in frames:
        raw = bytearray(f)
        raw[ETH + 24:ETH + 40] = IPv6Address(str(alt.expect_dst)).packed
        ip = Ether(bytes(raw))[IPv6]
        l4 = bytes(ip.payload)
        if alt.csum == "untouched" or alt.csum in expect.MOVED:
            ip.dst = str(alt.packet["dst"])  # the checksum the socket computed
        value = in6_chksum(ip.nh, ip, l4[:16] + b"\0\0" + l4[18:])
        if alt.csum in expect.MOVED:
            value = packets.moved(value, *expect.moved_locators(alt))
        raw[TCP_CSUM:TCP_CSUM + 2] = value.to_bytes(2, "big")
        out.append(bytes(raw))
    return out


def golden_frames(case: Case, golden_dir: Path) -> list[bytes] | str:
    """The golden capture's frames, or why there are none to judge by."""
    path = golden.golden_file(golden_dir, case)
    if not path.exists():
        return (f"no golden capture {path.as_posix()}: bless it with make golden "
                f"CASE={case.golden_id}")
    frames = pcapng.read(path)
    if not frames and not pcapng.section_comment(path):
        return f"golden {path.as_posix()} holds no frame and no comment saying why"
    return frames


# The skip of a case whose deviation declares a kernel report (a WARN): under
# panic_on_warn it would end the run, so make conformance judges it alone.
WARNS_KERNEL = ("declared to warn the kernel, which under panic_on_warn ends the run "
                "(make conformance judges it)")


def packet_block(case: Case, impl: Impl, frames: Frames,
                 want: "list[bytes] | str") -> list[str]:
    """One column's lines for a packet case, to 'end'."""
    why = applies.skip_reason(impl, case)
    if why:
        return [f"skip {one_line(why)}"]
    dev = case.deviations.get(impl.name)
    if dev and dev.kernel_log:
        return [f"skip {WARNS_KERNEL}: {one_line(dev.label)}"]
    setup, teardown = applies.case_lines(impl, case)
    out = [f"setup {line}" for line in setup] + [f"teardown {line}" for line in teardown]
    if case.stats is not None and impl.stats_file:
        out.append("stats " + " ".join(f"{k}={v}" for k, v in sorted(case.stats.items())))
    if case.inject_error is not None:
        out.append(f"inject-error {case.inject_error}")
    if isinstance(want, str):
        out.append(f"expect-missing {one_line(want)}")
    else:
        out.append(f"expect {frames.name(want, 'golden')}")
    if dev:
        out.append(f"deviation {one_line(dev.label)}")
        if dev.route_error:
            out.append(f"dev-route-error {dev.route_error}")
        else:
            alt = expect.as_deviation(case, dev)
            if alt.inject_error is not None:
                out.append(f"dev-inject-error {alt.inject_error}")
            built = expect.expected_frames(alt)
            if built is None:  # kernel-built TCP
                if isinstance(want, str):
                    raise BundleError(f"{case.id}: {want}")
                built = tcp_moved(want, alt)
            out.append(f"dev-expect {frames.name(built, 'dev')}")
    cdev = case.clone_deviations.get(impl.name)
    if cdev:
        out.append(f"clone-deviation {one_line(cdev.label)}")
    return out


def packet_head(case: Case) -> list[str]:
    return [f"case {case.id}", f"verifies {one_line(case.verifies)}",
            f"requirements {' '.join(case.requirements)}", f"path {case.path}",
            *send_lines(case), *(["mask tcp-window"] if case.send == "tcp" else []),
            *flow_lines(case)]


@dataclass
class Version:
    """A range of kernel versions in which the deviations files say the same."""
    low: str  # ">=6.1.183", or "" for no lower bound
    high: str  # "<6.1.183", or ""
    sample: str  # a version in the range, to evaluate the rules with

    def condition(self) -> str:
        return " ".join(x for x in (self.low, self.high) if x)


def version_ranges(files: list[tuple[Path, str | None]]) -> list[Version]:
    """The ranges the deviations files' 'kernel' rules cut the versions into."""
    bounds = set()
    for f, col in files:
        for e in deviations.load_column_file(f, col):
            if e.kernel:
                m = deviations.VERSION_RULE.match(e.kernel)
                if m.group(1) not in ("<", ">="):
                    raise BundleError(f"{f}: kernel = {e.kernel!r}: the kselftest bundle "
                                      "takes '<V' and '>=V' rules")
                bounds.add(deviations.version_tuple(m.group(2)))
    edges = sorted(bounds)
    text = [".".join(map(str, b)) for b in edges]
    out = [Version("", f"<{text[0]}" if text else "", "0")]
    for i, t in enumerate(text):
        out.append(Version(f">={t}", f"<{text[i + 1]}" if i + 1 < len(text) else "", t))
    return out


def case_file(cid: str) -> str:
    folder, _, rest = cid.partition("/")
    return f"{folder}/{sanitize(rest)}.case"


def write(out: Path, cases_dir: Path, golden_dir: Path, files: list[tuple[Path, str | None]],
          fixed: set[str], columns: list[Impl], pattern: str = "*") -> dict[tuple[str, str], str]:
    """Write bundle/<folder>/<case>.case for every case (of CASE= globs); returns
    the TAP name of every (case id, column)."""
    ranges = version_ranges(files)
    catalogs = [catalog.discover(cases_dir, pattern, files, fixed, r.sample) for r in ranges]
    names: dict[tuple[str, str], str] = {}
    out.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(catalogs[0]):
        frames = Frames()
        if isinstance(case, control.ControlCase):
            head = control_steps.head(case)
        else:
            head = packet_head(case)
            want = golden_frames(case, golden_dir)
        body: list[str] = []
        for impl in columns:
            name = tap_name(case.id, impl.name)
            if name in names.values():
                raise BundleError(f"two results would be named {name}")
            names[(case.id, impl.name)] = name
            blocks = []
            for r, cat in zip(ranges, catalogs):
                variant = cat[i]
                lines = (control_steps.block(variant, impl) if isinstance(variant, control.ControlCase)
                         else packet_block(variant, impl, frames, want))
                if blocks and blocks[-1][1] == lines:
                    prev = blocks[-1][0]
                    blocks[-1] = (Version(prev.low, r.high, prev.sample), lines)
                else:
                    blocks.append((r, lines))
            for r, lines in blocks:
                cond = [f"kernel {r.condition()}"] if len(blocks) > 1 and r.condition() else []
                body += [f"column {impl.name}", f"name {name}", f"module {impl.module_name}",
                         f"rival {impls.rival(impl).module_name}", *cond, *lines, "end"]
        path = out / case_file(case.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join([FORMAT, *head, *frames.lines(), *body]) + "\n")
    return names


def columns_for_bundle() -> list[Impl]:
    """Every column the catalog knows (externals and mutants run as 'module')."""
    return list(impls.IMPLS.values())


TOPOLOGY_FORMAT = "ila-kselftest-topology 1"


def topology_lines() -> list[str]:
    """bundle/topology: the NICs (the veth pairs that stand for QEMU's) and
    the commands that set the DUT up, from topology.py."""
    out = [TOPOLOGY_FORMAT]
    for n in topology.NICS:
        out.append(f"nic {n.dev} {n.guest_mac} {n.host_mac} {n.guest_addr} {n.host_addr} "
                   f"tx-csum={int(n.tx_csum)} pads={int(n.pads)}")
    for verb, args in topology.setup_steps():
        if verb == "exec":
            args = ["ip" if args[0] == topology.IP else args[0], *args[1:]]
        out.append(" ".join([verb, *args]))
    return out
