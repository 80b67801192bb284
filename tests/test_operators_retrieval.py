"""One-shot retrieval, knowledge sheets and code extraction."""

import dataclasses

import pytest

from benchmarks import registry
from operators import knowledge, parsing, retrieval

INDEX = retrieval.default_index()


@pytest.mark.parametrize("task", registry.load().tasks(suite="builtin"), ids=lambda t: t.name)
def test_retrieval_never_returns_the_task_baseline(task):
    best = INDEX.best(task)
    assert best is not None and best.name != task.entry_point
    assert not retrieval.is_task_baseline(best, task)


def test_an_exemplar_equal_to_the_baseline_is_excluded():
    relu = next(e for e in INDEX.exemplars if e.name == "relu")
    task = dataclasses.replace(registry.load().get("vector_add"), entry_point="elementwise",
                               baseline_source=relu.source.replace("# the last block runs past the end", ""))
    assert relu not in INDEX.ranked(task)
    assert len(INDEX.ranked(task)) == len(INDEX.exemplars) - 1


def test_retrieval_is_by_code_similarity():
    matmul = registry.load().get("matmul")
    assert INDEX.best(matmul).name == "matmul_tiled"
    cumsum = registry.load().get("cumsum")
    assert INDEX.best(cumsum).name == "cumsum_rows"
    # a per-shape table repeats BLOCK_M/BLOCK_N dozens of times: it must not pull toward matmul
    transpose = registry.load().get("transpose")
    assert INDEX.best(transpose).name == "transpose_2d"


def test_code_tokens_split_dotted_and_snake_names():
    assert retrieval.code_tokens("tl.sum(row_max, axis=0)") == ["tl.sum", "tl", "sum", "row_max", "row", "max",
                                                                 "axis"]


@pytest.mark.parametrize("device, backend, expected", [
    ("NVIDIA H100 80GB HBM3", "cuda", "3.35 TB/s"),
    ("NVIDIA H200", "cuda", "4.8 TB/s"),
    ("AMD Instinct MI300X", "rocm", "5.3 TB/s"),
    ("AMD Instinct MI250X/MI250", "rocm", "1.6 TB/s"),
    ("cpu", "interpreter", "CPU interpreter"),
])
def test_sheet_follows_the_device(device, backend, expected):
    sheet = knowledge.sheet_for(device, backend)
    assert expected in sheet and "Coalescing" in sheet


def test_amd_knobs_are_named_on_rocm_and_refused_on_cuda():
    rocm = knowledge.sheet_for("AMD Instinct MI300X", "rocm")
    cuda = knowledge.sheet_for("NVIDIA H100 80GB HBM3", "cuda")
    assert "Wavefront = 64" in rocm and "`waves_per_eu`" in rocm and "64 KB of LDS" in rocm
    assert "Warp = 32" in cuda and "never pass them" in cuda


def test_unknown_gpu_gets_no_numbers_and_bad_backend_is_an_error():
    sheet = knowledge.sheet_for("Mystery GPU 9000", "cuda")
    assert "TB/s" not in sheet and "num_warps" in sheet
    with pytest.raises(ValueError, match="unknown backend 'metal'"):
        knowledge.sheet_for("x", "metal")


def test_extract_takes_the_code_and_keeps_the_notes():
    text = "Strategy: tiles\nBigger tiles.\n\n```python\ndef f(x):\n    return x\n```\nDone."
    parsed = parsing.extract(text, "f")
    assert parsed.failure == "" and parsed.source == "def f(x):\n    return x\n"
    assert parsed.notes == "Strategy: tiles\nBigger tiles.\n\nDone."


def test_a_reply_with_no_fence_is_taken_whole_when_it_is_the_module_and_prose_is_not():
    # GEAK-eval's rule: TritonBench's recorded replies are bare code, with no fence
    bare = "import torch\n\ndef f(x):\n    return x\n"
    assert parsing.extract(bare, "f") == parsing.Parsed(bare, "")
    assert parsing.extract("I would use a larger block size.", "f").failure == "no_code_block: no ``` fence"
    assert parsing.extract("# Plan\nUse a larger block.", "f").failure.startswith("no_code_block")
    # bare code that is not the module fails as GEAK-eval fails it, with its own reason
    assert parsing.extract("def g(x):\n    return x\n", "f").failure.startswith("missing_entry_point")
    assert parsing.extract("import torch\ndef f(x:\n", "f").failure.startswith("syntax_error")


def test_extract_reports_syntax_errors_with_the_line():
    parsed = parsing.extract("```py\ndef f(x):\n    return (x\n```", "f")
    assert parsed.failure.startswith("syntax_error: line")
