#!/usr/bin/env python3
"""Writes the image cases of fm_image_test (runtime/image/image_test.cpp).

Usage: make_pil_cases.py OUT_DIR

PNG and JPEG files made with PIL (and a few PNGs assembled by hand where PIL
cannot write the variant: 2-bit gray, 16-bit RGB, Adam7 interlacing, a huge
header), each with what PIL makes of it: the decoded RGB pixels
(Image.open(f).convert("RGB")), the pixels resized to the case's size
(Image.resize, PIL's filter), and the normalized [3, S, S] tensor as the
numpy reference computes it (test/reference/fm_reference.py,
preprocess_image). Plus broken or unsupported files and the words their
error must contain.  OUT_DIR/cases.txt lists them, one per line:

  ok NAME FILE SIZE RESAMPLE MEAN0 MEAN1 MEAN2 STD0 STD1 STD2 WIDTH HEIGHT
      NAME.decoded.rgb (WIDTH x HEIGHT x 3 bytes), NAME.resized.rgb (SIZE^2 x 3),
      NAME.tensor.f32 (3 x SIZE x SIZE float32, little-endian)
  resize NAME FILE WIDTH HEIGHT RESAMPLE
      NAME.resized.rgb: FILE's RGB pixels resized to WIDTH x HEIGHT
  error NAME FILE WORDS...
      decoding FILE must fail with a message that names FILE and holds WORDS

Deterministic: fixed seeds; PIL's own encoders.
"""

import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "reference"))
import fm_reference as ref  # noqa: E402

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
FILTERS = {"bicubic": Image.BICUBIC, "bilinear": Image.BILINEAR}


