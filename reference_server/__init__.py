"""rushhour: reference_server."""
