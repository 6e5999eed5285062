"""Environment benchmark; same as ``corecraft bench env``."""

from corecraft.bench.env import main

if __name__ == "__main__":
    main()
