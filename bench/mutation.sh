#!/usr/bin/env bash
# Mutation score of one module against the tests that cover it, with mutmut 3 (not part of CI: slow).
#   bench/mutation.sh retrieval/fusion.py tests/test_fusion.py
#   bench/mutation.sh retrieval/bm25.py "tests/test_bm25_parity.py tests/test_legs_contract.py"
# mutmut copies the tree into mutants/ and imports it from there, so the work happens in a scratch
# folder holding this commit's tree as ./kenning (the repository root is the package).
# Prints mutmut's summary and every survivor; `mutmut show <name>` in $WORK shows one.
set -euo pipefail
module=${1:?module path inside kenning, e.g. retrieval/fusion.py}
tests=${2:?test files, space separated, e.g. tests/test_fusion.py}
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$here/.venv/bin/python}
[ -x "$py" ] || py=/work/main/.venv/bin/python
WORK=${WORK:-$(mktemp -d -t kenning-mutation-XXXX)}
mkdir -p "$WORK" && rm -rf "$WORK/kenning" "$WORK/mutants"
git -C "$here" archive HEAD --prefix=kenning/ | tar -x -C "$WORK"
args="-p no:cacheprovider -q"
for t in $tests; do args="$args kenning/$t"; done
cat > "$WORK/setup.cfg" <<CFG
[mutmut]
source_paths=kenning/$module
also_copy=kenning/
pytest_add_cli_args_test_selection=$(for t in $tests; do printf 'kenning/%s\n    ' "$t"; done)
pytest_add_cli_args=-p no:cacheprovider -q
CFG
cd "$WORK"
unset PYTHONPATH
HF_HUB_OFFLINE=1 nice "$(dirname "$py")/mutmut" run >"$WORK/run.log" 2>&1 || true
tail -c 200 "$WORK/run.log" | tr '\r' '\n' | tail -2
"$(dirname "$py")/mutmut" results 2>/dev/null | grep -v ": killed" || true
echo "work folder: $WORK"
