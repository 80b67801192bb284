#!/usr/bin/env bash
# Issue 48's measurements in one device call (~9 min): `source`d on the GPU box from the
# repository root with the wheelhouse carried and 8dd2dab unpacked in old8dd2dab/
# (`mkdir old8dd2dab && git archive 8dd2dab | tar -x -C old8dd2dab`). Each step writes
# under $OUT as it goes and has its own time limit, so a call cut short keeps what finished.
source experiments/perf/gpu_env.sh .wheelhouse > $OUT/env.txt 2>&1
P=experiments/perf
bench="--device cuda --correct-per-task 4 --workers 10 --timeout 10 --skip-naive --no-repeat"
step() { echo "== $1 $(date +%T)"; }
step "the judge's clock against events, every baseline"
timeout 170 python3 $P/judge_clock_check.py --device cuda --workers 4 \
  --out $OUT/judge_clock.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600
step "fitness_bench, this tree"
timeout 130 python3 $P/fitness_bench.py $bench > $OUT/bench_new.txt 2>&1
grep -E "^  (100/|timing runs|device held)|^pooled|false failures" $OUT/bench_new.txt | cut -c1-400
step "fitness_bench, 8dd2dab"
(cd old8dd2dab && PYTHONPATH=$PWD timeout 75 python3 experiments/perf/fitness_bench.py $bench) \
  > $OUT/bench_old.txt 2>&1
grep -E "^pooled|false failures" $OUT/bench_old.txt
step "compromised-worker suite"
timeout 75 python3 $P/compromised_sweep.py --device cuda \
  --out $OUT/compromised.jsonl > $OUT/compromised.txt 2>&1
tail -14 $OUT/compromised.txt | cut -c1-300
step "cheat zoo, lint off"
timeout 70 python3 $P/cheat_sweep.py --device cuda --workers 10 --ungated \
  > $OUT/cheats.txt 2>&1
tail -4 $OUT/cheats.txt | cut -c1-300
step "honest files"
timeout 60 python3 $P/honest_sweep.py --device cuda --workers 10 > $OUT/honest.txt 2>&1
tail -4 $OUT/honest.txt | cut -c1-300
step done
