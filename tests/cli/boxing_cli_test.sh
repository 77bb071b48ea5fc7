#!/usr/bin/env bash
# Drives the `twinflow` binary as a user would: exit codes and messages of `boxing`, `demo`
# and the top level. Usage: boxing_cli_test.sh path/to/twinflow
set -uo pipefail

tf="${1:?usage: $0 path/to/twinflow}"
source "$(dirname "$0")/cli_lib.sh"

from="cpu:0-3 [2,2] (S(0),B)"
to="cpu:4-5 [2] P"

# Success paths.
check "example plan exits 0 with a total" 0 "total:" out -- \
  boxing --from "$from" --to "$to" --shape 7,5
check "example plan lists its steps" 0 "send_recv" out -- \
  boxing --from "$from" --to "$to" --shape 7,5
check "--flag=value form" 0 "total:" out -- \
  boxing --from="$from" --to="$to" --shape=7,5 --dtype=f32 --devices-per-node=2
check "bf16 and a 3-D shape" 0 "total:" out -- \
  boxing --from "cpu:0-7 [2,4] (S(0),S(2))" --to "cpu:0-7 [2,4] (B,B)" --shape 4,3,9 \
  --dtype bf16
check "identical layouts give an empty plan" 0 "identity" out -- \
  boxing --from "$from" --to "$from" --shape 7,5
check "boxing --help exits 0" 0 "usage: twinflow boxing" out -- boxing --help
check "boxing -h wins over other mistakes" 0 "--devices-per-node" out -- boxing --nope -h
check "twinflow --help exits 0" 0 "commands:" out -- --help
check "demo exits 0" 0 "total:" out -- demo

# Usage mistakes.
check "no command prints usage, exits 2" 2 "usage: twinflow" err --
check "unknown command" 2 "unknown command 'frobnicate'" err -- frobnicate
check "unknown flag" 2 "--frobnicate" err -- \
  boxing --from "$from" --to "$to" --shape 7,5 --frobnicate 1
check "missing required flag" 2 "--shape" err -- boxing --from "$from" --to "$to"
check "missing value at the end" 2 "--shape" err -- boxing --from "$from" --to "$to" --shape
check "missing value before a flag" 2 "--from" err -- boxing --from --to "$to" --shape 7,5
check "flag given twice" 2 "--shape" err -- \
  boxing --from "$from" --to "$to" --shape 7,5 --shape 3
check "stray argument" 2 "extra" err -- boxing --from "$from" --to "$to" --shape 7,5 extra
check "devices-per-node must be positive" 2 "--devices-per-node" err -- \
  boxing --from "$from" --to "$to" --shape 7,5 --devices-per-node 0
check "devices-per-node must be an integer" 2 "4x" err -- \
  boxing --from "$from" --to "$to" --shape 7,5 --devices-per-node 4x

# Malformed values: each message names the text that was wrong.
check "malformed shape" 2 "7,x" err -- boxing --from "$from" --to "$to" --shape 7,x
check "negative shape" 2 "7,-5" err -- boxing --from "$from" --to "$to" --shape 7,-5
check "huge shape" 2 "more than 2^60 elements" err -- \
  boxing --from "$from" --to "$to" --shape 9000000000,9000000000,9000000000
check "malformed dtype" 2 "f33" err -- boxing --from "$from" --to "$to" --shape 7,5 --dtype f33
check "malformed sbp" 2 "S(x)" err -- \
  boxing --from "cpu:0-3 [2,2] (S(x),B)" --to "$to" --shape 7,5
check "malformed device type" 2 "gpu:0-3" err -- \
  boxing --from "gpu:0-3 [2,2] (S(0),B)" --to "$to" --shape 7,5
check "layout without sbp" 2 "--to" err -- boxing --from "$from" --to "cpu:4-5" --shape 7,5
check "empty layout" 2 "--from" err -- boxing --from "" --to "$to" --shape 7,5

# Layouts that parse but do not fit the shape or the placement.
check "split axis beyond the tensor rank" 2 "S(7)" err -- \
  boxing --from "cpu:0-3 [2,2] (S(7),B)" --to "$to" --shape 7,5
check "2-D sbp on a 1-D hierarchy" 2 "hierarchy" err -- \
  boxing --from "cpu:0-3 (S(0),B)" --to "$to" --shape 7,5
check "hierarchy product differs from the device count" 2 "[3,2]" err -- \
  boxing --from "cpu:0-3 [3,2] (S(0),B)" --to "$to" --shape 7,5
check "bad destination names --to" 2 "--to" err -- \
  boxing --from "$from" --to "cpu:4-5 [2] S(2)" --shape 7,5

finish
