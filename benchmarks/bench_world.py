"""World benchmark; same as ``corecraft bench world``."""

from corecraft.bench.world import main

if __name__ == "__main__":
    main()
