"""Run cases against implementations: one boot per implementation, all its cases in turn.

For each case: install its routes with the guest's real iproute2, send the
packet (the guest's injector on the output path, the host otherwise), fence
the capture, remove the routes, then judge the frames against the oracle and
the golden capture.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, in6_chksum
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from . import compare, control, layouts, packets, pcapng, topology
from .cases import ROUTE_TYPES, Case
from .guest import Guest, GuestError
from .impls import IMPLS, Impl, rival
from .report import Reporter, Result

INJECT = "/bin/ila-inject"
RX = "/bin/ila-rx"
# A formatted LUID identifier, which every implementation's defaults accept.
PROBE_ROUTE = "3333:0:0:1:2000:0:ffff:0/128"
ETH_IPV6, ETH_IPV4, ETH_ARP = b"\x86\xdd", b"\x08\x00", b"\x08\x06"


@dataclass
class Paths:
    kernel: Path
    initrd: Path
    out: Path  # out/
    golden: Path  # pcaps/
    # The debug kernel's socket buffers are sized differently, so the window
    # its TCP advertises differs from the default kernel's golden captures.
    debug_kernel: bool = False


def golden_file(paths: Paths, case: Case) -> Path:
    return paths.golden / f"{getattr(case, 'golden_id', case.id)}.pcapng"


def ip_argv(line: str) -> list[str]:
    words = line.split()
    if not words or words[0] != "ip":
        raise ValueError(f"route lines must be ip commands, got {line!r}")
    return [topology.IP, *words[1:]]


def is_mark(seq: int):
    """The guest's end-of-case datagram: UDP to the marker port, 'ila-mark N'."""
    want = f"ila-mark {seq}".encode()

    def check(frame: bytes) -> bool:
        return (frame[12:14] == ETH_IPV6 and frame[20] == 17
                and int.from_bytes(frame[56:58], "big") == topology.MARK_PORT
                and frame[62:] == want)
    return check


def is_fence_reply(seq: int):
    """The guest's echo reply to the host's end-of-case echo request."""
    def check(frame: bytes) -> bool:
        return (frame[12:14] == ETH_IPV6 and frame[20] == 58 and frame[54] == 129
                and int.from_bytes(frame[58:60], "big") == topology.FENCE_ECHO_ID
                and int.from_bytes(frame[60:62], "big") == seq)
    return check


def fence_request(seq: int) -> bytes:
    return packets.from_host(bytes(IPv6(src=topology.HOST_ADDR, dst=topology.GUEST_ADDR)
                                   / ICMPv6EchoRequest(id=topology.FENCE_ECHO_ID, seq=seq)))


def in_flow(case: Case, frame: bytes) -> bool:
    """The case's own frames, told from the guest's ND/MLD noise and the fences."""
    if case.send == "udp4":
        dst4 = IPv4Address(str(case.packet["dst4"])).packed
        return ((frame[12:14] == ETH_IPV4 and frame[30:34] == dst4)
                or (frame[12:14] == ETH_ARP and frame[38:42] == dst4))
    if frame[12:14] != ETH_IPV6 or len(frame) < 54:
        return False
    iid = IPv6Address(str(case.packet["dst"])).packed[8:]
    if case.csum.startswith("neutral"):  # the C-bit and the last 16 bits change
        return (frame[30:38] if case.path == "input" else frame[46:54])[1:6] == iid[1:6]
    # A local reply comes from the address the packet was delivered to.
    return (frame[30:38] if case.path == "input" else frame[46:54]) == iid


def oracle_spec(case: Case) -> dict[str, object]:
    """The packet the guest's kernel builds for a socket send, as raw fields."""
    spec = dict(case.packet)
    if case.send == "udp":
        spec.update(csum="0" if spec.get("no_check6_tx") else "auto")
    return spec


def frame_on(nic: str, l3: bytes) -> bytes:
    n = topology.NICS[topology.nic_index(nic)]
    return packets.ether(l3, n.guest_mac, n.host_mac)


