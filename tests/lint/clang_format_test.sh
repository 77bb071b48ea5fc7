#!/usr/bin/env bash
# Every C++ and CUDA source the repository tracks is formatted as .clang-format says: the
# check `make test` runs (ctest lint.clang_format). To fix a failure, run
#   git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i
# and commit the result.
# Usage: clang_format_test.sh path/to/repository [clang-format binary]
set -uo pipefail
root="${1:?usage: $0 path/to/repository [clang-format]}"
format="${2:-clang-format}"
cd "$root" || exit 2
if ! command -v "$format" >/dev/null; then
  echo "clang-format not found ('$format'): scripts/install-deps installs it" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
if [ "${#files[@]}" -eq 0 ]; then
  echo "no C++ sources tracked under $root" >&2
  exit 1
fi
# One clang-format process for every file (a process per file takes minutes on a busy host);
# each unformatted file is named in its "file:line:col: error" lines.
"$format" --dry-run --Werror "${files[@]}" 2>"${TMPDIR:-/tmp}/clang-format.$$" >/dev/null
status=$?
mapfile -t bad < <(grep -o '^[^:]*:[0-9]*:[0-9]*: error' "${TMPDIR:-/tmp}/clang-format.$$" |
                   cut -d: -f1 | sort -u)
if [ "$status" -ne 0 ] && [ "${#bad[@]}" -eq 0 ]; then  # failed without naming a file
  cat "${TMPDIR:-/tmp}/clang-format.$$" >&2
  rm -f "${TMPDIR:-/tmp}/clang-format.$$"
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/clang-format.$$"
echo "clang-format: ${#files[@]} files checked, ${#bad[@]} not formatted"
for f in "${bad[@]}"; do echo "  not formatted: $f"; done
[ "${#bad[@]}" -eq 0 ]
