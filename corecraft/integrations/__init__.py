"""Adapters to trainers and rollout frameworks, each behind its own optional extra (``corecraft[ray]``…)."""
