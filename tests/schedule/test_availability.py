"""The four queries against the brute-force oracle, and bad input."""

import itertools
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from longhaul.errors import InputError
from longhaul.schedule import Availability, Booking, Request, bookings_along, larger_of
from longhaul.schedule.instants import to_us
from longhaul.topology import usn

from .oracle import T0, at, key, same_key, scenarios

SECOND = 1_000_000


def refused(case, call) -> bool:
    """Degenerate requests must raise InputError; say whether this one was (and so is done)."""
    if not case.degenerate():
        return False
    event("degenerate request")
    with pytest.raises(InputError):
        call()
    return True


@given(scenarios(), st.integers(1, 10), st.integers(-2, 40), st.integers(1, 20))
def test_fixed_slot_matches_oracle(case, need, start, length):
    avail, oracle = case.availability(), case.oracle
    query = partial(
        avail.fixed_slot, case.src, case.dst, need, at(start), at(start + length), case.route
    )
    if refused(case, query):
        return
    lo, hi = to_us(at(start), "s"), to_us(at(start + length), "e")
    feasible = [p for p in case.candidates() if oracle.carries(p, need, lo, hi)]
    path = query()
    event(f"feasible paths: {min(len(feasible), 2)}")
    if not feasible:
        assert path is None
        return
    assert path is not None
    links = [hop.link for hop in path.hops]
    assert links in case.candidates()
    assert oracle.carries(links, need, lo, hi)
    assert same_key(key(links), min(key(p) for p in feasible))


@given(scenarios(), st.integers(-2, 40), st.integers(1, 20))
def test_max_bandwidth_matches_oracle(case, start, length):
    avail, oracle = case.availability(), case.oracle
    query = partial(
        avail.max_bandwidth, case.src, case.dst, at(start), at(start + length), case.route
    )
    if refused(case, query):
        return
    lo, hi = to_us(at(start), "s"), to_us(at(start + length), "e")
    candidates = case.candidates()
    best = max((oracle.width(p, lo, hi) for p in candidates), default=0)
    got = query()
    assert got.bandwidth_mbps == best
    event("widest: none" if best == 0 else "widest: some")
    if best == 0:
        assert got.path is None
        return
    assert got.path is not None
    links = [hop.link for hop in got.path.hops]
    assert links in candidates
    assert oracle.width(links, lo, hi) >= best
    widest = [p for p in candidates if oracle.width(p, lo, hi) >= best]
    assert same_key(key(links), min(key(p) for p in widest))


@given(
    scenarios(),
    st.integers(1, 4),
    st.integers(1, 12),
    st.integers(-5, 30),
    st.integers(1, 50),
)
def test_all_slots_matches_oracle(case, need, dur_s, start, width):
    window = (at(start), at(start + width))
    query = partial(
        case.availability().all_slots,
        case.src,
        case.dst,
        need,
        timedelta(seconds=dur_s),
        window,
        case.route,
    )
    if refused(case, query):
        return
    dur = dur_s * SECOND
    lo, hi = to_us(window[0], "s"), to_us(window[1], "e")
    slots = query()
    # Both sets change only at these points; agreeing on each and just before the first
    # means they are equal.
    points = {lo, hi - dur + 1} | case.oracle.start_breakpoints(dur)
    event(f"slot runs: {min(len(slots.starts), 2)}")
    assert set(slots.starts.bounds) <= points
    for t in sorted(points | {min(points) - 1}):
        expected = lo <= t <= hi - dur and case.feasible_start(need, t, dur)
        assert (t in slots.starts) == expected, t
    for first, _last in slots.windows():
        links = [hop.link for hop in slots.path_at(first).hops]
        assert links in case.candidates()
        assert case.oracle.carries(links, need, to_us(first, "t"), to_us(first, "t") + dur)


