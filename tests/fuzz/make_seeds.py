#!/usr/bin/env python3
"""Writes the small committed seeds of the npy, npz and png fuzz targets into
tests/fuzz/seeds/<target>/ (standard library only): .npy files of every dtype the reader
knows and of each format version, .npz archives stored, deflated and ZIP64, and PNGs of
every colour type and bit depth, with palettes, tRNS and Adam7 interlacing.

    /usr/bin/python3 tests/fuzz/make_seeds.py      (rewrites the folders)
"""
import io
import os
import shutil
import struct
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def npy_bytes(descr, shape, payload, version=1, fortran=False):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False",
                                                                        shape_text)
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode("latin1") + payload


def npy_seeds():
    out = {}
    item = {"f4": 4, "f8": 8, "f2": 2, "i1": 1, "i2": 2, "i4": 4, "i8": 8, "u1": 1, "u2": 2, "u4": 4,
            "u8": 8, "b1": 1, "c8": 8, "c16": 16}
    for code, size in item.items():
        order = "|" if size == 1 else "<"
        payload = bytes((7 * k + 1) % 256 for k in range(6 * size))
        out["%s_2x3.npy" % code] = npy_bytes(order + code, (2, 3), payload)
    out["f4_scalar.npy"] = npy_bytes("<f4", (), struct.pack("<f", 1.5))
    out["f4_empty.npy"] = npy_bytes("<f4", (0,), b"")
    out["f4_1d_v2.npy"] = npy_bytes("<f4", (3,), struct.pack("<3f", 1, 2, 3), version=2)
    out["i8_4d_v3.npy"] = npy_bytes("<i8", (1, 2, 1, 2), struct.pack("<4q", -1, 0, 1, 2**62), version=3)
    out["bool_q.npy"] = npy_bytes("|?", (4,), bytes([0, 1, 2, 255]))
    out["big_endian_i4.npy"] = npy_bytes(">i4", (2,), struct.pack(">2i", 1, 2))
    out["fortran.npy"] = npy_bytes("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4), fortran=True)
    out["truncated.npy"] = npy_bytes("<f8", (4,), struct.pack("<2d", 1, 2))
    return out


def zip_bytes(entries, compression=zipfile.ZIP_STORED, zip64=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression, allowZip64=True) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(data)
    return buf.getvalue()


def npz_seeds():
    npy = npy_seeds()
    a = npy["f4_2x3.npy"]
    b = npy["i8_4d_v3.npy"]
    c = npy["bool_q.npy"]
    return {
        "stored.npz": zip_bytes([("a.npy", a), ("b.npy", b)]),
        "deflated.npz": zip_bytes([("a.npy", a), ("c.npy", c)], zipfile.ZIP_DEFLATED),
        "zip64.npz": zip_bytes([("x.npy", b)], zip64=True),
        "zip64_deflated.npz": zip_bytes([("y.npy", a)], zipfile.ZIP_DEFLATED, zip64=True),
        "folder_entry.npz": zip_bytes([("dir/", b""), ("dir/s.npy", npy["f4_scalar.npy"])]),
    }


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def scanline(samples, depth):
    if depth == 16:
        return b"\0" + b"".join(struct.pack(">H", v) for v in samples)
    if depth == 8:
        return b"\0" + bytes(samples)
    row, acc, used = bytearray(b"\0"), 0, 0
    for v in samples:
        acc, used = (acc << depth) | v, used + depth
        if used == 8:
            row.append(acc)
            acc, used = 0, 0
    if used:
        row.append(acc << (8 - used))
    return bytes(row)


def png_bytes(width, height, depth, color, plte=None, trns=None, interlace=False):
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    top = (1 << depth) - 1 if color != 3 else len(plte) // 3 - 1

    def sample(x, y, c):
        return (x * 5 + y * 3 + c * 7) % (top + 1)

    def rows(xs, ys, dx, dy):
        data = b""
        for y in range(ys, height, dy):
            line = [sample(x, y, c) for x in range(xs, width, dx) for c in range(channels)]
            if line:
                data += scanline(line, depth)
        return data

    if interlace:
        raw = b"".join(rows(*p) for p in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                                           (1, 0, 2, 2), (0, 1, 1, 2)))
    else:
        raw = rows(0, 0, 1, 1)
    png = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0,
                                                                 int(interlace)))
    if plte is not None:
        png += png_chunk(b"PLTE", plte)
    if trns is not None:
        png += png_chunk(b"tRNS", trns)
    return png + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


def png_seeds():
    palette = bytes((k * 37) % 256 for k in range(3 * 16))
    out = {}
    for depth in (1, 2, 4, 8, 16):
        out["gray%d.png" % depth] = png_bytes(13, 5, depth, 0)
    out["gray8_trns.png"] = png_bytes(9, 4, 8, 0, trns=struct.pack(">H", 3))
    out["rgb8.png"] = png_bytes(7, 6, 8, 2)
    out["rgb16_trns.png"] = png_bytes(5, 3, 16, 2, trns=struct.pack(">3H", 1, 2, 3))
    out["pal4_trns.png"] = png_bytes(11, 3, 4, 3, plte=palette, trns=bytes([0, 128, 255]))
    out["pal8.png"] = png_bytes(6, 6, 8, 3, plte=palette)
    out["gray_alpha8.png"] = png_bytes(4, 4, 8, 4)
    out["gray_alpha16.png"] = png_bytes(3, 2, 16, 4)
    out["rgba8.png"] = png_bytes(8, 2, 8, 6)
    out["rgba16.png"] = png_bytes(2, 2, 16, 6)
    out["interlaced_rgb8.png"] = png_bytes(19, 9, 8, 2, interlace=True)
    out["interlaced_pal2.png"] = png_bytes(10, 11, 2, 3, plte=palette[:12], interlace=True)
    out["wide_200x1.png"] = png_bytes(200, 1, 8, 0)
    out["tall_1x200.png"] = png_bytes(1, 200, 8, 0)
    return out


def main():
    for target, files in (("npy", npy_seeds()), ("npz", npz_seeds()), ("png", png_seeds())):
        folder = os.path.join(HERE, "seeds", target)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name, data in sorted(files.items()):
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print("%s: %d files, %d bytes" % (folder, len(files), sum(len(d) for d in files.values())))


if __name__ == "__main__":
    main()
