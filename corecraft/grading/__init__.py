"""Grading: transcript + start/end worlds + rubric -> reward, pass and a per-criterion breakdown."""
