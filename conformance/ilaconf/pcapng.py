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
        if not frames:  # a valid file with no packets: "nothing may come out"
            writer._write_header(None)  # noqa: SLF001 (scapy has no public call)
        for i, (frame, comment) in enumerate(zip(frames, comments, strict=True)):
            pkt = Ether(frame)
            pkt.time = i
            pkt.comment = comment.encode()
            writer.write(pkt)
    finally:
        writer.close()


def read(path: Path) -> list[bytes]:
    with PcapNgReader(str(path)) as reader:
        return [bytes(p) for p in reader]
