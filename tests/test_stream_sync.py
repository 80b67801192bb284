"""The worker's spinning wake on `go` (`fitness.processes.stream_sync.spin_until`): its PTX is
loaded by the driver on a GPU only, so here Triton's own ptxas builds it for Hopper and the
resulting kernel is read back, to catch a kernel that would not load or would not spin."""

import subprocess

import pytest

from fitness.processes import stream_sync


def _ptxas() -> str:
    from triton import knobs

    tool = knobs.nvidia.ptxas
    path = getattr(tool, "path", None)
    if not path:
        pytest.skip("this Triton build ships no ptxas to build the spin kernel's PTX with")
    return path


def test_the_spin_kernel_builds_for_hopper_and_spins_on_a_volatile_read(tmp_path):
    source = tmp_path / "spin.ptx"
    source.write_bytes(stream_sync._SPIN_PTX)
    built = tmp_path / "spin.cubin"
    subprocess.run([_ptxas(), "-arch=sm_90", str(source), "-o", str(built)], check=True,
                   capture_output=True, timeout=60)
    assert b"spin_until" in built.read_bytes()  # the name `_spin_kernel` asks the driver for


def test_the_spin_kernel_reads_the_word_again_on_every_turn_of_its_loop():
    ptx = stream_sync._SPIN_PTX.decode()
    loop = ptx[ptx.index("SPIN:"):ptx.index("ret;")]
    # a plain load may be hoisted out of the loop and cached: the kernel would spin for ever
    assert "ld.volatile.global.u32" in loop and "bra SPIN" in loop
