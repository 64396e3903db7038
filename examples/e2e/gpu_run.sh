#!/usr/bin/env bash
# What each GPU `run` call runs (from the repository root):  bash examples/e2e/gpu_run.sh PIPELINE-ARGS...
#   e.g.  bash examples/e2e/gpu_run.sh --stages data,service
# 1. sets up /tmp/e2e-env once (idempotent): the carried wheels unpacked into a site dir on PYTHONPATH (no pip,
#    no network), bubblewrap from the carried .debs when the machine has none;
# 2. keeps each carried GGUF half in /tmp/e2e/gguf and joins them (sha256-checked) once both are there;
# 3. runs `python -m examples.e2e.pipeline --state-dir /tmp/e2e ARGS`, its log in /tmp/e2e/logs;
# 4. packs the results (stage records, gates, evaluations, run.json, timings, step log, small logs; never the
#    model) into $OUT/e2e-results.tar.gz.
# Only /tmp survives between calls, and only when the next call comes soon (~30 s): a later call that finds the
# model or the environment gone says so; start again from the first call then (examples/e2e/README.md).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ENV=${E2E_ENV:-/tmp/e2e-env}
STATE=${E2E_STATE:-/tmp/e2e}
PY=${E2E_PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$ENV" "$STATE/logs" "$STATE/gguf"
export PYTHONPATH="$ENV/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

# 1. the environment
"$PY" examples/e2e/offline_setup.py wheels --site "$ENV/site" .whl .whl-pandas:pandas .whl-arrow:pyarrow
# the vLLM 0.23 + TRL 1.16 bundle (../shared/gpu/README.md): its pieces, carried in two calls (.gpu/p1, then .gpu/p2
# with .gpu/unpack.sh), are reassembled into /tmp/site once the last one is there
if [ -x .gpu/unpack.sh ]; then bash .gpu/unpack.sh || echo "WARNING: the vLLM bundle did not unpack" >&2; fi
if [ -f /tmp/site/.complete ]; then
  export PYTHONPATH="$PYTHONPATH:/tmp/site"   # after the carried wheels: their pins (grpcio, datasets) come first
  export VLLM_NO_USAGE_STATS=1 VLLM_USE_FLASHINFER_SAMPLER=0   # FlashInfer is not carried (trainer/vllm_env.py)
fi
BWRAP=$(command -v bwrap || true)
[ -z "${E2E_CARRIED_BWRAP:-}" ] || BWRAP=   # use the carried .deb even where the machine has bwrap (a test)
if [ -z "$BWRAP" ]; then
  if [ -d .deb ] && [ ! -x "$ENV/root/usr/bin/bwrap" ]; then
    "$PY" examples/e2e/offline_setup.py debs --into "$ENV/root" .deb
  fi
  if [ -x "$ENV/root/usr/bin/bwrap" ]; then
    # a wrapper that finds the unpacked libraries (libselinux, libcap, libpcre2) where the machine lacks them
    libs="$ENV/root/lib/x86_64-linux-gnu:$ENV/root/usr/lib/x86_64-linux-gnu"
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$ENV/root/usr/bin/bwrap" > "$ENV/bwrap"
    chmod +x "$ENV/bwrap"
    BWRAP="$ENV/bwrap"
  else
    echo "WARNING: no bwrap on this machine and none carried (carry .deb): the service cannot start" >&2
  fi
fi
echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])')); bwrap: ${BWRAP:-none}"
"$PY" - <<'EOF'
import importlib.util
mods = ["torch", "transformers", "accelerate", "peft", "grpc", "google.protobuf", "trl", "datasets", "pandas",
        "pyarrow", "gguf", "jsonschema", "math_verify", "rich", "docker", "defusedxml", "yaml", "dill",
        "multiprocess", "xxhash", "vllm"]
missing = [m for m in mods if importlib.util.find_spec(m) is None]
print("missing modules:", ", ".join(missing) if missing else "none")
if missing and any(m in missing for m in ("pandas", "pyarrow")):
    print("  -> carry .whl-pandas / .whl-arrow before the gates / train stages (examples/e2e/README.md)")
if "vllm" in missing:
    print("  -> no vLLM: carry .gpu/p1, then .gpu/p2 with .gpu/unpack.sh, or run with --generation transformers")
EOF

# 2. the GGUF halves
for half in a b; do
  if [ -s ".gguf/$half" ] && [ ! -s "$STATE/gguf/$GGUF_NAME" ]; then cp ".gguf/$half" "$STATE/gguf/$half"; fi
done
if [ ! -s "$STATE/gguf/$GGUF_NAME" ] && [ -s "$STATE/gguf/a" ] && [ -s "$STATE/gguf/b" ]; then
  cat "$STATE/gguf/a" "$STATE/gguf/b" > "$STATE/gguf/$GGUF_NAME.part"
  if [ "$(sha256sum "$STATE/gguf/$GGUF_NAME.part" | cut -d' ' -f1)" = "$(cat examples/e2e/gguf.sha256)" ]; then
    mv "$STATE/gguf/$GGUF_NAME.part" "$STATE/gguf/$GGUF_NAME" && rm -f "$STATE/gguf/a" "$STATE/gguf/b"
    echo "GGUF joined: $STATE/gguf/$GGUF_NAME"
  else
    echo "ERROR: the joined GGUF's sha256 does not match examples/e2e/gguf.sha256" >&2
  fi
fi
ls -la "$STATE/gguf" | tail -n +2
stages=$(printf '%s\n' "$@" | awk 'prev == "--stages" {print} {prev = $0}')
case ",$stages," in
  *,model,*|*,gates,*|*,eval-*|*,train,*|*,inspect-*)
    if [ ! -s "$STATE/gguf/$GGUF_NAME" ] && [ ! -f "$STATE/model/config.json" ]; then
      echo "NOTE: no model in $STATE/model and no joined GGUF: if an earlier call made them, /tmp was lost" \
           "between calls; start again from call 1 (examples/e2e/README.md)" >&2
    fi;;
esac

# 3. the pipeline (or, with --tir first, the tool-integrated GRPO run of examples/e2e/tir_vllm.py instead)
if [ "${1:-}" = "--tir" ]; then
  shift
  "$PY" -m examples.e2e.tir_vllm --bwrap "${BWRAP:-bwrap}" --out "${OUT:-$STATE}" "$@" 2>&1 \
    | grep --line-buffered -v -E '^\s*$|it/s\]|s/it\]|Loading weights'
  exit "${PIPESTATUS[0]}"
fi
log="$STATE/logs/pipeline-$(date -u +%H%M%S).log"
"$PY" -m examples.e2e.pipeline --state-dir "$STATE" --bwrap-path "${BWRAP:-bwrap}" "$@" 2>&1 \
  | grep --line-buffered -v -E '^\s*$|it/s\]|s/it\]|Loading weights' | tee "$log"
status=${PIPESTATUS[0]}
echo "pipeline exit status: $status"

# 4. the results (small files only)
if [ -n "${OUT:-}" ]; then
  (cd "$STATE" && tar czf "$OUT/e2e-results.tar.gz" --ignore-failed-read \
     $(ls -d stages.json pipeline.json service.json data gates eval report logs inspect \
           run/run.json run/reward_timing.json run/steps.jsonl run/budget.json 2>/dev/null))
  ls -la "$OUT"
fi
exit "$status"
