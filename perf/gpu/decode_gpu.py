#!/usr/bin/env python3
"""Issue 43's measurements on a GPU machine: decode="gpu" against the CPU.

One run, side by side, on `ringfeed gen` data (ImageNet-like, and
--photos large: 1-4 MP):

  loader    `ringfeed bench` (no model), train recipe at --size, float16 NCHW
            on the device: decode=gpu with --gpu-threads threads vs decode=cpu
            with every thread. images/s (steady), CPU cores busy (the child's
            user + system time over its wall time), and their ratio.
            Goals: >= 20,000 images/s with <= 4 cores, >= 2.5x the CPU decode.
  baseline  large photos only: torch's DataLoader(16 workers, pin_memory) on
            ImageFolder with Pillow's draft() before RandomResizedCrop (the
            cheap trick people use on big photos), the batches moved to the
            GPU. Goal: decode=gpu >= 5x it.
  accuracy  the GPU decode against the CPU decode of the same files and the
            same crops: ringfeed.Loader(decode="gpu", uint8) vs
            ringfeed.Loader(exact=True, decode="cpu", uint8), same seed (the
            crops and flips are drawn from the header's size either way);
            per image mean |d| and max |d|, their distribution, the share of
            images with mean |d| <= 1.0 (goal >= 99%), and which backend took
            what share, and why the rest went to the CPU.

Each part runs on its own: one that fails (a crash of the GPU decoder, say)
is recorded with its error in the JSON, which is rewritten after every part,
and the rest still run; the exit status is then 1. Without a CUDA device it
exits 77 saying why.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
import traceback


def child_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def gen(cli, root, images, photos):
    if os.path.exists(os.path.join(root, "train")):
        return os.path.join(root, "train")
    subprocess.run([cli, "gen", root, "--images", str(images), "--classes", "100", "--photos", photos], check=True)
    return os.path.join(root, "train")


def bench(cli, source, decode, threads, size, epochs):
    cmd = [cli, "bench", source, "--pipeline", "train", "--size", str(size), "--output", "float16", "--device", "0",
           "--decode", decode, "--threads", str(threads), "--epochs", str(epochs), "--json"]
    c0, t0 = child_cpu_s(), time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    wall, cpu = time.monotonic() - t0, child_cpu_s() - c0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode} (its error is above)")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    steady = out.get("steady_images_per_s") or out["images_per_s"]
    # cores: the steady state's (bench's own CPU clock, all its threads);
    # the whole child's (start-up and CUDA's initialisation too) beside it
    return {"decode": decode, "threads": threads, "images_per_s": steady,
            "cpu_cores": out.get("steady_cpu_cores") or cpu / wall, "cpu_cores_whole_run": cpu / wall,
            "wall_s": wall, "gpu_decode": out.get("gpu_decode"), "decode_reason": out.get("decode_reason"),
            "bottleneck": out.get("bottleneck"), "pipeline_stats": out.get("stages")}


def dataloader_draft(source, size, workers, batches, torch):
    """DataLoader(workers, pin_memory) with Pillow's draft(): images/s."""
    import torchvision
    import torchvision.transforms as T
    from PIL import Image

    def load(path):
        im = Image.open(path)
        im.draft("RGB", (size, size))  # DCT scaling to >= size x size, as the fast loaders do
        return im.convert("RGB")

    tf = T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = torchvision.datasets.ImageFolder(source, transform=tf, loader=load)
    dl = torch.utils.data.DataLoader(ds, batch_size=256, shuffle=True, num_workers=workers, pin_memory=True,
                                     drop_last=True, persistent_workers=True)

    def endless():  # across epochs: a small set holds fewer batches than are measured
        while True:
            yield from dl
    n, t0 = 0, None
    for k, (x, _) in enumerate(endless()):
        x = x.to("cuda", non_blocking=True).half()
        if k == 2:  # warm-up: the workers' start
            torch.cuda.synchronize()
            t0, n = time.monotonic(), 0
        elif k > 2:
            n += x.shape[0]
        if k >= batches + 2:
            break
    torch.cuda.synchronize()
    return {"images_per_s": n / (time.monotonic() - t0), "workers": workers, "batches": batches}


