"""Final-reply matcher benchmark; same as ``corecraft bench reply``."""

from corecraft.bench.reply import main

if __name__ == "__main__":
    main()
