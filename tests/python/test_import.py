"""`import ringfeed` is light (no torch), and a Loader starts no thread until
it is iterated; close() joins them."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import ringfeed

from conftest import child_env


def run_python(code, timeout=120):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=child_env())
    assert proc.returncode == 0, f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    return proc.stdout


def test_import_does_not_import_torch(val_dir):
    out = run_python(f"""
        import sys
        import ringfeed
        assert "torch" not in sys.modules, "import ringfeed imported torch"
        # neither do the parts that produce no tensor
        ringfeed.ImageFolder({val_dir!r})
        loader = ringfeed.Loader({val_dir!r}, batch_size=4, threads=2)
        len(loader), loader.state_dict(), loader.stats(), repr(loader)
        views = ringfeed.read_files([ringfeed.ImageFolder({val_dir!r}).samples[0][0]])
        assert "torch" not in sys.modules, "a Loader or read_files imported torch"
        images, labels = next(iter(loader))
        assert "torch" in sys.modules
        print("OK", ringfeed.__version__)
    """)
    assert out.startswith("OK ")


def test_version():
    assert isinstance(ringfeed.__version__, str) and ringfeed.__version__.count(".") >= 1
    assert set(ringfeed.__all__) >= {"Loader", "Batch", "ImageFolder", "read_files", "decode"}


def test_threads_start_on_first_iteration_and_close_joins_them(train_dir):
    out = run_python(f"""
        import json, os
        def threads():
            return len(os.listdir("/proc/self/task"))
        import torch  # whatever threads importing torch makes, before counting
        import ringfeed
        before = threads()
        loader = ringfeed.Loader({train_dir!r}, batch_size=8, threads=2)
        constructed = threads()
        len(loader); loader.state_dict(); loader.stats(); loader.dataset_size
        queried = threads()
        images, labels = next(iter(loader))
        iterating = threads()
        loader.close()
        closed = threads()
        print(json.dumps(dict(before=before, constructed=constructed, queried=queried,
                              iterating=iterating, closed=closed)))
    """)
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts["constructed"] == counts["before"], f"constructing a Loader started threads: {counts}"
    assert counts["queried"] == counts["before"], f"len/state_dict/stats started threads: {counts}"
    assert counts["iterating"] >= counts["before"] + 2, f"iterating with threads=2 started no threads: {counts}"
    assert counts["closed"] == counts["before"], f"close() left threads behind: {counts}"
