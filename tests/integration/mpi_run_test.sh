#!/usr/bin/env bash
# Multi-process training under mpirun, as a user launches it, against the in-process run of the
# same job: mpirun -np 2 and -np 4 --oversubscribe for data, tensor and hybrid parallelism and
# a 2-stage pipeline; then the faults: a rank killed mid-run, a rank stalled (the watchdog), and
# ranks given different jobs. Usage: mpi_run_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
work="$(mktemp -d)"
# Whatever happens, no rank outlives the test.
trap 'pkill -9 -f "^$tf run" 2>/dev/null; rm -rf "$work"' EXIT
passed=0
failed=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Quieter and faster start on one machine; errors still reach stderr.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun=(mpirun --oversubscribe --bind-to none)

ok() { echo "ok   - $1"; passed=$((passed + 1)); }
bad() {
  echo "FAIL - $1"
  shift
  for f in "$@"; do sed 's/^/       /' "$f" | head -30; done
  failed=$((failed + 1))
}

# compare NAME FILE_A FILE_B EXACT: every line equal (EXACT=1) or within 1e-5 relative.
compare() {
  local name="$1" a="$2" b="$3" exact="$4"
  if [ ! -s "$a" ] || [ ! -s "$b" ]; then
    bad "$name: a loss file is missing" "$work/err"
    return
  fi
  if [ "$exact" = 1 ]; then
    if cmp -s "$a" "$b"; then ok "$name: losses bit-identical"; else bad "$name: losses differ" "$a" "$b"; fi
    return
  fi
  if paste "$a" "$b" | awk '{d = $1 - $2; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2;
      if (m < 1) m = 1; if (d > 1e-5 * m) bad = 1} END {exit bad}'; then
    ok "$name: losses within 1e-5"
  else
    bad "$name: losses differ beyond 1e-5" "$a" "$b"
  fi
}

mlp=(--model mlp --widths 12,24,16,5 --batch 8 --steps 8)
gpt=(--model gpt --layers 2 --hidden 16 --heads 2 --sequence 8 --vocab 32 --batch 8 --steps 4
     --optimizer adam:lr=0.01)

# run_case NAME NP EXACT ARGS...: the in-process run, then mpirun -np NP, compared.
run_case() {
  local name="$1" np="$2" exact="$3"
  shift 3
  if ! "$tf" run "$@" --losses-out "$work/local" >"$work/out" 2>"$work/err"; then
    bad "$name: the in-process run failed" "$work/err"
    return
  fi
  if ! timeout 120 "${mpirun[@]}" -np "$np" "$tf" run "$@" --losses-out "$work/mpi" \
      >"$work/out" 2>"$work/err"; then
    bad "$name: mpirun -np $np failed" "$work/out" "$work/err"
    return
  fi
  if ! grep -q "of $np MPI ranks" "$work/out"; then
    bad "$name: rank 0 did not report $np ranks" "$work/out"
    return
  fi
  compare "$name (np $np)" "$work/mpi" "$work/local" "$exact"
}

# Two ranks: sums of two values do not depend on the order, so every case is exact.
run_case "mlp dp=2" 2 1 "${mlp[@]}" --devices 2 --strategy dp=2
run_case "mlp dp=2, the devices from the degrees" 2 1 "${mlp[@]}" --strategy dp=2
run_case "mlp tp=2" 2 1 "${mlp[@]}" --devices 2 --strategy tp=2
run_case "mlp dp=2,tp=2 (2 devices per rank)" 2 1 "${mlp[@]}" --devices 4 --strategy dp=2,tp=2
run_case "mlp pp=2 mb=4 1f1b" 2 1 "${mlp[@]}" --devices 2 --strategy pp=2,mb=4,schedule=1f1b
run_case "mlp pp=2 mb=4 gpipe" 2 1 "${mlp[@]}" --devices 2 --strategy pp=2,mb=4,schedule=gpipe
run_case "mlp pp=2 vp=2 mb=4 interleaved" 2 1 --model mlp --widths 12,24,16,16,5 --batch 8 \
  --steps 8 --devices 2 --strategy pp=2,vp=2,mb=4
# The MPI all-to-all path: this Plan's layer2 update reads its gradient through an all-to-all
# between the two ranks (checked here, so a change of layouts cannot drop the case silently).
a2a=(--model mlp --widths 64,256,256,10 --batch 64 --devices 2 --strategy tp=2)
if "$tf" explain "${a2a[@]}" --cost-model cpu-host 2>&1 | grep -q all_to_all; then
  run_case "mlp tp=2 with an all-to-all across ranks" 2 1 "${a2a[@]}" --steps 4
