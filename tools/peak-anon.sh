#!/usr/bin/env bash
# peak-anon.sh - run a command and print the peaks of its anonymous and file-backed resident
# memory (RssAnon, RssFile of /proc/PID/status, sampled every 5 ms). /usr/bin/time's peak RSS
# counts the pages of a mapped input (page cache, shared) with the process's own memory; this
# tells them apart (docs/benchmarks.md, "vit_b_16 with real weights: the input mapped").
#
#   tools/peak-anon.sh build/app/optimus optimize dump.json -o out.txt --checks all
#
# The command's output is discarded; the exit status is the command's. A run shorter than the
# sampling interval may show 0.
set -uo pipefail
if (($# == 0)); then
  echo "usage: tools/peak-anon.sh COMMAND [ARGS...]" >&2
  exit 2
fi
"$@" >/dev/null 2>&1 &
pid=$!
pa=0 pf=0
while kill -0 "$pid" 2>/dev/null; do
  read -r a f < <(awk '/^RssAnon/{a=$2} /^RssFile/{f=$2} END{print a+0, f+0}' "/proc/$pid/status" 2>/dev/null || echo 0 0)
  ((a > pa)) && pa=$a
  ((f > pf)) && pf=$f
  sleep 0.005
done
wait "$pid"
rc=$?
echo "peak RssAnon ${pa} kB, peak RssFile ${pf} kB"
exit $rc
