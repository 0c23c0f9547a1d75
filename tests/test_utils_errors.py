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
