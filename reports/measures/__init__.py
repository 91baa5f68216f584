"""The figures of one run, each from its results: SLO verdicts and burn, faults and recovery, goodput,
streaming, long documents, cost and token cost, the warm-up, drift, pools, the harness's own
overhead and checks, the environment, and the target's own metrics. `facts` derives once what
several of them need.
"""
