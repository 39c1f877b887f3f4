#!/usr/bin/env python3
"""bench/peers.py -- PyTorch and CuPy doing what cuda_bench times, section by section.

    python3 bench/peers.py SECTIONS [--peer torch,cupy] [--machine]
    python3 bench/peers.py table FILE

SECTIONS is a comma list of `launch` and `graph`, run in the order given (repeats allowed:
`launch,graph` shows what a launch storm does to graph replay in one process). Like for like:
bench/run_h100.sh runs every section of every side in a fresh process of its own, so each
is measured in the same conditions as `cuda_bench --only SECTION` measures gpuflow and the
raw driver:

    python3 bench/peers.py launch --peer torch --machine
    python3 bench/peers.py graph  --peer cupy  --machine

The peers are timed the way cuda_bench times gpuflow: batches of back-to-back launches on
one non-default stream ended by a synchronize, one warm-up batch, the median of BATCHES
batches reported.

  launch:   PyTorch torch.cuda._sleep(0) (the smallest kernel PyTorch launches) and a
            one-element x.add_(1); CuPy a RawKernel with an empty body; 10000 launches a batch
  graph:    1000 kernels captured (PyTorch torch.cuda.CUDAGraph, CuPy Stream.begin_capture /
            end_capture), replayed 20 times a batch, reported per node

torch and cupy are imported only for the sections that use them, and a missing or broken
one is reported and skipped. Before and after each section the GPU's clocks are printed
(nvidia-smi, where it exists), as cuda_bench prints them.

`table FILE` reads the "@gf" lines of `cuda_bench --machine` and the "@peer" lines of this
script (run_h100.sh's bench.txt holds both) and prints the like-for-like tables.
"""
import argparse
import statistics
import subprocess
import sys
import time

NODES = 1000        # kernels in the captured graph, as in cuda_bench
LAUNCHES = 10000    # launches per batch, as in cuda_bench
REPLAYS = 20        # graph launches per batch, as in cuda_bench
BATCHES = 11
SECTIONS = ("launch", "graph")
PEERS = ("torch", "cupy")


def median_batch(batch):
    batch()  # warm-up
    return statistics.median(batch() for _ in range(BATCHES))


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


def clocks(label):
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,pstate",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    print(f"clocks {label:22s} {out.splitlines()[0] if out else 'n/a (no nvidia-smi)'}", flush=True)


# ---- PyTorch -----------------------------------------------------------------------------------
class Torch:
    def __init__(self):
        import torch
        self.torch = torch
        self.version = "PyTorch " + torch.__version__
        self.stream = torch.cuda.Stream()
        self.x = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()

    def launch(self):
        torch, stream, x = self.torch, self.stream, self.x
        out = {}
        with torch.cuda.stream(stream):
            out["sleep0"] = median_batch(launch_timer(lambda: torch.cuda._sleep(0), stream.synchronize))
            out["add_"] = median_batch(launch_timer(lambda: x.add_(1), stream.synchronize))
        return out

    def graph(self):
        torch, stream, x = self.torch, self.stream, self.x
        with torch.cuda.stream(stream):
            for _ in range(3):          # warm-up on a side stream, as CUDAGraph capture wants
                torch.cuda._sleep(0)
        stream.synchronize()
        for name, op in (("sleep0", lambda: torch.cuda._sleep(0)), ("add_", lambda: x.add_(1))):
            try:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=stream):
                    for _ in range(NODES):
                        op()
                break
            except RuntimeError as e:   # a kernel PyTorch cannot capture: try the next one
                print(f"PyTorch: capturing {name} failed ({e}); trying the next op", flush=True)
        else:
            return {}
        with torch.cuda.stream(stream):
            return {"cudagraph_" + name: median_batch(replay_timer(graph.replay, stream.synchronize))}


# ---- CuPy --------------------------------------------------------------------------------------
class CuPy:
    def __init__(self):
        import cupy
        self.cupy = cupy
        self.version = "CuPy " + cupy.__version__
        self.kernel = cupy.RawKernel(r'extern "C" __global__ void empty_kernel() {}', "empty_kernel")
        self.stream = cupy.cuda.Stream(non_blocking=True)
        with self.stream:               # compiles the kernel (NVRTC) before anything is timed
            self.kernel((1,), (1,), ())
        self.stream.synchronize()

    def launch(self):
        kernel, stream = self.kernel, self.stream
        with stream:
            return {"rawkernel": median_batch(launch_timer(lambda: kernel((1,), (1,), ()), stream.synchronize))}

    def graph(self):
        kernel, stream = self.kernel, self.stream
        with stream:
            kernel((1,), (1,), ())      # warm-up, as for PyTorch
            stream.synchronize()
            stream.begin_capture()
            for _ in range(NODES):
                kernel((1,), (1,), ())
            graph = stream.end_capture()
            return {"graph": median_batch(replay_timer(lambda: graph.launch(stream), stream.synchronize))}


