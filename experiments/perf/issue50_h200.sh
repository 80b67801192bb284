#!/usr/bin/env bash
# Issue 50's measurements in device calls that add up (each under 9 min): run on the GPU box
# from the repository root with the wheelhouse and .external/GEAK-eval carried, as
#   bash experiments/perf/issue50_h200.sh CALL [PREV ...]
# CALL: 1, 2 or 3; PREV: folders holding what earlier calls' $OUT brought back (out.tgz extracted), copied into
# the tree (untracked files travel), oldest first. Each call: TritonBench-revised's references
# timed (geak_timing.py, skipping the tasks PREV's rows hold) until done or REFS_S, then the
# one command's offline arm (geak_benchmarks.py, continuing the last PREV's geak/) with what is
# left of CALL_S, then the tables over the union of every call's rows. Every step writes under
# $OUT as it goes and has its own time limit, so a call cut short keeps what finished.
# TABLE2_S=S GENERATIONS="A.jsonl.gz B.jsonl.gz" first scores the recorded replies of each file
# as Table 2 (`geak_benchmarks.py --no-search`, continuing the last PREV's table2/) beside
# GEAK-eval's verdicts on them (VERDICTS). The files: `corpus_rows.py` over `.corpus`, carried.
# DEVICE=interpreter PYTHON=... SUITE=tests/fixtures/external/tritonbench rehearses it on a CPU.
# `carry_trim.sh hold DIR` first fits the tree, the wheelhouse and .external into what a call
# carries (`restore DIR` after). AGAIN="a,b" scores named tasks again (a fix re-measured);
# TASKS="a,b" scores only those. GEAK_S=S: GEAK-eval's own clock on every scored reference
# it has not timed yet, ours timed first (the validation table), after the references.
CALL=${1:?CALL: 1, 2 or 3}; shift
PREV=("$@")
DEVICE=${DEVICE:-cuda}
SUITE=${SUITE:-.external/GEAK-eval}
WORKERS=${WORKERS:-8}  # 12 ran references out of memory beside each other (RESULTS.md §32)
SPARES=${SPARES:-}     # spare workers of every step (default: half of WORKERS; §46)
CALL_S=${CALL_S:-500}          # this call's wall time, the environment's set-up included
SEARCH_S=${SEARCH_S:-$([ "$CALL" = 3 ] && echo 220 || echo 0)}  # kept for the one command
REFS_S=${REFS_S:-}              # the references' share (default: what SEARCH_S leaves)
REDO=${REDO:-}                  # words of untimed kinds to score again ("harness_error timeout")
REDO_OLDER=${REDO_OLDER:-}      # 1: score again the untimed references an older harness scored
AGAIN=${AGAIN:-}                # task names scored again whatever earlier rows say ("a,b")
TASKS=${TASKS:-}                # only these tasks ("a,b"; default: all)
TIMEOUT=${TIMEOUT:-60}          # the references' uniform stage limit (s): 60 cut triton_linear_activation's compile of 26 cases (§47)
GEAK_S=${GEAK_S:-0}             # after the references, GEAK-eval's own clock on them (the validation table)
TABLE2_S=${TABLE2_S:-0}         # first, Table 2: the recorded replies in GENERATIONS, beside VERDICTS
GENERATIONS=${GENERATIONS:-}    # recorded-generations files (`corpus_rows.py`; carried: .corpus/rows)
# Table 2's campaigns' wall budget over every call, shared by the files (a campaign that spent
# its share ended on its own, and no later call resumes it: set it past what the calls add up to)
TABLE2_MINUTES=${TABLE2_MINUTES:-$(awk "BEGIN { print $TABLE2_S / 60 }")}
TABLE2_DIR=${TABLE2_DIR:-table2}  # its folder under $OUT (another name: campaigns of their own)
TABLE2_TASKS=${TABLE2_TASKS:-}    # only these tasks' replies ("a,b"; default: all)
VERDICTS=${VERDICTS:-experiments/perf/data/llm_corpus_h200_2026-11-29_a.json.gz experiments/perf/data/llm_corpus_h200_2026-11-29_c.json.gz}
TASKS_PER_LEVEL=${TASKS_PER_LEVEL:-6}
SEARCH_MINUTES=${SEARCH_MINUTES:-12}  # the one command's campaigns, over all calls
py=${PYTHON:-python3}
start=$(date +%s)
left() { echo $(( CALL_S - ($(date +%s) - start) )); }
step() { echo "== call $CALL: $1 $(date +%T), $(left) s left"; }
# the device after each step: memory in use and what still holds it (a context not torn down)
gpu() { if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; fi; }
if [ "$DEVICE" = cuda ]; then source experiments/perf/gpu_env.sh .wheelhouse > $OUT/env.txt 2>&1
  tail -1 $OUT/env.txt
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" TRITON_INTERPRET=1 \
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0
fi
P=experiments/perf
# A campaign folder comes back as one archive (its Parquet parts are past what a call brings
# back file by file: too many, too deep); the next call resumes from the last PREV's.
pack() { tar czf $OUT/$1.tgz -C $OUT $1 && rm -rf $OUT/$1; }
unpack() { local last=""; for prev in "${PREV[@]}"; do
    if [ -f "$prev/$1.tgz" ] || [ -d "$prev/$1" ]; then last=$prev; fi; done
  if [ -f "$last/$1.tgz" ]; then tar xzf "$last/$1.tgz" -C $OUT
  elif [ -n "$last" ]; then cp -r "$last/$1" $OUT/$1; fi
  [ -d $OUT/$1 ] && chmod -R u+w $OUT/$1; }
