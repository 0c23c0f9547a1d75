"""Large-tensor round trips through system shared memory vs the wire vs a numpy copy.

Usage
-----
``python benchmarks/bench_shm.py [--quick] [--no-triton] [--profile | --no-profile]
[--peer-python PATH]``

One invocation measures, for 64 MiB and 256 MiB ``[1, N]`` UINT8 tensors sent through
``identity_uint8`` (dims ``[-1, -1]``):

``shm``    system shared memory (issue 7): an input and an output region created and
           registered once per size, then per round trip: write the input into the input
           region (``set_shared_memory_region``), ``infer`` with ``set_shared_memory`` on the
           input and the requested output, read the output as a zero-copy view
           (``get_contents_as_numpy``).  Over HTTP and over gRPC.
``wire``   the same round trip with the tensor in the request and the response (binary
           HTTP, gRPC), ``set_data_from_numpy`` and ``as_numpy`` included.
``numpy``  one plain ``x.copy()`` of the payload (and ``np.copyto`` into a warm buffer,
           for information); the yardstick of the issue's goal.

Client/server pairs: ours (this project's client and the bundled ``mock_server``, started
once in a subprocess on free ports); NVIDIA's ``tritonclient`` 2.73.0 with the
real Triton server (``tests/peers.py``, when installed; only ``identity_uint8`` loaded); and,
as an extra row, NVIDIA's client with ``mock_server``.  Every measurement runs in a worker
subprocess with ``PYTHONPATH`` unset and ``cwd="/"``: ours with this interpreter, NVIDIA's
with the interpreter of the peers' cache (``scripts/peers.sh``, made on first use); each worker
reports which ``tritonclient`` it imported and the script stops if a side imported the wrong
one.

Every round trip is checked: inputs alternate between ``x`` and ``~x`` so a stale output
region cannot pass, and each output must equal its input.  Figures are the median wall time
of a round trip (best in brackets), payload MB/s, the ratio to one numpy copy (goal <= 3x for
our shm path) and NVIDIA+Triton / ours on the same path (goal >= 2x).

Shared-memory keys are ``/bench_shm_<run id>_...``; workers destroy their regions in
``finally`` and the driver removes any ``/dev/shm`` entry of the run that is left (a killed
worker), and reports new ``/dev/shm`` entries, on success and on failure.

``--profile`` (or a missed goal, unless ``--no-profile``) adds cProfile listings of our shm
path: ``mock_server`` started in-process (``mock_server.app.MockServer``) with a profiler
in each of its threads, and our client in the main thread.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import bench_clients as bc  # noqa: E402  (the server launchers and the worker runner)

MODEL = "identity_uint8"
MiB = 1 << 20
SHM_DIR = Path("/dev/shm")

# ---------------------------------------------------------------------------------------------
# Worker side: runs in a subprocess with either package; must not import anything from REPO
# (except the profile worker, which starts mock_server in-process).
# ---------------------------------------------------------------------------------------------


def _payloads(nbytes: int) -> tuple[Any, Any]:
    import numpy as np

    x = np.random.default_rng(nbytes).integers(0, 256, (1, nbytes), dtype=np.uint8)
    return x, np.invert(x)


def _client(protocol: str, url: str) -> tuple[Any, Any]:
    import importlib

    mod = importlib.import_module(f"tritonclient.{protocol}")
    if protocol == "http":
        return mod, mod.InferenceServerClient(url, network_timeout=300.0, connection_timeout=60.0)
    return mod, mod.InferenceServerClient(url)


def _stats(times: list[float]) -> dict[str, float]:
    s = sorted(times)
    return {"median_ms": s[len(s) // 2] * 1e3, "best_ms": s[0] * 1e3, "n": len(s)}


def shm_round_trips(
    mod: Any, client: Any, protocol: str, nbytes: int, warm: int, iters: int, token: str, tag: str
) -> dict[str, Any]:
    """Timed shm round trips of one size; regions created/registered once, always cleaned."""
    import numpy as np

    import tritonclient.utils.shared_memory as shm

    xs = _payloads(nbytes)
    shape = [1, nbytes]
    names = {
        d: (f"bench_{tag}_{d}", f"/bench_shm_{token}_{tag}_{nbytes >> 20}m_{d}")
        for d in ("in", "out")
    }
    handles: dict[str, Any] = {}
    registered: list[str] = []
    times: list[float] = []
    phases: dict[str, list[float]] = {"write": [], "infer": [], "read": []}
    try:
        for d, (name, key) in names.items():
            handles[d] = shm.create_shared_memory_region(name, key, nbytes)
            client.register_system_shared_memory(name, key, nbytes)
            registered.append(name)
        inp = mod.InferInput("INPUT0", shape, "UINT8")
        inp.set_shared_memory(names["in"][0], nbytes)
        if protocol == "http":
            out = mod.InferRequestedOutput("OUTPUT0", binary_data=True)
        else:
            out = mod.InferRequestedOutput("OUTPUT0")
        out.set_shared_memory(names["out"][0], nbytes)
        for i in range(warm + iters):
            x = xs[i % 2]
            t0 = time.perf_counter()
            shm.set_shared_memory_region(handles["in"], [x])
            t1 = time.perf_counter()
            result = client.infer(MODEL, [inp], outputs=[out])
            t2 = time.perf_counter()
            y = shm.get_contents_as_numpy(handles["out"], np.uint8, shape)
            t3 = time.perf_counter()
            meta = result.get_output("OUTPUT0")
            if meta is None:
                raise AssertionError(f"shm {nbytes}: OUTPUT0 missing from the response")
            if y.shape != x.shape or not np.array_equal(y, x):
                raise AssertionError(f"shm {nbytes} bytes: output differs from input")
            del y, result
            if i >= warm:
                times.append(t3 - t0)
                phases["write"].append(t1 - t0)
                phases["infer"].append(t2 - t1)
                phases["read"].append(t3 - t2)
    finally:
        for name in registered:
            with contextlib.suppress(Exception):  # keep cleaning up
                client.unregister_system_shared_memory(name)
        for h in handles.values():
            shm.destroy_shared_memory_region(h)
    res: dict[str, Any] = dict(_stats(times))
    res["phases_ms"] = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in phases.items()}
    return res


def wire_round_trips(
    mod: Any, client: Any, protocol: str, nbytes: int, warm: int, iters: int
) -> dict[str, Any]:
    import numpy as np

    xs = _payloads(nbytes)
    inp = mod.InferInput("INPUT0", [1, nbytes], "UINT8")
    if protocol == "http":
        out = mod.InferRequestedOutput("OUTPUT0", binary_data=True)
    else:
        out = mod.InferRequestedOutput("OUTPUT0")
    times = []
    for i in range(warm + iters):
        x = xs[i % 2]
        t0 = time.perf_counter()
        inp.set_data_from_numpy(x)
        result = client.infer(MODEL, [inp], outputs=[out])
        y = result.as_numpy("OUTPUT0")
        t1 = time.perf_counter()
        if y is None or y.shape != x.shape or not np.array_equal(y, x):
            raise AssertionError(f"wire {nbytes} bytes: output differs from input")
        del y, result
        if i >= warm:
            times.append(t1 - t0)
    return _stats(times)


def numpy_copies(nbytes: int, iters: int) -> dict[str, Any]:
    import numpy as np

    x, _ = _payloads(nbytes)
    dst = np.empty_like(x)
    np.copyto(dst, x)
    t_copy, t_copyto = [], []
    for _ in range(iters + 1):
        t0 = time.perf_counter()
        y = x.copy()
        t1 = time.perf_counter()
        np.copyto(dst, x)
        t2 = time.perf_counter()
        t_copy.append(t1 - t0)
        t_copyto.append(t2 - t1)
        del y
    if not np.array_equal(dst, x):
        raise AssertionError("numpy copy differs")
    return {"copy": _stats(t_copy[1:]), "copyto": _stats(t_copyto[1:])}


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import tritonclient
    import tritonclient.utils.shared_memory as shm

    out: dict[str, Any] = {"module": tritonclient.__file__, "shm_module": shm.__file__}
    if spec["case"] == "numpy":
        out["sizes"] = {str(n): numpy_copies(n, it) for n, it in spec["sizes"]}
        return out
    protocol, url = spec["protocol"], spec["url"]
    mod, client = _client(protocol, url)
    sizes: dict[str, Any] = {}
    try:
        for nbytes, shm_iters, wire_iters in spec["sizes"]:
            sizes[str(nbytes)] = {
                "shm": shm_round_trips(
                    mod, client, protocol, nbytes, 2, shm_iters, spec["token"], spec["tag"]
                ),
                "wire": wire_round_trips(mod, client, protocol, nbytes, 1, wire_iters),
            }
    finally:
        client.close()
    out["sizes"] = sizes
    return out


class _ThreadProfiles:
    """A cProfile profiler in every thread started after ``install()`` (Python 3.11)."""

    def __init__(self) -> None:
        import threading

        self.profiles: list[Any] = []
        self.lock = threading.Lock()

    def install(self) -> None:
        import threading

        threading.setprofile(self._start)

    def _start(self, frame: Any, event: str, arg: Any) -> None:
        import cProfile

        prof = cProfile.Profile()
        with self.lock:
            self.profiles.append(prof)
        prof.enable()  # replaces this hook in this thread

    def reset(self) -> None:
        for p in self.profiles:
            p.clear()


def profile_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Our shm path with mock_server in-process; per-thread cProfile of server and client."""
    import cProfile
    import io
    import pstats
    import threading

    sys.path.insert(0, str(REPO))
    import tritonclient
    from mock_server.app import FrontendOptions, MockServer
    from mock_server.core.server import ModelControlMode, ServerOptions

    server_profiles = _ThreadProfiles()
    server_profiles.install()
    opts = ServerOptions(
        model_repository=[REPO / "mock_server" / "models"],
        model_control_mode=ModelControlMode.EXPLICIT,
        startup_models=[MODEL],
        allow_client_shm=True,
    )
    fronts = FrontendOptions(http_port=0, grpc_port=0, metrics_port=0, allow_metrics=False)
    texts = {}
    with MockServer(opts, fronts) as srv:
        threading.setprofile(None)  # client threads (if any) are not the server's
        for protocol, url in (("http", srv.http_url), ("grpc", srv.grpc_url)):
            mod, client = _client(protocol, url)
            try:
                nbytes = spec["nbytes"]
                # warm-up (not profiled in the client; server profiles cleared after)
                shm_round_trips(mod, client, protocol, nbytes, 1, 1, spec["token"], "pw" + protocol)
                server_profiles.reset()
                cprof = cProfile.Profile()
                cprof.enable()
                res = shm_round_trips(
                    mod, client, protocol, nbytes, 0, spec["iters"], spec["token"], "p" + protocol
                )
                cprof.disable()
                snap = [p for p in server_profiles.profiles]
            finally:
                client.close()
            text = io.StringIO()
            text.write(
                f"shm round trip median {res['median_ms']:.1f} ms, phases {res['phases_ms']}\n"
            )
            st = pstats.Stats(cprof, stream=text)
            text.write("--- client (main thread), by tottime ---\n")
            st.sort_stats("tottime").print_stats(spec["top"])
            sst = None
            for p in snap:
                try:
                    p.create_stats()
                except Exception:
                    continue
                if not p.stats:
                    continue
                if sst is None:
                    sst = pstats.Stats(p, stream=text)
                else:
                    sst.add(p)
            if sst is not None:
                text.write("--- server (all its threads merged), by tottime ---\n")
                sst.sort_stats("tottime").print_stats(spec["top"])
                text.write("--- server, by cumulative ---\n")
                sst.sort_stats("cumulative").print_stats(spec["top"])
            texts[protocol] = text.getvalue()
            server_profiles.reset()
    return {"module": tritonclient.__file__, "shm_module": "", "profiles": texts}


