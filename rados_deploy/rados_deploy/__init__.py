"""Ceph bootstrapped by hand, CephFS, and the Arrow scan object class."""
