#!/usr/bin/env python3
"""Kernel-level evidence for the simulator's efficiency knobs, measured on a real GPU with PyTorch.

The simulator (docs/SIMULATOR.md, "Knobs") assumes linear layers at `compute_efficiency` of the
datasheet's dense rate when compute-bound and their weights streamed at `bandwidth_efficiency` of
the datasheet's bandwidth when memory-bound; FP8 (W8A8) GEMMs at `w8a8_compute_efficiency`;
attention at `attention_efficiency`; a step overhead that CUDA graphs keep small. This script
measures each of those on the GPU it runs on, at the shapes of the models in the validation set,
so the knobs can be checked against what the hardware and its vendor stack achieve (not fitted to
any serving point):

  ceilings   device-to-device copy (bytes read + written) and a large BF16 GEMM
  linear     one decoder layer's four GEMMs (QKV, O, gate+up, down) at M = 1..8192 tokens, BF16,
             for Llama-3.1-8B (TP1) and Llama-3.1-70B (TP2 shard): TFLOP/s and weight bytes/s
  fp8        the same in FP8 with torch._scaled_mm: per-tensor scales, and row-wise scales with the
             per-token activation quantisation an engine runs before each GEMM
  attention  causal prefill (scaled_dot_product_attention) TFLOP/s; decode KV-read bandwidth
  launch     eager vs CUDA-graph time per kernel (a chain of tiny kernels) and per decoder layer
             (a Llama-3.1-8B layer stack at batch 1-64), with the kernel count per layer
  moe        DeepSeek-V3's routed experts on one GPU of TP8 (each expert's 7168 x 512 and
             256 x 7168 shard) at M tokens per expert: TFLOP/s against the dense rate

Prints one JSON object per measurement (also to OUT_DIR/gpu_microbench.jsonl when --out is given)
and a summary table last. Each part runs on its own; a failing part prints its error and the
others go on. Needs PyTorch with CUDA (and Triton for its do_bench timer; falls back to CUDA
events). Run:  python3 scripts/gpu_microbench.py --out DIR [--parts ceilings,linear,...]
"""
import argparse
import json
import os
import sys
import time
import traceback

import torch

RESULTS = []
OUT_FILE = None


def emit(**kv):
    RESULTS.append(kv)
    line = json.dumps(kv)
    print(line, flush=True)
    if OUT_FILE is not None:
        OUT_FILE.write(line + "\n")
        OUT_FILE.flush()


def bench_ms(fn, rep_ms=60):
    """Median milliseconds per call, timed with device events."""
    try:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=15, rep=rep_ms, return_mode="median"))
    except Exception:  # no Triton: CUDA events, median of 30
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(30):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        times.sort()
        return times[len(times) // 2]


def rand(*shape, dtype=torch.bfloat16):
    # Never zeros (they run faster than real data on this hardware); N(0, 1) scaled down.
    return (torch.randn(*shape, device="cuda", dtype=torch.float32) * 0.05).to(dtype)


# Datasheet figures of the GPU (dense, no sparsity), by the name torch reports.
DATASHEET = {
    "H200": {"bf16_tflops": 989.4, "fp8_tflops": 1978.9, "bandwidth_gb_s": 4800},
    "H100": {"bf16_tflops": 989.4, "fp8_tflops": 1978.9, "bandwidth_gb_s": 3350},
    "A100": {"bf16_tflops": 312.0, "fp8_tflops": None, "bandwidth_gb_s": 2039},
}


def datasheet():
    name = torch.cuda.get_device_name()
    for key, v in DATASHEET.items():
        if key in name:
            return name, v
    return name, {"bf16_tflops": None, "fp8_tflops": None, "bandwidth_gb_s": None}


def ratio(x, ref):
    return None if ref in (None, 0) else x / ref


# ---- parts ----


def part_ceilings(ds):
    n = 1 << 30  # 1 GiB per buffer: far above the 60 MB L2
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src))
    gbs = 2 * n / (ms / 1e3) / 1e9
    emit(part="ceilings", what="d2d copy", bytes=2 * n, ms=ms, gb_s=gbs,
         of_datasheet=ratio(gbs, ds["bandwidth_gb_s"]))
    del src, dst
    a, b = rand(8192, 8192), rand(8192, 8192)
    ms = bench_ms(lambda: a @ b)
    tf = 2 * 8192**3 / (ms / 1e3) / 1e12
    emit(part="ceilings", what="bf16 gemm 8192^3", ms=ms, tflops=tf,
         of_datasheet=ratio(tf, ds["bf16_tflops"]))


