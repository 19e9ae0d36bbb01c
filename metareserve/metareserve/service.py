"""The shape every deployer shares: a service over a reservation's nodes, laid out by a Layout."""
from __future__ import annotations

import abc

from .layout import Layout
from .model import Reservation
from .remote import Cluster


class Service(abc.ABC):
    """A deployable service (Ceph, Spark, monitoring) with idempotent lifecycle stages.

    ``cluster`` (an open :class:`Cluster`) is reused when given, over this service's nodes only
    when it was opened on more (:meth:`Cluster.over`); otherwise one is opened on first use and
    closed by :meth:`close` or the ``with`` block. Stages run on every node concerned in
    parallel and return a :class:`metareserve.StageReport`.
    """

    def __init__(self, reservation: Reservation, layout: Layout | None = None, *,
                 cluster: Cluster | None = None):
        self.reservation = reservation
        self.layout = layout or Layout.default(reservation)
        self._cluster = cluster.over(reservation) if cluster is not None else None
        self._own_cluster = cluster is None

    @property
    def cluster(self) -> Cluster:
        """The remote-execution Cluster used for every stage."""
        if self._cluster is None:
            self._cluster = Cluster(self.reservation)
        return self._cluster

    def close(self) -> None:
        """Close the connections this object opened itself."""
        if self._own_cluster and self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @abc.abstractmethod
    def install(self):
        """Install the service's software on its nodes (runs on every node in parallel)."""

    @abc.abstractmethod
    def start(self):
        """Start the service's daemons and wait until they are healthy."""

    @abc.abstractmethod
    def status(self):
        """Per daemon and node: what runs and whether it is healthy."""

    @abc.abstractmethod
    def stop(self):
        """Stop the service's daemons by pid."""

    @abc.abstractmethod
    def uninstall(self):
        """Remove the service's state from its nodes."""
