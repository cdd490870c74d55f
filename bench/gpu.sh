#!/usr/bin/env bash
# The model path on a GPU, in one command (issue 29): under 8 minutes on one H100/H200.
#   1. Qwen2.5-VL-7B shapes with random bf16 weights (built from its config, no download):
#      generation and logit scoring, batched against one at a time, in interleaved rounds;
#      the prefill against the compute roofline and batch-1 decoding against the memory one;
#   2. batched = one-at-a-time scoring in float32 on the tiny model (goal 1e-5 in log p);
#   3. one `run-models --backend vllm` run of the built-in arrow-of-time study on the random
#      7B weights, when vLLM is installed (it is not on the local package index: said, skipped).
#
#   bash bench/gpu.sh            # PYTHON=... to use another interpreter than .venv/bin/python
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
start=$SECONDS
step() { echo; echo "== $1 ($((SECONDS - start)) s in)"; }

step "the machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, '| transformers', transformers.__version__)"

step "Qwen2.5-VL-7B shapes, random bf16 weights: throughput and rooflines"
timeout 300 "$PY" bench/models.py --size 7b --device cuda --dtype bfloat16 --frame-size 336 \
  --clips 8 --batch-size 8 --max-new-tokens 16 --rounds 3

step "batched = one at a time, float32, tiny model on the GPU"
timeout 120 "$PY" bench/models.py --device cuda --dtype float32 --clips 4 --rounds 1

step "run-models --backend vllm on the built-in study"
if ! "$PY" -c "import vllm" 2>/dev/null; then
  echo "vllm is not installed in $PY: skipped (pip install -e '.[vllm]' where it can be reached)"
else
  work=$(mktemp -d)
  export CHRONOSCOPE_INSTANCE_PATH=$work/instance CHRONOSCOPE_DEVELOPMENT=true
  "$PY" -c "from analysis.vlm.tiny import build_vlm; build_vlm('qwen2_5_vl', '$work/model', size='7b', dtype='bfloat16')"
  "$PY" manage.py init-db
  "$PY" manage.py stimuli generate
  "$PY" manage.py study demo
  timeout 240 "$PY" manage.py run-models --study demo-arrow-of-time --backend vllm \
    --model "$work/model" --dtype bfloat16 --no-progress --max-new-tokens 16
fi
echo; echo "done in $((SECONDS - start)) s"
