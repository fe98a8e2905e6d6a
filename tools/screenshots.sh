#!/bin/sh
# screenshots.sh - take the debugger's screenshots headless and write docs/screenshots/*.png.
#
#   tools/screenshots.sh [BUILD_DIR]      (default: build)
#
# Runs the real optimus-debugger under Xvfb on the bundled example (data/examples/
# recsys-towers.txt + its trace; without them, a graph made by gen-recsys and a trace made by
# `optimus optimize`), drives it with the keyboard through xdotool (the same shortcuts a user
# types) and grabs the screen with ImageMagick's `import`. Needs Xvfb, xdotool, imagemagick.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
out=$here/docs/screenshots
mkdir -p "$out"
tmp=$(mktemp -d)
graph=$here/data/examples/recsys-towers.txt
trace=$here/data/examples/recsys-towers.trace.json
if [ ! -f "$graph" ] || [ ! -f "$trace" ]; then
  graph=$tmp/recsys.txt
  trace=$tmp/recsys.trace.json
  "$build/tools/gen-recsys" --nodes 150 --seed 3 -o "$graph" >/dev/null
  "$build/app/optimus" optimize "$graph" -o "$tmp/recsys.opt.txt" --trace "$trace" >/dev/null
fi
# the applied step with the most added nodes, as a 1-based position, and a node it removed
eval "$(/usr/bin/python3 - "$trace" "$here/tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from optimus_fx import read_trace  # any trace version, names spelled out
t = read_trace(sys.argv[1])
steps = t["steps"]
best = max(range(len(steps)), key=lambda i: (steps[i].get("kind") == "applied", len(steps[i].get("added", []))))
rej = [s for s in steps if s.get("kind") == "rejected" and s.get("anchor")]
# why not?: a node whose batch set was too small (a hint a re-run can confirm), else any rejection
small = [s for s in rej if s.get("reason", {}).get("code") == "SET_TOO_SMALL" and int(s["reason"]["args"][0]) >= 2]
print("STEP=%d" % (best + 1))
print("WHY=%s" % ((small or rej)[0]["anchor"] if rej else steps[best].get("anchor", "")))
PY
)"
disp=:$((90 + $$ % 9))
Xvfb "$disp" -screen 0 1320x840x24 -nolisten tcp >/dev/null 2>&1 &
xpid=$!
trap 'kill $apid $xpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
sleep 1
export DISPLAY=$disp GTK_A11Y=none GSK_RENDERER=cairo
apid=
# launch SECONDS LOG ARGS...: the debugger (the previous one closed) with ARGS, given SECONDS to
# open, its window placed at the screen's corner at the screenshots' size
launch() {
  local secs=$1 log=$2
  shift 2
  if [ -n "$apid" ]; then kill "$apid" 2>/dev/null || true; sleep 0.5; fi
  "$build/app/optimus-debugger" "$@" >"$tmp/$log" 2>&1 &
  apid=$!
  sleep "$secs"
  win=$(xdotool search --sync --name "Optimus Debugger" | head -1)
  xdotool windowsize "$win" 1320 840 windowmove "$win" 0 0
  sleep 1
}
launch 4 app.log "$graph" "$trace"
shot() { sleep 1.2; import -window root -crop 1320x840+0+0 "$out/$1.png"; echo "wrote docs/screenshots/$1.png"; }
key() { xdotool key "$@"; sleep 0.25; }
# focus the canvas (click on an empty corner: selects nothing)
xdotool mousemove 700 130 click 1
sleep 0.3
# 1. main view: the input graph, fitted, with a node selected through search
key ctrl+f
xdotool type --delay 40 "linear_5"
sleep 0.6
key Return
key Escape
key f
key i
shot main
# 2. a step with removed (red) and added (green) nodes
key Home
i=0
while [ $i -lt "$STEP" ]; do xdotool key n; sleep 0.05; i=$((i + 1)); done
sleep 0.5
key c
key k
shot step
# 3. why not? for a node a pass rejected
key ctrl+f
key ctrl+a
xdotool type --delay 40 "/^$WHY\$/"
sleep 0.6
key Return
key Escape
key w
sleep 3 # the hints' re-runs
shot why-not
# 4. checks panel of the step
key Home
i=0
while [ $i -lt "$STEP" ]; do xdotool key n; sleep 0.05; i=$((i + 1)); done
key k
key b
key f
key c
shot checks
# 5. what-if: the step refused (d), re-run (Ctrl+Return), side by side with this run
key b
key d
key a
key ctrl+Return
sleep 3
shot whatif
# 6. compare: this run beside one with batch_linear.min_fuse_set_size=3, stepping together
"$build/app/optimus" optimize "$graph" -o "$tmp/b.txt" --trace "$tmp/b.trace.json" \
  --option batch_linear.min_fuse_set_size=3 >/dev/null 2>&1
launch 4 app-compare.log "$graph" "$trace" --compare "$tmp/b.trace.json"
xdotool mousemove 700 300 click 1
sleep 0.3
for i in 1 2 3 4; do key n; done
key m
shot compare
# 7. a large graph whose names carry no module path (100k nodes, gen-recsys --shape flat): the
# overview of clusters it opens in, then the focus view of a step
big=$tmp/flat-100k.txt
"$build/tools/gen-recsys" --nodes 100000 --shape flat --seed 2 -o "$big" >/dev/null
"$build/app/optimus" optimize "$big" -o "$tmp/flat-100k.opt.json" --trace "$tmp/flat-100k.trace.json" \
  --checks structure,shape >/dev/null
launch 12 app-large.log "$big" "$tmp/flat-100k.trace.json"
xdotool mousemove 700 130 click 1
sleep 0.3
key o
key f
shot large-overview
# step to the first applied batch fusion, the focus view follows
first=$(/usr/bin/python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))['steps']
print(next(i + 1 for i, x in enumerate(s) if x.get('kind') == 'applied' and x.get('pass', '').startswith('batch_')))
" "$tmp/flat-100k.trace.json")
xdotool key v
i=0
while [ $i -lt "$first" ]; do xdotool key n; sleep 0.02; i=$((i + 1)); done
sleep 3
key c
key k
shot large-focus
# 8. the Passes panel of the same run (r), scrolled to the pattern passes' refusals: what each
# pattern wanted and what it found instead
key r
xdotool mousemove 1120 500
i=0
while [ $i -lt 10 ]; do xdotool click 5; sleep 0.05; i=$((i + 1)); done
shot passes
