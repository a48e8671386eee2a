#!/usr/bin/python3
"""torch_train.py's loop on torch.utils.data.DataLoader, for comparison.

    build/default/bin/ringfeed gen /tmp/ds --images 2000 --classes 10 --seed 1
    /usr/bin/python3 apps/examples/torch_train_dataloader.py /tmp/ds
        [--steps 300] [--size 64] [--batch 32] [--threads 2] [--device cuda] [--ringfeed]

--ringfeed makes the one change a script needs to load through ringfeed:
`from ringfeed import DataLoader` instead of torch's (every argument kept).

Batches come from DataLoader(torchvision.datasets.ImageFolder(DIR/train,
RandomResizedCrop(size) + RandomHorizontalFlip + ToTensor + Normalize),
batch_size, shuffle=True, num_workers=--threads, persistent_workers=True):
Pillow decodes in worker processes. Same model, optimizer, seed, printout as
torch_train.py (train_common.py); needs torch and torchvision (and ringfeed with --ringfeed).
"""
import torchvision
import torchvision.transforms as T

import train_common


def main():
    args = train_common.parse_args(
        __doc__, "DataLoader worker processes (default 2; 0: load in the main process)",
        lambda ap: ap.add_argument("--ringfeed", action="store_true", help="ringfeed.DataLoader, not torch's"))
    if args.ringfeed:
        from ringfeed import DataLoader  # the two-line swap: this import, nothing else
    else:
        from torch.utils.data import DataLoader
    transform = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    dataset = torchvision.datasets.ImageFolder(args.source, transform=transform)
    loader = DataLoader(dataset, batch_size=args.batch, shuffle=True, num_workers=args.threads,
                        persistent_workers=args.threads > 0, pin_memory=args.device.type == "cuda")

    def epoch_batches(epoch):
        return loader  # RandomSampler reshuffles on every iter()

    train_common.train(args, len(dataset.classes), epoch_batches,
                       f"{'ringfeed.' if args.ringfeed else ''}DataLoader({len(dataset)} images, "
                       f"num_workers={args.threads})",
                       lambda: "n/a (DataLoader has no stage counters; see the wait share above)")


if __name__ == "__main__":
    main()
