#!/bin/sh
# bench/run_h100.sh -- every benchmark on the GPU machine, like for like, in one command.
#
#   sh bench/run_h100.sh            (from the repository root; OUT=dir for the results, default build/)
#
# Writes the whole output to $OUT/bench.txt and the summary to $OUT/summary.txt (two files: the
# GPU tool brings back at most 8), each step's own output also to build/bench/runs/<step>.txt,
# and prints the summary at the end. Bounded: no step starts after BENCH_BUDGET_S seconds
# (default 360) and each step's timeout is cut to what is left of that budget.
#
# What it runs, in order:
#   1. builds cuda_bench, threads_bench, race_bench, core_bench (CUDA), opencl_bench and kernel_bench with gcc -O2
#   2. the GPU and host as they are (nvidia-smi)
#   3. like for like: each cuda_bench section in a fresh process of its own
#      (cuda_bench --machine --only S), and each peer section likewise
#      (peers.py S --peer P --machine): PyTorch and CuPy measured in the same conditions as
#      gpuflow and the raw driver (which share one process, alternating batch by batch)
#   4. the launch-storm effect, with the GPU's clocks sampled every 10 ms (--clock-trace):
#      graph alone; launch then graph; graph, launch, graph, graph in one process; launch then
#      graph with new streams; launch, a 3 s pause, graph; graph in a fresh process right after
#      a launch-only process; PyTorch's launch then graph in one process
#   5. threads_bench (1, 2, 4, 8, 16 threads), race_bench cuda and stub, core_bench on CUDA,
#      opencl_bench on NVIDIA's OpenCL; kernel_bench (kernels written once vs by hand: nvcc -O3,
#      hand-written OpenCL C on NVIDIA's OpenCL; module load cold and warm)
#   6. a second fresh-process round of launch, probe and graph (run-to-run spread)
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
OUT=${OUT:-$ROOT/build}
RUNS=$ROOT/build/bench/runs
rm -rf "$RUNS"
mkdir -p "$OUT" "$RUNS" build/icd || exit 1
LOG=$OUT/bench.txt
: > "$LOG"
START=$(date +%s)
BUDGET=${BENCH_BUDGET_S:-360}
Q=""; [ -n "${BENCH_QUICK:-}" ] && Q=--quick   # a smoke test (bench/smoke/README.md), not figures
CC=${CC:-gcc}
CUDA_INC=${CUDA_INCLUDE:-/usr/local/cuda/include}
export PYTHONUNBUFFERED=1
B=build/bench

say() { printf '%s\n' "$*" | tee -a "$LOG"; }
elapsed() { echo $(( $(date +%s) - START )); }

# step NAME TIMEOUT_S COMMAND...: runs it, its output into bench.txt and runs/NAME.txt
step() {
    name=$1; limit=$2; shift 2
    left=$(( BUDGET - $(elapsed) ))
    if [ "$left" -lt 15 ]; then say "== $name: SKIPPED (budget of ${BUDGET}s spent)"; return 1; fi
    [ "$limit" -gt "$left" ] && limit=$left
    printf '\n### %s  [t=%ss, limit %ss]  $ %s\n' "$name" "$(elapsed)" "$limit" "$*" >> "$LOG"
    t0=$(date +%s.%N)
    timeout -k 5 "$limit" "$@" > "$RUNS/$name.txt" 2>&1
    rc=$?
    cat "$RUNS/$name.txt" >> "$LOG"
    t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    case $rc in
        0) printf '== %-28s ok      %6.1f s\n' "$name" "$t" >> "$LOG" ;;   # failures only on stdout
        124|137) printf '== %-28s TIMEOUT %6.1f s (limit %s s)\n' "$name" "$t" "$limit" | tee -a "$LOG" ;;
        *) printf '== %-28s rc %-4s %6.1f s: %s\n' "$name" "$rc" "$t" "$(tail -n 1 "$RUNS/$name.txt")" | tee -a "$LOG" ;;
    esac
    return $rc
}

