"""Tasks in YAML: the model, the loader/checker, setup, and splits."""
