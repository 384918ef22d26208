#!/bin/sh
# Run the vp/emul fuzz target over a fresh seed corpus, recorded from a
# real connection between two processes.
#   run-fuzz.sh BINARY RECORDER REGRESS_DIR [libFuzzer options...]
# BINARY is emul-fuzz (libFuzzer; then the options apply, e.g.
# -max_total_time=60) or emul-fuzz-replay (each input once); RECORDER is
# emul-fuzz-record.
set -eu
BIN=$1; REC=$2; REG=$3; shift 3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$REC" "$DIR/seeds"
cp "$REG"/* "$DIR/seeds/" 2>/dev/null || true
case "$(basename "$BIN")" in
  *replay*) "$BIN" "$DIR/seeds"; exit $? ;;
esac
mkdir "$DIR/work"
# Crash inputs are written where the test runs from (meson's build dir):
# copy them to tests/emul/fuzz/regress/ with a name saying what they broke.
# The timeout is long: a first frame of no bytes that announces a message
# of up to 1 GiB makes the target allocate it whole at once (x_in_start),
# which under ASan poisons 1/8 of it in shadow memory, seconds on a loaded
# host (12 s was seen at a load average of 17 on 2 cores).
"$BIN" -max_len=400000 -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="${EMUL_FUZZ_ARTIFACTS:-$PWD/}emul-fuzz-" "$@" "$DIR/work" "$DIR/seeds"
