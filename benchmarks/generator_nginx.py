"""nginx as the generator benchmark's target: a fixed JSON reply for a few microseconds of CPU.

On a 2-core machine the target shares the CPUs with the generator it serves, so the cheapest
server there is decides how much of the machine the generator gets. nginx (one process, no access
log, keep-alive connections that never expire mid-run) answers from C; the gevent target of
`benchmarks.generator_target` costs about as much CPU per request as the generator itself.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from benchmarks.generator_target import REPLY
from rushhour.kernel.processes import free_port, stop_process

CONF = """daemon off;
master_process off;
worker_processes 1;
pid {work}/nginx.pid;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 600s;
  client_body_temp_path {work}/body;
  proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/fastcgi;
  uwsgi_temp_path {work}/uwsgi;
  scgi_temp_path {work}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      default_type application/json;
      return 200 '{reply}';
    }}
  }}
}}
"""


def nginx_binary() -> str | None:
    """The nginx executable on this machine, if any (`apt-get install -y nginx-light` gives one)."""
    return shutil.which("nginx") or shutil.which("/usr/sbin/nginx")


@contextmanager
def nginx_target(work: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A running nginx on a free loopback port answering every path with the benchmark's reply;
    yields its URL and process (for its CPU time), stopped by PID on the way out."""
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed; install it (apt-get install -y nginx-light) or pass --target gevent.")
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = work / "nginx.conf"
    conf.write_text(CONF.format(work=work, port=port, reply=REPLY.decode()), encoding="utf-8")
    proc = subprocess.Popen([binary, "-p", str(work), "-c", str(conf), "-e", str(work / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_answering(url, proc)
        yield url, proc
    finally:
        stop_process(proc, grace_s=5)


def _wait_answering(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(100):
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with code {proc.returncode} before answering on {url}.")
        try:
            httpx.post(f"{url}/v1/translate", content=b"{}", timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"nginx did not answer on {url} within 5 s.")
