#!/bin/sh
# make-example.sh - regenerate the bundled example's trace after a change to the passes.
#   tools/make-example.sh [BUILD_DIR]   (default: build)
# The graph data/examples/recsys-towers.txt comes from `gen-recsys --nodes 160 --seed 4`; its
# trace is what `optimus optimize` records with the default pipeline and every check. The
# cli test fails, pointing here, when the committed trace no longer matches a fresh run.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$here"
"$build/app/optimus" optimize data/examples/recsys-towers.txt -o "$tmp/opt.txt" \
  --trace data/examples/recsys-towers.trace.json
