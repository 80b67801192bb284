"""Tasks: the built-in suite and loaders for external suites."""
