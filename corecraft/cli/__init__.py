"""The ``corecraft`` command line (typer): one sub-app per noun."""
