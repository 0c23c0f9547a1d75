"""Command-line entry point: ``python -m mock_server``."""

import sys

sys.exit(
    "mock_server: the bundled server is not implemented yet "
    "(tracked in the server-core and server-frontends issues)"
)
