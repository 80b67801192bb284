#!/usr/bin/env bash
# Issue 49's measurements in one device call (~5 min): `source`d on the GPU box from the
# repository root with the wheelhouse carried. Each step writes under $OUT as it goes and has
# its own time limit, so a call cut short keeps what finished. DEVICE=interpreter PYTHON=...
# rehearses every step on a CPU machine (ORDINARY=4: fewer ordinary candidates).
DEVICE=${DEVICE:-cuda}
ORDINARY=${ORDINARY:-20}
py=${PYTHON:-python3}
if [ "$DEVICE" = cuda ]; then source experiments/perf/gpu_env.sh .wheelhouse >/dev/null 2>&1; fi
step() { echo "== $1 $(date +%T)"; }
# the device after each step: memory in use and what still holds it (a context not torn down)
gpu() { if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; fi; }
gpu
step "a kernel that spins on a flag among $ORDINARY ordinary candidates, 8 workers, limits 10 s"
timeout 150 $py experiments/perf/spinning_kernel.py --device $DEVICE --workers 8 \
  --ordinary $ORDINARY --timeout 10 > $OUT/spinning.txt 2>&1
tail -4 $OUT/spinning.txt
gpu
step "the two stalling TritonBench-G replies at once, limits 20 s (harness run 60 s + grace)"
timeout 150 $py experiments/perf/issue49_replies.py --device $DEVICE --timeout 20 \
  --write $OUT/replies > $OUT/replies.txt 2>&1
tail -4 $OUT/replies.txt
gpu
step "each reply alone, as the issue ran it: evo eval --timeout 20, killed from outside at 150 s"
for task in int8_dequant_matmul chunk_retention_ops; do
  ( start=$(date +%s); timeout 150 $py -m evo eval $task $OUT/replies/$task.py \
      --suite tritonbench-revised --path experiments/perf/data/issue49/tritonbench \
      --device $DEVICE --timeout 20 > $OUT/eval_$task.txt 2>&1
    echo "$task: exit $?, $(( $(date +%s) - start )) s: $(tail -1 $OUT/eval_$task.txt)" ) &
done
wait
gpu
grep -h "out of this campaign" $OUT/*.txt
step done
