#!/usr/bin/env bash
# The style check of .ci/run: the C++ files a change touches must be as .clang-format formats
# them. Only those files are checked, so it stays cheap.
#
# Usage: scripts/check_format.sh [BASE]
#   BASE: the commit to compare the working tree with; default: the merge base with main when
#   HEAD is not main, else HEAD~1 (the last commit). Exit 0 when the changed files are
#   formatted, 1 with clang-format's complaints (`clang-format-14 -i FILE` fixes them).
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
# Every C++ file the change touches is checked whole: the tree was formatted in one commit
# (issue 16 part 7), so a touched file is either formatted or the change unformatted it.
mapfile -t files < <(git diff --name-only --diff-filter=d "$base" -- \
  'src/*.h' 'src/*.cpp' 'include/*.h' 'tests/*.h' 'tests/*.cpp' 'tests/*.cc' 'bench/*.cpp')
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no C++ file changed since $(git rev-parse --short "$base")"
  exit 0
fi
if out=$(clang-format-14 --dry-run -Werror "${files[@]}" 2>&1); then
  echo "check_format: the ${#files[@]} C++ files changed since $(git rev-parse --short "$base") follow .clang-format"
  exit 0
fi
printf '%s\n' "$out" | head -40
echo "check_format: the files above differ from .clang-format;" \
     "\`clang-format-14 -i FILE\` formats them" >&2
exit 1
