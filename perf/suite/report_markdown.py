"""report.md (suite_report.py): the headline, the summary sections, every
measurement per profile, how to read it and the environment."""
from __future__ import annotations

from report_cells import DATASET_NAMES, ROWS, dataset, find, num, of_dataset, ok, rate_cell, ratio
from report_sections import ratio_section, rounds_section


def markdown(rep: dict) -> str:
    run, env = rep["run"], rep["environment"]
    L: list[str] = []
    notes: list[str] = []
    L.append("# ringfeed perf suite (`perf/run`)\n")
    L.append(f"`{run['command']}` — {env['date']}, commit {env['commit']}, "
             f"{'quick' if run['quick'] else 'full'} run, {run['rounds']} round(s) per measurement "
             f"(median{' [min–max]' if run['rounds'] > 1 else ''}), suite time {run['suite_seconds']} s.\n")
    for n in run.get("notes", []):
        L.append(f"- **{n}**")
    if "FAILED" in run.get("build", ""):
        L.append(f"- **{run['build']}**")
    L.append("")
    L += rounds_section(rep)

    # Headline (the ImageNet-like or --path dataset: the only one with raw reads and shards)
    imagenet = [p for p in rep["profiles"] if dataset(p) != "large"]
    any_cold = any(m["cache"] == "cold" for p in imagenet for m in p["measurements"])
    if imagenet:
        L.append(f"## Headline ({'cold' if any_cold else 'warm'} page cache, "
                 f"{'the --path' if run.get('path') else 'ImageNet-like'} dataset)\n")
    L.append("| profile | device limit: fio MB/s | ringfeed raw --direct MB/s (× fio) | ringfeed raw buffered MB/s "
             "(× fio) | ringfeed train img/s | PyTorch train img/s | ringfeed ÷ PyTorch | ringfeed train on "
             "shards img/s | ringfeed says (train) |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    if not imagenet:
        del L[-2:]
    for p in imagenet:
        fio = find(p, "fio", "small", "none", "direct", "cold")
        fio_mb = fio.get("mb_per_s") if ok(fio) else None
        d = find(p, "ringfeed", "small", "none", "direct", "cold")
        b = find(p, "ringfeed", "small", "none", "buffered", "cold")
        t = find(p, "ringfeed", "small", "train", "buffered", "cold")
        pt = find(p, "pytorch", "small", "train", "buffered", "cold")
        ts = find(p, "ringfeed", "shards", "train", "buffered", "cold")
        cache_word = "cold" if any(m["cache"] == "cold" for m in p["measurements"]) else "warm"
        if cache_word == "warm":  # not root: warm only
            d = find(p, "ringfeed", "small", "none", "direct", "warm")
            b = find(p, "ringfeed", "small", "none", "buffered", "warm")
            t = find(p, "ringfeed", "small", "train", "buffered", "warm")
            pt = find(p, "pytorch", "small", "train", "buffered", "warm")
            ts = find(p, "ringfeed", "shards", "train", "buffered", "warm")
        g = lambda m, k: m.get(k) if ok(m) else None  # noqa: E731
        L.append(f"| {p['profile']}{'' if cache_word == 'cold' else ' (warm)'} | {rate_cell(fio, 'mb_per_s', notes)} "
                 f"| {rate_cell(d, 'mb_per_s', notes)} ({ratio(g(d, 'mb_per_s'), fio_mb)}) "
                 f"| {rate_cell(b, 'mb_per_s', notes)} ({ratio(g(b, 'mb_per_s'), fio_mb)}) "
                 f"| {rate_cell(t, 'images_per_s', notes)} | {rate_cell(pt, 'images_per_s', notes)} "
                 f"| {ratio(g(t, 'images_per_s'), g(pt, 'images_per_s'))} | {rate_cell(ts, 'images_per_s', notes)} "
                 f"| {g(t, 'bottleneck') or '—'} |")
    L.append("")
    if imagenet:
        L.append("![images per second](images_per_s.png)\n")
        L.append("![MB/s against fio](mb_per_s_vs_fio.png)\n")
    L += ratio_section(rep)

    # Per dataset and profile
    for p in rep["profiles"]:
        d = dataset(p)
        L.append(f"## Profile `{p['profile']}`{', ' + DATASET_NAMES['large'] if d == 'large' else ''}\n")
        L.append(f"- throttle: {p['limits']}")
        L.append(f"- filesystem: {p.get('filesystem', '?')}")
        for k, lay in p["layouts"].items():
            what = "small files (ImageFolder)" if k == "small" else "tar shards (WebDataset)"
            L.append(f"- {what}: {lay['files']:,} files, {lay['bytes'] / 1e6:,.1f} MB")
        tc = p.get("throttle_check")
        if tc:
            g = lambda k, f: tc.get(k, {}).get(f)  # noqa: E731
            L.append(f"- throttle check on {tc['device']} (fio inside the cgroup; unthrottled in brackets): "
                     f"1 MiB O_DIRECT sequential reads {num(g('seq_1m_libaio', 'mb_per_s'))} MB/s with libaio "
                     f"({num(g('seq_1m_libaio_unthrottled', 'mb_per_s'))}), "
                     f"{num(g('seq_1m_uring', 'mb_per_s'))} MB/s with io_uring "
                     f"({num(g('seq_1m_uring_unthrottled', 'mb_per_s'))}); 16 KiB random reads at depth 32 "
                     f"{num(g('rand_16k', 'iops'))} IOPS ({num(g('rand_16k_unthrottled', 'iops'))}); "
                     f"buffered cold sequential read of a shard {num(g('buffered', 'mb_per_s'))} MB/s "
                     f"({num(g('buffered_unthrottled', 'mb_per_s'))})")
            lib, uring = g("seq_1m_libaio", "mb_per_s"), g("seq_1m_uring", "mb_per_s")
            if lib and uring and uring < 0.75 * lib:
                L.append(f"- **throttle artefact**: inside the cgroup, 1 MiB O_DIRECT reads through io_uring got "
                         f"{uring / lib:.0%} of libaio's rate: this kernel's blk-throttle charges such io_uring "
                         "requests more than once (most likely the nonblocking attempt, refused with EAGAIN "
                         "because the request must be split, is counted before io_uring re-issues it from a "
                         "worker). The suite's fio requests "
                         "(16 KiB) and ringfeed's small-file reads are far below the split size; io_uring reads "
                         "above 512 KiB (large shard reads, if ringfeed issues them) pay double here.")
        if not p.get("direct_flag", True):
            L.append("- `ringfeed bench --direct`: **flag missing in this build** (rows n/a)")
        L.append("")
        L.append("| measurement | files | cold img/s | cold MB/s | cold × fio | cold × PyTorch | warm img/s "
                 "| warm MB/s | warm × PyTorch | start-up s (cold / warm) | ringfeed says (cold / warm) |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        fio_mb = {lay: (find(p, "fio", lay, "none", "direct", "cold") or {}).get("mb_per_s") for lay in p["layouts"]}
        for label, tool, layout, pipeline, io in ROWS:
            if layout not in p["layouts"]:
                continue
            cold = find(p, tool, layout, pipeline, io, "cold")
            warm = None if tool in ("fio", "decode_limit") else find(p, tool, layout, pipeline, io, "warm")
            if cold is None and warm is None:
                continue
            cells = {}
            for cache, m in (("cold", cold), ("warm", warm)):
                ips = rate_cell(m, "images_per_s", notes) if tool != "fio" else ""
                mbs = rate_cell(m, "mb_per_s", notes)
                reread = (m or {}).get("device_read_mb")
                # Only on a profile's own loop device: on a shared disk the count includes other
                # processes' reads (and the DataLoader's library loads).
                if (cache == "warm" and io == "buffered" and ok(m) and reread is not None and p.get("device")
                        and reread * 1e6 > 0.1 * p["layouts"][layout]["bytes"]):
                    text = ("a warm run that still read ≥ 10% of the data from the device: part of the page cache "
                            "had been evicted (see the environment: proactive reclaim); the number is not a "
                            "warm-cache one")
                    if text not in notes:
                        notes.append(text)
                    ips = f"{ips} ‡{notes.index(text) + 1} ({reread:,.0f} MB read)" if ips else ips
                ref = find(p, "pytorch", "small", pipeline, "buffered", cache) if pipeline != "none" else None
                x_pt = (ratio(m.get("images_per_s"), ref.get("images_per_s"))
                        if tool in ("ringfeed", "python", "pytorch_draft") and ok(m) and ok(ref) else "")
                cells[cache] = (ips, mbs, x_pt)
            x_fio = (ratio(cold.get("mb_per_s"), fio_mb.get(layout))
                     if ok(cold) and tool not in ("fio", "decode_limit") else "")
            says = (" / ".join(m.get("bottleneck") or "—" for m in (cold, warm) if ok(m))
                    if tool in ("ringfeed", "python") else "")
            if tool == "fio" and ok(cold):
                says = f"{num(cold.get('iops'))} IOPS (O_DIRECT: cache-independent)"
            if tool == "decode_limit" and ok(cold):
                says = (f"{cold.get('threads')} threads, {cold.get('megapixels_per_image', 0):.2f} MP/image "
                        f"(in memory: cache-independent)")
            c, w = cells["cold"], cells["warm"]
            up = " / ".join(f"{m['startup_s']:.2f}" if ok(m) and isinstance(m.get("startup_s"), (int, float)) else "—"
                            for m in (cold, warm)) if pipeline not in ("none",) else ""
            L.append(f"| {label} | {layout} | {c[0]} | {c[1]} | {x_fio} | {c[2]} | {w[0]} | {w[1]} | {w[2]} | {up} "
                     f"| {says} |")
        busy = [f"{m['tool']} {m['pipeline']} {m['layout']} {m['cache']} ({m['other_load_cores_max']:.2f} cores)"
                for m in p["measurements"] if (m.get("other_load_cores_max") or 0) > 0.3]
        if busy:
            L.append(f"\n**Other processes were busy during**: {', '.join(busy)}: those numbers are less trustworthy.")
        L.append("")

    L.append("## How to read this\n")
    L.append("- **images/s** of every loader (ringfeed bench, ringfeed.Loader, the DataLoader) is its **steady "
             "state**: the images delivered after the same warm-up batches for each contender (8, the number of "
             "ringfeed's batch buffers at batch 64, whose pages are touched for the first time as they fill; at "
             "most half a run's batches, at least the first) over the time after them. What a training run pays "
             "once is apart: **start-up** (opening the loader, or ImageFolder's scan and the DataLoader's worker "
             "start, then the first batch; for the bare decode, loading the files into memory). The whole short "
             "run's rate, start-up included, is `run_images_per_s` in report.json (section \"Start-up\").")
    L.append("- **cold**: `sync; echo 3 > /proc/sys/vm/drop_caches` before each run; **warm**: every file read "
             "beforehand (outside the throttle). `--direct` runs bypass the page cache, so their warm numbers "
             "are cold ones too. Raw warm reads run several epochs.")
    L.append("- Before its first measurement each profile opens the shards once, untimed: ringfeed caches a "
             "shard's member index after the first open (which walks every tar header and so pulls the shards "
             "into the page cache before bench's clock starts); measured runs all see the cached index, as every "
             "later run of a training job does.")
    L.append("- **fio** (`--rw=read --bs=16k --direct=1 --ioengine=io_uring --iodepth=32 --file_service_type=random`) "
             "is the device limit for 16 KiB requests on the same files. It skips each file's last partial block; "
             "ringfeed reads whole files, in larger requests, so where a device is limited by IOPS rather than "
             "bandwidth ringfeed can exceed fio's MB/s (× fio > 1).")
    L.append("- **× PyTorch**: ringfeed's images/s over `torch.utils.data.DataLoader(ImageFolder, batch_size=64, "
             "num_workers=cores)` with the same transforms, same cache state, on the small files (the DataLoader "
             "cannot read the shards); both deliver float32 normalized NCHW batches on the host.")
    L.append("- **ringfeed says**: the `bottleneck` field of `ringfeed bench --json` (storage, decode, upload, "
             "consumer); for ringfeed.Loader, its `stats()['bottleneck']`.")
    L.append("- **ringfeed.Loader (Python)**: the build's Python module, `ringfeed.Loader(DIR, batch_size=64, "
             "pipeline=P, output='float32', threads=cores)` on the host, one epoch in a process of its own "
             "(perf/compare/compare_loader.py's Python contender), each batch touched as the DataLoader's are.")
    L.append("- **bare decode**: `perf/decode_limit DIR --threads cores` (TurboJPEG `tjDecompress2` full decodes "
             "to RGB of up to 2000 of the JPEGs, loaded into memory first, untimed). A loader that decodes whole "
             "images cannot beat it; ringfeed's train pipeline decodes only what its crop needs.")
    L.append("- **DataLoader + draft()**: the same DataLoader whose ImageFolder loader calls Pillow's "
             "`Image.draft('RGB', (s, s))` before `convert('RGB')` (libjpeg's DCT scaling by 1/2 to 1/8 while "
             "both sides stay ≥ s; s = 224 train, 256 val): measured on the large photos, where it applies.")
    L.append("- **large photos**: `ringfeed gen --photos large` (1-4 megapixels, mean 2.5; phone / DSLR / "
             "OpenImages-class), small files on the nvme profile, loaders only (no raw reads, no shards).")
    L.append("- hdd and sata-ssd are emulated: an ext4 image on a loop device with O_DIRECT backing "
             "(`losetup --direct-io=on`: no second page cache under the loop device), reads throttled by a "
             "cgroup-v1 blkio group (`blkio.throttle.read_bps_device` and `read_iops_device`) that every measured "
             "process joins before it starts (buffered reads are throttled too: the reading task issues them; "
             "see each profile's throttle check). blk-throttle counts requests, not seeks: a sequential request "
             "costs an hdd profile as much as a random one, so small files are penalised only by their request "
             "count and large sequential reads only by request size × 150.")
    L.append("- A single cold run of a small dataset is short; the throttle lets a burst through at its start, so "
             "a few hundred MB read in well under a second can come out above the nominal limit.\n")

    L.append("## Environment\n")
    L.append(f"- CPU: {env['cpu']}, {env['cores']} cores; memory {env['memory_gib']} GiB")
    L.append(f"- kernel {env['kernel']}, {env['os']}; {env['fio']}; Python {env['python']}")
    torch = next((m.get("torch") for p in rep["profiles"] for m in p["measurements"] if m.get("torch")), None)
    L.append(f"- PyTorch: {torch or 'not measured'}")
    L.append(f"- ringfeed: {run['binary']} — {run['build']}; commit {env['commit']}")
    L.append(f"- ringfeed Python module: {run.get('python_path') or 'not built'}; bare-decode limit: "
             f"{run.get('decode_limit') or 'not built'}")
    if imagenet or run.get("path"):
        ds = "`ringfeed gen` (ImageNet-like JPEGs)" if not run.get("path") else f"`{run['path']}`"
        L.append(f"- dataset: {ds}, {run['images']:,} images in {run['classes']} classes"
                 + (f" (hdd profile: a {run['hdd_images']:,}-image subset)" if run['hdd_images'] < run['images']
                    else "") + f"; shards packed by {run.get('pack') or '?'}")
    if of_dataset(rep, "large"):
        L.append(f"- large photos: `ringfeed gen --photos large`, {run.get('large_images', 0):,} images in "
                 f"{run['classes']} classes (1-4 MP, mean 2.5 MP; small files only, on the nvme profile)")
    for p in rep["profiles"]:
        for k, lay in p["layouts"].items():
            L.append(f"  - {dataset(p)} {p['profile']} {k}: {lay['files']:,} files, {lay['bytes'] / 1e6:,.1f} MB "
                     f"({lay['bytes'] / max(lay['files'], 1) / 1e3:.0f} KB per file) on {p.get('filesystem', '?')}")
    if env.get("damon_schemes"):
        L.append(f"- **DAMON proactive reclaim is on** (schemes: {', '.join(env['damon_schemes'])}): the kernel pages "
                 "out page cache it judges idle, within seconds on this VM, so a warm run can find part of its "
                 "files evicted. Each run's device reads are in report.json (`device_read_mb`: on nvme the whole "
                 "disk's, other processes included); on the loop devices, warm cells marked ‡ read ≥ 10% of their "
                 "data from the device.")
    L.append(f"- load average after the run: {' '.join(env['load_after'])}")
    if notes:
        L.append("\n## Notes\n")
        for i, n in enumerate(notes, 1):
            L.append(f"{i}. {n}")
    return "\n".join(L) + "\n"
