"""metareserve: reservations of nodes and remote execution over them.

Reservation files are the contract between metareserve and every other sae package;
:class:`Cluster` runs commands, Python functions and file transfers on many nodes in parallel.
"""
from . import lease, validate
from .api import check, extend, list_reservations, release, reserve, shape
from .calibrate import Calibration, CoresMeasure, LinkMeasure, calibrate
from .capacity import Capacities, Cores, CpuSet, HostCapacity, LinkRate, Rate, format_rate
from .errors import (ConnectError, GroupError, NothingToDo, OperationalError, RemoteError,
                     SaeError, UsageError)
from .layout import ROLES, Layout, resolve_layout
from .lease import LeaseHeld, LeaseHolder, leased
from .model import CpuAccounting, Node, Reservation, load_reservation
from .remote import Cluster, Results, call_local, node_agent
from .report import Outcome, StageReport
from .service import Service
from .sizes import Size, format_size, parse_size

__version__ = "0.1.0"
__all__ = ["Node", "Reservation", "CpuAccounting", "load_reservation", "Layout", "ROLES", "resolve_layout",
           "Cluster", "Results", "call_local", "node_agent", "reserve", "release", "extend",
           "list_reservations", "check", "SaeError", "NothingToDo", "UsageError",
           "OperationalError", "RemoteError", "ConnectError", "GroupError", "StageReport", "Outcome", "Service",
           "parse_size", "format_size", "Size", "Capacities", "HostCapacity", "Rate", "LinkRate", "Cores", "CpuSet",
           "format_rate", "shape",
           "Calibration", "CoresMeasure", "LinkMeasure", "calibrate", "LeaseHeld", "LeaseHolder", "leased", "lease", "validate"]
