"""Where a timed run's outputs land in its region (`fitness.sandbox.timed.Arena.place`): the
judge reads them there, so an output the run made elsewhere is copied in, over the run's
dead temporaries when the region is full of them. On the CPU, with the region a host tensor:
the placement is the same arithmetic as on a GPU."""

import pytest
import torch

from fitness.judge.timed_batch import placed_outputs, region_outputs
from fitness.processes.protocol import ProtocolError
from fitness.processes.shared_memory import ALIGN_BYTES
from fitness.sandbox.timed import Arena


def _region(nbytes: int) -> torch.Tensor:
    return torch.zeros(nbytes, dtype=torch.uint8)


def test_an_output_made_outside_a_region_full_of_temporaries_is_placed_over_them():
    # fused_rwkv6_kernel: `o = q.new_empty(NK, ...)` took the region, `o.sum(0)` came from
    # the allocator, and the region had no room left for its copy: the judge read None
    region = _region(1024)
    arena = Arena(region)
    partials_at = arena.take(768)  # 3 x 64 fp32
    partials = region[partials_at:partials_at + 768].view(torch.float32).view(3, 64)
    partials.copy_(torch.arange(192, dtype=torch.float32).view(3, 64))
    summed = partials.sum(0)  # outside the region, as the allocator's
    specs = arena.place([summed])
    assert specs is not None and specs[0]["at"] == 0
    [read] = region_outputs(region, specs)
    assert torch.equal(read, summed)


def test_an_output_already_in_the_region_keeps_its_place_and_the_copies_go_after_it():
    region = _region(4 * ALIGN_BYTES)
    arena = Arena(region)
    out_at = arena.take(256)
    out = region[out_at:out_at + 256].view(torch.float32)
    out.copy_(torch.full((64,), 7.0))
    arena.take(2 * ALIGN_BYTES)  # a temporary after it, dead once the run returns
    state = torch.full((32,), -3.0)  # made outside
    specs = arena.place([out, state])
    assert [spec["at"] for spec in specs] == [0, -(-256 // ALIGN_BYTES) * ALIGN_BYTES]
    first, second = region_outputs(region, specs)
    assert torch.equal(first, torch.full((64,), 7.0)) and torch.equal(second, state)


def test_outputs_past_what_the_region_holds_are_unreadable():
    arena = Arena(_region(256))
    assert arena.place([torch.ones(128)]) is None  # 512 bytes


def test_an_argument_written_in_place_is_named_by_its_position_and_read_from_the_lent_inputs():
    # adam_update_triton writes its parameters and moments in place and hands them back: a
    # copy of each into the region was inside the clock, 2.0x GEAK-eval's do_bench
    region = _region(4 * ALIGN_BYTES)
    arena = Arena(region)
    params, grads = torch.ones(64), torch.full((64,), 0.5)
    params.sub_(grads)  # the run's in-place update of its lent input
    out_at = arena.take(256)
    made = region[out_at:out_at + 256].view(torch.float32)
    made.copy_(grads * 2)
    specs = arena.place([made, params], [params, grads, 3])
    assert specs[1] == {"input": 0} and arena.used == 256  # nothing copied
    # the judge reads it in its snapshot of the lent inputs, not in the region
    snapshot = [params.clone(), grads.clone(), 3]
    first, second = placed_outputs(region, snapshot, specs)
    assert torch.equal(first, grads * 2) and second is snapshot[0]


def test_a_view_of_a_lent_input_is_copied_into_the_region_as_any_output_made_elsewhere():
    region = _region(4 * ALIGN_BYTES)
    arena = Arena(region)
    lent = torch.arange(64, dtype=torch.float32)
    specs = arena.place([lent[::2]], [lent])
    assert "at" in specs[0]
    [read] = placed_outputs(region, [lent], specs)
    assert torch.equal(read, lent[::2])


@pytest.mark.parametrize("spec", [{"input": 2}, {"input": 1}, {"input": -1}, {"input": True},
                                  {"input": "0"}])
def test_an_output_naming_no_lent_tensor_is_unreadable(spec):
    # position 1 is a scalar argument, 2 is past the run's arguments
    with pytest.raises(ProtocolError, match="lent input"):
        placed_outputs(_region(256), [torch.ones(4), 7], [spec])
