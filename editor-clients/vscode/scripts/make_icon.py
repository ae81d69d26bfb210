"""Draw the extension's icon, images/icon.png (128x128 RGBA), with the standard library only.

Three token bars on a dark tile; a vertical line marks the context window, and the last bar
runs past it in red: a step over its budget. Run it again to redraw the icon; the output is
the same bytes every time.
"""

from __future__ import annotations

import struct
import sys
import zlib
from pathlib import Path

SIZE = 128
BACKGROUND = (30, 41, 59, 255)
BAR = (56, 189, 248, 255)
OVER = (248, 113, 113, 255)
LIMIT = (226, 232, 240, 255)
CLEAR = (0, 0, 0, 0)
RADIUS = 22
LIMIT_X = 92
BARS = ((30, 72), (56, 84), (82, 108))  # (top y, right end x); each bar 16 high from x=20


def _inside_tile(x: int, y: int) -> bool:
    """The tile is a square with rounded corners of RADIUS."""
    cx = min(max(x, RADIUS), SIZE - 1 - RADIUS)
    cy = min(max(y, RADIUS), SIZE - 1 - RADIUS)
    return (x - cx) ** 2 + (y - cy) ** 2 <= RADIUS ** 2


def pixel(x: int, y: int) -> tuple[int, int, int, int]:
    if not _inside_tile(x, y):
        return CLEAR
    if LIMIT_X <= x < LIMIT_X + 4 and 20 <= y < 108:
        return LIMIT
    for top, right in BARS:
        if top <= y < top + 16 and 20 <= x < right:
            return OVER if x >= LIMIT_X else BAR
    return BACKGROUND


def png() -> bytes:
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(SIZE))
                    for y in range(SIZE))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else (
        Path(__file__).resolve().parents[1] / "images" / "icon.png")
    out.write_bytes(png())
    print(f"{out} ({out.stat().st_size} bytes)")
