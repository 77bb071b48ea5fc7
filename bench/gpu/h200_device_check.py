#!/usr/bin/env python3
"""Checks the simulator's GPU device model against a real GPU (run on an H100/H200 with PyTorch).

The simulator times a compute act on a GPU preset by its roofline:
    seconds = launch_overhead + max(flops / (peak * flops_efficiency),
                                     bytes / (memory_bandwidth * memory_efficiency))
This script measures, in bf16 on the local GPU, every op of one GPT-3 175B transformer layer as
tensor parallelism of 8 shards it (hidden 12288, 12 of 96 heads per shard, sequence 2048, one
sequence per micro-batch), forward and backward, each timed alone with CUDA events (median of
20 after 5 warm-ups), plus the whole layer forward+backward through autograd. It prints each op's
measured time next to the roofline's, with the preset's factors and with factors fitted here, and
writes the figures as JSON. The ceilings (an 8192^3 bf16 matrix product, a device-to-device copy,
back-to-back tiny kernels) are measured first.

Usage: h200_device_check.py [--out DIR] [--peak 989e12 --bandwidth 4.8e12 --flops-eff 0.7
                             --mem-eff 0.85 --launch 4e-6]
The docs (docs/simulator.md, "Checked on a real H200") hold the figures of the last run.
"""
import argparse
import json
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F

BF16 = torch.bfloat16


DEVICE = "cuda"
LAYER = dict(seq=2048, hidden=12288, heads=96, tp=8)  # GPT-3 175B, one tensor-parallel shard
CEILING_N, COPY_BYTES = 8192, 2 ** 30


def timed(fn, reps=20, warmup=5):
    """Median seconds of fn() on the GPU."""
    if DEVICE == "cpu":  # --smoke: checks the code paths only
        reps, warmup = 1, 0
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def ceilings():
    n = CEILING_N
    a, b = torch.randn(n, n, device=DEVICE, dtype=BF16), torch.randn(n, n, device=DEVICE, dtype=BF16)
    gemm_s = timed(lambda: a @ b, reps=10, warmup=3)
    src = torch.empty(COPY_BYTES, device=DEVICE, dtype=torch.uint8)
    dst = torch.empty_like(src)
    copy_s = timed(lambda: dst.copy_(src), reps=10, warmup=3)
    tiny = torch.zeros(1, device=DEVICE)
    launches = 2000

    def many():
        for _ in range(launches):
            tiny.add_(1)

    launch_s = timed(many, reps=5, warmup=2) / launches
    fp32 = torch.randn(n, n, device=DEVICE)
    torch.backends.cuda.matmul.allow_tf32 = False  # plain fp32, what twinflow's CPU kernels run
    fp32_s = timed(lambda: fp32 @ fp32, reps=5, warmup=2)
    return {
        "bf16_gemm_flops": 2 * n ** 3 / gemm_s,
        "fp32_gemm_flops": 2 * n ** 3 / fp32_s,
        "copy_bytes_per_s": 2 * src.numel() / copy_s,  # read + write
        "launch_s": launch_s,
    }


