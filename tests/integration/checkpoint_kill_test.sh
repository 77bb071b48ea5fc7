#!/usr/bin/env bash
# Kills `twinflow run --save` at random moments of saving a checkpoint of about 200 MiB, 20
# times (a trial whose run ends before its kill lands does not count, and another is drawn, up
# to three times as many trials), and checks after each that the checkpoint in the folder still
# loads, whole, at the step before the save or after it: a save is atomic. Usage:
# checkpoint_kill_test.sh path/to/twinflow [kills]
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow [kills]}"
kills="${2:-20}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# 25 M parameters and their momentum: 202 MB of state.
model=(--model mlp --widths 2048,4096,4096,16 --batch 8 --devices 1
  --optimizer sgd:lr=0.01,momentum=0.9)
ck="$work/ck"
step_of() { od -An -t u8 -j 8 -N 8 "$ck/checkpoint.twck" | tr -d ' '; }
now() { date +%s.%N; }

"$tf" run "${model[@]}" --steps 1 --save "$ck" >/dev/null || { echo "FAIL: first save"; exit 1; }
# How long a resumed step takes without saving and with: kills fall between the two, where
# the save runs.
start=$(now)
"$tf" run "${model[@]}" --steps 1 --load "$ck" >/dev/null || exit 1
middle=$(now)
"$tf" run "${model[@]}" --steps 1 --load "$ck" --save "$ck" >/dev/null || exit 1
end=$(now)
without=$(awk -v a="$start" -v b="$middle" 'BEGIN { print b - a }')
with=$(awk -v a="$middle" -v b="$end" 'BEGIN { print b - a }')
echo "a resumed step takes ${without} s, with the save ${with} s"

lost=0
killed=0
trials=0
# The window [lo, hi) where kills are drawn. A run that ends before its kill shows the machine
# is now faster than when timed above: hi becomes that run's length, so later kills land.
lo=$(awk -v a="$without" 'BEGIN { print 0.8 * a }')
hi="$with"
while [ "$killed" -lt "$kills" ] && [ "$trials" -lt $((3 * kills)) ]; do
  trials=$((trials + 1))
  trial=$trials
  before=$(step_of)
  delay=$(awk -v a="$lo" -v b="$hi" -v seed="$trial" \
    'BEGIN { srand(seed); print a + rand() * (b - a) }')
  began=$(now)
  # In the background, so that the shell's "Killed" notice goes with wait's stderr.
  timeout -s KILL "$delay" "$tf" run "${model[@]}" --steps 1 --load "$ck" --save "$ck" \
    >/dev/null 2>&1 &
  wait $! 2>/dev/null
  status=$?
  if [ "$status" -eq 137 ]; then
    killed=$((killed + 1))
  elif [ "$status" -ne 0 ]; then
    echo "FAIL: trial $trial: the run failed by itself (exit $status)"
    lost=$((lost + 1))
  else
    read -r lo hi < <(awk -v a="$began" -v b="$(now)" -v lo="$lo" \
      'BEGIN { d = b - a; print (lo < 0.9 * d ? lo : 0.7 * d), d }')
  fi
  after=$(step_of)
  if ! "$tf" run "${model[@]}" --steps 1 --load "$ck" >/dev/null 2>"$work/err" ||
    { [ "$after" != "$before" ] && [ "$after" != "$((before + 1))" ]; }; then
    echo "FAIL: trial $trial (killed after ${delay} s): step $before -> $after"
    cat "$work/err"
    lost=$((lost + 1))
  else
    outcome=$([ "$status" -eq 137 ] && echo "killed after ${delay} s" || echo "done before the kill")
    echo "ok   - trial $trial: $outcome, checkpoint at step $after loads"
  fi
done
leftovers=$(ls "$ck" | grep -c tmp)
echo "$trials trials, $killed killed before the end, $lost lost checkpoints, $leftovers temporaries left"
[ "$lost" -eq 0 ] && [ "$leftovers" -eq 0 ] && [ "$killed" -ge "$kills" ]
