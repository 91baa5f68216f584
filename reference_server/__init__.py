"""The bundled reference translation server: a gateway supervising model nodes.

    launch.py   the one way to run it: `serve` in this process, `ServerProcess` as a child
    config.py   the server config file (pydantic)
    gateway/    admission, caches, breakers, routing, fault proxy, jobs, autoscaler, HTTP routes
    node/       one model replica: dynamic batcher + ONNX Runtime, its HTTP app
    model/      the ONNX encoder-decoder: build, runtime, tokenizer
    batcher.py  the dynamic batcher primitive
    k8s/        Kubernetes manifests
"""
