#!/usr/bin/python3
"""perf/suite/suite_report.py on made-up measurements: the ratios to the
bare-decode limit and to the DataLoader per dataset and profile (report.json
"ratios" and report.md's table), the large-photo profile's own section, and
reports written before there were datasets still render. Also: the steady
state and start-up each loader cell reports (perf/suite/measure_cells.py on a
recorded `ringfeed bench --json` line, perf/compare/compare_loader.py's rule on
recorded batch times), `perf/run --quick --plan`'s expected duration against
its budget, the images/s plot's script (a colour per series, the ratio
to the DataLoader on each ringfeed bar, dataset and cache in each title),
and the flag on a cell whose rounds are more than 15% apart.

  perf_suite_report_tests.py PERF_DIR     (ctest passes the source's perf/)
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

PERF = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "perf")
SUITE = os.path.join(PERF, "suite")  # perf/run's scripts
sys.path[:0] = [SUITE, os.path.join(PERF, "compare")]
import measure_cells  # noqa: E402
import measure_host  # noqa: E402
import measure_rounds  # noqa: E402
import report_cells  # noqa: E402
import report_markdown  # noqa: E402
import report_plots  # noqa: E402
import report_sections  # noqa: E402
import compare_loader  # noqa: E402  (imports torch only inside its functions)


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
        subprocess.run([sys.executable, os.path.join(SUITE, "suite_report.py"), "--raw", raw, "--run",
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
        md = report_markdown.markdown(old)
        self.assertIn("| ImageNet-like | nvme | warm | — | 1,000 (—) |", md)


# One line `ringfeed bench --json` printed (trimmed): a 1000-image epoch whose
# first batch came 0.25 s after the loader started, opened in 0.05 s, 1.0 s in
# all (1000 images/s with the start-up), 1250 images/s after 8 warm-up batches.
RECORDED_BENCH = {"images": 1000, "seconds": 1.0, "images_per_s": 1000.0, "mb_per_s": 95.0, "bytes": 95000000,
                  "backend": "io_uring", "direct": False, "bottleneck": "decode", "threads": 2, "io_depth": 32,
                  "open_s": 0.05, "first_batch_s": 0.25, "warmup_batches": 8, "steady_images": 488,
                  "steady_seconds": 0.3904, "steady_images_per_s": 1250.0, "epoch_images_per_s": [1000.0],
                  "skipped": []}


class steady_state(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        # A stand-in CLI: `bench --help` lists --warmup-batches, `bench ...` prints the recorded line
        # and the arguments it got.
        self.cli = os.path.join(self.tmp.name, "ringfeed")
        self.args = os.path.join(self.tmp.name, "args")
        with open(self.cli, "w") as f:
            f.write("#!/bin/sh\n"
                    "case \"$*\" in *--help*) echo '  --warmup-batches INT'; exit 0 ;; esac\n"
                    f"echo \"$*\" > '{self.args}'\n"
                    f"echo '{json.dumps(RECORDED_BENCH)}'\n")
        os.chmod(self.cli, os.stat(self.cli).st_mode | stat.S_IEXEC)

    def tearDown(self):
        self.tmp.cleanup()

    def test_bench_cell_is_the_steady_state_with_start_up_apart(self):
        run = measure_host.runner(None, 30)
        m = measure_cells.ringfeed_once(run, self.cli, "/data", "train", False, 1, True, warmup=8)
        self.assertEqual(m["status"], "ok")
        self.assertEqual(m["images_per_s"], 1250.0)  # what the report's ratios use
        self.assertEqual(m["run_images_per_s"], 1000.0)  # the short run, start-up included
        self.assertAlmostEqual(m["startup_s"], 0.30)  # opening + first batch
        self.assertTrue(m["steady"])
        with open(self.args) as f:
            self.assertIn("--warmup-batches 8", f.read())  # every contender gets the same warm-up

    def test_stream_buffer_is_a_quarter_of_a_small_dataset(self):
        # Were the shuffle buffer the whole dataset, every read would come before the first batch.
        self.assertEqual(measure_cells.shuffle_buffer(1000), 250)
        self.assertIsNone(measure_cells.shuffle_buffer(10000))  # bench's own 1000
        run = measure_host.runner(None, 30)
        measure_cells.ringfeed_once(run, self.cli, "/shards", "train", False, 1, True, stream=True, warmup=8,
                                    shuffle_buffer=250)
        with open(self.args) as f:
            self.assertIn("--stream --shuffle-buffer 250", f.read())

    def test_no_steady_state_when_the_rest_came_at_once(self):
        # hdd, --stream, 300 images: everything decoded by the first batch, the other batches
        # came within microseconds; that is no steady state (it read as 28 million images/s).
        j = {"images": 300, "seconds": 0.9, "images_per_s": 333.0, "steady_images_per_s": 2.8e7,
             "steady_seconds": 6e-6, "open_s": 0.0, "first_batch_s": 0.84}
        cell = measure_cells.steady_cell(j, j["images_per_s"], measure_cells.startup_of(j))
        self.assertEqual((cell["images_per_s"], cell["steady"]), (333.0, False))
        self.assertIn("whole-run rate", cell["steady_note"])

    def test_recorded_batch_times(self):
        # 16 batches of 64 (the last 40): the first after 0.5 s (start-up), then one every 0.05 s.
        times = [0.5 + 0.05 * i for i in range(16)]
        sizes = [64] * 15 + [40]
        s = compare_loader.steady_state(0.0, times, sizes, warmup=8)
        self.assertAlmostEqual(s["first_batch_s"], 0.5)
        self.assertEqual(s["warmup_batches"], 8)
        self.assertEqual(s["steady_images"], 7 * 64 + 40)
        self.assertAlmostEqual(s["steady_images_per_s"], (7 * 64 + 40) / (0.05 * 8))
        # Warm-up is at most half the batches, at least the first.
        self.assertEqual(compare_loader.steady_state(0.0, times[:6], sizes[:6], warmup=8)["warmup_batches"], 3)
        self.assertEqual(compare_loader.steady_state(0.0, times, sizes, warmup=0)["warmup_batches"], 1)
        self.assertIsNone(compare_loader.steady_state(0.0, times[:1], sizes[:1], warmup=8)["steady_images_per_s"])

    def test_dataloader_and_bare_decode_cells_alike(self):
        j = {"images": 1000, "seconds": 2.0, "images_per_s": 500.0, "steady_images_per_s": 600.0,
             "open_s": 0.1, "first_batch_s": 0.9}
        cell = measure_cells.steady_cell(j, j["images_per_s"], measure_cells.startup_of(j))
        self.assertEqual((cell["images_per_s"], cell["run_images_per_s"]), (600.0, 500.0))
        self.assertAlmostEqual(cell["startup_s"], 1.0)
        old = measure_cells.steady_cell({"images_per_s": 500.0}, 500.0, None)  # an old build: no steady state
        self.assertEqual((old["images_per_s"], old["steady"]), (500.0, False))

    def test_report_shows_start_up_apart(self):
        cells = [measurement("ringfeed", "train", 1250.0, run_images_per_s=1000.0, startup_s=0.3, steady=True),
                 measurement("pytorch", "train", 600.0, run_images_per_s=500.0, startup_s=1.0, steady=True)]
        rep = {"run": RUN, "environment": {"cores": 2}, "profiles": [profile("imagenet", cells)]}
        row = report_sections.ratio_rows(rep)[0]
        self.assertAlmostEqual(row["ringfeed_train_vs_dataloader"], 1250 / 600)  # steady over steady
        md = "\n".join(report_sections.startup_section(rep))
        self.assertIn("| ImageNet-like | nvme | warm | 0.30 s; 1,000 → 1,250 | — | — | 1.00 s; 500 → 600 | — |", md)


class quick_plan(unittest.TestCase):
    def plan_output(self, *args):
        env = dict(os.environ, RINGFEED_PERF_BUILD_DIR=os.path.join(tempfile.gettempdir(), "no-such-build"))
        env.pop("RINGFEED_BIN", None)
        r = subprocess.run(["bash", os.path.join(PERF, "run"), "--quick", "--plan", *args], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r"expected duration: about (\d+) min (\d+) s .*\(build (\d+) s", r.stdout)
        self.assertIsNotNone(m, r.stdout)
        return int(m.group(1)) * 60 + int(m.group(2)), int(m.group(3)), r.stdout

    def test_quick_with_a_fresh_build_stays_under_ten_minutes(self):
        total, build, out = self.plan_output()
        self.assertGreater(build, 60)  # no build directory: a fresh Release build is in the plan
        self.assertLessEqual(total, 600, out)
        for phase in ("dataset: large", "profile hdd: imagenet", "profile nvme: imagenet", "profile nvme: large"):
            self.assertIn(phase, out)
        self.assertNotIn("profile sata-ssd", out)  # --quick: hdd and nvme unless --profiles says otherwise
        total3, _, out3 = self.plan_output("--profiles", "hdd,sata-ssd,nvme")
        self.assertIn("profile sata-ssd", out3)
        self.assertGreater(total3, total)

    def test_quick_runs_two_rounds(self):
        # One round cannot show that a cell's number depends on what ran before it: quick runs
        # two (perf/run's settings, the plan's and the plan's cost all alike), still in budget.
        import suite_plan
        self.assertGreaterEqual(suite_plan.SETTINGS[True]["rounds"], 2)
        with open(os.path.join(PERF, "run")) as f:
            quick_line = next(l for l in f if l.strip().startswith("images=1000 "))
        self.assertRegex(quick_line, r"\brounds=([2-9]|\d\d)\b")
        one = suite_plan.plan(True, ["hdd", "nvme"], ["imagenet", "large"], rounds=1)["total_s"]
        two = suite_plan.plan(True, ["hdd", "nvme"], ["imagenet", "large"])["total_s"]
        self.assertGreater(two, one)
        self.assertLessEqual(two, suite_plan.QUICK_BUDGET_S)

    def test_datasets_select_what_is_planned(self):
        total_all, _, _ = self.plan_output()
        total, _, out = self.plan_output("--datasets", "imagenet")
        self.assertNotIn("large", out)
        self.assertLess(total, total_all)

    def test_plan_counts_the_cells_suite_measure_runs(self):
        import suite_plan
        # nvme, ImageNet-like, quick, root: cold and warm, no warm --direct raw reads.
        c = suite_plan.cells("imagenet", "nvme", False, False, True, True, ["cold", "warm"], True)
        self.assertEqual(sum(1 for x in c if x[4] == "cold"), 16)
        self.assertNotIn(("ringfeed", "small", "none", "direct", "warm"), c)
        self.assertIn(("decode_limit", "small", "decode", "memory", "warm"), c)
        self.assertEqual(suite_plan.cache_states(True, True, "hdd", "imagenet"), ["cold"])
        self.assertEqual(suite_plan.cache_states(True, True, "nvme", "large"), ["warm"])


class rounds(unittest.TestCase):
    """The quick suite's val-on-a-folder cells (issue 41, item 4) read 0.4x the bare decode in one
    round, every cell always run after the same neighbour, with nothing to say the number was
    off. Rounds now alternate their order and a cell whose rounds disagree is flagged."""

    PLAN = [("ringfeed", "small", "none", "buffered"), ("ringfeed", "small", "val", "buffered"),
            ("python", "small", "val", "buffered"), ("ringfeed", "shards", "train", "buffered")]

    def test_every_other_round_runs_in_the_reverse_order(self):
        self.assertEqual(measure_rounds.round_order(self.PLAN, 0), self.PLAN)
        self.assertEqual(measure_rounds.round_order(self.PLAN, 1), self.PLAN[::-1])
        self.assertEqual(measure_rounds.round_order(self.PLAN, 2), self.PLAN)
        # The val cell's neighbour before it differs between the two rounds.
        before = [o[o.index(self.PLAN[1]) - 1] if o.index(self.PLAN[1]) else None
                  for o in (measure_rounds.round_order(self.PLAN, r) for r in (0, 1))]
        self.assertNotEqual(before[0], before[1])

    def test_rounds_more_than_15_percent_apart_are_flagged(self):
        runs = lambda *v: [{"status": "ok", "images_per_s": x, "mb_per_s": x / 10} for x in v]  # noqa: E731
        far = measure_rounds.summarize(runs(657.0, 1400.0))  # the neighbour's toll in one round only
        self.assertTrue(far["rounds_disagree"])
        self.assertAlmostEqual(far["spread"], (1400 - 657) / ((1400 + 657) / 2))
        near = measure_rounds.summarize(runs(1400.0, 1300.0))
        self.assertFalse(near["rounds_disagree"])  # 7%: within 15%
        self.assertNotIn("rounds_disagree", measure_rounds.summarize(runs(657.0)))  # one round: nothing to compare
        fio = measure_rounds.summarize([{"status": "ok", "mb_per_s": 500.0}, {"status": "ok", "mb_per_s": 700.0}])
        self.assertTrue(fio["rounds_disagree"])  # no images/s: MB/s is the cell's rate

    def test_report_flags_the_cell_and_lists_its_rounds(self):
        runs = [{"status": "ok", "images_per_s": 657.0}, {"status": "ok", "images_per_s": 1400.0}]
        val = measurement("ringfeed", "val", 1028.5, cache="cold", rounds_ok=2, runs=runs,
                          images_per_s_min=657.0, images_per_s_max=1400.0)
        train = measurement("ringfeed", "train", 1450.0, cache="cold", rounds_ok=2,
                            runs=[{"status": "ok", "images_per_s": 1400.0}, {"status": "ok", "images_per_s": 1500.0}])
        rep = {"run": dict(RUN, rounds=2), "environment": {"cores": 2}, "profiles": [profile("imagenet", [val, train])]}
        cells = report_cells.disagreeing_cells(rep)
        self.assertEqual([(c["label"], c["cache"], c["rounds"]) for c in cells],
                         [("ringfeed val", "cold", [657.0, 1400.0])])
        md = "\n".join(report_sections.rounds_section(rep))
        self.assertIn("Rounds that disagree by more than 15%", md)
        self.assertIn("| ImageNet-like | nvme | ringfeed val | small | cold | 72% | 657 / 1,400 images/s |", md)
        self.assertIn("1,028 (657–1,400) ⚠ 72%", report_cells.rate_cell(val, "images_per_s", []))
        self.assertNotIn("⚠", report_cells.rate_cell(train, "images_per_s", []))
        row = report_sections.ratio_rows(rep)[0]
        self.assertEqual(row["rounds_disagree"], ["ringfeed_val"])
        self.assertIn("1,028 ⚠", "\n".join(report_sections.ratio_section(rep)))
        # Every round agreeing, or a single round, is said as such.
        rep["profiles"] = [profile("imagenet", [train])]
        self.assertIn("rounds agree within 15%", "\n".join(report_sections.rounds_section(rep)))
        rep["run"] = dict(RUN, rounds=1)
        self.assertIn("not compared", "\n".join(report_sections.rounds_section(rep)))


class plot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        limit = dict(layout="small", io="memory", cache="memory", megapixels_per_image=2.5, threads=2)
        cold = [measurement(t, pl, v, cache="cold", steady=True) for t, pl, v in
                (("ringfeed", "val", 900.0), ("ringfeed", "train", 1000.0), ("python", "train", 980.0),
                 ("pytorch", "val", 300.0), ("pytorch", "train", 250.0))]
        warm = [measurement(t, pl, v, steady=True) for t, pl, v in
                (("ringfeed", "val", 950.0), ("ringfeed", "train", 1100.0), ("pytorch", "val", 380.0),
                 ("pytorch", "train", 275.0))]
        shards = [measurement("ringfeed", "train", 1200.0, cache="cold", layout="shards"),
                  measurement("ringfeed", "train", 800.0, cache="cold", layout="shards", io="stream")]
        large = [measurement("decode_limit", "decode", 100.0, **limit), measurement("ringfeed", "train", 150.0),
                 measurement("pytorch", "train", 30.0), measurement("pytorch_draft", "train", 60.0)]
        hdd = dict(profile("imagenet", [measurement("ringfeed", "train", 120.0, cache="cold"),
                                        measurement("pytorch", "train", 60.0, cache="cold")]), profile="hdd")
        self.rep = {"run": RUN, "environment": {"cores": 2},
                    "profiles": [profile("imagenet", cold + warm + shards), hdd, profile("large", large)]}
        self.scripts = report_plots.plot_scripts(self.rep, self.tmp.name)
        self.gp = self.scripts["images_per_s"]

    def tearDown(self):
        self.tmp.cleanup()

    def test_each_series_its_own_colour(self):
        key = self.gp[self.gp.rindex("set key"):]
        entries = re.findall(r"lc rgb '(#[0-9a-f]{6})' title '([^']*)'", key)
        titles = [t for _, t in entries]
        self.assertEqual(len(titles), len(set(titles)))
        self.assertIn("ringfeed val", titles)
        self.assertIn("PyTorch DataLoader train", titles)
        self.assertIn("DataLoader + Pillow draft() train", titles)
        colours = [c for c, _ in entries]
        self.assertEqual(len(colours), len(set(colours)), entries)  # no two series share a colour
        # The bars use the key's colours: one per series, in every panel.
        bar_colours = set(re.findall(r"with boxes lc rgb '(#[0-9a-f]{6})' notitle", self.gp))
        self.assertEqual(bar_colours, set(colours))

    def test_ratio_to_the_dataloader_on_each_ringfeed_bar(self):
        labels = re.findall(r'^\S+ (\S+) "([0-9.]+)×"$', self.gp, re.M)
        got = {(float(v), r) for v, r in labels}
        for v, r in ((900.0, "3.00"), (1000.0, "4.00"), (980.0, "3.92"), (1200.0, "4.80"), (800.0, "3.20"),
                     (950.0, "2.50"), (1100.0, "4.00"), (120.0, "2.00"), (150.0, "5.00")):
            self.assertIn((v, r), got)
        self.assertEqual(len(labels), 9)  # ringfeed bars only: not the DataLoader's, not the bare decode's
        self.assertNotIn("logscale", self.gp)  # linear: the bars' heights show the ratios

    def test_dataset_and_cache_state_in_each_panel_title(self):
        titles = re.findall(r"set title '([^']*)'", self.gp)
        self.assertEqual(titles, ["ImageNet-like, cold page cache", "ImageNet-like, warm page cache",
                                  "large photos (1-4 MP), warm page cache"])
        # The cold ImageNet-like panel has both profiles side by side.
        first = self.gp.split("set title")[1]
        self.assertIn("'nvme'", first)
        self.assertIn("'hdd'", first)

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot not installed")
    def test_gnuplot_draws_it(self):
        self.assertEqual(report_plots.plots(self.rep, self.tmp.name), [])
        with open(os.path.join(self.tmp.name, "images_per_s.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
