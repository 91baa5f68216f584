"""The `rushhour` command line: one module per sub-command; `main` is the console script."""
