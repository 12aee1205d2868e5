"""The console's Starlette application (SPEC §24): pages, the token and CSRF checks, changes through the run
service, and live updates as server-sent events.

Every request needs the token: `?token=` (which sets a cookie and redirects to the same page without it) or the
cookie; anything else is HTTP 401, assets included. Every change is a POST to `/act` whose form carries the
CSRF token (derived from the token) in a hidden field; without it, or with a wrong one, HTTP 403 and nothing
changes. A POST answers with a redirect to the page it came from, which shows what happened (a notice kept
on the server for that one redirect, so no text travels in the URL). GET requests change nothing.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from hashlib import sha256
from importlib import resources
from typing import Any, Callable
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..decisions import Decision, console_person
from ..runs import service
from . import views

LIVE_POLL_S = 0.1
PING_S = 15.0
STATIC = {"console.css": "text/css; charset=utf-8", "live.js": "text/javascript; charset=utf-8"}


@dataclass
class Console:
    """What the application serves: the project's store (opened on first need), its root and session, the
    token, and the notices waiting for their page."""
    root: str
    session: Any
    token: str
    open_store: Callable[[], Any]
    cookie: str = "sage_ui"
    stopping: threading.Event = field(default_factory=threading.Event)
    notices: dict[str, tuple[str, bool]] = field(default_factory=dict)
    _store: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def csrf(self) -> str:
        return hmac.new(self.token.encode(), b"sage ui csrf", sha256).hexdigest()

    def store(self) -> Any:
        """The project's store, opened (and created, for SQLite) on first need."""
        with self._lock:
            if self._store is None:
                self._store = self.open_store()
            return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def notice(self, text: str, ok: bool) -> str:
        key = secrets.token_urlsafe(9)
        if len(self.notices) > 200:
            self.notices.clear()
        self.notices[key] = (text, ok)
        return key


class Live:
    """The fingerprints the live-update streams compare, one per watched page (None: the runs list; else a run
    id), computed at most once per poll for all the streams of that page, and on a store that can say so
    (SQLite's change marker) only when something was committed since, or every FORCE_S (a lease going stale
    writes nothing); on one that cannot, at most every UNMARKED_S."""

    FORCE_S = 5.0
    UNMARKED_S = 0.5

    def __init__(self, console: Console) -> None:
        self.console = console
        self.lock = threading.Lock()
        self.seen: dict[str | None, tuple[float, Any, float, str]] = {}   # checked, marker, computed, print

    def mark(self, key: str | None) -> str:
        """A short digest of the fingerprint: what a page was rendered after (taken before its data is read, so
        that any change after it shows as a difference) and what its stream compares."""
        return sha256(self.fingerprint(key).encode()).hexdigest()[:16]

    def fingerprint(self, key: str | None) -> str:
        with self.lock:
            now = time.monotonic()
            found = self.seen.get(key)
            store = self.console.store()
            reader = getattr(store, "change_marker", None)
            # without a marker (PostgreSQL) every look reads the store: less often, since many may watch
            if found is not None and now - found[0] < (LIVE_POLL_S if reader is not None else self.UNMARKED_S):
                return found[3]
            marker = reader() if reader is not None else None
            if found is not None and marker is not None and marker == found[1] and now - found[2] < self.FORCE_S:
                self.seen[key] = (now, marker, found[2], found[3])
                return found[3]
            value = views.fingerprint(store, key)
            self.seen[key] = (now, marker, now, value)
            return value


def _templates() -> Any:
    import jinja2
    loader = jinja2.PackageLoader("sagepy.console", "templates")
    env = jinja2.Environment(loader=loader, autoescape=True, trim_blocks=True, lstrip_blocks=True)
    return env


