#!/usr/bin/env bash
# Issue 13 item 4 in one device call of at most 10 minutes: the offline campaign over the
# whole built-in suite, torch's own timings of the same cases on the same GPU, and the report
# that joins them. Each step has its own time box and writes under OUTDIR as it goes, so a
# step cut short still leaves what it finished. Run from the repo root on a GPU box:
#   bash experiments/perf/suite_offline.sh OUTDIR
# Boxes in seconds, overridable from the environment:
#   GUARD_S=240    the campaign starts no generation after this (budget.max_wall_seconds,
#                  counted from the campaign's start, after Ray is up); one generation of
#                  45 candidates is ~90 s at 30/min, so the campaign ends by ~6 min
#   CAMPAIGN_S=380 hard stop of `evo run` (the rows of finished generations stay)
#   TORCH_S=140    torch_baselines.py --max-seconds: eager, then compile default, then
#                  max-autotune-no-cudagraphs, as far as the time goes
set -uo pipefail
out=${1:?usage: bash experiments/perf/suite_offline.sh OUTDIR}
source experiments/perf/gpu_env.sh .wheelhouse
mkdir -p "$out"
run="$out/suite_offline"
step() { echo "== $1 ($(date +%T))"; }

step "campaign: experiments/suite_offline.toml"
timeout -s INT -k 20 "${CAMPAIGN_S:-380}" python3 -m evo run experiments/suite_offline.toml \
  --out "$run" --set "budget.max_wall_seconds=${GUARD_S:-240}" 2>&1 | grep -v -i warn \
  | tail -40 | tee "$out/campaign.txt"
if [ "${PIPESTATUS[0]}" -ge 124 ]; then  # cut at its box: its Ray must not hold the GPU
  echo "campaign cut at ${CAMPAIGN_S:-380} s"; ray stop --force >/dev/null 2>&1
fi

step "torch timings: eager, compile default, max-autotune-no-cudagraphs"
timeout -k 10 $(( ${TORCH_S:-140} + 40 )) python3 experiments/perf/torch_baselines.py \
  --out "$run/torch_timings.parquet" --jobs 8 --case-timeout-s 60 \
  --max-seconds "${TORCH_S:-140}" 2>&1 | grep -v -i warn | tee "$out/torch_timings.txt"

step "report"
python3 -m evo report "$run" > "$out/report.txt" 2>&1
python3 -m evo report "$run" --json > "$out/report.json" 2>"$out/report_json.err"
sed -n '/Best kernel vs torch/,$p' "$out/report.txt"
step "done"
