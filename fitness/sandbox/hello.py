"""A trivial sandboxed program: `fitness.processes.jail.verify` runs it to prove the sandbox works."""

print("sandbox-ok", flush=True)
