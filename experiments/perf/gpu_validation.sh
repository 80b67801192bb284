#!/usr/bin/env bash
# Issue 8 on one GPU, in one call of at most ~9.5 minutes (the device tool's per-command cap):
# every step has its own time box and writes its output under $OUT as it goes, so a step
# cut short still leaves its partial numbers. Run from the repo root on a GPU box:
#   OUT=/some/dir bash experiments/perf/gpu_validation.sh [steps...]
# steps: fitness campaign_llm refcheck autotune (default), and verdicts: quickstart cheats honest
# (the quickstart's correctness and seed floor, every cheat caught, every honest file accepted)
set -uo pipefail
source experiments/perf/gpu_env.sh .wheelhouse
mkdir -p "$OUT"
steps=${*:-fitness campaign_llm refcheck autotune}
step() { echo "== $1 ($(date +%T))"; }
for s in $steps; do case $s in
fitness) step "fitness throughput, pooled vs process-per-candidate, repeatability"
  timeout 200 python3 experiments/perf/fitness_bench.py --device cuda --correct-per-task 4 \
    --workers 8 --naive-sample 3 2>&1 | grep -v -i warn | tee "$OUT/fitness_bench.txt" ;;
campaign_llm) step "campaign with a scripted LLM answering after 5 s: GPU busy fraction"
  timeout 140 python3 experiments/perf/campaign_bench.py --mode llm --latency-s 5 \
    --tasks softmax,rmsnorm,layernorm,row_sum,cross_entropy,vector_add,transpose,bias_gelu \
    --generations 2 --islands 2 --offspring 4 --workers 8 --out /tmp/campaign_llm \
    --json "$OUT/campaign_llm.json" 2>&1 | grep -v -i warn | tail -25 | tee "$OUT/campaign_llm.txt" ;;
refcheck) step "external suites: reference kernels against their own harness"
  timeout 80 python3 experiments/perf/external_refcheck.py --rocm .external/GEAK-eval \
    --tritonbench .external/GEAK-eval --jobs 8 --timeout 60 --json "$OUT/refcheck.json" \
    2>&1 | grep -v -i warn | tail -40 | tee "$OUT/refcheck.txt" ;;
autotune) step "torch.compile max-autotune, first GPU case of each task"
  timeout 80 python3 experiments/perf/suite_bench.py --modes eager,default,max-autotune \
    --max-cases 1 --tasks softmax,rmsnorm,layernorm,cross_entropy,bias_gelu,row_sum,matmul \
    --json "$OUT/suite_autotune.json" 2>&1 | grep -v -i warn | tee "$OUT/suite_autotune.txt" ;;
quickstart) step "quickstart campaign: 100% correct, no best below its seed"
  timeout 170 python3 -m evo run experiments/quickstart.toml --out "$OUT/quickstart" 2>&1 \
    | grep -v -i warn | tail -12 | tee "$OUT/quickstart.txt"
  python3 experiments/perf/seed_floor.py "$OUT/quickstart" 2>&1 | tee -a "$OUT/quickstart.txt" ;;
cheats) step "every cheat caught as its header says"
  timeout 170 python3 experiments/perf/cheat_sweep.py --device cuda --workers 8 2>&1 \
    | grep -v -i warn | tail -25 | tee "$OUT/cheats.txt" ;;
honest) step "every honest file accepted and correct"
  timeout 170 python3 experiments/perf/honest_sweep.py --device cuda --workers 8 2>&1 \
    | grep -v -i warn | tail -25 | tee "$OUT/honest.txt" ;;
esac; done
