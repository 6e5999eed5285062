"""Adapters that plug CoreCraft into training libraries. Each is an optional extra, imported only
when used, so ``import corecraft`` never needs a trainer library:

- :mod:`corecraft.integrations.trl_env`: an ``environment_factory`` for TRL's ``GRPOTrainer``
  (``pip install 'corecraft[trl]'``).
- :mod:`corecraft.integrations.verifiers_env`: ``vf.load_environment("corecraft")``
  (``pip install 'corecraft[verifiers]'``).
- :mod:`corecraft.integrations.ray_rollouts`: GRPO groups across Ray actors (``pip install 'corecraft[ray]'``).
"""
