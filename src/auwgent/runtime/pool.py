"""The agent's providers: built once per model, sharing one HTTP client per event loop.

:class:`ProviderPool` owns the API keys the agent resolved at construction, the provider that
replaces every model (``provider: "offline"`` or a :class:`Provider` object), the HTTP client
the agent creates when the config gives none, and the event loop that client belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auwgent.errors import ConfigError
from auwgent.ir.model import Document as IRDocument
from auwgent.runtime.config import (
    RuntimeOptions,
    provider_key,
    resolve_api_keys,
    resolve_base_url,
)
from auwgent.runtime.providers.base import Provider

if TYPE_CHECKING:
    import asyncio

__all__ = ["ProviderPool"]


class ProviderPool:
    """The providers of one agent, and the HTTP client they share (see the module docstring)."""

    def __init__(self, doc: IRDocument, options: RuntimeOptions) -> None:
        self._options = options
        #: The provider that answers for every model, when the config names one.
        self.override = _provider_override(options.provider)
        self._api_keys: dict[str, str] = {}
        if self.override is None:
            self._api_keys = resolve_api_keys(doc, options.api_keys)
        #: The HTTP client the agent created (``None``: none yet, or the config gives one).
        self.client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._providers: dict[tuple[Any, ...], Provider] = {}

    def provider(self, model: Mapping[str, Any]) -> Provider:
        """The provider for an IR ``Model``, built once and reused by every run."""
        if self.override is not None:
            return self.override
        client = self._http_client()
        key = (model["provider"], model.get("id"), model.get("base_url"))
        found = self._providers.get(key)
        if found is None:
            found = self._providers[key] = self._make(model, client)
        return found

    def answering(self, model: Mapping[str, Any]) -> str:
        """How ``model_calls`` names who answers for ``model``: ``provider:model``, or the
        name of the provider that replaces every model (``"offline"``, ``"scripted"``)."""
        if self.override is not None:
            return str(getattr(self.override, "name", "") or type(self.override).__name__)
        return f"{provider_key(model)}:{model['model']}"

    def _http_client(self) -> Any:
        """The config's ``httpClient``, else the agent's own, created on first use per loop.

        One client per agent (not per run) keeps connections, and TLS sessions with real APIs,
        alive between runs. A run in another event loop (each ``run_sync`` has its own) gets a
        new client; the previous one belongs to its loop and is released by ``run_sync`` or
        :meth:`Agent.aclose`.
        """
        given = self._options.http_client
        if given is not None:
            return given
        import asyncio  # the first request's, in its event loop

        loop = asyncio.get_running_loop()
        if self.client is None or self._client_loop is not loop:
            self.client = _default_wire()
            self._client_loop = loop
            self._providers.clear()  # they hold the previous client
        return self.client

    async def release(self) -> None:
        """Close the agent's own HTTP client if it belongs to the running loop; never the
        config's ``httpClient``. A client of another (finished) loop is only dropped."""
        client, loop = self.client, self._client_loop
        if client is None:
            return
        self.client = self._client_loop = None
        self._providers.clear()
        import asyncio

        if loop is asyncio.get_running_loop():
            await client.aclose()

    def _make(self, model: Mapping[str, Any], client: Any) -> Provider:
        options = self._options
        from auwgent.runtime.providers.factory import make_provider  # the first request's

        return make_provider(
            model,
            api_key=self._api_keys.get(provider_key(model)),
            base_url=resolve_base_url(model, options.base_urls),
            client=client,
            retry=options.retry,
            timeouts=options.timeouts,
            limits=options.limits,
            strict=options.strict,
        )


def _provider_override(value: Any) -> Provider | None:
    if value is None and os.environ.get("AUWGENT_PROVIDER", "").strip().lower() == "offline":
        value = "offline"
    if value is None:
        return None
    if value == "offline":
        return _offline()
    if isinstance(value, str):
        raise ConfigError(f"provider: unknown provider {value!r} (use 'offline' or a Provider)")
    if not callable(getattr(value, "stream", None)):
        raise ConfigError(
            f"provider: expected a Provider (with stream() and embed()) or 'offline', "
            f"got {type(value).__name__}"
        )
    return value  # type: ignore[no-any-return]


def _default_wire() -> Any:
    """The agent's own connections, made by its first request (httpcore is imported then)."""
    from auwgent.runtime.providers.wire import default_wire

    return default_wire()


def _offline() -> Provider:
    from auwgent.runtime.providers.offline import OfflineModel

    return OfflineModel()