else
  bad "the all-to-all case's Plan has no all_to_all any more: pick another job" /dev/null
fi
run_case "gpt dp=2,tp=2 (2 devices per rank)" 2 0 "${gpt[@]}" --devices 4 --strategy dp=2,tp=2
# Gradient buckets (on by default) reach the MPI transport packed; with two members on each
# rank they are gathered and summed in member order.
run_case "mlp dp=4 (2 devices per rank, buckets gathered)" 2 1 "${mlp[@]}" --devices 4 \
  --strategy dp=4
run_case "gpt dp=2,bucket=0 (every gradient its own all-reduce)" 2 0 "${gpt[@]}" --devices 2 \
  --strategy dp=2,bucket=0
# Gradients of 1 MiB and more (600x700 f32: 1.6 MiB, not a whole number of chunks) are summed in
# place by the chunked chain (engine/comm/chain_all_reduce.h), both ways round on two ranks,
# floating beside the backward pass or (overlap=off) in the device's order.
big=(--model mlp --widths 32,600,700,10 --batch 16 --steps 4)
run_case "mlp dp=2 with 1.6 MiB gradients" 2 1 "${big[@]}" --devices 2 --strategy dp=2
run_case "mlp dp=2,overlap=off with 1.6 MiB gradients" 2 1 "${big[@]}" --devices 2 \
  --strategy dp=2,overlap=off
# Four ranks: MPI_Allreduce may sum in another order.
run_case "mlp dp=4" 4 0 "${mlp[@]}" --devices 4 --strategy dp=4
run_case "mlp tp=4" 4 0 "${mlp[@]}" --devices 4 --strategy tp=4
run_case "mlp dp=2,tp=2" 4 0 "${mlp[@]}" --devices 4 --strategy dp=2,tp=2
run_case "mlp dp=2,pp=2 mb=4" 4 0 "${mlp[@]}" --devices 4 --strategy dp=2,pp=2,mb=4
run_case "gpt dp=2,pp=2 mb=4" 4 0 "${gpt[@]}" --devices 4 --strategy dp=2,pp=2,mb=4
gpt4=(--model gpt --layers 4 --hidden 16 --heads 2 --sequence 8 --vocab 32 --batch 8 --steps 4
      --optimizer adam:lr=0.01)
run_case "gpt dp=2,pp=2,vp=2 mb=4" 4 0 "${gpt4[@]}" --devices 4 --strategy dp=2,pp=2,vp=2,mb=4
run_case "gpt pp=4 mb=8 zb-h1" 4 0 "${gpt4[@]}" --devices 4 --strategy pp=4,mb=8,schedule=zb-h1
run_case "mlp dp=4 with 1.6 MiB gradients (the chain one way)" 4 0 "${big[@]}" --devices 4 \
  --strategy dp=4

# A trace of a 2-rank run holds both ranks' acts.
timeout 60 "${mpirun[@]}" -np 2 "$tf" run "${mlp[@]}" --devices 2 --strategy tp=2 \
  --trace "$work/mpi_trace.json" >"$work/out" 2>"$work/err"
if /usr/bin/python3 -c "import json, sys; t = json.load(open(sys.argv[1]))['traceEvents'];
assert {e['pid'] for e in t if e.get('ph') == 'X'} == {0, 1}" "$work/mpi_trace.json"; then
  ok "mpirun --trace gathers both ranks' acts into one trace"
else
  bad "mpirun --trace" "$work/err"
fi

# tune over ranks: the ranks share the candidates, and rank 0 prints the ranking (and JSON)
# one rank prints.
gpt=(--model gpt --layers 2 --hidden 64 --heads 4 --sequence 16 --vocab 128 --batch 16
  --cluster dgx-h100 --max-micro-batches 2)
"$tf" tune "${gpt[@]}" --json "$work/tune1.json" >"$work/tune1" 2>"$work/err"
timeout 120 "${mpirun[@]}" -np 2 "$tf" tune "${gpt[@]}" --json "$work/tune2.json" \
  >"$work/tune2" 2>"$work/err"
if grep -q "over 2 ranks" "$work/tune2" && cmp -s <(tail -n +2 "$work/tune1") <(tail -n +2 "$work/tune2") &&
  cmp -s "$work/tune1.json" "$work/tune2.json"; then
  ok "mpirun -np 2 tune ranks exactly as one rank does"
