"""Adapters that plug CoreCraft into training libraries (each needs its own optional extra).

- :mod:`corecraft.integrations.trl_env`: an ``environment_factory`` for TRL's ``GRPOTrainer``
  (``pip install 'corecraft[trl]'``).
"""
