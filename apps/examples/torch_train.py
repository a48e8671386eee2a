#!/usr/bin/python3
"""Trains a small CNN with PyTorch on batches from ringfeed.Loader.

    build/default/bin/ringfeed gen /tmp/ds --images 2000 --classes 10 --seed 1
    PYTHONPATH=build/default/python /usr/bin/python3 apps/examples/torch_train.py /tmp/ds
        [--steps 300] [--size 64] [--batch 32] [--threads 2] [--device cuda]

The loader reads, decodes and augments (RandomResizedCrop + flip +
Normalize) in C++ threads of this process; the loop gets float32 [B,3,H,W]
normalized images and int64 labels. With --device cuda the batches are
uploaded and normalized on the GPU by the loader (device=...).

Prints the loss every 25 steps, the first and last average loss, images/s,
the share of wall time the loop waited for data, and the loader's own
bottleneck (stats()["bottleneck"]). torch_train_dataloader.py is the same
loop on torch.utils.data.DataLoader, for comparison. `import ringfeed` must
work (installed, or PYTHONPATH=build/<preset>/python); failing that the
module built in this checkout is used (see train_common.import_ringfeed).
"""
import train_common


def main():
    args = train_common.parse_args(__doc__, "ringfeed.Loader threads (default 2; 0: one per core)")
    ringfeed = train_common.import_ringfeed()
    device = args.device if args.device.type == "cuda" else None
    loader = ringfeed.Loader(args.source, batch_size=args.batch, pipeline="train", size=args.size,
                             threads=args.threads, device=device, seed=args.seed)

    def epoch_batches(epoch):
        loader.set_epoch(epoch)  # this epoch's shuffle and crops (DistributedSampler.set_epoch)
        return loader

    classes = len(ringfeed.ImageFolder(args.source).classes)
    stats = {}

    def bottleneck():
        stats.update(loader.stats())
        return stats["bottleneck"]

    with loader:
        train_common.train(args, classes, epoch_batches,
                           f"ringfeed.Loader({loader.dataset_size} images, threads={args.threads})", bottleneck)
        st = stats["stages"]
        print(f"loader: {stats['threads']} threads, backend {stats['backend']}, {stats['device']} batches, "
              f"decode busy {100 * st['decode_utilization']:.0f}%, consumer wait {st['consumer_wait_s']:.1f} s "
              f"(loader's count)")


if __name__ == "__main__":
    main()