if [ "$TABLE2_S" -gt 0 ] && [ -n "$GENERATIONS" ]; then
  step "Table 2 from the recorded replies, $TABLE2_S s at most"
  unpack $TABLE2_DIR
  timeout $(( TABLE2_S + 60 )) $py experiments/geak_benchmarks.py --path $SUITE --device $DEVICE \
    --suites tritonbench-revised --no-search --workers $WORKERS ${SPARES:+--spares $SPARES} --generations $GENERATIONS \
    --geak-verdicts $VERDICTS --minutes $TABLE2_MINUTES \
    --call-minutes $(awk "BEGIN { print $TABLE2_S / 60 }") --out $OUT/$TABLE2_DIR --tasks "$TABLE2_TASKS" \
    --resume > $OUT/$TABLE2_DIR.log 2>&1
  echo "exit $?"; grep -E "^== |^\| " $OUT/$TABLE2_DIR.log | tail -24 | cut -c1-300
  pack $TABLE2_DIR
  gpu
fi
resume=(); for prev in "${PREV[@]}"; do [ -f "$prev/geak_timing.jsonl" ] && resume+=("$prev/geak_timing.jsonl"); done
refs_s=${REFS_S:-$(( $(left) - SEARCH_S - GEAK_S - 40 ))}
if [ $refs_s -ge 30 ]; then
  step "the references, ${refs_s} s at most, resuming from ${#resume[@]} rows files"
  if [ "$GEAK_S" -gt 0 ]; then geak=(--max-wall-s $(( refs_s + GEAK_S ))); else geak=(--no-geak); fi
  timeout $(( refs_s + GEAK_S + 60 )) $py $P/geak_timing.py --path $SUITE --device $DEVICE --no-rocm "${geak[@]}" \
    --workers $WORKERS ${SPARES:+--spares $SPARES} --timeout $TIMEOUT --project-wall-s $refs_s --drain-s $(( refs_s < 120 ? refs_s / 3 : 60 )) \
    --out $OUT/geak_timing.json --resume "${resume[@]}" --redo $REDO ${REDO_OLDER:+--redo-older} --again "$AGAIN" --tasks "$TASKS" > $OUT/geak_timing.log 2>&1
  echo "exit $?"; grep -E "^\[|tasks done in earlier|deadline" $OUT/geak_timing.log | tail -5 | cut -c1-300
  gpu
fi
search_s=$(( $(left) - 30 ))
if [ $search_s -ge 180 ]; then  # a campaign seeds for minutes: less checkpoints nothing
  step "the one command's offline arm, $search_s s at most"
  unpack geak
  timeout $(( search_s + 30 )) $py experiments/geak_benchmarks.py --path $SUITE --device $DEVICE \
    --suites tritonbench-revised --workers $WORKERS ${SPARES:+--spares $SPARES} --tasks-per-level $TASKS_PER_LEVEL \
    --minutes $SEARCH_MINUTES --search-generations 3 --islands 2 --offspring 2 --out $OUT/geak \
    --call-minutes $(awk "BEGIN { print $search_s / 60 }") --resume > $OUT/geak_benchmarks.log 2>&1
  echo "exit $?"; grep -E "^== |evaluations|stopped|generation" $OUT/geak_benchmarks.log | tail -8 | cut -c1-300
  pack geak
  gpu
fi
step "the tables over every call's rows"
$py $P/geak_timing.py --path $SUITE --device $DEVICE --no-rocm --out $OUT/union/geak_timing.json \
  --tables-from "${resume[@]}" $OUT/geak_timing.jsonl > $OUT/union.log 2>&1
sed -n '1,/^task /p' $OUT/union.log | grep -v "^  not timed" | head -60 | cut -c1-300
step done
# a call brings back 8 files at most: what this call wrote goes back as one archive, out.tgz
# (extract it where the call's data is kept; a call cut short at its limit leaves them loose)
(cd $OUT && tar czf /tmp/kernelevo-out.tgz . && find . -mindepth 1 -delete && mv /tmp/kernelevo-out.tgz out.tgz)
