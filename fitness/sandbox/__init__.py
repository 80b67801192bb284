"""The untrusted side: everything that runs inside the sandbox, beside a candidate.

Nothing in this package decides a verdict. It loads a candidate, runs it on inputs the
trusted side wrote, writes the outputs back as raw bytes, and times it; what it reports
is evidence for an error message, checked and judged in `fitness.judge`.
"""
