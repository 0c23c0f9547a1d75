"""A Python-backend model run in this process: its file imported, ``initialize``, ``execute`` and
``finalize`` called on the threads the core gives it.

:class:`LocalModel` is one version of a model, :class:`PythonModelInstance` one instance of it.
They are what ``--python-backend-isolation thread`` runs in the server's own process, and what
a stub process runs for its one instance (:mod:`mock_server.python_backend._stub`); the choice
between the two is :mod:`mock_server.python_backend.backend`'s.  Model files are imported as
described in :mod:`mock_server.python_backend._loader`: every instance (and the auto-complete
step) imports the file afresh under a unique module name, and sibling modules of the version
folder can be imported at module level (``import utils``) or package-relative at any time
(``from . import utils``).

Error handling follows Triton:

* a failure in ``auto_complete_config``, importing the file or ``initialize`` fails the load with
  a :class:`~mock_server.core.errors.ServerError` naming the model and the Python exception;
* a failure in ``execute`` fails every request of the batch that has not been completed yet
  with ``INTERNAL``; a malformed return value fails the requests it affects;
* a failure in ``finalize`` is logged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import inspect
import json
import logging
import threading
import time
import traceback
from collections.abc import Awaitable, Coroutine
from pathlib import Path
from typing import Any

from ..core.backends import LoadSpec
from ..core.errors import ErrorKind, ServerError
from ..core.types import InferRequest
from . import _context, _loader, metrics
from . import triton_python_backend_utils as pb_utils
from .runtime import BackendRuntime

__all__ = [
    "READY_TIMEOUT_S",
    "LocalModel",
    "PythonModelInstance",
    "readiness_with_timeout",
    "user_readiness",
]

log = logging.getLogger("mock_server.python_backend")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


def _type_text(value: Any) -> str:
    """``str(type(value))`` as Triton's stub prints it: its own classes come from the
    extension module ``c_python_backend_utils``."""
    cls = type(value)
    if cls.__module__ == pb_utils.__name__:
        return f"<class 'c_python_backend_utils.{cls.__qualname__}'>"
    return str(cls)


def _python_error(exc: BaseException) -> str:
    """An exception from model code as Triton's Python-backend stub reports it (pybind11's
    text): ``<Type>: <message>``, then ``At:`` and the frames below this server's own, the
    innermost first, one ``  <file>(<line>): <function>`` line each."""
    frames = [
        f"  {frame.filename}({frame.lineno}): {frame.name}\n"
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(_PACKAGE_DIR)
    ]
    text = _describe(exc)
    if frames:
        text += "\n\nAt:\n" + "".join(reversed(frames))
    return text


def _import(model_name: str, version: int, path: Path) -> _loader.LoadedModel:
    if not path.is_file():
        raise ServerError.not_found(
            f"unable to load model '{model_name}': model file '{path}' not found"
        )
    try:
        return _loader.import_model(model_name, version, path)
    except (Exception, SystemExit) as exc:
        log.error("importing %s failed", path, exc_info=exc)
        raise ServerError.internal(_python_error(exc)) from exc


def _model_class(loaded: _loader.LoadedModel, model_name: str, path: Path) -> Any:
    cls = _loader.model_class(loaded)
    if not isinstance(cls, type):
        log.error("model '%s': '%s' does not define class TritonPythonModel", model_name, path)
        # The stub imports the file as module "<version>.model" and looks the class up on it.
        raise ServerError.internal(
            f"AttributeError: module '{path.parent.name}.model' has no attribute "
            "'TritonPythonModel'"
        )
    return cls


def _decoupled(config_json: dict[str, Any]) -> bool:
    policy = config_json.get("model_transaction_policy") or {}
    return bool(policy.get("decoupled", False))


async def _in_context(
    context: _context.ModelContext, phase: _context.Phase, awaitable: Awaitable[Any]
) -> Any:
    with _context.entered(context, phase):
        return await awaitable


class LocalModel:
    """One version of one ``model.py`` model, run in this process.

    Parameters
    ----------
    spec : LoadSpec
        The model version: its name, folder, version, completed configuration (Triton's JSON
        form) and file name.
    runtime : BackendRuntime
        The core's hooks for BLS and model control.
    """

    @staticmethod
    def auto_complete(
        model_dir: Path, version: int, config_json: dict[str, Any], filename: str
    ) -> dict[str, Any]:
        """Let the model complete its configuration, in this process.

        Imports the model file and, if ``TritonPythonModel`` has ``auto_complete_config``, calls
        it with a :class:`pb_utils.ModelConfig` wrapping ``config_json`` (see
        :meth:`~mock_server.python_backend.backend.PythonBackendModel.auto_complete`).
        """
        name = str(config_json.get("name") or Path(model_dir).name)
        path = Path(model_dir) / str(version) / filename
        loaded = _import(name, version, path)
        try:
            cls = _model_class(loaded, name, path)
            hook = getattr(cls, "auto_complete_config", None)
            if hook is None:
                return copy.deepcopy(config_json)
            config = copy.deepcopy(config_json)
            config.setdefault("name", name)
            wrapped = pb_utils.ModelConfig(config)
            context = _context.ModelContext(name, version, model_dir=str(path.parent))
            try:
                with _context.entered(context, "auto_complete"):
                    result = hook(wrapped)
            except ValueError as exc:
                raise ServerError.invalid_arg(
                    f"auto-complete-config of model '{name}' failed: {_describe(exc)}"
                ) from exc
            except (Exception, SystemExit) as exc:
                log.error("auto_complete_config of model '%s' failed", name, exc_info=exc)
                raise ServerError.internal(
                    f"auto-complete-config of model '{name}' failed: {_describe(exc)}"
                ) from exc
            finally:
                metrics.release_owner(context)
            if not isinstance(result, pb_utils.ModelConfig):
                raise ServerError.invalid_arg(
                    f"auto_complete_config function in model '{name}' must return a valid "
                    f"pb_utils.ModelConfig object, got {type(result).__name__}"
                )
            return copy.deepcopy(result.as_dict())
        finally:
            _loader.discard(loaded)

    def __init__(self, spec: LoadSpec, runtime: BackendRuntime) -> None:
        config_json = spec.config_json
        self.model_name = spec.model_name
        self.model_dir = Path(spec.model_dir)
        self.version = spec.version
        self.config_json = config_json
        self.filename = spec.filename
        self.runtime = runtime
        self.decoupled = _decoupled(config_json)
        self.output_names = [
            str(o.get("name", "")) for o in config_json.get("output") or [] if isinstance(o, dict)
        ]
        self.path = self.model_dir / str(spec.version) / spec.filename
        _context.register_runtime(runtime)

    def create_instance(self, instance_name: str, kind: str, device_id: int) -> Any:
        """Import the model file, create ``TritonPythonModel`` and run its ``initialize``, in
        this process (see
        :meth:`~mock_server.python_backend.backend.PythonBackendModel.create_instance`)."""
        loaded = _import(self.model_name, self.version, self.path)
        context = _context.ModelContext(
            self.model_name,
            self.version,
            instance_name,
            self.runtime,
            model_dir=str(self.path.parent),
        )
        instance = PythonModelInstance(self, instance_name, loaded, context)
        try:
            cls = _model_class(loaded, self.model_name, self.path)
            args = {
                "model_config": json.dumps(self.config_json),
                "model_instance_kind": kind,
                "model_instance_name": instance_name,
                "model_instance_device_id": str(device_id),
                "model_repository": str(self.model_dir),
                "model_version": str(self.version),
                "model_name": self.model_name,
            }
            try:
                with _context.entered(context, "initialize"):
                    model = cls()
                    initialize = getattr(model, "initialize", None)
                    result = initialize(args) if initialize is not None else None
                if inspect.isawaitable(result):
                    instance._run_async(result, "initialize")
            except (Exception, SystemExit) as exc:
                log.error("initialize of model '%s' failed", self.model_name, exc_info=exc)
                raise ServerError.internal(_python_error(exc)) from exc
            if not callable(getattr(cls, "execute", None)):  # checked after initialize ran
                raise ServerError.invalid_arg(
                    f"model '{self.model_name}': class TritonPythonModel in '{self.path}' has no "
                    "execute method"
                )
        except BaseException:
            instance._release()
            raise
        instance._model = model
        return instance


#: How long a model's ``is_model_ready()`` may take before the model counts as not ready.
READY_TIMEOUT_S = 5.0


def user_readiness(model: Any, model_name: str) -> bool:
    """The answer of the model's own ``is_model_ready()``, as current Triton's Python backend
    reads it (the hook is newer than Triton 2.51, which has none; its QA models
    ``qa/L0_backend_python/model_readiness`` say what counts): a model without the method is
    ready; ``True`` is ready, also as the result of an ``async def`` hook (the stub runs the
    coroutine); ``False``, an exception or a value that is not a bool is not ready."""
    hook = getattr(model, "is_model_ready", None)
    if hook is None:
        return True
    try:
        answer = hook()
        if inspect.iscoroutine(answer):
            answer = asyncio.run(answer)  # on the caller's own thread: a loop of its own
    except (Exception, SystemExit) as exc:
        log.warning("is_model_ready() of model '%s' raised %s", model_name, _describe(exc))
        return False
    if not isinstance(answer, bool):
        log.warning(
            "is_model_ready() of model '%s' returned %s, expected a bool",
            model_name,
            type(answer).__name__,
        )
        return False
    return answer


def readiness_with_timeout(model: Any, model_name: str, timeout_s: float) -> bool:
    """:func:`user_readiness` on a thread of its own, not ready after ``timeout_s``."""
    if getattr(model, "is_model_ready", None) is None:
        return True
    result: list[bool] = []
    thread = threading.Thread(
        target=lambda: result.append(user_readiness(model, model_name)),
        name=f"{model_name}:is_model_ready",
        daemon=True,
    )
    thread.start()
    thread.join(timeout_s)
    if not result:
        log.warning("is_model_ready() of model '%s' took over %.1f s", model_name, timeout_s)
        return False
    return result[0]


class _EventLoop:
    """An asyncio event loop running on a thread of its own."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                tasks = asyncio.all_tasks(self.loop)
                for task in tasks:
                    task.cancel()
                if tasks:
                    self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def stop(self, timeout_s: float = 5.0) -> None:
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self.loop.stop)
            except RuntimeError:  # closed meanwhile
                return
        self._thread.join(timeout_s)


