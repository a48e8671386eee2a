#!/usr/bin/env python3
"""Writes an LMDB database the way the PyTorch ImageNet/LMDB guides do, for
tests/lmdb_tests.cpp: keys b"0", b"1", ... holding msgpack [image, label],
and b"__len__" the count.

    make_lmdb.py OUT --records N [--file] [--len msgpack|ascii|none]
                 [--old-msgpack] [--bad INDEX:KIND] [--drop INDEX] [--extra]

Record i's "image" is synthetic bytes whose length and content follow from
i alone (image_bytes below; lmdb_tests.cpp computes the same), so the test
can check every byte read back. Its label is label_of(i).

--file          write a single data file OUT (subdir=False) instead of OUT/data.mdb
--len           how __len__ is stored (default msgpack); none: no such key
--old-msgpack   images as msgpack str (raw), as msgpack < 1.0 wrote bytes
--bad I:KIND    record I malformed: notarray (a map), three (3 elements),
                labelstr (label "cat"), truncated (value cut 10 bytes short
                of its end, inside the image)
--drop I        leave record I out (keys no longer contiguous)
--extra         also store non-numeric keys (__keys__, meta) that the
                index must ignore
The lock file LMDB writes beside the data is removed afterwards.
"""
import argparse
import os

import lmdb
import msgpack


def image_size(i: int) -> int:
    # Small (read whole), medium, a few pages, and overflow pages.
    return [5 + i, 100 + 13 * i, 5000 + i, 70000 + 101 * i][i % 4]


def image_bytes(i: int) -> bytes:
    return bytes(((i * 31 + j * 7 + (j >> 8)) & 0xFF) for j in range(image_size(i)))


def label_of(i: int) -> int:
    if i == 1:
        return -5
    if i == 2:
        return 1 << 40
    return (i * 7) % 13


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--file", action="store_true")
    ap.add_argument("--len", choices=["msgpack", "ascii", "none"], default="msgpack")
    ap.add_argument("--old-msgpack", action="store_true")
    ap.add_argument("--bad", default="")
    ap.add_argument("--drop", type=int, default=-1)
    ap.add_argument("--extra", action="store_true")
    a = ap.parse_args()

    bad_index, bad_kind = -1, ""
    if a.bad:
        index, bad_kind = a.bad.split(":")
        bad_index = int(index)

    # A map far larger than the data, as the guides set it: the reader must
    # size its map from the file.
    env = lmdb.open(a.out, subdir=not a.file, map_size=1 << 34, lock=True)
    with env.begin(write=True) as txn:
        for i in range(a.records):
            if i == a.drop:
                continue
            img, label = image_bytes(i), label_of(i)
            value = msgpack.packb([img, label], use_bin_type=not a.old_msgpack)
            if i == bad_index:
                if bad_kind == "notarray":
                    value = msgpack.packb({"image": img, "label": label})
                elif bad_kind == "three":
                    value = msgpack.packb([img, label, 0])
                elif bad_kind == "labelstr":
                    value = msgpack.packb([img, "cat"])
                elif bad_kind == "truncated":
                    value = value[:-10]
                else:
                    raise SystemExit(f"unknown --bad kind {bad_kind!r}")
            txn.put(str(i).encode("ascii"), value)
        if a.len == "msgpack":
            txn.put(b"__len__", msgpack.packb(a.records))
        elif a.len == "ascii":
            txn.put(b"__len__", str(a.records).encode("ascii"))
        if a.extra:
            txn.put(b"__keys__", msgpack.packb([str(i) for i in range(a.records)]))
            txn.put(b"meta", b"not a record")
    env.close()
    lock = a.out + "-lock" if a.file else os.path.join(a.out, "lock.mdb")
    if os.path.exists(lock):
        os.remove(lock)


if __name__ == "__main__":
    main()
