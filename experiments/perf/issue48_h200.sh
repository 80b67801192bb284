#!/usr/bin/env bash
# Issue 48's measurements on the GPU box, `source`d from the repository root with the
# wheelhouse carried and the parts of 8dd2dab that its fitness_bench runs unpacked in
# old8dd2dab/ (`mkdir old8dd2dab && git archive 8dd2dab benchmarks evo fitness operators
# experiments/perf/fitness_bench.py experiments/perf/machine_use.py | tar -x -C old8dd2dab`:
# 1.3 MB; the whole tree with the wheelhouse is past what a call carries, 64 MiB). PART 1 (~8 min): a kernel left running against the fill,
# the judge's clock across two processes (the product's fill and a burst), then against
# events over every baseline, then the compromised-worker suite; PART 2 (~7 min): throughput
# against 8dd2dab in the same call, the cheat zoo with the lint off, the honest files. No
# PART: both (~15 min: more than one call allows). Each step writes under $OUT as it goes
# and has its own time limit, so a call cut short keeps what finished.
source experiments/perf/gpu_env.sh .wheelhouse > $OUT/env.txt 2>&1
P=experiments/perf
PART=${1:-all}
bench="--device cuda --correct-per-task 4 --workers 10 --timeout 10 --skip-naive --no-repeat"
step() { echo "== $1 $(date +%T)"; }
if [ "$PART" != 2 ]; then
  step "a kernel that never ends in another process against this one's fill (the fill's exposure)"
  timeout 90 python3 $P/timeslice_probe.py --out $OUT/timeslice.jsonl 2>&1 | grep -v -i warn | cut -c1-200
  step "the judge's clock across two processes, no Evaluator"
  timeout 40 python3 $P/judge_clock_bisect.py --out $OUT/bisect.jsonl 2>&1 | grep -v -i warn | cut -c1-300
  step "the same, the child woken by a host thread that launches its runs (a shorter handoff?)"
  timeout 40 python3 $P/judge_clock_bisect.py --wake host --out $OUT/bisect_host.jsonl 2>&1 | grep -v -i warn | cut -c1-300
  step "the judge's clock against events, every baseline"
  timeout 165 python3 $P/judge_clock_check.py --device cuda --workers 4 \
    --out $OUT/judge_clock.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600
  step "compromised-worker suite"
  timeout 115 python3 $P/compromised_sweep.py --device cuda \
    --out $OUT/compromised.jsonl > $OUT/compromised.txt 2>&1
  tail -14 $OUT/compromised.txt | cut -c1-300
fi
if [ "$PART" != 1 ]; then
  step "fitness_bench, this tree"
  timeout 110 python3 $P/fitness_bench.py $bench > $OUT/bench_new.txt 2>&1
  grep -E "^  (100/|timing runs|device held)|^pooled|false failures" $OUT/bench_new.txt | cut -c1-400
  step "fitness_bench, 8dd2dab"
  (cd old8dd2dab && PYTHONPATH=$PWD timeout 70 python3 experiments/perf/fitness_bench.py $bench) \
    > $OUT/bench_old.txt 2>&1
  grep -E "^pooled|false failures" $OUT/bench_old.txt
  step "cheat zoo, lint off"
  timeout 150 python3 $P/cheat_sweep.py --device cuda --workers 10 --ungated \
    > $OUT/cheats.txt 2>&1
  tail -4 $OUT/cheats.txt | cut -c1-300
  step "honest files"
  timeout 60 python3 $P/honest_sweep.py --device cuda --workers 10 > $OUT/honest.txt 2>&1
  tail -4 $OUT/honest.txt | cut -c1-300
fi
step done
