"""rushhour: scenarios."""
