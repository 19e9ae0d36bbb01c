"""Mode auto's per-object rule (Pushback.java), driven through scenarios by PushbackRule.java
(compiled with javac, no cluster): both ways tried first, then the cheaper one by the model (the
OSD's reported work against what a whole read adds), the costlier tried again rarely enough to
cost ~3 %, OSDs short of CPU seen in the replies at once, idle ones at the next try, and a queue
of another tenant's calls, which both ways wait in, not mistaken for either; and how many objects
a task keeps back to scan while its pushed replies are awaited."""
import os

import pytest

LAG, OBJECTS = 4, 600


@pytest.fixture(scope="module")
def printed(java_checks) -> dict[str, str]:
    """PushbackRule's lines, by their first word: each scenario's choices, and ``osd-work``."""
    lines = java_checks("sae.connector.PushbackRule", str(LAG), str(OBJECTS), env={**os.environ, "JAVA_TOOL_OPTIONS": ""})
    return dict(line.split(" ", 1) for line in lines)


@pytest.fixture(scope="module")
def choices(printed) -> dict[str, str]:
    """Scenario → the rule's choices, one letter per object ('p' pushed, 'w' read whole)."""
    return {name: line for name, line in printed.items() if name != "osd-work" and not name.startswith("tail-")}


def test_both_ways_are_tried_first_and_push_waits_for_measurements(choices):
    for name, c in choices.items():
        assert c[:2] == "pw", name
        assert c[2:LAG + 1] == "p" * (LAG - 1), name   # nothing measured yet: offload's way


def test_the_cheaper_way_is_taken_and_trying_the_other_costs_about_3_percent(choices):
    for name, cheap, ratio in (("push-cheaper", "p", 3.0), ("whole-cheaper", "w", 3.0)):
        rest = choices[name][20:]
        other = len(rest) - rest.count(cheap)
        assert 1 <= other and other * (ratio - 1) / len(rest) <= 0.03, (name, choices[name])


def test_close_costs_keep_both_measured(choices):
    rest = choices["close"][20:]
    assert rest.count("w") >= len(rest) // 10 and rest.count("p") > rest.count("w"), choices["close"]


def test_a_change_in_the_osds_load_is_followed(choices):
    busy, idle = choices["osds-get-busy"], choices["osds-get-idle"]
    assert busy[20:100].count("w") <= 2 and busy[100 + 10:].count("p") <= len(busy[110:]) * 0.03, busy
    assert idle[20:100].count("p") <= 2, idle
    switch = idle.find("pppp", 100)   # pushed again for good once an exploration measured it cheap
    assert 100 < switch <= 100 + 32 * 2 + LAG + 4, idle


def test_osds_short_of_cpu_are_seen_in_the_replies_without_trying_the_whole_read(choices):
    busy = choices["osds-get-busy"]
    assert busy.find("ww", 100) <= 100 + LAG + 8, busy   # the first replies after the change say it


def test_a_queue_of_another_tenants_calls_keeps_the_scans_pushed(choices):
    """Both ways wait in the queue (0-20 ns/byte per object), pushing back saves only the OSD's
    0.3 of work and adds 1.5: whole reads stay tries, never two in a row, costing at most ~3 %."""
    busy = choices["queue-busy"][100 + LAG:]
    assert "ww" not in busy and busy.count("w") * (2.5 - 1) / (len(busy) * (10 + 1)) <= 0.03, busy


def test_the_saving_is_the_calls_wall_time_by_its_scan_share_over_the_querys_calls_beside_it(printed):
    """Alone: wall x scan share; among 2.5 of the query's own calls on average: that over 2.5 (what
    the query gets back of the freed CPU); a reply that counts no client: as alone."""
    assert printed["osd-work"] == "500 200 500 0 0"


def test_a_task_keeps_back_what_fits_in_its_waits_for_the_osds_scan_work(printed):
    """Both ways at once: the objects kept back at the end of a task's list of four (read whole and
    scanned while the pushed replies are awaited) are as many as fit in the pushed ones' waits."""
    assert printed["tail-busy-osd"] == "2"   # 3 per byte each fits twice in 2 x 4.2, not 3 times in 4.2
    assert printed["tail-idle-osd"] == "0"   # a whole read (3) costs more than three objects' waits (1.8)
    assert printed["tail-uneven"] == "1"   # sizes 1, 1, 4, 1 MB: the last fits, the 4 MB one not in 2 MB's waits


def test_a_kept_back_object_is_predicted_at_least_a_whole_read_in_turn(printed):
    """A kept-back object's transfer shares the pushed replies' link, so the thread's own cost of one
    (measured on earlier kept-back objects) lowers no prediction below a whole read in turn's."""
    assert printed["tail-busy-osd-cheap-tail"] == "2"   # costs 1 to the thread, predicted 3 as read in turn
    assert printed["tail-busy-osd-dear-tail"] == "1"   # 9 fits once in 3 x 4.2, not twice in 2 x 4.2


def test_nothing_is_kept_back_where_the_wait_is_not_the_osds_scan_work(printed):
    assert printed["tail-whole-replies"] == "0"   # replies sent as stored: whole reads would share the transfer
    assert printed["tail-tenant-queue"] == "0"   # another tenant's queue: whole reads would wait in it too
    assert printed["tail-no-wait-measured"] == "0"


def test_nothing_is_kept_back_unless_the_storage_side_is_short_of_cpu(printed):
    """The busy OSD's waits and saving again, but its calls' stretch is what the class's calls
    beside them explain (the query's own in flight, or another tenant's scans): scanning objects
    here would only move their bytes over the link; and a reply that counts no calls proves nothing."""
    assert printed["tail-busy-osd"] == "2"   # stretch 3.4x the calls beside it: something else takes the CPU
    assert printed["tail-calls-explain-the-stretch"] == "0"
    assert printed["tail-calls-not-counted"] == "0"
