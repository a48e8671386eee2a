#!/usr/bin/python3
"""Packs an ImageFolder tree into WebDataset tar shards, the layout
`ringfeed pack SRC OUTDIR [--shard-mb N]` writes, for perf/run on a build
whose CLI has no `pack` yet:

  OUTDIR/shard-000000.tar, shard-000001.tar, ...  ustar, at most N MiB each
  OUTDIR/classes.txt                               class names in label order

Sample i of a seeded permutation becomes `<key>.<ext>` (the file's bytes, ext
lowercased) and `<key>.cls` (its label as decimal text), key = i zero-padded
to 8 digits; headers carry no owner or time. Labels are the sorted class
folder names' indices (ImageFolder's and ringfeed's rule).

  suite_pack.py SRC OUTDIR [--shard-mb N] [--seed S]
"""
import argparse
import io
import os
import random
import sys
import tarfile

EXTS = (".jpg", ".jpeg", ".png")


def member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = 0
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--shard-mb", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    classes = sorted(d for d in os.listdir(a.src) if os.path.isdir(os.path.join(a.src, d)) and not d.startswith("."))
    samples = []
    for label, c in enumerate(classes):
        for root, _, names in os.walk(os.path.join(a.src, c)):
            samples += [(os.path.join(root, n), label) for n in sorted(names) if n.lower().endswith(EXTS)]
    if not samples:
        print(f"suite_pack: no images in class folders under {a.src}", file=sys.stderr)
        return 1
    random.Random(a.seed).shuffle(samples)

    os.makedirs(a.out, exist_ok=True)
    limit = a.shard_mb << 20
    shard, tar, used = 0, None, 0

    def close() -> None:
        if tar is not None:
            tar.close()
            os.rename(os.path.join(a.out, f"shard-{shard:06d}.tar.tmp"), os.path.join(a.out, f"shard-{shard:06d}.tar"))

    for i, (path, label) in enumerate(samples):
        with open(path, "rb") as f:
            data = f.read()
        need = 512 + (len(data) + 511) // 512 * 512 + 1024  # image member + the .cls member
        if tar is not None and used + need > limit:
            close()
            shard, tar = shard + 1, None
        if tar is None:
            tar = tarfile.open(os.path.join(a.out, f"shard-{shard:06d}.tar.tmp"), "w", format=tarfile.USTAR_FORMAT)
            used = 1024  # end-of-archive blocks
        key = f"{i:08d}"
        ext = os.path.splitext(path)[1].lower()
        tar.addfile(member(key + ext, len(data)), io.BytesIO(data))
        cls = str(label).encode()
        tar.addfile(member(key + ".cls", len(cls)), io.BytesIO(cls))
        used += need
    close()
    with open(os.path.join(a.out, "classes.txt"), "w") as f:
        f.write("".join(c + "\n" for c in classes))
    print(f"suite_pack: {len(samples)} samples, {shard + 1} shards -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
