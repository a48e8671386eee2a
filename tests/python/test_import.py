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
        views = ringfeed.read_files([ringfeed.ImageFolder({val_dir!r}).samples[0][0]])
        assert "torch" not in sys.modules, "ImageFolder or read_files imported torch"
        print("OK", ringfeed.__version__)
    """)
    assert out.startswith("OK ")


def test_loader_imports_torch_when_constructed_and_the_first_batch_imports_nothing(val_dir):
    # A torch import inside the first next() is where a Ctrl-C turned into
    # RuntimeError (issue 27): the Loader imports torch up front instead.
    out = run_python(f"""
        import sys
        import ringfeed
        assert "torch" not in sys.modules
        loader = ringfeed.Loader({val_dir!r}, batch_size=4, threads=2)
        assert "torch" in sys.modules, "constructing a Loader did not import torch"
        looked_up = []
        class Recorder:
            def find_spec(self, name, path=None, target=None):
                looked_up.append(name)
                return None
        sys.meta_path.insert(0, Recorder())
        images, labels = next(iter(loader))
        torch_modules = [n for n in looked_up if n == "torch" or n.startswith("torch.")]
        assert not torch_modules, f"the first next() imported {{torch_modules}}"
        print("OK", tuple(images.shape))
    """)
    assert out.startswith("OK ")


def test_ctrl_c_while_the_loader_imports_torch_is_keyboard_interrupt_from_the_constructor(val_dir):
    # The child sends itself SIGINT when `import torch` starts (an import
    # hook: no timing involved) and reports where KeyboardInterrupt came out.
    out = run_python(f"""
        import os, signal, sys
        import ringfeed
        assert "torch" not in sys.modules
        class CtrlC:
            def find_spec(self, name, path=None, target=None):
                if name == "torch":
                    sys.meta_path.remove(self)
                    os.kill(os.getpid(), signal.SIGINT)
                return None
        sys.meta_path.insert(0, CtrlC())
        try:
            loader = ringfeed.Loader({val_dir!r}, batch_size=4, threads=2)
        except KeyboardInterrupt:
            print("KeyboardInterrupt from Loader()")
            raise SystemExit(0)
        try:
            next(iter(loader))
        except BaseException as e:
            print(type(e).__name__, "from the first next()")
            raise SystemExit(0)
        print("no interrupt")
    """)
    assert out.strip() == "KeyboardInterrupt from Loader()"


def test_ctrl_c_that_torch_reports_as_runtime_error_is_keyboard_interrupt(val_dir, tmp_path):
    # A SIGINT that lands while torch's C extension initializes comes out of
    # `import torch` as RuntimeError("KeyboardInterrupt: <EMPTY MESSAGE>")
    # (Debian's torch 1.13; only a timed signal lands there, so a stand-in
    # torch raises it here). The Loader and decode() raise KeyboardInterrupt.
    fake = tmp_path / "fake_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise RuntimeError("KeyboardInterrupt: <EMPTY MESSAGE>")\n')
    out = run_python(f"""
        import sys
        sys.path.insert(0, {str(fake.parent)!r})
        import ringfeed
        for what, make in (("Loader()", lambda: next(iter(ringfeed.Loader({val_dir!r}, batch_size=4, threads=2)))),
                           ("decode()", lambda: ringfeed.decode(open(ringfeed.ImageFolder({val_dir!r}).samples[0][0], "rb").read()))):
            try:
                make()
            except KeyboardInterrupt as e:
                assert isinstance(e.__cause__, RuntimeError), repr(e.__cause__)
                print(what, "KeyboardInterrupt")
            except BaseException as e:
                print(what, type(e).__name__, e)
    """)
    assert out.splitlines() == ["Loader() KeyboardInterrupt", "decode() KeyboardInterrupt"]


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
