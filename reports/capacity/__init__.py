"""Capacity search results: one step judged at a planned look (`stepstats`) and capacity.html with
its knee curve (`page`)."""