# Requests that fit a link when idle, starting among the bookings (0..45 s), so that
# the answer is often pushed later by them.
@given(scenarios(), st.integers(1, 4), st.integers(1, 12), st.integers(0, 25))
def test_earliest_start_matches_oracle(case, need, dur_s, not_before):
    query = partial(
        case.availability().earliest_start,
        case.src,
        case.dst,
        need,
        timedelta(seconds=dur_s),
        at(not_before),
        case.route,
    )
    if refused(case, query):
        return
    dur = dur_s * SECOND
    first = to_us(at(not_before), "nb")
    ends = {to_us(b.end, "e") for b in case.bookings}
    candidates = sorted({first} | {end for end in ends if end > first})
    expected = next((t for t in candidates if case.feasible_start(need, t, dur)), None)
    got = query()
    event(
        "earliest: never"
        if expected is None
        else f"earliest: {'at' if expected == first else 'after'} not_before"
    )
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert to_us(got.start, "start") == expected
    links = [hop.link for hop in got.path.hops]
    assert links in case.candidates()
    assert case.oracle.carries(links, need, expected, expected + dur)


@given(scenarios(), st.data())
def test_bookings_added_then_released_leave_the_answers_unchanged(case, data):
    if case.degenerate():
        return
    topology, bookings, src, dst = case.topology, case.bookings, case.src, case.dst
    extra = bookings[: data.draw(st.integers(0, len(bookings)))]
    base = Availability(topology, bookings)
    round_trip = base.with_bookings(extra).without_bookings(extra)
    window = (at(0), at(50))
    route = case.route
    assert round_trip.max_bandwidth(src, dst, *window, route) == base.max_bandwidth(
        src, dst, *window, route
    )
    built = Availability(topology, bookings + extra)
    three = timedelta(seconds=3)
    assert base.with_bookings(extra).all_slots(src, dst, 1, three, window, route).starts == (
        built.all_slots(src, dst, 1, three, window, route).starts
    )


# -- granules and the equal-bookings case on USN ---------------------------------------


def test_a_request_books_whole_granules():
    topology = usn()
    oc192 = topology.links["ornl-chicago-1"]
    assert oc192.booked_mbps(5000) == 5100  # 34 granules of 150 Mb/s
    assert oc192.booked_mbps(150) == 150
    assert oc192.bookable_mbps(9599) == 9450
    avail = Availability(topology, [Booking("ornl-chicago-1", T0, at(3600), 4800)])
    # 4,800 Mb/s is 32 granules exactly; 4,801 needs 33 and 4,950 + 4,800 > 9,600.
    assert avail.min_free_mbps("ornl-chicago-1", T0, at(10)) == 4800
    assert avail.max_bandwidth("ornl-cdci", "chicago-cdci", T0, at(10)).bandwidth_mbps == 9600
    only_one = Availability(
        topology, [Booking("ornl-chicago-2", T0, at(3600), 4800)]
    ).with_bookings([Booking("ornl-chicago-1", T0, at(3600), 4800)])
    assert only_one.fixed_slot("ornl-cdci", "chicago-cdci", 4800, T0, at(10)) is not None
    assert only_one.fixed_slot("ornl-cdci", "chicago-cdci", 4801, T0, at(10)) is None


def test_two_equal_bookings_at_the_same_instant_count_twice():
    topology = usn()
    path = Availability(topology).fixed_slot("ORNL", "CHICAGO", 4800, T0, at(3600))
    assert path is not None
    both_circuits = [
        Booking(link, T0, at(3600), 4800)
        for link in ("ornl-chicago-1", "ornl-chicago-1", "ornl-chicago-2", "ornl-chicago-2")
    ]
    full = Availability(topology, both_circuits)
    assert full.fixed_slot("ORNL", "CHICAGO", 150, T0, at(3600)) is None
    assert full.max_bandwidth("ORNL", "CHICAGO", T0, at(3600)).bandwidth_mbps == 0
    earliest = full.earliest_start("ORNL", "CHICAGO", 150, timedelta(minutes=5), T0)
    assert earliest is not None and earliest.start == at(3600)


def test_a_request_larger_than_any_path_never_starts():
    avail = Availability(usn())
    assert avail.earliest_start("ORNL", "SUNNYVALE", 9601, timedelta(hours=1), T0) is None
    slots = avail.all_slots("ORNL", "SUNNYVALE", 9601, timedelta(hours=1), (T0, at(86400)))
    assert not slots.starts


def test_all_slots_window_shorter_than_duration_is_empty_not_an_error():
    slots = Availability(usn()).all_slots(
        "ORNL", "CHICAGO", 100, timedelta(hours=2), (T0, at(3600))
    )
    assert slots.windows() == []