else
  bad "mpirun tune's ranking differs from one rank's" "$work/tune1" "$work/tune2" "$work/err"
fi

# Checkpoints: saved by 4 ranks under dp=4, loaded by 4 ranks under tp=2,pp=2; the next steps'
# losses equal the uninterrupted run's. A truncated copy is refused and the original survives.
ck=(--model mlp --widths 12,24,16,5 --batch 8 --devices 4 --optimizer sgd:lr=0.1,momentum=0.9)
"$tf" run "${ck[@]}" --strategy dp=4 --steps 5 --losses-out "$work/whole" >/dev/null 2>"$work/err"
timeout 120 "${mpirun[@]}" -np 4 "$tf" run "${ck[@]}" --strategy dp=4 --steps 3 \
  --save "$work/ck" >"$work/out" 2>"$work/err" || bad "save under mpirun failed" "$work/err"
timeout 120 "${mpirun[@]}" -np 4 "$tf" run "${ck[@]}" --strategy tp=2,pp=2,mb=2 --steps 2 \
  --load "$work/ck" --losses-out "$work/resumed" >"$work/out" 2>"$work/err" ||
  bad "load under mpirun failed" "$work/err"
tail -n 2 "$work/whole" >"$work/whole_tail"
compare "checkpoint dp=4 -> tp=2,pp=2 across 4 ranks" "$work/resumed" "$work/whole_tail" 0
before="$(sha256sum "$work/ck/checkpoint.twck" | cut -d' ' -f1)"
mkdir -p "$work/broken"
head -c 300 "$work/ck/checkpoint.twck" >"$work/broken/checkpoint.twck"
timeout 60 "${mpirun[@]}" -np 2 "$tf" run "${ck[@]}" --strategy dp=4 --steps 1 \
  --load "$work/broken" >"$work/out" 2>"$work/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "broken/checkpoint.twck" "$work/err" &&
   [ "$(sha256sum "$work/ck/checkpoint.twck" | cut -d' ' -f1)" = "$before" ]; then
  ok "a truncated checkpoint is refused on every rank (status 2), the saved one untouched"
else
  bad "truncated checkpoint: status $status" "$work/err"
fi

# rank_pid RANK: the pid of the twinflow process of that MPI rank, or nothing.
rank_pid() {
  local p
  for p in $(pgrep -f -- "^$tf run --model mlp --widths 64,256,256,10"); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$p"
      return
    fi
  done
}

