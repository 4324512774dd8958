#!/usr/bin/env bash
# Records the ladder on a GPU machine from a clean tree, in phases that each fit one call of a few
# minutes (the lead's device calls are at most 10). Run from the repository root, with the release
# binaries under target/release (built from the same commit, `git status` clean):
#
#   OUT=/some/folder scripts/record-on-gpu.sh hopper     # steps 01-11 at 4096³ with --profile at the
#                                                       # base clock, 8192³, step 10 at 2048³ and 6144³
#   OUT=/some/folder scripts/record-on-gpu.sh sweeps     # step 10's fixed sweep and a random sweep
#   OUT=/some/folder scripts/record-on-gpu.sh sm80       # the sm80 twins 04-11 with --profile, and
#                                                       # step 10's sm80 sweep
#   OUT=/some/folder scripts/record-on-gpu.sh timelines  # the timelines of steps 08-11
#
# Each phase ends by drawing the figures from the results once more (`ladder --book-only`) and leaves
# in $OUT: record.log (everything printed), the results file(s) and record.tar.gz (book/src/results
# and book/src/figures: unpack at the repository root).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-target/record-out}
BIN=${BIN:-target/release}
RANDOM_SEED=${RANDOM_SEED:-11}
mkdir -p "$OUT"
LOG="$OUT/record.log"
for d in /opt/nvidia/nsight-compute/*/; do [ -x "$d/ncu" ] && NCU_DIR="$d"; done
[ -n "${NCU_DIR:-}" ] && export PATH="$PATH:$NCU_DIR"
start=$(date +%s)

say() { echo "== $*" | tee -a "$LOG"; }
run() { # run SECONDS command...: output to the log, never stops the script
    local limit=$1
    shift
    say "$* (limit ${limit}s, at $(($(date +%s) - start))s)"
    timeout --signal=TERM --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] && say "exit $rc: $*"
    return 0
}

say "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null); git $(git rev-parse --short=10 HEAD 2>/dev/null)"
case ${1:-} in
hopper)
    # The default run first, timed whole, twice: the wall time the README's first command costs on a
    # machine that has just started (libraries not yet in the page cache), then once they are.
    for pass in first second; do
        t0=$(date +%s%N)
        run 120 "$BIN/ladder" --no-record
        say "ladder (default run, nothing recorded, $pass on this machine) took $((($(date +%s%N) - t0) / 1000000)) ms"
    done
    run 330 "$BIN/ladder" --size 4096 --profile --clock-control base --no-book
    run 150 "$BIN/ladder" --size 8192 --alternatives --no-book
    run 60 "$BIN/step10" --size 2048,6144
    ;;
sweeps)
    run 240 "$BIN/step10" --sweep
    run 240 "$BIN/step10" --sweep "random:40" --seed "$RANDOM_SEED"
    ;;
sm80)
    run 300 "$BIN/ladder" --twin sm80 --size 4096 --profile --clock-control base --no-book
    run 150 "$BIN/step10" --twin sm80 --sweep
    ;;
timelines)
    for n in 08 09 10 11; do run 60 "$BIN/step$n" --timeline --size 4096; done
    ;;
*)
    echo "usage: scripts/record-on-gpu.sh hopper|sweeps|sm80|timelines" >&2
    exit 2
    ;;
esac
run 60 "$BIN/ladder" --book-only
cp book/src/results/*.json "$OUT/" 2>/dev/null
tar czf "$OUT/record.tar.gz" book/src/results book/src/figures
say "done in $(($(date +%s) - start))s"
