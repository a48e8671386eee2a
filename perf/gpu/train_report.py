"""train_gpu.py's table: one line per loader, the goals and the ratios
between loaders that ran side by side in one invocation."""


def report(args, results, info):
    cuda = args.device.startswith("cuda")
    dev = "GPU" if cuda else "dev"
    first = next(iter(results.values()))
    amp = first["amp"]
    print(f"\ntrain_gpu{' --dry-run (a functional check: these numbers mean nothing)' if args.dry_run else ''}: "
          f"{args.model}, recipe {args.recipe}, batch {args.batch}, {args.size} px, amp {amp}"
          f"{' + GradScaler' if cuda and amp == 'float16' else ''}, channels_last, SGD; "
          f"{args.warmup} warm-up + {args.steps} measured steps")
    print(f"{first.get('gpu', 'CPU') + ' (' + args.device + ')' if cuda else 'CPU'}; {args.threads} threads/workers, "
          f"{info['cores']} cores; torch {first['torch']}, torchvision {first['torchvision']}")
    print(f"{info['source']}: {info['files']} files, {info['bytes'] / 2**20:.0f} MiB, {info['classes']} classes, "
          f"page cache {'warmed' if info['warmed'] else 'not warmed'}")
    labels = {"ringfeed": f"ringfeed.Loader(device={'cuda' if cuda else 'None'})",
              "dataloader": f"DataLoader({args.threads} workers{', pinned' if cuda else ''})",
              "rf_dataloader": "ringfeed.DataLoader(same arguments)",
              "ringfeed_pixels": "ringfeed.Loader(cache=\"pixels\")"}
    print(f"{'loader':34s} {'images/s':>9s} {'data wait':>9s} {dev + ' stall':>9s} {dev + ' util':>8s} "
          f"{dev + ' ms/step':>11s} {'CPU cores (main)':>16s}")
    for name, r in results.items():
        print(f"{labels[name]:34s} {r['images_per_s']:9.1f} {100 * r['data_wait_share']:8.1f}% "
              f"{100 * r['device_stall_share']:8.1f}% {100 * r['device_util']:7.1f}% "
              f"{r['device_step_ms']['median']:11.1f} {r['cpu_cores']:9.2f} ({r['cpu_cores_main']:.2f})")
    print(f"(data wait: host time blocked in next() / wall; {dev} stall: {dev} idle between steps / wall; "
          f"{dev} util: {dev} time of the steps / wall; {'CUDA events' if cuda else 'host clock'})")
    summary = {}
    if "ringfeed" in results:
        rf = results["ringfeed"]
        share = rf["data_wait_share"]
        summary["goal_data_wait_share_below_5pct"] = share < 0.05
        print(f"goal: ringfeed data-wait share < 5%: {100 * share:.1f}% ({'met' if share < 0.05 else 'NOT met'})")
        on = rf.get("batches_on") or ""
        if cuda and not on.startswith("cuda") or rf["ringfeed"]["host_batches_moved"]:
            print(f"warning: ringfeed gave host batches ({rf['ringfeed']['host_reason']}); they were copied to "
                  f"the GPU in the loop: not the path this measures")
        if "dataloader" in results:
            ratio = rf["images_per_s"] / results["dataloader"]["images_per_s"]
            summary["ringfeed_vs_dataloader_images_per_s"] = ratio
            print(f"ringfeed / DataLoader images/s: {ratio:.2f}x")
    if "ringfeed_pixels" in results and "ringfeed" in results:
        px, rf = results["ringfeed_pixels"], results["ringfeed"]
        summary["pixels_vs_ringfeed_images_per_s"] = px["images_per_s"] / rf["images_per_s"]
        summary["pixels_vs_ringfeed_cpu_cores"] = px["cpu_cores"] / rf["cpu_cores"]
        hits = (px["ringfeed"].get("pixel_cache") or {}).get("hits")
        print(f"cache=\"pixels\" / no cache: {summary['pixels_vs_ringfeed_images_per_s']:.2f}x images/s, "
              f"{summary['pixels_vs_ringfeed_cpu_cores']:.2f}x CPU cores ({hits} cache hits; filled in "
              f"{info.get('pixel_cache_fill_s', 0):.1f} s before)")
    if "rf_dataloader" in results and "dataloader" in results:
        ratio = results["rf_dataloader"]["images_per_s"] / results["dataloader"]["images_per_s"]
        summary["rf_dataloader_vs_dataloader_images_per_s"] = ratio
        print(f"ringfeed.DataLoader (the import swapped) / DataLoader images/s: {ratio:.2f}x")
    for name, r in results.items():
        if r["epochs_started"] > 1:
            print(f"note: {name} crossed an epoch end in the measured steps (a bigger dataset, or --gen-images, "
                  f"avoids measuring epoch start-up)")
    return summary
