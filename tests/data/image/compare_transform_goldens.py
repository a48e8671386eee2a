#!/usr/bin/python3
"""Makes every transform golden again, in memory, under the installed torch /
torchvision / timm / Pillow (make_transform_goldens.py's own functions) and
compares each entry with the committed one: which recipes give other bytes
(or other draws) on these versions than on the ones the goldens were made
with (torchvision 0.14 for goldens.json, 0.29 / torch 2.14 for the rest).
Writes nothing under tests/; prints a table and, with --json PATH, the
result. Needs the ringfeed module on PYTHONPATH, e.g. for torch 2.11 /
torchvision 0.26 (tests/python/torch211-requirements.txt):

  PYTHONPATH=build/default/python <venv>/bin/python tests/data/image/compare_transform_goldens.py
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import torch  # noqa: E402
import torchvision  # noqa: E402
import torchvision.transforms as T  # noqa: E402

import make_transform_goldens as M  # noqa: E402
import transform_recipes as R  # noqa: E402

OP_NAME = re.compile(r"((?:v2\.)?[A-Z][A-Za-z0-9]*)\(")


def _load(path):
    with open(path) as f:
        return json.load(f)


def _float_diff(a, b):
    import test_tensor_geometry as G
    x, y = G.decode_values(a), G.decode_values(b)
    return float((x - y).abs().max()) if x.shape == y.shape else float("inf")


def _entry_equal(new, old):
    """(equal, note): float values within 1e-6 count as equal, as the tests do."""
    if isinstance(new, dict) and isinstance(old, dict):
        new = {k: v for k, v in new.items() if k != "reference"}  # the torch it was made with: differs by design
        old = {k: v for k, v in old.items() if k != "reference"}
        if "values" in new and new.keys() == old.keys():
            diffs = {img: _float_diff(new["values"][img], old["values"].get(img, new["values"][img]))
                     for img in new["values"]}
            worst = max(diffs.values(), default=0.0)
            rest_new = {k: v for k, v in new.items() if k != "values"}
            rest_old = {k: v for k, v in old.items() if k != "values"}
            return rest_new == rest_old and worst <= 1e-6, f"float max diff {worst:g}"
    return new == old, ""


def _compare(family, new, old, ops):
    rows = []
    for key in sorted(new):
        if key.startswith("_"):
            continue
        if key not in old:
            rows.append((family, key, "not in the committed goldens"))
            continue
        for spec in re.findall(r'"spec": "((?:[^"\\]|\\.)*)"', json.dumps(new[key])):
            ops.update(OP_NAME.findall(spec))
        equal, note = _entry_equal(new[key], old[key])
        if not equal:
            rows.append((family, key, note or "differs"))
    checked = sum(1 for k in new if not k.startswith("_"))
    return checked, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args()
    import timm
    from PIL import Image
    versions = (f"torch {torch.__version__}, torchvision {torchvision.__version__}, timm {timm.__version__}, "
                f"Pillow {Image.__version__}, cpu {torch.backends.cpu.get_cpu_capability()}")
    print(versions, flush=True)
    ops, families, differ = set(), {}, []

    def family(name, new, old):
        checked, rows = _compare(name, new, old, ops)
        families[name] = {"checked": checked, "differ": len(rows)}
        differ.extend(rows)
        print(f"{name}: {checked} entries, {len(rows)} differ", flush=True)

    v1 = {rid: {img: R.digest(R.reference(t, os.path.join(R.DATA, img))) for img in R.IMAGES}
          for rid, t in R.recipes(T, torch).items()}
    import ringfeed.transforms as RT
    for rid, t in R.recipes(T, torch).items():
        ops.update(OP_NAME.findall(RT.to_spec(t)))
    family("goldens.json (v1, tv 0.14)", v1, _load(R.GOLDENS))
    family("v2_goldens.json", M.v2_goldens(), _load(R.V2_GOLDENS))
    tensor_old = _load(R.TENSOR_GOLDENS)
    prefix = "tgdefault_" if torch.backends.cpu.get_cpu_capability() == "DEFAULT" else "tg_"
    family("tensor_goldens.json", {k: v for k, v in M.tensor_goldens().items() if k.startswith(prefix)}, tensor_old)
    family("augment_v2_goldens.json", M.augment_v2_goldens(), _load(R.AUGMENT_V2_GOLDENS))
    timm_new, timm_old = M.timm_goldens(), _load(M.TIMM_GOLDENS)
    for part in sorted(k for k in timm_new if not k.startswith("_")):
        family(f"timm_goldens.json[{part}]", timm_new[part], timm_old.get(part, {}))
    augmix_old = _load(R.AUGMIX_GOLDENS)
    augmix_new = M.augmix_goldens()
    same_as = [key for key, old in augmix_old.items() if old == augmix_new]
    families["augmix_goldens.json"] = {"checked": len(augmix_new), "same_as": same_as}
    print(f"augmix_goldens.json: {len(augmix_new)} cases, equal to the goldens of {same_as or 'none'}")
    if not same_as:
        differ.append(("augmix_goldens.json", "*", "equals no committed torch's set"))
    for row in differ:
        print("DIFFERS", *row)
    print(f"{len(ops)} op names in the specs checked: {' '.join(sorted(ops))}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": versions, "families": families, "differ": differ, "ops": sorted(ops)}, f,
                      indent=1)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