# fault NP RANK SIGNAL [FLAGS...]: starts a long NP-rank data-parallel job, sends SIGNAL to the
# process of rank RANK after 2 s, and sets status (mpirun's) and took (seconds from the signal
# to mpirun's end).
fault() {
  local np="$1" rank="$2" signal="$3"
  shift 3
  timeout 100 "${mpirun[@]}" -np "$np" "$tf" run --model mlp --widths 64,256,256,10 --batch 64 \
    --devices "$np" --strategy "dp=$np" --steps 100000 "$@" >"$work/out" 2>"$work/err" &
  local launcher=$!
  victim=""
  for _ in $(seq 1 100); do
    victim="$(rank_pid "$rank")"
    [ -n "$victim" ] && break
    sleep 0.1
  done
  sleep 2
  local start
  start=$(date +%s)
  [ -n "$victim" ] && kill "-$signal" "$victim"
  timeout 60 tail --pid="$launcher" -f /dev/null
  wait "$launcher"
  status=$?
  took=$(($(date +%s) - start))
  [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
}

# A rank killed mid-run: mpirun ends the others and exits non-zero, naming the rank.
fault 2 1 KILL
if [ -n "$victim" ] && [ "$status" -ne 0 ] && [ "$took" -le 15 ] && grep -q "rank" "$work/err"; then
  ok "a killed rank ends the job in ${took} s (status $status), naming the rank"
else
  bad "killed rank: status $status after ${took} s (victim '$victim')" "$work/err"
fi

fault 4 2 KILL
if [ -n "$victim" ] && [ "$status" -ne 0 ] && [ "$took" -le 15 ] && grep -q "rank 2" "$work/err"; then
  ok "of 4 ranks, a killed one ends the job in ${took} s (status $status), mpirun naming rank 2"
else
  bad "killed rank of 4: status $status after ${took} s (victim '$victim')" "$work/err"
fi

# A rank that stalls (stopped): every other rank's watchdog fails the job within its limit,
# naming the stopped rank (a liveness probe) and the MPI operations in flight.
fault 2 1 STOP --watchdog 2
if [ "$status" -ne 0 ] && [ "$took" -le 15 ] && grep -q "no act completed" "$work/err" &&
   grep -q "MPI: task" "$work/err" &&
   grep -q "rank 0: rank 1 did not answer a liveness probe" "$work/err"; then
  ok "a stalled rank trips the watchdog in ${took} s (status $status), named by the other"
else
  bad "stalled rank: status $status after ${took} s" "$work/err"
fi
fault 4 2 STOP --watchdog 2
# Each survivor's watchdog names rank 2; mpirun ends the job when the first of them exits, so
# a survivor slower to print (2 cores, 4 ranks, tests beside) may be ended before it does.
# None may name another rank.
named=$(grep -c "rank [013]: rank 2 did not answer a liveness probe" "$work/err")
wrong=$(grep -c "rank [0-9]: rank [013] did not answer a liveness probe" "$work/err")
if [ "$status" -ne 0 ] && [ "$took" -le 15 ] && [ "$named" -ge 1 ] && [ "$wrong" -eq 0 ]; then
  ok "of 4 ranks, a stalled one is named by $named of the 3 survivors (no other named), in ${took} s"
else
  bad "stalled rank of 4: status $status after ${took} s, named by $named ranks, $wrong wrong" \
    "$work/err"
fi

# The startup is bounded too: a process that never starts MPI ends the job, named; a rank
# running another command is refused.
start=$(date +%s)
timeout 60 "${mpirun[@]}" -np 1 "$tf" run "${mlp[@]}" --devices 2 --strategy dp=2 \
  --startup-timeout 5 : -np 1 sleep 30 >"$work/out" 2>"$work/err"
status=$?
took=$(($(date +%s) - start))
if [ "$status" -ne 0 ] && [ "$took" -le 15 ] && grep -q "MPI did not start within 5 s" "$work/err"; then
  ok "a process that never starts MPI ends the job in ${took} s, named"
else
  bad "a process without MPI: status $status after ${took} s" "$work/err"
fi
start=$(date +%s)
timeout 60 "${mpirun[@]}" -np 3 "$tf" run "${mlp[@]}" --devices 4 --strategy dp=4 \
  --startup-timeout 5 : -np 1 sleep 30 >"$work/out" 2>"$work/err"
status=$?
took=$(($(date +%s) - start))
named=$(grep -c "rank [012]: MPI did not start within 5 s" "$work/err")
if [ "$status" -ne 0 ] && [ "$took" -le 15 ] && [ "$named" -ge 1 ]; then
  ok "of 4 processes, one never starting MPI ends the job in ${took} s ($named ranks report)"
else
  bad "4 processes, one without MPI: status $status after ${took} s" "$work/err"
fi
timeout 60 "${mpirun[@]}" -np 1 "$tf" run "${mlp[@]}" --devices 2 --strategy dp=2 : \
  -np 1 "$tf" tune --model mlp --widths 12,24,16,5 --batch 8 --devices 2 --cluster dgx-a100 >"$work/out" 2>"$work/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "rank 1 runs \`twinflow tune\` and rank 0 \`twinflow run\`" "$work/err"; then
  ok "ranks running different commands are refused (status 2)"
else
  bad "different commands: status $status" "$work/err"
fi

# Different jobs on the ranks: every rank refuses, naming the difference.
timeout 60 "${mpirun[@]}" -np 1 "$tf" run "${mlp[@]}" --devices 2 --strategy dp=2 : \
  -np 1 "$tf" run "${mlp[@]}" --devices 2 --strategy tp=2 >"$work/out" 2>"$work/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "rank 0 of 2: the ranks would run different jobs" "$work/err" &&
   grep -q "rank 1 of 2: the ranks would run different jobs" "$work/err"; then
  ok "ranks with different jobs all refuse (status 2)"
else
  bad "different jobs: status $status" "$work/err"
fi

# Bad flags on every rank: a clean error, no hang.
timeout 60 "${mpirun[@]}" -np 2 "$tf" run "${mlp[@]}" --devices 3 --strategy dp=3 \
  >"$work/out" 2>"$work/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "devices-per-rank" "$work/err"; then
  ok "devices that do not split over the ranks are refused (status 2)"
else
  bad "uneven devices: status $status" "$work/err"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
