"""rushhour: traffic_models."""
