#!/usr/bin/env python3
"""One GPT training step on one GPU: twinflow against PyTorch eager, side by side in one run.

Both train the GPT of models/gpt.cc (token and position embeddings; pre-norm blocks of causal
self-attention with separate q, k and v projections and a 4x GELU-tanh MLP; a final layer norm;
a bias-free head; mean cross entropy; AdamW) at the same sizes, batch and dtype on the same GPU:
    small:  12 layers, hidden 768,  12 heads, sequence 1024, vocabulary 50257, batch 8 (GPT-2 small)
    medium: 24 layers, hidden 1024, 16 heads, sequence 1024, vocabulary 50257, batch 8 (GPT-2 medium)
twinflow runs `twinflow run --device cuda --attention fused`; its step time is the difference of
two runs (--steps 3 and --steps 3+N) divided by N, so compilation, start-up and warm-up drop out.
PyTorch's is the median of N steps after 3 warm-ups, timed with CUDA events; its attention is
F.scaled_dot_product_attention (FlashAttention on these GPUs). The dtype is f32 (TF32 off on both)
until twinflow's models take bf16 (mixed precision comes with a later issue); PyTorch under bf16
autocast is printed too, as the target. MFU counts 6 * parameters * tokens plus the attention's
12 * layers * hidden * sequence flops per token, against the dtype's dense peak.

Usage: gpt_step_bench.py --twinflow PATH [--sizes small,medium] [--steps 10] [--out DIR]
         [--peak-f32 67e12 --peak-bf16 989e12]   (H200/H100 SXM dense peaks)
Writes gpt_step.json into --out and prints a table with the ratios.
"""
import argparse
import json
import os
import re
import statistics
import subprocess

import torch
import torch.nn.functional as F

SIZES = {
    "small": dict(layers=12, hidden=768, heads=12, sequence=1024, vocab=50257, batch=8),
    "medium": dict(layers=24, hidden=1024, heads=16, sequence=1024, vocab=50257, batch=8),
}


class Block(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.q, self.k, self.v = (torch.nn.Linear(hidden, hidden) for _ in range(3))
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, h):
        b, s, d = h.shape
        a = self.ln1(h)
        split = lambda t: t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        att = F.scaled_dot_product_attention(split(self.q(a)), split(self.k(a)), split(self.v(a)),
                                             is_causal=True)
        h = h + self.proj(att.transpose(1, 2).reshape(b, s, d))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h)), approximate="tanh"))


class Gpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, sequence, vocab, **_):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, hidden)
        self.wpe = torch.nn.Parameter(torch.randn(sequence, hidden) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids, labels):
        h = self.wte(ids) + self.wpe
        for block in self.blocks:
            h = block(h)
        logits = self.head(self.ln_f(h))
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())


def torch_step_seconds(size, steps, autocast):
    torch.manual_seed(0)
    model = Gpt(**size).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, size["vocab"], (size["batch"], size["sequence"]), device="cuda")
    labels = torch.randint(0, size["vocab"], (size["batch"], size["sequence"]), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(ids, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    parameters = sum(p.numel() for p in model.parameters())
    del model, optimizer
    torch.cuda.empty_cache()
    return statistics.median(times), parameters


def twinflow_run_seconds(binary, size, steps):
    args = [binary, "run", "--model", "gpt", "--device", "cuda", "--attention", "fused",
            "--strategy", "dp=1", "--steps", str(steps)]
    for key in ("layers", "hidden", "heads", "sequence", "vocab", "batch"):
        args += [f"--{key}", str(size[key])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"twinflow failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    match = re.search(r"\(mean of \d+ steps, ([0-9.]+) (ms|s) in all\)", done.stdout)
    if not match:
        raise RuntimeError("no step time in twinflow's output:\n" + done.stdout[-2000:])
    return float(match.group(1)) / (1e3 if match.group(2) == "ms" else 1.0)


def twinflow_step_seconds(binary, size, steps):
    return (twinflow_run_seconds(binary, size, 3 + steps) - twinflow_run_seconds(binary, size, 3)) / steps


def flops_per_step(size, parameters):
    tokens = size["batch"] * size["sequence"]
    attention = 12 * size["layers"] * size["hidden"] * size["sequence"]
    return (6 * parameters + attention) * tokens


def measure(name, size, args):
    row = {"model": name, **size}
    pt_f32, parameters = torch_step_seconds(size, args.steps, autocast=False)
    pt_bf16, _ = torch_step_seconds(size, args.steps, autocast=True)
    flops = flops_per_step(size, parameters)
    tokens = size["batch"] * size["sequence"]
    row.update(parameters=parameters, flops_per_step=flops, torch_f32_s=pt_f32, torch_bf16_s=pt_bf16)
    try:
        row["twinflow_f32_s"] = twinflow_step_seconds(args.twinflow, size, args.steps)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        row["twinflow_error"] = str(e)
    for key, peak in (("torch_f32", args.peak_f32), ("torch_bf16", args.peak_bf16),
                      ("twinflow_f32", args.peak_f32)):
        if f"{key}_s" in row:
            row[f"{key}_tokens_per_s"] = tokens / row[f"{key}_s"]
            row[f"{key}_mfu"] = flops / row[f"{key}_s"] / peak
    if "twinflow_f32_s" in row:
        row["twinflow_over_torch_f32"] = row["torch_f32_s"] / row["twinflow_f32_s"]
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twinflow", required=True)
    parser.add_argument("--sizes", default="small,medium")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", default=".")
    parser.add_argument("--peak-f32", type=float, default=67e12)
    parser.add_argument("--peak-bf16", type=float, default=989e12)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = [measure(name, SIZES[name], args) for name in args.sizes.split(",")]
    print(f"GPU: {torch.cuda.get_device_name()}")
    print("model   torch f32 ms  twinflow f32 ms  twinflow/torch  tf tokens/s  tf MFU  "
          "torch bf16 ms (MFU)")
    for r in rows:
        tf = r.get("twinflow_f32_s")
        print(f"{r['model']:<7} {r['torch_f32_s'] * 1e3:12.1f}  "
              + (f"{tf * 1e3:15.1f}  {r['twinflow_over_torch_f32']:13.2f}x  "
                 f"{r['twinflow_f32_tokens_per_s']:11.0f}  {r['twinflow_f32_mfu']:6.1%}  "
                 if tf else f"{'failed':>15}  {'-':>14}  {'-':>11}  {'-':>6}  ")
              + f"{r['torch_bf16_s'] * 1e3:9.1f} ({r['torch_bf16_mfu']:.1%})")
        if "twinflow_error" in r:
            print("  twinflow: " + r["twinflow_error"].splitlines()[-1])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gpt_step.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
