# Source this on a GPU box that has torch + triton but no network (the device tool's machine):
#   source experiments/perf/gpu_env.sh [WHEELHOUSE]
# installs ray, deap, openai (+ deps) from a wheelhouse built by shared/tools/device_wheelhouse.sh
# into the python3 that holds torch, puts this checkout on PYTHONPATH (`python3 -m evo`), and
# points KERNELEVO_BWRAP at the wheelhouse's bubblewrap (the candidate sandbox) if needed.
wheelhouse=${1:-.wheelhouse}
python3 -m pip install -q --no-index --find-links "$wheelhouse" ray deap openai pydantic pytest 2>&1 | grep -v -i warning
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# the candidate sandbox: the wheelhouse's bubblewrap when the box has none of its own
if ! command -v bwrap >/dev/null && [ -x "$wheelhouse/bwrap/bwrap" ]; then
  export KERNELEVO_BWRAP="$(cd "$wheelhouse/bwrap" && pwd)/bwrap"
fi
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
python3 -c "import torch, triton, ray; print('torch', torch.__version__, 'triton', triton.__version__, 'ray', ray.__version__, 'gpus', torch.cuda.device_count(), torch.cuda.get_device_name(0))"