def create_app(console: Console) -> Starlette:
    env = _templates()
    live = Live(console)

    def page(request: Request, name: str, live: str | None, **values: Any) -> HTMLResponse:
        notice = console.notices.pop(request.query_params.get("notice", ""), None)
        html = env.get_template(name).render(csrf=console.csrf, live=live, notice=notice, path=request.url.path,
                                             here=_here(request), **values)
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def runs(request: Request) -> Response:
        query = request.query_params
        filters = {k: query.get(k, "") for k in ("status", "queue", "host", "entry")}
        page_no = int(query.get("page", "1")) if query.get("page", "1").isdigit() else 1
        seen = await run_in_threadpool(live.mark, None)
        data = await run_in_threadpool(lambda: views.runs_page(console.store(), filters, page_no))
        return page(request, "runs.html", f"/events?seen={seen}", data=data, statuses=views.STATUSES, title="Runs",
                    more=_paging(filters))

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        page_text = request.query_params.get("page", "1")
        page_no = int(page_text) if page_text.isdigit() else 1

        def read() -> Any:
            store = console.store()
            try:
                found = service.find_run(store, run_id)
            except service.NoRun:
                return None, ""
            seen = live.mark(found.id)
            return views.run_page(store, console.root, found, page_no), seen
        data, seen = await run_in_threadpool(read)
        if data is None:
            return page(request, "missing.html", None, run_id=run_id, title="No such run")
        after = data.output[-1][0] if data.output else 0
        return page(request, "run.html", "/events?" + urlencode({"run": data.run.id, "after": after, "seen": seen}),
                    data=data,
                    title=f"Run {data.run.id}")

    async def timeline(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        path = views.trace_file(console.root, run_id)
        if path is None:
            return PlainTextResponse(f"no trace of run {run_id}", status_code=404)
        from ..traceview.model import build, read_events
        from ..traceview.render import render
        with open(path, encoding="utf-8", errors="replace") as handle:
            events, _ = read_events(handle.read())
        if not events:
            return PlainTextResponse(f"the trace of run {run_id} holds no events", status_code=404)
        return HTMLResponse(render(build(events), f"run {run_id}"))

    async def people(request: Request) -> Response:
        seen = await run_in_threadpool(live.mark, None)
        data = await run_in_threadpool(lambda: service.pending(console.store()))
        return page(request, "people.html", f"/events?seen={seen}", pending=data, shown=views.shown_json, title="People")

    async def operations(request: Request) -> Response:
        def read() -> Any:
            store = console.store()
            runs = store.list_runs()
            now = time.time()
            open_runs = [views.run_row(r, None, now) for r in runs if views.shown_status(r, now) not in
                         ("completed", "failed", "cancelled")]
            halted = [(r.id, [views.step_row(s) for s in store.steps(r.id) if s.status == "started"])
                      for r in runs if r.status == "halted"]
            return views.workers(store), (open_runs, halted)
        seen = await run_in_threadpool(live.mark, None)
        workers, (open_runs, halted) = await run_in_threadpool(read)
        return page(request, "operations.html", f"/events?seen={seen}", workers=workers, open_runs=open_runs, halted=halted,
                    title="Operations")

    async def evals(request: Request) -> Response:
        from .evals import read_reports
        data = await run_in_threadpool(read_reports, console.root)
        return page(request, "evals.html", None, data=data, title="Evals")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found", status_code=404)
        body = resources.files("sagepy.console").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    async def events(request: Request) -> Response:
        run_id = request.query_params.get("run")
        after_text = request.query_params.get("after", "0")
        after = int(after_text) if after_text.isdigit() else 0

        async def stream() -> Any:
            nonlocal after
            last = request.query_params.get("seen") or await run_in_threadpool(live.mark, run_id)
            yield "retry: 1000\n\n"
            quiet = 0.0
            while not console.stopping.is_set():
                await asyncio.sleep(LIVE_POLL_S)
                if run_id is not None:   # a run's new output lines go to its page as they are
                    lines = await run_in_threadpool(views.output_lines, console.store(), run_id, after)
                    if lines:
                        after = lines[-1][0]
                        yield f"event: output\ndata: {json.dumps(lines, ensure_ascii=False)}\n\n"
                now = await run_in_threadpool(live.mark, run_id)
                if now != last:
                    last = now
                    quiet = 0.0
                    yield f"event: change\ndata: {int(time.time() * 1000)}\n\n"
                    continue
                quiet += LIVE_POLL_S
                if quiet >= PING_S:
                    quiet = 0.0
                    yield ": ping\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def act(request: Request) -> Response:
        form = await request.form()
        if not hmac.compare_digest(str(form.get("csrf", "")), console.csrf):
            return PlainTextResponse("forbidden: the form's CSRF token is missing or wrong", status_code=403)
        text, ok = await run_in_threadpool(_act, console, {k: str(v) for k, v in form.items()})
        back = str(form.get("next", "/"))
        if not back.startswith("/") or back.startswith("//"):
            back = "/"
        sep = "&" if "?" in back else "?"
        return RedirectResponse(f"{back}{sep}notice={console.notice(text, ok)}", status_code=303)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [Route("/", runs), Route("/favicon.ico", favicon), Route("/runs/{run_id}", run), Route("/runs/{run_id}/timeline", timeline),
              Route("/people", people), Route("/operations", operations), Route("/evals", evals),
              Route("/events", events), Route("/static/{name}", static), Route("/act", act, methods=["POST"])]
    app = Starlette(routes=routes)
    return _guard(app, console)


def _here(request: Request) -> str:
    query = [(k, v) for k, v in request.query_params.multi_items() if k not in ("notice", "token")]
    return request.url.path + ("?" + urlencode(query) if query else "")


def _paging(filters: dict[str, str]) -> Callable[[int], str]:
    def link(page_no: int) -> str:
        return "/?" + urlencode({**{k: v for k, v in filters.items() if v}, "page": page_no})
    return link


def _guard(app: Any, console: Console) -> Any:
    """The token check around every request (SPEC §24): the cookie, or `?token=` (which sets the cookie)."""
    expected = console.token.encode()

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        request = Request(scope)
        cookie = request.cookies.get(console.cookie, "")
        given = request.query_params.get("token")
        if cookie and hmac.compare_digest(cookie.encode(), expected) and given is None:
            await app(scope, receive, send)
            return
        if given is not None and hmac.compare_digest(given.encode(), expected):
            response: Response = RedirectResponse(_here(request), status_code=303)
            response.set_cookie(console.cookie, console.token, httponly=True, samesite="strict")
            if request.method != "GET":
                await app(scope, receive, send)
                return
            await response(scope, receive, send)
            return
        await PlainTextResponse("unauthorized: open the console with the URL `sage ui` printed (it holds the "
                                "token)", status_code=401)(scope, receive, send)
    return guarded


def _act(console: Console, form: dict[str, str]) -> tuple[str, bool]:
    """Make the change a form asks for through the run service: (what happened, whether it was done)."""
    store = console.store()
    action, run_id = form.get("action", ""), form.get("run", "")
    path, _, number_text = form.get("step", "").rpartition(":")
    number = int(number_text) if number_text.isdigit() else 0
    try:
        if action in ("approve", "deny"):
            decision = (Decision.approve(console_person()) if action == "approve"
                        else Decision.deny(console_person(), form.get("reason", "").strip() or None))
            done = service.decide(store, run_id, path, number, decision)
            return _answered(done), True
        if action == "answer":
            return _answered(service.answer(store, run_id, path, number, form.get("text", ""))), True
        if action == "cancel":
            cancelled = service.cancel(store, run_id)
            return (f"run {cancelled.run_id} cancelled" if cancelled.at_once
                    else f"run {cancelled.run_id} was told to stop before its next step"), True
        if action == "resolve":
            return _resolve(store, run_id, path, number, form), True
        if action == "submit":
            return _submit(console, store, form), True
    except service.NoRun as exc:
        return str(exc), False
    except service.NotWaiting as exc:
        return _not_waiting(exc), False
    except service.AlreadyEnded as exc:
        return f"run {exc.run_id} already ended with exit code {exc.exit_code}: nothing was changed", False
    except service.NotHalted as exc:
        return f"run {exc.run_id} is {exc.status}, not halted: nothing was changed", False
    except service.NoSuchStep as exc:
        return f"run {exc.run_id} has no step {exc.path}:{exc.number}", False
    except service.NotUnknown as exc:
        return f"step {exc.path}:{exc.number} of run {exc.run_id} is already {exc.status}: nothing was changed", \
            False
    except service.NoEntry as exc:
        return f"no entry file found (looked for {exc.entry}): nothing was queued", False
    except service.CheckFailed as exc:
        from ..diagnostics import format_diagnostics
        return "the program has errors; nothing was queued:\n" + format_diagnostics(exc.diagnostics), False
    return f"unknown action '{action}': nothing was changed", False


def _answered(done: service.Answered) -> str:
    then = "the run is queued again for a worker" if done.requeued else \
        f"continue with `sage run --resume {done.run_id}`"
    return f"{done.done} {done.path}:{done.number} of run {done.run_id}; {then}"


def _not_waiting(exc: service.NotWaiting) -> str:
    step = exc.step
    what = "an answer" if exc.question else "approval"
    if step is not None and step.status == "done":
        if exc.question:
            return f"{exc.path}:{exc.number} of run {exc.run_id} was already answered: nothing was changed"
        decision = Decision.from_outcome(step.outcome)
        verb = "approved" if decision.approved else "denied"
        return f"{exc.path}:{exc.number} of run {exc.run_id} was already {verb} by {decision.by}: nothing was " \
               "changed"
    return f"{exc.path} step {exc.number} of run {exc.run_id} is not waiting for {what}: nothing was changed"


def _resolve(store: Any, run_id: str, path: str, number: int, form: dict[str, str]) -> str:
    how = form.get("outcome", "")
    if how == "ok":
        from ..core.json_text import parse_json
        try:
            value = parse_json(form.get("value", ""))
        except ValueError as exc:
            return f"not valid JSON: {exc}: nothing was changed"
        resolution = service.Resolution.returned(value)
    elif how == "failed":
        resolution = service.Resolution.failed(form.get("value", "") or "failed")
    else:
        resolution = service.Resolution.not_run()
    resolved = service.resolve(store, run_id, path, number, resolution)
    then = "the run is queued again for a worker" if resolved.requeued else \
        f"continue with `sage run --resume {resolved.run_id}`"
    return f"recorded {path}:{number} of run {resolved.run_id} as {resolved.done}; {then}"


def _submit(console: Console, store: Any, form: dict[str, str]) -> str:
    import shlex
    try:
        args = shlex.split(form.get("args", ""))
    except ValueError as exc:
        return f"the arguments cannot be read ({exc}): nothing was queued"
    submitted = service.submit(console.session, store, None, args, form.get("queue", "").strip() or "default")
    return f"queued run {submitted.run_id}"
