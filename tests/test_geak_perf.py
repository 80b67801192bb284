"""GEAK-eval's TritonBench-revised performance files: found beside the kernel folder,
prepared for the sandbox (what reaches outside it dropped), and refused with the reason
when the worker could not run them as GEAK-eval does."""

import json
import pathlib
import subprocess
import sys

import pytest

from benchmarks import registry
from benchmarks.external import common, geak_perf
from tests.external_suites import suite
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "external"

_USABLE = '''import sys
sys.path.append('..')
from add_one import add_one
from geak_eval.perf.performance_utils import Performance_Metrics
from geak_eval.data.TritonBench.data.TritonBench_G_v1.add_one import add_one as add_one_ref
import torch


class performance_metrics(Performance_Metrics):
    def get_input_tensors(self):
        self.input_tensors = [torch.rand(8)]

    def to_cuda(self, input_tensor):
        return input_tensor.cuda()

    def call_op(self, input_tensor):
        return add_one(input_tensor)


if __name__ == '__main__':
    performance_metrics().run_benchmark()
'''


def test_prepare_drops_what_reaches_outside_the_worker_folder_and_keeps_the_rest():
    prepared = geak_perf.prepare(_USABLE, "add_one", "add_one_perf.py")
    assert "sys.path" not in prepared and "geak_eval.data" not in prepared and "__main__" not in prepared
    assert "from add_one import add_one" in prepared
    assert "from geak_eval.perf.performance_utils import Performance_Metrics" in prepared
    compile(prepared, "prepared", "exec")


@pytest.mark.parametrize("broken, reason", [
    (_USABLE.replace("class performance_metrics", "class other_metrics"), "defines no class 'performance_metrics'"),
    (_USABLE.replace("def to_cuda", "def to_device"), "lacks to_cuda"),
    (_USABLE.replace("from add_one import add_one\n", ""), "never imports the kernel module 'add_one'"),
    (_USABLE.replace("import torch", "import torch("), "not valid Python"),
])
def test_unusable_performance_file_is_refused_with_the_reason(broken, reason):
    with pytest.raises(geak_perf.UnusablePerfFile, match=reason.replace("(", r"\(")):
        geak_perf.prepare(broken, "add_one", "add_one_perf.py")


def test_fixture_tasks_carry_their_performance_file_or_say_why_not():
    tasks = registry.load("tritonbench-revised", str(FIXTURES / "tritonbench"))
    timed = tasks.get("scale_shift")
    assert timed.untimed_reason == "" and "class performance_metrics" in timed.perf_harness
    untimed = tasks.get("row_max")
    assert untimed.perf_harness is None
    assert untimed.untimed_reason.startswith("not timed: no performance file row_max_perf.py")


def test_every_geak_eval_tritonbench_task_but_one_has_a_usable_performance_file():
    tasks = registry.load("tritonbench-revised", str(suite("GEAK-eval"))).tasks()
    assert len(tasks) == 184
    untimed = {task.name: task.untimed_reason for task in tasks if task.untimed_reason}
    assert list(untimed) == ["apply_penalty"]  # its call_op times the reference (GEAK-eval's slip)
    assert "call_op uses apply_penalty_ref" in untimed["apply_penalty"]


def test_evo_tasks_json_says_which_tasks_are_timed_and_why_not():
    listed = subprocess.run([sys.executable, "-m", "evo", "tasks", "--suite", "tritonbench-revised",
                             "--path", str(FIXTURES / "tritonbench"), "--json"],
                            capture_output=True, text=True, timeout=120, check=True)
    tasks = {task["name"]: task for task in json.loads(listed.stdout)["tasks"]}
    assert tasks["scale_shift"]["timed"] is True and tasks["scale_shift"]["untimed_reason"] == ""
    assert tasks["row_max"]["timed"] is False and "row_max_perf.py" in tasks["row_max"]["untimed_reason"]


def test_hip_libdevice_is_named_portably_so_geak_eval_edits_run_on_nvidia_too():
    source = ("import triton.language as tl\nfrom triton.language.extra.hip.libdevice import isinf\n"
              "y = tl.extra.hip.libdevice.pow(x, 2)\n")
    portable = common.portable_libdevice(source)
    assert "hip" not in portable
    assert "from triton.language.extra.libdevice import isinf" in portable
    assert "tl.extra.libdevice.pow(x, 2)" in portable
    tasks = registry.load("tritonbench-revised", str(suite("GEAK-eval"))).tasks()
    assert [task.name for task in tasks if "cuda" not in task.runnable_on] == []


def test_a_performance_file_whose_call_op_calls_the_reference_is_refused():
    # GEAK-eval's apply_penalty_perf.py defines call_op twice, the second calling the reference
    twice = _USABLE.replace("    def call_op(self, input_tensor):\n        return add_one(input_tensor)\n",
                            "    def call_op(self, input_tensor):\n        return add_one(input_tensor)\n\n"
                            "    def call_op(self, input_tensor):\n        return add_one_ref(input_tensor)\n")
    with pytest.raises(geak_perf.UnusablePerfFile, match="its call_op uses add_one_ref, the reference"):
        geak_perf.prepare(twice, "add_one", "add_one_perf.py")
