"""Pure decisions: facts gathered on a node → what a stage does there (or why nothing)."""
from __future__ import annotations

import re


def daemon_action(*, alive: bool, pid: int | None, config_changed: bool,
                  busy_ports: list[int]) -> tuple[str, str]:
    """Start, restart, leave alone, or refuse ("blocked") a daemon; with the reason."""
    if alive and config_changed:
        return "restart", f"configuration changed (was pid {pid})"
    if alive:
        return "none", f"running (pid {pid})"
    if busy_ports:
        return "blocked", f"port {', '.join(map(str, busy_ports))} already in use by another process"
    return "start", "not running"


def software_problem(facts: dict, spark_home: str) -> str | None:
    """Why a node cannot run Spark (no java, no Spark at ``spark_home``), or None."""
    if not facts.get("java"):
        return "java is missing (no 'java' on PATH); run 'spark-deploy install' (openjdk-17-jdk-headless)"
    if not facts.get("spark"):
        return f"Spark is not installed at {spark_home}; run 'spark-deploy install' with the same options"
    return None


def install_message(*, java_installed: list[str], spark_before: bool, python_before: bool,
                    spark_home: str) -> tuple[bool, str]:
    """Per-node outcome of install: (changed, message)."""
    did = []
    if java_installed:
        did.append(f"installed {', '.join(java_installed)}")
    if not python_before:
        did.append("created the node python env")
    if not spark_before:
        did.append(f"installed Spark at {spark_home}")
    if did:
        return True, "; ".join(did)
    return False, f"java and Spark present ({spark_home})"


_ERROR_LINE = re.compile(r"^(Error: .+|Exception in thread .+|[\w.]*(Error|Exception)\b:? .*)$")


def failure_line(output: list[str]) -> str:
    """The most telling line of a failed spark-submit's output (the last error or exception line)."""
    for line in reversed(output):
        text = line.strip()
        if _ERROR_LINE.match(text) and not text.startswith("at "):
            return text
    for line in reversed(output):
        if line.strip():
            return line.strip()
    return "no output"


def rejected_options(output: list[str]) -> str | None:
    """The complaint when spark-submit refused its own options (before any application ran)."""
    for line in output:
        text = line.strip()
        if text.startswith("Error: ") and ("option" in text.lower() or "argument" in text.lower()
                                          or "must specify" in text.lower()):
            return text[len("Error: "):]
    return None
