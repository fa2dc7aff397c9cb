#!/bin/sh
# sdk.cli_uses_library: the installed torchless CLI runs the installed libtorchless.so's code, not
# a copy of it (Note [Launcher] in src/tools/launcher/launcher.cpp). The `torchless` executable
# is a launcher that links only libc; the commands are libtorchless_cli.so, which must
#   1. need libtorchless.so and resolve it to the installed one (RUNPATH $ORIGIN),
#   2. import the library's code (undefined torchless:: symbols) and define none of the
#      library's own symbols (no strong symbol exported by both),
# and a command run through the installed launcher must
#   3. have the dynamic loader initialize the installed libtorchless_cli.so and libtorchless.so,
#      and no other object named libtorchless*.
# Usage: cli_uses_library.sh INSTALL_PREFIX
set -eu
prefix=$1
bin=$prefix/bin/torchless
cli=$(readlink -f "$prefix/lib/libtorchless_cli.so")
lib=$(readlink -f "$prefix/lib/libtorchless.so")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "sdk.cli_uses_library: $*" >&2
  exit 1
}

! ldd "$bin" | grep -q libtorchless || fail "the launcher links a torchless library itself"
got=$(ldd "$cli" | awk '/libtorchless\.so/ {print $3}')
[ "$(readlink -f "$got")" = "$lib" ] || fail "libtorchless_cli.so resolves libtorchless.so to '$got', not $lib"

nm -D --undefined-only "$cli" | grep -q ' _ZN9torchless' || fail "libtorchless_cli.so imports no torchless:: symbol"
strong() { nm -D --defined-only "$1" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort; }
strong "$cli" > "$tmp/cli.syms"
strong "$lib" > "$tmp/lib.syms"
both=$(comm -12 "$tmp/cli.syms" "$tmp/lib.syms" | head -3)
[ -z "$both" ] || fail "libtorchless_cli.so defines the library's own symbols: $both"

"$bin" --version | grep -q '^torchless ' || fail "--version"

# 3: the objects the dynamic loader initialized while a command ran.
LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" "$bin" env > /dev/null
sed -n 's/.*calling init: //p' "$tmp"/ld.* | grep libtorchless > "$tmp/inits" || true
cat "$tmp/inits"
seen_cli=no
seen_lib=no
while read -r f; do
  case "$(readlink -f "$f")" in
    "$cli") seen_cli=yes ;;
    "$lib") seen_lib=yes ;;
    *) fail "a command loaded $f" ;;
  esac
done < "$tmp/inits"
[ $seen_cli = yes ] || fail "a command did not open $cli"
[ $seen_lib = yes ] || fail "a command did not load $lib"
