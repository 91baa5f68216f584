"""The gateway: admission, caching, routing and supervision in front of the nodes.

The application and its routes:

    app.py          the FastAPI application, assembled from its parts and its module-level routers
    components.py   the long-lived parts, built once per app, started and stopped by its lifespan
    deps.py         FastAPI dependencies: the parts, and the admin bearer-token check
    public.py       public routes: translate, the probes, `/v1/status`, `/v1/events`, `/metrics`
    chat.py         OpenAI-compatible routes: `/v1/chat/completions` (plain or SSE), `/v1/models`
    jobs_api.py     routes of long-document jobs (`/v1/jobs`) and of the streaming translate
    admin.py        admin endpoints that chaos drills call (bearer token)
    api.py          request and response models of the public API, and its JSON error shape
    openai_api.py   the OpenAI-compatible request and answer shapes
    bodylimit.py    bodies over the size limit refused (413) before anything parses them
    status.py       `GET /v1/status`: the cluster's state as one document
    metrics.py      Prometheus metrics, in a registry per app
    events.py       the gateway's own events (supervisor, breaker, fault, scale) for `/v1/events`

The path of a request:

    service.py      one translate request: rate limit, cache, coalescing, admission, routing, retry, fallback
    admission.py    per-tenant token buckets and per-pool priority dispatch
    placement.py    which model tier, and so which pool, serves a request
    cache.py        the L1 cache (LRU, TTL, stale grace) and request coalescing
    l2cache.py      the shared L2 cache in Redis
    jobs.py         long documents split into sentences, translated segment by segment
    pieces.py       one request served as a stream of pieces
    streamcall.py   the streaming call to a node, pieces handed on as they come

The nodes behind it:

    nodes.py        one node as the gateway sees it: process or URL, client, breaker
    cluster.py      the supervisor of local nodes, as a kubelet supervises pods
    remote.py       nodes of remote pools, started elsewhere and reached over the network
    discovery.py    where a remote pool's nodes are: its headless Service's Endpoints, watched
    breaker.py      a circuit breaker per node over a sliding window of calls
    faults.py       the per-node fault proxy: an httpx transport on the gateway->node path
    autoscaler.py   each autoscaled pool sized from its load and a schedule of known peaks
"""
