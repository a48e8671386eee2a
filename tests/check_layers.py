#!/usr/bin/env python3
"""Fails when a layer includes a higher layer's header.

The layers, lowest first, are the library targets of lib/CMakeLists.txt:
core, io, data, image, cuda, loader (and above them the bindings: the C API
and the Python module, which may include anything). A file may include
headers of its own layer and of the layers below it, never above:
include/ringfeed/io/*.hpp may not include <ringfeed/data/...>, lib/image/
may not include "io/...", and so on.

Every public header (include/ringfeed) and every file under lib/ is read;
both `#include <ringfeed/...>` and quoted includes of lib/'s private headers
("io/cache/cache_writer.hpp", "../cuda/device_api.hpp") are checked.

usage: check_layers.py [SOURCE_DIR]   (default: this script's ../)
Prints each upward include as file:line and exits 1 if there is one.
"""
import pathlib
import re
import sys

LAYERS = ["core", "io", "data", "image", "cuda", "loader", "bindings"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# Public headers at include/ringfeed/ top level, by layer. A folder
# (io/, data/, image/, cuda/, detail/) is its layer; a new top-level header
# must be added here, or the check fails and says so.
TOP_LEVEL = {
    "task.hpp": "core", "sync_wait.hpp": "core", "when_all.hpp": "core",
    "async_scope.hpp": "core", "executor.hpp": "core", "thread_pool.hpp": "core",
    "channel.hpp": "core", "text.hpp": "core", "log.hpp": "core",
    "random.hpp": "core", "output_spec.hpp": "core", "config.hpp": "core",
    "config.hpp.in": "core",
    # forwarding headers to include/ringfeed/loader/, kept for one release
    "loader.hpp": "loader", "batch.hpp": "loader", "stats.hpp": "loader",
    "next_handoff.hpp": "loader", "asio.hpp": "loader",
    "ringfeed.h": "bindings",
}
FOLDERS = {"detail": "core", "io": "io", "data": "data", "image": "image",
           "cuda": "cuda", "loader": "loader"}
# lib/<folder>: the layer its files belong to.
LIB_FOLDERS = {"core": "core", "io": "io", "data": "data", "image": "image",
               "cuda": "cuda", "loader": "loader", "python": "bindings", "capi": "bindings"}
LIB_TOP_LEVEL = {}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SUFFIXES = {".hpp", ".h", ".cpp", ".c", ".cu", ".in"}


def public_layer(rel):
    """Layer of include/ringfeed/<rel>, or None if unknown."""
    parts = pathlib.PurePosixPath(rel).parts
    if len(parts) == 1:
        return TOP_LEVEL.get(parts[0])
    return FOLDERS.get(parts[0])


def lib_layer(rel):
    """Layer of lib/<rel>, or None if unknown."""
    parts = pathlib.PurePosixPath(rel).parts
    if len(parts) == 1:
        return LIB_TOP_LEVEL.get(parts[0], "bindings" if parts[0].endswith(".in") else None)
    return LIB_FOLDERS.get(parts[0])


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    inc, lib = root / "include" / "ringfeed", root / "lib"
    files = []  # (path, its layer)
    problems = []
    for path in sorted(inc.rglob("*")):
        if path.suffix in SUFFIXES:
            layer = public_layer(path.relative_to(inc).as_posix())
            if layer is None:
                problems.append(f"{path.relative_to(root)}: no layer; add it to {pathlib.Path(__file__).name}")
                continue
            files.append((path, layer))
    for path in sorted(lib.rglob("*")):
        if path.suffix in SUFFIXES and "__pycache__" not in path.parts:
            layer = lib_layer(path.relative_to(lib).as_posix())
            if layer is None:
                problems.append(f"{path.relative_to(root)}: no layer; add it to {pathlib.Path(__file__).name}")
                continue
            files.append((path, layer))

    for path, layer in files:
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            target = None
            if kind == "<":
                if name.startswith("ringfeed/"):
                    target = public_layer(name[len("ringfeed/"):])
                    if target is None:
                        target = "unknown"
            else:
                # Quoted: beside the file first, then lib/ (its include dir).
                for base in (path.parent, lib):
                    candidate = (base / name).resolve()
                    if candidate.exists():
                        break
                else:
                    continue  # a generated or third-party header
                try:
                    target = lib_layer(candidate.relative_to(lib.resolve()).as_posix())
                except ValueError:
                    try:
                        target = public_layer(candidate.relative_to(inc.resolve()).as_posix())
                    except ValueError:
                        continue
            if target is None:
                continue
            if target == "unknown" or RANK[target] > RANK[layer]:
                problems.append(f"{path.relative_to(root)}:{n}: layer {layer} includes {kind}{name}{'>' if kind == '<' else kind} "
                                f"(layer {target}); order: {' < '.join(LAYERS)}")
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