# (K, N) of the four GEMMs of one decoder layer on one GPU.
LAYERS = {
    "llama-3.1-8b tp1": [(4096, 6144), (4096, 4096), (4096, 28672), (14336, 4096)],
    "llama-3.1-70b tp2": [(8192, 5120), (4096, 8192), (8192, 28672), (14336, 8192)],
}
M_LIST = [1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]


def part_linear(ds):
    for model, shapes in LAYERS.items():
        weights = [rand(n, k) for k, n in shapes]  # nn.Linear layout: (out, in)
        wbytes = sum(k * n * 2 for k, n in shapes)
        for m in M_LIST:
            xs = [rand(m, k) for k, _ in shapes]

            def layer():
                for x, w in zip(xs, weights):
                    torch.nn.functional.linear(x, w)

            ms = bench_ms(layer)
            flops = sum(2 * m * k * n for k, n in shapes)
            tf = flops / (ms / 1e3) / 1e12
            gbs = wbytes / (ms / 1e3) / 1e9
            emit(part="linear", model=model, dtype="bf16", m=m, ms=ms, tflops=tf,
                 of_peak_flops=ratio(tf, ds["bf16_tflops"]), weight_gb_s=gbs,
                 of_peak_bandwidth=ratio(gbs, ds["bandwidth_gb_s"]))
        del weights


def part_fp8(ds):
    f8 = torch.float8_e4m3fn
    for model, shapes in LAYERS.items():
        # _scaled_mm wants the second operand column-major: (N, K) row-major, transposed.
        w8 = [rand(n, k).to(f8) for k, n in shapes]
        wbytes = sum(k * n for k, n in shapes)
        one = torch.tensor(1.0, device="cuda")
        wscale_row = [torch.ones(1, n, device="cuda") for _, n in shapes]
        for m in M_LIST:
            m16 = max(16, m)  # _scaled_mm needs M a multiple of 16 on some versions
            x16 = [rand(m16, k) for k, _ in shapes]
            x8 = [x.to(f8) for x in x16]

            def per_tensor():
                for x, w in zip(x8, w8):
                    torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

            def rowwise_with_quant():
                for x, w, sw in zip(x16, w8, wscale_row):
                    amax = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12)
                    scale = amax / 448.0
                    xq = (x.float() / scale).to(f8)
                    torch._scaled_mm(xq, w.t(), scale_a=scale, scale_b=sw,
                                     out_dtype=torch.bfloat16)

            flops = sum(2 * m16 * k * n for k, n in shapes)
            for label, fn in (("fp8 per-tensor", per_tensor),
                              ("fp8 row-wise + activation quant", rowwise_with_quant)):
                try:
                    ms = bench_ms(fn)
                except Exception as e:  # row-wise scales need a recent torch
                    emit(part="fp8", model=model, dtype=label, m=m16, error=str(e)[:200])
                    continue
                tf = flops / (ms / 1e3) / 1e12
                gbs = wbytes / (ms / 1e3) / 1e9
                emit(part="fp8", model=model, dtype=label, m=m16, ms=ms, tflops=tf,
                     of_peak_flops=ratio(tf, ds["fp8_tflops"]), weight_gb_s=gbs,
                     of_peak_bandwidth=ratio(gbs, ds["bandwidth_gb_s"]))
        del w8


def part_attention(ds):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    heads, d = 32, 128
    for s in (1024, 4096, 8192):
        q, k, v = rand(1, heads, s, d), rand(1, heads, s, d), rand(1, heads, s, d)
        ms = bench_ms(lambda: sdpa(q, k, v, is_causal=True))
        flops = 4 * heads * d * s * s / 2  # QK^T and PV over the causal half
        tf = flops / (ms / 1e3) / 1e12
        emit(part="attention", what="causal prefill", heads=heads, head_dim=d, seq=s, ms=ms,
             tflops=tf, of_peak_flops=ratio(tf, ds["bf16_tflops"]))
    # Decode: one query per sequence against L cached keys (8 KV heads shared by 32, as GQA reads
    # them once; expanded here, so bytes are counted for the heads actually read).
    for b, length in ((8, 4096), (64, 2048), (256, 1024)):
        q = rand(b, heads, 1, d)
        k, v = rand(b, heads, length, d), rand(b, heads, length, d)
        ms = bench_ms(lambda: sdpa(q, k, v))
        kv_bytes = 2 * b * heads * length * d * 2
        gbs = kv_bytes / (ms / 1e3) / 1e9
        emit(part="attention", what="decode kv read", batch=b, context=length, ms=ms,
             gb_s=gbs, of_peak_bandwidth=ratio(gbs, ds["bandwidth_gb_s"]))


