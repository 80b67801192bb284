#!/usr/bin/env bash
# Issue 49's measurements in one device call (~7 min): `source`d on the GPU box from the
# repository root with the wheelhouse carried. Each step writes under $OUT as it goes and has
# its own time limit, so a call cut short keeps what finished. DEVICE=interpreter PYTHON=...
# rehearses every step on a CPU machine (ORDINARY=4: fewer ordinary candidates). Takes the
# parts to run (default all): spinning, replies, corpus (the claude-3.5-sonnet comp set, or
# CORPUS_MODELS: comma-separated sets or `all`, from .corpus/ carried: `llm_corpus_build.py`;
# CORPUS_S its wall limit; CORPUS_RESUME: earlier runs' JSONs, comma-separated, whose judged
# replies are kept and not scored again) and timeslice (`timeslice_probe.py`, CUDA only).
PARTS=${*:-spinning replies corpus}
has() { [[ " $PARTS " == *" $1 "* ]]; }
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
if has spinning; then
step "a kernel that spins on a flag among $ORDINARY ordinary candidates, 8 workers, limits 10 s"
timeout 150 $py experiments/perf/spinning_kernel.py --device $DEVICE --workers 8 \
  --ordinary $ORDINARY --timeout 10 > $OUT/spinning.txt 2>&1
tail -4 $OUT/spinning.txt
gpu
fi
if has replies; then
step "each stalling TritonBench-G reply alone, as the issue ran it (evo eval --timeout 20), every process's stack at 35, 70 and 100 s, killed at 120 s"
replies=$(mktemp -d)  # not under $OUT: the device tool brings back few files
$py experiments/perf/issue49_replies.py --write $replies --write-only
OUT=$OUT DEVICE=$DEVICE PYTHON=$py REPLIES=$replies KILL_S=120 bash experiments/perf/stall_stacks.sh
gpu
step "the two at once in one Evaluator, limits 20 s (harness run 60 s + grace), each verdict as it ends"
timeout 150 $py experiments/perf/issue49_replies.py --device $DEVICE --timeout 20 > $OUT/replies.txt 2>&1
tail -4 $OUT/replies.txt
gpu
fi
if has corpus; then
step "a whole TritonBench-G set through the Evaluator and GEAK-eval's check, every evaluation bounded"
models=${CORPUS_MODELS:-claude-3.5-sonnet-comp}; [ "$models" = all ] && models=""
timeout $(( ${CORPUS_S:-300} + 40 )) $py experiments/perf/llm_corpus.py --corpus .corpus --geak .corpus/geak \
  --models "$models" --device $DEVICE --workers 10 --geak-workers 6 \
  --max-wall-s ${CORPUS_S:-300} --resume "${CORPUS_RESUME:-}" ${CORPUS_ARGS:-} --out $OUT/llm_corpus.json > $OUT/corpus.txt 2>&1
grep -v -i warn $OUT/corpus.txt | tail -12 | cut -c1-300
gpu
fi
if has timeslice; then
step "a kernel that never ends in another process against this one's fill and burst"
timeout 100 $py experiments/perf/timeslice_probe.py --out $OUT/timeslice.jsonl 2>&1 | grep -v -i warn | cut -c1-200
fi
grep -h "out of this campaign" $OUT/*.txt
step done
