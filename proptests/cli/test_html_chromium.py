#!/usr/bin/env python3
"""`fp8-check diff --html` rendered by headless Chromium: the screenshot must show
the per-group heatmap and the ULP histogram, not just a blank page. Standard library only: the
two input files are written by hand as safetensors, the PNG is decoded with zlib + struct.

Case: two F32 (64, 64) tensors, equal except the top-left 32x32 block (every element +4 ULP) and one
NaN class mismatch at (63, 63). The heatmap has 32x32 cells of 2x2 elements, 14 px apart with 13 px
squares whose 1 px #ddd stroke covers the border pixels, leaving 11x11 px of fill: 16x16 pure-red
cells (#ff0000, the largest ULP of the page) and one #5a0000 cell.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import zlib

ROWS = COLS = 64
RED_CELLS, CELL_PX, CELL_PITCH = 16 * 16, 11 * 11, 14
RED_SPAN = 15 * CELL_PITCH + 11  # first to last pure-red pixel of the 16-cell block


def write_safetensors(path, name, values_bits):
    data = b"".join(struct.pack("<I", v) for v in values_bits)
    header = json.dumps({name: {"dtype": "F32", "shape": [ROWS, COLS], "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def decode_png(path):
    """Returns (width, height, rows of (r, g, b) tuples) for 8-bit RGB/RGBA non-interlaced PNGs."""
    blob = open(path, "rb").read()
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(blob):
        (length,) = struct.unpack(">I", blob[pos:pos + 4])
        kind, body = blob[pos + 4:pos + 8], blob[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, f"unsupported PNG layout {ihdr}"
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, rows = bytearray(stride), []
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # PNG spec §9.2 filters: None, Sub, Up, Average, Paeth
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp8-check", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    w = lambda n: os.path.join(args.workdir, n)

    one = 0x3F800000
    ref = [one] * (ROWS * COLS)
    got = [one + 4 if (i // COLS < 32 and i % COLS < 32) else one for i in range(ROWS * COLS)]
    got[-1] = 0x7FC00000
    write_safetensors(w("got.safetensors"), "x", got)
    write_safetensors(w("ref.safetensors"), "x", ref)
    html = w("report.html")
    rc = subprocess.run([args.fp8_check, "diff", w("got.safetensors"), w("ref.safetensors"), "--metric", "ulp:1",
                         "--html", html], stdout=subprocess.DEVNULL).returncode
    if rc != 1:
        sys.exit(f"FAIL: fp8-check diff exited {rc}, want 1 (differs)")

    png = w("report.png")
    if os.path.exists(png):
        os.remove(png)
    cmd = [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--force-device-scale-factor=1", f"--user-data-dir={w('chromium-profile')}",
           f"--screenshot={png}", "--window-size=1200,900", "file://" + os.path.abspath(html)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if not os.path.exists(png):
        sys.exit(f"FAIL: chromium wrote no screenshot (exit {proc.returncode}):\n{proc.stdout.decode(errors='replace')[-2000:]}")
    size = os.path.getsize(png)
    if size < 4000:
        sys.exit(f"FAIL: screenshot is only {size} bytes")

    width, height, rows = decode_png(png)
    red = [(x, y) for y, row in enumerate(rows) for x, (r, g, b) in enumerate(row) if r >= 235 and g <= 30 and b <= 30]
    dark = sum(1 for row in rows for (r, g, b) in row if 70 <= r <= 110 and g <= 20 and b <= 20)
    green = sum(1 for row in rows for (r, g, b) in row if abs(r - 0x8F) <= 8 and abs(g - 0xBC) <= 8 and abs(b - 0x8F) <= 8)
    print(f"screenshot {width}x{height}, {size} bytes; red heatmap px {len(red)}, dark-red px {dark}, green px {green}")
    want = RED_CELLS * CELL_PX
    problems = []
    if (width, height) != (1200, 900):
        problems.append(f"screenshot is {width}x{height}, want 1200x900")
    if not 0.8 * want <= len(red) <= 1.2 * want:
        problems.append(f"{len(red)} red heatmap pixels, want about {want} (16x16 cells of 11x11 px)")
    else:
        xs, ys = [p[0] for p in red], [p[1] for p in red]
        span = (max(xs) - min(xs) + 1, max(ys) - min(ys) + 1)
        print(f"red block spans {span[0]}x{span[1]} px")
        if any(abs(s - RED_SPAN) > 3 for s in span):
            problems.append(f"red block spans {span} px, want about {RED_SPAN} px square")
    if dark < CELL_PX // 2:
        problems.append(f"{dark} dark-red pixels: the NaN class-mismatch cell / histogram bar is not drawn")
    if green < 100:
        problems.append(f"{green} green pixels: the ULP histogram's 0-ULP bar is not drawn")
    if problems:
        sys.exit("FAIL: " + "; ".join(problems) + f" (see {png})")
    print("PASS: the heatmap and the ULP histogram are drawn")


if __name__ == "__main__":
    main()
