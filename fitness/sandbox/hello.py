"""A trivial sandboxed program: `fitness.jail.verify` runs it to prove the sandbox works."""

print("sandbox-ok", flush=True)