def expected_frames(case: Case) -> list[bytes] | None:
    """The oracle's frames, or None where only validity can be judged (send = tcp)."""
    if case.outcome == "dropped":
        return []
    if case.send == "tcp":
        return None
    if case.send == "udp4" and str(case.packet["dst4"]) != topology.HOST_ADDR4:
        # Only the host is a static neighbour: any other next hop is
        # resolved first, and the datagram waits for an answer that never comes.
        arp = ARP(op=1, hwsrc=topology.GUEST_MAC, psrc=topology.GUEST_ADDR4,
                  hwdst="00:00:00:00:00:00", pdst=str(case.packet["dst4"]))
        return [bytes(Ether(src=topology.GUEST_MAC, dst="ff:ff:ff:ff:ff:ff") / arp)]
    if case.send == "udp4":
        p = case.packet
        l3 = bytes(IP(src=topology.GUEST_ADDR4, dst=str(p["dst4"]), id=0, flags="DF", ttl=64)
                   / UDP(sport=int(p["sport"]), dport=int(p["dport"]))
                   / Raw(packets.payload(p)))
        return [packets.ether(l3, topology.GUEST_MAC, topology.HOST_MAC)[:12] + ETH_IPV4 + l3]
    spec = oracle_spec(case)
    if case.outcome != "translated":
        l3 = packets.sent_packet(spec)
    elif case.csum == "untouched":
        l3 = packets.untouched_packet(spec, str(case.expect_dst))
    elif case.csum in ("neutral", "neutral-auto"):
        l3 = packets.neutral_packet(spec, str(case.expect_dst), c_bit=case.csum == "neutral")
    elif case.csum == "reversed":
        l3 = packets.reversed_packet(spec, str(case.expect_dst))
    else:
        l3 = packets.translated_packet(spec, str(case.expect_dst))
    if case.path == "input":
        return [packets.local_reply(spec, l3)]
    if case.path == "forward":
        l3 = l3[:7] + bytes([l3[7] - 1]) + l3[8:]  # the hop limit a router decrements
    return [frame_on(case.nic, l3)]


def check_valid(case: Case, frames: list[bytes]) -> tuple[str, list[str]] | None:
    """For kernel-built TCP: every frame translated, its checksum a full recompute's."""
    if not frames:
        return "no frame of the flow was captured", []
    want = IPv6Address(str(case.expect_dst))
    for i, f in enumerate(frames):
        ip = Ether(f)[IPv6]
        if IPv6Address(ip.dst) != want:
            return f"frame {i}: ipv6.dst {ip.dst}, expected {want}", []
        l4 = bytes(ip.payload)
        if case.csum == "reversed":  # check the reversed adjustment of the right value
            ip.dst = str(case.packet["dst"])
            right = in6_chksum(ip.nh, ip, l4[:16] + b"\0\0" + l4[18:])
            rev = packets.reverse_adjusted(right, str(case.packet["dst"]), str(want))
            got = int.from_bytes(l4[16:18], "big")
            if got != rev:
                return (f"frame {i}: tcp.checksum 0x{got:04x}, the reversed adjustment "
                        f"gives 0x{rev:04x}", [])
            continue
        if case.csum == "untouched":  # still the checksum of the original destination
            ip.dst = str(case.packet["dst"])
        if in6_chksum(ip.nh, ip, l4) != 0:  # a correct checksum sums to zero
            fixed = in6_chksum(ip.nh, ip, l4[:16] + b"\0\0" + l4[18:])
            return (f"frame {i}: tcp.checksum 0x{int.from_bytes(l4[16:18], 'big'):04x} is wrong, "
                    f"a full recompute gives 0x{fixed:04x}", [])
    return None


