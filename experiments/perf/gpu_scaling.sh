#!/usr/bin/env bash
# Issue 8 on a two-GPU box (device kind nvidia-h200-x2), one call of ~8 minutes: the fitness
# benchmark, the offline campaign over the whole built-in suite on one GPU and then on two
# (one FitnessActor per GPU), and the exhaustive sweep against the one-GPU campaign's best.
# Every step is time-boxed and writes under $OUT as it goes.
#   OUT=/some/dir bash experiments/perf/gpu_scaling.sh
set -uo pipefail
source experiments/perf/gpu_env.sh .wheelhouse
mkdir -p "$OUT"
step() { echo "== $1 ($(date +%T))"; }
campaign="--mode offline --tasks all --generations 2 --islands 1 --offspring 4 --population 4 --workers 8"
step "fitness throughput, pooled vs process-per-candidate, repeatability"
timeout 120 python3 experiments/perf/fitness_bench.py --device cuda --correct-per-task 3 \
  --workers 8 --naive-sample 4 2>&1 | grep -v -i warn | tee "$OUT/fitness_bench.txt"
step "offline campaign, whole suite, 1 GPU"
timeout 130 python3 experiments/perf/campaign_bench.py $campaign --gpus 1 --out /tmp/camp_1gpu \
  --json "$OUT/campaign_1gpu.json" 2>&1 | grep -v -i warn | tail -22 | tee "$OUT/campaign_1gpu.txt"
step "offline campaign, whole suite, 2 GPUs"
timeout 110 python3 experiments/perf/campaign_bench.py $campaign --gpus 2 --out /tmp/camp_2gpu \
  --json "$OUT/campaign_2gpu.json" 2>&1 | grep -v -i warn | tail -5 | tee "$OUT/campaign_2gpu.txt"
step "exhaustive sweep of the knob space vs the 1-GPU campaign's best"
timeout 75 python3 experiments/perf/exhaustive_bench.py --campaign /tmp/camp_1gpu \
  --tasks softmax,rmsnorm,layernorm,vector_add,cross_entropy --max-configs 25 --workers 8 \
  --json "$OUT/exhaustive.json" 2>&1 | grep -v -i warn | tee "$OUT/exhaustive.txt"
