"""The IR document: canonical serialisation, content hash and JSON Schema.

The IR (docs/ir.md) is the only thing the compiler and a runtime share. This module holds
the few functions both sides need to agree on byte for byte: the canonical JSON used for
the content hash, the pretty form written to disk, and the schema that describes it.
Stdlib only, so any part of the package may import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any, TypeVar, cast

from auwgent._version import IR_VERSION

__all__ = ["IR_VERSION", "canonical_json", "compute_hash", "dumps_ir", "load_schema", "with_hash"]

#: Prefix of the ``hash`` field; names the digest so it can change in a later version.
HASH_PREFIX = "sha256:"


def canonical_json(doc: Any) -> str:
    """Return the canonical JSON text of ``doc``: sorted keys, no spaces, UTF-8 as is."""
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def compute_hash(doc: Mapping[str, Any]) -> str:
    """Return ``"sha256:<hex>"`` over the canonical JSON of ``doc`` without its ``hash`` key."""
    body = {key: value for key, value in doc.items() if key != "hash"}
    digest: str = _sha256()(canonical_json(body).encode("utf-8")).hexdigest()
    return HASH_PREFIX + digest


@lru_cache(maxsize=1)
def _sha256() -> Any:
    """SHA-256 from CPython's built-in module when there is one: ``hashlib`` loads OpenSSL
    first (about a tenth of ``import`` + ``auwgent(config)``, which checks the IR's hash)."""
    try:  # the module's name since Python 3.12, then before
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return sha256


_Doc = TypeVar("_Doc", bound=Mapping[str, Any])


def with_hash(doc: _Doc) -> _Doc:
    """Return a copy of ``doc`` whose ``hash`` field matches its content."""
    return cast(_Doc, {**doc, "hash": compute_hash(doc)})


def dumps_ir(doc: Mapping[str, Any]) -> str:
    """Return the on-disk text of an IR document: sorted keys, indent 2, trailing newline."""
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    # Imported here: importlib.resources pulls in tempfile, shutil and more (~13 ms), and
    # the compiler, which imports this module for the hash, never needs the schema.
    return resources.files(__name__).joinpath("schema.json").read_text(encoding="utf-8")


def load_schema() -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of the IR, a fresh copy on every call."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema
