"""Ray rollouts benchmark (needs corecraft[ray]); same as ``corecraft bench ray``."""

from corecraft.bench.ray_rollouts import main

if __name__ == "__main__":
    main()
