#!/usr/bin/env bash
# Multi-process benchmarks, side by side with their peers, on this machine:
#   1. the MLP 784-4096-4096-10 (global batch 512, fp32, SGD): twinflow under dp=2 and tp=2 on
#      2 ranks of 1 device, dp=2,tp=2 on 2 ranks of 2 devices, and dp=2 and tp=2 on 2 devices
#      in one process, against PyTorch DDP over gloo (Debian's python3-torch) and the host's
#      sgemm roofline for 2 concurrent threads, measured in the same run;
#   2. all-reduce bus bandwidth, twinflow's collective path against raw MPI_Allreduce, 8 and
#      64 MiB, on 2 and 4 ranks;
#   3. the 64 MiB gradient all-reduce inside the dp=2 step (from its trace) against 2.
# Usage: bench/mpi_bench.sh [BUILD_DIR] [STEPS]. Installs python3-torch if it is missing.
set -euo pipefail

build="${1:-build}"
steps="${2:-30}"
here="$(cd "$(dirname "$0")" && pwd)"
tf="$build/bin/twinflow"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none)

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch
fi

# 6 x batch x (784*4096 + 4096*4096 + 4096*10): forward and backward matmuls of one step.
flops=$(awk 'BEGIN { printf "%.0f", 6 * 512 * (784 * 4096 + 4096 * 4096 + 4096 * 10) }')

roofline=$("$build/bin/bench_mlp_step" --benchmark_filter='BM_SgemmConcurrent/M:512/K:4096/N:4096/threads:2/' \
  --benchmark_format=json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
runs = json.load(sys.stdin)["benchmarks"]
print(max(r["GFLOPs"] for r in runs))')

twinflow_rate() {  # samples/s of `twinflow run` with strategy $1 on $2 devices; $3: mpirun ranks (0: one process)
  local out launch=()
  [ "$3" -gt 0 ] && launch=("${mpirun[@]}" -np "$3")
  out=$("${launch[@]}" "$tf" run --model mlp --widths 784,4096,4096,10 --batch 512 \
    --devices "$2" --strategy "$1" --steps "$steps" --optimizer sgd:lr=0.01 "${@:4}")
  echo "$out" | awk '/^step time/ { v = $3; u = $4; s = (u == "ms") ? v / 1e3 : (u == "s") ? v : v / 1e6;
    printf "%.2f", 512 / s }'
}

trace="$(mktemp -d)/dp2.json"
dp=$(twinflow_rate dp=2 2 2 --trace "$trace")
tp=$(twinflow_rate tp=2 2 2)
hybrid=$(twinflow_rate dp=2,tp=2 4 2)
dp_alone=$(twinflow_rate dp=2 2 0)
tp_alone=$(twinflow_rate tp=2 2 0)
ddp=$("${mpirun[@]}" -np 2 /usr/bin/python3 "$here/ddp_mlp.py" "$steps" | awk '/samples_per_s/ { print $2 }')

echo "MLP 784-4096-4096-10, global batch 512, fp32 SGD, $steps steps"
printf "%-40s %12s %14s %14s\n" "run" "samples/s" "vs DDP" "of roofline"
row() {
  awk -v name="$1" -v rate="$2" -v ddp="$ddp" -v flops="$flops" -v roof="$roofline" 'BEGIN {
    printf "%-40s %12.1f %13.2fx %13.0f%%\n", name, rate, rate / ddp, 100 * rate / 512 * flops / 1e9 / roof }'
}
row "twinflow dp=2 (2 ranks x 1 device)" "$dp"
row "twinflow tp=2 (2 ranks x 1 device)" "$tp"
row "twinflow dp=2,tp=2 (2 ranks x 2 devices)" "$hybrid"
row "twinflow dp=2 (1 process, 2 devices)" "$dp_alone"
row "twinflow tp=2 (1 process, 2 devices)" "$tp_alone"
row "pytorch DDP (gloo, 2 ranks)" "$ddp"
echo "roofline: 2 concurrent sgemm threads, $roofline GFLOP/s (512x4096x4096, this run)"
awk -v dp="$dp_alone" -v tp="$tp_alone" 'BEGIN {
  printf "in one process, dp=2 takes %.2fx the step time of tp=2\n", tp / dp }'
echo
for np in 2 4; do
  "${mpirun[@]}" -np "$np" "$build/bin/mpi_bench_allreduce" 20 | tee "$(dirname "$trace")/allreduce$np.txt"
done
# The dp=2 step's largest all-reduce (the 64 MiB gradient), from the traces, against the same
# size alone in the bench above (2 ranks, twinflow's path): overlapped with the rest of the
# backward pass (the default), it shares each rank's one core with the GEMMs; in order
# (overlap=off) it has the core to itself.
echo
alone_trace="$(dirname "$trace")/dp2_in_order.json"
in_order=$(twinflow_rate dp=2,overlap=off 2 2 --trace "$alone_trace")
row "twinflow dp=2,overlap=off (2 ranks)" "$in_order"
for t in "$trace" "$alone_trace"; do
  read -r bytes in_step < <(/usr/bin/python3 "$here/step_allreduce.py" "$t")
  alone=$(awk -v mib="$((bytes >> 20))" '$1 == mib { print $3 }' "$(dirname "$trace")/allreduce2.txt")
  how=$([ "$t" = "$trace" ] && echo "overlapped" || echo "in order (overlap=off)")
  awk -v b="$bytes" -v s="$in_step" -v a="$alone" -v how="$how" 'BEGIN {
    printf "all-reduce of %d MiB inside the dp=2 step, %s: %.2f GB/s, %.2fx the bench'"'"'s %.2f GB/s\n",
      b / 1048576, how, s, (a > 0 ? s / a : 0), a }'
done
