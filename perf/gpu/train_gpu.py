#!/usr/bin/python3
"""A real GPU kept busy: a ResNet-50 training loop fed by ringfeed.Loader
against the same loop fed by PyTorch's DataLoader, on the same files, GPU
and cores.

Goal: with ringfeed the training loop waits for data less than 5% of its
step time (data-wait share < 5%), so the GPU, not the input pipeline, sets
the pace.

The loop (identical for both loaders): torchvision ResNet-50 (--model) in
channels_last, autocast bf16 (or fp16 with a GradScaler where bf16 is not
supported; --amp-dtype), SGD (momentum 0.9, weight decay 1e-4), cross
entropy, batch 256 of RandomResizedCrop(224) + RandomHorizontalFlip +
ToTensor + Normalize (--recipe train; --recipe ta_wide or autoaugment:
torchvision's reference training preset with TrivialAugmentWide or
AutoAugment and RandomErasing(0.1), both loaders built from one recipe()
of the same class names: ringfeed.Loader gets ringfeed.transforms' list as
`transform`, the DataLoaders torchvision's). Fed by

  ringfeed    ringfeed.Loader(SOURCE, batch_size=B, pipeline="train",
              device="cuda", threads=T, drop_last=True): batches arrive on
              the GPU, normalized float32 NCHW, uploaded on ringfeed's stream
  dataloader  torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(
              SOURCE, transform=RandomResizedCrop + flip + ToTensor +
              Normalize), batch_size=B, shuffle=True, num_workers=T,
              pin_memory=True, persistent_workers=True, drop_last=True),
              then .cuda(non_blocking=True)
  rf_dataloader  the same DataLoader call with `import ringfeed` in place
              of torch.utils.data (ringfeed.DataLoader, strict=True: it runs
              natively or fails), the same .cuda(non_blocking=True)
  ringfeed_pixels  ringfeed.Loader as above with cache="pixels" (issue 40:
              decode once), its cache filled first by `ringfeed cache build`
              (--pixel-cache-dir; the fill's time is reported, not measured
              as training): every measured step reads decoded pixels

each in a process of its own (one after the other, never at the same time),
--warmup steps first (cudnn autotuning, worker start-up, prefetch filling),
then --steps measured steps. Per loader it reports

  images/s    measured steps x batch / wall time of the measured window
              (the GPU is synchronized at both ends of the window, so the
              wall time holds all the window's GPU work and nothing else)
  data wait   time the host spent blocked in next() of the loader's
              iterator, summed, / wall time: the share of step time spent
              waiting for data. Timed on the host with perf_counter, no
              synchronization inside the loop (see measure() for why that
              is correct and when it is an upper bound)
  GPU stall   the training stream's time between one step's last kernel
              and the next step's first, from CUDA events (no host sync):
              the wait for data as the GPU saw it, plus launch gaps, plus
              the DataLoader's host-to-device copy (queued on the training
              stream; ringfeed uploads on a stream of its own)
  GPU util    sum of the steps' GPU time (CUDA events around forward +
              backward + optimizer step on the training stream) / wall time
  CPU cores   CPU seconds of this process and all its descendants (the
              DataLoader's workers are live processes, so /proc, not only
              RUSAGE_CHILDREN) during the window / wall time; "main" is the
              training process alone (ringfeed's threads live there)

Usage, on a machine with a CUDA GPU (all cores, ~2 minutes plus the dataset):

  /usr/bin/python3 perf/gpu/train_gpu.py --json train_gpu.json
  /usr/bin/python3 perf/gpu/train_gpu.py --source /data/imagenet/train --steps 200

Without --source, `ringfeed gen` writes an ImageNet-like dataset large enough
that the warm-up and measured steps fit in one epoch (--gen-dir, default
build/train-gpu/gen-N of this checkout; reused when complete). The page
cache is warmed first when the dataset fits comfortably in memory
(--warm-cache).

Without a CUDA device, `--device cuda` (the default) prints one line saying
so and exits with 77 (skipped; nothing was measured). `--dry-run` is the
functional check for machines without a GPU (and a quick one with):
resnet18, batch 8, 64 px, 2 warm-up + 3 steps, a 200-image dataset, on the
GPU if there is one, else on the CPU (`--device cpu`: ringfeed gives host
batches, device=None; the DataLoader does not pin; step time comes from
the host clock, the CPU computing synchronously). It runs the whole
measuring path, both loaders, timing, CPU accounting, table and JSON, and
measures nothing worth reading.

The ringfeed module: --python-path DIR, else $PYTHONPATH, else this
checkout's build/release/python or build/default/python (the first that
exists), else an installed one. The CLI (for gen): --ringfeed, else
$RINGFEED_CLI, else build/release/bin or build/default/bin of this checkout,
else `ringfeed` on PATH. Needs torch and torchvision (Debian's python3-torch
is a CPU build: --dry-run only).
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "perf", "common"))
sys.path.insert(0, HERE)  # train_timing, also when this file is imported from elsewhere
from gen_dataset import ensure_gen  # noqa: E402
from train_timing import CudaTimer, HostTimer, quantiles_ms, self_cpu_seconds, tree_cpu_seconds  # noqa: E402
from train_report import report  # noqa: E402
SKIP = 77  # ctest's SKIP_RETURN_CODE in this project: cannot run here, nothing measured
LOADERS = ("ringfeed", "dataloader", "rf_dataloader", "ringfeed_pixels")
DEFAULT_LOADERS = LOADERS[:3]
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
FULL = dict(model="resnet50", batch=256, steps=100, warmup=20, size=224)
DRY = dict(model="resnet18", batch=8, steps=3, warmup=2, size=64, gen_images=200, gen_classes=10)
RECIPES = ("train", "ta_wide", "autoaugment")


def recipe(T, name, size, torch):
    """--recipe's transform list, built from T: torchvision.transforms or
    ringfeed.transforms (the same names and arguments). train: the loop's
    RandomResizedCrop + flip + ToTensor + Normalize; ta_wide / autoaugment:
    torchvision's reference training preset (references/classification/
    presets.py) with that policy and --random-erase 0.1."""
    head = [T.RandomResizedCrop(size), T.RandomHorizontalFlip()]
    if name == "train":
        return T.Compose(head + [T.ToTensor(), T.Normalize(MEAN, STD)])
    bilinear = T.InterpolationMode.BILINEAR
    aug = (T.TrivialAugmentWide(interpolation=bilinear) if name == "ta_wide"
           else T.AutoAugment(T.AutoAugmentPolicy.IMAGENET, interpolation=bilinear))
    return T.Compose(head + [aug, T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
                             T.RandomErasing(0.1)])


def first_existing(*paths):
    return next((p for p in paths if os.path.exists(p)), None)


def cores():
    return len(os.sched_getaffinity(0))  # what this process may run on (taskset, cgroups), not the machine


# --- one loader, in its own process ----------------------------------------------------
def make_loader(args, torch, device):
    """The loader and a function moving one of its batches to `device`."""
    cuda = device.type == "cuda"
    if args.child in ("ringfeed", "ringfeed_pixels"):
        import ringfeed
        import ringfeed.transforms
        how = (dict(pipeline="train", size=args.size) if args.recipe == "train"
               else dict(transform=recipe(ringfeed.transforms, args.recipe, args.size, torch)))
        if args.decode != "auto":  # issue 43: where JPEGs are decoded
            how["decode"] = args.decode
        if args.child == "ringfeed_pixels":  # issue 40: filled by `ringfeed cache build` before this run
            how.update(cache="pixels", cache_dir=args.pixel_cache_dir)
        loader = ringfeed.Loader(args.source, batch_size=args.batch, **how, output=args.ringfeed_output,
                                 device=device if cuda else None, threads=args.threads, drop_last=True)
        fallback = []

        def to_device(images, labels):
            if cuda and not images.is_cuda:  # a ringfeed built without CUDA: host batches (stats say why)
                fallback.append(1)
                return images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            return images, labels  # already on the GPU; torch's current stream waits for the upload
        return loader, to_device, fallback, ringfeed

    import torchvision
    import torchvision.transforms as T
    tf = recipe(T, args.recipe, args.size, torch)
    ds = torchvision.datasets.ImageFolder(args.source, transform=tf)
    module = torch.utils.data
    if args.child == "rf_dataloader":  # the same call with the import swapped (strict: native or an error)
        import ringfeed as module
        extra = {"strict": True}
    else:
        extra = {}
    loader = module.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.threads,
                               pin_memory=cuda, persistent_workers=args.threads > 0, drop_last=True, **extra)

    def to_device(images, labels):
        if cuda:  # from pinned memory: an asynchronous copy on the training stream
            return images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        return images, labels
    return loader, to_device, [], (module if args.child == "rf_dataloader" else None)


def endless(loader, counter):
    """Batches across epoch ends (a new epoch's start is part of the wait for data)."""
    while True:
        counter[0] += 1
        for batch in loader:
            yield batch


def measure(args):
    import torch
    import torchvision

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        if device.index is None:  # torch.cuda.set_device() and friends want an index
            device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    amp = resolve_amp(args.amp_dtype, torch, device)
    model = getattr(torchvision.models, args.model)(num_classes=args.num_classes)
    model = model.to(device, memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss()
    # A GradScaler only for fp16 (bf16 has fp32's range). Its step() reads
    # the inf/nan flag with .item(): one host sync per step, as in any
    # fp16 training loop.
    scaler = grad_scaler(torch, enabled=cuda and amp == torch.float16)

    loader, to_device, fallback, ringfeed = make_loader(args, torch, device)
    epochs = [0]
    batches = endless(loader, epochs)
    timer = CudaTimer(torch) if cuda else HostTimer()

    def autocast():
        return torch.autocast(device_type=device.type, dtype=amp) if amp else contextlib.nullcontext()

    def step(images, labels):
        images = images.contiguous(memory_format=torch.channels_last)
        with autocast():
            loss = criterion(model(images), labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    # Warm-up: cudnn autotuning, allocator growth, workers starting, prefetch queues filling.
    for _ in range(args.warmup):
        step(*to_device(*next(batches)))
    where = None

    # The measured window. It opens and closes with a synchronize, so that
    # the wall time between them holds exactly the window's GPU work. Inside,
    # nothing synchronizes (the loop runs as a real one does: the host queues
    # kernels ahead of the GPU, up to the GradScaler's sync under fp16):
    # - wait: host time blocked in next(), perf_counter around the call.
    #   The host is at most a little ahead of the GPU, so in steady state a
    #   loader slower than the GPU shows up here in full; a short wait while
    #   the GPU still works through queued kernels costs the GPU nothing, so
    #   this share is an upper bound of the GPU's loss to data. So is a
    #   wait for the GPU inside next() (ringfeed reuses a device buffer only
    #   once the queued work reading it has finished). Adding a synchronize
    #   per step would make it exact and the loop slower; the GPU stall
    #   below tells a real data wait from these.
    # - GPU time per step: CUDA events recorded on the training stream after
    #   the batch is on the device (ringfeed's next() has already made the
    #   stream wait for its upload; the DataLoader's copy is queued before
    #   the start event) and after the optimizer step. The idle time from one
    #   step's end event to the next's start event is the GPU's stall.
    sync()
    self0, cpu0, wall0 = self_cpu_seconds(), tree_cpu_seconds(), time.perf_counter()
    timer.origin()
    waits, host_steps, loss = [], [], None
    for _ in range(args.steps):
        t0 = time.perf_counter()
        images, labels = next(batches)
        t1 = time.perf_counter()
        images, labels = to_device(images, labels)
        where = where or str(images.device)
        timer.start()
        loss = step(images, labels)
        timer.end()
        waits.append(t1 - t0)
        host_steps.append(time.perf_counter() - t0)
    sync()
    wall = time.perf_counter() - wall0
    cpu_self, cpu = self_cpu_seconds() - self0, tree_cpu_seconds() - cpu0  # same order as at the start
    device_steps = timer.resolve()

    busy = [b for b, _ in device_steps]
    idle = [g for _, g in device_steps]
    images_done = args.steps * args.batch
    result = {
        "loader": args.child, "images": images_done, "steps": args.steps, "warmup": args.warmup, "wall_s": wall,
        "images_per_s": images_done / wall,
        "data_wait_s": sum(waits), "data_wait_share": sum(waits) / wall,
        "data_wait_ms": quantiles_ms(waits),
        "device_busy_s": sum(busy), "device_util": sum(busy) / wall,
        "device_stall_s": sum(idle), "device_stall_share": sum(idle) / wall,
        "device_step_ms": quantiles_ms(busy), "host_step_ms": quantiles_ms(host_steps),
        "cpu_s": cpu, "cpu_cores": cpu / wall, "cpu_s_main": cpu_self, "cpu_cores_main": cpu_self / wall,
        "device_timing": "cuda events" if cuda else "host clock (CPU: synchronous)",
        "batches_on": where, "epochs_started": epochs[0], "final_loss": float(loss),
        "amp": str(amp).replace("torch.", "") if amp else "none",
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "per_step": {"wait_s": waits, "host_s": host_steps, "device_busy_s": busy, "device_idle_before_s": idle},
    }
    if cuda:
        result.update(gpu=torch.cuda.get_device_name(device),
                      peak_memory_gib=torch.cuda.max_memory_allocated(device) / 2**30)
    if ringfeed is not None:
        st = loader.stats()
        result["ringfeed"] = {"module": ringfeed.__file__, "version": ringfeed.__version__,
                              "host_batches_moved": len(fallback),
                              **{k: st.get(k) for k in ("device", "host_reason", "output_made_on", "bottleneck", "stages",
                                                        "threads", "backend", "output", "images_per_s",
                                                        "gpu_decode", "decode_reason", "pixel_cache")}}
    close = getattr(loader, "close", None)
    if close:
        close()
    print(json.dumps(result))


def resolve_amp(name, torch, device):
    if name == "none":
        return None
    if name == "auto":
        if device.type == "cpu":
            return torch.bfloat16  # CPU autocast is bf16 only
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]


def grad_scaler(torch, enabled):
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):  # torch >= 2.3; torch.cuda.amp's is deprecated there
        return amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


# --- the driver ------------------------------------------------------------------------
def module_path(arg):
    if arg:
        return arg
    if os.environ.get("PYTHONPATH"):
        return None
    return first_existing(*(os.path.join(REPO, "build", p, "python") for p in ("release", "default")))


def find_cli(arg):
    cli = arg or os.environ.get("RINGFEED_CLI") or first_existing(
        *(os.path.join(REPO, "build", p, "bin", "ringfeed") for p in ("release", "default"))) or shutil.which("ringfeed")
    if not cli or not os.access(cli, os.X_OK):
        sys.exit("train_gpu: no ringfeed CLI to generate a dataset with (build it, pass --ringfeed, or pass --source)")
    return cli


def gen_dataset(args):
    """`ringfeed gen` into --gen-dir, or the complete one already there."""
    out = args.gen_dir or os.path.join(REPO, "build", "train-gpu", f"gen-{args.gen_images}-{args.gen_classes}")
    return ensure_gen(out, args.gen_images, args.gen_classes, lambda: find_cli(args.ringfeed), "train_gpu")


def list_files(source):
    files = []
    for root, _, names in os.walk(source):
        files += [os.path.join(root, n) for n in names]
    return files


def warm_page_cache(files, mode):
    """Read every file once when asked, or (auto) when they take under half of
    the available memory: both loaders then read from memory alike."""
    size = sum(os.path.getsize(f) for f in files)
    if mode == "auto":
        avail = 0
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
        mode = "yes" if size < avail / 2 else "no"
    if mode == "yes":
        for f in files:
            with open(f, "rb") as fh:
                while fh.read(1 << 20):
                    pass
    return mode == "yes", size


def no_cuda_reason(torch):
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU build"
    return f"torch {torch.__version__} (CUDA {torch.version.cuda}) finds no usable device"


def run_child(args, name, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--source", args.source,
           "--device", args.device, "--model", args.model, "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--size", str(args.size), "--threads", str(args.threads),
           "--amp-dtype", args.amp_dtype, "--ringfeed-output", args.ringfeed_output, "--recipe", args.recipe,
           "--num-classes", str(args.num_classes), "--decode", args.decode, "--pixel-cache-dir", args.pixel_cache_dir]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)  # its stderr (log lines) passes through
    if done.returncode != 0:  # the others still run: one failed loader does not cost the rest
        return None, (f"the {name} run failed (exit {done.returncode}; its error is above; PYTHONPATH="
                      f"{env.get('PYTHONPATH', '')!r})")
    return json.loads(done.stdout.strip().splitlines()[-1]), None


