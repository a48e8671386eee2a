"""`ringfeed gen` datasets for the perf scripts: a complete one already in
place is reused (its ringfeed-gen.json says what it holds), else it is made."""
import json
import os
import subprocess
import sys


def complete_gen(out, images, classes):
    """OUT/train when OUT holds a complete `ringfeed gen` of `images` training
    images in `classes` classes, else None."""
    try:
        with open(os.path.join(out, "ringfeed-gen.json")) as fh:
            marker = json.load(fh)
    except (OSError, ValueError):
        return None
    if marker.get("complete") and (marker.get("train_images"), marker.get("classes")) == (images, classes):
        return os.path.join(out, "train")
    return None


def ensure_gen(out, images, classes, cli, who, extra=()):
    """OUT/train, running `CLI gen OUT --images N --classes C EXTRA...` first
    unless complete_gen() finds it. `cli` may be a callable that returns the
    CLI's path (only called when a dataset has to be made); `who` prefixes
    the command line echoed to stderr."""
    found = complete_gen(out, images, classes)
    if found:
        return found
    cli = cli() if callable(cli) else cli
    cmd = [cli, "gen", out, "--images", str(images), "--classes", str(classes), *extra]
    print(f"{who}: " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)
    return os.path.join(out, "train")
