"""How new candidates are made: LLM roles (GEAK's generator, reflector, optimizer, crossover) and offline operators."""