def test_booking_a_slot_removes_it_from_all_slots():
    avail = Availability(usn())
    day = (T0, at(86400))
    path = avail.fixed_slot("ORNL", "SUNNYVALE", 9600, at(3600), at(7200))
    assert path is not None
    other = avail.with_bookings(bookings_along(path, at(3600), at(7200), 9600))
    path2 = other.fixed_slot("ORNL", "SUNNYVALE", 9600, at(3600), at(7200))
    assert path2 is not None and set(path2.link_ids).isdisjoint(path.link_ids)
    full = other.with_bookings(bookings_along(path2, at(3600), at(7200), 9600))
    slots = full.all_slots("ORNL", "SUNNYVALE", 9600, timedelta(minutes=30), day)
    assert slots.windows() == [(T0, at(3600 - 1800)), (at(7200), at(86400 - 1800))]


# -- bad input names the field ---------------------------------------------------------


@pytest.fixture(scope="module")
def avail():
    return Availability(usn())


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda a: a.fixed_slot("NOWHERE", "CHICAGO", 100, T0, at(60)), "src"),
        (lambda a: a.fixed_slot("ORNL", "CHICAG", 100, T0, at(60)), "dst"),
        (lambda a: a.fixed_slot("ORNL", "ornl-cdci", 100, T0, at(60)), "dst"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", 0, T0, at(60)), "bandwidth_mbps"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", -5, T0, at(60)), "bandwidth_mbps"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", 1.5, T0, at(60)), "bandwidth_mbps"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", 100, at(60), T0), "end"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", 100, T0, T0), "end"),
        (lambda a: a.fixed_slot("ORNL", "CHICAGO", 100, datetime(2030, 1, 1), at(60)), "start"),
        (lambda a: a.max_bandwidth("ORNL", "CHICAGO", T0, datetime(2030, 2, 1)), "end"),
        (
            lambda a: a.earliest_start("ORNL", "CHICAGO", 100, timedelta(0), T0),
            "duration",
        ),
        (
            lambda a: a.earliest_start("ORNL", "CHICAGO", 100, timedelta(1), datetime(2030, 1, 1)),
            "not_before",
        ),
        (
            lambda a: a.all_slots("ORNL", "CHICAGO", 100, timedelta(hours=1), (at(60), T0)),
            "window.end",
        ),
        (
            lambda a: a.all_slots("ORNL", "CHICAGO", 100, timedelta(hours=1), (T0, T0)),
            "window.end",
        ),
        (
            lambda a: Availability(a.topology, [Booking("nope", T0, at(1), 1)]),
            "bookings[0].link_id",
        ),
        (
            lambda a: Availability(a.topology, [Booking("ornl-xc-1", at(5), at(1), 1)]),
            "bookings[0].end",
        ),
    ],
)
def test_bad_input_raises_input_error_naming_the_field(avail, call, field):
    with pytest.raises(InputError) as caught:
        call(avail)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")


def test_unknown_node_suggests_a_close_name(avail):
    with pytest.raises(InputError, match="did you mean 'CHICAGO'"):
        avail.fixed_slot("ORNL", "CHICAG", 100, T0, at(60))


def test_naive_time_error_shows_how_to_fix_it(avail):
    with pytest.raises(
        InputError, match=r"has no time zone; give one, e\.g\. 2030-01-01T00:00:00\+00:00"
    ):
        avail.fixed_slot("ORNL", "CHICAGO", 100, datetime(2030, 1, 1), at(60))


def test_path_at_rejects_an_infeasible_start(avail):
    full = avail.with_bookings(
        [Booking(k, T0, at(3600), 9600) for k in ("ornl-chicago-1", "ornl-chicago-2")]
    )
    slots = full.all_slots("ORNL", "CHICAGO", 100, timedelta(minutes=10), (T0, at(7200)))
    with pytest.raises(InputError) as caught:
        slots.path_at(T0)
    assert caught.value.field == "start"
    assert slots.path_at(at(3600)).link_ids == ("ornl-chicago-1",)


@pytest.mark.parametrize("busy_s", [0, 1, 599, 600, 601, 1800, 4199, 4200, 4201, 9000, 86400])
def test_earliest_start_is_exact_wherever_the_busy_time_ends(busy_s):
    # The search looks in windows that double from the duration (600 s here); the answer
    # must not depend on where it falls among them.
    busy = [Booking(k, at(-3600), at(busy_s), 9600) for k in ("ornl-chicago-1", "ornl-chicago-2")]
    avail = Availability(usn(), busy) if busy_s else Availability(usn())
    got = avail.earliest_start("ORNL", "CHICAGO", 100, timedelta(seconds=600), T0)
    assert got is not None and got.start == at(busy_s)


