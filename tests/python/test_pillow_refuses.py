"""Files Pillow 9.4 refuses: ringfeed.decode delivers those whose pixels the
file defines in full (the metadata Pillow chokes on is not used: the pixels
are those of the same file without it) and refuses, naming the file, those
whose image data is cut or corrupt (README, "Files Pillow refuses").

The files are made here from committed inputs (tests/data/image/decode/),
each with one defect of the kind Pillow's own test files have; the
unmodified inputs equal Pillow's pixels (image_decode_tests)."""
from __future__ import annotations

import struct
import zlib

import pytest
import torch

import ringfeed

from conftest import REPO

DECODE = REPO / "tests" / "data" / "image" / "decode"


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_chunks(data: bytes):
    """(offset, kind, total length) of every chunk after the signature."""
    at = 8
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        yield at, data[at + 4:at + 8], 12 + n
        at += 12 + n


def before_iend(png: bytes, extra: bytes) -> bytes:
    at = next(o for o, kind, _ in png_chunks(png) if kind == b"IEND")
    return png[:at] + extra + png[at:]


@pytest.fixture(scope="module")
def png() -> bytes:
    return (DECODE / "rgba.png").read_bytes()


@pytest.fixture(scope="module")
def jpeg() -> bytes:
    return (DECODE / "s420.jpg").read_bytes()


def same_pixels(bytes_a, bytes_b, name):
    a = ringfeed.decode(bytes_a, name=name)
    b = ringfeed.decode(bytes_b, name="reference")
    assert a.shape == b.shape
    assert torch.equal(a, b), f"{name}: pixels differ from the file without its defect"


def test_png_text_chunk_pillow_calls_a_decompression_bomb_is_delivered(png):
    # zTXt inflating to 2 MiB: Pillow's MAX_TEXT_CHUNK (1 MiB) makes
    # Image.open raise "Decompressed Data Too Large".
    bomb = chunk(b"zTXt", b"Comment\0\0" + zlib.compress(b"\0" * (2 << 20), 9))
    same_pixels(before_iend(png, bomb), png, "text-bomb.png")


def test_png_text_chunk_with_unknown_compression_method_is_delivered(png):
    # Method 1 is not deflate: Pillow raises "Unknown compression method".
    odd = chunk(b"zTXt", b"Comment\0\1" + b"not deflate")
    same_pixels(before_iend(png, odd), png, "unknown-method.png")


def test_png_cut_after_its_image_data_is_delivered(png):
    # Pillow's truncated_end_chunk.png: a chunk header with nothing after it
    # where IEND should be ("Truncated File Read" in Pillow 9.4).
    at = next(o for o, kind, _ in png_chunks(png) if kind == b"IEND")
    cut = png[:at] + struct.pack(">I", 30286) + b"IDAT"
    same_pixels(cut, png, "cut-end.png")


def test_png_cut_inside_its_image_data_is_refused(png):
    at, _, length = next(c for c in png_chunks(png) if c[1] == b"IDAT")
    cut = png[:at + length // 2]
    with pytest.raises(RuntimeError, match="cut-idat.png"):
        ringfeed.decode(cut, name="cut-idat.png")


def test_jpeg_with_truncated_exif_is_delivered(jpeg):
    # Pillow's truncated_exif_dpi.jpg: an APP1 "Exif" block whose IFD offset
    # points past its end (Pillow 9.4 cannot identify the file).
    app1 = b"\xff\xe1" + struct.pack(">H", 2 + 13) + b"Exif\0\0MM\0\x2a\0\0\0\xff"
    same_pixels(jpeg[:2] + app1 + jpeg[2:], jpeg, "truncated-exif.jpg")


def test_jpeg_cut_inside_its_scan_is_refused(jpeg):
    with pytest.raises(RuntimeError, match="cut-scan.jpg"):
        ringfeed.decode(jpeg[:len(jpeg) * 2 // 3], name="cut-scan.jpg")
