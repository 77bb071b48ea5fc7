# Shared by the tests/cli/*_test.sh scripts: `source` it after setting tf (the twinflow
# binary). Provides check, which runs twinflow and records a pass or a failure, verify, which
# records the outcome of any other command, and finish, which prints the closing
# "N passed, N failed" line and sets the exit status.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# check NAME EXPECTED_STATUS PATTERN STREAM -- ARGS...
# Runs twinflow ARGS, then requires the exact exit status and a fixed-string match of PATTERN
# in STREAM (out or err; an empty PATTERN skips the match). A failing command's stderr must
# carry the 'twinflow COMMAND: error: ' prefix, so users always see which command complained.
check() {
  local name="$1" want="$2" pattern="$3" stream="$4"
  shift 5
  "$tf" "$@" >"$work/out" 2>"$work/err" </dev/null
  local got=$?
  local problem=""
  local command="${1:-}"
  if [ "$got" -ne "$want" ]; then
    problem="exit status $got, want $want"
  elif [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$work/$stream"; then
    problem="std$stream lacks '$pattern'"
  elif [ "$want" -ne 0 ] && [ "$stream" = err ] &&
    [[ "$command" =~ ^(boxing|explain|compile|run|demo|sim|memory|calibrate|tune)$ ]] &&
    ! grep -q "^twinflow $command: error: " "$work/err"; then
    problem="stderr lacks the 'twinflow $command: error: ' prefix"
  fi
  if [ -z "$problem" ]; then
    echo "ok   - $name"
    passed=$((passed + 1))
  else
    echo "FAIL - $name: $problem"
    echo "       command: twinflow $*"
    sed 's/^/       stdout: /' "$work/out" | head -20
    sed 's/^/       stderr: /' "$work/err" | head -20
    failed=$((failed + 1))
  fi
}

# verify NAME COMMAND...: records a pass when COMMAND succeeds (a property of files the
# commands above wrote), a failure otherwise.
verify() {
  local name="$1"
  shift
  if "$@"; then
    echo "ok   - $name"
    passed=$((passed + 1))
  else
    echo "FAIL - $name"
    failed=$((failed + 1))
  fi
}

finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