def count_kernels(fn):
    """Kernels one call launches, from the profiler (None if it is unavailable)."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    except Exception:
        return None


def eager_and_graph_ms(fn, reps=50):
    """Wall time per call launched eagerly (host-bound when kernels are tiny), and per replay of
    the same work captured in a CUDA graph."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) * 1e3 / reps
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        g.replay()
    torch.cuda.synchronize()
    graph = (time.perf_counter() - t0) * 1e3 / reps
    return eager, graph


def part_launch(ds):
    x = rand(1, dtype=torch.float32)
    n = 1000

    def chain():
        for _ in range(n):
            x.mul_(1.0000001)

    eager, graph = eager_and_graph_ms(chain, reps=20)
    emit(part="launch", what="tiny kernel chain", kernels=n, eager_us_per_kernel=eager * 1e3 / n,
         graph_us_per_kernel=graph * 1e3 / n)

    # A Llama-3.1-8B decoder layer as an engine without fused kernels writes it in PyTorch:
    # RMSNorm, QKV, rotary, attention over the cache, O, residual, RMSNorm, gate+up, SiLU*up, down.
    hidden, heads, kv_heads, d, inter = 4096, 32, 8, 128, 14336
    layers = 32
    ws = [dict(qkv=rand((heads + 2 * kv_heads) * d, hidden), o=rand(hidden, heads * d),
               gu=rand(2 * inter, hidden), down=rand(hidden, inter),
               n1=rand(hidden), n2=rand(hidden)) for _ in range(layers)]
    sdpa = torch.nn.functional.scaled_dot_product_attention
    lin = torch.nn.functional.linear

    def rms(h, w):
        v = h.float().pow(2).mean(-1, keepdim=True)
        return (h.float() * torch.rsqrt(v + 1e-5)).to(h.dtype) * w

    for batch in (1, 8, 64):
        ctx = 512
        kc = rand(batch, kv_heads, ctx, d)
        vc = rand(batch, kv_heads, ctx, d)
        cos, sin = rand(batch, 1, 1, d // 2), rand(batch, 1, 1, d // 2)
        h0 = rand(batch, hidden)

        def rope(t):
            t1, t2 = t[..., : d // 2], t[..., d // 2:]
            return torch.cat((t1 * cos - t2 * sin, t2 * cos + t1 * sin), dim=-1)

        def step():
            h = h0
            for w in ws:
                a = rms(h, w["n1"])
                qkv = lin(a, w["qkv"])
                q, k, v = qkv.split([heads * d, kv_heads * d, kv_heads * d], dim=-1)
                q = rope(q.reshape(batch, heads, 1, d))
                k = rope(k.reshape(batch, kv_heads, 1, d))
                kk = torch.cat((kc, k), dim=2).repeat_interleave(heads // kv_heads, dim=1)
                vv = torch.cat((vc, v.reshape(batch, kv_heads, 1, d)), dim=2)
                vv = vv.repeat_interleave(heads // kv_heads, dim=1)
                o = sdpa(q, kk, vv).reshape(batch, heads * d)
                h = h + lin(o, w["o"])
                m = rms(h, w["n2"])
                g, u = lin(m, w["gu"]).chunk(2, dim=-1)
                h = h + lin(torch.nn.functional.silu(g) * u, w["down"])
            return h

        kernels = count_kernels(step)
        eager, graph = eager_and_graph_ms(step, reps=20)
        emit(part="launch", what="llama-3.1-8b decode step, 32 layers", batch=batch, context=ctx,
             kernels_per_step=kernels,
             kernels_per_layer=None if kernels is None else kernels / layers,
             eager_ms=eager, graph_ms=graph, eager_minus_graph_us_per_layer=(eager - graph) * 1e3 / layers,
             eager_minus_graph_us_per_kernel=None if not kernels else (eager - graph) * 1e3 / kernels)


def part_moe(ds):
    # DeepSeek-V3: 256 routed experts, moe_intermediate 2048, hidden 7168; TP8 leaves each GPU a
    # 256-column shard of every expert (gate+up 7168 -> 512, down 256 -> 7168).
    experts, hidden, shard = 256, 7168, 256
    f8 = torch.float8_e4m3fn
    wgu = [rand(2 * shard, hidden) for _ in range(experts)]
    wd = [rand(hidden, shard) for _ in range(experts)]
    wgu8 = [w.to(f8) for w in wgu]
    wd8 = [w.to(f8) for w in wd]
    one = torch.tensor(1.0, device="cuda")
    for m in (1, 4, 16, 64, 128):
        rows = max(16, m)  # _scaled_mm wants M a multiple of 16; BF16 runs exactly m rows
        x, xd = rand(rows, hidden), rand(rows, shard)
        x8, xd8 = x.to(f8), xd.to(f8)

        def bf16_loop():
            for a, b in zip(wgu, wd):
                torch.nn.functional.linear(x[:m], a)
                torch.nn.functional.linear(xd[:m], b)

        def fp8_loop():
            for a, b in zip(wgu8, wd8):
                torch._scaled_mm(x8, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                torch._scaled_mm(xd8, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        useful = experts * 2 * m * (hidden * 2 * shard + shard * hidden)
        for label, fn, peak, used in (("bf16", bf16_loop, ds["bf16_tflops"], m),
                                      ("fp8 per-tensor", fp8_loop, ds["fp8_tflops"], rows)):
            try:
                # 512 launches per call: eager time is the host's; the graph replay is the GPU's.
                eager, graph = eager_and_graph_ms(fn, reps=10)
            except Exception as e:
                emit(part="moe", dtype=label, tokens_per_expert=m, error=str(e)[:200])
                continue
            done = experts * 2 * used * (hidden * 2 * shard + shard * hidden)
            tf = done / (graph / 1e3) / 1e12
            emit(part="moe", dtype=label, tokens_per_expert=m, computed_rows=used,
                 graph_ms=graph, eager_ms=eager, tflops=tf, of_peak_flops=ratio(tf, peak),
                 useful_tflops=useful / (graph / 1e3) / 1e12,
                 weight_gb_s=experts * 3 * shard * hidden * (2 if label == "bf16" else 1)
                 / (graph / 1e3) / 1e9)


PARTS = {"ceilings": part_ceilings, "linear": part_linear, "fp8": part_fp8,
         "attention": part_attention, "launch": part_launch, "moe": part_moe}


def summary():
    print("\n== summary ==")
    for r in RESULTS:
        if "error" in r:
            print(f"{r.get('part')}: ERROR {r['error'][:120]}")
            continue
        keys = [k for k in ("what", "model", "dtype", "m", "batch", "seq", "context",
                            "tokens_per_expert") if k in r]
        vals = [k for k in ("ms", "tflops", "of_peak_flops", "gb_s", "weight_gb_s",
                            "of_peak_bandwidth", "of_datasheet", "eager_us_per_kernel",
                            "graph_us_per_kernel", "kernels_per_layer", "eager_ms", "graph_ms",
                            "eager_minus_graph_us_per_layer") if r.get(k) is not None]
        print(r["part"], " ".join(f"{k}={r[k]}" for k in keys), " ".join(
            f"{k}={r[k]:.4g}" for k in vals))


def main():
    global OUT_FILE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="folder for gpu_microbench.jsonl")
    ap.add_argument("--parts", default=",".join(PARTS), help="comma list of " + ",".join(PARTS))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_microbench: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    parts = args.parts.split(",")
    bad = [p for p in parts if p not in PARTS]
    if bad:
        print(f"gpu_microbench: unknown part(s) {bad}; accepted: {','.join(PARTS)}",
              file=sys.stderr)
        return 2
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        OUT_FILE = open(os.path.join(args.out, "gpu_microbench.jsonl"), "w")
    name, ds = datasheet()
    emit(part="device", name=name, torch=torch.__version__, cuda=torch.version.cuda,
         datasheet=ds)
    for p in parts:
        t0 = time.time()
        try:
            PARTS[p](ds)
        except Exception as e:
            emit(part=p, error=f"{type(e).__name__}: {e}", trace=traceback.format_exc()[-800:])
        torch.cuda.empty_cache()
        print(f"# part {p}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    summary()
    return 0


if __name__ == "__main__":
    sys.exit(main())
