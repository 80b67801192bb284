"""Measuring, on both sides of the boundary: timing and its rules, compile-only launches,
launch counting."""
