"""The HTTP/JSON front door: the wire contracts other trainers' sandboxes speak, on the gRPC service's process.

``HttpFrontDoor(app)`` serves, on its own port (``--http-port``, off by default) and on the event loop of the
``VerifierApp`` it is given (its engine, warm sandbox pool, tenants, quotas, audit log and metrics):

- ``POST /run_code``: SandboxFusion (verl's ``sandbox_fusion`` reward, their SDK) -- ``sandboxfusion.py``;
- ``POST /run_jupyter``: SandboxFusion's notebook cells, one sandbox session per request -- ``jupyter.py``;
- ``POST /get_reward`` (and ``/get_reward/<team/name@version>``): OpenRLHF's ``--remote_rm_url`` --
  ``openrlhf.py``;
- ``POST /test_program``, ``POST /test_program_stdio``: open-instruct's code API -- ``openinstruct.py``;
- ``GET /health`` (open-instruct's shape; 503 while the sandbox backend is down), ``GET /v1/ping``
  (SandboxFusion's), ``GET /metrics`` (the service's Prometheus metrics; it names tenants, so with a tenants
  file it takes a key as the POSTs do).

Every POST is authenticated as gRPC calls are (``Authorization: Bearer <key>`` or ``X-Api-Key``, when the
service has a tenants file), counted in ``rlvr_rpcs_total{method="POST /path", code="<HTTP status>"}``, and
logged in one line with its request id (``X-Request-Id``, echoed). A body over ``http_max_body_bytes`` (as sent or
once inflated: it is read in chunks, never inflated past the limit) is 413, and so is one holding more than
``http_max_body_values`` JSON values (a body over 64 KiB is parsed in a pure worker process: the JSON parser
holds the GIL while it runs, a second for 16 MB of small values); past the bytes the door holds at once
(per tenant, in all) 429; connections are capped per door and per client address, a connection that sends no
whole header within ``http_idle_timeout_s`` is closed, and a client that goes away cancels its request's work
(``limits.py``);
a request that is not what the endpoint takes is a 4xx whose JSON body says what is wrong (``error``); a
fault of the service is a 500 naming a reference in the service log, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import uuid
from collections.abc import Callable

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from verifier_service._generated import verifier_pb2 as pb
from verifier_service.doors.http import jupyter, openinstruct, openrlhf, sandboxfusion
from verifier_service.doors.http.calls import HttpError, verify
from verifier_service.doors.http.limits import BodyBudget, BodyTurns, Connections, Held, fd_limit, read_body
from verifier_service.engine.pool import json_then
from verifier_service.service.context import current_request_id, request_id_from
from verifier_service.tenancy.auth import current_tenant
from verifier_service.wire import OVERSIZE

log = logging.getLogger("verifier_service.http")
SERVICE_FAULT = 500
PARSE_ON_LOOP_BYTES = 64 * 1024  # JSON bodies over this are parsed in a pure worker (up to a second per MB)
PARSE_TIMEOUT_S = 30.0  # a body the worker cannot parse within this is refused (413; 16 MB takes about 1 s)


def _encode(data) -> bytes:
    """orjson first: a program's output in a reply (up to ``output_limit_bytes``, megabytes for /run_jupyter) took
    the standard encoder milliseconds of the event loop (7 ms a MiB), a step every other call waited behind.
    What orjson refuses (a lone surrogate, an integer past 64 bits) the standard encoder takes, where "replace"
    makes a lone surrogate (a JSON \udcff escape the caller sent, echoed in a message) a "?"."""
    try:
        return orjson.dumps(data)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(data, ensure_ascii=False).encode("utf-8", "replace")


def _json(data, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=_encode(data), status=status, content_type="application/json", headers=headers)


def _error(status: int, message: str, headers: dict[str, str] | None = None, body: dict | None = None
           ) -> web.Response:
    return _json(body if body is not None else {"error": message}, status, headers)


def _judged(result: pb.VerifyResult) -> pb.VerifyResult:
    """The result, unless the sandbox could not judge it: then 503 (the caller retries), never 0 for all."""
    if result.verdict == pb.INFRA_ERROR:
        raise HttpError(503, f"the sandbox could not judge the program (INFRA_ERROR: {result.detail[:300]}); "
                             "retry", {"Retry-After": "1"})
    return result


class HttpFrontDoor:
    """The HTTP server of one ``VerifierApp`` (duck-typed: config, verifier, sandbox, metrics, auth, audit,
    sandbox_problem)."""

    def __init__(self, app):
        self.app = app
        self.runner: web.AppRunner | None = None
        self.port: int | None = None
        self._socket: socket.socket | None = None
        self.strip_tokens = openrlhf.parse_tokens(app.config.openrlhf_strip_tokens)
        self._server: asyncio.AbstractServer | None = None
        config = app.config
        self.connections = Connections(config.http_max_connections, config.http_max_connections_per_peer)
        self.budget = BodyBudget(config.http_body_budget_bytes, config.http_tenant_body_budget_bytes)
        self.turns = BodyTurns(config.http_tenant_body_reads)
        web_app = web.Application(client_max_size=app.config.http_max_body_bytes, middlewares=[self._middleware])
        web_app.add_routes([
            web.post("/run_code", self.run_code),
            web.post("/run_jupyter", self.run_jupyter),
            web.post("/get_reward", self.get_reward),
            web.post("/get_reward/{verifier:.+}", self.get_reward),
            web.post("/test_program", self.test_program),
            web.post("/test_program_stdio", self.test_program_stdio),
            web.get("/health", self.health),
            web.get("/v1/ping", self.ping),
            web.get("/metrics", self.metrics),
        ])
        self.web_app = web_app

    def bind(self, host: str, port: int, shared: bool = False) -> int:
        """Binds and listens on ``host:port`` (0: a free port) before anything else starts, so that a port that
        cannot be had (in use by anyone) fails the service at once; returns the port. ``shared``: the worker
        processes of one ``serve --workers N`` share it (SO_REUSEPORT). Connections wait in the backlog until
        ``start``."""
        host = host.strip("[]") or None  # type: ignore[assignment]  # (None: every address)
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if shared and hasattr(socket, "SO_REUSEPORT"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host or "", port))
            sock.listen(1024)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._socket = sock
        self.port = sock.getsockname()[1]
        return self.port

    async def start(self) -> None:
        """Serves on the bound socket: each connection counted (``limits.Connections``), a request's handler
        cancelled when its client goes away, a connection without a whole header in ``http_idle_timeout_s`` closed."""
        config = self.app.config
        self.runner = web.AppRunner(self.web_app, access_log=None, handler_cancellation=True, auto_decompress=False,
                                    keepalive_timeout=config.http_idle_timeout_s,
                                    lingering_time=0)  # (a refused body's rest: limits.read_body drops a little)
        await self.runner.setup()
        assert self._socket is not None, "bind() first"
        self.connections.limit = max(16, min(config.http_max_connections, fd_limit() - config.fd_reserve))
        server = self.runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: self.connections.protocol(server()), sock=self._socket)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    # ---- what every request goes through ------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        rid = request_id_from(request.headers.items())
        current_request_id.set(rid)
        started = time.monotonic()
        route = request.match_info.route.resource
        path = route.canonical if route is not None else "(no route)"
        method = f"{request.method} {path}"
        metrics = self.app.metrics
        protected = request.method == "POST"
        if metrics is not None and protected:
            metrics.in_flight += 1
        # /metrics names tenants: with a tenants file it takes a key as the POST endpoints do (a scraper without one
        # reads the metrics port, which operators keep private)
        keyed = protected or (request.path == "/metrics" and self.app.tenants is not None)
        request["rlvr_held"] = held = Held()  # the body's bytes held against the budget (read_body), until answered
        try:
            response = await self._answer(request, handler, keyed)
        finally:
            if held.bytes:
                self.budget.release(current_tenant.get().name, held.bytes)
            if metrics is not None and protected:
                metrics.in_flight -= 1
        response.headers["X-Request-Id"] = rid
        if held.aside:  # (its body was received aside: the server's parser never saw its end)
            response.force_close()
        if protected:
            duration = time.monotonic() - started
            if metrics is not None:
                metrics.rpcs.labels(method, str(response.status)).inc()
                metrics.rpc_latency.labels(method).observe(duration)
                if response.status >= 400 and response.status not in (401, 404, 405):
                    metrics.refused(current_tenant.get().name, str(response.status))
            level = logging.WARNING if response.status >= SERVICE_FAULT else logging.INFO
            extra: dict = {"rpc": {"method": method, "code": response.status, "tenant": current_tenant.get().name,
                                   "duration_ms": round(duration * 1000, 1)}}
            if response.status >= 400:  # refusals are bounded per client address (doors/logs.RepeatFilter)
                extra["repeat_key"] = request.remote or "?"
            log.log(level, "http %s %d", method, response.status, extra=extra)
        return response

    async def _answer(self, request: web.Request, handler, keyed: bool) -> web.StreamResponse:
        try:
            if keyed:
                current_tenant.set(await self._authenticate(request))
            return await handler(request)
        except HttpError as exc:
            response = _error(exc.status, exc.message, exc.headers, exc.body)
            if request.path.startswith("/get_reward") and 400 <= exc.status < 500:
                # OpenRLHF's client logs only the status line of a refusal (then retries it): the reason phrase
                # carries the message, so its log says what to fix.
                response.set_status(exc.status, " ".join(exc.message.split()).encode("ascii", "replace")
                                    .decode()[:400])
            return response
        except web.HTTPRequestEntityTooLarge:
            limit = self.app.config.http_max_body_bytes
            return _error(413, f"the request body is over this service's limit of {limit} bytes "
                               "(http_max_body_bytes): send fewer or smaller items per request")
        except web.HTTPException as exc:  # aiohttp's own answers: 404, 405, ...
            reason = {404: f"no endpoint {request.path}; endpoints: POST /run_code, /run_jupyter, /get_reward, "
                           "/test_program, /test_program_stdio; GET /health, /metrics",
                      405: f"{request.method} is not allowed on {request.path}"}.get(exc.status, exc.reason)
            return _error(exc.status, reason)
        except Exception:
            ref = uuid.uuid4().hex[:12]
            log.exception("internal error in %s %s (ref %s)", request.method, request.path, ref)
            return _error(500, f"internal error; the server log has reference {ref}")

    async def _authenticate(self, request: web.Request):
        tenant, problem = self.app.authenticate(f"POST {request.path}", tuple(request.headers.items()))
        if tenant is None:
            delay = self.app.refusal_delay(request.remote or "?")
            if delay:  # (past auth_refusal_burst a second from this address)
                await asyncio.sleep(delay)
            raise HttpError(401, problem.replace("the metadata", "the header"), {"WWW-Authenticate": "Bearer"})
        return tenant

    async def _body(self, request: web.Request, then: tuple[Callable, tuple] | None = None):
        """The request's JSON body; with ``then`` (a module-level function and its other arguments: ``json_then``),
        what that function makes of it, where the body was parsed (a large one in a pure worker)."""
        config = self.app.config
        pieces = await read_body(request, config.http_max_body_bytes, config.http_body_timeout_s, self.budget,
                                 current_tenant.get().name, request["rlvr_held"], self.turns)
        limit = config.http_max_body_values
        if sum(map(len, pieces)) <= PARSE_ON_LOOP_BYTES:  # (a few ms at most, whatever it holds)
            status, value = json_then(b"".join(pieces), limit, then)
        else:  # the C parser holds the GIL while it runs: a large body is parsed in a pure worker, never here
            status, value = await self.app.pure_pool.parse_json(pieces, limit, PARSE_TIMEOUT_S,
                                                                current_tenant.get().name, then)
        if status == "ok":
            return value
        if status == "refused":
            raise HttpError(*value)
        if status == "error":
            raise RuntimeError(f"turning the request body into requests failed: {value}")
        if status == "invalid":
            raise HttpError(400, value)
        if status == "limit":
            raise HttpError(413, f"the request body holds more than {limit} JSON values (http_max_body_values): send "
                                 "fewer items per request")
        if status == "timeout":
            raise HttpError(413, f"the request body took more than {PARSE_TIMEOUT_S:g} s to parse: send fewer or "
                                 "smaller items per request")
        raise HttpError(503, "the process that parses request bodies failed: retry", {"Retry-After": "1"})

    def _audit(self, method: str, request: web.Request, fields: dict, started: float) -> None:
        tenant = current_tenant.get()
        self.app.audit.write({"audit": "run", "method": method, "request_id": current_request_id.get(),
                              "tenant": tenant.name, "count": 1, "duration_s": round(time.monotonic() - started, 6),
                              **fields})

    # ---- endpoints --------------------------------------------------------------------------

    async def run_code(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        started, fields = time.monotonic(), {"status": "REFUSED"}
        try:
            return _json(await sandboxfusion.run_code(self.app, body, current_tenant.get(), fields))
        finally:
            self._audit("POST /run_code", request, fields, started)

    async def run_jupyter(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        started, fields = time.monotonic(), {"status": "REFUSED"}
        try:
            return _json(await jupyter.run_jupyter(self.app, body, current_tenant.get(), fields))
        finally:
            self._audit("POST /run_jupyter", request, fields, started)

    async def get_reward(self, request: web.Request) -> web.Response:
        verifier = request.match_info.get("verifier") or request.headers.get(openrlhf.VERIFIER_HEADER) or ""
        # (made into requests where the body is parsed: a completion over max_completion_bytes comes back as its
        # size, not its text)
        encoded = await self._body(request, (openrlhf.encoded_requests_of, (
            verifier.strip(), self.strip_tokens, self.app.config.max_completion_bytes, OVERSIZE)))
        requests = [pb.VerifyRequest.FromString(item) for item in encoded]
        if not requests:
            return _json(openrlhf.answer([]))
        results = await verify(self.app.verifier, requests, request.headers, "POST /get_reward")
        return _json(openrlhf.answer(results))

    async def test_program(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        message, where, _ = openinstruct.assert_request(body, self.app.config.max_timeout_s)
        result = None
        if message is not None:
            result = _judged((await verify(self.app.verifier, [message], request.headers, "POST /test_program"))[0])
        return _json(openinstruct.assert_answer(result, where))

    async def test_program_stdio(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        message, count = openinstruct.stdio_request(body, self.app.config.max_timeout_s)
        result = None
        if message is not None:
            result = _judged((await verify(self.app.verifier, [message], request.headers,
                                           "POST /test_program_stdio"))[0])
        return _json(openinstruct.stdio_answer(result, count))

    async def health(self, request: web.Request) -> web.Response:
        problem = self.app.sandbox_problem
        if problem:
            return _json({"status": "unhealthy", "reason": problem}, 503)
        return _json({"status": "healthy"})

    async def ping(self, request: web.Request) -> web.Response:
        return _json("pong")

    async def metrics(self, request: web.Request) -> web.Response:
        """Every series for an operator's key (or without tenants); a tenant's key reads only its own series (those
        labelled with its name): other tenants' names and counts are the operator's."""
        text = generate_latest(self.app.metrics.registry)
        tenant = current_tenant.get()
        if self.app.tenants is not None and not tenant.operator:
            text = own_series(text, tenant.name)
        return web.Response(body=text, headers={"Content-Type": CONTENT_TYPE_LATEST})


def own_series(exposition: bytes, tenant: str) -> bytes:
    """The samples of a Prometheus text exposition labelled ``tenant="<tenant>"``, with their HELP and TYPE."""
    mark = f'tenant="{tenant}"'.encode()
    out: list[bytes] = []
    comments: list[bytes] = []
    for line in exposition.splitlines(keepends=True):
        if line.startswith(b"#"):
            if line.startswith(b"# HELP"):
                comments = []
            comments.append(line)
        elif mark in line:
            out.extend(comments)
            comments = []
            out.append(line)
    return b"".join(out)