def judge(case: Case, frames: list[bytes], paths: Paths, bless: bool,
          golden_check: bool = True) -> tuple[str, str, list[str]]:
    """(status, detail, diagnostics) from the oracle and the golden capture."""
    expected = expected_frames(case)
    if expected is None:
        bad = check_valid(case, frames)
        if bad:
            return "fail", bad[0], bad[1]
    elif len(frames) != len(expected):
        diag = [f"captured frame {i}: {f.hex()}" for i, f in enumerate(frames)]
        return "fail", f"expected {len(expected)} frame(s) of the flow, captured {len(frames)}", diag
    else:
        for i, (exp, got) in enumerate(zip(expected, frames)):
            lines = compare.diff(exp, got)
            if lines:
                return "fail", f"frame {i} differs from the oracle (scapy, full checksum recompute)", lines
    if not golden_check:  # a deviation: only the oracle knows what it looks like
        return "pass", "", []
    golden = golden_file(paths, case)
    if bless:
        comment = golden_comment(case)
        pcapng.write(golden, frames, [comment] * len(frames),
                     section_comment=None if frames else empty_comment(case))
        return "pass", "", [f"blessed {golden}"]
    if not golden.exists():
        return "fail", (f"no golden capture {golden}: check out/pcaps/<impl>/{case.id}.pcapng in "
                        f"Wireshark, then bless it with: make golden CASE={getattr(case, 'golden_id', case.id)}"), []
    want = pcapng.read(golden)
    if not want and not pcapng.section_comment(golden):
        return "fail", (f"golden {golden} holds no frame and no comment saying why: bless it "
                        f"again with: make golden CASE={case.id}"), []
    if len(want) != len(frames):
        return "fail", f"golden {golden} holds {len(want)} frame(s), captured {len(frames)}", []
    masked = ""
    if case.send == "tcp" and paths.debug_kernel:
        # the window and the checksum over it; the checksum was verified above
        want, frames = [mask_tcp_window(f) for f in want], [mask_tcp_window(f) for f in frames]
        masked = " (TCP window and checksum not compared on the debug kernel)"
    for i, (exp, got) in enumerate(zip(want, frames)):
        lines = compare.diff(exp, got)
        if lines:
            return "fail", f"frame {i} differs from the golden capture {golden}{masked}", lines
    return "pass", "", []


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


def guest_memory(paths: Paths) -> str:
    """256 MiB, with which the golden captures were made (the kernel sizes its
    TCP buffers, and so the windows, by it); the debug kernel's KASAN shadow
    and kmemleak want more."""
    return "512M" if paths.debug_kernel else "256M"


def mask_tcp_window(frame: bytes) -> bytes:
    at = 14 + 40  # Ethernet, IPv6 (kernel-built segments carry no extension header)
    return frame[:at + 14] + b"\0\0\0\0" + frame[at + 18:]


def route_entries(lines: list[str]) -> list[str]:
    """ip route show output, a multipath route's nexthop lines joined to it."""
    out: list[str] = []
    for line in lines:
        if line.startswith(("\t", " ")) and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line.rstrip())
    return out


def route_key(route: str) -> list[str]:
    """'[type] PREFIX ... [table T] ...' -> what 'ip route del' needs to find it."""
    words = route.split()
    key = words[:2] if words[0] in ROUTE_TYPES else words[:1]
    if "table" in words:
        key += words[words.index("table"):words.index("table") + 2]
    return key


