#!/usr/bin/env bash
# labelfeat7.py dumps of every development set (own questions with off-topic ones from another set,
# and each answerable question with its judged answers removed), as label_diff.py and
# clear_paraphrase.py read them. SciFact is left out (its 809 questions take most of the time).
#   KENNING_EVAL_DATA=../shared/eval-data bash bench/relevance/label_dumps.sh /tmp/after
set -euo pipefail
out=${1:?usage: label_dumps.sh OUTDIR}
data=${KENNING_EVAL_DATA:?set KENNING_EVAL_DATA to the eval-data directory}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python}
export KENNING_RELEVANCE_OUT=$out HF_HUB_OFFLINE=1
mkdir -p "$out"
run() { "$py" "$here/labelfeat7.py" "$@"; }
run builtin --foreign "$data/locomo-dev"; run builtin --removed
run memval --foreign "$data/locomo-dev"; run memval --removed
run memval2 --foreign "$data/npl"; run memval2 --removed
run memval3 --foreign "$data/locomo-dev"; run memval3 --removed
run "$data/med" --foreign "$data/cranfield"
run "$data/cranfield" --foreign "$data/med"
run "$data/npl" --foreign "$data/med"
run "$data/locomo-dev" --foreign "$data/npl" --group-sep :; run "$data/locomo-dev" --removed --group-sep :
