"""Version numbers shared by the compiler, the generated bindings and the runtime."""

from typing import Final

__version__ = "0.1.0"

#: Version of the IR document format (docs/ir.md). A runtime refuses other major versions.
IR_VERSION: Final = 1
