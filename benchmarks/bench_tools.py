"""Tool-latency benchmark; same as ``corecraft bench tools``."""

from corecraft.bench.tools import main

if __name__ == "__main__":
    main()
