"""The web pages: sign in, book, see availability, follow reservations. Server-rendered,
with no script or font from elsewhere, so they work offline."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from longhaul.control.api.auth import COOKIE, authenticate, service_of
from longhaul.control.api.problems import UnauthorizedError
from longhaul.control.db import User
from longhaul.control.errors import ConflictError, NotFoundError, UnavailableError
from longhaul.control.lifecycle import State
from longhaul.control.policy import PolicyError
from longhaul.control.requests import ListFilter, ReservationRequest
from longhaul.control.service import Service
from longhaul.control.transitions import path_of
from longhaul.control.web import charts
from longhaul.errors import InputError
from longhaul.parsing import format_duration, parse_duration, parse_route
from longhaul.topology import NodeKind

_HERE = FilePath(__file__).parent
templates = Jinja2Templates(directory=_HERE / "templates")
templates.env.filters["when"] = lambda t: (
    t.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC") if t else ""
)
templates.env.filters["mbps"] = lambda v: f"{v:,} Mb/s"

router = APIRouter(include_in_schema=False)
static = StaticFiles(directory=_HERE / "static")

CHART = {"left": 70.0, "width": 820.0, "top": 20.0, "height": 220.0}


def _user(request: Request) -> User | None:
    try:
        return authenticate(request, None)
    except UnauthorizedError:
        return None


def _page(request: Request, name: str, user: User | None, **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, name, {"user": user, **context})


def _to_login(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/login?next={request.url.path}", status_code=303)


def _ends(service: Service) -> list[dict[str, Any]]:
    """Every switch with its ports, and what lies behind each port, for the forms; in the
    order the topology lists its sites."""
    site_order = {site: k for k, site in enumerate(service.topology.sites)}
    switches = (n for n in service.topology.nodes.values() if n.kind is not NodeKind.HOST)
    ends = []
    for node in sorted(switches, key=lambda n: (site_order.get(n.site, 0), n.id)):
        ports = []
        for port in node.ports:
            link = service.topology.link_at(node.id, port)
            behind = f"→ {link.other_end(node.id)}" if link else "free"
            ports.append({"port": port, "label": f"{port} ({behind})"})
        ends.append({"node": node.id, "site": node.site, "ports": ports})
    return ends


def _default_ends(service: Service) -> dict[str, str]:
    """From the first site's gateway to the last site's (ORNL to Sunnyvale on USN)."""
    gateways = [s.gateway for s in service.topology.sites.values() if s.gateway]
    return {"src_node": gateways[0], "dst_node": gateways[-1]} if gateways else {}


# -- signing in ------------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request, next: str = "/") -> HTMLResponse:
    return _page(request, "login.html", None, next=next, error=None)


@router.post("/login", response_model=None)
def login(
    request: Request, token: Annotated[str, Form()], next: Annotated[str, Form()] = "/"
) -> Response:
    user = service_of(request).accounts.by_token(token.strip())
    if user is None:
        return _page(request, "login.html", None, next=next, error="That token matches no user.")
    target = next if next.startswith("/") and not next.startswith("//") else "/"
    response = RedirectResponse(target, status_code=303)
    secure = request.url.scheme == "https"
    response.set_cookie(COOKIE, token.strip(), httponly=True, samesite="strict", secure=secure)
    return response


@router.post("/logout")
def logout() -> RedirectResponse:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response


# -- the pages -------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse, response_model=None)
def home(request: Request) -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    service = service_of(request)
    now = service.clock()
    upcoming = service.reservations(user, ListFilter(since=now, limit=10))
    nodes, links, labels = charts.site_map(service.topology)
    return _page(
        request,
        "home.html",
        user,
        nodes=nodes,
        links=links,
        labels=labels,
        upcoming=upcoming,
        topology=service.topology,
    )


@router.get("/reserve", response_class=HTMLResponse, response_model=None)
def reserve_form(request: Request) -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    return _reserve_page(
        request, user, _default_ends(service_of(request)), error=None, unavailable=None
    )


@router.post("/reserve", response_class=HTMLResponse, response_model=None)
def reserve(
    request: Request,
    src_node: Annotated[str, Form()],
    dst_node: Annotated[str, Form()],
    bandwidth_mbps: Annotated[str, Form()],
    duration: Annotated[str, Form()],
    src_port: Annotated[str, Form()] = "",
    dst_port: Annotated[str, Form()] = "",
    start: Annotated[str, Form()] = "",
    asap: Annotated[str, Form()] = "",
    loop: Annotated[str, Form()] = "",
    description: Annotated[str, Form()] = "",
) -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    service = service_of(request)
    form = {
        "src_node": src_node, "src_port": src_port, "dst_node": dst_node, "dst_port": dst_port,
        "bandwidth_mbps": bandwidth_mbps, "duration": duration, "start": start, "asap": asap,
        "loop": loop, "description": description,
    }  # fmt: skip
    try:
        request_ = ReservationRequest(
            src=f"{src_node}:{src_port}" if src_port else src_node,
            dst=f"{dst_node}:{dst_port}" if dst_port else dst_node,
            bandwidth_mbps=_whole(bandwidth_mbps, "bandwidth_mbps"),
            start=_form_time(start) if start else None,
            asap=bool(asap),
            duration=parse_duration(duration, "duration"),
            loop=loop or None,
            description=description[:1000],
        )
        reservation = service.create(user, request_)
    except InputError as exc:
        return _reserve_page(request, user, form, error=str(exc), unavailable=None, status=422)
    except PolicyError as exc:
        return _reserve_page(request, user, form, error=str(exc), unavailable=None, status=403)
    except UnavailableError as exc:
        return _reserve_page(request, user, form, error=None, unavailable=exc, status=409)
    return RedirectResponse(f"/reservations/{reservation.id}", status_code=303)


def _reserve_page(
    request: Request,
    user: User,
    form: dict[str, str],
    error: str | None,
    unavailable: UnavailableError | None,
    status: int = 200,
) -> HTMLResponse:
    service = service_of(request)
    response = _page(
        request,
        "reserve.html",
        user,
        form=form,
        ends=_ends(service),
        loops=list(service.topology.loops),
        error=error,
        unavailable=unavailable,
    )
    response.status_code = status
    return response


@router.get("/availability", response_class=HTMLResponse, response_model=None)
def availability(
    request: Request,
    src: str = "",
    dst: str = "",
    bandwidth_mbps: str = "",
    duration: str = "2h",
    start: str = "",
    window_days: Annotated[int, Query(ge=1, le=60)] = 7,
    loop: str = "",
) -> Response:
    """Queries 2-4 drawn: free bandwidth along the path over time, the feasible starts
    shaded, and the highest bandwidth in the slot."""
    user = _user(request)
    if user is None:
        return _to_login(request)
    service = service_of(request)
    form = {"src": src, "dst": dst, "bandwidth_mbps": bandwidth_mbps, "duration": duration,
            "start": start, "window_days": window_days, "loop": loop}  # fmt: skip
    context: dict[str, Any] = {
        "form": form,
        "ends": _ends(service),
        "loops": list(service.topology.loops),
        "error": None,
        "answer": None,
    }
    if src and dst and bandwidth_mbps:
        try:
            context["answer"] = _answer(service, form)
        except InputError as exc:
            context["error"] = str(exc)
    return _page(request, "availability.html", user, **context)


def _answer(service: Service, form: dict[str, Any]) -> dict[str, Any]:
    mbps = _whole(form["bandwidth_mbps"], "bandwidth_mbps")
    length = parse_duration(form["duration"], "duration")
    first = _form_time(form["start"]) if form["start"] else _next_minute(service.clock())
    window = (first, first + timedelta(days=form["window_days"]))
    route = parse_route(service.topology, None, form["loop"] or None)
    avail = service.availability()
    src, dst = form["src"], form["dst"]
    fixed = avail.fixed_slot(src, dst, mbps, first, first + length, route)
    earliest = avail.earliest_start(src, dst, mbps, length, first, route)
    widest = avail.max_bandwidth(src, dst, first, first + length, route)
    slots = avail.all_slots(src, dst, mbps, length, window, route)
    path = fixed or (earliest.path if earliest else None) or widest.path
    time = charts.TimeAxis(window[0], window[1], CHART["left"], CHART["width"])
    steps = charts.free_along(avail, path, *window) if path else []
    top = max([mbps, widest.bandwidth_mbps, *(free for _, free in steps)], default=mbps)
    value = charts.ValueAxis(int(top * 1.1) or 1, CHART["top"] + CHART["height"], CHART["height"])
    shaded = [(time.x(lo), time.x(hi + length)) for lo, hi in slots.windows()]
    return {
        "mbps": mbps, "length": format_duration(length), "start": first, "end": first + length,
        "window": window, "fixed": fixed, "earliest": earliest, "widest": widest,
        "slots": slots.windows(), "path": path, "chart": CHART,
        "line": charts.step_line(steps, time, value), "ticks": time.ticks(),
        "need_y": value.y(mbps), "widest_y": value.y(widest.bandwidth_mbps),
        "slot_x": (time.x(first), time.x(first + length)), "shaded": shaded,
        "value_ticks": [(value.y(v), f"{v:,}") for v in _round_ticks(value.top_mbps)],
    }  # fmt: skip


@router.get("/reservations", response_class=HTMLResponse, response_model=None)
def reservations(request: Request, state: str = "") -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    service = service_of(request)
    states = [State(state)] if state in {s.value for s in State} else []
    items = service.reservations(user, ListFilter(states=states, limit=500))
    return _page(
        request,
        "reservations.html",
        user,
        items=items,
        state=state,
        states=[s.value for s in State],
    )


@router.get("/reservations/{reservation_id}", response_class=HTMLResponse, response_model=None)
def reservation(request: Request, reservation_id: int) -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    service = service_of(request)
    try:
        item = service.get(user, reservation_id)
        history = service.history(user, reservation_id)
    except NotFoundError:
        return _page(request, "missing.html", user, what=f"reservation {reservation_id}")
    try:
        path = path_of(service.topology, item)
    except ValueError:
        path = None
    return _page(
        request, "reservation.html", user, item=item, history=history, path=path, error=None
    )


@router.post("/reservations/{reservation_id}/cancel", response_model=None)
def cancel(request: Request, reservation_id: int) -> Response:
    user = _user(request)
    if user is None:
        return _to_login(request)
    with contextlib.suppress(NotFoundError, ConflictError):
        service_of(request).cancel(user, reservation_id)
    return RedirectResponse(f"/reservations/{reservation_id}", status_code=303)


def _whole(text: str, field: str) -> int:
    try:
        value = int(text.strip().replace(",", "").replace("_", ""))
    except ValueError:
        raise InputError(field, f"{text!r} is not a whole number of Mb/s") from None
    if not 0 < value <= 1_000_000:
        raise InputError(field, f"must be between 1 and 1,000,000 Mb/s, got {value:,}")
    return value


def _form_time(text: str) -> datetime:
    """A time from a datetime-local field, read as UTC (the page says so)."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError("start", f"cannot read {text!r} as a date and time") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _next_minute(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1)


def _round_ticks(top: int) -> list[int]:
    step = 10 ** max(0, len(str(top)) - 1)
    if top / step < 3:
        step = max(1, step // 2)
    return list(range(0, top + 1, step))
