"""A PEP 517 build backend for `pip install --no-build-isolation .`: builds
the `ringfeed` package with CMake and packs it as a wheel.

Nothing from PyPI: CMake, Ninja, pybind11 and the libraries are Debian
packages (./bootstrap.sh deps). The build directory is build/wheel-<python>
in the source tree, so a second install rebuilds only what changed.
"""
from __future__ import annotations

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _project():
    with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as f:
        try:
            import tomllib
        except ImportError:  # Python < 3.11
            import tomli as tomllib
        return tomllib.load(f)


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{platform}"


def _build(config_settings):
    settings = _project().get("tool", {}).get("ringfeed", {}).get("build", {})
    build_dir = os.path.join(_ROOT, "build", f"wheel-py{sys.version_info.major}{sys.version_info.minor}")
    args = ["cmake", "-S", _ROOT, "-B", build_dir, "-G", "Ninja", f"-DPython3_EXECUTABLE={sys.executable}"]
    args += settings.get("cmake-args", [])
    args += shlex.split(os.environ.get("RINGFEED_CMAKE_ARGS", ""))
    args += shlex.split((config_settings or {}).get("cmake-args", ""))
    subprocess.run(args, check=True, stdout=sys.stderr)
    jobs = os.environ.get("RINGFEED_JOBS", str(os.cpu_count() or 1))
    subprocess.run(["cmake", "--build", build_dir, "--target", "ringfeed_python", "-j", jobs], check=True,
                   stdout=sys.stderr)
    return os.path.join(build_dir, "python", "ringfeed")


def _metadata():
    p = _project()["project"]
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '')}"]
    for extra, reqs in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    return "\n".join(lines) + "\n"


def _dist_info():
    p = _project()["project"]
    return f"{p['name']}-{p['version']}.dist-info", f"{p['name']}-{p['version']}"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


# --- PEP 517 hooks ------------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info, _ = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package = _build(config_settings)
    dist_info, stem = _dist_info()
    tag = _tag()
    wheel_name = f"{stem}-{tag}.whl"
    files = {}
    for name in sorted(os.listdir(package)):
        if name.endswith((".py", ".so")):
            with open(os.path.join(package, name), "rb") as f:
                files[f"ringfeed/{name}"] = f.read()
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: ringfeed build_backend\n"
                                   f"Root-Is-Purelib: false\nTag: {tag}\n").encode()
    record = [_record_line(n, d) for n, d in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel_name
