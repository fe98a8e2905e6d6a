#!/bin/sh
# run-fuzz.sh NAME EXE SECONDS WORKDIR SEED... - runs one libFuzzer harness for SECONDS on its
# seeds and prints one TAP result (the test suite "fuzz"; docs/fuzzing.md). A seed '@corpus' is
# the shared real-dump corpus (OPTIMUS_SHARED, else ../shared beside the source root), skipped
# with a note when absent. New inputs go to WORKDIR/corpus-NAME, a crash's input to
# WORKDIR/artifacts/NAME-crash-*, the whole log to WORKDIR/NAME.log.
set -u
name=$1 exe=$2 secs=$3 work=$4
shift 4
mkdir -p "$work/corpus-$name" "$work/artifacts"
seeds=""
notes=""
for s in "$@"; do
  if [ "$s" = "@corpus" ]; then
    shared=${OPTIMUS_SHARED:-${OPTIMUS_SOURCE_ROOT:-.}/../shared}
    s="$shared/corpus/fx-real"
  fi
  if [ -d "$s" ]; then seeds="$seeds $s"; else notes="$notes (seed directory $s absent)"; fi
done
log="$work/$name.log"
# -timeout: one input may take at most 20 s (a hang is a finding); -rss_limit_mb: 2 GiB;
# -max_len: 64 KiB keeps a short run fast (larger seeds are read truncated); FUZZ_MAX_LEN sets
# another (fuzz-verify: 128 KiB, for its recorded fixtures)
# -seed: fixed (FUZZ_SEED, default 1) so that a CI run explores the same inputs on every machine
# and a finding reproduces on the next run; FUZZ_SEED=0 lets libFuzzer pick one (exploration).
# shellcheck disable=SC2086
"$exe" -seed="${FUZZ_SEED:-1}" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-65536}" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/$name-" "$work/corpus-$name" $seeds >"$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
units=$(sed -n 's/.*#[0-9]*.*corp: \([0-9]*\)\/.*/\1/p' "$log" | tail -n 1)
echo "1..1"
if [ "$rc" -eq 0 ]; then
  echo "ok 1 - fuzz-$name: ${execs:-?} executions in $secs s, corpus ${units:-?} inputs$notes"
else
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
  echo "not ok 1 - fuzz-$name: exit $rc after ${execs:-?} executions; input: ${artifact:-none saved}; log: $log"
  grep -E 'ERROR|invariant|runtime error|SUMMARY|#[0-9]+ 0x' "$log" | head -n 30 | sed 's/^/# /'
fi
# libFuzzer exits 77 (-error_exitcode) on a finding: make it a plain failure for meson
[ "$rc" -eq 0 ] || exit 1
