"""One client over several servers: calls spread over three replicas, one replica stops, the
calls go on.

Starts three bundled servers on free ports (in this process), then for HTTP and gRPC: a
client given the list of replicas runs inferences (round robin), one replica is stopped
(it drains: readiness turns false, then it closes), and idempotent calls and inferences
marked safe to repeat still succeed on the others.  Prints each replica's counters; exits
non-zero on any wrong result.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from mock_server.app import BUNDLED_MODELS, FrontendOptions, MockServer
from mock_server.core.server import ModelControlMode, ServerOptions
from tritonclient.utils import BalancingPolicy, RetryPolicy


def check(condition: bool, what: str) -> None:
    print(("  ok     " if condition else "  WRONG  ") + what)
    if not condition:
        sys.exit(1)


def start_replica() -> MockServer:
    options = ServerOptions(
        model_repository=[BUNDLED_MODELS],
        model_control_mode=ModelControlMode.EXPLICIT,
        startup_models=["simple"],
    )
    frontends = FrontendOptions(http_port=0, grpc_port=0, allow_metrics=False)
    return MockServer(options, frontends).start()


def run(module: Any, client: Any, count: int) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    inputs = [
        module.InferInput("INPUT0", [1, 16], "INT32"),
        module.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    for each in inputs:
        each.set_data_from_numpy(a)
    for _ in range(count):
        result = client.infer("simple", inputs)
        assert (result.as_numpy("OUTPUT0") == a + a).all()


def main() -> None:
    replicas = [start_replica() for _ in range(3)]
    # Retries go to another replica; infer is repeated only because this model is
    # stateless (retry_infer=True says it is safe).
    retry = RetryPolicy(max_attempts=3, initial_backoff=0.05, retry_infer=True)
    try:
        http_urls = [f"127.0.0.1:{r.http_port}" for r in replicas]
        grpc_urls = [f"127.0.0.1:{r.grpc_port}" for r in replicas]
        fast = BalancingPolicy(health_check_interval=0.5, ejection_time=0.5)
        with (
            httpclient.InferenceServerClient(
                http_urls, retry_policy=retry, load_balancing=fast
            ) as h,
            grpcclient.InferenceServerClient(grpc_urls, retry_policy=retry) as g,
        ):
            print("30 inferences per protocol over 3 replicas")
            run(httpclient, h, 30)
            run(grpcclient, g, 30)
            check([s.requests for s in h.replica_stats()] == [10, 10, 10], "HTTP: 10 calls each")
            check(len(g.replica_stats()) == 3, "gRPC: 3 replicas connected")
            print(f"stopping the replica at {http_urls[1]} (HTTP) / {grpc_urls[1]} (gRPC)")
            replicas[1].stop()
            run(httpclient, h, 30)
            run(grpcclient, g, 30)
            check(h.is_server_ready() and g.is_server_ready(), "both clients still ready")
            for stats in h.replica_stats():
                print(f"  HTTP {stats}")
            check(not h.replica_stats()[1].in_service, "HTTP: the stopped replica is out")
            for stats in g.replica_stats():
                print(f"  gRPC {stats}")
    finally:
        for replica in replicas:
            replica.stop()
    print("done")


if __name__ == "__main__":
    main()
