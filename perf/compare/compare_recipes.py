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
Run with the torch 2.x venv's python (bootstrap.sh) to add the v2 and
timm recipes (v2_val_256, v2_train_toimage, timm_create_eval_95,
timm_create_train_rand, timm_create_train_augmix).

The first three recipes are the PyTorch tuning guides' snippets for CIFAR-10
and MNIST, run above on ImageNet-size JPEGs (the CIFAR ones with a
Resize((32, 32)) first): there they time libjpeg-turbo's entropy decoding.
With --native WORK they also run as written, on the data they are written
for (random pixels in the published formats and sizes, written under WORK):

  @memory     torchvision.datasets.CIFAR10 / MNIST, the whole training split
              (50000 / 60000 arrays in memory): ringfeed.DataLoader(dataset,
              <DataLoader's arguments>) against torch's DataLoader
  @png        the first --native-images CIFAR-10 images as 32x32 PNG files in
              an ImageFolder: ringfeed.Loader(dir, transform=T) against
              DataLoader(ImageFolder(dir, transform=T))

  python3 perf/compare/compare_recipes.py --source /tmp/gen/train --native /tmp/native --rounds 3

  python3 perf/compare/compare_recipes.py --source /tmp/gen/train --rounds 3 --out perf/results/recipes_2core.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def recipes():
    import torch
    import torchvision.transforms as T
    I = T.InterpolationMode
    imagenet = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    out = {
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
        # issue 42: lists built from lists
        "nested_val_232": T.Compose([T.Compose([T.Resize(232, I.BICUBIC), T.CenterCrop(224)]),
                                     T.Compose([T.ToTensor(), T.Normalize(*imagenet)])]),
    }
    # issue 42: what torch 2.x scripts write (under the torch 2.x venv: bootstrap.sh's)
    try:
        from torchvision.transforms import v2
    except ImportError:
        v2 = None
    if v2 is not None and hasattr(v2, "ToImage"):
        out["v2_val_256"] = v2.Compose([v2.Resize(256), v2.CenterCrop(224), v2.PILToTensor(),
                                        v2.ToDtype(torch.float32, scale=True), v2.Normalize(*imagenet)])
        # the train snippet: ToImage first, so every op after it
        # runs on a uint8 tensor with torch's arithmetic
        out["v2_train_toimage"] = v2.Compose([
            v2.ToImage(), v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
            v2.TrivialAugmentWide(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(*imagenet),
            v2.RandomErasing(0.1)])
    try:
        import timm.data
        out["timm_create_eval_95"] = timm.data.create_transform(224, crop_pct=0.95, interpolation="bicubic")
        out["timm_create_train_rand"] = timm.data.create_transform(
            224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", interpolation="bicubic", re_prob=0.25,
            re_mode="pixel")
        out["timm_create_train_augmix"] = timm.data.create_transform(
            224, is_training=True, auto_augment="augmix-m5-w4-d2", interpolation="random", re_prob=0.25, re_count=3)
    except ImportError:
        pass
    return out


def native_recipes():
    """The tuning guides' CIFAR-10 and MNIST snippets as written, and their data."""
    import torchvision.transforms as T
    cifar = ((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))
    return {
        "cifar10_resize224_norm": ("cifar10", T.Compose([T.Resize((224, 224)), T.ToTensor(),
                                                         T.Normalize([0.5], [0.5])])),
        "cifar10_randomcrop32": ("cifar10", T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(),
                                                       T.ToTensor(), T.Normalize(*cifar)])),
        "mnist_totensor_norm": ("mnist", T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])),
    }


def native_cases():
    """case name -> (recipe, dataset, form); MNIST's recipe keeps each image's
    size (no crop or resize), so it has no file form ringfeed.Loader can batch."""
    cases = {}
    for name, (data, _) in native_recipes().items():
        cases[f"{name}@memory"] = (name, data, "memory")
        if data == "cifar10":
            cases[f"{name}@png"] = (name, data, "png")
    return cases


