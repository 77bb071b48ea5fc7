"""GPT-3 175B on 128 DGX-H100 nodes (1,024 GPUs): simulate one training step under several
(dp, tp, pp) strategies, print them ranked, and plot step time and memory per strategy.

    PYTHONPATH=build/python /usr/bin/python3 examples/simulate_gpt3.py --plot gpt3.png

Each strategy is simulated as one data-parallel replica (dp=1 on nodes/dp nodes) whose
optimizer updates all-reduce their gradients over the dp replicas (BuiltinModel.simulate's
replica=True), which keeps a 1,024-GPU step to seconds. fp32 training state without
activation recomputation does not fit 80 GB at 8 micro-batches, and the table says so.
`--micro-batches 48 --recompute` (full activation recomputation; 48 divides every replica's
batch) makes dp=8,tp=8,pp=16 (65 GiB) and dp=4,tp=8,pp=32 (79 GiB) fit, at about 20 s a
strategy.
"""
import argparse
import sys
import time

import twinflow as tw

STRATEGIES = ["dp=8,tp=8,pp=16", "dp=16,tp=8,pp=8", "dp=4,tp=8,pp=32", "dp=32,tp=8,pp=4"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--cluster", default="dgx-h100")
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--recompute", action="store_true", help="full activation recomputation")
    parser.add_argument("--plot", default="gpt3_strategies.png")
    args = parser.parse_args()

    rows = []
    for strategy in STRATEGIES:
        full = f"{strategy},mb={args.micro_batches},schedule=1f1b" + (",recompute=full" if args.recompute else "")
        start = time.time()
        report = tw.models.gpt(preset="gpt3-175b", strategy=full).simulate(
            cluster=args.cluster, nodes=args.nodes, replica=True)
        busy = sum(d["busy_s"] for d in report.devices) / len(report.devices) / report.total_s
        bubble = sum(d["bubble_s"] for d in report.devices) / len(report.devices) / report.total_s
        rows.append((full, report, busy, bubble, time.time() - start))
        print(f"  simulated {full} in {time.time() - start:.1f} s ({report.events} events)", flush=True)

    rows.sort(key=lambda r: r[1].step_s)
    capacity = rows[0][1].memory_capacity
    print(f"\nGPT-3 175B, batch 1536 x 2048 tokens, on {args.cluster} x {args.nodes} nodes "
          f"({args.nodes * 8} GPUs), one step, ranked by step time:")
    width = max(len(r[0]) for r in rows) + 1
    print(f"{'strategy':{width}} {'step time':>10} {'samples/s':>10} {'MFU':>6} {'busy':>6} "
          f"{'bubble':>7} {'peak memory':>12}  fits?")
    for full, r, busy, bubble, _ in rows:
        gib = r.peak_memory_bytes / 2**30
        print(f"{full:{width}} {r.step_s:9.2f}s {r.samples_per_second:10.1f} {100 * r.mfu:5.1f}% "
              f"{100 * busy:5.1f}% {100 * bubble:6.1f}% {gib:9.1f} GiB  "
              f"{'yes' if not r.out_of_memory else 'no (OOM on ' + str(len(r.out_of_memory)) + ' devices)'}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r[0].rsplit(",mb", 1)[0] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.bar(names, [r[1].step_s for r in rows], color="tab:blue")
    left.set_ylabel("simulated step time (s)")
    right.bar(names, [r[1].peak_memory_bytes / 2**30 for r in rows], color="tab:orange")
    right.axhline(capacity / 2**30, color="red", linestyle="--", label="H100 capacity")
    right.set_ylabel("peak memory per GPU (GiB)")
    right.legend()
    for ax in (left, right):
        ax.tick_params(axis="x", rotation=20)
    fig.suptitle(f"GPT-3 175B on {args.nodes} x {args.cluster}, mb={args.micro_batches}, 1F1B")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=100)
    print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
