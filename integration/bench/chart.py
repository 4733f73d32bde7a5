#!/usr/bin/env python3
"""Chart of a bench run: closed-loop send throughput and p99 latency per message size and in-flight count,
Apache vs rmqd. Usage: chart.py results.json out.png"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    res = json.load(open(sys.argv[1]))
    brokers = {b["kind"]: b for b in res["brokers"]}
    sizes = res["settings"]["sizes"]
    infl = res["settings"]["inFlight"]
    colors = {"apache": "#c0504d", "rmqd": "#4f81bd"}
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 7), squeeze=False)
    for col, size in enumerate(sizes):
        label = f"{size // 1024} KiB" if size >= 1024 else f"{size} B"
        width = 0.38
        for k, (kind, b) in enumerate(sorted(brokers.items())):
            runs = {r["inFlight"]: r for r in b.get("closed") or [] if r["size"] == size}
            xs = [i + (k - 0.5) * width for i in range(len(infl))]
            tp = [runs[n]["result"]["msgPerS"] if n in runs else 0 for n in infl]
            p99 = [runs[n]["result"]["lat"]["p99Us"] / 1e3 if n in runs else 0 for n in infl]
            p50 = [runs[n]["result"]["lat"]["p50Us"] / 1e3 if n in runs else 0 for n in infl]
            axes[0][col].bar(xs, tp, width, label=kind, color=colors.get(kind))
            axes[1][col].bar(xs, p99, width, label=f"{kind} p99", color=colors.get(kind), alpha=0.55)
            axes[1][col].bar(xs, p50, width, label=f"{kind} p50", color=colors.get(kind))
        for row in (0, 1):
            axes[row][col].set_xticks(range(len(infl)))
            axes[row][col].set_xticklabels([f"×{n}" for n in infl])
        axes[0][col].set_title(f"send {label}: throughput")
        axes[0][col].set_ylabel("msg/s")
        axes[1][col].set_title(f"send {label}: latency")
        axes[1][col].set_ylabel("ms (p50 solid, p99 light)")
        axes[1][col].set_yscale("log")
        axes[1][col].set_xlabel("requests in flight (producer threads)")
    axes[0][0].legend()
    axes[1][0].legend(fontsize=7)
    m = res["machine"]
    fig.suptitle(f"rmqd vs Apache RocketMQ 5.3.3 ({res['mode']} run, {m['cores']} cores, load {m['loadavgAtStart']})")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)


if __name__ == "__main__":
    main()
