"""The UI's ASGI application: routes, pages, and the guard in front of them.

Pages are rendered on the server by jinja2 with autoescaping on, and every
string a template prints also passes through `printable` (its `finalize`
hook; the CLI's output does too), so neither markup nor hidden characters
(bidi overrides, control characters) from stored ids, names, payloads or
tracebacks reach the page as anything but text. The pages carry no script at all, and the
Content-Security-Policy says so.

The guard refuses, before any page is read:
- a request whose Host is not this machine, while the UI listens on loopback
  only (a DNS-rebinding page in the operator's browser would otherwise read it);
- with a token, a request that does not carry it (header, cookie or query);
- a POST without the form token this server put in its own forms, or whose
  Origin is another site (cross-site request forgery).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from importlib import resources
from typing import Any

import attrs
import jinja2
import markupsafe
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from replaykit import serde
from replaykit._text import printable
from replaykit.errors import CodecError, ScheduleNotFound, StoreError, WorkflowNotFound
from replaykit.log import Status
from replaykit.runtime.admin import export_run, get_run, send_message
from replaykit.stores._checks import check_filter, check_names
from replaykit.stores.base import DamagedRow, Store
from replaykit.stores.codec import CodecStore
from replaykit.ui import _actions, _bulk, _schedules, _updates, _views, _workers

__all__ = ["COOKIE", "TOKEN_HEADER", "create_app"]

log = logging.getLogger("replaykit.ui")

COOKIE = "replaykit_ui_token"
TOKEN_HEADER = "x-replaykit-token"
MAX_FORM_BYTES = 16 * 1024

_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # The token may be in a URL the operator opened; no other site hears of it.
    # (Not no-referrer: Chromium then sends `Origin: null` on the UI's own forms.)
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def _shown(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return printable(value, newlines=True)
    return value


def link(path: str, **params: Any) -> str:
    """A same-site URL with its query built from `params` (None and '' left out)."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((key, str(v)) for v in values if v is not None and v != "")
    return path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("replaykit.ui", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # A form field that sends a stored value back (an id) must hold it exactly:
    # escaped for HTML, but not made printable, or it would name another run.
    env.filters["exact"] = markupsafe.escape
    # file:line of a yield; the whole path is in the cell's title.
    env.filters["site"] = lambda text: text.replace("\\", "/").rsplit("/", 1)[-1]
    env.globals["link"] = link
    env.globals["statuses"] = [s.value for s in Status]
    env.globals["filter_params"] = _views.filter_params
    return env


def is_local_host(host: str) -> bool:
    """Whether `host` (a name or an address, maybe [bracketed]) is this machine's loopback."""
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(host_header: str) -> str:
    """The name part of a Host header: `[::1]:8700` -> `::1`, `a:1` -> `a`."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


@attrs.frozen
class _Settings:
    token: str | None
    local_only: bool
    form_token: str


class _Guard:
    """Checks Host, the access token and adds the security headers (see the module doc)."""

    def __init__(self, app: ASGIApp, settings: _Settings, render: _Render) -> None:
        self.app = app
        self.settings = settings
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(_SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        host = request.headers.get("host", "")
        if self.settings.local_only and not is_local_host(_host_name(host)):
            return self.render.error(
                400,
                "Not this machine's address",
                f"This UI listens on this machine only, and the request named host {host!r}. "
                "Open it as http://127.0.0.1:PORT/ (or localhost); to reach it from elsewhere, "
                "start it with --host and --token.",
            )
        token = self.settings.token
        if token is None:
            return None
        given = _given_token(request)
        if given is not None and hmac.compare_digest(given.encode(), token.encode()):
            if request.query_params.get("token") is not None and request.method == "GET":
                # Swap the token in the URL for a cookie, so that it leaves the
                # address bar and the links the operator copies.
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                # One leading slash: `//host/...` would send the browser to another site.
                path = "/" + request.url.path.lstrip("/")
                target = path + ("?" + urllib.parse.urlencode(rest) if rest else "")
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(
                    COOKIE, token, httponly=True, samesite="strict", path="/", max_age=86400 * 30
                )
                return response
            return None
        return self.render.error(
            401,
            "This UI needs its token",
            "The server was started with --token. Open the address it printed (it ends in "
            "?token=...), or send the token as 'Authorization: Bearer TOKEN' or in the "
            f"{TOKEN_HEADER} header.",
        )


def _given_token(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    header = request.headers.get(TOKEN_HEADER)
    if header:
        return header
    query = request.query_params.get("token")
    if query:
        return query
    cookie = SimpleCookie()
    try:
        cookie.load(request.headers.get("cookie", ""))
    except Exception:  # a malformed Cookie header carries no token
        return None
    morsel = cookie.get(COOKIE)
    return morsel.value if morsel is not None else None


class _Render:
    def __init__(self, env: jinja2.Environment, common: dict[str, Any]) -> None:
        self.env = env
        self.common = common

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        text = self.env.get_template(template).render(**self.common, **context)
        return HTMLResponse(text, status_code=status)

    async def page_off_loop(self, template: str, **context: Any) -> HTMLResponse:
        """`page`, rendered in a worker thread: a long page leaves the loop free for
        the other requests meanwhile."""
        return await run_in_threadpool(self.page, template, **context)

    def error(self, status: int, title: str, message: str) -> HTMLResponse:
        return self.page("error.html", status, title=title, message=message)


class _FormError(Exception):
    pass


class _Refused(Exception):
    """A POST refused before it acts (no form token, not confirmed): `response` says why."""

    def __init__(self, response: Response) -> None:
        super().__init__()
        self.response = response


async def _form(request: Request) -> dict[str, str]:
    """The urlencoded body of a POST (the UI's forms send nothing else)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise _FormError(f"expected a form (application/x-www-form-urlencoded), got {kind!r}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise _FormError(f"the form is larger than {MAX_FORM_BYTES} bytes")
    try:
        pairs = urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError as exc:
        raise _FormError("the form is not UTF-8") from exc
    return dict(pairs)


def _same_origin(request: Request) -> bool:
    """Whether a POST comes from this site's own pages, as far as the browser says.

    Browsers send Sec-Fetch-Site; most send Origin. Neither is required (the
    form token decides then), but one that names another site is refused.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None or (origin == "null" and site == "same-origin"):
        return True
    return urllib.parse.urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def create_app(
    store: Store,
    *,
    token: str | None = None,
    local_only: bool = True,
    store_label: str = "",
) -> Starlette:
    """The UI as an ASGI application over `store`.

    `token`: required on every request when given (see `serve`). `local_only`:
    refuse requests that name a host other than loopback; `serve` sets it
    when it binds a loopback address. The store stays open; the caller closes it.
    """
    env = _environment()
    settings = _Settings(token=token, local_only=local_only, form_token=secrets.token_urlsafe(32))
    render = _Render(
        env,
        {
            "store_label": store_label or type(store).__name__,
            "form_token": settings.form_token,
        },
    )
    css = resources.files("replaykit.ui").joinpath("static/style.css").read_bytes()

    Handler = Callable[[Request], Awaitable[Response]]

    def handled(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except WorkflowNotFound as exc:
                return render.error(404, "No such run", f"{exc}. The runs list shows them all.")
            except CodecError as exc:  # before DamagedRow: an undecodable row is one too
                return render.error(409, "This UI's codec does not match", codec_text(exc))
            except DamagedRow as exc:
                return render.error(
                    500,
                    "This run's stored row is damaged",
                    f"{_views.damaged_text(exc)}. `replaykit workflows delete ID` removes it.",
                )
            except StoreError as exc:
                return render.error(
                    503, "The store did not answer", f"{exc}. Reload the page to try again."
                )
            except _Refused as refused:
                return refused.response
            except _FormError as exc:
                return render.error(400, "Bad request", f"{exc}; use the links and forms here.")
            except Exception as exc:
                log.exception("the UI failed on %s", request.url.path)
                return render.error(
                    500, "Something went wrong", f"{type(exc).__name__}: {exc} (logged)."
                )

        return endpoint

    def checked_post(form: dict[str, str], request: Request) -> Response | None:
        given = form.get("csrf", "")
        if not (
            _same_origin(request)
            and hmac.compare_digest(given.encode(), settings.form_token.encode())
        ):
            return render.error(
                403,
                "Form refused",
                "The form did not carry this server's form token, or came from another site. "
                "The server may have restarted since the page was loaded: reload the page and "
                "press the button again.",
            )
        if form.get("confirm") != "yes":
            return render.error(
                400, "Not confirmed", "Press the confirmation button on the confirmation page."
            )
        return None

    async def posted(request: Request) -> dict[str, str]:
        """The form of an action's POST, once its token and confirmation are checked."""
        form = await _form(request)
        refusal = checked_post(form, request)
        if refusal is not None:
            raise _Refused(refusal)
        return form

    def codec_text(exc: CodecError) -> str:
        given = store.codec.name if isinstance(store, CodecStore) and store.codec else None
        this = f"the codec {given!r}" if given else "no codec"
        return (
            f"{exc}. This UI was started with {this}, and the run's payloads were written "
            f"with the codec {exc.codec_name!r}: the key or the codec does not match. The run "
            "is not damaged; do not delete it. Start the UI with the codec (and key) that "
            "wrote it: replaykit ui --codec MODULE:ATTRIBUTE."
        )

    def run_id(request: Request) -> str:
        workflow_id = request.query_params.get("id")
        if workflow_id is None:
            raise _FormError("no run named: the address needs ?id=WORKFLOW_ID")
        try:
            check_names(workflow_id)
        except ValueError as exc:  # NUL, a lone surrogate, too long: no run has that id
            raise _FormError(f"id: {exc}") from None
        return workflow_id

    async def index(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=303)

    def runs_query(request: Request) -> _views.RunsQuery:
        """The runs list's filter and page from the address (the bulk cancel's too)."""
        params = request.query_params
        statuses: list[Status] = []
        for value in params.getlist("status"):
            try:
                statuses.append(Status(value.upper()))
            except ValueError:
                raise _Refused(
                    render.error(
                        400,
                        "Unknown status",
                        f"{value!r} is not a status; use one of "
                        f"{', '.join(s.value for s in Status)}.",
                    )
                ) from None
        try:
            page = max(int(params.get("page", "1")), 1) - 1
            per_page = min(max(int(params.get("per_page", str(_views.PER_PAGE))), 5), 500)
        except ValueError:
            raise _Refused(
                render.error(400, "Bad page", "page and per_page are whole numbers.")
            ) from None
        try:
            created_from = _views.parse_form_time(params.get("from", ""), "from")
            created_to = _views.parse_form_time(params.get("to", ""), "to")
            refresh = min(max(int(params.get("refresh", "0") or "0"), 0), 3600)
        except ValueError as exc:
            raise _Refused(render.error(400, "Bad filter", f"{exc}.")) from None
        query = _views.RunsQuery(
            statuses=tuple(dict.fromkeys(statuses)),
            name=params.get("name", "").strip(),
            queue=params.get("queue", "").strip(),
            partition_key=params.get("partition_key", "").strip(),
            page=page,
            per_page=per_page,
            created_from=created_from,
            created_to=created_to,
            refresh=refresh,
            id_prefix=params.get("id", "").strip(),
            where_text=params.get("where", "").strip(),
        )
        try:
            check_filter(query.where())  # a filter that does not parse: FilterError
        except ValueError as exc:
            raise _FormError(str(exc)) from None
        return query

    async def runs(request: Request) -> Response:
        query = runs_query(request)
        view = await run_in_threadpool(_views.runs_page, store, query)
        return await render.page_off_loop(
            "runs.html",
            view=view,
            title="Runs",
            refresh=query.refresh,
            form_time=_views.form_time,
            done=_bulk_done(request),
        )

    async def bulk_cancel(request: Request) -> Response:
        """GET: the confirmation naming the count; POST (its form): the cancel."""
        query = runs_query(request)
        if request.method == "POST":
            form = await posted(request)
            try:
                done = await run_in_threadpool(
                    _bulk.cancel_selection, store, query.where(), form.get("reason", "")
                )
            except _bulk.NoFilter as exc:
                return render.error(400, "Choose runs first", f"{exc}.")
            log.info("bulk cancel from the UI: %s", done.summary())
            back = _views.filter_params(query)
            return RedirectResponse(
                link("/runs", **back, done="cancel", n=done.done, skipped=done.skipped),
                status_code=303,
            )
        try:
            counted = await run_in_threadpool(_bulk.preview, store, query.where())
        except _bulk.NoFilter as exc:
            return render.error(400, "Choose runs first", f"{exc}.")
        return await render.page_off_loop(
            "bulk_confirm.html",
            title="Cancel these runs",
            query=query,
            counted=counted,
            form_time=_views.form_time,
        )

    async def run(request: Request) -> Response:
        workflow_id = run_id(request)
        topic = request.query_params.get("topic")
        try:
            since = max(int(request.query_params.get("since", "0")), 0)
        except ValueError:
            raise _FormError("since= is the position a page of the timeline starts at") from None
        try:
            refresh = min(max(int(request.query_params.get("refresh", "0") or "0"), 0), 3600)
        except ValueError:
            raise _FormError("refresh= is the seconds between the page's reloads") from None
        view = await run_in_threadpool(
            _views.run_page, store, workflow_id, topic=topic, log_from=since
        )
        if view is None:
            raise WorkflowNotFound(f"no workflow run with id {workflow_id!r}")
        done = request.query_params.get("done", "")
        return await render.page_off_loop(
            "run.html",
            view=view,
            title=f"Run {workflow_id}",
            done=_DONE.get(done, ""),
            refresh=refresh,
            since=since,
        )

    async def queues(request: Request) -> Response:
        view = await run_in_threadpool(_views.queues_page, store)
        return await render.page_off_loop("queues.html", view=view, title="Queues")

    async def confirm_page(request: Request, action: str) -> Response:
        workflow_id = run_id(request)
        row = await run_in_threadpool(get_run, store, workflow_id)
        if action == "cancel" and row.status.is_terminal:
            return render.error(
                409, "Not cancelled", f"Run {workflow_id!r} is already {row.status.value}."
            )
        if action == "resume" and row.status not in (Status.CANCELLED, Status.PARKED):
            return render.error(
                409,
                "Not resumed",
                f"Run {workflow_id!r} is {row.status.value}; only CANCELLED and PARKED runs "
                "are resumed (a finished run can be forked instead).",
            )
        records: list[Any] = []
        from_position = 0
        if action == "fork":
            records = await run_in_threadpool(store.load_log, workflow_id)
            try:
                from_position = int(request.query_params.get("from", str(len(records))))
            except ValueError:
                return render.error(400, "Bad position", "from= is a position number.")
        return await render.page_off_loop(
            "confirm.html",
            title=f"{action.capitalize()} {workflow_id}",
            action=action,
            row=row,
            records=records,
            from_position=from_position,
        )

    async def act(request: Request, action: str) -> Response:
        workflow_id = run_id(request)
        form = await posted(request)
        try:
            if action == "cancel":
                done = await run_in_threadpool(
                    lambda: _actions.cancel(
                        store, workflow_id, children=form.get("children") == "yes"
                    )
                )
            elif action == "resume":
                done = await run_in_threadpool(
                    lambda: _actions.resume(
                        store,
                        workflow_id,
                        executor_id=form.get("executor", "").strip() or None,
                        app_version=form.get("app_version", "").strip() or None,
                    )
                )
            else:
                try:
                    position = int(form.get("from", ""))
                except ValueError:
                    return render.error(400, "Bad position", "The fork needs a position number.")
                done = await run_in_threadpool(
                    lambda: _actions.fork(
                        store,
                        workflow_id,
                        position,
                        new_id=form.get("new_id", "").strip() or None,
                    )
                )
        except _actions.ActionRefused as exc:
            return render.error(409, f"Not {_PAST[action]}", str(exc))
        except ValueError as exc:  # a name the store refuses (the fork's new id)
            return render.error(400, f"Not {_PAST[action]}", str(exc))
        log.info("%s", done.message)
        return RedirectResponse(link("/run", id=done.workflow_id, done=action), status_code=303)

    async def schedules(request: Request) -> Response:
        view = await run_in_threadpool(_schedules.schedules_page, store)
        done = _schedules.ACTIONS.get(request.query_params.get("done", ""), "")
        return await render.page_off_loop("schedules.html", view=view, title="Schedules", done=done)

    async def run_json(request: Request) -> Response:
        workflow_id = run_id(request)
        exported = await run_in_threadpool(export_run, store, workflow_id)
        # The file's name says which run; only safe characters reach the header.
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in workflow_id)[:100]
        return Response(
            exported.to_json(),
            media_type="application/json",
            headers={"content-disposition": f'attachment; filename="{safe or "run"}.json"'},
        )

    async def send(request: Request) -> Response:
        workflow_id = run_id(request)
        form = await posted(request)
        try:
            message = json.loads(form.get("message", ""))
        except ValueError as exc:
            raise _FormError(
                f'message: not JSON ({exc}); type it as JSON, such as {{"approved": true}} '
                'or "a text"'
            ) from None
        topic = form.get("topic", "").strip() or None
        try:
            await run_in_threadpool(
                lambda: send_message(
                    store,
                    workflow_id,
                    message,
                    topic,
                    idempotency_key=None,
                    max_bytes=serde.DEFAULT_MAX_PAYLOAD_BYTES,
                )
            )
        except ValueError as exc:  # a topic no name may be, a message too large
            raise _FormError(str(exc)) from None
        log.info("message sent to %r (topic %r) from the UI", workflow_id, topic)
        return RedirectResponse(link("/run", id=workflow_id, done="send"), status_code=303)

    async def update(request: Request) -> Response:
        workflow_id = run_id(request)
        form = await posted(request)
        try:
            asked = _updates.parse_update_form(form)
        except _updates.FormRefused as exc:
            raise _FormError(str(exc)) from None
        row = await run_in_threadpool(get_run, store, workflow_id)
        outcome = await run_in_threadpool(_updates.send_update_form, store, workflow_id, asked)
        log.info("update %r sent to %r from the UI", asked.name, workflow_id)
        return await render.page_off_loop(
            "update.html", row=row, outcome=outcome, title=f"Update {asked.name}"
        )

    async def workers(request: Request) -> Response:
        view = await run_in_threadpool(_workers.workers_page, store)
        return await render.page_off_loop("workers.html", view=view, title="Workers")

    def schedule_action(action: str) -> Handler:
        async def endpoint(request: Request) -> Response:
            form = await posted(request)
            name = form.get("name", "")
            try:
                await run_in_threadpool(_schedules.act, store, action, name)
            except ScheduleNotFound as exc:
                return render.error(404, "No such schedule", f"{exc}.")
            except ValueError as exc:  # a name no schedule could have
                raise _FormError(f"name: {exc}") from None
            log.info("schedule %r: %s from the UI", name, action)
            return RedirectResponse(link("/schedules", done=action), status_code=303)

        return endpoint

    def confirm_route(action: str) -> Handler:
        async def endpoint(request: Request) -> Response:
            if request.method == "POST":
                return await act(request, action)
            return await confirm_page(request, action)

        return endpoint

    async def stylesheet(request: Request) -> Response:
        return Response(css, media_type="text/css")

    async def not_found(request: Request, exc: Exception) -> Response:
        return render.error(404, "Not found", "No page here. The runs list is at /runs.")

    routes = [
        Route("/", handled(index)),
        Route("/runs", handled(runs)),
        Route("/runs/cancel", handled(bulk_cancel), methods=["GET", "POST"]),
        Route("/run", handled(run)),
        Route("/run.json", handled(run_json)),
        Route("/send", handled(send), methods=["POST"]),
        Route("/update", handled(update), methods=["POST"]),
        Route("/queues", handled(queues)),
        Route("/schedules", handled(schedules)),
        Route("/workers", handled(workers)),
        Route("/static/style.css", stylesheet),
    ]
    routes.extend(
        Route(f"/{action}", handled(confirm_route(action)), methods=["GET", "POST"])
        for action in ("cancel", "resume", "fork")
    )
    routes.extend(
        Route(f"/schedules/{action}", handled(schedule_action(action)), methods=["POST"])
        for action in _schedules.ACTIONS
    )
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    app.add_middleware(_Guard, settings=settings, render=render)
    app.state.form_token = settings.form_token
    return app


def _bulk_done(request: Request) -> str:
    """The runs list's notice after a bulk cancel: its words are the UI's, only the two
    counts come from the address (whole numbers, or no notice)."""
    params = request.query_params
    if params.get("done") != "cancel":
        return ""
    try:
        done, skipped = int(params.get("n", "")), int(params.get("skipped", ""))
    except ValueError:
        return ""
    return (
        f"Cancelled {done} run(s); {skipped} skipped (finished already). An engine running "
        "one stops at its next record; Resume on a run's page continues it from its log."
    )


_PAST = {"cancel": "cancelled", "resume": "resumed", "fork": "forked"}
# The notice after an action is chosen by a code in the URL, never taken from it:
# a link of someone else's cannot make the page say what they like.
_DONE = {
    "cancel": "Cancelled. An engine running it stops at its next record; "
    "Resume continues it from its log.",
    "resume": "Resumed: PENDING again. The engine with its executor id and app version "
    "runs it (at once if that engine is running, else when it starts).",
    "fork": "This is the fork. It is PENDING; the engine with its executor id and app "
    "version runs it live from the position it was forked at.",
    "send": "Sent: the message waits in the run's inbox until its Recv of that topic takes it.",
}