def test_free_bandwidth_of_a_link_over_time(avail):
    held = avail.with_bookings(
        [
            Booking("ornl-chicago-1", at(3600), at(7200), 5000),
            Booking("ornl-chicago-1", at(5400), at(9000), 1000),
        ]
    )
    assert held.free_steps("ornl-chicago-1", T0, at(10800)) == [
        (T0, 9600),
        (at(3600), 4500),  # 5,000 Mb/s books 34 granules: 5,100
        (at(5400), 3450),
        (at(7200), 8550),
        (at(9000), 9600),
    ]
    assert held.min_free_mbps("ornl-chicago-1", at(4000), at(8000)) == 3450
    assert held.min_free_mbps("ornl-chicago-2", T0, at(10800)) == 9600
    with pytest.raises(InputError) as caught:
        held.free_steps("ornl-chicago-9", T0, at(60))
    assert caught.value.field == "link_id"


# -- ports and routes on USN --------------------------------------------------------


def test_a_port_with_a_host_behind_it_puts_the_host_link_on_the_path(avail):
    path = avail.fixed_slot("ornl-e300:1/0", "SUNNYVALE", 5000, T0, at(3600))
    assert path is not None
    assert path.nodes[:3] == ("ornl-host1", "ornl-e300", "ornl-cdci")
    assert path.link_ids[0] == "ornl-host1-link"
    # The 1GigE host caps what its port can carry.
    assert avail.max_bandwidth("ornl-e300:2/0", "CHICAGO", T0, at(60)).bandwidth_mbps == 1000
    assert avail.fixed_slot("ornl-e300:2/0", "CHICAGO", 1001, T0, at(60)) is None
    # A port with nothing behind it starts the path at its switch.
    unattached = avail.fixed_slot("ornl-e300:1/2", "CHICAGO", 5000, T0, at(60))
    assert unattached is not None and unattached.nodes[0] == "ornl-e300"


def test_two_hosts_on_one_switch(avail):
    path = avail.fixed_slot("ornl-e300:1/0", "ornl-e300:1/1", 9000, T0, at(60))
    assert path is not None
    assert path.nodes == ("ornl-host1", "ornl-e300", "ornl-host2")


def test_a_loop_route_crosses_its_circuits_as_often_as_it_loops(avail):
    loop = avail.topology.loops["ORNL-Chicago x2"].loop
    ends = ("ornl-e300:1/0", "ornl-e300:1/1")
    path = avail.fixed_slot(*ends, 4800, T0, at(3600), route=loop.links)
    assert path is not None
    assert path.nodes[0] == "ornl-host1" and path.nodes[-1] == "ornl-host2"
    assert path.length_miles == pytest.approx(2800.2)
    assert path.link_ids.count("ornl-chicago-1") == 2
    # Each OC192 is crossed twice, so it can carry at most half its payload.
    assert avail.max_bandwidth(*ends, T0, at(3600), route=loop.links).bandwidth_mbps == 4800
    assert avail.fixed_slot(*ends, 4801, T0, at(3600), route=loop.links) is None
    busy = avail.with_bookings([Booking("ornl-chicago-2", T0, at(600), 150)])
    earliest = busy.earliest_start(*ends, 4800, timedelta(minutes=5), T0, route=loop.links)
    assert earliest is not None and earliest.start == at(600)


@pytest.mark.parametrize(
    ("src", "dst", "route", "field", "message"),
    [
        ("ornl-e300:9/9", "CHICAGO", None, "src", "node 'ornl-e300' has no port '9/9' (its ports: 0/0"),
        ("ornl-e300:1/0", "ornl-host1", None, "dst", "is the node behind src's port"),
        ("ornl-host1:eth0", "ornl-e300:1/0", None, "dst", "src and dst are the two ends of link 'ornl-host1-link'"),
        ("ornl-e300", "ornl-e300", ["ornl-xc-1", "ornl-chicago-1"], "route", "walk ends at 'chicago-cdci', not back at its start 'ornl-e300'"),
        ("ornl-e300", "ornl-e300", ["ornl-xc-1", "nope"], "route", "link 'nope' is not defined"),
        ("ornl-e300", "ornl-e300", "ornl-xc-1", "route", "expected a list of link ids"),
    ],
)  # fmt: skip
def test_bad_ends_and_routes_name_the_field(avail, src, dst, route, field, message):
    with pytest.raises(InputError) as caught:
        avail.fixed_slot(src, dst, 100, T0, at(60), route=route)
    assert caught.value.field == field
    assert message in caught.value.reason


