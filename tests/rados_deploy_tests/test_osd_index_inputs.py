"""rados_deploy.osd_index without a cluster: the ``index`` method's request as the class parses it
(tests/connector/test_osd_index.py), its header as the class writes it, and bad input refused in
one line before any node is asked (in an OSD: tests/connector/test_osd.py)."""
import pytest

from metareserve.errors import UsageError
from rados_deploy import osd_index
from rados_deploy.scan_protocol import SPEC


def test_the_request_is_magic_version_and_the_column():
    assert osd_index.index_request("k") == SPEC.index_magic + SPEC.version.to_bytes(2, "little") + b"\x01\x00k"
    with pytest.raises(UsageError, match="1..65535 bytes"):
        osd_index.index_request("")


def test_the_header_is_read_as_the_class_writes_it_and_another_format_is_none():
    h = osd_index.IndexHeader.parse("2 5310 123 1 40 40 1200 81000 a column")
    assert h == osd_index.IndexHeader(5310, 123, 1, 40, 40, 1200, 81000, "a column")
    assert osd_index.IndexHeader.parse("1 5310 123 1 40 40 1200 k") is None   # format 1: no build time
    assert osd_index.IndexHeader.parse("2 x 123 1 40 40 1200 81000 k") is None
    assert osd_index.IndexHeader.parse(None) is None


@pytest.mark.parametrize("path", ["data/taxi", "", "/data/\0x"])
def test_a_path_that_is_not_an_absolute_cephfs_path_is_refused_before_any_node(path):
    with pytest.raises(UsageError, match="is not an absolute CephFS path"):
        osd_index.build(None, path, "k")   # no cluster: refused before it is used
