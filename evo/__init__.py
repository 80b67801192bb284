"""The engine: config, campaign driver, population actors, results, analysis, CLI."""