def accuracy(source, size, limit, torch):
    import numpy as np
    import ringfeed
    common = dict(pipeline="train", size=size, output="uint8", seed=7, shuffle=False, batch_size=64, threads=8,
                  epochs=1)
    gpu = ringfeed.Loader(source, device="cuda", decode="gpu", **common)
    cpu = ringfeed.Loader(source, exact=True, decode="cpu", **common)
    means, maxes = [], []
    for (xg, yg), (xc, yc) in zip(gpu, cpu):
        assert torch.equal(yg.cpu(), yc), "the two loaders gave different samples"
        d = np.abs(xg.cpu().numpy().astype(np.int16) - xc.numpy().astype(np.int16))
        d = d.reshape(d.shape[0], -1)
        means += d.mean(axis=1).tolist()
        maxes += d.max(axis=1).tolist()
        if len(means) >= limit:
            break
    st = gpu.stats()
    gpu.close()
    cpu.close()
    means, maxes = np.array(means), np.array(maxes)
    pct = lambda a: {p: float(np.percentile(a, p)) for p in (50, 90, 99, 100)}
    return {"images": int(len(means)), "mean_abs": pct(means), "max_abs": pct(maxes),
            "share_mean_le_1": float((means <= 1.0).mean()), "gpu_decode": st.get("gpu_decode")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ringfeed", required=True, help="the ringfeed CLI")
    ap.add_argument("--python-path", help="directory holding the ringfeed package")
    ap.add_argument("--gen-dir", default="build/gpu-machine", help="where the datasets are generated")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--gpu-threads", type=int, default=4)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if args.python_path:
        sys.path.insert(0, args.python_path)
    import torch
    if not torch.cuda.is_available():
        print("decode_gpu: no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
        return 77
    cores = len(os.sched_getaffinity(0))
    n_img, n_large = (3000, 500) if args.quick else (20000, 2000)
    sets = {"imagenet": gen(args.ringfeed, os.path.join(args.gen_dir, f"gen-{n_img}"), n_img, "imagenet"),
            "large": gen(args.ringfeed, os.path.join(args.gen_dir, f"gen-large-{n_large}"), n_large, "large")}
    result = {"gpu": torch.cuda.get_device_name(0), "cores": cores, "torch": torch.__version__, "loader": {},
              "accuracy": {}, "failed": {}}

    def part(name, fn):
        """fn() on its own: a failure is recorded and the next part runs; the JSON is rewritten after each."""
        print(f"decode_gpu: {name} ...", file=sys.stderr, flush=True)
        try:
            fn()
        except Exception as e:  # noqa: BLE001 (every part's failure is reported, none ends the run)
            traceback.print_exc()
            result["failed"][name] = f"{type(e).__name__}: {e}"
            print(f"decode_gpu: {name} FAILED: {e}", flush=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    def loader(name, src):
        epochs = 2
        g = bench(args.ringfeed, src, "gpu", args.gpu_threads, args.size, epochs)
        result["loader"][name] = {"gpu": g}
        gd = g.get("gpu_decode") or {}
        if gd.get("where") != "gpu":  # bench falls back to the CPU (stats say why): not what this measures
            result["failed"][f"loader {name}: decode=gpu"] = f"decoded on the {gd.get('where')}: {gd.get('reason')}"
            print(f"decode_gpu: warning: decode=gpu decoded on the {gd.get('where')}: {gd.get('reason')}", flush=True)
        c = bench(args.ringfeed, src, "cpu", cores, args.size, epochs)
        result["loader"][name].update(cpu=c, ratio=g["images_per_s"] / c["images_per_s"])
        print(f"{name:9s} decode=gpu {g['images_per_s']:9.0f} img/s on {g['cpu_cores']:.1f} cores | decode=cpu "
              f"{c['images_per_s']:9.0f} img/s on {c['cpu_cores']:.1f} cores | {result['loader'][name]['ratio']:.2f}x",
              flush=True)

    def baseline():
        dl = dataloader_draft(sets["large"], args.size, 16, 10 if args.quick else 30, torch)
        result["dataloader_draft_large"] = dl
        gpu = result["loader"].get("large", {}).get("gpu")
        if gpu:
            result["large_vs_dataloader"] = gpu["images_per_s"] / dl["images_per_s"]
        print(f"large     DataLoader(16 workers, pinned, draft) {dl['images_per_s']:9.0f} img/s"
              + (f": decode=gpu is {result['large_vs_dataloader']:.2f}x" if gpu else ""), flush=True)

    def acc(name, src):
        a = result["accuracy"][name] = accuracy(src, args.size, 1000 if args.quick else 5000, torch)
        print(f"accuracy {name}: {a['images']} images, mean|d| p50 {a['mean_abs'][50]:.3f} p99 {a['mean_abs'][99]:.3f}"
              f", max|d| p99 {a['max_abs'][99]:.0f}; mean|d| <= 1.0 on {100 * a['share_mean_le_1']:.2f}%", flush=True)

    for name, src in sets.items():
        part(f"loader {name}", lambda name=name, src=src: loader(name, src))
    part("baseline", baseline)
    for name, src in sets.items():
        part(f"accuracy {name}", lambda name=name, src=src: acc(name, src))
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
