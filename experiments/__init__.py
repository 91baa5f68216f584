"""rushhour: experiments."""