def measure(args):
    sections = args.sections.split(",")
    bad = [s for s in sections if s not in SECTIONS]
    peers = args.peer.split(",")
    bad += [p for p in peers if p not in PEERS]
    if bad:
        sys.exit(f"peers.py: unknown section or peer: {', '.join(bad)} (sections: {', '.join(SECTIONS)}; peers: {', '.join(PEERS)})")
    for peer in peers:
        t0 = time.perf_counter()
        try:
            side = Torch() if peer == "torch" else CuPy()
        except Exception as e:  # a missing or broken peer is reported, not fatal
            print(f"{peer}: not measured: {type(e).__name__}: {e}", flush=True)
            continue
        print(f"# {side.version} (import and start {time.perf_counter() - t0:.1f} s)", flush=True)
        for i, section in enumerate(sections, 1):
            print(f"# {section}", flush=True)
            clocks(f"{i}:{section}:before")
            t0 = time.perf_counter()
            try:
                figures = getattr(side, section)()
            except Exception as e:
                print(f"{peer} {section}: failed: {type(e).__name__}: {e}", flush=True)
                figures = {}
            unit = "us/node" if section == "graph" else "us"
            for what, v in figures.items():
                print(f"{peer:6s} {section:7s} {what:18s} {v:10.3f} {unit}", flush=True)
                if args.machine:
                    print(f"@peer {section} {peer} {what} {v:.6g} {unit}", flush=True)
            clocks(f"{i}:{section}:after")
            print(f"# {section} took {time.perf_counter() - t0:.2f} s", flush=True)


# ---- the like-for-like table from a run's output --------------------------------------------------
def table(args):
    gf, peers = {}, {}
    with open(args.file, errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[0] == "@gf" and p[1] not in gf:
                gf[p[1]] = (float(p[2]), float(p[3]))
            elif len(p) >= 5 and p[0] == "@peer" and (p[1], p[2], p[3]) not in peers:
                peers[(p[1], p[2], p[3])] = float(p[4])

    def row(name, v, base, note=""):
        cell = f"{v:10.3f}" if v is not None else f"{'n/a':>10}"
        rel = f"   {v / base:6.3f}x gpuflow" if v is not None and base else ""
        print(f"  {name:34s}{cell}{rel}{note}")

    titles = {"launch": ("empty-kernel launch, us", "launch_empty_us"),
              "graph": ("1000-kernel graph replay, us/node", "graph_replay_per_node_us")}
    names = {("torch", "sleep0"): "PyTorch _sleep(0)", ("torch", "add_"): "PyTorch add_ (1 element)",
             ("torch", "cudagraph_sleep0"): "PyTorch CUDAGraph of _sleep(0)",
             ("torch", "cudagraph_add_"): "PyTorch CUDAGraph of add_",
             ("cupy", "rawkernel"): "CuPy RawKernel", ("cupy", "graph"): "CuPy graph"}
    print("like for like: every section of every side in a fresh process of its own")
    for section, (title, key) in titles.items():
        print(title)
        g = gf.get(key)
        if g:
            row("gpuflow", g[0], g[0])
            row("raw driver (same process)", g[1], g[0])
        else:
            print("  (no gpuflow figure: cuda_bench --machine --only " + section + " did not run)")
        for (s, peer, what), v in sorted(peers.items()):
            if s == section:
                row(names.get((peer, what), f"{peer} {what}"), v, g[0] if g else None)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "table":
        ap = argparse.ArgumentParser(prog="peers.py table")
        ap.add_argument("file", help="a file holding @gf and @peer lines (run_h100.sh's bench.txt)")
        table(ap.parse_args(sys.argv[2:]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sections", help="comma list of: launch, graph (in this order, repeats allowed)")
    ap.add_argument("--peer", default="torch,cupy", help="comma list of: torch, cupy (default both, in this process)")
    ap.add_argument("--machine", action="store_true", help='also print "@peer <section> <peer> <what> <value> <unit>" lines')
    measure(ap.parse_args())


if __name__ == "__main__":
    main()
