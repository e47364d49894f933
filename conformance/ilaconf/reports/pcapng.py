"""Captures as pcapng files, each packet carrying a comment Wireshark shows.

Golden files are written with timestamps 0, 1, 2 ... seconds so that the same
frames always give the same file, bit for bit. A capture with no frame (a
case that expects a drop) says why in its section header's comment, which
Wireshark shows under Statistics > Capture File Properties.
"""

import struct
from pathlib import Path

from scapy.layers.l2 import Ether
from scapy.utils import PcapNgReader, PcapNgWriter

OPT_COMMENT = 1  # pcapng option code, RFC draft-ietf-opsawg-pcapng


class _Writer(PcapNgWriter):
    """scapy's writer, with a comment in the section header block."""

    def __init__(self, path: str, section_comment: str | None) -> None:
        super().__init__(path)
        self.section_comment = section_comment

    def _write_block_shb(self) -> None:
        body = self.endian_magic + struct.pack(self.endian + "HHq", 1, 0, -1)
        options = None
        if self.section_comment:
            text = self.section_comment.encode()
            options = (struct.pack(self.endian + "HH", OPT_COMMENT, len(text))
                       + self._add_padding(text) + struct.pack(self.endian + "HH", 0, 0))
        self.f.write(self.build_block(b"\x0A\x0D\x0D\x0A", body, options))


def write(path: Path, frames: list[bytes], comments: list[str],
          section_comment: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = _Writer(str(path), section_comment)
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


def section_comment(path: Path) -> str | None:
    """The first section header block's comment option, if any."""
    data = path.read_bytes()
    if len(data) < 28 or data[:4] != b"\x0A\x0D\x0D\x0A":
        return None
    endian = "<" if data[8:12] == b"\x4D\x3C\x2B\x1A" else ">"
    (length,) = struct.unpack(endian + "I", data[4:8])
    at, end = 24, length - 4
    while at + 4 <= end:
        code, size = struct.unpack(endian + "HH", data[at:at + 4])
        if code == 0:
            break
        if code == OPT_COMMENT:
            return data[at + 4:at + 4 + size].decode(errors="replace")
        at += 4 + size + (-size % 4)
    return None