class Session:
    """One booted guest; the implementation under test is loaded in turn."""

    def __init__(self, guest: Guest, paths: Paths) -> None:
        self.guest, self.paths = guest, paths
        self.impl: Impl | None = None
        self.fence = 0

    def must(self, verb: str, args: list[str]) -> list[str]:
        reply = self.guest.run(verb, args)
        if reply.rc != 0:
            raise GuestError(f"'{verb} {' '.join(args)}' failed ({reply.rc}): " + " | ".join(reply.out))
        return reply.out

    def setup(self) -> None:
        for verb, args in topology.setup_steps():
            self.must(verb, args)

    def load(self, impl: Impl) -> str | None:
        """Make impl the loaded implementation; why not, if it cannot be."""
        if self.impl and self.impl.module_name != impl.module_name or \
                self.impl and self.impl.module_path != impl.module_path:
            self.must("rmmod", [self.impl.module_name])
            self.impl = None
        if self.impl is None:
            self.guest.run("dmesg", [])
            reply = self.guest.run("insmod", [impl.module_path])
            if reply.rc != 0:
                log = self.guest.run("dmesg", []).out
                return (f"did not load: {' | '.join(reply.out)}"
                        + "".join(f"\nkernel: {line}" for line in log))
            self.impl = impl
            why = self.probe()
            if why:
                self.guest.run("rmmod", [impl.module_name])
                self.impl = None
                return why
        self.impl = impl
        return None

    def probe(self) -> str | None:
        """Does the loaded module own the ILA encap type? One route says."""
        route = [topology.IP, "-6", "route", "add", PROBE_ROUTE, "encap", "ila", "2001:0:0:1",
                 "dev", "lo"]
        reply = self.guest.run("exec", route)
        self.guest.run("exec", [topology.IP, "-6", "route", "del", PROBE_ROUTE])
        if reply.rc == 0:
            return None
        log = self.guest.run("dmesg", []).out
        return (f"loaded, but it does not take ILA routes (does it register "
                f"LWTUNNEL_ENCAP_ILA?): {' '.join(route[1:])}: {' | '.join(reply.out)}"
                + "".join(f"\nkernel: {line}" for line in log))

    def stats(self) -> dict[str, int]:
        if not self.impl.stats_file:
            return {}
        return {k: int(v) for k, v in (line.split() for line in self.must("cat", [self.impl.stats_file]))}

    def leftover_ila_routes(self, purge: bool = False) -> list[str]:
        """ILA routes in any table; with purge, delete them (after a failed case)."""
        out = []
        for family in ("-6", "-4"):
            reply = self.guest.run("exec", [topology.IP, family, "route", "show", "table", "all"])
            routes = [r for r in route_entries(reply.out) if "encap ila" in r]
            out += routes
            for route in routes if purge else []:
                self.guest.run("exec", [topology.IP, family, "route", "del", *route_key(route)])
        return out

    def send(self, case: Case) -> tuple[int, list[str], list[bytes]]:
        """Send the case's packet; (injector rc, its output, the flow's frames)."""
        self.fence += 1
        rc, out = 0, []
        if case.path == "output":
            reply = self.guest.run("exec", [INJECT, case.send, *packets.injector_args(case.packet)])
            rc, out = reply.rc, reply.out
            self.must("exec", [INJECT, "mark", f"dst={topology.HOST_ADDR}", f"seq={self.fence}"])
            per_nic = self.guest.frames_until(is_mark(self.fence))
        elif case.layout != "linear":
            # the guest receives the same frame through a tap, laid out as asked
            reply = self.guest.run("exec", [RX, *layouts.rx_args(case.layout, case.packet),
                                            *packets.injector_args(case.packet)])
            rc, out = reply.rc, reply.out
            self.guest.send_frame(fence_request(self.fence))
            per_nic = self.guest.frames_until(is_fence_reply(self.fence))
        else:
            self.guest.send_frame(packets.from_host(packets.sent_packet(case.packet)))
            self.guest.send_frame(fence_request(self.fence))
            per_nic = self.guest.frames_until(is_fence_reply(self.fence))
        return rc, out, [f for frames in per_nic for f in frames if in_flow(case, f)]

    def impl_placeholders(self) -> dict[str, str]:
        other = rival(self.impl)
        return {"module": self.impl.module_path, "module_name": self.impl.module_name,
                "other_module": other.module_path, "other_module_name": other.module_name}

    def loaded_modules(self) -> list[str]:
        return [line.split()[0] for line in self.must("cat", ["/proc/modules"])]

    def run_control(self, case: control.ControlCase) -> Result:
        status, detail, diag = control.run(self, case)
        # Whatever the case did, the next one needs the same guest.
        left = self.leftover_ila_routes(purge=True)
        loaded = self.loaded_modules()
        if left:
            status, detail = "fail", f"ILA routes left after the cleanup: {left}"
        elif self.impl.module_name not in loaded or rival(self.impl).module_name in loaded:
            status, detail = "fail", f"the cleanup did not restore the modules: loaded {loaded}"
            for name in (n for n in loaded if n in {i.module_name for i in IMPLS.values()}):
                self.guest.run("rmmod", [name])
            self.must("insmod", [self.impl.module_path])
        return Result(case.id, self.impl.name, status, detail, case.requirements, diag)

    def run_case(self, case: "Case | control.ControlCase", bless: bool) -> Result:
        if isinstance(case, control.ControlCase):
            if not self.impl.runs_control:
                return Result(case.id, self.impl.name, "skip",
                              "control-plane cases run in the implementation's default "
                              "configuration (its own column) only", case.requirements)
            return self.run_control(case)
        missing = [n for n in case.needs if n not in self.impl.features]
        if missing:
            return Result(case.id, self.impl.name, "skip",
                          f"{self.impl.name} does not implement {', '.join(missing)}",
                          case.requirements)
        status, detail, diag = self.run_packet(case, bless and not case.base)
        return Result(case.id, self.impl.name, status, detail, case.requirements, diag)

    def run_packet(self, case: Case, bless: bool) -> tuple[str, str, list[str]]:
        """Set up, send, tear down, then judge: the case's expectation, or its deviation."""
        dev = case.deviations.get(self.impl.name)
        for line in map(self.impl.route, case.routes):
            reply = self.guest.run("exec", ip_argv(line))
            if reply.rc != 0:
                self.teardown(case)
                text = " | ".join(reply.out)
                if dev and dev.route_error and dev.route_error in text:
                    return "xfail", dev.label, [f"route set-up refused as declared: {text}"]
                return "fail", f"route set-up failed ({reply.rc}): {line}: {text}", \
                    [f"declared deviation expects: {dev.route_error}"] if dev and dev.route_error else []
        before = self.stats() if case.stats is not None else {}
        rc, out, frames = self.send(case)
        after = self.stats() if case.stats is not None else {}
        left = self.teardown(case)
        capture = self.paths.out / "pcaps" / self.impl.name / f"{case.id}.pcapng"
        pcapng.write(capture, frames, [f"{case.id} as captured from {self.impl.name}"] * len(frames),
                     section_comment=None if frames else
                     f"{case.id}: no frame of the flow was captured from {self.impl.name}")
        if left:
            return "fail", f"ILA routes left after the teardown: {left}", []
        status, detail, diag = self.verdict(case, rc, out, frames, (before, after),
                                            bless and not dev, golden=True)
        status, detail, diag = self.with_clone(case, out, status, detail, diag, dev)
        if not dev:
            return status, detail, diag
        if status == "pass":
            return "fail", (f"the declared deviation ({dev.label}) was not observed: the case "
                            f"passes; remove [deviation.{self.impl.name}]"), []
        alt = dataclasses.replace(
            case, outcome=dev.outcome or case.outcome, expect_dst=dev.dst or case.expect_dst,
            csum=dev.csum, inject_error=dev.inject_error, stats=None)
        if dev.route_error:
            alt_status, alt_detail, alt_diag = "fail", f"the route was accepted, not refused with '{dev.route_error}'", []
        else:
            alt_status, alt_detail, alt_diag = self.verdict(alt, rc, out, frames, ({}, {}), False,
                                                            golden=False)
        if alt_status == "pass":
            alt_status, alt_detail, alt_diag = self.with_clone(case, out, "pass", "", [], None)
        if alt_status in ("pass", "xfail"):
            label = dev.label + (f"; {alt_detail}" if alt_status == "xfail" else "")
            return "xfail", label, [f"instead of the requirement: {detail}"]
        return "fail", detail, [*diag, f"nor the declared deviation ({dev.label}): {alt_detail}",
                                *alt_diag]

    def with_clone(self, case: Case, out: list[str], status: str, detail: str,
                   diag: list[str], dev: "object | None") -> tuple[str, str, list[str]]:
        """A cloned layout also needs the packet socket's copy intact: a write
        into a shared skb's data changes what tcpdump and every other holder
        sees (ILA-SHARED-1). Its own deviation (clone = "modified") may say
        otherwise; the packet's result stands beside it."""
        if not layouts.clones(case.layout) or status == "fail":
            return status, detail, diag
        seen = next((line for line in out if line.startswith("clone: ")), "clone: no report")
        cdev = case.clone_deviations.get(self.impl.name)
        if seen == "clone: intact":
            if cdev:
                return "fail", (f"the declared deviation ({cdev.label}) was not observed: the "
                                "packet socket's copy is intact; remove it"), diag
            return status, detail, diag
        if cdev and seen.startswith("clone: modified"):
            if status == "pass" and dev is None:
                return "xfail", cdev.label, [seen]
            return status, (f"{detail}; " if detail else "") + cdev.label, [*diag, seen]
        return "fail", (f"the skb was shared with a packet socket, and its copy was written: "
                        f"{seen.removeprefix('clone: ')} [breaks ILA-SHARED-1]"), [
            *diag, "an implementation must make the skb's data its own "
            "(skb_ensure_writable) before it writes into it"]

    def verdict(self, case: Case, rc: int, out: list[str], frames: list[bytes],
                stats: tuple[dict[str, int], dict[str, int]], bless: bool,
                golden: bool) -> tuple[str, str, list[str]]:
        if case.inject_error is not None:
            if rc == 0 or not any(case.inject_error in line for line in out):
                return "fail", (f"expected the send to fail with '{case.inject_error}', "
                                f"it returned {rc}: {' | '.join(out) or '(no output)'}"), []
        elif rc != 0:
            return "fail", f"injector failed ({rc}): {' | '.join(out)}", []
        if case.stats is not None and self.impl.stats_file:
            before, after = stats
            deltas = {k: after.get(k, 0) - before.get(k, 0) for k in after}
            want = {k: case.stats.get(k, 0) for k in deltas}
            unknown = set(case.stats) - set(deltas)
            if unknown or deltas != want:
                lines = [f"{k:<28} expected +{want[k]:<4} observed +{deltas[k]}"
                         + ("" if want[k] == deltas[k] else "  <>") for k in sorted(deltas)]
                return "fail", (f"{self.impl.stats_file} counters differ"
                                + (f" (unknown: {sorted(unknown)})" if unknown else "")), lines
        return judge(case, frames, self.paths, bless, golden)

    def teardown(self, case: Case) -> list[str]:
        for line in case.teardown:
            self.guest.run("exec", ip_argv(line))
        return self.leftover_ila_routes(purge=True)


