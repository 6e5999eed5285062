"""Performance benchmarks behind ``corecraft bench``: figures and ratios, never pass/fail asserts."""
