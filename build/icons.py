"""Images drawn at build time, with nothing but zlib: the app icons (an attention-weights heat map, as
SVG and PNG, plain and maskable) and the 1200x630 link-preview image (Open Graph / Twitter cards).

PNGs are written byte-for-byte reproducibly (no timestamps, fixed compression).
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

# a 4x4 attention pattern, row-stochastic in spirit: the diagonal dominates
WEIGHTS = [[0.9, 0.35, 0.15, 0.1], [0.3, 0.85, 0.35, 0.15], [0.15, 0.35, 0.9, 0.3], [0.1, 0.15, 0.4, 0.95]]
CELL_LOW, CELL_HIGH = (0x2c, 0x5d, 0x8f), (0xf4, 0xb9, 0x42)
WHITE = (0xff, 0xff, 0xff)
# The grid in a 100x100 icon: 4 cells of 16 with gaps of 2, from 14 to 84. A maskable icon may be cut
# to any shape that contains the centred circle of radius 40 (the "safe zone"): there the grid is
# scaled by 0.8 (from 22 to 78: its corners 39.6 from the centre).
GRID = (14.0, 16.0, 2.0)
MASKABLE_SCALE = 0.8
SAFE_ZONE = 0.4            # radius of the maskable safe zone, as a share of the icon's size
PREVIEW_SIZE = (1200, 630)


def rgb(colour: str) -> tuple[int, int, int]:
    colour = colour.lstrip("#")
    if len(colour) == 3:
        colour = "".join(c * 2 for c in colour)
    return int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)


def _mix(w: float) -> tuple[int, int, int]:
    r, g, b = (round(a + (b - a) * w) for a, b in zip(CELL_LOW, CELL_HIGH))
    return r, g, b


class Canvas:
    """An RGB raster: rows of bytes, filled by rectangles (fast enough in pure Python for 1200x630)."""

    def __init__(self, width: int, height: int, background: tuple[int, int, int]):
        self.width, self.height = width, height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def rect(self, x0: float, y0: float, x1: float, y1: float, colour: tuple[int, int, int]) -> None:
        """Fill the pixels whose centres lie in [x0, x1) x [y0, y1)."""
        xa, xb = max(0, round(x0)), min(self.width, round(x1))
        ya, yb = max(0, round(y0)), min(self.height, round(y1))
        if xa >= xb:
            return
        run = bytes(colour) * (xb - xa)
        for y in range(ya, yb):
            self.rows[y][3 * xa:3 * xb] = run

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        r, g, b = self.rows[y][3 * x:3 * x + 3]
        return r, g, b

    def png(self) -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        raw = b"".join(b"\x00" + bytes(row) for row in self.rows)     # filter type 0 on every row
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)   # 8-bit RGB
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def heat_map(canvas: Canvas, x: float, y: float, size: float) -> None:
    """The 4x4 grid of the icon, its cells' corners at (x, y) and (x + size, y + size)."""
    cell, gap = size * 16 / 70, size * 2 / 70
    for i, row in enumerate(WEIGHTS):
        for j, w in enumerate(row):
            left, top = x + j * (cell + gap), y + i * (cell + gap)
            canvas.rect(left, top, left + cell, top + cell, _mix(w))


def svg(background: str) -> str:
    start, cell, gap = GRID
    cells = []
    for i, row in enumerate(WEIGHTS):
        for j, w in enumerate(row):
            r, g, b = _mix(w)
            cells.append(f'<rect x="{start + j * (cell + gap):g}" y="{start + i * (cell + gap):g}" width="{cell:g}" '
                         f'height="{cell:g}" rx="2" fill="#{r:02x}{g:02x}{b:02x}"/>')
    return ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
            f'<rect width="100" height="100" rx="18" fill="{background}"/>' + "".join(cells) + "</svg>\n")


def icon(size: int, background: str, maskable: bool = False) -> Canvas:
    """The icon as a square raster (full-bleed background). Maskable: the grid shrunk into the safe zone."""
    canvas = Canvas(size, size, rgb(background))
    span = 70 * (MASKABLE_SCALE if maskable else 1.0)
    start = (100 - span) / 2
    heat_map(canvas, start * size / 100, start * size / 100, span * size / 100)
    return canvas


