"""Stage limits of the shared interpreter fitness evaluator: tiny interpreter cases finish far below.

A module of its own (not conftest.py): `from conftest import ...` resolves to whichever
conftest pytest imported last, and tests/fixtures/external has one too.
"""

FITNESS_TEST_LIMITS = {"import_s": 10.0, "compile_s": 10.0, "check_s": 10.0, "bench_s": 30.0}
