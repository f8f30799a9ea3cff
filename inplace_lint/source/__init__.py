"""Source files: which files to check, how to read and decode them (the one reader), and ``# noqa``."""
