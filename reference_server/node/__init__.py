"""One model replica ("GPU node") as its own process: a dynamic batcher in front of an ONNX model.

    __main__.py      the node process: on a socket the gateway hands it (`--fd`) or a port of its own (`--port`)
    serve.py         its HTTP server run on that socket or port
    app.py           `POST /infer` into the batcher, `/health` for the gateway, `/healthz` and `/readyz` for Kubernetes
    streaming.py     `POST /infer` with `"stream": true`: a row's pieces as NDJSON lines while it decodes
    model_worker.py  the model loaded, warmed and called per batch; the provider requirement; the slowdown fault
    protocol.py      what the gateway and a node tell each other beyond `/infer`'s JSON
"""
