"""Mode auto's per-object rule (Pushback.java), driven through scenarios by PushbackRule.java
(compiled with javac, no cluster): both ways tried first, then the cheaper one, the costlier
tried again rarely enough to cost ~3 %, and a change in the OSDs' load followed."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JVM = ROOT / "experiments" / "sae" / "connector" / "jvm" / "sae" / "connector"
LAG, OBJECTS = 4, 600


@pytest.fixture(scope="module")
def choices(tmp_path_factory) -> dict[str, str]:
    """Scenario → the rule's choices, one letter per object ('p' pushed, 'w' read whole)."""
    out = tmp_path_factory.mktemp("pushback")
    subprocess.run(["javac", "--release", "17", "-nowarn", "-d", str(out), str(JVM / "Pushback.java"),
                    str(Path(__file__).with_name("PushbackRule.java"))], check=True, capture_output=True)
    r = subprocess.run(["java", "-cp", str(out), "sae.connector.PushbackRule", str(LAG), str(OBJECTS)],
                       capture_output=True, text=True, check=True, env={**os.environ, "JAVA_TOOL_OPTIONS": ""})
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


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
