"""Scale benchmark; same as ``corecraft bench scale`` (pass ``--quick`` to skip the x100 world)."""

import sys

from corecraft.bench.scale import main

if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
