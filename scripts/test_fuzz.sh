#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang-16, AddressSanitizer and
# UndefinedBehaviorSanitizer (build-fuzz: onyx_core and the fuzzers only), replays every
# regression file of tests/fuzz/regressions/<target>/, then runs each target for a while,
# two at a time. A crash, a sanitizer report, an exception other than onyx::Error, a
# timeout or memory over the limit fails the run; the input is kept under
# build-fuzz/artifacts/<target>/ (minimize it and add it to the regressions).
#   scripts/test_fuzz.sh [--seconds N] [--jobs J] [--corpus DIR] [--every K] [--replay-only]
#                        [TARGET ...]
#     --seconds N    time per target (default: $FUZZ_SECONDS, else 30); 0: replay only
#     --jobs J       targets fuzzed at once (default 2)
#     --corpus DIR   corpus folders DIR/<target> (default build-fuzz/corpus; made by
#                    tests/fuzz/make_corpus.py the first time); DIR/history.tsv records
#                    each run (executions, coverage, corpus size)
#     --every K      seed with every K-th model / .pb file of the ONNX suites only
#     --keep-going   start a target again after a finding until its time is spent (long
#                    campaigns); each finding is kept in build-fuzz/artifacts/<target>/
#     TARGET         load run tensor_proto npy npz png (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(load run tensor_proto npy npz png)
seconds=${FUZZ_SECONDS:-30}
jobs=2
corpus=build-fuzz/corpus
every=1
keep_going=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --replay-only) seconds=0; shift ;;
    --keep-going) keep_going=1; shift ;;
    -*) echo "test_fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "test_fuzz.sh: unknown target $t (${all_targets[*]})" >&2; exit 2; }
done

build=build-fuzz
if ! command -v clang++-16 >/dev/null; then
  echo "test_fuzz.sh: clang++-16 is missing (scripts/setup.sh installs clang-16, libfuzzer-16-dev and libclang-rt-16-dev)" >&2
  exit 1
fi
if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # -O2 with line tables, assertions kept (no -DNDEBUG). Highway's static target only (as
  # the TSan build): one SIMD variant of each kernel to compile and to fuzz, not five.
  CC=clang-16 CXX=clang++-16 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only" -DCMAKE_CXX_FLAGS=-DHWY_COMPILE_ONLY_STATIC=1 \
    -DONYX_FUZZ=ON -DONYX_BUILD_TOOLS=OFF \
    "${launcher[@]}" >/dev/null
fi
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_$t"); done
ninja -C "$build" -j"$(nproc)" "${bins[@]}" > "$build/ninja.log" 2>&1 || { cat "$build/ninja.log"; exit 1; }

# Per-target flags: inputs up to -max_len; -timeout for one input; a run that passes
# -rss_limit_mb (or a single allocation over it: -malloc_limit_mb) is an OOM finding.
# The protobuf targets run without libFuzzer's entropic scheduling: with their ~10^5
# coverage features it spent 64% of `run`'s time in UpdateFeatureFrequency (40 -> 470
# exec/s without it, and coverage grew faster). Models up to 16 KiB: structure is what the
# mutator works on, and 1 MiB models of weights made each execution 30x slower.
flags() {
  local common=(-rss_limit_mb=2048 -print_final_stats=1)
  case "$1" in
    load) echo "${common[@]}" -entropic=0 -max_len=16384 -timeout=30 ;;
    run) echo "${common[@]}" -entropic=0 -max_len=16384 -timeout=60 ;;
    tensor_proto) echo "${common[@]}" -entropic=0 -max_len=262144 -timeout=30 ;;
    npy) echo "${common[@]}" -max_len=65536 -timeout=30 -dict=tests/fuzz/dict/npy.dict ;;
    npz) echo "${common[@]}" -max_len=65536 -timeout=30 -dict=tests/fuzz/dict/npz.dict ;;
    png) echo "${common[@]}" -max_len=262144 -timeout=30 -dict=tests/fuzz/dict/png.dict ;;
  esac
}
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
sym=${symbolizer:+:external_symbolizer_path=$symbolizer}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0$sym}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1$sym}

