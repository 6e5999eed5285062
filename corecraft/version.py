"""CoreCraft's version, in one place (read by hatchling for the wheel and by the package)."""

VERSION = "0.2.0"
