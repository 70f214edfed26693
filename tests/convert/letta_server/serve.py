"""Run a real Letta 0.16.8 server on loopback over a SQLite file (run inside the Letta venv, never by pytest's Python).

Letta 0.16.8 (PyPI ``letta``) chooses SQLite in ``letta/settings.py``
(``Settings.database_engine`` is SQLITE when no Postgres URI is configured) but
``letta/server/db.py`` builds its one async engine from ``settings.letta_pg_uri``,
which then falls back to ``postgresql+pg8000://letta:letta@localhost:5432/letta``,
and the wheel ships no migrations. So this launcher, before the app is imported,
points ``letta.server.db``'s module-level ``engine`` and ``async_session_factory``
at ``sqlite+aiosqlite:///<db>`` and creates Letta's tables from its own ORM
definitions (``letta.orm.Base.metadata.create_all``); then it serves
``letta.server.rest_api.app:app`` with uvicorn on 127.0.0.1. No LLM or network is
needed for agent import and export.

    <venv>/bin/python serve.py --port 8283 --data DIR
"""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", required=True, help="a directory for the database and Letta's home")
    args = parser.parse_args()
    data = os.path.abspath(args.data)
    os.makedirs(data, exist_ok=True)
    os.environ["HOME"] = data  # Letta writes ~/.letta (config, logs) there
    os.chdir(data)  # and openapi_letta.json into the working directory
    os.environ.setdefault("LETTA_DISABLE_SQLALCHEMY_POOLING", "true")  # no asyncpg connect arguments
    os.environ.setdefault("LETTA_TELEMETRY_ENABLE", "false")
    db_file = os.path.join(data, "letta.db")

    from sqlalchemy import create_engine
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

    import letta.server.db as letta_db

    engine = create_async_engine(f"sqlite+aiosqlite:///{db_file}")
    letta_db.engine = engine
    letta_db.async_session_factory = async_sessionmaker(
        engine, class_=AsyncSession, expire_on_commit=False, autocommit=False, autoflush=False
    )
    import letta.orm  # noqa: F401  (registers every table on Base.metadata)
    from letta.orm.base import Base

    sync = create_engine(f"sqlite:///{db_file}")
    Base.metadata.create_all(sync)
    sync.dispose()

    import uvicorn

    from letta.server.rest_api.app import app

    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
