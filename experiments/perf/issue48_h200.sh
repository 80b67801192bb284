#!/usr/bin/env bash
# Issue 48's measurements on the GPU box, `source`d from the repository root with the
# wheelhouse carried and, for `bench`, the parts of 8dd2dab that its fitness_bench runs
# unpacked in old8dd2dab/ (`mkdir old8dd2dab && git archive 8dd2dab benchmarks evo fitness
# operators experiments/perf/fitness_bench.py experiments/perf/machine_use.py | tar -x -C
# old8dd2dab`: 1.3 MB; the whole tree with the wheelhouse is past what a call carries, 64 MiB).
#   source experiments/perf/issue48_h200.sh STEP...
# STEPs, in the order given (seconds at most): loudclock (165: `clock` with the pools' workers'
# ends and start-ups not held off during a timing, `--quiet off`), loudbench (120: `bench`'s
# first part with `--quiet $QUIET`, off by default), warm (280: `clock` and `bench`'s first
# part with each case's graph launched once when captured, `--warm`), exposure (90: a kernel left running in another
# process against the fill), bisect (80: the judge's clock across two processes, no
# Evaluator, the child woken by its stream and by a host thread), clock (165: the judge's
# clock against events over every baseline), longer (180: the same with batches of up to 128
# runs, where BATCH_BYTES allows), compromised (150: the compromised-worker
# suite), unmeasured (150: the compromised files never scored on a GPU in their present form:
# c11, c05_finishes, c02_wakes), fused (240: c05_finishes beside its twin c12, the same one
# launch for every run with an honest `done`, and c11, twice), split (90: fitness_bench of this
# tree alone, 40 s of scoring, for the capture's parts), turn (320: the checker's turn queued
# before `go`: c05, c12 and c02 against their twins, then judge/events over every baseline), starts (60: a
# fresh worker's start from an empty Triton cache and from the first worker's builds), bench (190: fitness_bench, this tree cut at 65 s of scoring, its timed-case log and
# pmon read by slow_copies.py, then 8dd2dab in the same call), spares (120: fitness_bench with 10 spares), cheats (150:
# the cheat zoo with the lint off), honest (HONEST_S, 240: the honest files, resumed from
# HONEST_PREV's lines). `1`: exposure bisect clock compromised;
# `2`: bench cheats honest.
# Each step writes under $OUT as it goes and has its own time limit, so a call cut short
# keeps what finished.
source experiments/perf/gpu_env.sh .wheelhouse > $OUT/env.txt 2>&1
P=experiments/perf
bench="--device cuda --correct-per-task 4 --workers 10 --timeout 10 --skip-naive --no-repeat"
steps=()
for s in "$@"; do case $s in
  1) steps+=(exposure bisect clock compromised) ;;
  2) steps+=(bench cheats honest) ;;
  *) steps+=("$s") ;;
