#!/usr/bin/env python3
"""One GPT training step on one GPU: twinflow against PyTorch eager, side by side in one run.

Both train the GPT of models/gpt.cc (token and position embeddings; pre-norm blocks of causal
self-attention with separate q, k and v projections and a 4x GELU-tanh MLP; a final layer norm;
a bias-free head; mean cross entropy; AdamW) at the same sizes, batch and dtype on the same GPU:
    small:  12 layers, hidden 768,  12 heads, sequence 1024, vocabulary 50257, batch 8 (GPT-2 small)
    medium: 24 layers, hidden 1024, 16 heads, sequence 1024, vocabulary 50257, batch 8 (GPT-2 medium)
In bf16 (the default first): twinflow's `precision=bf16` (bf16 compute around fp32 master
weights and optimizer state, the loss in fp32) against PyTorch under bf16 autocast (the same
split); in f32 both with TF32 off. twinflow runs `twinflow run --device cuda` with its unfused
attention (cuBLASLt batched GEMMs and a softmax kernel) and its fused one (no score matrix; not
yet on tensor cores); its step time is the difference of two runs (--steps 3 and --steps 3+N)
divided by N, so compilation, start-up and warm-up drop out. PyTorch's is the median of N steps
after 3 warm-ups, timed with CUDA events; its attention is F.scaled_dot_product_attention
(FlashAttention on these GPUs). MFU counts 6 * parameters * tokens plus the attention's
12 * layers * hidden * sequence flops per token, against the dtype's dense peak.

Each row is printed and gpt_step.json rewritten as soon as it is measured, so a run cut short
by its time limit keeps what it measured (bf16, small first).

Usage: gpt_step_bench.py --twinflow PATH [--sizes small,medium] [--dtypes bf16,f32]
         [--attentions unfused,fused] [--steps 10] [--out DIR]
         [--peak-f32 67e12 --peak-bf16 989e12]   (H200/H100 SXM dense peaks)
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


def twinflow_run_seconds(binary, size, dtype, attention, steps):
    strategy = "dp=1" + (",precision=bf16" if dtype == "bf16" else "")
    args = [binary, "run", "--model", "gpt", "--device", "cuda", "--attention", attention,
            "--strategy", strategy, "--steps", str(steps)]
    for key in ("layers", "hidden", "heads", "sequence", "vocab", "batch"):
        args += [f"--{key}", str(size[key])]
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"twinflow failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    match = re.search(r"\(mean of \d+ steps, ([0-9.]+) (ms|s) in all\)", done.stdout)
    if not match:
        raise RuntimeError("no step time in twinflow's output:\n" + done.stdout[-2000:])
    return float(match.group(1)) / (1e3 if match.group(2) == "ms" else 1.0)


def twinflow_step_seconds(binary, size, dtype, attention, steps):
    long_run = twinflow_run_seconds(binary, size, dtype, attention, 3 + steps)
    return (long_run - twinflow_run_seconds(binary, size, dtype, attention, 3)) / steps


def flops_per_step(size, parameters):
    tokens = size["batch"] * size["sequence"]
    attention = 12 * size["layers"] * size["hidden"] * size["sequence"]
    return (6 * parameters + attention) * tokens


def measure(name, size, dtype, attentions, args):
    """The row of one size in one dtype: PyTorch's step, then twinflow's with each attention."""
    row = {"model": name, "dtype": dtype, **size}
    peak = args.peak_bf16 if dtype == "bf16" else args.peak_f32
    torch_s, parameters = torch_step_seconds(size, args.steps, autocast=dtype == "bf16")
    flops = flops_per_step(size, parameters)
    tokens = size["batch"] * size["sequence"]
    row.update(parameters=parameters, flops_per_step=flops, torch_s=torch_s,
               torch_tokens_per_s=tokens / torch_s, torch_mfu=flops / torch_s / peak)
    for attention in attentions:
        key = f"twinflow_{attention}"
        try:
            seconds = twinflow_step_seconds(args.twinflow, size, dtype, attention, args.steps)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row[f"{key}_error"] = str(e)
            continue
        row.update({f"{key}_s": seconds, f"{key}_tokens_per_s": tokens / seconds,
                    f"{key}_mfu": flops / seconds / peak, f"{key}_over_torch": torch_s / seconds})
    return row


def describe(r, attentions):
    """The row as text: PyTorch, then each twinflow attention with its ratio."""
    line = (f"{r['model']:<7} {r['dtype']:<5} torch {r['torch_s'] * 1e3:8.1f} ms "
            f"({r['torch_tokens_per_s']:8.0f} tokens/s, MFU {r['torch_mfu']:6.1%})")
    for attention in attentions:
        key = f"twinflow_{attention}"
        if f"{key}_s" in r:
            line += (f"; twinflow {attention} {r[key + '_s'] * 1e3:8.1f} ms "
                     f"({r[key + '_tokens_per_s']:8.0f} tokens/s, MFU {r[key + '_mfu']:6.1%}, "
                     f"{r[key + '_over_torch']:.2f}x torch)")
        else:
            last = (r.get(key + "_error") or "unknown error").splitlines()[-1]
            line += f"; twinflow {attention} failed: {last}"
    return line


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--twinflow", required=True)
    parser.add_argument("--sizes", default="small,medium")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--attentions", default="unfused,fused")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", default=".")
    parser.add_argument("--peak-f32", type=float, default=67e12)
    parser.add_argument("--peak-bf16", type=float, default=989e12)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    attentions = args.attentions.split(",")
    os.makedirs(args.out, exist_ok=True)
    print(f"GPU: {torch.cuda.get_device_name()}", flush=True)
    rows = []
    for dtype in args.dtypes.split(","):
        for name in args.sizes.split(","):
            rows.append(measure(name, SIZES[name], dtype, attentions, args))
            print(describe(rows[-1], attentions), flush=True)
            with open(os.path.join(args.out, "gpt_step.json"), "w") as f:
                json.dump({"gpu": torch.cuda.get_device_name(), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
