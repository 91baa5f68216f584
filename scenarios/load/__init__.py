"""Load generation: Locust in a subprocess firing the schedule open-loop (or closed), results in parts."""