def golden_column(case) -> str:
    """The column whose captures are blessed as the case's golden: ours, unless
    the case needs a feature ours lacks."""
    needs = set(getattr(case, "needs", []))
    return next(name for name, impl in IMPLS.items() if needs <= impl.features)


def run_columns(columns: list[Impl], cases: list, paths: Paths, reporter: Reporter, accel: str,
                bless: bool, after: Callable[["Session"], None] | None = None) -> None:
    """Every case against every column, in one boot, loading each implementation in turn.

    A module that does not load fails its column's cases with the kernel's
    log; a guest that dies fails the case that was running and the rest of
    that column, and the next column boots a fresh guest.
    """
    guest: Guest | None = None
    session: Session | None = None
    boots = 0
    try:
        for impl in columns:
            done, started = 0, False
            try:
                if guest is None:
                    boots += 1
                    log = paths.out / "logs" / f"serial-{boots}.log"
                    guest = Guest(paths.kernel, paths.initrd, log, paths.out / "pcaps", accel,
                                  tag=str(boots), memory=guest_memory(paths))
                    session = Session(guest, paths)
                    session.setup()
                why = session.load(impl)
                if why:
                    head, *kernel = why.splitlines()
                    for i, case in enumerate(cases):
                        reporter.add(Result(case.id, impl.name, "fail",
                                            f"not run: {impl.module_path} {head}",
                                            case.requirements, kernel if i == 0 else []))
                    continue
                started = True
                for case in cases:
                    reporter.add(session.run_case(case, bless and impl.name == golden_column(case)))
                    done += 1
            except GuestError as e:
                detail = str(e).splitlines()
                where = cases[done].id if started and done < len(cases) else "boot and set-up"
                for i, case in enumerate(cases[done:]):
                    reporter.add(Result(case.id, impl.name, "fail",
                                        f"guest failed during {where}: {detail[0]}" if i == 0
                                        else f"not run: the guest died during {where}",
                                        case.requirements, detail[1:] if i == 0 else []))
                guest.close() if guest else None
                guest = session = None
        if after and session:
            after(session)
    finally:
        if guest:
            guest.close()