# ---- 1. build -----------------------------------------------------------------------------------
rev="commit unknown (no .git here)"
if git rev-parse --short HEAD > /dev/null 2>&1; then
    rev="commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' + local changes')"
fi
say "run_h100.sh: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $rev, budget ${BUDGET}s, output $LOG"
CFLAGS="-std=c99 -O2 -Wall -Wextra -I. -isystem $CUDA_INC"
build() {   # build NAME EXTRA-FLAGS
    $CC $CFLAGS $2 "bench/$1.c" -o "$B/$1" -pthread -ldl -lm > "$RUNS/build_$1.txt" 2>&1 \
        || echo "build of $1 failed" >> "$RUNS/build_$1.txt"
}
build cuda_bench "" & build threads_bench "" & build race_bench "" & build core_bench "-DGPUFLOW_CUDA" &
build opencl_bench "" & build kernel_bench "" &
wait
for f in cuda_bench threads_bench race_bench core_bench opencl_bench kernel_bench; do
    if [ -x "$B/$f" ] && ! grep -q "build of" "$RUNS/build_$f.txt"; then
        w=$(grep -c "warning:" "$RUNS/build_$f.txt"); say "built $f ($w warnings)"
    else
        say "BUILD FAILED: $f: $(grep -m1 'error' "$RUNS/build_$f.txt")"; rm -f "$B/$f"
    fi
    cat "$RUNS/build_$f.txt" >> "$LOG"
done

# ---- 2. the machine -------------------------------------------------------------------------------
{
    echo; echo "### machine"
    nvidia-smi 2>&1 | head -n 20
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER 2>&1 | grep -v '^ *$' | head -n 80
    echo "host: $(nproc) CPUs; $(uname -r); $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null)"
    $CC --version | head -n 1
    python3 --version 2>&1
} >> "$LOG" 2>&1

# ---- 3. like for like: every section of every side in a fresh process ---------------------------
have() { [ -x "$B/$1" ]; }
SECTIONS="launch probe graph event pool copy pipeline"
if have cuda_bench; then
    for s in $SECTIONS; do
        lim=60; [ "$s" = pipeline ] && lim=120
        step "cuda_$s" $lim "$B/cuda_bench" $Q --machine --only "$s"
        if [ "$s" = launch ] || [ "$s" = graph ]; then
            step "torch_$s" 120 python3 bench/peers.py "$s" --peer torch --machine
            step "cupy_$s" 120 python3 bench/peers.py "$s" --peer cupy --machine
        fi
    done
fi

# ---- 4. the launch-storm effect ---------------------------------------------------------------------
if have cuda_bench; then
    step effect_graph_alone 60 "$B/cuda_bench" $Q --clock-trace --only graph
    step effect_launch_graph 60 "$B/cuda_bench" $Q --clock-trace --only launch,graph
    step effect_graph_launch_graph_graph 90 "$B/cuda_bench" $Q --clock-trace --only graph,launch,graph,graph
    step effect_new_streams 60 "$B/cuda_bench" $Q --clock-trace --new-streams --only launch,graph
    step effect_pause_3s 60 "$B/cuda_bench" $Q --clock-trace --pause-ms 3000 --only launch,graph
    step effect_probe_graph 60 "$B/cuda_bench" $Q --clock-trace --only probe,graph
    step effect_launch_process 60 "$B/cuda_bench" $Q --clock-trace --only launch
    step effect_graph_next_process 60 "$B/cuda_bench" $Q --clock-trace --only graph
    step effect_torch_launch_graph 120 python3 bench/peers.py launch,graph --peer torch
fi

