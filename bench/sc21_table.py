#!/usr/bin/python3
"""Simulates the rows of Megatron-LM's SC'21 weak-scaling table (Narayanan et al. 2021, Table 1:
GPT models from 1.7B to 1T parameters on DGX A100 80 GB nodes) with `twinflow sim`, each with the
flags of its row in Megatron-LM's examples/academic_paper_scripts/sc21 scripts: sequence 2048,
vocabulary 51200, fp16, full recomputation, the row's tp, pp, micro-batch size, global batch and
virtual-pipeline degree. Prints, per row, the predicted step and TFLOP/s per GPU next to the
published ones, counted as the paper counts: 96 B s l h^2 (1 + s/6h + V/16lh) flops per step.

    /usr/bin/python3 bench/sc21_table.py [--rows 1.7B,3.6B] [--twinflow build/bin/twinflow]
        [--check 0.10]

With --check F it exits 1 unless every row's |error| is at most F and its prediction fits in
memory, as the real run did (the slow test slow.sc21_table).

docs/simulator.md#published-runs-megatron-lm-sc21 holds the last run's table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SEQUENCE, VOCAB = 2048, 51200
# name: (tp, pp, micro-batch size, global batch, layers, hidden, heads, GPUs,
#        layers per virtual stage (0: none), published TFLOP/s per GPU)
ROWS = {
    "1.7B": (1, 1, 16, 512, 24, 2304, 24, 32, 0, 137),
    "3.6B": (2, 1, 16, 512, 30, 3072, 32, 64, 0, 138),
    "7.5B": (4, 1, 16, 512, 36, 4096, 32, 128, 0, 142),
    "18B": (8, 1, 8, 1024, 40, 6144, 48, 256, 0, 135),
    "39B": (8, 2, 4, 1536, 48, 8192, 64, 512, 0, 138),
    "76B": (8, 4, 2, 1792, 60, 10240, 80, 1024, 5, 140),
    "145B": (8, 8, 2, 2304, 80, 12288, 96, 1536, 5, 148),
    "310B": (8, 16, 1, 2160, 96, 16384, 128, 1920, 3, 155),
    "530B": (8, 35, 1, 2520, 105, 20480, 128, 2520, 1, 163),
    "1T": (8, 64, 1, 3072, 128, 25600, 160, 3072, 0, 163),
}


def paper_flops(batch, layers, hidden):
    s, l, h = SEQUENCE, layers, hidden
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + VOCAB / (16 * l * h))


def strategy(row):
    tp, pp, mbs, batch, layers, _, _, gpus, vp_layers, _ = row
    dp = gpus // (tp * pp)
    parts = [f"dp={dp}", f"tp={tp}", f"pp={pp}"]
    if vp_layers:
        parts.append(f"vp={layers // pp // vp_layers}")
    parts += ["precision=fp16", "recompute=full"]
    return ",".join(parts), batch // (mbs * dp)


def simulate(twinflow, name, row):
    tp, pp, mbs, batch, layers, hidden, heads, gpus, _, published = row
    text, micro_batches = strategy(row)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.json")
        command = [twinflow, "sim", "--model", "gpt", "--layers", str(layers), "--hidden",
                   str(hidden), "--heads", str(heads), "--sequence", str(SEQUENCE), "--vocab",
                   str(VOCAB), "--batch", str(batch), "--micro-batch-size", str(mbs),
                   "--strategy", text, "--device", "cuda", "--cluster", "dgx-a100", "--nodes",
                   str(gpus // 8), "--json", out]
        start = time.time()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        wall = time.time() - start
        result = json.load(open(out))
    step = result["step_s"]
    peak = max(d["live_peak_bytes"] for d in result["devices_report"])
    predicted = paper_flops(batch, layers, hidden) / step / gpus / 1e12
    return {"row": name, "gpus": gpus, "strategy": f"{text},mb={micro_batches}",
            "step_s": step, "published_step_s": paper_flops(batch, layers, hidden) / gpus /
            (published * 1e12), "tflops": predicted, "published_tflops": published,
            "error": predicted / published - 1, "peak_gib": peak / 2**30,
            "fits": not any(d["out_of_memory"] for d in result["devices_report"]), "wall_s": wall}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help="comma-separated row names")
    parser.add_argument("--twinflow", default="build/bin/twinflow")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--check", type=float, help="fail unless every |error| <= this and fits")
    args = parser.parse_args()
    names = args.rows.split(",")
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        sys.exit(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    results = []
    print("| row | GPUs | strategy | predicted step | published step | predicted TFLOP/s/GPU "
          "| published | error | peak memory | fits | sim wall |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        r = simulate(args.twinflow, name, ROWS[name])
        results.append(r)
        print(f"| {r['row']} | {r['gpus']} | {r['strategy']} | {r['step_s']:.2f} s "
              f"| {r['published_step_s']:.2f} s | {r['tflops']:.0f} | {r['published_tflops']} "
              f"| {r['error'] * 100:+.1f}% | {r['peak_gib']:.1f} GiB | {'yes' if r['fits'] else 'no'} "
              f"| {r['wall_s']:.0f} s |", flush=True)
    errors = [abs(r["error"]) for r in results]
    print(f"mean |error| {sum(errors) / len(errors) * 100:.1f}%, worst {max(errors) * 100:.1f}%")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    if args.check is not None:
        bad = [r["row"] for r in results if abs(r["error"]) > args.check or not r["fits"]]
        if bad:
            sys.exit(f"FAIL: rows {bad} are off by more than {args.check:.0%} or out of memory")
        print(f"every row within {args.check:.0%} and in memory")


if __name__ == "__main__":
    main()
