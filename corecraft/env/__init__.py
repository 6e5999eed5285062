"""The Gymnasium environment: spaces, action parsing, the env class and GRPO-group helpers."""
