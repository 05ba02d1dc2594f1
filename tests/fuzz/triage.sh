#!/usr/bin/env bash
# Replays fuzz findings and groups them by cause: for each input, the kind of failure
# (sanitizer report, uncaught exception, timeout, out of memory) and the first frame in
# onyx's own sources, one line each, sorted so that duplicates sit together.
#   tests/fuzz/triage.sh TARGET [FILE ...]   (default: build-fuzz/artifacts/TARGET/*)
set -uo pipefail
cd "$(dirname "$0")/../.."
t=${1:?usage: triage.sh TARGET [FILE ...]}
shift
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(build-fuzz/artifacts/"$t"/*)
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
sym=${symbolizer:+:external_symbolizer_path=$symbolizer}
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0$sym"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1$sym"
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  out=$(timeout 120 build-fuzz/fuzz_"$t" -rss_limit_mb=2048 -timeout=60 "$f" 2>&1)
  rc=$?
  kind=$(printf '%s\n' "$out" | grep -m1 -oE 'runtime error: [^:]*|ERROR: AddressSanitizer: [a-z-]+|ERROR: LeakSanitizer|ERROR: libFuzzer: [a-z-]+|terminate called after throwing an instance of .[^ ]*|out-of-memory \(malloc\([0-9]+\)\)|out-of-memory|timeout after [0-9]+ seconds' | head -1)
  [ -n "$kind" ] || kind="exit $rc"
  [ "$rc" -eq 0 ] && kind="passes"
  frame=$(printf '%s\n' "$out" | grep -E '^ +#[0-9]+ ' | grep -vE '/tests/fuzz/|libFuzzer|fuzzer::|/usr/(include|lib)|compiler-rt|sanitizer' |
          grep -m1 -oE '(src|tools)/[A-Za-z0-9_/.]+:[0-9]+' || true)
  printf '%s | %s | %s\n' "$kind" "${frame:-?}" "$f"
done | sort