failed=0
echo "fuzz: replaying tests/fuzz/regressions"
for t in "${targets[@]}"; do
  files=()
  for f in tests/fuzz/regressions/"$t"/*; do [ -f "$f" ] && files+=("$f"); done
  [ ${#files[@]} -gt 0 ] || continue
  # shellcheck disable=SC2046
  if "$build/fuzz_$t" $(flags "$t") "${files[@]}" > "$build/replay_$t.log" 2>&1; then
    echo "  $t: ${#files[@]} files pass"
  else
    echo "  $t: FAILED (log: $build/replay_$t.log)"
    grep -E "ERROR|SUMMARY|Running:|runtime error|terminate" "$build/replay_$t.log" | tail -8 | sed 's/^/    /'
    failed=1
  fi
done
[ "$seconds" -gt 0 ] || exit "$failed"

python3 tests/fuzz/make_corpus.py "$corpus" --every "$every"
mkdir -p "$build/logs" "$build/artifacts"
history=$corpus/history.tsv
[ -f "$history" ] || printf 'date\ttarget\tseconds\texecutions\tcov\tft\tcorpus_files\tresult\n' > "$history"

# fuzz_one TARGET: runs TARGET for $seconds; with --keep-going it starts again after each
# finding until the time is spent. Each run appends a line to $history.
fuzz_one() {
  local t=$1 log=$build/logs/$1.log status=0 deadline=$((SECONDS + seconds)) round=0
  mkdir -p "$build/artifacts/$t"
  : > "$log"
  while :; do
    local left=$((deadline - SECONDS)) rc=0 run_log=$build/logs/$t.$round.log started=$SECONDS
    [ "$left" -gt 0 ] || break
    # shellcheck disable=SC2046
    nice -n 10 "$build/fuzz_$t" $(flags "$t") -max_total_time="$left" \
      -artifact_prefix="$build/artifacts/$t/" "$corpus/$t" > "$run_log" 2>&1 || rc=$?
    cat "$run_log" >> "$log"
    local execs cov ft files result=ok
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$run_log" | tail -1 | grep -o '[0-9]*$' || true)
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$run_log" | tail -1 | tr -d '#' || true)
    cov=$(grep -oE 'cov: [0-9]+' "$run_log" | tail -1 | grep -oE '[0-9]+' || true)
    ft=$(grep -oE 'ft: [0-9]+' "$run_log" | tail -1 | grep -oE '[0-9]+' || true)
    files=$(find "$corpus/$t" -type f ! -name .seeded | wc -l)
    [ "$rc" -eq 0 ] || result="FAILED (exit $rc)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$((SECONDS - started))" \
      "${execs:-0}" "${cov:-?}" "${ft:-?}" "$files" "$result" >> "$history"
    printf '  %-13s %10s executions  cov %-6s ft %-7s corpus %-6s %s\n' "$t" "${execs:-0}" "${cov:-?}" \
      "${ft:-?}" "$files" "$result"
    if [ "$rc" -ne 0 ]; then
      grep -E "ERROR|SUMMARY|runtime error|FUZZ FINDING|terminate|Test unit written|ALARM|out-of-memory" "$run_log" |
        tail -8 | sed 's/^/    /'
      echo "    log: $log"
      status=1
      [ "$keep_going" = 1 ] || break
    else
      break
    fi
    rm -f "$run_log"
    round=$((round + 1))
  done
  rm -f "$build/logs/$t.$round.log"
  return "$status"
}

echo "fuzz: each target for ${seconds}s, $jobs at a time (corpus $corpus)"
rm -f "$build"/logs/*.failed
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  { fuzz_one "$t" || touch "$build/logs/$t.failed"; } &
done
wait
ls "$build"/logs/*.failed >/dev/null 2>&1 && failed=1
exit "$failed"
