# Source this on a GPU box that has torch + triton but no network (the device tool's machine):
#   source experiments/perf/gpu_env.sh [WHEELHOUSE]
# installs the project's requirements (ray, deap, openai, ... and pytest) from a wheelhouse that
# `make wheelhouse DIR=WHEELHOUSE` built on a machine with network (default .wheelhouse) into
# the python3 that holds torch, puts this checkout on PYTHONPATH (`python3 -m evo`), and points
# KERNELEVO_BWRAP at the wheelhouse's bubblewrap (the candidate sandbox) if the box has none.
# PYTHONPATH rather than the wheelhouse's kernelevo wheel: the code that runs is this checkout's
# as it stands, with no reinstall after an edit (the wheel is for a box with no checkout).
wheelhouse=${1:-.wheelhouse}
if [ -f "$wheelhouse/requirements.txt" ]; then
  python3 -m pip install -q --no-index --find-links "$wheelhouse" -r "$wheelhouse/requirements.txt" 2>&1 | grep -v -i warning
else
  echo "$wheelhouse/requirements.txt is missing: build the wheelhouse with 'make wheelhouse DIR=$wheelhouse'" >&2
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the candidate sandbox: the wheelhouse's bubblewrap (it finds its libraries beside it, through
# its RPATH $ORIGIN) when the box has none of its own
if ! command -v bwrap >/dev/null && [ -x "$wheelhouse/bwrap/bwrap" ]; then
  export KERNELEVO_BWRAP="$(cd "$wheelhouse/bwrap" && pwd)/bwrap"
fi
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
python3 -c "import torch, triton, ray; print('torch', torch.__version__, 'triton', triton.__version__, 'ray', ray.__version__, 'gpus', torch.cuda.device_count(), torch.cuda.get_device_name(0))"
