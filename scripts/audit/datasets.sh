#!/usr/bin/env bash
# The reward audit on the public datasets, and the peers beside it (docs/audit-results.md, benchmarks/AUDIT_PEERS.md).
#
#   DATA=/work/data OUT=/tmp/audit-runs PEERS_VENV=/work/peers-venv bash scripts/audit/datasets.sh
#
# DATA holds <name>/converted.jsonl as `trainer data convert` writes them (scripts/datasets/fetch.py makes them).
# PEERS_VENV is a venv of its own with the peers, made at benchmark time only (never a dependency of the project:
# DeepGym's licence is non-commercial):  python3 -m venv $PEERS_VENV && $PEERS_VENV/bin/pip install deepgym &&
# $PEERS_VENV/bin/pip install --no-deps --ignore-requires-python nemo-gym   (nemo_gym/verifier_fixture.py needs pydantic only)
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${DATA:-/work/data}
OUT=${OUT:-/tmp/audit-runs}
PEERS_VENV=${PEERS_VENV:-/work/peers-venv}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT"
datasets=()
ours=()
for name in humaneval mbpp gsm8k; do
  input="$DATA/$name/converted.jsonl"
  [ -f "$input" ] || { echo "no $input: run scripts/datasets/fetch.py first" >&2; exit 2; }
  status=0
  "$PY" -m verifier_service.tools.cli audit --input "$input" --output "$OUT/$name" || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 4 ] || exit "$status"   # 4: rows flagged (the findings)
  datasets+=(--dataset "$name=$input")
  ours+=(--ours "$name=$OUT/$name")
done
"$PY" -m benchmarks.audit_peers --peers-venv "$PEERS_VENV" "${datasets[@]}" "${ours[@]}" --output "$OUT/peers.json"