esac; done
quiet() { grep -v -i warn | cut -c1-${1:-300}; }
for s in "${steps[@]}"; do
  echo "== $s $(date +%T)"
  case $s in
  exposure)
    timeout 90 python3 $P/timeslice_probe.py --out $OUT/timeslice.jsonl 2>&1 | quiet 200 ;;
  bisect)
    timeout 40 python3 $P/judge_clock_bisect.py --out $OUT/bisect.jsonl 2>&1 | quiet
    echo "-- the child woken by a host thread that launches its runs (a shorter handoff?)"
    timeout 40 python3 $P/judge_clock_bisect.py --wake host --out $OUT/bisect_host.jsonl 2>&1 | quiet ;;
  clock)
    timeout 165 python3 $P/judge_clock_check.py --device cuda --workers 4 \
      --out $OUT/judge_clock.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600 ;;
  loudclock)  # the same without the pools' ends and start-ups held off (clock.QUIET False)
    timeout 165 python3 $P/judge_clock_check.py --device cuda --workers 4 --quiet off \
      --out $OUT/judge_clock_loud.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600 ;;
  loudbench)  # fitness_bench with --quiet $QUIET, off by default (no 8dd2dab)
    q=${QUIET:-off}
    timeout 120 python3 $P/fitness_bench.py $bench --max-wall-s 65 --quiet $q \
      --cases-out $OUT/bench_quiet_${q}_cases.jsonl > $OUT/bench_quiet_$q.txt 2>&1
    grep -E "^  (cut at|timing runs|device held|one worker)|^pooled|false failures|^timing rep" \
      $OUT/bench_quiet_$q.txt | cut -c1-600
    python3 $P/slow_copies.py $OUT/bench_quiet_${q}_cases.jsonl > $OUT/slow_copies_quiet_$q.txt 2>&1
    grep -v pmon $OUT/slow_copies_quiet_$q.txt | cut -c1-300 | tail -20 ;;
  warm)  # each case's graph launched once when captured (clock.WARM): its first batches
    timeout 165 python3 $P/judge_clock_check.py --device cuda --workers 4 --warm \
      --out $OUT/judge_clock_warm.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600
    timeout 120 python3 $P/fitness_bench.py $bench --max-wall-s 65 --warm \
      --cases-out $OUT/bench_warm_cases.jsonl > $OUT/bench_warm.txt 2>&1
    grep -E "^  (cut at|timing runs|device held|one worker)|^pooled|false failures|^timing rep" \
      $OUT/bench_warm.txt | cut -c1-600
    python3 $P/slow_copies.py $OUT/bench_warm_cases.jsonl > $OUT/slow_copies_warm.txt 2>&1
    tail -1 $OUT/slow_copies_warm.txt ;;
  longer)
    timeout 180 python3 $P/judge_clock_check.py --device cuda --workers 4 --max-runs 128 \
      --out $OUT/judge_clock_128.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600 ;;
  compromised)
    timeout 150 python3 $P/compromised_sweep.py --device cuda \
      --out $OUT/compromised.jsonl > $OUT/compromised.txt 2>&1
    tail -14 $OUT/compromised.txt | cut -c1-300 ;;
  unmeasured)
    timeout 150 python3 $P/compromised_sweep.py --device cuda --only c11 --only c05_finishes \
      --only c02_wakes --out $OUT/compromised_unmeasured.jsonl > $OUT/compromised_unmeasured.txt 2>&1
    tail -6 $OUT/compromised_unmeasured.txt | cut -c1-300 ;;
  fused)
    for pass in 1 2; do  # twice: the spread of the one-launch files' ratios, call to call
      timeout 120 python3 $P/compromised_sweep.py --device cuda --only c05_finishes --only c12 \
        --only c11 --out $OUT/compromised_fused.jsonl > $OUT/compromised_fused_$pass.txt 2>&1
      tail -5 $OUT/compromised_fused_$pass.txt | cut -c1-300
    done ;;
  turn)  # the checker's turn queued before `go` (clock.TURN = "go"): the early `done`s, then events
    timeout 150 python3 $P/compromised_sweep.py --device cuda --turn go --only c05 --only c12 \
      --only c02 --out $OUT/compromised_turn_go.jsonl > $OUT/compromised_turn_go.txt 2>&1
    tail -9 $OUT/compromised_turn_go.txt | cut -c1-300
    timeout 165 python3 $P/judge_clock_check.py --device cuda --workers 4 --turn go \
      --out $OUT/judge_clock_turn_go.jsonl 2>&1 | grep -v -i warn | tail -3 | cut -c1-600 ;;
  split)
    timeout 90 python3 $P/fitness_bench.py $bench --max-wall-s 40 > $OUT/bench_split.txt 2>&1
    grep -E "^  (cut at|requests \(count)|^pooled" $OUT/bench_split.txt | cut -c1-3000 ;;
  bench)
    timeout 120 python3 $P/fitness_bench.py $bench --max-wall-s 65 --cases-out $OUT/bench_cases.jsonl \
      > $OUT/bench_new.txt 2>&1
    grep -E "^  (cut at|timing runs|device held|one worker|copies of)|^pooled|false failures|^timing rep" \
      $OUT/bench_new.txt | cut -c1-900
    python3 $P/slow_copies.py $OUT/bench_cases.jsonl > $OUT/slow_copies.txt 2>&1
    grep -v pmon $OUT/slow_copies.txt | cut -c1-300 | tail -20
    echo "-- 8dd2dab"
    (cd old8dd2dab && PYTHONPATH=$PWD timeout 70 python3 experiments/perf/fitness_bench.py $bench) \
      > $OUT/bench_old.txt 2>&1
    grep -E "^pooled|false failures" $OUT/bench_old.txt ;;
  spares)  # fitness_bench with a spare worker starting beside every lent one (leases waited
    # 128 s for fresh workers' start-ups at the default's half, RESULTS.md §35)
    timeout 120 python3 $P/fitness_bench.py $bench --max-wall-s 65 --spares 10 \
      --cases-out $OUT/bench_spares_cases.jsonl > $OUT/bench_spares.txt 2>&1
    grep -E "^  (cut at|timing runs|device held|one worker)|^pooled|false failures|^timing rep" $OUT/bench_spares.txt | cut -c1-400
    python3 $P/slow_copies.py $OUT/bench_spares_cases.jsonl > $OUT/slow_copies_spares.txt 2>&1
    tail -1 $OUT/slow_copies_spares.txt ;;
  starts)  # a fresh worker's start, step by step: from an empty Triton cache, then from
    # what the zygote's first worker built (RESULTS.md §38)
    timeout 60 python3 $P/worker_start.py --device cuda --starts 3 > $OUT/worker_start.txt 2>&1
    grep -E "^start|^a first|whole start|first Triton launch|device context" $OUT/worker_start.txt | cut -c1-200 ;;
  cheats)
    timeout 150 python3 $P/cheat_sweep.py --device cuda --workers 10 --ungated > $OUT/cheats.txt 2>&1
    tail -4 $OUT/cheats.txt | cut -c1-300 ;;
  honest)
    # HONEST_PREV: an earlier call's honest_lines.txt, resumed (its files skipped)
    [ -n "$HONEST_PREV" ] && cp "$HONEST_PREV" $OUT/honest_lines.txt && chmod u+w $OUT/honest_lines.txt
    timeout ${HONEST_S:-240} python3 $P/honest_sweep.py --device cuda --workers 10 \
      --out $OUT/honest_lines.txt > $OUT/honest.txt 2>&1
    grep -c "^OK" $OUT/honest_lines.txt; grep "^BAD" $OUT/honest_lines.txt | cut -c1-300; tail -1 $OUT/honest.txt ;;
  *) echo "unknown step $s (loudclock loudbench warm exposure bisect clock longer compromised unmeasured fused turn split starts bench spares cheats honest, 1, 2)" ;;
  esac
done
echo "== done $(date +%T)"
# a call brings back 8 files at most: what this call wrote goes back as one archive, out.tgz
# (extract it where the call's data is kept; a call cut short at its limit leaves them loose)
(cd $OUT && tar czf /tmp/kernelevo-out.tgz . && find . -mindepth 1 -delete && mv /tmp/kernelevo-out.tgz out.tgz)
