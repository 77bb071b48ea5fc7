#!/usr/bin/env bash
# Feeds under mpirun: each rank feeding only its rows of the batch (--feed local, the default,
# as with DistributedSampler) and each rank feeding the whole batch (--feed global) give the
# losses of the in-process run on the whole batch, bit-identically on 2 ranks; torchrun's
# environment that disagrees with MPI, and a bad --feed, are refused (exit 2).
# Usage: mpi_feed_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset RANK WORLD_SIZE LOCAL_RANK
mpirun=(timeout 60 mpirun --oversubscribe --bind-to none -np 2)

ok() { echo "ok   - $1"; passed=$((passed + 1)); }
bad() {
  echo "FAIL - $1"
  shift
  for f in "$@"; do sed 's/^/       /' "$f" | head -30; done
  failed=$((failed + 1))
}

mlp=(--model mlp --widths 12,24,16,5 --batch 8 --steps 3 --devices 2)

# feeds NAME STRATEGY MODES...: the in-process run, then mpirun -np 2 with each --feed mode.
feeds() {
  local name="$1" strategy="$2"
  shift 2
  if ! "$tf" run "${mlp[@]}" --strategy "$strategy" --losses-out "$work/whole" \
      >"$work/out" 2>"$work/err"; then
    bad "$name: the in-process run failed" "$work/err"
    return
  fi
  for mode in "$@"; do
    if ! "${mpirun[@]}" "$tf" run "${mlp[@]}" --strategy "$strategy" --feed "$mode" \
        --losses-out "$work/$mode" >"$work/out" 2>"$work/err"; then
      bad "$name --feed $mode: mpirun failed" "$work/out" "$work/err"
    elif [ -s "$work/$mode" ] && cmp -s "$work/$mode" "$work/whole"; then
      ok "$name --feed $mode on 2 ranks: the in-process losses, bit-identical"
    else
      bad "$name --feed $mode: losses differ from the in-process run" "$work/$mode" "$work/whole"
    fi
  done
}

# Each rank holds half of every batch.
feeds "mlp dp=2" dp=2 local global
# Each rank's rows of each of the 4 micro-batches.
feeds "mlp dp=2,mb=4" dp=2,mb=4 local
# Rank 0 holds all of x, rank 1 all of the labels: each feeds those whole.
feeds "mlp pp=2,mb=2" pp=2,mb=2 local

# refused NAME PATTERN COMMAND...: exit 2 and PATTERN in stderr.
refused() {
  local name="$1" pattern="$2"
  shift 2
  "$@" >"$work/out" 2>"$work/err"
  local status=$?
  if [ "$status" -eq 2 ] && grep -q -- "$pattern" "$work/err"; then
    ok "$name (status 2)"
  else
    bad "$name: status $status" "$work/out" "$work/err"
  fi
}

refused "torchrun's WORLD_SIZE without mpirun is refused" "launch with mpirun" \
  env WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 "$tf" run "${mlp[@]}" --strategy dp=2
refused "a RANK that disagrees with MPI's is refused on every rank" "RANK=1 but MPI has rank 0 of 2" \
  "${mpirun[@]}" -x RANK=1 "$tf" run "${mlp[@]}" --strategy dp=2
refused "a bad --feed is refused" "--feed: the feed mode is local or global" \
  "$tf" run "${mlp[@]}" --strategy dp=2 --feed shard

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
