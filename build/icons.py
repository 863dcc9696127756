"""App icons drawn at build time: an attention-weights heat map, as SVG and as PNG (zlib only)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

BACKGROUND = (0x1f, 0x3a, 0x5f)
# a 4x4 attention pattern, row-stochastic in spirit: the diagonal dominates
WEIGHTS = [[0.9, 0.35, 0.15, 0.1], [0.3, 0.85, 0.35, 0.15], [0.15, 0.35, 0.9, 0.3], [0.1, 0.15, 0.4, 0.95]]
CELL_LOW, CELL_HIGH = (0x2c, 0x5d, 0x8f), (0xf4, 0xb9, 0x42)


def _mix(w: float) -> tuple[int, int, int]:
    return tuple(round(a + (b - a) * w) for a, b in zip(CELL_LOW, CELL_HIGH))


def svg() -> str:
    cells = []
    for i, row in enumerate(WEIGHTS):
        for j, w in enumerate(row):
            r, g, b = _mix(w)
            cells.append(f'<rect x="{14 + j * 18}" y="{14 + i * 18}" width="16" height="16" rx="2" '
                         f'fill="#{r:02x}{g:02x}{b:02x}"/>')
    bg = "#%02x%02x%02x" % BACKGROUND
    return ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
            f'<rect width="100" height="100" rx="18" fill="{bg}"/>' + "".join(cells) + "</svg>\n")


def png(size: int) -> bytes:
    """The same picture as svg(), square corners (maskable: the grid sits inside the safe zone)."""
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter type: none
        for x in range(size):
            u, v = x * 100 / size, y * 100 / size
            colour = BACKGROUND
            j, i = int((u - 14) // 18), int((v - 14) // 18)
            if 0 <= i < 4 and 0 <= j < 4 and (u - 14) % 18 < 16 and (v - 14) % 18 < 16:
                colour = _mix(WEIGHTS[i][j])
            row += bytes(colour)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)   # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def write(folder: Path) -> list[dict]:
    """Write the icons; return the manifest's `icons` entries."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "icon.svg").write_text(svg())
    entries = [{"src": "icons/icon.svg", "sizes": "any", "type": "image/svg+xml"}]
    for size in (192, 512):
        (folder / f"icon-{size}.png").write_bytes(png(size))
        entries.append({"src": f"icons/icon-{size}.png", "sizes": f"{size}x{size}", "type": "image/png",
                        "purpose": "any"})
    return entries
