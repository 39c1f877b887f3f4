#!/usr/bin/env python3
"""bench/peers.py -- gpuflow's launch and graph-replay figures beside PyTorch's and CuPy's.

    python3 bench/peers.py [--from FILE] [--bench bench/cuda_bench]

gpuflow's figures (and the raw driver's, from the same run) come from the "@gf" lines that
`bench/cuda_bench --machine` prints: read from FILE, or by running the bench (launch and
graph sections only). The peers are timed here, in this process, the way cuda_bench times
gpuflow: batches of back-to-back launches on one non-default stream ended by a synchronize,
the median batch reported.

  empty-kernel launch:   PyTorch torch.cuda._sleep(0) (the smallest kernel PyTorch launches)
                         and a one-element x.add_(1); CuPy a RawKernel with an empty body
  1000-kernel graph:     PyTorch torch.cuda.CUDAGraph, CuPy Stream.begin_capture/end_capture,
                         replayed 20 times a batch, reported per node
"""
import argparse
import statistics
import subprocess
import time

NODES = 1000        # kernels in the captured graph, as in cuda_bench
LAUNCHES = 10000    # launches per batch, as in cuda_bench
REPLAYS = 20        # graph launches per batch, as in cuda_bench
BATCHES = 11


def median_batch(batch):
    batch()  # warm-up
    return statistics.median(batch() for _ in range(BATCHES))


def gpuflow_figures(args):
    if args.from_file:
        with open(args.from_file) as f:
            text = f.read()
    else:
        text = subprocess.run([args.bench, "--machine", "--only", "launch,graph"],
                              check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in text.splitlines():
        if line.startswith("@gf "):
            _, key, gpuflow, raw, _unit = line.split()
            figures[key] = (float(gpuflow), float(raw))
    return figures


def launch_timer(launch, sync):
    def batch():
        t0 = time.perf_counter()
        for _ in range(LAUNCHES):
            launch()
        sync()
        return (time.perf_counter() - t0) / LAUNCHES * 1e6
    return batch


def replay_timer(replay, sync):
    def batch():
        t0 = time.perf_counter()
        for _ in range(REPLAYS):
            replay()
        sync()
        return (time.perf_counter() - t0) / (REPLAYS * NODES) * 1e6
    return batch


def torch_figures():
    import torch
    out = {"version": "PyTorch " + torch.__version__}
    stream = torch.cuda.Stream()
    x = torch.zeros(1, device="cuda")
    with torch.cuda.stream(stream):
        out["launch_sleep0"] = median_batch(launch_timer(lambda: torch.cuda._sleep(0), stream.synchronize))
        out["launch_add"] = median_batch(launch_timer(lambda: x.add_(1), stream.synchronize))
        for _ in range(3):          # warm-up on a side stream, as CUDAGraph capture wants
            torch.cuda._sleep(0)
    stream.synchronize()
    for name, op in (("_sleep(0)", lambda: torch.cuda._sleep(0)), ("add_", lambda: x.add_(1))):
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                for _ in range(NODES):
                    op()
            break
        except RuntimeError as e:   # a kernel PyTorch cannot capture: try the next one
            print(f"PyTorch: capturing {name} failed ({e}); trying the next op", flush=True)
    else:
        return out
    out["graph_op"] = name
    with torch.cuda.stream(stream):
        out["graph"] = median_batch(replay_timer(graph.replay, stream.synchronize))
    return out


def cupy_figures():
    import cupy
    out = {"version": "CuPy " + cupy.__version__}
    kernel = cupy.RawKernel(r'extern "C" __global__ void empty_kernel() {}', "empty_kernel")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        out["launch"] = median_batch(launch_timer(lambda: kernel((1,), (1,), ()), stream.synchronize))
        stream.begin_capture()
        for _ in range(NODES):
            kernel((1,), (1,), ())
        graph = stream.end_capture()
        out["graph"] = median_batch(replay_timer(lambda: graph.launch(stream), stream.synchronize))
    return out


def peer(name, fn):
    try:
        return fn()
    except Exception as e:  # a missing or broken peer is reported, not fatal
        print(f"{name}: not measured: {type(e).__name__}: {e}", flush=True)
        return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="from_file", help="output of `cuda_bench --machine` to read")
    ap.add_argument("--bench", default="bench/cuda_bench", help="the cuda_bench binary to run")
    args = ap.parse_args()

    gf = gpuflow_figures(args)
    th = peer("PyTorch", torch_figures)
    cp = peer("CuPy", cupy_figures)
    print(f"peers: {th.get('version', 'PyTorch n/a')}, {cp.get('version', 'CuPy n/a')}")

    def cell(v):
        return f"{v:10.3f}" if v is not None else f"{'n/a':>10}"

    def ratio(v, base):
        return f"{v / base:6.2f}x" if v is not None and base else "   n/a"

    rows = [
        ("empty-kernel launch, us", gf.get("launch_empty_us"),
         [("PyTorch _sleep(0)", th.get("launch_sleep0")), ("PyTorch add_ (1 elem)", th.get("launch_add")),
          ("CuPy RawKernel", cp.get("launch"))]),
        ("1000-kernel graph replay, us/node", gf.get("graph_replay_per_node_us"),
         [("PyTorch CUDAGraph " + th.get("graph_op", ""), th.get("graph")), ("CuPy Graph", cp.get("graph"))]),
    ]
    for title, pair, peers in rows:
        gpuflow, raw = pair if pair is not None else (None, None)
        print(f"{title}")
        if pair is None:
            print("  (no gpuflow figure in the bench output)")
        else:
            print(f"  {'gpuflow':24s}{cell(gpuflow)}")
            print(f"  {'raw driver (same run)':24s}{cell(raw)}   gpuflow/raw {gpuflow / raw:6.3f}")
        for name, v in peers:
            print(f"  {name:24s}{cell(v)}   peer/gpuflow {ratio(v, gpuflow)}")
        for name, v in peers:
            if v is not None:
                print(f"@peer {title.split(',')[0].replace(' ', '_')} {name.replace(' ', '_')} {v:.6g}")


if __name__ == "__main__":
    main()