def picture(rng, h, w):
    """A smooth scene with edges and noise: exercises both the filter's
    negative lobes (clipping) and plain interpolation."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / max(w, 1) * 6.0) * np.cos(y / max(h, 1) * 4.0)
    g = 255.0 * (x + y) / max(w + h - 2, 1)
    b = np.where((x // 5 + y // 5) % 2 == 0, 230.0, 20.0)
    img = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def chunk(tag, data):
    return (struct.pack(">I", len(data)) + tag + data +
            struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))


def png_bytes(w, h, color_type, depth, rows, interlace=0):
    """A PNG from already-packed filter-0 scanlines (rows: list of bytes)."""
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\x00" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def adam7_rgb(px):
    """An Adam7-interlaced 8-bit RGB PNG of px [h, w, 3]."""
    h, w, _ = px.shape
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
              (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        sub = px[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        for row in sub:
            raw += b"\x00" + row.tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def vit_cfg(size, resample, mean, std):
    """A minimal fm_vit config carrying the preprocessing fields."""
    return {"image_size": size, "patch_size": 1, "hidden_size": 1, "num_layers": 0,
            "num_heads": 1, "intermediate_size": 1,
            "adapter": {"lm_hidden_size": 1, "grid": 1},
            "image_mean": list(mean), "image_std": list(std), "resample": resample}


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    lines = []

    def save_pil(name, im, fmt, **kw):
        path = os.path.join(out, name)
        im.save(path, fmt, **kw)
        return name

    def save_bytes(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        return name

    def ok(name, file, size, resample="bicubic", mean=CLIP_MEAN, std=CLIP_STD):
        path = os.path.join(out, file)
        with Image.open(path) as im:
            rgb = im.convert("RGB")
        decoded = np.asarray(rgb)
        resized = np.asarray(rgb.resize((size, size), FILTERS[resample]))
        tensor = ref.preprocess_image(vit_cfg(size, resample, mean, std), path)
        assert tensor.shape == (3, size, size) and tensor.dtype == np.float32
        decoded.tofile(os.path.join(out, name + ".decoded.rgb"))
        resized.tofile(os.path.join(out, name + ".resized.rgb"))
        tensor.astype("<f4").tofile(os.path.join(out, name + ".tensor.f32"))
        lines.append("ok %s %s %d %s %s %s %d %d" % (
            name, file, size, resample, " ".join(repr(float(m)) for m in mean),
            " ".join(repr(float(s)) for s in std), decoded.shape[1], decoded.shape[0]))

    def resize_case(name, file, w, h, resample):
        with Image.open(os.path.join(out, file)) as im:
            rgb = im.convert("RGB")
        np.asarray(rgb.resize((w, h), FILTERS[resample])).tofile(
            os.path.join(out, name + ".resized.rgb"))
        lines.append("resize %s %s %d %d %s" % (name, file, w, h, resample))

    def error(name, file, words):
        lines.append("error %s %s %s" % (name, file, words))

    # --- PNG, every color type PIL reads -------------------------------
    rgb64 = picture(rng, 48, 64)
    ok("rgb_down", save_pil("rgb_down.png", Image.fromarray(rgb64), "PNG"), 32)
    ok("rgb_up_odd", save_pil("rgb_up_odd.png", Image.fromarray(picture(rng, 7, 13)), "PNG"), 40)
    ok("exact_size", save_pil("exact.png", Image.fromarray(picture(rng, 32, 32)), "PNG"), 32)
    ok("big_down", save_pil("big_down.png", Image.fromarray(picture(rng, 200, 300)), "PNG"), 16)
    ok("gray", save_pil("gray.png", Image.fromarray(picture(rng, 17, 31)[..., 1]), "PNG"),
       24, "bilinear", (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    la = np.stack([picture(rng, 25, 20)[..., 0], rng.integers(0, 256, (25, 20), dtype=np.uint8)], -1)
    ok("gray_alpha", save_pil("gray_alpha.png", Image.fromarray(la, "LA"), "PNG"), 16)
    rgba = np.concatenate([picture(rng, 50, 50), rng.integers(0, 256, (50, 50, 1), dtype=np.uint8)], -1)
    ok("rgba", save_pil("rgba.png", Image.fromarray(rgba, "RGBA"), "PNG"), 37)
    pal = Image.fromarray(picture(rng, 30, 40)).quantize(colors=37)
    ok("palette", save_pil("palette.png", pal, "PNG"), 28)
    ok("palette_trns", save_pil("palette_trns.png", pal, "PNG", transparency=5), 28)
    small_pal = Image.fromarray(picture(rng, 11, 9)).quantize(colors=4)
    ok("palette_2bit", save_pil("palette_2bit.png", small_pal, "PNG", bits=2), 12)
    bilevel = Image.fromarray(picture(rng, 21, 33)[..., 2]).convert("1")
    ok("bilevel", save_pil("bilevel.png", bilevel, "PNG"), 24)
    g2 = rng.integers(0, 4, (5, 9))
    rows2 = []
    for r in g2:
        bits = list(r) + [0] * (-len(r) % 4)
        rows2.append(bytes((bits[i] << 6) | (bits[i + 1] << 4) | (bits[i + 2] << 2) | bits[i + 3]
                           for i in range(0, len(bits), 4)))
    ok("gray_2bit", save_bytes("gray_2bit.png", png_bytes(9, 5, 0, 2, rows2)), 12)
    rgb16 = rng.integers(0, 65536, (9, 11, 3)).astype(">u2")
    ok("rgb_16bit", save_bytes("rgb_16bit.png", png_bytes(11, 9, 2, 16, [r.tobytes() for r in rgb16])), 8)
    g16 = rng.integers(0, 600, (10, 10)).astype(">u2")  # PIL "I": clipped at 255
    ok("gray_16bit", save_bytes("gray_16bit.png", png_bytes(10, 10, 0, 16, [r.tobytes() for r in g16])), 7)
    ok("interlaced", save_bytes("interlaced.png", adam7_rgb(picture(rng, 19, 23))), 16)

    # --- JPEG ------------------------------------------------------------
    ok("jpeg_420", save_pil("jpeg_420.jpg", Image.fromarray(picture(rng, 45, 61)), "JPEG", quality=90), 32)
    ok("jpeg_444", save_pil("jpeg_444.jpg", Image.fromarray(picture(rng, 40, 40)), "JPEG",
                            quality=95, subsampling=0), 40)
    ok("jpeg_gray", save_pil("jpeg_gray.jpg", Image.fromarray(picture(rng, 29, 37)[..., 0]), "JPEG"), 24)
    ok("jpeg_progressive", save_pil("jpeg_progressive.jpg", Image.fromarray(picture(rng, 60, 80)),
                                    "JPEG", quality=85, progressive=True), 56, "bilinear")
    ok("jpeg_odd_422", save_pil("jpeg_odd_422.jpg", Image.fromarray(picture(rng, 33, 35)), "JPEG",
                                quality=80, subsampling=1), 20)

    # --- Resize sweep: up, down, non-square, both filters ----------------
    for w, h in ((1, 1), (3, 2), (31, 47), (64, 48), (100, 10), (129, 97), (7, 200)):
        for f in ("bicubic", "bilinear"):
            resize_case("sweep_%dx%d_%s" % (w, h, f), "rgb_down.png", w, h, f)

    # --- Errors ------------------------------------------------------------
    cmyk = Image.fromarray(picture(rng, 16, 16)).convert("CMYK")
    error("cmyk", save_pil("cmyk.jpg", cmyk, "JPEG"), "4-component JPEG (CMYK)")
    error("gif", save_pil("anim.gif", Image.fromarray(picture(rng, 8, 8)), "GIF"),
          "GIF images are not supported")
    error("bmp", save_pil("image.bmp", Image.fromarray(picture(rng, 8, 8)), "BMP"),
          "BMP images are not supported")
    error("random", save_bytes("random.bin", bytes(rng.integers(1, 256, 200, dtype=np.uint8))),
          "not a PNG or JPEG file")
    error("empty", save_bytes("empty.png", b""), "the file is empty")
    with open(os.path.join(out, "rgb_down.png"), "rb") as f:
        png = f.read()
    error("truncated_png", save_bytes("truncated.png", png[:len(png) * 6 // 10]),
          "corrupt PNG: the file ends inside the image (truncated)")
    at = png.index(b"IDAT") + 40
    error("bad_crc_png", save_bytes("bad_crc.png", png[:at] + bytes([png[at] ^ 0x5A]) + png[at + 1:]),
          "corrupt PNG")
    huge = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 70000, 70000, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))
    error("huge_png", save_bytes("huge.png", huge), "70000 x 70000 pixels is over the limit")
    with open(os.path.join(out, "jpeg_420.jpg"), "rb") as f:
        jpg = f.read()
    error("truncated_jpeg", save_bytes("truncated.jpg", jpg[:len(jpg) // 2]),
          "corrupt or unsupported JPEG: the file ends inside the image (truncated)")
    error("garbage_jpeg", save_bytes("garbage.jpg", b"\xff\xd8\xff" + bytes(rng.integers(0, 256, 300, dtype=np.uint8))),
          "corrupt or unsupported JPEG")
    error("missing", "no_such_file.png", "cannot open the image file")

    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("make_pil_cases: %d cases in %s" % (len(lines), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
