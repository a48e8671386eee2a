#!/usr/bin/python3
"""Every recipe of the transform-list issue through ringfeed.Loader against
torch's DataLoader(num_workers=2) + torchvision, in one run.

Same files (an ImageFolder, e.g. `ringfeed gen`'s train/), same cores, warm
page cache, interleaved rounds (for each round, each recipe: ringfeed then
DataLoader, or the other way on odd rounds) so a noisy machine's drift hits
both alike. Each contender runs one epoch in a fresh process:

  ringfeed    ringfeed.Loader(SOURCE, transform=T, batch_size=B, threads=W)
              (T given as torchvision objects; fast mode unless --exact)
  DataLoader  torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(
              SOURCE, transform=T), batch_size=B, shuffle=True, num_workers=W,
              persistent_workers=True)

With --floor, a third contender in the same rounds:

  floor       ringfeed.Loader(SOURCE, transform=<the recipe's leading
              Resize / CenterCrop / RandomResizedCrop / flip only>, ...)

the decode and geometry every recipe starts with, as uint8 images: the
part no op-level work can shrink (ringfeed decodes only the pixels the crop
needs, at bare libjpeg-turbo speed). floor / DataLoader is then the most a
recipe can reach against the DataLoader on these files.

Both consumers touch every batch alike (one element per sample and the
labels). Each run does --epochs epochs (default 2) and times the last one,
from iter() to its last batch: start-up (imports, threads, worker
processes, the page cache) is not counted, what a training loop sees epoch
after epoch is. Reported: medians over the rounds, and ringfeed /
DataLoader.
Goal (the issue): every recipe >= 3x the DataLoader on the same cores.

  python3 perf/compare_recipes.py --source /tmp/gen/train --rounds 3 --out perf/results/recipes_2core.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def recipes():
    import torch
    import torchvision.transforms as T
    I = T.InterpolationMode
    imagenet = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    return {
        "cifar_resize224_norm": T.Compose([T.Resize((224, 224)), T.ToTensor(), T.Normalize([0.5], [0.5])]),
        "cifar_randomcrop32": T.Compose([T.Resize((32, 32)), T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(),
                                         T.ToTensor(), T.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))]),
        "mnist_gray28": T.Compose([T.Resize((28, 28)), T.Grayscale(), T.ToTensor(), T.Normalize((0.1307,), (0.3081,))]),
        "ref_ta_wide_176": T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(),
                                      T.TrivialAugmentWide(interpolation=I.BILINEAR), T.PILToTensor(),
                                      T.ConvertImageDtype(torch.float), T.Normalize(*imagenet), T.RandomErasing(0.1)]),
        "ref_ra_m9": T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                T.RandAugment(magnitude=9, interpolation=I.BILINEAR), T.PILToTensor(),
                                T.ConvertImageDtype(torch.float), T.Normalize(*imagenet)]),
        "ref_autoaugment_imagenet": T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                               T.AutoAugment(T.AutoAugmentPolicy.IMAGENET), T.ToTensor(),
                                               T.Normalize(*imagenet)]),
        "ref_augmix_176": T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(),
                                     T.AugMix(interpolation=I.BILINEAR), T.PILToTensor(),
                                     T.ConvertImageDtype(torch.float), T.Normalize(*imagenet), T.RandomErasing(0.1)]),
        "ref_val_232_bicubic": T.Compose([T.Resize(232, I.BICUBIC), T.CenterCrop(224), T.PILToTensor(),
                                          T.ConvertImageDtype(torch.float), T.Normalize(*imagenet)]),
        "timm_eval_875": T.Compose([T.Resize(int(224 / 0.875), I.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                    T.Normalize(*imagenet)]),
        "timm_eval_95": T.Compose([T.Resize(int(224 / 0.95), I.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                   T.Normalize(*imagenet)]),
        "simclr": T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                             T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(0.2),
                             T.GaussianBlur(23, sigma=(0.1, 2.0)), T.ToTensor(), T.Normalize(*imagenet)]),
    }


def head(t):
    """The recipe's leading decode-side geometry (see --floor)."""
    import torchvision.transforms as T
    ops = []
    for op in t.transforms:
        if not isinstance(op, (T.Resize, T.CenterCrop, T.RandomResizedCrop, T.RandomHorizontalFlip)):
            break
        ops.append(op)
    return T.Compose(ops)


