"""What torch_train.py and torch_train_dataloader.py share: the command line,
a small CNN, the training loop and the report. The two scripts differ only
in where their batches come from (ringfeed.Loader or torch's DataLoader).

Not run by itself; see torch_train.py.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def import_ringfeed():
    """`import ringfeed`: the installed module (pip install, or PYTHONPATH=
    build/<preset>/python). Only if that fails, the module built in this
    checkout (build/release/python, then build/default/python) so that the
    examples run straight after `cmake --build`."""
    try:
        import ringfeed
        return ringfeed
    except ImportError:
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for preset in ("release", "default"):
            path = os.path.join(repo, "build", preset, "python")
            if os.path.isdir(os.path.join(path, "ringfeed")):
                sys.path.insert(0, path)
                import ringfeed
                return ringfeed
        raise


def parse_args(description, workers_help, more=None):
    """The shared options; `more(parser)` adds a script's own."""
    ap = argparse.ArgumentParser(description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    if more is not None:
        more(ap)
    ap.add_argument("dataset", help="dataset directory from `ringfeed gen DIR` (its train/ is used), "
                                    "or an ImageFolder directory itself")
    ap.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    ap.add_argument("--size", type=int, default=64, help="crop size (default 64)")
    ap.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    ap.add_argument("--threads", type=int, default=2, help=workers_help)
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (momentum 0.9; default 0.05)")
    ap.add_argument("--log-every", type=int, default=25, help="print the average loss every N steps (default 25)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda / cuda:N")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if min(args.steps, args.size, args.batch, args.log_every) < 1 or args.threads < 0:
        ap.error("--steps, --size, --batch and --log-every must be positive, --threads >= 0")
    train = os.path.join(args.dataset, "train")
    args.source = train if os.path.isdir(train) else args.dataset
    args.device = torch.device(args.device)
    if args.device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda, but torch.cuda.is_available() is False")
    return args


class SmallCNN(nn.Module):
    """Three 3x3 convolutions (16, 32, 64 channels), two max-pools, global
    average pooling, one linear layer: the model of torch_train.cpp."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def train(args, classes, epoch_batches, describe, bottleneck):
    """Trains SmallCNN for args.steps steps.

    epoch_batches(epoch) -> an iterable of (images, labels) for that epoch:
      called once per epoch, as many epochs as the steps need.
    describe: what feeds the loop, for the first line.
    bottleneck() -> the data source's own verdict (a string), after training.

    Time spent blocked in iter() and next() of the batch iterator is the
    loop's wait for data; everything else is the step (forward, backward,
    optimizer) and the copy to the device."""
    torch.manual_seed(args.seed)
    device = args.device
    model = SmallCNN(classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    print(f"training SmallCNN on {describe}: {classes} classes, {args.size}x{args.size} crops, batch {args.batch}, "
          f"{args.steps} steps, {device}, torch {torch.__version__} with {torch.get_num_threads()} threads",
          flush=True)

    step = epoch = images = 0
    waited = running = 0.0
    window = []  # average loss of each log window
    start = time.perf_counter()
    while step < args.steps:
        t = time.perf_counter()
        it = iter(epoch_batches(epoch))
        waited += time.perf_counter() - t
        while step < args.steps:
            t = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                waited += time.perf_counter() - t
                break
            waited += time.perf_counter() - t
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            running += loss.item()  # synchronizes with the device: the step's time is counted as compute
            images += y.shape[0]
            step += 1
            if step % args.log_every == 0 or step == args.steps:
                n = step % args.log_every or args.log_every
                window.append(running / n)
                print(f"epoch {epoch:2d}  step {step:4d}  loss {running / n:.4f}", flush=True)
                running = 0.0
        del it  # a DataLoader iterator without persistent workers stops them when it goes
        epoch += 1
    seconds = time.perf_counter() - start

    print(f"loss: first {args.log_every} steps {window[0]:.4f} -> last {window[-1]:.4f} "
          f"({'falling' if window[-1] < window[0] else 'NOT falling'}; ln({classes}) = {torch.log(torch.tensor(float(classes))):.4f})")
    print(f"{step} steps, {images} images, {epoch} epoch(s) in {seconds:.1f} s: {images / seconds:.0f} images/s")
    print(f"waiting for data: {waited:.1f} s = {100 * waited / seconds:.1f}% of the wall time")
    print(f"data source bottleneck: {bottleneck()}")
    return window
