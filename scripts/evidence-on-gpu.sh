#!/usr/bin/env bash
# Evidence for every rung, on the H200 (issue 11). Run from the repository root, with the release
# binaries copied to .bin/ (.bin/step01 .. .bin/step11, .bin/ladder):
#
#   OUT=/some/folder scripts/evidence-on-gpu.sh
#
# 1. stepNN --profile --size 4096 for steps 01-11: verify, time against cuBLAS, record, and profile
#    the step's kernel alone under Nsight Compute (found on PATH or under /opt/nvidia/nsight-compute);
#    the counters land in each record's "profile" in book/src/results/<gpu>.json.
# 2. stepNN --timeline --size 4096 for steps 08, 09, 10, 11: the stamped build checked against the plain
#    one, its overhead timed, one run drawn into book/src/figures/timeline-stepNN-<gpu>.svg and written
#    as a Perfetto trace to book/src/results/timelines/timeline-stepNN-<gpu>.json.
# 3. Into $OUT (three files): evidence.log (everything printed), <gpu>.json (the results file) and
#    evidence.tar.gz (book/src/results and book/src/figures: unpack at the repository root).
#
# It keeps to about 7.5 minutes: a step that would start after its phase's deadline is skipped and
# said so in the log; each command has its own time limit.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-target/evidence-out}
BIN=${BIN:-.bin}
SIZE=${SIZE:-4096}
ITERS=${ITERS:-}  # empty: the program's own (about a second's worth of rounds, 5 to 200)
mkdir -p "$OUT"
LOG="$OUT/evidence.log"
: >"$LOG"
for d in /opt/nvidia/nsight-compute/*/; do [ -x "$d/ncu" ] && NCU_DIR="$d"; done
[ -n "${NCU_DIR:-}" ] && export PATH="$PATH:$NCU_DIR"
start=$(date +%s)
profile_deadline=$((start + 330))
timeline_deadline=$((start + 440))

say() { echo "== $*" | tee -a "$LOG"; }
run() {  # run SECONDS command...: output to the log (and the terminal), never stops the script
    local limit=$1; shift
    say "$* (limit ${limit}s, at $(( $(date +%s) - start ))s)"
    timeout --signal=TERM --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] && say "exit $rc: $*"
    return 0
}

say "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
say "ncu: $(command -v ncu || echo 'not found') $(ncu --version 2>/dev/null | tail -1)"
for n in 01 02 03 04 05 06 07 08 09 10 11; do
    if [ "$(date +%s)" -ge "$profile_deadline" ]; then say "step$n --profile skipped: out of time"; continue; fi
    run 100 "$BIN/step$n" --profile --size "$SIZE" ${ITERS:+--iters "$ITERS"}
done
for n in 08 09 10 11; do
    if [ "$(date +%s)" -ge "$timeline_deadline" ]; then say "step$n --timeline skipped: out of time"; continue; fi
    run 60 "$BIN/step$n" --timeline --size "$SIZE"
done
# Figures drawn from the results (the ladder) are redrawn by every recording run; draw once more
# from the final file so that they match it.
run 60 "$BIN/ladder" --book-only

cp book/src/results/*.json "$OUT/" 2>/dev/null
tar czf "$OUT/evidence.tar.gz" book/src/results book/src/figures
say "done in $(( $(date +%s) - start ))s; in $OUT: $(ls "$OUT" | tr '\n' ' ')"
