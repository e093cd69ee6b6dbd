"""Project-specific lint checks run by ``make lint`` (not part of the installed package)."""
