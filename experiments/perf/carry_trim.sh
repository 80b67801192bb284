#!/usr/bin/env bash
# Fits an issue-50 device call into the device tool's 64 MiB (the working tree, the wheelhouse
# and .external travel together): `hold DIR` moves what the call does not read out of the tree
# into DIR, `restore DIR` puts it back; run both from the repository root.
#   bash experiments/perf/carry_trim.sh hold /tmp/hold     # then the device call
#   bash experiments/perf/carry_trim.sh restore /tmp/hold
# Held: every data folder but issue 50's, the issue-50 folders' files but their rows
# (geak_timing.jsonl, all that --resume reads), and .external's ROCm suite and MI300X golden
# results (the calls run TritonBench-revised only, with --no-rocm), and the wheelhouse's
# kernelevo and py-spy wheels, py-spy out of its requirements.txt (KEEP_PYSPY=1 keeps it).
# Kept: the small files (the llm_corpus verdicts Table 2 reads by default).
# `hold` prints the bytes that will travel; the wheelhouse is named by WHEELHOUSE.
set -euo pipefail
shopt -s nullglob
what=${1:?hold or restore}; dir=${2:?a folder outside the repository}
data=experiments/perf/data
perf_g=.external/GEAK-eval/geak_eval/data/TritonBench/performance_metrics/perf_G
wh=${WHEELHOUSE:-.wheelhouse}
case $what in
  hold)
    mkdir -p "$dir/data" "$dir/rows" "$dir/rocm" "$dir/golden"
    for path in "$data"/*; do
      name=$(basename "$path")
      if [[ -d $path && $name == issue50_* ]]; then
        for file in "$path"/*; do
          [[ $(basename "$file") == geak_timing.jsonl ]] && continue
          mkdir -p "$dir/rows/$name"; mv "$file" "$dir/rows/$name/"
        done
      elif [[ -d $path || $(stat -c %s "$path") -gt 65536 ]]; then
        mv "$path" "$dir/data/"
      fi
    done
    [ -d .external/GEAK-eval/geak_eval/data/ROCm ] && mv .external/GEAK-eval/geak_eval/data/ROCm "$dir/rocm/"
    [ -d "$perf_g/golden_results" ] && mv "$perf_g/golden_results" "$dir/golden/"
    # the wheels no call installs from the wheelhouse: the project's own (the tree travels on
    # PYTHONPATH) and py-spy (the diagnose extra: KEEP_PYSPY=1 keeps it, for stall_stacks.sh)
    mkdir -p "$dir/wheels"
    held_wheels=("$wh"/kernelevo-*.whl)
    [ -n "${KEEP_PYSPY:-}" ] || held_wheels+=("$wh"/py_spy-*.whl)
    for wheel in "${held_wheels[@]}"; do mv "$wheel" "$dir/wheels/"; done
    if [ -z "${KEEP_PYSPY:-}" ] && [ -f "$wh/requirements.txt" ]; then
      cp "$wh/requirements.txt" "$dir/wheels/requirements.txt"
      grep -v '^py-spy' "$dir/wheels/requirements.txt" > "$wh/requirements.txt"
    fi
    # tracked files held out are listed too: du skips them (and would fail the pipe)
    tree_kb=$(set +o pipefail; git ls-files -co --exclude-standard -z | du -ck --files0-from=- 2>/dev/null | tail -1 | cut -f1)
    other_kb=$(du -sk "$wh" .external | awk '{ s += $1 } END { print s }')
    echo "to travel: $(( tree_kb + other_kb )) KiB of 65536 (tree $tree_kb, wheelhouse and .external $other_kb)"
    ;;
  restore)
    [ -d "$dir/data" ] && find "$dir/data" -mindepth 1 -maxdepth 1 -exec mv {} "$data/" \;
    for held in "$dir"/rows/*; do
      [ -d "$held" ] || continue
      find "$held" -mindepth 1 -maxdepth 1 -exec mv {} "$data/$(basename "$held")/" \;
      rmdir "$held"
    done
    [ -d "$dir/rocm/ROCm" ] && mv "$dir/rocm/ROCm" .external/GEAK-eval/geak_eval/data/
    [ -d "$dir/golden/golden_results" ] && mv "$dir/golden/golden_results" "$perf_g/"
    if [ -d "$dir/wheels" ]; then
      find "$dir/wheels" -mindepth 1 -maxdepth 1 -exec mv {} "$wh/" \;
      rmdir "$dir/wheels"
    fi
    git status --short | head
    ;;
  *) echo "hold or restore, not $what" >&2; exit 2 ;;
esac
