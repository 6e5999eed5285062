"""Grading: transcript + the episode's world and its changes + rubric -> reward, pass and a per-criterion breakdown."""
