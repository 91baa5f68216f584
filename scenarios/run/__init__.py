"""One drill from boot to report: server, load, chaos timeline, scraper, events, teardown."""
