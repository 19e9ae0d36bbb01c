"""Remote execution over SSH (execnet): commands, shipped Python modules, files."""
from .cluster import Cluster, Results
from .connection import ssh_argv
from .dispatch import call_local
from . import node_agent

__all__ = ["Cluster", "Results", "ssh_argv", "call_local", "node_agent"]
