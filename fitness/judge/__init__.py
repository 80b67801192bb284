"""The trusted side: the static gate, the checker (inputs, references, comparison, baseline
timing) and the cascade that decides every verdict. Nothing here imports a candidate."""