def touch(x, y):
    return float(x.reshape(x.shape[0], -1)[:, 0].float().sum()) + int(y.sum())


def child(args):
    """One epoch of one contender; prints {"images", "seconds"} as JSON."""
    import torch
    t = recipes()[args.recipe]
    if args.contender == "floor":
        args.contender, t = "ringfeed", head(t)
    if args.contender == "ringfeed":
        import ringfeed
        loader = ringfeed.Loader(args.source, batch_size=args.batch, transform=t, threads=args.workers,
                                 exact=args.exact, seed=1)
    else:
        import torchvision
        ds = torchvision.datasets.ImageFolder(args.source, transform=t)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                             persistent_workers=True)
    check = 0.0
    for _ in range(args.epochs - 1):  # warm-up epochs: threads, worker processes, page cache
        for x, y in loader:
            check += touch(x, y)
    images = 0
    start = time.perf_counter()
    for x, y in loader:
        check += touch(x, y)
        images += x.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"images": images, "seconds": seconds, "checksum": check}))


def run(args, contender, recipe):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", contender, "--recipe", recipe, "--source",
           args.source, "--batch", str(args.batch), "--workers", str(args.workers), "--epochs", str(args.epochs)] + (["--exact"] if args.exact else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{contender} {recipe} failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return r["images"] / r["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="an ImageFolder directory")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers = ringfeed threads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2, help="epochs per run; the last one is timed")
    ap.add_argument("--exact", action="store_true", help="ringfeed in exact mode (default: fast)")
    ap.add_argument("--recipes", help="comma-separated subset")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--floor", action="store_true", help="also time each recipe's decode + geometry head alone")
    ap.add_argument("--child", choices=["ringfeed", "dataloader", "floor"], help=argparse.SUPPRESS)
    ap.add_argument("--recipe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.contender = args.child
        return child(args)
    names = args.recipes.split(",") if args.recipes else list(recipes())
    contenders = ("ringfeed", "dataloader") + (("floor",) if args.floor else ())
    runs = {n: {c: [] for c in contenders} for n in names}
    for r in range(args.rounds):
        for n in names:
            order = contenders if r % 2 == 0 else contenders[::-1]
            for c in order:
                runs[n][c].append(run(args, c, n))
            print(f"round {r + 1}/{args.rounds} {n}: " + ", ".join(f"{c} {runs[n][c][-1]:.0f} img/s" for c in contenders),
                  file=sys.stderr)
    rows = []
    floor_head = f" {'floor img/s':>12} {'ceiling':>8}" if args.floor else ""
    print(f"\n{'recipe':28} {'ringfeed img/s':>15} {'DataLoader img/s':>17} {'ratio':>7}{floor_head}  goal >= 3x")
    for n in names:
        a = statistics.median(runs[n]["ringfeed"])
        b = statistics.median(runs[n]["dataloader"])
        row = {"recipe": n, "ringfeed_images_per_s": a, "dataloader_images_per_s": b, "ratio": a / b,
               "ringfeed_runs": runs[n]["ringfeed"], "dataloader_runs": runs[n]["dataloader"]}
        extra = ""
        if args.floor:
            f = statistics.median(runs[n]["floor"])
            row.update({"floor_images_per_s": f, "ceiling_ratio": f / b, "floor_runs": runs[n]["floor"]})
            extra = f" {f:12.0f} {f / b:7.2f}x"
        rows.append(row)
        print(f"{n:28} {a:15.0f} {b:17.0f} {a / b:6.2f}x{extra}  {'ok' if a / b >= 3 else 'SHORT'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"source": args.source, "batch": args.batch, "workers": args.workers, "rounds": args.rounds,
                       "mode": "exact" if args.exact else "fast", "cpus": os.cpu_count(), "recipes": rows}, f,
                      indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
