"""`python -m rushhour.reference_server`: the server process that `ServerProcess` starts.

People run `rushhour serve` (same flags, same code path); this entry keeps the server process
free of the harness's command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rushhour.reference_server.config import ConfigError, load_config
from rushhour.reference_server.launch import LaunchError, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rushhour.reference_server", description=__doc__)
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--host", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument("--require-provider", choices=["cuda"], default=None,
                        help="refuse to start unless the quality tier really runs on CUDA")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, host=args.host, port=args.port, nodes=args.nodes, max_batch_size=args.max_batch_size,
                             require_provider=args.require_provider)
        serve(config, log_level=args.log_level)
    except (ConfigError, LaunchError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