def fill_pixel_cache(args):
    """`ringfeed cache build`: the cache the ringfeed_pixels run reads (every
    recipe here starts with RandomResizedCrop, so what is kept is the decode,
    as cache build fills it). Present entries are hits: a warm cache is kept."""
    cmd = [find_cli(args.ringfeed), "cache", "build", args.source, "--cache-dir", args.pixel_cache_dir]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    print(done.stdout, end="", file=sys.stderr, flush=True)
    if done.returncode != 0:
        return None, f"ringfeed cache build failed (exit {done.returncode}; its error is above)"
    return {"seconds": time.perf_counter() - t0, "output": done.stdout.strip()}, None


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", help="an ImageFolder directory (default: one made by `ringfeed gen`)")
    ap.add_argument("--steps", type=int, help=f"measured steps (default {FULL['steps']}; dry run {DRY['steps']})")
    ap.add_argument("--warmup", type=int, help=f"steps before measuring (default {FULL['warmup']}; "
                    f"dry run {DRY['warmup']})")
    ap.add_argument("--batch", type=int, help=f"batch size (default {FULL['batch']}; dry run {DRY['batch']})")
    ap.add_argument("--size", type=int, help=f"crop size (default {FULL['size']}; dry run {DRY['size']})")
    ap.add_argument("--threads", "--workers", dest="threads", type=int, default=cores(),
                    help="ringfeed threads = DataLoader workers (default: all cores this process may use, %(default)s)")
    ap.add_argument("--model", help=f"a torchvision.models name (default {FULL['model']}; dry run {DRY['model']})")
    ap.add_argument("--device", help="cuda, cuda:N or cpu (default cuda; a dry run takes cpu where CUDA is missing)")
    ap.add_argument("--loaders", default=",".join(DEFAULT_LOADERS),
                    help=f"which to run, in this order, of {', '.join(LOADERS)} (default %(default)s)")
    ap.add_argument("--amp-dtype", choices=["auto", "bf16", "fp16", "none"], default="auto",
                    help="autocast dtype; auto: bf16 where supported, else fp16 with a GradScaler (default %(default)s)")
    ap.add_argument("--ringfeed-output", choices=["float32", "float16"], default="float32",
                    help="ringfeed's batch dtype (default float32: the DataLoader's)")
    ap.add_argument("--recipe", choices=RECIPES, default="train",
                    help="the transform list both loaders run (default %(default)s; see recipe())")
    ap.add_argument("--dry-run", action="store_true", help="tiny functional check of the whole path (see above)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--python-path", help="directory holding the ringfeed package")
    ap.add_argument("--ringfeed", help="the ringfeed CLI (for gen)")
    ap.add_argument("--gen-dir", help="where `ringfeed gen` writes (default build/train-gpu/gen-N-C of this checkout)")
    ap.add_argument("--gen-images", type=int, help="images to generate (default: enough for one epoch of the run)")
    ap.add_argument("--gen-classes", type=int, help="classes to generate (default 100; dry run 10)")
    ap.add_argument("--warm-cache", choices=["auto", "yes", "no"], default="auto",
                    help="read the dataset once first (auto: when it takes under half the available memory)")
    ap.add_argument("--decode", choices=["auto", "cpu", "gpu"], default="auto",
                    help="ringfeed: where JPEGs are decoded (issue 43; default: ringfeed's choice)")
    ap.add_argument("--pixel-cache-dir", help="ringfeed_pixels' cache (default build/train-gpu/pixels-N-C of this "
                    "checkout, beside the generated data; kept, so a later run finds it warm)")
    ap.add_argument("--child", choices=LOADERS, help=argparse.SUPPRESS)
    ap.add_argument("--num-classes", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    profile = DRY if args.dry_run else FULL
    for key in ("model", "batch", "steps", "warmup", "size"):
        if getattr(args, key) is None:
            setattr(args, key, profile[key])
    for key, value in (("steps", args.steps), ("batch", args.batch), ("size", args.size)):
        if value < 1:
            ap.error(f"--{key} must be at least 1")
    if args.warmup < 0 or args.threads < 0:
        ap.error("--warmup and --threads must not be negative")
    args.loaders = [x for x in args.loaders.split(",") if x]
    if not args.loaders or any(x not in LOADERS for x in args.loaders):
        ap.error(f"--loaders: a comma-separated list of {', '.join(LOADERS)}")
    if args.gen_classes is None:
        args.gen_classes = DRY["gen_classes"] if args.dry_run else 100
    if args.gen_images is None:  # warm-up and measured steps in one epoch, drop_last and all
        args.gen_images = max(DRY["gen_images"] if args.dry_run else 1000, (args.warmup + args.steps + 2) * args.batch)
    if args.pixel_cache_dir is None:
        args.pixel_cache_dir = os.path.join(REPO, "build", "train-gpu", f"pixels-{args.gen_images}-{args.gen_classes}")
    return args


def main():
    args = parse_args()
    if args.child:
        return measure(args)
    try:
        import torch
        import torchvision  # noqa: F401 (the DataLoader's dataset and the models)
    except ImportError as e:
        print(f"train_gpu: {e}: needs torch and torchvision (Debian: python3-torch python3-torchvision)")
        return SKIP
    if args.device is None:
        args.device = "cpu" if args.dry_run and not torch.cuda.is_available() else "cuda"
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"train_gpu: no CUDA device ({no_cuda_reason(torch)}): nothing measured; run this on a GPU machine "
              f"(or --dry-run --device cpu for a functional check)")
        return SKIP
    if args.device == "cpu" and args.amp_dtype == "fp16":
        sys.exit("train_gpu: --amp-dtype fp16 needs a CUDA device (CPU autocast is bf16 only)")
    env = dict(os.environ)
    path = module_path(args.python_path)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)

    if args.source is None:
        args.source = gen_dataset(args)
    if not os.path.isdir(args.source):
        sys.exit(f"train_gpu: --source {args.source}: not a directory (an ImageFolder is needed: the DataLoader "
                 f"reads it too)")
    classes = sorted(d.name for d in os.scandir(args.source) if d.is_dir())
    files = list_files(args.source)
    if not classes or not files:
        sys.exit(f"train_gpu: {args.source} is not an ImageFolder (class directories of images)")
    args.num_classes = max(1000, len(classes))  # ImageNet's head (its cost) unless the data has more classes
    warmed, size = warm_page_cache(files, args.warm_cache)
    info = {"source": args.source, "files": len(files), "bytes": size, "classes": len(classes), "warmed": warmed,
            "cores": cores(), "machine_cores": os.cpu_count()}

    results, failed = {}, {}
    if "ringfeed_pixels" in args.loaders and not args.child:
        fill, why = fill_pixel_cache(args)
        if fill is None:
            failed["ringfeed_pixels"] = why
            args.loaders = [x for x in args.loaders if x != "ringfeed_pixels"]
        else:
            info.update(pixel_cache_dir=args.pixel_cache_dir, pixel_cache_fill_s=fill["seconds"],
                        pixel_cache_fill=fill["output"])
    for name in args.loaders:
        print(f"train_gpu: {name}: {args.warmup} warm-up + {args.steps} steps of {args.model}, batch {args.batch}, "
              f"recipe {args.recipe}, on {args.device}", file=sys.stderr, flush=True)
        r, why = run_child(args, name, env)
        if r is None:
            print(f"train_gpu: {why}", file=sys.stderr, flush=True)
            failed[name] = why
            continue
        results[name] = r
        print(f"train_gpu: {name}: {r['images_per_s']:.1f} images/s, data wait {100 * r['data_wait_share']:.1f}%",
              file=sys.stderr, flush=True)
    summary = report(args, results, info) if results else {}
    for name, why in failed.items():
        print(f"FAILED: {why}")
    if args.json:
        config = {k: getattr(args, k) for k in ("model", "recipe", "batch", "size", "steps", "warmup", "threads",
                                                "device", "amp_dtype", "ringfeed_output", "loaders", "dry_run",
                                                "num_classes", "decode", "pixel_cache_dir")}
        with open(args.json, "w") as fh:
            json.dump({"config": config, "dataset": info, **summary, "results": results, "failed": failed}, fh,
                      indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
