"""Test set-up. TRITON_INTERPRET must be set before any @triton.jit is decorated."""

import os

os.environ["TRITON_INTERPRET"] = "1"
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
