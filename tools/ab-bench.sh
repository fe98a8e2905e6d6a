#!/usr/bin/env bash
# ab-bench.sh - time two commands against each other, interleaved (A B A B ...), and print the
# minimum, median and maximum of wall time, CPU time and peak memory of each, and the median of
# the per-pair ratios A/B. Uses GNU time (/usr/bin/time, Debian package "time").
#
#   tools/ab-bench.sh [--pause S] N 'A command' 'B command'
#
# --pause S sleeps S seconds before every run: "cold" runs, as a user's first command after a
# pause (on our VMs memory freed a few seconds ago is handed back to the host, and a process
# that then faults in fresh memory pays for it: docs/benchmarks.md, 2026-12-06 20:30).
#
# One warm-up run of each is not counted. Output of the commands is discarded; a command that
# fails stops the comparison with its exit status. The shared 2-core machines this project is
# measured on are noisy: read medians and ratios, never a single run (docs/benchmarks.md).
set -euo pipefail
pause=0
if [[ ${1:-} == --pause ]]; then
  [[ ${2:-} =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "ab-bench.sh: --pause needs seconds" >&2; exit 2; }
  pause=$2
  shift 2
fi
if (($# != 3)) || ! [[ $1 =~ ^[0-9]+$ ]] || (($1 < 1)); then
  echo "usage: tools/ab-bench.sh [--pause S] N 'A command' 'B command'" >&2
  exit 2
fi
n=$1 a=$2 b=$3
[[ -x /usr/bin/time ]] || { echo "ab-bench.sh: /usr/bin/time is missing (apt install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run LABEL COMMAND: appends "wall cpu peak_kib" to $tmp/LABEL
run() {
  local rc=0
  [[ $pause == 0 ]] || sleep "$pause"
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" bash -c "$2" >/dev/null 2>"$tmp/err" || rc=$?
  if ((rc != 0)); then
    echo "ab-bench.sh: $1 failed (exit $rc): $2" >&2
    tail -5 "$tmp/err" >&2
    exit "$rc"
  fi
  awk '{printf "%s %.3f %s %s\n", $1, $2 + $3, $4, $3}' "$tmp/t" | tail -1 >>"$tmp/$1"
}

run warm "$a"; run warm "$b"
for ((i = 0; i < n; i++)); do run A "$a"; run B "$b"; done

# stats FILE COLUMN: min median max
stats() { cut -d' ' -f"$2" "$1" | sort -g | awk '{v[NR]=$1} END {printf "%10.3f %10.3f %10.3f", v[1], (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[NR]}'; }

echo "A = $a"
echo "B = $b"
echo "$n interleaved runs each (A B A B ...), one warm-up each not counted"
[[ $pause == 0 ]] || echo "a pause of $pause s before every run"
printf '%-16s %10s %10s %10s\n' "" min median max
for s in A B; do
  printf '%-16s %s\n' "$s wall s" "$(stats "$tmp/$s" 1)"
  printf '%-16s %s\n' "$s cpu s" "$(stats "$tmp/$s" 2)"
  printf '%-16s %s\n' "$s sys s" "$(stats "$tmp/$s" 4)"
  printf '%-16s %s\n' "$s peak MiB" "$(cut -d' ' -f3 "$tmp/$s" | awk '{printf "%.1f\n", $1 / 1024}' | sort -g |
    awk '{v[NR]=$1} END {printf "%10.1f %10.1f %10.1f", v[1], (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), v[NR]}')"
done
paste -d' ' "$tmp/A" "$tmp/B" | awk '{print ($5 > 0 ? $1 / $5 : 0), ($6 > 0 ? $2 / $6 : 0)}' >"$tmp/r"
printf '%-16s %s\n' "A/B wall" "$(stats "$tmp/r" 1)"
printf '%-16s %s\n' "A/B cpu" "$(stats "$tmp/r" 2)"