class PythonModelInstance:
    """One instance of a model: a ``TritonPythonModel`` object and its event loop.

    Created by :meth:`LocalModel.create_instance`.
    """

    def __init__(
        self,
        owner: LocalModel,
        instance_name: str,
        loaded: _loader.LoadedModel,
        context: _context.ModelContext,
    ) -> None:
        self._owner = owner
        self.instance_name = instance_name
        self._loaded = loaded
        self._context = context
        #: The same in the execute phase, made once (it is entered for every batch).
        self._executing = dataclasses.replace(context, phase="execute")
        self._model: Any = None
        self._loop: _EventLoop | None = None
        self._loop_lock = threading.Lock()
        self._finalized = False
        self._compute: tuple[int, int] | None = None

    # -- helpers ---------------------------------------------------------------------------------
    def compute_window(self) -> tuple[int, int] | None:
        """The ``time.monotonic_ns()`` readings around the model's ``execute`` in the last
        :meth:`execute` (None before the first): the core splits the execution there into
        compute input (wrapping the requests), infer and output (delivering the responses)."""
        return self._compute

    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._owner.model_name

    def ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Whether the instance is ready: the model's own ``is_model_ready()`` when it has one
        (see :func:`user_readiness`)."""
        if self._finalized or self._model is None:
            return False
        return readiness_with_timeout(self._model, self.model_name, timeout_s)

    def _event_loop(self) -> _EventLoop:
        with self._loop_lock:
            if self._loop is None:
                self._loop = _EventLoop(f"{self.model_name}:{self.instance_name}:asyncio")
            return self._loop

    def _run_async(self, awaitable: Awaitable[Any], phase: _context.Phase) -> Any:
        """Run ``awaitable`` on the instance's loop and wait for its result."""
        future = self._event_loop().submit(_in_context(self._context, phase, awaitable))
        return future.result()

    def _release(self) -> None:
        if self._loop is not None:
            self._loop.stop()
        metrics.release_owner(self._context)
        _loader.discard(self._loaded)

    def _batch_error(self, exc: BaseException) -> ServerError:
        log.error(
            "execute of model '%s' (instance '%s') failed",
            self.model_name,
            self.instance_name,
            exc_info=exc,
        )
        # The Python backend's words: the "model" it names is the instance.
        return ServerError.internal(
            f"Failed to process the request(s) for model '{self.instance_name}', message: "
            f"{_python_error(exc)}"
        )

    @staticmethod
    def _fail_open(requests: list[pb_utils.InferenceRequest], error: ServerError) -> None:
        for request in requests:
            sender = request._sender
            assert sender is not None
            sender._fail(error)

    # -- execution -------------------------------------------------------------------------------
    def execute(self, requests: list[InferRequest]) -> list[InferRequest]:
        """Run one batch through ``TritonPythonModel.execute``.

        Every request gets its responses through its ``response_callback`` (now, or later for
        decoupled models); requests the model released with
        ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE`` get none and are returned instead, for the
        core to queue again.

        Parameters
        ----------
        requests : list of InferRequest
            The batch.

        Returns
        -------
        list of InferRequest
            The requests to reschedule.
        """
        owner = self._owner
        version = str(owner.version)
        batch = [
            pb_utils.InferenceRequest._received(
                request,
                owner.version,
                owner.output_names,
                pb_utils.InferenceResponseSender(
                    request, owner.model_name, version, owner.decoupled
                ),
            )
            for request in requests
        ]
        if self._finalized or self._model is None:
            self._fail_open(
                batch, ServerError.unavailable(f"model '{owner.model_name}' is not loaded")
            )
            return []
        compute_start = time.monotonic_ns()
        try:
            with _context.entered(self._executing, "execute"):
                result = self._model.execute(batch)
            if inspect.isawaitable(result):
                if owner.decoupled:
                    # Triton lets async decoupled executions overlap: don't wait.
                    future = self._event_loop().submit(
                        _in_context(self._context, "execute", result)
                    )
                    future.add_done_callback(lambda done: self._after_async(done, batch))
                    self._compute = (compute_start, time.monotonic_ns())
                    return []
                result = self._run_async(result, "execute")
        except (Exception, SystemExit) as exc:  # Triton reports SystemExit like any error
            self._compute = (compute_start, time.monotonic_ns())
            self._fail_open(batch, self._batch_error(exc))
            return []
        self._compute = (compute_start, time.monotonic_ns())
        if owner.decoupled:
            return self._finish_decoupled(batch, result)
        return self._finish_default(batch, result)

    def _finish_decoupled(
        self, batch: list[pb_utils.InferenceRequest], result: Any
    ) -> list[InferRequest]:
        if result is not None:
            self._fail_open(
                batch,
                # Triton 2.51's words; both names are the instance's.
                ServerError.internal(
                    f"Failed to process the request(s) for model '{self.instance_name}', "
                    f"message: Python model '{self.instance_name}' is using the decoupled mode "
                    "and the execute function must return None."
                ),
            )
            return []
        again: list[InferRequest] = []
        for request in batch:
            if request._release_flags != pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                continue
            sender = request._sender
            assert sender is not None and request._core is not None
            if sender._closed:
                log.warning(
                    "model '%s' rescheduled a request after sending its final response; the "
                    "request is complete and is not rescheduled",
                    self.model_name,
                )
                continue
            again.append(request._core)
        return again

    def _return_error(self, message: str) -> ServerError:
        """An error in what execute returned, in Triton 2.51's words (the "model" it names is
        the instance)."""
        return ServerError.internal(
            f"Failed to process the request(s) for model '{self.instance_name}', message: {message}"
        )

    def _finish_default(
        self, batch: list[pb_utils.InferenceRequest], result: Any
    ) -> list[InferRequest]:
        name = self.model_name
        if result is None:
            result = [None] * len(batch)
        elif not isinstance(result, list):  # Triton takes no tuple either
            self._fail_open(
                batch,
                self._return_error(
                    f"Expected a list in the execute return, found type '{_type_text(result)}'."
                ),
            )
            return []
        if len(result) != len(batch):
            self._fail_open(
                batch,
                self._return_error(
                    "Number of InferenceResponse objects do not match the number of "
                    f"InferenceRequest objects. InferenceRequest(s) size is:{len(batch)}, and "
                    f"InferenceResponse(s) size is:{len(result)}\n"
                ),
            )
            return []
        again: list[InferRequest] = []
        for request, response in zip(batch, result, strict=True):
            sender = request._sender
            assert sender is not None and request._core is not None
            if request._release_flags == pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                if response is None and not sender._used:
                    again.append(request._core)
                else:
                    sender._fail(
                        self._return_error(
                            "Expected a None object in the execute function return list for "
                            f"reschduled request, found type '{_type_text(response)}'."
                        )
                    )
                continue
            if response is None:
                # A model that took the request's response sender may answer through it after
                # execute returned (Triton waits for it); one that did not would leave the
                # request unanswered for ever (Triton 2.51 hangs; ours says why).
                if not sender._used and not sender._taken:
                    sender._fail(
                        ServerError.internal(
                            f"model '{name}': execute returned no InferenceResponse for a "
                            "request and sent none with its response sender"
                        )
                    )
                continue
            if not isinstance(response, pb_utils.InferenceResponse):
                sender._fail(
                    self._return_error(
                        "Expected an 'InferenceResponse' object in the execute function return "
                        f"list, found type '{_type_text(response)}'."
                    )
                )
                continue
            if sender._used:
                if not sender._fail(
                    ServerError.internal(
                        f"model '{name}': non-decoupled model cannot send more than one "
                        "response (one was sent with the response sender and one returned)"
                    )
                ):
                    log.warning(
                        "model '%s' returned a response for a request it had already answered "
                        "with its response sender; the returned one is dropped",
                        name,
                    )
                continue
            sender._finish(response)
        return again

    def _after_async(
        self, future: concurrent.futures.Future[Any], batch: list[pb_utils.InferenceRequest]
    ) -> None:
        """Complete a batch whose async decoupled execute has finished."""
        try:
            result = future.result()
        except concurrent.futures.CancelledError:
            self._fail_open(
                batch,
                ServerError.unavailable(
                    f"model '{self.model_name}' was unloaded while the request was running"
                ),
            )
            return
        except (Exception, SystemExit) as exc:
            self._fail_open(batch, self._batch_error(exc))
            return
        if result is not None:
            self._finish_decoupled(batch, result)
            return
        for request in batch:
            if request._release_flags == pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
                assert request._sender is not None
                request._sender._fail(
                    ServerError(
                        ErrorKind.UNSUPPORTED,
                        f"model '{self.model_name}': request rescheduling is not supported by "
                        "an async decoupled execute (it completes after the batch is released)",
                    )
                )

    def finalize(self) -> None:
        """Run ``TritonPythonModel.finalize`` (if defined) and release the instance.

        Failures of ``finalize`` are logged, as in Triton; the instance is released anyway.
        """
        if self._finalized:
            return
        self._finalized = True
        try:
            finalize = getattr(self._model, "finalize", None)
            if finalize is not None:
                with _context.entered(self._context, "finalize"):
                    result = finalize()
                if inspect.isawaitable(result):
                    self._run_async(result, "finalize")
        except (Exception, SystemExit) as exc:
            log.error(
                "finalize of model '%s' (instance '%s') failed",
                self.model_name,
                self.instance_name,
                exc_info=exc,
            )
        finally:
            # Before the model object goes: the metric families it still holds stay (Triton).
            metrics.release_owner(self._context)
            self._model = None
            self._release()
