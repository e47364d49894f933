"""One booted guest with one implementation loaded at a time: a case's
routes installed with the guest's real iproute2, its packet sent (the
guest's injector on the output path, the host otherwise), the capture
fenced, the routes removed, then the frames judged against the oracle and
the golden capture (oracle/).
"""

import errno
import time
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address
from pathlib import Path

from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6

from .. import topology
from ..catalog import control, layouts
from ..catalog.cases import ROUTE_TYPES, Case
from ..impls import IMPLS, MAPPING_TABLE, Impl, rival
from ..oracle import expect, golden, packets
from ..reports import pcapng
from ..reports.report import Result
from . import applies, kernel_log, steps
from .guest import Guest, GuestError

INJECT = "/bin/ila-inject"
RX = "/bin/ila-rx"
MAP = "/bin/ila-map"
# A formatted LUID identifier, which every implementation's defaults accept.
PROBE_ROUTE = "3333:0:0:1:2000:0:ffff:0/128"
CARRIER_TIMEOUT = 20.0
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


def fence_request(seq: int, nic: int = 0) -> bytes:
    """The host's end-of-case echo request on a NIC, answered on the same NIC."""
    n = topology.NICS[nic]
    return packets.ether(bytes(IPv6(src=n.host_addr, dst=n.guest_addr)
                               / ICMPv6EchoRequest(id=topology.FENCE_ECHO_ID, seq=seq)),
                         n.host_mac, n.guest_mac)


def in_flow(case: Case, frame: bytes) -> bool:
    """The case's own frames, told from the guest's ND/MLD noise and the fences."""
    if case.send == "udp4":
        dst4 = IPv4Address(str(case.packet["dst4"])).packed
        return ((frame[12:14] == ETH_IPV4 and frame[30:34] == dst4)
                or (frame[12:14] == ETH_ARP and frame[38:42] == dst4))
    if frame[12:14] != ETH_IPV6 or len(frame) < 54:
        return False
    if case.tunnel:  # its outer packets, to its remote, carrying the case's packet
        return frame[46:54] == IPv6Address(case.tunnel.remote).packed[8:] and \
            frame[tunnel_iid_at(case):tunnel_iid_at(case) + 8] == \
            IPv6Address(str(case.packet["dst"])).packed[8:]
    iid = IPv6Address(str(case.packet["dst"])).packed[8:]
    if case.outcome == "error" and is_error_about(frame, iid):
        return True
    if case.csum.startswith("neutral"):  # the C-bit and the last 16 bits change
        return (frame[30:38] if case.path == "input" else frame[46:54])[1:6] == iid[1:6]
    # A local reply comes from the address the packet was delivered to.
    return (frame[30:38] if case.path == "input" else frame[46:54]) == iid


# An ICMPv6 error's type (1 to 4) and its quoted packet's destination
# identifier, in the frame: Ethernet, IPv6, the 8-byte ICMPv6 header, then
# the quoted IPv6 header, whose destination's identifier is bytes 32 to 40.
ERROR_TYPE_AT = 14 + 40
QUOTED_IID_AT = 14 + 40 + 8 + 32


def tunnel_iid_at(case: Case) -> int:
    """The inner destination's identifier in a tunnel case's frames."""
    return 14 + 40 + 8 + case.tunnel.inner_at() + 32


def is_error_about(frame: bytes, iid: bytes) -> bool:
    """An ICMPv6 error quoting a packet to this identifier (outcome error)."""
    return (frame[12:14] == ETH_IPV6 and frame[20] == 58 and 1 <= frame[ERROR_TYPE_AT] <= 4
            and frame[QUOTED_IID_AT:QUOTED_IID_AT + 8] == iid)


def guest_memory(paths: Paths) -> str:
    """256 MiB, with which the golden captures were made (the kernel sizes its
    TCP buffers, and so the windows, by it); the debug kernel's KASAN shadow
    and kmemleak want more."""
    return "512M" if paths.debug_kernel else "256M"


def boot(paths: Paths, accel: str, tag: str, memory: str = "", cmdline: str = "",
         dump_dir: Path | None = None) -> "tuple[Guest, Session]":
    """A fresh guest with its serial log at out/logs/serial-TAG.log, set up for cases."""
    guest = Guest(paths.kernel, paths.initrd, paths.out / "logs" / f"serial-{tag}.log",
                  dump_dir or paths.out / "pcaps", accel, tag=tag,
                  memory=memory or guest_memory(paths), cmdline=cmdline)
    session = Session(guest, paths)
    session.setup()
    return guest, session


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


