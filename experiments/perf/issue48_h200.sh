#!/usr/bin/env bash
# Issue 48's measurements in one device call (~10 min): `source`d on the GPU box from the
# repository root with the wheelhouse carried and 8dd2dab unpacked in old8dd2dab/
# (`mkdir old8dd2dab && git archive 8dd2dab | tar -x -C old8dd2dab`). Each step writes
# under $OUT as it goes and has its own time limit, so a call cut short keeps what finished.
source experiments/perf/gpu_env.sh .wheelhouse >/dev/null 2>&1
bench="--device cuda --correct-per-task 4 --workers 10 --timeout 10 --skip-naive --no-repeat"
step() { echo "== $1 $(date +%T)"; }
step "fitness_bench, this tree"
timeout 85 python3 experiments/perf/fitness_bench.py $bench > $OUT/bench_new.txt 2>&1
grep -A3 "^way" $OUT/bench_new.txt
step "fitness_bench, 8dd2dab"
(cd old8dd2dab && PYTHONPATH=$PWD timeout 85 python3 experiments/perf/fitness_bench.py $bench) \
  > $OUT/bench_old.txt 2>&1
grep -A3 "^way" $OUT/bench_old.txt
step "the judge's clock against events, every baseline"
timeout 190 python3 experiments/perf/judge_clock_check.py --device cuda --workers 4 \
  --out $OUT/judge_clock.jsonl 2>&1 | grep -v Warn | tail -4
step "honest files"
timeout 75 python3 experiments/perf/honest_sweep.py --device cuda --workers 10 > $OUT/honest.txt 2>&1
tail -4 $OUT/honest.txt
step "compromised-worker suite"
timeout 75 python3 experiments/perf/compromised_sweep.py --device cuda \
  --out $OUT/compromised.jsonl > $OUT/compromised.txt 2>&1
tail -14 $OUT/compromised.txt
step "cheat zoo, lint off"
timeout 70 python3 experiments/perf/cheat_sweep.py --device cuda --workers 10 --ungated \
  > $OUT/cheats.txt 2>&1
tail -4 $OUT/cheats.txt
step done