def layer_ops(seq=2048, hidden=12288, heads=96, tp=8):
    """(name, flops, bytes, fn) for each op of one layer shard, forward then backward."""
    h, hp, nh, dh = hidden, hidden // tp, heads // tp, hidden // heads
    e = 2  # bytes per bf16 element
    r = lambda *s: torch.randn(*s, device=DEVICE, dtype=BF16)
    x, g, b = r(seq, h), r(h), r(h)
    w_qkv, w_proj = r(h, 3 * hp), r(hp, h)
    w_fc1, w_fc2 = r(h, 4 * hp), r(4 * hp, h)
    q, k, v = r(nh, seq, dh), r(nh, seq, dh), r(nh, seq, dh)
    scores = r(nh, seq, seq)
    ff = r(seq, 4 * hp)
    ops = []

    def mm(name, m, k_, n, a, bm):
        ops.append((name, 2 * m * k_ * n, e * (m * k_ + k_ * n + m * n), lambda: a @ bm))

    def bmm(name, bt, m, k_, n, a, bm):
        ops.append((name, 2 * bt * m * k_ * n, e * bt * (m * k_ + k_ * n + m * n),
                    lambda: torch.bmm(a, bm)))

    def elementwise(name, numel, tensors, fn, flops_per=1):
        ops.append((name, flops_per * numel, e * numel * tensors, fn))

    # forward
    elementwise("layer_norm", seq * h, 2, lambda: F.layer_norm(x, (h,), g, b), 8)
    mm("matmul qkv", seq, h, 3 * hp, x, w_qkv)
    bmm("batch_matmul q.k", nh, seq, dh, seq, q, k.transpose(1, 2))
    elementwise("softmax", nh * seq * seq, 2, lambda: torch.softmax(scores, -1), 5)
    bmm("batch_matmul p.v", nh, seq, seq, dh, scores, v)
    mm("matmul proj", seq, hp, h, r(seq, hp), w_proj)
    elementwise("add (residual)", seq * h, 3, lambda: x + x)
    elementwise("layer_norm", seq * h, 2, lambda: F.layer_norm(x, (h,), g, b), 8)
    mm("matmul fc1", seq, h, 4 * hp, x, w_fc1)
    elementwise("gelu", seq * 4 * hp, 2, lambda: F.gelu(ff, approximate="tanh"), 10)
    mm("matmul fc2", seq, 4 * hp, h, ff, w_fc2)
    elementwise("add (residual)", seq * h, 3, lambda: x + x)
    # backward: each matrix product twice (input and weight gradients)
    for name, m, k_, n in (("qkv", seq, h, 3 * hp), ("proj", seq, hp, h),
                           ("fc1", seq, h, 4 * hp), ("fc2", seq, 4 * hp, h)):
        dy, xin, w = r(m, n), r(m, k_), r(k_, n)
        mm(f"matmul {name} dx", m, n, k_, dy, w.t())
        mm(f"matmul {name} dw", k_, m, n, xin.t(), dy)
    # attention: dQ = dS.K, dK = dS^T.Q, dV = P^T.dCtx are (s x s).(s x dh); dP = dCtx.V^T
    for name in ("q.k dq", "q.k dk", "p.v dv"):
        bmm(f"batch_matmul {name}", nh, seq, seq, dh, scores, v)
    bmm("batch_matmul p.v dp", nh, seq, dh, seq, q, k.transpose(1, 2))
    y = torch.softmax(scores, -1)
    elementwise("softmax_grad", nh * seq * seq, 3,
                lambda: torch._softmax_backward_data(scores, y, -1, BF16), 4)
    elementwise("gelu_grad", seq * 4 * hp, 3,
                lambda: torch.ops.aten.gelu_backward(ff, ff, approximate="tanh"), 20)
    for _ in range(2):
        _, mean, rstd = torch.native_layer_norm(x, (h,), g, b, 1e-5)
        elementwise("layer_norm_grad", seq * h, 4,
                    lambda: torch.ops.aten.native_layer_norm_backward(
                        x, x, (h,), mean, rstd, g, b, [True, True, True]), 12)
    return ops