# ---- 5. threads, the race detector, the core, OpenCL ---------------------------------------------
have threads_bench && step threads 180 "$B/threads_bench" cuda $Q --machine
have race_bench && step race_cuda 120 "$B/race_bench" cuda
have race_bench && step race_stub 90 "$B/race_bench" stub
have core_bench && step core_cuda 60 env GPUFLOW_BACKEND=cuda "$B/core_bench"
if have opencl_bench; then
    icd=${BENCH_OPENCL_LIB:-}   # another ICD's library (a smoke test: libpocl.so.2)
    [ -n "$icd" ] || for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
        [ -e "$d/libnvidia-opencl.so.1" ] && { icd=$d/libnvidia-opencl.so.1; break; }
    done
    if [ -n "$icd" ]; then
        echo "$icd" > build/icd/nvidia.icd
        ocl_lib=""   # the ICD loader: the system's, else the one the CUDA toolkit ships
        ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1' || ocl_lib=$(dirname "$CUDA_INC")/lib64
        step opencl_nvidia 90 env OCL_ICD_VENDORS="$ROOT/build/icd" LD_LIBRARY_PATH="${ocl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$B/opencl_bench"
        have kernel_bench && step kernels 120 env OCL_ICD_VENDORS="$ROOT/build/icd" LD_LIBRARY_PATH="${ocl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$B/kernel_bench"
    else
        say "== opencl_nvidia: SKIPPED (no libnvidia-opencl.so.1 found)"
    fi
fi

# ---- 6. a second round: the spread between fresh processes --------------------------------------
if have cuda_bench; then
    for s in launch probe graph; do step "again_cuda_$s" 60 "$B/cuda_bench" $Q --only "$s"; done
fi

# ---- summary ---------------------------------------------------------------------------------------
R=$RUNS
pick() {   # pick FILE PATTERN: matching lines of one step's output, if it ran (runs of spaces squeezed)
    [ -f "$R/$1.txt" ] && grep -E "$2" "$R/$1.txt" | sed -E 's/ {3,}/  /g'
}
{
    echo
    echo "================================ SUMMARY (all of it: $LOG) ================================"
    echo "-- like for like, each section in a fresh process (ratio: gpuflow / raw; probe: throughput)"
    for s in $SECTIONS; do pick "cuda_$s" 'ratio|^  (gpuflow|raw)|stream priority|raw copies|^  H2D|alone, nothing|filling'; done
    echo "-- peers (same conditions)"
    python3 bench/peers.py table "$LOG" 2>&1 | sed 1d
    echo "-- the launch-storm effect: graph replay per node, and the SM clock during each graph section"
    for e in effect_graph_alone effect_launch_graph effect_graph_launch_graph_graph effect_new_streams \
             effect_pause_3s effect_probe_graph effect_graph_next_process; do
        [ -f "$R/$e.txt" ] || continue
        echo "$e:"
        grep -E 'graph_replay_per_node_us|^trace .*:(graph|launch|probe):during|^clocks .*:graph:before' "$R/$e.txt" \
            | sed -E 's/ +\((target|throughput).*//; s/ +\(every 10 ms\)//; s/  +/ /g; s/^/  /' | cut -c1-150
    done
    [ -f "$R/effect_torch_launch_graph.txt" ] && { echo "effect_torch_launch_graph:"; grep -E '^torch ' "$R/effect_torch_launch_graph.txt" | sed 's/^/  /'; }
    echo "-- threads"
    [ -f "$R/threads.txt" ] && sed -n '/^launch:/,$p' "$R/threads.txt" | grep -v '^@'
    echo "-- race detector"
    pick race_cuda 'ratio|races reported'
    pick race_stub 'ratio|races reported'
    echo "-- core_bench on CUDA"
    pick core_cuda 'ratio|graph:'
    echo "-- opencl_bench on NVIDIA"
    pick opencl_nvidia 'ratio|us per launch|GB/s|on '
    echo "-- kernels written once vs by hand (kernel_bench)"
    [ -f "$R/kernels.txt" ] && grep -vE '^ *$' "$R/kernels.txt" | sed -E 's/ {3,}/  /g'
    echo "-- second round (fresh processes)"
    for s in launch probe graph; do pick "again_cuda_$s" '(launch_empty_us|launch_2args_us|probe_empty32_Mlps|probe_vs_raw|graph_replay_per_node_us) '; done
    echo "-- steps"
    grep -E '^== ' "$LOG" | grep -vE ' ok ' || echo "every step ok"
    echo "total $(elapsed) s"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt" >> "$LOG"
cat "$OUT/summary.txt"
