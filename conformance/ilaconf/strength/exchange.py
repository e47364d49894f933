"""Many packets through one implementation, each with the frames it caused.

A catalog case costs a few agent commands; make fuzz sends thousands of
packets, so they are pipelined, each ended by a terminator that leaves the
guest on the same NIC as the packet's frames, after them:

- output: the guest's ila-relay sends each packet the host hands it over UDP
  (raw, or from a UDP socket), then a mark "ila-relay SEQ ERRNO" to the host;
- input: the host sends the packet, then an echo request (the fence); the
  guest's answers to the packet leave eth0 before the echo reply;
- forward: the host sends the packet, then an echo request whose source is
  the host's eth1 address, so that the echo reply follows the forwarded
  packet out of eth1;
- a packet in a receive layout (ila-rx) or sent on a TCP socket (ila-inject
  tcp) takes an agent command of its own, then the same terminator.

The frames between two terminators on that NIC are the packet's.
"""

import select
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv6Address

from scapy.layers.inet import UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6

from .. import topology
from ..catalog import layouts
from ..catalog.cases import Case
from ..oracle import packets
from ..running.guest import GuestError
from ..running.session import INJECT, RX, Session, fence_request, is_fence_reply, is_mark
from .generate import RELAY_PORT

RELAY = "/bin/ila-relay"
WINDOW = 16  # packets in flight
ETH_IPV6 = b"\x86\xdd"


@dataclass
class Sent:
    """What one packet did: the send's status and the frames it caused."""
    rc: int
    out: list[str]
    frames: list[bytes]


def is_noise(frame: bytes) -> bool:
    """The guest's own chatter: not IPv6, or to a link-local multicast group
    (MLD reports, router and neighbour solicitations)."""
    return frame[12:14] != ETH_IPV6 or len(frame) < 54 or frame[38:40] == b"\xff\x02"


def relay_mark(frame: bytes) -> tuple[int, int] | None:
    """(seq, errno) of an ila-relay mark, None for any other frame."""
    if frame[12:14] != ETH_IPV6 or frame[20] != 17 or \
            int.from_bytes(frame[56:58], "big") != topology.MARK_PORT or \
            not frame[62:].startswith(b"ila-relay "):
        return None
    seq, err = frame[62:].decode().split()[1:3]
    return int(seq), int(err)


def relay_datagram(kind: bytes, seq: int, body: bytes) -> bytes:
    l3 = IPv6(src=topology.HOST_ADDR, dst=topology.GUEST_ADDR, hlim=64) / \
        UDP(sport=RELAY_PORT, dport=RELAY_PORT) / (kind + struct.pack(">I", seq) + body)
    return packets.from_host(bytes(l3))


def relay_body(case: Case) -> tuple[bytes, bytes]:
    """The relay command for an output packet: raw bytes, or a UDP socket send."""
    spec = case.packet
    if case.send == "raw":
        return b"R", packets.sent_packet(spec)
    flags = 1 if spec.get("no_check6_tx") else 0
    return b"U", (IPv6Address(str(spec["src"])).packed + struct.pack(">H", int(spec["sport"]))
                  + IPv6Address(str(spec["dst"])).packed + struct.pack(">H", int(spec["dport"]))
                  + bytes([flags]) + packets.payload(spec))


def forward_fence(seq: int) -> bytes:
    """An echo request through eth0 whose reply leaves eth1, behind the
    forwarded packets."""
    l3 = IPv6(src=topology.NICS[1].host_addr, dst=topology.GUEST_ADDR) / \
        ICMPv6EchoRequest(id=topology.FENCE_ECHO_ID, seq=seq)
    return packets.from_host(bytes(l3))


class Pipe:
    """Reads the guest's frames on both NICs, split by terminators."""

    def __init__(self, session: Session) -> None:
        self.session, self.guest = session, session.guest
        self.pending: list[list[bytes]] = [[] for _ in self.guest.frames]

    def until(self, nic: int, is_end, timeout: float = 30.0) -> list[bytes]:
        """The non-noise frames on nic up to the first that is_end accepts."""
        deadline = time.monotonic() + timeout
        got: list[bytes] = []
        while True:
            for i, sock in enumerate(self.guest.frames):
                if i != nic:
                    self.guest._drain(sock)  # noqa: SLF001 (frames of no interest here)
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuestError(f"no terminator from the guest in {timeout:.0f} s" + self.guest.tail())
            ready, _, _ = select.select([self.guest.frames[nic]], [], [], min(left, 0.5))
            if not ready:
                if self.guest.qemu.poll() is not None:
                    raise GuestError("QEMU exited while waiting for frames" + self.guest.tail())
                continue
            frame = self.guest.frames[nic].recv(65536)
            if is_end(frame):
                return got
            if not is_noise(frame) and relay_mark(frame) is None:
                got.append(frame)