# -- what a reservation holds while either of two versions may stand ---------------------

_LINKS = ("l1", "l2")
_T = datetime(2030, 1, 1, tzinfo=UTC)


def _some_bookings():
    one = st.tuples(
        st.sampled_from(_LINKS), st.integers(0, 20), st.integers(1, 10), st.integers(1, 5)
    ).map(
        lambda x: Booking(x[0], _T + timedelta(hours=x[1]), _T + timedelta(hours=x[1] + x[2]), x[3])
    )
    return st.lists(one, max_size=4)


@given(a=_some_bookings(), b=_some_bookings())
def test_larger_of_takes_the_larger_load_everywhere(a, b):
    both = larger_of(a, b)

    def load(bookings, link, hour):
        at = _T + timedelta(hours=hour, minutes=30)
        return sum(
            x.bandwidth_mbps for x in bookings if x.link_id == link and x.start <= at < x.end
        )

    for link in _LINKS:
        for hour in range(-1, 32):
            assert load(both, link, hour) == max(load(a, link, hour), load(b, link, hour))
    # One booking per stretch of equal load: nothing split where nothing changes.
    for x, y in itertools.pairwise(both):
        assert not (
            x.link_id == y.link_id and x.end == y.start and x.bandwidth_mbps == y.bandwidth_mbps
        )


def test_larger_of_the_same_path_longer_and_wider():
    old = [Booking("l1", _T, _T + timedelta(hours=2), 1000)]
    new = [Booking("l1", _T, _T + timedelta(hours=3), 600)]
    assert larger_of(old, new) == (
        Booking("l1", _T, _T + timedelta(hours=2), 1000),
        Booking("l1", _T + timedelta(hours=2), _T + timedelta(hours=3), 600),
    )


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ORNL", "CHICAGO", "SEATTLE", "SUNNYVALE"]),
            st.sampled_from(["ORNL", "CHICAGO", "SEATTLE", "SUNNYVALE"]),
            st.sampled_from([150, 1200, 4800, 9600, 20_000]),
            st.integers(0, 40),
            st.integers(1, 12),
        ),
        max_size=25,
    ),
    st.none() | st.integers(0, 30).map(lambda h: timedelta(hours=h)),
)
def test_admitting_books_each_request_as_a_fixed_slot_else_its_earliest_start(asked, patience):
    """`with_admitted` in one call gives what the four-query loop a control plane runs gives;
    a request whose earliest start is more than `patience` after its slot is turned away."""
    requests = [
        Request(src, dst, mbps, T0 + timedelta(hours=start), timedelta(hours=hours))
        for src, dst, mbps, start, hours in asked
        if src != dst
    ]
    avail, admitted = Availability(usn()).with_admitted(requests, patience)
    step = Availability(usn())
    for request, got in zip(requests, admitted, strict=True):
        src, dst, mbps, start, duration = request
        path = step.fixed_slot(src, dst, mbps, start, start + duration)
        expected = (
            (start, path)
            if path is not None
            else step.earliest_start(*request[:3], duration, start)
        )
        if expected is not None and patience is not None and expected[0] > start + patience:
            event("turned away: no start within patience")
            expected = None
        if expected is None:
            assert got is None
            continue
        assert got == expected
        step = step.with_bookings(
            bookings_along(expected[1], expected[0], expected[0] + duration, mbps)
        )
    for link in usn().links:
        window = (T0, T0 + timedelta(days=4))
        assert avail.free_steps(link, *window) == step.free_steps(link, *window)


def test_admitting_names_the_request_it_cannot_read():
    ask = Request("ORNL", "SUNNYVALE", 0, T0, timedelta(hours=1))
    with pytest.raises(InputError) as caught:
        Availability(usn()).with_admitted(
            [Request("ORNL", "SUNNYVALE", 10, T0, timedelta(hours=1)), ask]
        )
    assert caught.value.field == "requests[1].bandwidth_mbps"
