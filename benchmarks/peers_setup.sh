#!/usr/bin/env bash
# The peers of benchmarks/peers.py, installed at benchmark time only, outside the repository (never dependencies):
#   bash benchmarks/peers_setup.sh DEST EVALPLUS_GIT_DIR SANDBOXFUSION_GIT_DIR
# DEST/deepgym (PyPI deepgym), DEST/nemo (PyPI nemo-gym + the evalplus it pins, Python 3.12, and EvalPlus's last
# committed HumanEvalPlus.jsonl from a clone of evalplus/evalplus) and DEST/sandboxfusion (bytedance/SandboxFusion
# from a clone, laid out as benchmarks/peers_sandboxfusion.py says). Then:
#   python -m benchmarks.peers --deepgym-python DEST/deepgym/bin/python --nemo-python DEST/nemo/bin/python \
#       --evalplus-base DEST/nemo/HumanEvalPlus-8939a53.jsonl --sandboxfusion DEST/sandboxfusion ...
# PYTHON311 / PYTHON312 name the interpreters (default python3.11 / python3.12).
set -euo pipefail
DEST=$1 EVALPLUS=$2 FUSION=$3
PY311=${PYTHON311:-python3.11} PY312=${PYTHON312:-python3.12}
mkdir -p "$DEST"

"$PY311" -m venv "$DEST/deepgym"
"$DEST/deepgym/bin/pip" install -q deepgym==0.6.2

"$PY312" -m venv "$DEST/nemo"
"$DEST/nemo/bin/pip" install -q nemo-gym==0.4.0 evalplus==0.3.1
git -C "$EVALPLUS" show 8939a53:HumanEvalPlus.jsonl > "$DEST/nemo/HumanEvalPlus-8939a53.jsonl"

SF=$DEST/sandboxfusion
mkdir -p "$SF/src" "$SF/condabin" "$SF/bin" "$SF/envs"
git -C "$FUSION" archive HEAD | tar -x -C "$SF/src"
git -C "$FUSION" rev-parse --short HEAD > "$SF/COMMIT"
mkdir -p "$SF/src/docs/build"  # its README's step: the server mounts the built docs
"$PY311" -m venv "$SF/venv"
"$SF/venv/bin/pip" install -q "$SF/src"
"$PY311" -m venv "$SF/envs/sandbox-runtime"
"$SF/envs/sandbox-runtime/bin/pip" install -q numpy
cat > "$SF/bin/activate" <<'EOF'
# Stands in for conda's activate (SandboxFusion runs `source CONDA_ROOT/bin/activate ENV && which python`).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$ROOT/envs/${1:-sandbox-runtime}/bin:$PATH"
EOF
bash -c "source '$SF/bin/activate' sandbox-runtime && which python"
echo "peers installed under $DEST"