class LayerShard(torch.nn.Module):
    """The same layer as one module, for the end-to-end forward+backward time."""

    def __init__(self, seq=2048, hidden=12288, heads=96, tp=8):
        super().__init__()
        hp = hidden // tp
        self.nh, self.dh, self.seq = heads // tp, hidden // heads, seq
        self.ln1, self.ln2 = torch.nn.LayerNorm(hidden), torch.nn.LayerNorm(hidden)
        self.qkv, self.proj = torch.nn.Linear(hidden, 3 * hp), torch.nn.Linear(hp, hidden)
        self.fc1, self.fc2 = torch.nn.Linear(hidden, 4 * hp), torch.nn.Linear(4 * hp, hidden)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).view(self.seq, 3, self.nh, self.dh).permute(1, 2, 0, 3)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.dh)
        s = s.masked_fill(torch.ones(self.seq, self.seq, device=x.device, dtype=torch.bool).triu(1), -1e4)
        ctx = torch.bmm(torch.softmax(s, -1), v).permute(1, 0, 2).reshape(self.seq, -1)
        x = x + self.proj(ctx)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def roofline(flops, nbytes, peak, bw, flops_eff, mem_eff, launch):
    return launch + max(flops / (peak * flops_eff), nbytes / (bw * mem_eff))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--peak", type=float, default=989e12)
    p.add_argument("--bandwidth", type=float, default=4.8e12)
    p.add_argument("--flops-eff", type=float, default=0.7)
    p.add_argument("--mem-eff", type=float, default=0.85)
    p.add_argument("--launch", type=float, default=4e-6)
    p.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU: checks the code runs")
    a = p.parse_args()
    if a.smoke:
        global DEVICE, LAYER, CEILING_N, COPY_BYTES
        DEVICE, LAYER, CEILING_N, COPY_BYTES = "cpu", dict(seq=64, hidden=256, heads=8, tp=2), 128, 2 ** 20
    torch.manual_seed(0)
    name = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke)"
    print("device:", name, "torch", torch.__version__, flush=True)
    c = ceilings()
    print(f"bf16 8192^3 product {c['bf16_gemm_flops'] / 1e12:.0f} TFLOP/s, fp32 (no TF32) "
          f"{c['fp32_gemm_flops'] / 1e12:.1f} TFLOP/s, copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s, "
          f"tiny kernel every {c['launch_s'] * 1e6:.2f} us", flush=True)
    rows = [(n, f, b, timed(fn)) for n, f, b, fn in layer_ops(**LAYER)]
    # Fitted factors: compute-bound ops give flops efficiency, memory-bound ones memory efficiency.
    fit_f = statistics.median(f / s / a.peak for n, f, b, s in rows if "matmul" in n)
    fit_m = statistics.median(b / s / a.bandwidth for n, f, b, s in rows if "matmul" not in n)
    print(f"\n{'op':28s} {'GFLOP':>8s} {'MB':>8s} {'real us':>9s} {'preset us':>10s} {'fitted us':>10s}")
    tot = {"real": 0.0, "preset": 0.0, "fitted": 0.0}
    out_rows = []
    for n, f, b, s in rows:
        pre = roofline(f, b, a.peak, a.bandwidth, a.flops_eff, a.mem_eff, a.launch)
        fit = roofline(f, b, a.peak, a.bandwidth, fit_f, fit_m, c["launch_s"])
        tot["real"] += s
        tot["preset"] += pre
        tot["fitted"] += fit
        out_rows.append({"op": n, "flops": f, "bytes": b, "real_s": s, "preset_s": pre, "fitted_s": fit})
        print(f"{n:28s} {f / 1e9:8.2f} {b / 1e6:8.1f} {s * 1e6:9.1f} {pre * 1e6:10.1f} {fit * 1e6:10.1f}")
    layer = LayerShard(**LAYER).to(DEVICE, BF16)
    x = torch.randn(LAYER["seq"], LAYER["hidden"], device=DEVICE, dtype=BF16, requires_grad=True)
    end_to_end = timed(lambda: layer(x).sum().backward(), reps=10, warmup=3)
    print(f"\nsum of ops: real {tot['real'] * 1e3:.3f} ms, preset roofline {tot['preset'] * 1e3:.3f} ms "
          f"({100 * (tot['preset'] / tot['real'] - 1):+.1f}%), fitted {tot['fitted'] * 1e3:.3f} ms "
          f"({100 * (tot['fitted'] / tot['real'] - 1):+.1f}%)")
    print(f"whole layer forward+backward through autograd: {end_to_end * 1e3:.3f} ms "
          f"(preset roofline sum {100 * (tot['preset'] / end_to_end - 1):+.1f}%)")
    print(f"fitted flops_efficiency {fit_f:.3f}, memory_efficiency {fit_m:.3f}, launch {c['launch_s'] * 1e6:.2f} us")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "device_check.json"), "w") as fh:
        json.dump({"device": name, "torch": torch.__version__, "ceilings": c,
                   "preset": vars(a), "fitted": {"flops_efficiency": fit_f, "memory_efficiency": fit_m},
                   "ops": out_rows, "totals": tot, "layer_forward_backward_s": end_to_end}, fh, indent=1)


if __name__ == "__main__":
    main()
