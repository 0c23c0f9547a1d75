"""InferenceServerException and raise_error."""

from __future__ import annotations

import pickle

import pytest

from tritonclient.utils import InferenceServerException, raise_error


def test_accessors_and_str() -> None:
    exc = InferenceServerException("model 'm' not found", "StatusCode.NOT_FOUND", "details")
    assert exc.message() == "model 'm' not found"
    assert exc.status() == "StatusCode.NOT_FOUND"
    assert exc.debug_details() == "details"
    assert str(exc) == "[StatusCode.NOT_FOUND] model 'm' not found"
    plain = InferenceServerException(msg="boom")
    assert str(plain) == "boom"
    assert plain.status() is None and plain.debug_details() is None
    assert str(InferenceServerException(None)) == ""


def test_pickling_keeps_every_field() -> None:
    exc = InferenceServerException("m", status="400", debug_details="d")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.message(), back.status(), back.debug_details()) == ("m", "400", "d")
    assert str(back) == "[400] m"


def test_raise_error() -> None:
    with pytest.raises(InferenceServerException) as info:
        try:
            raise KeyError("inner")
        except KeyError:
            raise_error("outer")
    assert str(info.value) == "outer"
    assert info.value.__suppress_context__


def test_per_status_errors_compare_equal_to_the_base_type() -> None:
    """NVIDIA's clients raise only ``InferenceServerException``, and code written for them
    (Triton's QA, e.g. ``L0_client_timeout``) tells errors from results with
    ``type(item) == InferenceServerException``; the package's subclasses pass that test."""
    import functools

    from tritonclient._codec.errors import HttpCodecError
    from tritonclient.utils import (
        InferenceServerDeadlineExceededError,
        InferenceServerNotFoundError,
        InferenceServerValueError,
    )

    base = InferenceServerException
    for cls in (
        InferenceServerDeadlineExceededError,
        InferenceServerNotFoundError,
        InferenceServerValueError,
        HttpCodecError,
    ):
        error = cls("m") if cls is not HttpCodecError else cls("m", 400)
        assert type(error) == base and base == type(error)  # noqa: E721 - the point
        assert (type(error) != base) is False  # noqa: E721
        assert type(error) is not base and hash(type(error)) == hash(base)
    assert InferenceServerNotFoundError != InferenceServerDeadlineExceededError
    assert base != ValueError and InferenceServerValueError != ValueError  # noqa: E721

    class Mine(InferenceServerException):
        pass

    assert Mine != base and hash(Mine) != hash(base)  # a user's subclass: as any class
    assert {base: 1, Mine: 2}[Mine] == 2
    # isinstance, except and issubclass never look at equality
    assert not isinstance(InferenceServerException("m"), InferenceServerNotFoundError)
    assert not issubclass(base, InferenceServerNotFoundError)
    with pytest.raises(InferenceServerNotFoundError):
        try:
            raise InferenceServerException("m")
        except InferenceServerNotFoundError:  # must not catch the base class
            pytest.fail("caught")
        except InferenceServerException:
            raise InferenceServerNotFoundError("m") from None

    @functools.singledispatch
    def kind(error: object) -> str:
        return "other"

    @kind.register
    def _(error: InferenceServerException) -> str:
        return "error"

    assert kind(InferenceServerNotFoundError("m")) == "error" and kind(1) == "other"