# How long rmmod waits for a busy module (EAGAIN) to be let go of.
UNLOAD_WAIT = 30.0


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
        # Until a NIC has carrier its queue is the noop qdisc, which drops
        # every frame (linkwatch: dev_deactivate); e1000's link comes up
        # about 2 s after it is set up.
        for nic in topology.NICS:
            deadline = time.monotonic() + CARRIER_TIMEOUT
            while self.must("cat", [f"/sys/class/net/{nic.dev}/carrier"]) != ["1"]:
                if time.monotonic() > deadline:
                    raise GuestError(f"{nic.dev} ({nic.model}) has no carrier after "
                                     f"{CARRIER_TIMEOUT:.0f} s" + self.guest.tail())
                time.sleep(0.1)

    def load(self, impl: Impl) -> str | None:
        """Make impl the loaded implementation; why not, if it cannot be."""
        if self.impl and self.impl.module_name != impl.module_name or \
                self.impl and self.impl.module_path != impl.module_path:
            why = self.unload()
            if why:
                raise GuestError(why)
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

    def unload(self, wait: float = UNLOAD_WAIT) -> str:
        """rmmod the loaded implementation; why not, if it cannot be. A module
        stays busy (EAGAIN) while cached dst entries of its routes, held by
        sockets that are closing, still refer to it: wait for them."""
        if self.impl is None:
            return ""
        started = time.monotonic()
        while True:
            reply = self.guest.run("rmmod", [self.impl.module_name])
            if reply.rc == 0:
                self.impl = None
                return ""
            waited = time.monotonic() - started
            if reply.rc != errno.EAGAIN or waited > wait:
                return (f"'rmmod {self.impl.module_name}' failed ({reply.rc}) after "
                        f"{waited:.1f} s: " + " | ".join(reply.out))
            time.sleep(0.2)

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
        """ILA routes in any table, and in a mapping column the mappings; with
        purge, delete them (after a failed case). The guest counts them over
        netlink first: ip, run only when something is left, is the slowest
        step of a case under TCG."""
        reply = self.guest.run("leftovers", [])
        if reply.rc == 0 and reply.out == ["0"]:
            return []
        out = []
        if self.impl and self.impl.interface == "mapping" and MAPPING_TABLE in self.impl.features:
            reply = self.guest.run("exec", [MAP, "dump"])
            out += [line for line in reply.out if line.startswith("mapping ")]
            if out and purge:
                self.guest.run("exec", [MAP, "flush"])
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
        else:
            rx = topology.nic_index(case.rx_nic)
            if case.layout != "linear":
                # the guest receives the same frame through a tap, laid out as asked
                reply = self.guest.run("exec", [RX, *layouts.rx_args(case.layout, case.packet),
                                                *packets.injector_args(case.packet)])
                rc, out = reply.rc, reply.out
            else:
                n = topology.NICS[rx]
                self.guest.send_frame(packets.ether(packets.sent_packet(case.packet),
                                                    n.host_mac, n.guest_mac), rx)
            # the fence follows the packet on the NIC it came in by
            self.guest.send_frame(fence_request(self.fence, rx), rx)
            per_nic = self.guest.frames_until(is_fence_reply(self.fence), fence_nic=rx)
            # GRO may hold a TCP segment without PSH until the end of the poll
            # that received it, after the fence's reply: a second fence comes
            # in a later poll, behind it.
            self.fence += 1
            self.guest.send_frame(fence_request(self.fence, rx), rx)
            more = self.guest.frames_until(is_fence_reply(self.fence), fence_nic=rx)
            per_nic = [a + b for a, b in zip(per_nic, more)]
        return rc, out, [f for frames in per_nic for f in frames if in_flow(case, f)]

    def impl_placeholders(self) -> dict[str, str]:
        """control.RUNTIME_PLACEHOLDERS: the implementation, its rival, the NICs."""
        other = rival(self.impl)
        index = {f"{key}_ifindex": self.must("cat", [f"/sys/class/net/{dev}/ifindex"])[0]
                 for key, dev in (("dev", topology.NICS[0].dev), ("dev2", topology.NICS[1].dev))}
        return {"module": self.impl.module_path, "module_name": self.impl.module_name,
                "other_module": other.module_path, "other_module_name": other.module_name,
                **index}

    def loaded_modules(self) -> list[str]:
        return [line.split()[0] for line in self.must("cat", ["/proc/modules"])]

    def run_control(self, case: control.ControlCase) -> Result:
        status, detail, diag = steps.run(self, case)
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

    def skip_reason(self, case: "Case | control.ControlCase") -> str:
        """Why this column does not run the case; empty when it does."""
        return applies.skip_reason(self.impl, case)

    def run_case(self, case: "Case | control.ControlCase", bless: bool) -> Result:
        why = self.skip_reason(case)
        if why:
            return Result(case.id, self.impl.name, "skip", why, case.requirements)
        if isinstance(case, control.ControlCase):
            return self.run_control(case)
        status, detail, diag = self.run_packet(case, bless and not case.base)
        return Result(case.id, self.impl.name, status, detail, case.requirements, diag)

    def lines(self, case: Case) -> tuple[list[str], list[str]]:
        """The case's set-up and teardown command lines in this column."""
        return applies.case_lines(self.impl, case)

    def run_packet(self, case: Case, bless: bool, golden: bool = True) -> tuple[str, str, list[str]]:
        """Set up, send, tear down, then judge: the case's expectation, or its deviation."""
        dev = case.deviations.get(self.impl.name)
        setup, teardown = self.lines(case)
        self.guest.run("dmesg", [])  # the case's kernel log starts empty
        for line in setup:
            reply = self.guest.run("exec", ip_argv(line))
            if reply.rc != 0:
                self.teardown(teardown)
                text = " | ".join(reply.out)
                if dev and dev.route_error and dev.route_error in text:
                    return "xfail", dev.label, [f"route set-up refused as declared: {text}"]
                return "fail", f"route set-up failed ({reply.rc}): {line}: {text}", \
                    [f"declared deviation expects: {dev.route_error}"] if dev and dev.route_error else []
        before = self.stats() if case.stats is not None else {}
        rc, out, frames = self.send(case)
        after = self.stats() if case.stats is not None else {}
        left = self.teardown(teardown)
        log = self.guest.run("dmesg", []).out
        capture = self.paths.out / "pcaps" / self.impl.name / f"{case.id}.pcapng"
        pcapng.write(capture, frames, [f"{case.id} as captured from {self.impl.name}"] * len(frames),
                     section_comment=None if frames else
                     f"{case.id}: no frame of the flow was captured from {self.impl.name}")
        if left:
            return "fail", f"ILA routes left after the teardown: {left}", []
        return kernel_log.judge(
            self.judge_packet(case, dev, rc, out, frames, (before, after), bless, golden),
            log, dev.kernel_log if dev else None)

    def judge_packet(self, case: Case, dev: "object | None", rc: int, out: list[str],
                     frames: list[bytes], stats: tuple[dict[str, int], dict[str, int]],
                     bless: bool = False, golden: bool = True) -> tuple[str, str, list[str]]:
        """The case's expectation, or else its declared deviation, observed
        exactly: xfail; a deviation that is declared but not observed fails."""
        status, detail, diag = self.verdict(case, rc, out, frames, stats, bless and not dev,
                                            check_golden=golden)
        status, detail, diag = self.with_clone(case, out, status, detail, diag, dev)
        if not dev:
            return status, detail, diag
        if status == "pass":
            return "fail", (f"the declared deviation ({dev.label}) was not observed: the case "
                            f"passes; {dev.stale_hint(self.impl.name)}"), []
        alt = expect.as_deviation(case, dev)
        if dev.route_error:
            alt_status, alt_detail, alt_diag = "fail", f"the route was accepted, not refused with '{dev.route_error}'", []
        else:
            alt_status, alt_detail, alt_diag = self.verdict(alt, rc, out, frames, ({}, {}), False,
                                                            check_golden=False)
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
                check_golden: bool) -> tuple[str, str, list[str]]:
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
        status, detail, diag = expect.judge(case, frames)
        if status != "pass" or not check_golden:  # a deviation: only the oracle knows it
            return status, detail, diag
        return golden.judge(case, frames, self.paths.golden, bless, self.paths.debug_kernel)

    def teardown(self, lines: list[str]) -> list[str]:
        for line in lines:
            self.guest.run("exec", ip_argv(line))
        return self.leftover_ila_routes(purge=True)