def write_native(work, images):
    """CIFAR-10 and MNIST in their published formats (compare_dataloader's
    writers), and the first `images` CIFAR-10 images as an ImageFolder of PNGs."""
    sys.path.insert(0, HERE)
    import compare_dataloader as cd
    cd.write_cifar(os.path.join(work, "cifar"))
    cd.write_mnist(os.path.join(work, "mnist"))
    png = os.path.join(work, f"cifar10-png-{images}")
    if os.path.exists(os.path.join(png, "complete")):
        return
    import pickle
    from PIL import Image
    with open(os.path.join(work, "cifar", "cifar-10-batches-py", "data_batch_1"), "rb") as f:
        batch = pickle.load(f)
    data = batch["data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    if images > len(data):
        sys.exit(f"--native-images {images}: the PNG folder takes at most {len(data)} (one CIFAR batch)")
    for i in range(images):
        folder = os.path.join(png, f"class{batch['labels'][i]}")
        os.makedirs(folder, exist_ok=True)
        Image.fromarray(data[i]).save(os.path.join(folder, f"{i:05d}.png"))
    open(os.path.join(png, "complete"), "w").close()


def native_child(args):
    """One epoch of one contender on a native case; prints {"images", "seconds"}."""
    import torch
    name, data, form = native_cases()[args.recipe]
    t = native_recipes()[name][1]
    if form == "png":
        loader = folder_loader(args, os.path.join(args.native, f"cifar10-png-{args.native_images}"), t)
    else:
        sys.path.insert(0, HERE)
        import compare_dataloader as cd
        ds = (cd.cifar10 if data == "cifar10" else cd.mnist)(args.native, t)
        if args.contender == "ringfeed":
            import ringfeed
            make = ringfeed.DataLoader
        else:
            make = torch.utils.data.DataLoader
        loader = make(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers, persistent_workers=True)
        if args.contender == "ringfeed" and loader.backend != "ringfeed":
            sys.exit(f"ringfeed.DataLoader fell back to torch's on {args.recipe}: not a measurement of ringfeed")
    return timed_epochs(loader, args.epochs)


def timed_epochs(loader, epochs):
    check = 0.0
    for _ in range(epochs - 1):  # warm-up epochs: threads, worker processes, page cache
        for x, y in loader:
            check += touch(x, y)
    images = 0
    start = time.perf_counter()
    for x, y in loader:
        check += touch(x, y)
        images += x.shape[0]
    seconds = time.perf_counter() - start
    print(json.dumps({"images": images, "seconds": seconds, "checksum": check}))


def head(t):
    """The recipe's leading decode-side geometry (see --floor)."""
    import torchvision.transforms as T
    ops = []
    for op in t.transforms:
        if not isinstance(op, (T.Resize, T.CenterCrop, T.RandomResizedCrop, T.RandomHorizontalFlip)) and \
                type(op).__name__ != "RandomResizedCropAndInterpolation":  # timm's
            break
        ops.append(op)
    return T.Compose(ops)


def touch(x, y):
    return float(x.reshape(x.shape[0], -1)[:, 0].float().sum()) + int(y.sum())


def child(args):
    """One epoch of one contender; prints {"images", "seconds"} as JSON."""
    if args.recipe in native_cases():
        return native_child(args)
    t = recipes()[args.recipe]
    if args.contender == "floor":
        args.contender, t = "ringfeed", head(t)
    return timed_epochs(folder_loader(args, args.source, t), args.epochs)


def folder_loader(args, source, t):
    """The contender's loader over the ImageFolder `source` with transform `t`."""
    if args.contender == "ringfeed":
        import ringfeed
        return ringfeed.Loader(source, batch_size=args.batch, transform=t, threads=args.workers, exact=args.exact,
                               seed=1)
    import torch
    import torchvision
    return torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(source, transform=t), batch_size=args.batch,
                                       shuffle=True, num_workers=args.workers, persistent_workers=True)


def run(args, contender, recipe):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", contender, "--recipe", recipe, "--source",
           args.source, "--batch", str(args.batch), "--workers", str(args.workers), "--epochs", str(args.epochs)] + (["--exact"] if args.exact else [])
    if args.native:
        cmd += ["--native", args.native, "--native-images", str(args.native_images)]
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
    ap.add_argument("--native", metavar="WORK", help="also run the CIFAR-10 / MNIST recipes on those datasets, "
                    "written under WORK")
    ap.add_argument("--native-images", type=int, default=10000, help="files in the @png cases (default 10000)")
    ap.add_argument("--child", choices=["ringfeed", "dataloader", "floor"], help=argparse.SUPPRESS)
    ap.add_argument("--recipe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.contender = args.child
        return child(args)
    native = native_cases()
    names = args.recipes.split(",") if args.recipes else list(recipes()) + (list(native) if args.native else [])
    if any(n in native for n in names):
        if not args.native:
            sys.exit("the @memory / @png cases need --native WORK")
        write_native(args.native, args.native_images)
    contenders = ("ringfeed", "dataloader") + (("floor",) if args.floor else ())
    # A native case has no floor: its recipe is its whole head.
    runs = {n: {c: [] for c in contenders if c != "floor" or n not in native} for n in names}
    for r in range(args.rounds):
        for n in names:
            order = list(runs[n]) if r % 2 == 0 else list(runs[n])[::-1]
            for c in order:
                runs[n][c].append(run(args, c, n))
            print(f"round {r + 1}/{args.rounds} {n}: " + ", ".join(f"{c} {runs[n][c][-1]:.0f} img/s" for c in runs[n]),
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
        if "floor" in runs[n]:
            f = statistics.median(runs[n]["floor"])
            row.update({"floor_images_per_s": f, "ceiling_ratio": f / b, "floor_runs": runs[n]["floor"]})
            extra = f" {f:12.0f} {f / b:7.2f}x"
        rows.append(row)
        extra = extra or (" " * 22 if args.floor else "")
        print(f"{n:28} {a:15.0f} {b:17.0f} {a / b:6.2f}x{extra}  {'ok' if a / b >= 3 else 'SHORT'}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"source": args.source, "native": args.native, "native_images": args.native_images,
                       "command": " ".join(sys.argv),
                       "batch": args.batch, "workers": args.workers, "rounds": args.rounds,
                       "mode": "exact" if args.exact else "fast", "cpus": os.cpu_count(), "recipes": rows}, f,
                      indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
