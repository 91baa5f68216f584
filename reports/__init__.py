"""rushhour: reports."""
