"""Where and how the agent serves: `serve()` arguments, else the TTRACE_* environment
(docs/protocol.md, "Starting an agent without changing the capture lines")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ServeConfig:
    reference: Path
    host: str = "127.0.0.1"
    port: int = 0
    token_file: Path | None = None
    endpoint_file: Path | None = None
    idle_timeout: float = 3600.0

    @classmethod
    def resolve(cls, reference: Any = None, **options: Any) -> ServeConfig:
        env = os.environ
        unknown = set(options) - {"host", "port", "token_file", "endpoint_file", "idle_timeout"}
        if unknown:
            raise ConfigError(f"unknown serve() options: {sorted(unknown)}")
        ref = reference if reference is not None else env.get("TTRACE_REFERENCE")
        if not ref:
            raise ConfigError(
                "serving needs a reference bundle: serve(reference=...) or TTRACE_REFERENCE"
            )
        ref_path = Path(ref)
        if not (ref_path / "manifest.json").is_file():
            raise ConfigError(f"{ref_path}: not a trace bundle (no manifest.json)")

        def pick(name: str, var: str, default: Any) -> Any:
            value = options.get(name)
            return value if value is not None else env.get(var, default)

        try:
            port = int(pick("port", "TTRACE_AGENT_PORT", 0))
            idle = float(pick("idle_timeout", "TTRACE_AGENT_IDLE", 3600))
        except ValueError as exc:
            raise ConfigError(f"bad TTRACE_AGENT_PORT or TTRACE_AGENT_IDLE: {exc}") from None
        if not 0 <= port < 65536 or idle <= 0:
            raise ConfigError(f"port {port} or idle timeout {idle} out of range")
        token = pick("token_file", "TTRACE_TOKEN_FILE", None)
        endpoint = pick("endpoint_file", "TTRACE_AGENT_ENDPOINT_FILE", None)
        return cls(
            reference=ref_path,
            host=str(pick("host", "TTRACE_AGENT_HOST", "127.0.0.1")),
            port=port,
            token_file=Path(token) if token else None,
            endpoint_file=Path(endpoint) if endpoint else None,
            idle_timeout=idle,
        )
