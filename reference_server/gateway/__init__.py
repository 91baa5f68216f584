"""The gateway: admission, caching, routing and supervision in front of the nodes."""
