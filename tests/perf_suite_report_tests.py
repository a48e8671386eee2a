#!/usr/bin/python3
"""perf/suite_report.py on made-up measurements: the ratios to the
bare-decode limit and to the DataLoader per dataset and profile (report.json
"ratios" and report.md's table), the large-photo profile's own section, and
reports written before there were datasets still render.

  perf_suite_report_tests.py PERF_DIR     (ctest passes the source's perf/)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

PERF = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "perf")
sys.path.insert(0, PERF)
import suite_report  # noqa: E402


def measurement(tool, pipeline, ips, cache="warm", layout="small", io="buffered", **extra):
    return {"tool": tool, "layout": layout, "pipeline": pipeline, "io": io, "cache": cache, "status": "ok",
            "images_per_s": ips, "mb_per_s": ips / 10, "rounds_ok": 1, **extra}


def profile(dataset, measurements):
    return {"profile": "nvme", "dataset": dataset, "limits": "none", "layouts":
            {"small": {"dir": "/d", "bytes": 1000, "files": 10}}, "measurements": measurements}


RUN = {"command": "perf/run --quick", "quick": True, "images": 10, "hdd_images": 10, "classes": 2, "rounds": 1,
       "binary": "ringfeed", "build": "built", "pack": "ringfeed pack", "path": "", "root": False,
       "datasets": ["imagenet", "large"], "large_images": 10, "decode_limit": "decode_limit",
       "python_path": "python", "notes": [], "dataset_dir": "/d", "suite_seconds": 1}


class ratios(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        raw = os.path.join(self.tmp.name, "raw")
        os.makedirs(raw)
        limit = dict(layout="small", io="memory", cache="memory", megapixels_per_image=2.5, threads=2)
        large = profile("large", [
            measurement("decode_limit", "decode", 100.0, **limit),
            measurement("ringfeed", "train", 150.0), measurement("ringfeed", "val", 80.0),
            measurement("python", "train", 140.0), measurement("python", "val", 80.0),
            measurement("pytorch", "train", 30.0), measurement("pytorch", "val", 20.0),
            measurement("pytorch_draft", "train", 60.0), measurement("pytorch_draft", "val", 40.0)])
        imagenet = profile("imagenet", [
            measurement("fio", "none", 0.0, io="direct", cache="direct", mb_per_s=500.0),
            measurement("ringfeed", "none", 5000.0), measurement("ringfeed", "val", 900.0),
            measurement("ringfeed", "train", 1000.0), measurement("pytorch", "train", 250.0)])
        for name, p in (("nvme-large.json", large), ("nvme-imagenet.json", imagenet)):
            with open(os.path.join(raw, name), "w") as f:
                json.dump(p, f)
        with open(os.path.join(self.tmp.name, "run.json"), "w") as f:
            json.dump(RUN, f)
        self.out = os.path.join(self.tmp.name, "out")
        subprocess.run([sys.executable, os.path.join(PERF, "suite_report.py"), "--raw", raw, "--run",
                        os.path.join(self.tmp.name, "run.json"), "--out", self.out], check=True)
        with open(os.path.join(self.out, "report.json")) as f:
            self.rep = json.load(f)
        with open(os.path.join(self.out, "report.md")) as f:
            self.md = f.read()

    def tearDown(self):
        self.tmp.cleanup()

    def test_ratio_rows_per_dataset_and_profile(self):
        rows = {(r["dataset"], r["profile"], r["cache"]): r for r in self.rep["ratios"]}
        self.assertEqual(list(rows), [("imagenet", "nvme", "warm"), ("large", "nvme", "warm")])  # imagenet first
        large = rows[("large", "nvme", "warm")]
        self.assertAlmostEqual(large["ringfeed_train_vs_decode_limit"], 1.5)
        self.assertAlmostEqual(large["ringfeed_val_vs_decode_limit"], 0.8)
        self.assertAlmostEqual(large["ringfeed_train_vs_dataloader"], 5.0)
        self.assertAlmostEqual(large["ringfeed_val_vs_dataloader"], 4.0)
        self.assertAlmostEqual(large["ringfeed_train_vs_dataloader_draft"], 2.5)
        self.assertAlmostEqual(large["python_train_vs_ringfeed_bench"], 140 / 150)
        self.assertAlmostEqual(large["decode_limit_megapixels_per_image"], 2.5)
        imagenet = rows[("imagenet", "nvme", "warm")]
        self.assertAlmostEqual(imagenet["ringfeed_train_vs_dataloader"], 4.0)
        self.assertIsNone(imagenet["ringfeed_train_vs_decode_limit"])  # no decode_limit measured there

    def test_markdown_shows_the_ratios_and_the_large_profile(self):
        self.assertIn("## Against the bare-decode limit and the DataLoader", self.md)
        self.assertIn("| large photos (1-4 MP) | nvme | warm | 100 (2.50 MP) | 150 (1.50×) | 80.0 (0.80×) |", self.md)
        self.assertIn("No bare-decode measurement for imagenet nvme", self.md)
        self.assertIn("## Profile `nvme`, large photos (1-4 MP)", self.md)
        self.assertIn("| bare decode (TurboJPEG, in memory) | small | 100 |", self.md)
        self.assertIn("| DataLoader, Pillow draft() train | small |", self.md)
        # The headline stays the ImageNet-like dataset's.
        headline = self.md.split("## Headline")[1].split("##")[0]
        self.assertIn("| nvme (warm) |", headline)
        self.assertEqual(headline.count("| nvme"), 1)

    def test_a_report_from_before_datasets_still_renders(self):
        old = dict(self.rep)
        del old["ratios"]
        old["profiles"] = [dict(p) for p in old["profiles"] if p["dataset"] == "imagenet"]
        del old["profiles"][0]["dataset"]
        md = suite_report.markdown(old)
        self.assertIn("| ImageNet-like | nvme | warm | — | 1,000 (—) |", md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