# ---------------------------------------------------------------------------------------------
# Driver side.
# ---------------------------------------------------------------------------------------------


def run_worker(python: str, spec: dict[str, Any], ours: bool, cwd: str = "/") -> dict[str, Any]:
    """:func:`bench_clients.run_worker` with this file as the worker (240 s at most; a
    failed worker is tried once more, then its case is left out and reported)."""
    return bc.run_worker(python, spec, ours, 240, script=__file__, cwd=cwd, tolerate=True)


def sweep_shm(token: str) -> list[str]:
    """Remove every /dev/shm entry of this run; return their names."""
    left = []
    for entry in SHM_DIR.glob(f"bench_shm_{token}_*"):
        left.append(entry.name)
        with contextlib.suppress(OSError):
            entry.unlink()
    return left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="64,256")
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke test)")
    parser.add_argument("--no-triton", action="store_true", help="mock_server only")
    parser.add_argument("--profile", action="store_true", help="always add cProfile listings")
    parser.add_argument("--no-profile", action="store_true", help="never profile")
    parser.add_argument("--peer-python", help="python of a venv with NVIDIA's tritonclient")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        res = profile_worker(spec) if spec["case"] == "profile" else worker(spec)
        json.dump(res, sys.stdout)
        return 0

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    t_start = time.perf_counter()
    token = uuid.uuid4().hex[:10]
    shm_before = set(os.listdir(SHM_DIR)) if SHM_DIR.is_dir() else set()
    mib = [int(s) for s in args.sizes_mib.split(",")]
    # (bytes, shm iterations, wire iterations) per size
    sizes = [
        (
            m * MiB,
            3 if args.quick else (10 if m <= 64 else 5),
            1 if args.quick else (3 if m <= 64 else 2),
        )
        for m in mib
    ]
    results: dict[str, Any] = {}
    modules: dict[str, str] = {}
    triton_note = ""
    try:
        nvidia = bc.peer_python(args.peer_python)
        results["numpy"] = run_worker(
            sys.executable,
            {"case": "numpy", "sizes": [(n, 3 if args.quick else 10) for n, _, _ in sizes]},
            True,
        )
        if "failed" in results["numpy"]:  # every ratio is to it: nothing to report without it
            raise SystemExit(f"the numpy yardstick failed twice: {results['numpy']['failed']}")
        print("  done: numpy", file=sys.stderr, flush=True)
        with contextlib.ExitStack() as stack:
            mock = stack.enter_context(bc.MockServer((MODEL,)))
            pairs = [("ours+mock", sys.executable, True, mock)]
            triton = None
            if not args.no_triton:
                try:
                    triton = bc.triton_server(stack, (MODEL,), shm_growth_bytes=256 << 20)
                except Exception as exc:  # report it and go on with mock_server only
                    triton_note = f"Triton server not used: {str(exc)[:2000]}"
                    print(triton_note, file=sys.stderr)
                if triton is None and not triton_note:
                    triton_note = (
                        "Triton server not installed (tests/peers.py): no NVIDIA+Triton rows"
                    )
            if triton is not None:
                pairs.append(("NVIDIA+Triton", nvidia, False, triton))
            pairs.append(("NVIDIA+mock", nvidia, False, mock))
            for pname, python, ours, srv in pairs:
                for proto, url in (("http", srv.http_url), ("grpc", srv.grpc_url)):
                    tag = f"{'o' if ours else 'n'}{'t' if srv is triton else 'm'}{proto}"
                    spec = {
                        "case": "rt",
                        "protocol": proto,
                        "url": url,
                        "sizes": sizes,
                        "token": token,
                        "tag": tag,
                    }
                    res = run_worker(python, spec, ours)
                    if "failed" in res:
                        continue  # left out of the table, reported at the end
                    results[f"{pname}/{proto}"] = res
                    modules[pname.split("+")[0]] = res["module"]
                    print(f"  done: {pname} {proto}", file=sys.stderr, flush=True)
        # ---- table --------------------------------------------------------------------------
        misses = 0
        lines = []
        print()
        print(
            f"Shared-memory benchmark: identity_uint8 [1, N] UINT8 round trips "
            f"({os.cpu_count()} CPUs, servers on the same machine)"
        )
        hdr = (
            f"{'size':>7} {'path':22} {'client+server':14} {'ms median':>10} {'(best)':>8} "
            f"{'MB/s':>8} {'x numpy':>8} {'x copyto':>8} {'NV+Tr/us':>9}  goal"
        )
        print(hdr)
        print("-" * len(hdr))
        for n, _, _ in sizes:
            key = str(n)
            size = f"{n >> 20}MiB"
            np_res = results["numpy"]["sizes"][key]
            base = np_res["copy"]["median_ms"]
            warm = np_res["copyto"]["median_ms"]
            for label, r in (
                ("numpy x.copy()", np_res["copy"]),
                ("numpy copyto (warm)", np_res["copyto"]),
            ):
                mbps = n / (r["median_ms"] / 1e3) / 1e6
                print(
                    f"{size:>7} {label:22} {'-':14} {r['median_ms']:10.2f} {r['best_ms']:8.2f} "
                    f"{mbps:8.0f} {r['median_ms'] / base:7.2f}x "
                    f"{r['median_ms'] / warm:7.2f}x {'':>9}"
                )
            for mode in ("shm", "wire"):
                for proto in ("http", "grpc"):
                    path = f"{mode} {proto}" + (
                        " (binary)" if mode == "wire" and proto == "http" else ""
                    )
                    nv_tr = results.get(f"NVIDIA+Triton/{proto}")
                    nv_ms = nv_tr["sizes"][key][mode]["median_ms"] if nv_tr else None
                    for pname in ("ours+mock", "NVIDIA+Triton", "NVIDIA+mock"):
                        got = results.get(f"{pname}/{proto}")
                        if got is None:
                            continue
                        r = got["sizes"][key][mode]
                        ms = r["median_ms"]
                        mbps = n / (ms / 1e3) / 1e6
                        xnp = ms / base
                        ratio = f"{nv_ms / ms:8.2f}x" if (nv_ms and pname == "ours+mock") else ""
                        goal = ""
                        if mode == "shm" and pname == "ours+mock":
                            ok1 = xnp <= 3.0
                            ok2 = nv_ms is None or nv_ms / ms >= 2.0
                            goal = f"<=3x numpy{'' if ok1 else ' MISS'}"
                            if nv_ms is not None:
                                goal += f"; >=2x NV+Triton{'' if ok2 else ' MISS'}"
                            misses += (not ok1) + (not ok2)
                        print(
                            f"{size:>7} {path:22} {pname:14} {ms:10.2f} {r['best_ms']:8.2f} "
                            f"{mbps:8.0f} {xnp:7.2f}x {ms / warm:7.2f}x {ratio:>9}  {goal}"
                        )
                        if mode == "shm":
                            ph = r["phases_ms"]
                            lines.append(
                                f"{size:>7} shm {proto:4} {pname:14} write {ph['write']:7.2f}  "
                                f"infer {ph['infer']:7.2f}  read view {ph['read']:6.3f} ms "
                                "(medians)"
                            )
            print()
        print("shm round trip phases:")
        for line in lines:
            print(line)
        print(f"ours:   {modules.get('ours')}\nNVIDIA: {modules.get('NVIDIA')}")
        if triton_note:
            print(triton_note)
        failed = bc.report_failures()
        print(
            f"{misses} goal(s) missed; {failed} case(s) failed; every other round trip "
            "verified (outputs equal inputs, alternating x / ~x)"
        )
        if not args.no_profile and (args.profile or misses):
            spec = {
                "case": "profile",
                "nbytes": sizes[0][0],
                "iters": 5,
                "top": 22,
                "token": token,
            }
            prof = run_worker(sys.executable, spec, True, cwd=str(REPO))
            for proto, text in prof["profiles"].items():
                print(
                    f"\n===== cProfile, ours ({sizes[0][0] >> 20} MiB shm, {proto}, "
                    f"mock_server in-process) =====\n{text}"
                )
    finally:
        left = sweep_shm(token)
        after = set(os.listdir(SHM_DIR)) if SHM_DIR.is_dir() else set()
        new = sorted(after - shm_before)
        print(
            f"/dev/shm: {len(left)} entr(y/ies) of this run left and removed {left}; "
            f"other new /dev/shm entries (not this run's keys): {new or 'none'}"
        )
        print(f"total {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
