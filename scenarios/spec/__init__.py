"""What a drill is: the scenario file, its plan (schedule, phases, chaos), server variants."""
