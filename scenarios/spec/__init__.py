"""What a drill is: the scenario file, its plan (schedule, phases, chaos), server variants.

    model.py      the scenario file (pydantic): what one drill replays, against what, judged by which SLOs
    target.py     what a scenario says about its target's protocol and how to reach it
    urls.py       target URLs checked and quoted, credentials hidden, the loopback guard as a sentence
    peak.py       a peak stated relative to the measured capacity (`peak_rps: 0.7x capacity`)
    overrides.py  each setting a flag can override, declared once: flag, type, help, the field it replaces
    plan.py       a scenario resolved into what will happen: schedule, phases, chaos times
    chaos.py      the chaos section planned once: which experiment runs when, against what, for how long
    variants.py   server-policy variants: one scenario replayed against several server configurations
"""
