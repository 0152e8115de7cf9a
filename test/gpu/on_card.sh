#!/usr/bin/env bash
# run_all.sh's steps chosen by the card the device tool lent: a lease asked for an H200 may come as an H100,
# and issue 11's numbers are the H200's. (Sessions kept this in git-ignored .carry/exp scripts, lost with the
# checkout.)
#
#   test/gpu/on_card.sh LOGDIR CARD "STEPS" ["OTHER STEPS"]
#   e.g. test/gpu/on_card.sh "$OUT/logs" H200 "install peers" "install ir frontend"
#
# Runs test/gpu/run_all.sh LOGDIR STEPS when the first GPU's name holds CARD, else OTHER STEPS (none: nothing);
# peers' tables and plots (LOGDIR/perf) are copied to LOGDIR/../perf. Exits with run_all.sh's status.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ $# -ge 3 ] || { echo "usage: $0 LOGDIR CARD \"STEPS\" [\"OTHER STEPS\"]" >&2; exit 2; }
LOGS=$1 CARD=$2 STEPS=$3 OTHER=${4:-}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [[ $GPU == *"$CARD"* ]]; then
  chosen=$STEPS
else
  chosen=$OTHER
fi
echo "[on_card] $GPU: ${chosen:-nothing} (asked: $CARD)"
[ -n "$chosen" ] || exit 0
# (word splitting of the steps is intended)
# shellcheck disable=SC2086
bash "$HERE/run_all.sh" "$LOGS" $chosen
rc=$?
[ ! -d "$LOGS/perf" ] || cp -r "$LOGS/perf" "$(dirname "$LOGS")/perf"
exit $rc
