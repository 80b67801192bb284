"""`python -m evo ...` is the `evo` command, for machines where the console script is not installed."""

from evo.cli import app

app()