# ---- text for the preview: a 5x7 pixel font (capitals and the few signs the preview uses) ----------
FONT = {
    "A": "01110 10001 10001 11111 10001 10001 10001", "B": "11110 10001 10001 11110 10001 10001 11110",
    "C": "01110 10001 10000 10000 10000 10001 01110", "D": "11100 10010 10001 10001 10001 10010 11100",
    "E": "11111 10000 10000 11110 10000 10000 11111", "F": "11111 10000 10000 11110 10000 10000 10000",
    "G": "01110 10001 10000 10111 10001 10001 01111", "H": "10001 10001 10001 11111 10001 10001 10001",
    "I": "01110 00100 00100 00100 00100 00100 01110", "J": "00111 00010 00010 00010 00010 10010 01100",
    "K": "10001 10010 10100 11000 10100 10010 10001", "L": "10000 10000 10000 10000 10000 10000 11111",
    "M": "10001 11011 10101 10101 10001 10001 10001", "N": "10001 10001 11001 10101 10011 10001 10001",
    "O": "01110 10001 10001 10001 10001 10001 01110", "P": "11110 10001 10001 11110 10000 10000 10000",
    "Q": "01110 10001 10001 10001 10101 10010 01101", "R": "11110 10001 10001 11110 10100 10010 10001",
    "S": "01111 10000 10000 01110 00001 00001 11110", "T": "11111 00100 00100 00100 00100 00100 00100",
    "U": "10001 10001 10001 10001 10001 10001 01110", "V": "10001 10001 10001 10001 10001 01010 00100",
    "W": "10001 10001 10001 10101 10101 10101 01010", "X": "10001 10001 01010 00100 01010 10001 10001",
    "Y": "10001 10001 10001 01010 00100 00100 00100", "Z": "11111 00001 00010 00100 01000 10000 11111",
    " ": "00000 00000 00000 00000 00000 00000 00000", "_": "00000 00000 00000 00000 00000 00000 11111",
    ":": "00000 01100 01100 00000 01100 01100 00000", ",": "00000 00000 00000 00000 01100 00100 01000",
    ".": "00000 00000 00000 00000 00000 01100 01100", "-": "00000 00000 00000 11111 00000 00000 00000",
    "√": "00111 00100 00100 00100 10100 01100 00100", "/": "00001 00010 00010 00100 01000 01000 10000",
}


def text(canvas: Canvas, x: float, y: float, line: str, scale: float, colour: tuple[int, int, int]) -> float:
    """Draw `line` (capitals) with its top-left corner at (x, y), each font pixel `scale` wide; returns
    the x after it."""
    for char in line.upper():
        for r, bits in enumerate(FONT[char].split()):
            for c, bit in enumerate(bits):
                if bit == "1":
                    canvas.rect(x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, colour)
        x += 6 * scale
    return x


def text_width(line: str, scale: float) -> float:
    return (6 * len(line) - 1) * scale


def preview(background: str, title: str, lines: list[str]) -> Canvas:
    """The link preview: the heat map on the left, the title and a few lines of capitals on the right."""
    width, height = PREVIEW_SIZE
    canvas = Canvas(width, height, rgb(background))
    heat_map(canvas, 80, 135, 360)
    left = 520
    text(canvas, left, 170, title, 13, WHITE)
    y = 300
    for line in lines:
        text(canvas, left, y, line, 5, CELL_HIGH)
        y += 60
    return canvas


def write(folder: Path, background: str) -> list[dict]:
    """Write the icons into `folder`; return the manifest's `icons` entries (paths relative to the site)."""
    folder.mkdir(parents=True, exist_ok=True)
    site = folder.name
    (folder / "icon.svg").write_text(svg(background))
    entries = [{"src": f"{site}/icon.svg", "sizes": "any", "type": "image/svg+xml"}]
    for maskable in (False, True):
        for size in (192, 512):
            name = f"icon-{'maskable-' if maskable else ''}{size}.png"
            (folder / name).write_bytes(icon(size, background, maskable).png())
            entries.append({"src": f"{site}/{name}", "sizes": f"{size}x{size}", "type": "image/png",
                            "purpose": "maskable" if maskable else "any"})
    return entries


def write_preview(path: Path, background: str, title: str, lines: list[str]) -> None:
    path.write_bytes(preview(background, title, lines).png())
