#!/usr/bin/env bash
# Optimus developer entry point. Two commands (see README):
#   bash tools/dev.sh run    install what is missing, build, run the main job on the bundled example
#   bash tools/dev.sh test   install what is missing, build (plain + ASan/UBSan + fuzz), run every
#                            test and a short run of each fuzz harness, print one line
#                            "N passed, N failed, N skipped"
# Works on a fresh Debian 12 machine as root or with sudo.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

# Debian 12 packages the project needs (build, tests, headless UI tests, the PyTorch bridge).
PKGS=(
  build-essential pkg-config meson ninja-build
  libglib2.0-dev libgtk-4-dev libgraphviz-dev graphviz libjson-c-dev zlib1g-dev
  xvfb xauth x11-utils dbus at-spi2-core librsvg2-common libgl1-mesa-dri fonts-dejavu-core
  imagemagick xdotool time
  python3 python3-torch python3-torchvision python3-networkx
  clang libclang-rt-14-dev llvm-14
)
# clang: the sanitizer build (its UBSan also checks pointer arithmetic on NULL, which gcc's does
# not) and the libFuzzer harnesses (docs/fuzzing.md); libclang-rt-14-dev has the sanitizer and
# fuzzer runtimes, llvm-14 the symbolizer that puts file:line into their reports.

install_deps() {
  local missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then return 0; fi
  echo "dev.sh: installing ${missing[*]}" >&2
  local sudo=()
  if [[ $(id -u) != 0 ]]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [MESON OPTIONS...]; CC in the environment picks the compiler of a new DIR (an
# existing DIR made with another compiler is set up again).
build() {
  local dir=$1; shift
  if [[ -n ${CC:-} && -f $dir/meson-logs/meson-log.txt ]] &&
     ! grep -q "^C compiler for the host machine: $CC " "$dir/meson-logs/meson-log.txt"; then
    rm -rf "$dir"
  fi
  if [[ ! -f $dir/build.ninja ]]; then
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir" "${TARGETS[@]}" >/dev/null
}
TARGETS=()

cmd_run() {
  install_deps
  build build
  local example=data/examples/recsys-towers.txt
  ./build/app/optimus info "$example"
  ./build/app/optimus optimize "$example" -o build/recsys-towers-optimized.txt --trace build/recsys-towers-trace.json
  ./build/app/optimus convert build/recsys-towers-optimized.txt -o build/recsys-towers-optimized.svg
  echo "wrote build/recsys-towers-optimized.txt, build/recsys-towers-trace.json, build/recsys-towers-optimized.svg"
  if [[ -x build/app/optimus-debugger && -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
    exec ./build/app/optimus-debugger "$example" build/recsys-towers-trace.json
  elif [[ -x build/app/optimus-debugger ]]; then
    echo "no display: to step through the run, open it with"
    echo "  ./build/app/optimus-debugger $example build/recsys-towers-trace.json"
  fi
}

FUZZ_TARGETS=(tests/fuzz/fuzz-fx-text tests/fuzz/fuzz-fx-readable tests/fuzz/fuzz-json
              tests/fuzz/fuzz-rules tests/fuzz/fuzz-trace tests/fuzz/fuzz-optimize tests/fuzz/fuzz-verify)

cmd_test() {
  install_deps
  build build
  CC=clang build build-asan -Db_sanitize=address,undefined -Dbuildtype=debug
  TARGETS=("${FUZZ_TARGETS[@]}") # only the harnesses: the fuzz build instruments everything
  CC=clang build build-fuzz -Dfuzz=true -Db_sanitize=address,undefined
  TARGETS=(tests/test-trace tests/test-json tests/test-write tests/test-graph) # the tests of the engine's threads
  CC=clang build build-tsan -Db_sanitize=thread -Dbuildtype=debug
  TARGETS=()
  local rc=0
  # Every suite, with a virtual display for the UI tests.
  xvfb-run -a -s "-screen 0 1600x1000x24" meson test -C build --print-errorlogs --num-processes 2 || rc=1
  # The engine suite again under AddressSanitizer + UndefinedBehaviorSanitizer (clang).
  meson test -C build-asan --suite engine --print-errorlogs --num-processes 2 \
    --timeout-multiplier 3 || rc=1
  # The tests of the engine's threads (the live trace writer, streamed writes and files, the base64 check)
  # under ThreadSanitizer: a report fails the test.
  TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 3 trace json write graph || rc=1
  # Each fuzz harness for fuzz_seconds (25 s) on its seeds (docs/fuzzing.md).
  meson test -C build-fuzz --suite fuzz --no-rebuild --print-errorlogs --num-processes 2 || rc=1
  ./build/tests/tap-summary build/meson-logs/testlog.json build-asan/meson-logs/testlog.json \
    build-tsan/meson-logs/testlog.json build-fuzz/meson-logs/testlog.json || rc=1
  return $rc
}

case "${1:-}" in
  run) cmd_run ;;
  test) cmd_test ;;
  *) echo "usage: bash tools/dev.sh run|test" >&2; exit 2 ;;
esac
