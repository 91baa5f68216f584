"""The bundled reference translation server: a gateway supervising model nodes.

    launch.py      the one way to run it: `serve` in this process, `ServerProcess` as a child
    __main__.py    `python -m rushhour.reference_server`: the process `ServerProcess` starts
    config.py      the server config file (pydantic): pools of nodes, batching, caching, admission
    defaults.py    the batching defaults a node and the configuration share
    listening.py   claiming a listening socket, all a node process needs of the launch
    gateway/       admission, caches, breakers, routing, fault proxy, jobs, autoscaler, HTTP routes
    node/          one model replica: a batcher in front of the model, its HTTP app
    model/         the ONNX encoder-decoder: build, runtime, tokenizer
    batcher.py     dynamic batching for one replica
    continuous.py  continuous (iteration-level) batching for one replica, as in Orca and vLLM
    aio.py         small asyncio helpers of the server's long-running loops
    gpucheck.py    `python -m rushhour.reference_server.gpucheck`: is the GPU path in use, what it gives
    k8s/           Kubernetes manifests
"""
