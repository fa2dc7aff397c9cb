#!/usr/bin/env bash
# The style check of .ci/run: the C++ lines a change touches must be as .clang-format formats
# them. Only changed lines are checked (most files predate the check), with one
# `git clang-format` call, so it stays cheap.
#
# Usage: scripts/check_format.sh [BASE]
#   BASE: the commit to compare the working tree with; default: the merge base with main when
#   HEAD is not main, else HEAD~1 (the last commit). Exit 0 when the changed lines are
#   formatted, 1 with the diff clang-format wants (`git clang-format BASE` applies it).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-}
if [ -z "$base" ]; then
  if git rev-parse -q --verify main >/dev/null &&
     [ "$(git rev-parse HEAD)" != "$(git rev-parse main)" ]; then
    base=$(git merge-base HEAD main)
  elif git rev-parse -q --verify HEAD~1 >/dev/null; then
    base=HEAD~1
  else
    echo "check_format: no earlier commit to compare with; nothing to check"
    exit 0
  fi
fi
out=$(git clang-format-14 --binary clang-format-14 --diff --extensions h,hpp,cpp,cc \
        "$base" -- src include tests bench 2>&1) || true
case "$out" in
  "" | *"no modified files to format"* | *"did not modify any files"*)
    echo "check_format: the lines changed since $(git rev-parse --short "$base") follow .clang-format"
    exit 0 ;;
esac
printf '%s\n' "$out"
echo "check_format: the changed lines above differ from .clang-format;" \
     "\`git clang-format-14 --binary clang-format-14 $base\` formats them" >&2
exit 1
