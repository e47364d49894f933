"""make new-case PROTO=udp NAME=...: a new case file from the commented template."""

import re
from pathlib import Path

from . import cases

PACKETS = {
    "tcp": ('"ILA-OUT-ADDR-1", "ILA-OUT-TCP-1"', "tcp.checksum is correct",
            'proto = "tcp"\ndst = "3333:0:0:1:5555:0:2:0"\nsport = 40000\ndport = 80\n'
            'seq = 1000\nflags = "S"\nwindow = 65535'),
    "udp": ('"ILA-OUT-ADDR-1", "ILA-OUT-UDP-1"', "udp.checksum is correct",
            'proto = "udp"\ndst = "3333:0:0:1:5555:0:2:0"\nsport = 5000\ndport = 6000\n'
            'payload_len = 16'),
    "icmpv6": ('"ILA-OUT-ADDR-1", "ILA-OUT-ICMP6-1"', "icmpv6.checksum is correct",
               'proto = "icmpv6"\ndst = "3333:0:0:1:5555:0:2:0"\ntype = 128\nid = 7\n'
               'icmp_seq = 1\npayload_len = 16'),
}


def create(root: Path, template: Path, proto: str, name: str, folder: str = "") -> Path:
    """Write root/FOLDER/NAME.toml (FOLDER defaults to PROTO) and check that it loads."""
    if proto not in PACKETS:
        raise ValueError(f"PROTO={proto!r}: one of {', '.join(PACKETS)} "
                         "(DIR= puts it in another folder, e.g. DIR=ext)")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name or ""):
        raise ValueError(f"NAME={name!r}: lower-case letters, digits and dashes, "
                         "e.g. NAME=output-syn-443")
    folder = folder or proto
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", folder) or folder == "control":
        raise ValueError(f"DIR={folder!r}: a protocol folder name (control cases are written by hand)")
    path = root / folder / f"{name}.toml"
    if path.exists():
        raise ValueError(f"{path} exists already")
    reqs, look, packet = PACKETS[proto]
    text = template.read_text().format(id=f"{folder}/{name}", requirements=reqs, look=look,
                                       packet=packet)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    try:
        cases.load(path, root)
    except cases.CaseError:
        path.unlink()
        raise
    return path
