"""Build hook for the optional C accelerator of the BYTES tensor codec.

Everything else lives in pyproject.toml.  The extension is ``optional``: where no C
compiler is available the install still succeeds and ``tritonclient.utils`` falls back
to its numpy implementation (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tritonclient.utils._speedups",
            sources=["tritonclient/utils/_speedups.c"],
            optional=True,
        )
    ]
)