def _windows(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def relay_ready(session: Session, pipe: Pipe) -> None:
    """Ping the relay until it answers: it binds its port after it starts."""
    for attempt in range(100):
        session.guest.send_frame(relay_datagram(b"N", 0xFFFFFFFF, b""))
        try:
            pipe.until(0, lambda f: relay_mark(f) == (0xFFFFFFFF, 0), timeout=0.3)
            return
        except GuestError:
            if session.guest.qemu.poll() is not None:
                raise
    raise GuestError("ila-relay never answered" + session.guest.tail())


def through_relay(session: Session, cases: list[Case]) -> list[Sent]:
    """Output packets sent by the guest's ila-relay, WINDOW at a time."""
    guest = session.guest
    pipe = Pipe(session)
    result: dict[str, object] = {}

    def relay() -> None:
        try:
            result["reply"] = guest.run("exec", [RELAY, str(RELAY_PORT), topology.HOST_ADDR],
                                        timeout=600)
        except GuestError as e:
            result["error"] = e
    t = threading.Thread(target=relay, daemon=True)
    t.start()
    out: list[Sent] = []
    try:
        relay_ready(session, pipe)
        for window in _windows(list(enumerate(cases)), WINDOW):
            for seq, case in window:
                kind, body = relay_body(case)
                guest.send_frame(relay_datagram(kind, seq, body))
            for seq, case in window:
                err: list[int] = []

                def end(frame: bytes, want: int = seq) -> bool:
                    mark = relay_mark(frame)
                    if mark and mark[0] == want:
                        err.append(mark[1])
                        return True
                    return False
                frames = pipe.until(0, end)
                e = err[0]
                out.append(Sent(0 if not e else 1, [f"sendto: errno {e}"] if e else [], frames))
    finally:
        guest.send_frame(relay_datagram(b"E", 0, b""))
        t.join(timeout=60)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return out


def through_host(session: Session, cases: list[Case]) -> list[Sent]:
    """Input packets the host sends, each with its fence: the guest answers
    in order (a TCP SYN, UDP and ICMPv6 are never held by GRO)."""
    if cases[0].path == "forward":
        return forwarded(session, cases)
    pipe = Pipe(session)
    out: list[Sent] = []
    for window in _windows(cases, WINDOW):
        fences = []
        for case in window:
            session.fence += 1
            fences.append(session.fence)
            session.guest.send_frame(packets.from_host(packets.sent_packet(case.packet)))
            session.guest.send_frame(fence_request(session.fence))
        for seq in fences:
            out.append(Sent(0, [], pipe.until(0, is_fence_reply(seq))))
    return out


def flow_label(frame: bytes) -> int:
    return int.from_bytes(frame[15:18], "big") & 0xFFFFF


def forwarded(session: Session, cases: list[Case]) -> list[Sent]:
    """Forward packets, told apart by their flow labels (generate.py makes
    them unique per route): GRO may hold a TCP segment without PSH until
    its poll ends, after a fence's reply. A second fence, sent once the
    first has come back, arrives in a later poll, behind every held one."""
    pipe = Pipe(session)
    index = {int(c.packet["flow"]): i for i, c in enumerate(cases)}
    got: list[list[bytes]] = [[] for _ in cases]

    def take(frames: list[bytes]) -> None:
        for f in frames:
            i = index.get(flow_label(f))
            if i is None:  # a frame whose label changed: give it to its destination
                iid = f[46:54]
                i = next((j for j, c in enumerate(cases)
                          if IPv6Address(str(c.packet["dst"])).packed[8:] == iid), 0)
            got[i].append(f)
    for window in _windows(cases, WINDOW):
        for case in window:
            session.guest.send_frame(packets.from_host(packets.sent_packet(case.packet)))
        take(_fence(session, pipe))
    take(_fence(session, pipe))
    return [Sent(0, [], frames) for frames in got]


def _fence(session: Session, pipe: Pipe) -> list[bytes]:
    session.fence += 1
    session.guest.send_frame(forward_fence(session.fence))
    return pipe.until(1, is_fence_reply(session.fence))


def one_by_one(session: Session, case: Case) -> Sent:
    """A packet that needs an agent command: a receive layout, or TCP from a socket."""
    pipe = Pipe(session)
    session.fence += 1
    if case.path == "output":
        reply = session.guest.run("exec", [INJECT, case.send,
                                           *packets.injector_args(case.packet)])
        session.must("exec", [INJECT, "mark", f"dst={topology.HOST_ADDR}",
                              f"seq={session.fence}"])
        return Sent(reply.rc, reply.out, pipe.until(0, is_mark(session.fence)))
    reply = session.guest.run("exec", [RX, *layouts.rx_args(case.layout, case.packet),
                                       *packets.injector_args(case.packet)])
    forward = case.path == "forward"
    session.guest.send_frame(forward_fence(session.fence) if forward
                             else fence_request(session.fence))
    return Sent(reply.rc, reply.out, pipe.until(1 if forward else 0,
                                                is_fence_reply(session.fence)))


def send_all(session: Session, cases: list[Case]) -> list[Sent]:
    """Every case's packet, in order, the pipelined ones first."""
    fast = [c for c in cases if c.layout == "linear" and c.send in ("raw", "udp")]
    slow = [c for c in cases if c not in fast]
    sent: dict[int, Sent] = {}
    if fast and fast[0].path == "output":
        results = through_relay(session, fast)
    else:
        results = through_host(session, fast) if fast else []
    for c, s in zip(fast, results):
        sent[id(c)] = s
    for c in slow:
        sent[id(c)] = one_by_one(session, c)
    return [sent[id(c)] for c in cases]
