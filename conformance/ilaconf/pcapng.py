"""Captures as pcapng files, each packet carrying a comment Wireshark shows.

Golden files are written with timestamps 0, 1, 2 ... seconds so that the same
frames always give the same file, bit for bit.
"""

from pathlib import Path

from scapy.layers.l2 import Ether
from scapy.utils import PcapNgReader, PcapNgWriter


def write(path: Path, frames: list[bytes], comments: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = PcapNgWriter(str(path))
    try:
        for i, (frame, comment) in enumerate(zip(frames, comments, strict=True)):
            pkt = Ether(frame)
            pkt.time = i
            pkt.comment = comment.encode()
            writer.write(pkt)
    finally:
        writer.close()
    if not frames:  # scapy writes nothing at all for an empty list
        path.write_bytes(b"")


def read(path: Path) -> list[bytes]:
    if path.stat().st_size == 0:
        return []
    with PcapNgReader(str(path)) as reader:
        return [bytes(p) for p in reader]
