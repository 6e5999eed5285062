"""Grading benchmark; same as ``corecraft bench grade``."""

from corecraft.bench.grade import main

if __name__ == "__main__":
    main()
