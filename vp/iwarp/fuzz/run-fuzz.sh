#!/bin/sh
# Run the vp/iwarp fuzz target over a fresh seed corpus.
#   run-fuzz.sh BINARY GEN_CORPUS REGRESS_DIR [libFuzzer options...]
# BINARY is iwarp-fuzz (libFuzzer; then the options apply, e.g.
# -max_total_time=60) or iwarp-fuzz-replay (each input once).
set -eu
BIN=$1; GEN=$2; REG=$3; shift 3
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
python3 "$GEN" "$DIR/seeds"
cp "$REG"/* "$DIR/seeds/" 2>/dev/null || true
case "$(basename "$BIN")" in
  *replay*) exec "$BIN" "$DIR/seeds" ;;
esac
mkdir "$DIR/work"
# Crash inputs are written where the test runs from (meson's build dir):
# copy them to vp/iwarp/fuzz/regress/ with a name saying what they broke.
exec "$BIN" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="${IWARP_FUZZ_ARTIFACTS:-$PWD/}iwarp-fuzz-" "$@" "$DIR/work" "$DIR/seeds"
