"""Where the tests find the real external suites: one setting, KERNELEVO_EXTERNAL.

It names a folder holding checkouts of GEAK-eval/ and KernelBench/; unset, the folder is
../shared/external beside the repository. A test that needs a suite calls `suite(name)`: the
checkout's path, or the test is skipped with a reason naming the missing folder and the setting."""

import os
import pathlib

import pytest

VARIABLE = "KERNELEVO_EXTERNAL"
ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "external"


def folder():
    """The folder the setting names (the default when unset or empty)."""
    value = os.environ.get(VARIABLE)
    return pathlib.Path(value).expanduser().resolve() if value else DEFAULT


def suite(name):
    """The checkout of `name` (GEAK-eval or KernelBench) in that folder, or a skip saying why."""
    path = folder() / name
    if not path.is_dir():
        pytest.skip(f"external suite {name} absent: no folder {path} "
                    f"(set {VARIABLE} to a folder holding a {name} checkout; see README.md, Tests)")
    return path
