#!/usr/bin/env bash
# Where a stalled evaluation waits (issue 49): runs `evo eval` on each reply file in the
# background, and at each of AT seconds appends to $OUT/stacks_<task>.txt what every process
# of each run is doing: the process forest with states and kernel wait channels, the GPU's
# compute apps, and every Python process's stack (py-spy, from the wheelhouse's `diagnose`
# extra; the sandboxed workers' too where the box lets root read them). Each run is killed at
# KILL_S.
#   OUT=dir TASKS="int8_dequant_matmul chunk_retention_ops" REPLIES=dir \
#     bash experiments/perf/stall_stacks.sh
# REPLIES holds <task>.py (issue49_replies.py --write); SUITE_PATH the suite (default the
# issue's two tasks); DEVICE cuda; LIMIT_S every stage's limit (20); AT "35 70 100";
# KILL_S 120; PYTHON python3. Rehearsed on the interpreter with a built-in task:
#   OUT=/tmp/s DEVICE=interpreter TASKS=vector_add REPLIES=dir SUITE=builtin AT="8 16" KILL_S=30 ...
set -u
DEVICE=${DEVICE:-cuda}
TASKS=${TASKS:-"int8_dequant_matmul chunk_retention_ops"}
SUITE=${SUITE:-tritonbench-revised}
SUITE_PATH=${SUITE_PATH:-experiments/perf/data/issue49/tritonbench}
LIMIT_S=${LIMIT_S:-20}
AT=${AT:-"35 70 100"}
KILL_S=${KILL_S:-120}
py=${PYTHON:-python3}
# pip puts py-spy beside the interpreter, which may not be on PATH
pyspy=$(command -v py-spy || echo "$(dirname "$(command -v "$py")")/py-spy")
[ -x "$pyspy" ] || echo "py-spy is missing (the wheelhouse's diagnose extra): no stacks" >&2
suite_args=(--suite "$SUITE")
if [ "$SUITE" != builtin ]; then suite_args+=(--path "$SUITE_PATH"); fi

declare -A pid_of
started=$(date +%s)
for task in $TASKS; do
  ( exec timeout -s KILL "$KILL_S" $py -m evo eval "$task" "$REPLIES/$task.py" "${suite_args[@]}" \
      --device "$DEVICE" --timeout "$LIMIT_S" > "$OUT/eval_$task.txt" 2>&1 ) &
  pid_of[$task]=$!
done

# every descendant of a process, itself included
tree() { local all=$1 frontier=$1 next
  while [ -n "$frontier" ]; do
    next=$(for p in $frontier; do pgrep -P "$p"; done | tr '\n' ' ')
    all="$all $next"; frontier=$next
  done; echo $all; }

running() { for task in $TASKS; do kill -0 "${pid_of[$task]}" 2>/dev/null && return 0; done; return 1; }
for at in $AT; do
  # until the sample's time or every run's end, whichever comes first
  while running && [ $(( $(date +%s) - started )) -lt "$at" ]; do sleep 1; done
  running || break
  sleep $(( started + at - $(date +%s) > 0 ? started + at - $(date +%s) : 0 ))
  echo "== ${at} s"
  for task in $TASKS; do
    pids=$(tree "${pid_of[$task]}")
    file="$OUT/stacks_${task}.txt"  # one file a run: the device tool brings back few files
    { echo "# $task at ${at} s: $(tail -n 1 "$OUT/eval_$task.txt" 2>/dev/null | cut -c1-200)"
      ps -o pid,ppid,pgid,stat,wchan:32,etimes,rss,args --forest -p "$(echo $pids | tr ' ' ,)" 2>&1 | cut -c1-300
      if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; fi
      for p in $pids; do
        if [[ "$(cat /proc/$p/comm 2>/dev/null)" == python* ]]; then
          echo "## py-spy dump --pid $p ($(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-160))"
          timeout 15 "$pyspy" dump --pid "$p" 2>&1 | cut -c1-300
        fi
      done
    } >> "$file" 2>&1
    echo "$task: $(echo $pids | wc -w) processes -> $(basename "$file")"
  done
done
wait
for task in $TASKS; do
  echo "$task: $(( $(date +%s) - started )) s at most; $(tail -n 1 "$OUT/eval_$task.txt" | cut -c1-200)"
done
