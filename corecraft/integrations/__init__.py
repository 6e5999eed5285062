"""Adapters that plug CoreCraft into training and evaluation frameworks.

Each adapter is an optional extra and is imported only when used, so ``import corecraft`` never
needs a trainer library: :mod:`corecraft.integrations.verifiers_env` needs ``corecraft[verifiers]``.
"""
